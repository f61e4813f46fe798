"""An auto-tune sweep's record (app/store/autotune.py keeps it), and its view for GET
/api/tuning and the page: the sweep, its steps with their scores, the step measured now."""

from app.records import SweepStepRecord
from app.shapes.tuning import Sweep, SweepStep, SweepStepNow
from app.store import autotune as stored
from app.store import db
from app.tuning.autotune import sweep

KNOB_LABELS = {"stripe_cache_size": "stripe cache", "read_ahead_kb": "read-ahead"}


def setting_label(knob: str, value: int) -> str:
    """'stripe cache 4096', 'read-ahead 4096 KiB': a step as the page and the chart name it."""
    unit = " KiB" if knob == "read_ahead_kb" else ""
    return f"{KNOB_LABELS[knob]} {value}{unit}"


def open_sweep(
    conn: db.Connection,
    array: str,
    run_id: int | None,
    started: float,
    start_values: dict[str, int],
    phases: list[sweep.Phase],
) -> int:
    """The sweep's row, with the values found: what an abort or a restart puts back."""
    plan = [p.to_json() for p in phases]
    return stored.open_sweep(conn, array, run_id, started, start_values, plan)


def store_step(
    conn: db.Connection,
    sweep_id: int,
    seq: int,
    knob: str,
    value: int,
    role: str,
    written: float,
    window: sweep.Window | None,
    note: str | None,
) -> None:
    points = window.points if window else []
    step = SweepStepRecord(
        seq=seq,
        knob=knob,
        value=value,
        role=role,
        written=written,
        measured_from=points[0][0] if points else None,
        measured_to=points[-1][0] if points else None,
        done_blocks=points[-1][1] - points[0][1] if points else None,
        speed_kb_s=window.speed_kb_s if window else None,
        score=None,
        note=note,
    )
    stored.add_step(conn, sweep_id, step)


def store_scores(
    conn: db.Connection, sweep_id: int, steps: dict[int, int], scored: dict[int, float]
) -> None:
    """Each counted step (seq -> value) gets its value's score."""
    stored.set_scores(conn, sweep_id, {seq: round(scored[v], 3) for seq, v in steps.items()})


def view(conn: db.Connection, running_id: int | None, now: SweepStepNow | None) -> Sweep | None:
    """The latest sweep with its steps; `now` is the step measured now, when `running_id` (the
    sweep in memory) is that sweep."""
    found = stored.latest(conn)
    if found is None:
        return None
    record, steps = found
    state, reason = record.state, record.reason
    if state == "running" and running_id != record.id:
        # Ended while its row could not be written (a full disk): recover() records it.
        state, reason = "ended", "its record waits for the disk to have room"
    return Sweep(
        id=record.id,
        array=record.array,
        state=state,
        reason=reason,
        started=record.started,
        finished=record.finished,
        start_values=record.start_values,
        plan=record.plan,
        chosen=record.chosen,
        steps=[
            SweepStep(
                knob=s.knob,
                label=setting_label(s.knob, s.value),
                value=s.value,
                role=s.role,
                speed_kb_s=s.speed_kb_s,
                score=s.score,
                note=s.note,
                measured_from=s.measured_from,
                measured_to=s.measured_to,
            )
            for s in steps
        ],
        now=now if running_id == record.id else None,
    )

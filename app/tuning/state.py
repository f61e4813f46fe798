"""What is tuned now, in one state: the tuner publishes it into the Job (app/live/snapshot.py)
after each tick and each action, and every view reads it from there."""

from collections.abc import Callable

from app.live.forecasts import BOOST_PRESET
from app.live.snapshot import NOT_TUNED
from app.shapes.tuning import Schedules, Sweep, TuningState
from app.tuning.autotune.record import setting_label
from app.tuning.autotune.writes import PRESET as AUTOTUNE_PRESET


def tuning_state(
    preset: str | None,
    sweeping: bool,
    latest_sweep: Callable[[], Sweep | None],
    schedules: Callable[[], Schedules],
) -> TuningState:
    """What is tuned now, the one notion the switch, the headline, the run list, /metrics and
    the API show: "off", "boost", "auto-tuning" (a sweep measures), "auto-tuned" (what
    a sweep kept), "schedule" (a schedule's window applied its preset) or "preset" (one applied
    by hand), from the open session's preset (None: no session), the latest sweep and the
    schedules. The sweep and the schedules are read only when the state turns on them
    (`sweeping`: a sweep runs), so a tick while boost is on reads nothing.

    A running sweep is "auto-tuning" from its first second: its first step measures the values
    it found, before it writes anything (so before a session opens)."""
    sweep = latest_sweep() if sweeping or preset == AUTOTUNE_PRESET else None
    if sweep is not None and sweep.state == "running":
        label = f"Auto-tune is measuring {sweep.array}"
        detail = (
            f"{sweep.now.label} now, step {sweep.now.step} of {sweep.now.steps}"
            if sweep.now
            else None
        )
        return TuningState(kind="auto-tuning", preset=preset, label=label, detail=detail)
    if preset is None:
        return NOT_TUNED
    if preset == BOOST_PRESET:
        return TuningState(kind="boost", preset=preset, label="Boosted", detail=None)
    if preset == AUTOTUNE_PRESET and sweep is not None:
        kept = sweep.chosen or {}
        detail = ", ".join(setting_label(k, int(v)) for k, v in kept.items()) or None
        return TuningState(kind="auto-tuned", preset=preset, label="Auto-tuned", detail=detail)
    windows = [e for e in schedules().schedules if e.applied and e.preset == preset]
    if windows:
        detail = f"{windows[0].start}–{windows[0].end}"
        return TuningState(
            kind="schedule", preset=preset, label=f"Schedule: {preset}", detail=detail
        )
    return TuningState(kind="preset", preset=preset, label=f"Preset {preset}", detail=None)

"""Auto-tune's one sentence: what it gained and what it kept, each setting once."""

from app.shapes.tuning import Sweep, SweepStep
from app.web.views import autotune_said


def step(knob: str, value: int, role: str, speed: float, score: float | None) -> SweepStep:
    return SweepStep(
        knob=knob,
        label=f"{knob} {value}",
        value=value,
        role=role,
        speed_kb_s=speed,
        score=score,
        note=None,
        measured_from=None,
        measured_to=None,
    )


def sweep(state: str = "done", reason: str | None = None) -> Sweep:
    ra = "read_ahead_kb"
    return Sweep(
        id=1,
        array="md2",
        state=state,
        reason=reason or "kept stripe cache 16384, read-ahead 256 KiB; the load changed",
        started=0.0,
        finished=None,
        start_values={"stripe_cache_size": 256, ra: 256},
        plan=[],
        now=None,
        chosen={"stripe_cache_size": 16384, ra: 256},
        steps=[
            step("stripe_cache_size", 256, "start", 3800, 0.19),
            step("stripe_cache_size", 16384, "candidate", 28000, 1.0),
            step(ra, 256, "reference", 27000, 0.79),
            step(ra, 4096, "candidate", 26000, 0.9),
            step(ra, 256, "reference", 29800, 0.79),
        ],
    )


def test_it_says_the_gain_and_each_kept_setting_once() -> None:
    assert autotune_said(sweep()) == (
        "Auto-tune made the job ×7.8 faster (3.9 MB/s → 30.5 MB/s) and kept stripe cache 16384, "
        "read-ahead 256 KiB."
    )


def test_a_sweep_that_ended_early_says_why_in_its_first_words() -> None:
    aborted = sweep("aborted", "the box's own requests waited 2.1 s on average; put back")
    assert autotune_said(aborted) == (
        "Auto-tune aborted: the box's own requests waited 2.1 s on average."
    )
    assert autotune_said(sweep("running")) is None and autotune_said(None) is None


def test_after_a_revert_it_says_what_it_found_never_kept():
    said = autotune_said(sweep(), holds=False)
    assert said is not None and "kept" not in said and "no longer on" in said

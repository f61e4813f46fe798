"""Bodies of /api/tuning, /api/presets, /api/schedules and /api/tokens."""

from typing import Any

from pydantic import ConfigDict, Field

from app.shapes import Body


class Session(Body):
    id: int
    started: float  # unix seconds
    preset: str  # the preset applied last
    arrays: list[str]
    ended: float | None
    end_reason: str | None


class SessionKnob(Body):
    key: str  # "stripe_cache_size@md2", or the knob's name for a global one
    knob: str
    target: str | None
    unit: str
    original: str  # found before mdboost's first write; revert puts it back
    desired: str
    current: str | None  # as the last tick read it
    drift: bool  # someone else changed it since


class Effect(Body):
    op_id: int
    array: str
    run_id: int | None
    preset: str
    applied_at: float
    before_kb_s: float | None
    after_kb_s: float | None
    ratio: float | None  # after / before
    complete: bool
    over: str | None  # the preset it was applied over (its "before" was tuned), None: untuned
    summary: str


class Ram(Body):
    budget_mib: float
    cost_mib: float


class KnobAccessBody(Body):
    knob: str
    target: str | None
    supported: bool
    writable: bool


class PresetErrorBody(Body):
    file: str
    key: str
    message: str


class TuningState(Body):
    """What is tuned now: one notion for the switch, the headline, the run list and the API."""

    kind: str  # off | boost | auto-tuning | auto-tuned | schedule | preset
    preset: str | None  # the preset the session holds (the one applied last)
    label: str  # in words: "Not tuned", "Boosted", "Auto-tuned", "Schedule: quiet", ...
    detail: str | None  # what auto-tune kept, or the schedule's window "01:00–07:00"


class SweepStepNow(Body):
    knob: str
    label: str  # "stripe cache 4096"
    value: int
    role: str
    step: int  # this step's number, from 1
    steps: int  # the steps planned, this one and any measured again included
    left_s: float  # seconds until the last planned step ends, at the steps' fitted lengths


class SweepStep(Body):
    knob: str
    label: str
    value: int
    role: str
    speed_kb_s: float | None
    score: float | None
    note: str | None
    measured_from: float | None
    measured_to: float | None


class Sweep(Body):
    """An auto-tune sweep and its steps (plan and chosen as stored with the sweep)."""

    id: int
    array: str
    state: str  # running | done | aborted | interrupted | ended ...
    reason: str | None
    started: float
    finished: float | None
    start_values: dict[str, int]
    plan: list[dict[str, Any]]
    chosen: dict[str, Any] | None
    steps: list[SweepStep]
    now: SweepStepNow | None


class SlowerFinding(Body):
    """A preset mdboost put back by itself because the sync went slower with it."""

    array: str
    preset: str
    found_at: float  # unix seconds
    ratio: float  # pace after / before, in like conditions
    sentence: str


class MeasuringWithout(Body):
    """A preset mdboost put back for a window to measure the sync's pace without it (no pace
    before the press was known); it applies the preset again at back_at and judges that."""

    preset: str
    arrays: list[str]
    since: float  # unix seconds
    back_at: float  # unix seconds
    reason: str


class TuningStatus(Body):
    state: TuningState
    active: bool
    preset: str | None
    session: Session | None
    busy: bool
    unrecorded_revert: bool
    knobs: list[SessionKnob]
    effects: list[Effect]
    ram: Ram
    capabilities: list[KnobAccessBody]  # each knob: on this kernel? writable? (kernel/access.py)
    preset_errors: list[PresetErrorBody]
    autotune: Sweep | None  # the latest sweep and its steps (app/tuning/autotune/)
    # Put back for making the job on the page slower (None: nothing was, in the open runs)
    slower: SlowerFinding | None = None
    # The open session was applied again at start-up: "boost re-applied after the NAS restarted"
    restarted: str | None = None
    # Put back for now to measure the pace without it; applied again at its back_at
    measuring_without: MeasuringWithout | None = None


class PresetKnob(Body):
    knob: str
    value: str
    reason: str


class PresetBody(Body):
    name: str
    summary: str
    source: str  # built-in, or the preset file
    restore_originals: bool
    knobs: list[PresetKnob]


class Presets(Body):
    presets: list[PresetBody]
    errors: list[PresetErrorBody]


class ScheduleBody(Body):
    id: int
    preset: str
    start: str  # HH:MM in `zone`
    end: str
    zone: str  # the IANA zone its times are in (the page's when added there), else the box's
    open: bool  # its window is open now
    applied: bool
    overridden: bool  # a person's apply or revert won
    error: str | None


class NextChange(Body):
    ts: float
    local: str  # "Tue 01:00"
    what: str
    in_s: float


class ScheduleAdded(Body):
    id: int
    preset: str
    start: str  # HH:MM in `zone`
    end: str
    zone: str


class Schedules(Body):
    zone: str  # the box's zone: a schedule added without one keeps its times there
    schedules: list[ScheduleBody]
    next: NextChange | None


class Token(Body):
    id: int
    name: str
    scope: str  # read: GET API, /metrics and the page only; admin: every change too
    created: float
    revoked: float | None
    parent_id: int | None  # the page-made token that made it


class Tokens(Body):
    tokens: list[Token]


class NewTokenAnswer(Body):
    name: str
    scope: str
    token: str  # shown only in this answer: only its hash is kept


class PlanChange(Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str  # "stripe_cache_size@md2"
    knob: str
    target: str | None  # the array or disk; None: the whole system
    unit: str
    # "from" on the wire (a Python keyword): built as from_=, read and written as "from".
    from_: str = Field(validation_alias="from", serialization_alias="from")  # as the kernel
    # shows it now ("system": the global limit)
    to: str
    reason: str
    cost_mib: float | None  # RAM the change takes (the stripe cache)


class PlanSkipped(Body):
    knob: str
    target: str | None
    why: str


class PlanRam(Body):
    budget_mib: float
    cost_mib: float


class PresetPlan(Body):
    """A preset planned: which knob goes from what to what, and what is skipped or unchanged."""

    preset: str
    arrays: list[str]
    changes: list[PlanChange]
    skipped: list[PlanSkipped]
    unchanged: list[str]
    ram: PlanRam
    notes: list[str]


class Restored(Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str
    from_: str = Field(validation_alias="from", serialization_alias="from")
    to: str


class TuningDone(Body):
    """An apply (op_id, plan, applied) or a revert (op_id, restored, gone, reason; or only
    `detail` when nothing was open); each answer carries only its own fields."""

    ok: bool
    op_id: int | None = None
    plan: PresetPlan | None = None
    applied: list[str] | None = None
    restored: list[Restored] | None = None
    gone: list[str] | None = None
    reason: str | None = None
    detail: str | None = None

"""Bodies of /api/arrays: the arrays now, their samples, their diagnosis."""

from typing import Any

from pydantic import Field

from app.md.mdstat import Bitmap, Device, Sync
from app.shapes import Body


class Run(Body):
    id: int
    array: str
    action: str  # resync | recovery | reshape | check
    started: float  # unix seconds
    finished: float | None
    outcome: str | None  # completed | interrupted | restarted | vanished, or running
    total_blocks: int | None  # 1 KiB blocks
    avg_speed_kb_s: float | None
    last_percent: float | None
    duration_s: float | None


class ArraySysfsBody(Body):
    array_state: str | None
    sync_action: str | None
    sync_speed_kb_s: int | None
    degraded: int | None  # missing members
    mismatch_cnt: int | None
    stripe_cache_size: int | None  # entries
    sync_speed_min_kb_s: int | None
    sync_speed_max_kb_s: int | None


class ArrayView(Body):
    """One array: what /proc/mdstat says, its sysfs, its severity and its open run."""

    name: str
    state: str  # active | inactive | broken
    read_only: bool
    auto_read_only: bool
    level: str | None
    super: str | None
    blocks: int | None  # 1 KiB blocks
    chunk_kb: int | None
    devices: list[Device]
    raid_disks: int | None
    active_disks: int | None
    status: str | None  # "UUU_"
    bitmap: Bitmap | None
    sync: Sync | None  # only {"action"} for a queued (delayed, pending) job
    role: str  # data | system | swap
    degraded: bool
    failed: bool
    sysfs: ArraySysfsBody | None
    severity: str  # ok | warning | critical
    run: Run | None


class ArrayList(Body):
    as_of: float | None  # unix seconds of the sampler's tick
    personalities: list[str] | None
    arrays: list[ArrayView]
    failed: list[str]
    warnings: list[str]


class Sample(Body):
    ts: float
    run_id: int | None
    action: str | None
    percent: float | None
    done_blocks: int | None
    total_blocks: int | None
    speed_kb_s: int | None
    finish_min: float | None
    sync_speed_kb_s: int | None
    degraded: int | None
    stripe_cache_size: int | None
    speed_min_kb_s: int | None
    speed_max_kb_s: int | None


class Samples(Body):
    array: str
    samples: list[Sample]


class Member(Body):
    member: str
    disk: str
    busy: float  # 0..1
    read_kib_s: int
    write_kib_s: int
    ios_s: float
    wait_ms: float | None


class Readings(Body):
    speed_kb_s: int | None
    min_kb_s: int | None
    max_kb_s: int | None
    stripe_cache_size: int | None
    stripe_cache_active: int | None
    threads_cpu: dict[str, float]
    mem_available_kib: int | None
    window_s: float | None
    members: list[Member]
    array_read_kib_s: int | None
    array_write_kib_s: int | None
    other_partitions_kib_s: dict[str, int]


class VerdictBody(Body):
    verdict: str
    title: str
    sentence: str
    finding: str
    since: float
    held_s: float
    fading: bool
    numbers: dict[str, Any]  # the evidence, per verdict


class DiagnosisBody(Body):
    """What holds a sync back; an array that runs nothing has only the first five fields."""

    array: str
    ts: float | None
    running: bool
    verdict: str | None
    sentence: str | None
    verdicts: list[VerdictBody] = Field(default_factory=list)
    pending: dict[str, float] = Field(default_factory=dict)  # verdict -> seconds until it shows
    readings: Readings | None = None


class Runs(Body):
    runs: list[Run]


class EventBody(Body):
    id: int
    ts: float
    array: str | None
    run_id: int | None
    kind: str  # apply, revert, autotune, diagnosis, limits, ...
    detail: dict[str, Any]


class RunDetail(Run):
    events: list[EventBody]
    latest_sample: Sample | None

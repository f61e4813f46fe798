"""POST /api/plan: a change asked for, and the plan answered."""

from typing import Literal, Self

from pydantic import Field, model_validator

from app.shapes import Body

MAX_DISK_BYTES = 10**15  # 1 PB: no single disk is larger


class PlanRequest(Body):
    change: Literal["add", "replace"]
    disk_bytes: int = Field(gt=0, le=MAX_DISK_BYTES, description="the new disk's size in bytes")
    member: str | None = Field(
        default=None,
        max_length=32,
        pattern=r"^[a-z][a-z0-9_-]*$",
        description='the disk replaced ("sdb", or a member partition "sdb5"); only for replace',
    )

    @model_validator(mode="after")
    def member_only_for_replace(self) -> Self:
        if self.change == "replace" and self.member is None:
            raise ValueError('a replace names the member to replace, e.g. "member": "sdb"')
        if self.change == "add" and self.member is not None:
            raise ValueError("an add names no member: the new disk joins the pool")
        return self


class PlanDuration(Body):
    seconds: float
    low_s: float  # the fast end of the range
    high_s: float  # the slow end


class PlanCapacity(Body):
    usable_bytes: int
    protection_bytes: int  # parity and mirror copies
    unused_bytes: int  # in no redundant array


class PlanStep(Body):
    order: int  # DSM runs them one after another, in this order
    array: str
    action: Literal["rebuild", "grow", "create"]
    what: str
    level_before: str | None
    level_after: str
    disks_before: int
    disks_after: int
    work_bytes: int  # what md counts: per disk for a rebuild or a new array, old data for a grow
    knee: float | None  # a grow's knee, share of its work
    duration: PlanDuration
    boost_duration: PlanDuration
    source: Literal["measured", "physics", "assumed"]  # the least sure figure it rests on
    why: str  # what the paces rest on, e.g. "from the check of md2 on 1 Nov 2026: 152 MB/s"
    boost_why: str


class PlanBody(Body):
    change: Literal["add", "replace"]
    disk_bytes: int
    member: str | None
    pool: str  # "SHR-1", "SHR-2", "RAID5" ...
    arrays: list[str]
    possible: bool
    refusals: list[str]  # why not, when not possible
    steps: list[PlanStep]
    total: PlanDuration | None
    boost_total: PlanDuration | None
    capacity_before: PlanCapacity
    capacity_after: PlanCapacity | None
    notes: list[str]  # space left unused and why; what the plan waits for
    summary: str

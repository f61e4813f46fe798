"""What holds a sync back right now: pure rules over one array's rates, each finding with the
numbers that support it. Whether a finding is shown is hysteresis.py's job."""

import statistics
from dataclasses import dataclass, field
from typing import Any

from app.diagnosis.thresholds import threshold
from app.md.mdstat import PARITY_DISKS
from app.shapes.arrays import Member

# Most specific first: the first verdict shown is the one thing to do.
VERDICTS = (
    "held_by_max",
    "yielding",
    "slow_member",
    "cpu_bound",
    "stripe_cache",
    "disks_limit",
)


@dataclass(frozen=True)
class MemberIo:
    """One member disk over the last window, from /proc/diskstats deltas of its whole disk (other
    partitions' I/O competes for the same heads)."""

    member: str  # as mdstat names it, e.g. "sda5"
    disk: str  # the whole disk, e.g. "sda"
    busy: float  # 0..1: share of the window with a request in flight
    read_kib_s: float  # KiB/s
    write_kib_s: float  # KiB/s
    ios_s: float  # completed requests per second
    wait_ms: float | None  # ms per completed request, queue included; None: none completed

    @property
    def kib_s(self) -> float:
        return self.read_kib_s + self.write_kib_s


@dataclass(frozen=True)
class ProcessIo:
    """A process reading or writing storage, from /proc/PID/io deltas."""

    pid: int
    comm: str
    read_kib_s: float  # KiB/s
    write_kib_s: float  # KiB/s


@dataclass(frozen=True)
class Observation:
    """One running array as the last window saw it."""

    now: float  # the sampler's clock, unix seconds
    array: str
    level: str | None  # raid5, raid1, ...
    action: str  # resync | recovery | reshape | check | repair
    speed_kb_s: int | None  # KiB/s: sysfs sync_speed, else mdstat speed=
    min_kb_s: int | None  # KiB/s, effective (per-array if local, else global)
    max_kb_s: int | None  # KiB/s, effective
    max_local: bool = False  # the max is this array's own sync_speed_max
    stripe_cache_size: int | None = None  # entries
    stripe_cache_active: int | None = None  # entries in use
    group_thread_cnt: int | None = None  # None: this kernel or level has none
    members: tuple[MemberIo, ...] = ()  # empty until a window of diskstats exists
    threads_cpu: dict[str, float] = field(default_factory=dict)  # md thread name -> cores used
    array_read_kib_s: float | None = None  # KiB/s on the md device itself: its users' I/O
    array_write_kib_s: float | None = None
    # KiB/s on the member disks' other partitions (whole disk minus member partition), by disk
    other_partitions_kib_s: dict[str, float] = field(default_factory=dict)
    mem_available_kib: int | None = None  # KiB, /proc/meminfo
    window_s: float | None = None  # seconds the rates span
    top_io: tuple[ProcessIo, ...] = ()  # busiest other processes, when /proc/PID/io is readable


Findings = dict[str, dict[str, Any]]  # verdict -> its supporting numbers


def judge(obs: Observation) -> Findings:
    """Every verdict that holds in this observation, each with its numbers."""
    findings: Findings = {}
    speed, low, high = obs.speed_kb_s, obs.min_kb_s, obs.max_kb_s
    held_by_max = speed is not None and high and speed >= threshold("max_near") * high
    if held_by_max:
        findings["held_by_max"] = {"speed_kb_s": speed, "max_kb_s": high, "local": obs.max_local}
    competing = competing_io(obs)
    if competing is not None and not held_by_max:
        findings["yielding"] = {
            **competing,
            "speed_kb_s": speed,
            "min_kb_s": low,
            "below_min": speed is not None and low is not None and speed < low,
            "processes": [
                {
                    "pid": p.pid,
                    "comm": p.comm,
                    "read_kib_s": round(p.read_kib_s),
                    "write_kib_s": round(p.write_kib_s),
                }
                for p in obs.top_io
            ],
        }
    slow = _slow_member(obs.members)
    if slow is not None:
        findings["slow_member"] = slow
    disks_saturated = bool(obs.members) and all(
        m.busy >= threshold("disks_busy") for m in obs.members
    )
    if obs.threads_cpu and not disks_saturated:  # with every disk busy, a faster CPU waits
        thread, cores = max(obs.threads_cpu.items(), key=lambda item: item[1])
        if cores >= threshold("cpu_bound"):
            findings["cpu_bound"] = {
                "thread": thread,
                "cores": round(cores, 2),
                "group_thread_cnt": obs.group_thread_cnt,
                "parity": obs.level in PARITY_DISKS,
            }
    size, active = obs.stripe_cache_size, obs.stripe_cache_active
    full = (
        size is not None and active is not None and active >= threshold("stripe_cache_full") * size
    )
    if obs.level in PARITY_DISKS and size and full:
        findings["stripe_cache"] = {
            "active": active,
            "size": size,
            "disks": len(obs.members) or None,
            "mem_available_kib": obs.mem_available_kib,
        }
    if disks_saturated:
        findings["disks_limit"] = {
            "busy_min": round(min(m.busy for m in obs.members), 3),
            "busy_max": round(max(m.busy for m in obs.members), 3),
            "kib_s": round(sum(m.kib_s for m in obs.members)),
            "members": [member_json(m) for m in obs.members],
        }
    return findings


def competing_io(obs: Observation) -> dict[str, Any] | None:
    """The I/O on the array's disks that is not the sync, when it is a real share of theirs:
    the array's own users (reads and writes on the md device) plus other partitions of the
    member disks (other arrays, DSM's system partition). None when it is not."""
    user_read = obs.array_read_kib_s or 0.0
    user_write = obs.array_write_kib_s or 0.0
    others = sum(obs.other_partitions_kib_s.values())
    competing = user_read + user_write + others
    sync = (obs.speed_kb_s or 0) * len(obs.members)  # each member moves about the sync speed
    share = competing / (competing + sync) if competing + sync > 0 else 0.0
    if competing < threshold("other_io_kib_s") or share < threshold("other_io_share"):
        return None
    busiest = max(obs.members, key=lambda m: m.busy, default=None)
    return {
        "competing_kib_s": round(competing),
        "share": round(share, 3),
        "array_read_kib_s": round(user_read),
        "array_write_kib_s": round(user_write),
        "other_partitions_kib_s": {k: round(v) for k, v in obs.other_partitions_kib_s.items()},
        "busiest": member_json(busiest) if busiest is not None else None,
    }


def _slow_member(members: tuple[MemberIo, ...]) -> dict[str, Any] | None:
    """The busiest member when it waits several times longer than the others' median."""
    timed = [m for m in members if m.wait_ms is not None]
    if len(timed) < 2:
        return None
    busiest = max(timed, key=lambda m: m.busy)
    others = [m.wait_ms for m in timed if m is not busiest and m.wait_ms is not None]
    median = statistics.median(others)
    wait = busiest.wait_ms or 0.0
    if (
        wait >= threshold("slow_wait_ms")
        and busiest.busy >= threshold("slow_busy")
        and wait >= threshold("slow_wait_ratio") * max(median, 0.1)
    ):
        return {
            **member_json(busiest),
            "others_wait_ms": round(median, 1),
            "ratio": round(wait / max(median, 0.1), 1),
        }
    return None


def member_shape(member: MemberIo) -> Member:
    """A member's I/O over the window, rounded, as the diagnosis's readings show it."""
    return Member(
        member=member.member,
        disk=member.disk,
        busy=round(member.busy, 3),
        read_kib_s=round(member.read_kib_s),
        write_kib_s=round(member.write_kib_s),
        ios_s=round(member.ios_s, 1),
        wait_ms=None if member.wait_ms is None else round(member.wait_ms, 1),
    )


def member_json(member: MemberIo) -> dict[str, Any]:
    """The same in a verdict's evidence (`numbers`, a plain dict stored with its event)."""
    return member_shape(member).model_dump()

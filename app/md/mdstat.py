"""What /proc/mdstat says, as frozen dataclasses with their units, and how the kernel prints it
(render, for the simulator and tests); app.kernel.mdstat_parse reads the text into these.

The layout is md_seq_show()'s and the personalities' status() (drivers/md/md.c, raid1.c, raid5.c,
raid10.c, raid0.c).
"""

from dataclasses import asdict, dataclass, field
from typing import Any

# Numbers larger than this are not a real array; they would also overflow SQLite's INTEGER.
MAX_NUMBER = 2**62
# The word after "mdN : " (md.c md_seq_show): "inactive" without a personality, else "active",
# or "broken" once md has given up on the array (MD_BROKEN; commit 2d2b3bc145b9, Linux 6.12).
STATES = ("active", "inactive", "broken")
# Parity disks per level (raid5.c, raid6: two): a stripe's data disks are raid_disks minus these.
PARITY_DISKS = {"raid4": 1, "raid5": 1, "raid6": 2}


@dataclass(frozen=True)
class Device:
    name: str  # as printed, e.g. "sda5" or "cciss/c0d0p1"
    index: int  # the number in brackets: the member's slot (or spare number)
    # flag letters in printed order: F faulty, S spare, W write-mostly, J journal, R replacement
    flags: str


@dataclass(frozen=True)
class Bitmap:
    pages_used: int  # in-memory bitmap pages allocated
    pages_total: int  # pages the whole bitmap needs
    kb: int  # KiB of memory those pages use
    chunk: str  # bitmap chunk as printed, e.g. "65536KB"


@dataclass(frozen=True)
class Sync:
    action: str  # resync | recovery | reshape | check, or delayed | pending for a queued job
    percent: float | None = None  # as printed by the kernel (coarse; never recomputed here)
    done_blocks: int | None = None  # 1 KiB blocks done (per device for recovery/reshape)
    total_blocks: int | None = None  # 1 KiB blocks in this operation
    finish_min: float | None = None  # kernel's estimate in minutes, from the last ~30 s only
    speed_kb_s: int | None = None  # KiB/s over the last ~30 s

    @property
    def running(self) -> bool:
        return self.action not in ("delayed", "pending")


@dataclass(frozen=True)
class Array:
    name: str  # "md2"
    state: str  # active | inactive | broken, or a state unknown to us as printed (with a warning)
    read_only: bool
    auto_read_only: bool
    level: str | None  # "raid5", "linear", vendor personalities as printed; None when inactive
    super: str | None  # metadata version as printed ("1.2", "external:imsm"); None for 0.90
    blocks: int | None  # array size in 1 KiB blocks
    chunk_kb: int | None  # chunk size in KiB ("64k chunk", "512K chunks", linear "64k rounding")
    devices: tuple[Device, ...]
    raid_disks: int | None  # n of [n/m]
    active_disks: int | None  # m of [n/m]
    status: str | None  # "UUU_": U in sync, _ missing or rebuilding
    bitmap: Bitmap | None
    sync: Sync | None
    # raid10's copies as raid10.c status() prints them: "2 near-copies", "2 far-copies" or
    # "2 offset-copies" (both far, counted in far_copies); None for other levels. Not part of the
    # documented JSON of `mdboost parse`, which keeps its shape.
    near_copies: int | None = None
    far_copies: int | None = None

    @property
    def syncing(self) -> bool:
        """A resync, recovery, reshape or check runs now (not one queued as DELAYED/PENDING)."""
        return self.sync is not None and self.sync.running

    @property
    def queued(self) -> bool:
        """A sync waits its turn (resync=DELAYED or PENDING)."""
        return self.sync is not None and not self.sync.running

    @property
    def missing(self) -> int:
        """Members mdstat shows missing or rebuilding: the "_" in [UU_]."""
        return (self.status or "").count("_")

    @property
    def degraded(self) -> bool:
        return self.missing > 0

    @property
    def broken(self) -> bool:
        """md has given up on the array: too many members failed, its data is not available."""
        return self.state == "broken"


@dataclass(frozen=True)
class MdStat:
    personalities: tuple[str, ...] | None
    arrays: tuple[Array, ...]
    warnings: tuple[str, ...] = field(default=())

    def array(self, name: str) -> Array | None:
        return next((a for a in self.arrays if a.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The documented shape of `mdboost parse` (warnings are not part of it)."""
        return {
            "personalities": list(self.personalities) if self.personalities is not None else None,
            "arrays": [array_to_json(a) for a in self.arrays],
        }


def array_to_json(array: Array) -> dict[str, Any]:
    """One array in the documented JSON shape (lists, not tuples, so it equals its JSON form)."""
    out = asdict(array)
    del out["near_copies"], out["far_copies"]
    out["devices"] = [asdict(device) for device in array.devices]
    if array.sync is not None and array.queued:
        out["sync"] = {"action": array.sync.action}
    return out


def render(mdstat: MdStat) -> str:
    """Render in the kernel's exact layout (md.c md_seq_show); the simulator and tests use it."""
    out = []
    if mdstat.personalities is not None:
        out.append("Personalities : " + "".join(f"[{p}] " for p in mdstat.personalities) + "\n")
    out.extend(_render_array(array) for array in mdstat.arrays)
    out.append("unused devices: <none>\n")
    return "".join(out)


def _render_array(array: Array) -> str:
    # md_seq_show(): "mdN : " then the state, the read-only flag and the personality (only
    # when it has one: not for inactive), the members; "\n      N blocks" only when the array has
    # members; super and the personality's status() follow on whichever line is open.
    text = f"{array.name} : {array.state}"
    if array.read_only:
        text += " (read-only)"
    if array.auto_read_only:
        text += " (auto-read-only)"
    if array.level:
        text += f" {array.level}"
    for device in array.devices:
        text += f" {device.name}[{device.index}]" + "".join(f"({f})" for f in device.flags)
    if array.blocks is not None:
        text += f"\n      {array.blocks} blocks"
    if array.super:
        text += f" super {array.super}"
    text += _render_status(array)
    # then "\n      " (with a personality: active, broken) or "\n       " (inactive), the resync
    # line followed by another "\n      ", the bitmap line with its own "\n", and a final "\n": so
    # an array without a bitmap ends in a line of six spaces, one with a bitmap in an empty line.
    text += "\n       " if array.state == "inactive" else "\n      "
    if array.sync is not None:
        text += _render_sync(array.sync) + "\n      "
    if array.bitmap is not None:
        b = array.bitmap
        text += f"bitmap: {b.pages_used}/{b.pages_total} pages [{b.kb}KB], {b.chunk} chunk\n"
    return text + "\n"


def _render_status(array: Array) -> str:
    """The personality's status(): raid5.c, raid10.c, raid0.c, linear.c, raid1.c."""
    text = ""
    if array.chunk_kb is not None:
        if array.level in PARITY_DISKS:
            text += f" level {array.level[4:]}, {array.chunk_kb}k chunk, algorithm 2"
        elif array.level == "linear":
            text += f" {array.chunk_kb}k rounding"
        elif array.level == "raid10":
            text += f" {array.chunk_kb}K chunks"
            if (array.near_copies or 1) > 1:
                text += f" {array.near_copies} near-copies"
            if (array.far_copies or 1) > 1:
                text += f" {array.far_copies} far-copies"
        else:
            text += f" {array.chunk_kb}k chunks"
    if array.raid_disks is not None and array.active_disks is not None:
        text += f" [{array.raid_disks}/{array.active_disks}]"
    if array.status is not None:
        text += f" [{array.status}]"
    return text


def _render_sync(sync: Sync) -> str:
    if not sync.running:
        return f"\tresync={sync.action.upper()}"  # md.c status_resync(): "\tresync=DELAYED"
    per_mille = round((sync.percent or 0.0) * 10)
    filled = min(per_mille // 50, 20)  # md.c: x = res/50; y = 20 - x
    bar = "[" + "=" * filled + ">" + "." * (20 - filled) + "]"
    # md.c status_resync(): "] " then " %s =%3u.%u%%"
    line = f"{bar}  {sync.action} ={per_mille // 10:3d}.{per_mille % 10}%"
    if sync.done_blocks is not None and sync.total_blocks is not None:
        line += f" ({sync.done_blocks}/{sync.total_blocks})"
    if sync.finish_min is not None:
        line += f" finish={sync.finish_min:.1f}min"
    if sync.speed_kb_s is not None:
        line += f" speed={sync.speed_kb_s}K/sec"
    return line

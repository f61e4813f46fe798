"""The catalogue: every kernel knob mdboost may write, with its path, unit, range and reason.

Facts from Documentation/admin-guide/md.rst and drivers/md/{md,raid5}.c, checked on a real
kernel in tests/realkernel. Nothing outside this table is ever written. Plain data and pure
rules: app/kernel/knobs.py reads a knob through the host.
"""

from dataclasses import dataclass

from app.md.attributes import parse_speed_limit
from app.md.mdstat import PARITY_DISKS

RAID_WITH_STRIPE_CACHE = frozenset(PARITY_DISKS)
STRIPE_ENTRY_KIB = 4  # one stripe-cache entry holds one 4 KiB page per member disk
SYSTEM = "system"  # per-array speed limits: follow /proc/sys/dev/raid
BUDGET_SHARE = 0.25  # of MemAvailable: what the stripe caches may take together


@dataclass(frozen=True)
class Knob:
    name: str
    scope: str  # global | array | member (a whole member disk)
    path: str  # "proc:..." or "sys:..." with {array} or {disk}; host.knob_path() fills it in
    unit: str
    minimum: int
    maximum: int
    kernel_default: str
    reason: str
    levels: frozenset[str] | None = None  # None: any level
    safe_while_syncing: bool = True
    accepts_system: bool = False  # may be set to "system" (per-array speed limits)
    step: int = 1  # the kernel rounds to multiples of this

    def applies_to(self, level: str | None) -> bool:
        return self.levels is None or level in self.levels

    def validate(self, value: str | int) -> str:
        """The value as it will be written, or ValueError saying why it may not be."""
        text = str(value).strip()
        if self.accepts_system and text == SYSTEM:
            return SYSTEM
        try:
            number = int(text)
        except ValueError:
            allowed = " or 'system'" if self.accepts_system else ""
            raise ValueError(f"{self.name}: {text[:30]!r} is not an integer{allowed}") from None
        if not self.minimum <= number <= self.maximum:
            raise ValueError(
                f"{self.name}: {number} is outside {self.minimum}..{self.maximum} {self.unit}"
            )
        if number % self.step:
            raise ValueError(f"{self.name}: {number} is not a multiple of {self.step}")
        return str(number)

    def restorable(self, value: str | int) -> str:
        """A value the kernel itself showed (an original, md's floor), as it will be written back.

        No range or step check: the kernel held it, so putting it back is always allowed (a
        read_ahead_kb of 131072 that was there before mdboost goes back, though above the
        range). Only its form is checked, so nothing but a number or 'system' is ever written.
        """
        text = str(value).strip()
        if self.accepts_system and text == SYSTEM:
            return SYSTEM
        try:
            return str(int(text))
        except ValueError:
            raise ValueError(f"{self.name}: {text[:30]!r} is not an integer") from None

    def normalise(self, raw: str) -> str:
        """What the kernel file says, in the form we journal and compare: '256', 'system'."""
        if self.accepts_system:
            limit = parse_speed_limit(raw)
            if limit is not None and limit.source == SYSTEM:
                return SYSTEM
            return str(limit.kb_s) if limit is not None else raw.strip()
        words = raw.split()
        return words[0] if words else ""


def _speed_limit(name: str, scope: str, path: str, default: str, reason: str) -> Knob:
    return Knob(
        name=name,
        scope=scope,
        path=path,
        unit="KiB/s",
        minimum=1,  # the kernel accepts -1 and then throttles erratically (tools/mdvm)
        maximum=10_000_000,
        kernel_default=default,
        reason=reason,
        accepts_system=scope == "array",
    )


CATALOGUE: dict[str, Knob] = {
    knob.name: knob
    for knob in (
        _speed_limit(
            "speed_limit_min",
            "global",
            "proc:sys/dev/raid/speed_limit_min",
            "1000",
            "md throttles a sync down to this floor whenever other I/O touches the array",
        ),
        _speed_limit(
            "speed_limit_max",
            "global",
            "proc:sys/dev/raid/speed_limit_max",
            "200000",
            "the ceiling of every array's sync speed while nothing else uses the disks",
        ),
        _speed_limit(
            "sync_speed_min",
            "array",
            "sys:block/{array}/md/sync_speed_min",
            SYSTEM,
            "the floor for this array only; needs no /proc/sys access",
        ),
        _speed_limit(
            "sync_speed_max",
            "array",
            "sys:block/{array}/md/sync_speed_max",
            SYSTEM,
            "the ceiling for this array only",
        ),
        Knob(
            name="stripe_cache_size",
            scope="array",
            path="sys:block/{array}/md/stripe_cache_size",
            unit="entries",
            minimum=17,
            maximum=32768,
            kernel_default="256",
            reason="a bigger raid5/6 stripe cache makes larger requests: seeds saw 4x at 4096; "
            "costs entries x 4 KiB x member disks of RAM",
            levels=RAID_WITH_STRIPE_CACHE,
        ),
        Knob(
            name="read_ahead_kb",
            scope="array",
            path="sys:block/{array}/queue/read_ahead_kb",
            unit="KiB",
            minimum=0,
            maximum=65536,
            kernel_default="128",
            reason="longer read-ahead on the md device helps the sequential reads of a reshape",
            step=4,
        ),
        Knob(
            name="member_read_ahead_kb",
            scope="member",
            path="sys:block/{disk}/queue/read_ahead_kb",
            unit="KiB",
            minimum=0,
            maximum=65536,
            kernel_default="128",
            reason="read-ahead of each member disk",
            step=4,
        ),
        Knob(
            name="group_thread_cnt",
            scope="array",
            path="sys:block/{array}/md/group_thread_cnt",
            unit="threads",
            minimum=0,
            maximum=16,
            kernel_default="0",
            reason="raid5 worker threads; changing it during a resync could hang some kernels",
            levels=RAID_WITH_STRIPE_CACHE,
            safe_while_syncing=False,
        ),
        Knob(
            name="queue_depth",
            scope="member",
            path="sys:block/{disk}/device/queue_depth",
            unit="commands",
            minimum=1,
            maximum=255,
            kernel_default="31",
            reason="NCQ depth of a member disk (1 disables NCQ); only some drives allow changes",
        ),
    )
}

# Pairs that must keep minimum <= maximum (after "system" is resolved to the global value).
LIMIT_PAIRS = (("speed_limit_min", "speed_limit_max"), ("sync_speed_min", "sync_speed_max"))


def stripe_cache_mib(entries: int, member_disks: int) -> float:
    """RAM a stripe cache of `entries` costs on an array of `member_disks` disks."""
    return entries * STRIPE_ENTRY_KIB * member_disks / 1024


def stripe_cache_entries(kib: float, member_disks: int) -> int:
    """The most stripe-cache entries `kib` of RAM holds on an array of `member_disks` disks."""
    return int(kib / (STRIPE_ENTRY_KIB * member_disks))


def budget_from_available(available_mib: float) -> float:
    """The stripe caches' RAM budget, MiB: a share of MemAvailable."""
    return available_mib * BUDGET_SHARE


def md_floor(
    knob: str, level: str | None, chunk_kb: int | None, raid_disks: int | None, reshaping: bool
) -> int | None:
    """The lowest value md itself keeps for this knob on an array like this, or None.

    - read_ahead_kb: raid5.c raises read-ahead to two full stripes (2 x chunk x data disks)
      when it starts an array and again when a reshape has added a disk (Debian 6.1:
      2048 -> 3072 KiB); not before the reshape ends, though mdstat shows the new disk count.
    - stripe_cache_size: during a reshape it must hold 4 chunks (raid5.c check_reshape; mdadm
      sets chunk_kb + 1 when it starts a grow: 513 for 512 KiB chunks); lower stalls the reshape.
    """
    if level not in PARITY_DISKS or not chunk_kb:
        return None
    if knob == "read_ahead_kb" and raid_disks and not reshaping:
        return 2 * chunk_kb * (raid_disks - PARITY_DISKS[level])
    if knob == "stripe_cache_size" and reshaping:
        return chunk_kb + 1
    return None

"""Whether md has given up on an array: one judgement from mdstat and sysfs, made once a tick
(app/live/tick.py) and read from there by the tuner, the page, a push and /metrics."""

from app.md import mdstat

# Members each level can lose and still serve its data (raid5.c max_degraded; raid1 needs one).
_CAN_LOSE = {"raid4": 1, "raid5": 1, "raid6": 2}
# Levels without redundancy: a faulty member is a failed array.
_NO_REDUNDANCY = ("raid0", "linear")


def is_failed(array: mdstat.Array, array_state: str | None, degraded: int | None = None) -> bool:
    """md has given up on the array, so its data is not available. Judged from the three things
    the kernels show, because none alone is enough on every kernel:
    - the word: mdstat says "broken" (Linux 6.12+), or sysfs array_state does (5.4 onwards, after
      the next I/O; 5.10 to 6.11 print "active" in mdstat then);
    - the counts: fewer working members than the level needs, from mdstat's [n/m] or else sysfs
      `degraded`; this holds while array_state still says write-pending (6.1 and 6.12 show that
      for seconds, the faulty member `faulty,blocked`), and when sysfs cannot be read;
    - a faulty member of a level without redundancy (raid0, linear)."""
    if array.broken or array_state == "broken":
        return True
    if array.state != "active":
        return False  # inactive: not running, not failed (severity says warning)
    if array.level in _NO_REDUNDANCY:
        return any("F" in d.flags for d in array.devices)
    total = array.raid_disks
    working = array.active_disks
    if working is None and total is not None and degraded is not None:
        working = total - degraded
    if total is None or working is None:
        return False
    if array.level in _CAN_LOSE:
        return working < total - _CAN_LOSE[array.level]
    if array.level == "raid1":
        return working < 1
    if array.level == "raid10":
        return _raid10_lost_a_whole_copy_set(array)
    return False


def _raid10_lost_a_whole_copy_set(array: mdstat.Array) -> bool:
    """raid10.c _enough(): every set of `copies` neighbouring slots, one set starting every
    `near_copies` slots, needs one member in sync. The slots come from mdstat's [UU_U]; without
    it or the copies (a wrapped line), the counts cannot tell and only the word decides."""
    status = array.status
    if not status or (array.near_copies is None and array.far_copies is None):
        return False
    near = array.near_copies or 1
    copies = near * (array.far_copies or 1)
    disks = len(status)
    first = 0
    while True:
        if all(status[(first + k) % disks] != "U" for k in range(copies)):
            return True
        first = (first + near) % disks
        if first == 0:
            return False

"""Which samples are worth a row: every one of a run, but of an idle array only those that say
something new, plus one heartbeat an hour (a row a minute of "nothing happened" would be
~150 MB a year on a three-array box).

An idle sample holds until the array's next one: the samples endpoint carries the last of them
to the present, so the API and the page still show an unbroken idle line.
"""

from typing import Any

HEARTBEAT_S = 3600.0
# What a sample says besides when: the kernel's state, members, knobs, mismatch count, and so on.
_IGNORED = frozenset({"ts", "mono"})


def says_the_same(row: dict[str, Any], last: dict[str, Any]) -> bool:
    return all(row[column] == last.get(column) for column in row if column not in _IGNORED)


class IdleFilter:
    """Remembers each array's last stored sample; a decision counts once its transaction does."""

    def __init__(self, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.heartbeat_s = heartbeat_s
        self.stored: dict[str, dict[str, Any]] = {}  # committed: array -> its last stored row
        self.staged: dict[str, dict[str, Any]] = {}  # in the open transaction

    def keep(self, row: dict[str, Any]) -> bool:
        """Store `row` (its run_id already set)? A clock stepped back stores one at once."""
        last = self.staged.get(row["array"]) or self.stored.get(row["array"])
        keep = (
            row["run_id"] is not None
            or last is None
            or not 0 <= row["ts"] - last["ts"] < self.heartbeat_s
            or not says_the_same(row, last)
        )
        if keep:
            self.staged[row["array"]] = dict(row)
        return keep

    def shift(self, delta: float) -> None:
        """The wall clock stepped by `delta` s and the stored samples moved with it:
        so do the ones remembered, and the heartbeat keeps counting monotonic time."""
        for rows in (self.stored, self.staged):
            for row in rows.values():
                row["ts"] += delta

    def commit(self) -> None:
        self.stored.update(self.staged)
        self.staged.clear()

    def rollback(self) -> None:
        self.staged.clear()

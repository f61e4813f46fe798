"""Which samples are worth a row: every one of a run, but of an idle array only those that say
something new, plus one heartbeat an hour (a row a minute of "nothing happened" would be
~150 MB a year on a three-array box).

An idle sample holds until the array's next one: the samples endpoint carries the last of them
to the present, so the API and the page still show an unbroken idle line.
"""

from app.store.run_log import SampleRow

HEARTBEAT_S = 3600.0


def says_the_same(sample: SampleRow, last: SampleRow) -> bool:
    """The same in all but when: the kernel's state, members, knobs, mismatch count, and so on."""
    return sample._replace(ts=last.ts, mono=last.mono) == last


class IdleFilter:
    """Remembers each array's last stored sample; a decision counts once its transaction does."""

    def __init__(self, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.heartbeat_s = heartbeat_s
        self.stored: dict[str, SampleRow] = {}  # committed: array -> its last stored sample
        self.staged: dict[str, SampleRow] = {}  # in the open transaction

    def keep(self, sample: SampleRow) -> bool:
        """Store `sample` (its run_id already set)? A clock stepped back stores one at once."""
        last = self.staged.get(sample.array) or self.stored.get(sample.array)
        keep = (
            sample.run_id is not None
            or last is None
            or not 0 <= sample.ts - last.ts < self.heartbeat_s
            or not says_the_same(sample, last)
        )
        if keep:
            self.staged[sample.array] = sample
        return keep

    def shift(self, delta: float) -> None:
        """The wall clock stepped by `delta` s and the stored samples moved with it:
        so do the ones remembered, and the heartbeat keeps counting monotonic time."""
        for samples in (self.stored, self.staged):
            for array, sample in samples.items():
                samples[array] = sample._replace(ts=sample.ts + delta)

    def commit(self) -> None:
        self.stored.update(self.staged)
        self.staged.clear()

    def rollback(self) -> None:
        self.staged.clear()

"""A verdict shows once it has held for hold_s, and leaves only after it has been absent as long.
A verdict that has held hold_s still waits while a more specific one has held at least half of it
and not yet shown, so the lead goes to the specific verdict at once rather than changing hands.

Pure: time comes in with each update, so tests step a clock instead of sleeping.
"""

from dataclasses import dataclass, field
from typing import Any

from app.diagnosis.rules import VERDICTS, Findings
from app.diagnosis.thresholds import threshold


@dataclass
class _Track:
    holding_since: float | None = None  # start of the current streak of ticks where it held
    absent_since: float | None = None  # start of the current streak where it did not
    shown_since: float | None = None  # when the shown verdict began to hold; None: not shown
    numbers: dict[str, Any] = field(default_factory=dict)  # from the last tick it held


@dataclass(frozen=True)
class Shown:
    """A verdict on show: since when it held, and the numbers of the last tick it held."""

    verdict: str
    since: float  # unix seconds, start of the streak that made it show
    numbers: dict[str, Any]
    fading: bool  # no longer holds, but not yet absent for hold_s


class Hysteresis:
    """One array's verdicts over time."""

    def __init__(self, hold_s: float | None = None) -> None:
        self.hold_s = threshold("hold_s") if hold_s is None else hold_s
        self.tracks = {verdict: _Track() for verdict in VERDICTS}
        self.last_update: float | None = None

    def shift(self, delta: float) -> None:
        """The wall clock stepped by `delta` s: the streaks' times move with it."""
        if self.last_update is not None:
            self.last_update += delta
        for track in self.tracks.values():
            for name in ("holding_since", "absent_since", "shown_since"):
                if (value := getattr(track, name)) is not None:
                    setattr(track, name, value + delta)

    def update(self, now: float, findings: Findings) -> list[Shown]:
        """Feed one tick's findings; returns what shows now, most specific first."""
        if self.last_update is not None and not 0 <= now - self.last_update <= self.hold_s:
            # The sampler was away longer than a verdict needs, or the clock stepped back: what
            # happened meanwhile is unknown, so streaks start again rather than span the gap.
            self.tracks = {verdict: _Track() for verdict in VERDICTS}
        self.last_update = now
        for verdict, track in self.tracks.items():
            if verdict in findings:
                track.absent_since = None
                track.numbers = findings[verdict]
                if track.holding_since is None:
                    track.holding_since = now
                if (
                    track.shown_since is None
                    and now - track.holding_since >= self.hold_s
                    and not self._more_specific_emerging(verdict, now)
                ):
                    track.shown_since = track.holding_since
            else:
                track.holding_since = None
                if track.absent_since is None:
                    track.absent_since = now
                if track.shown_since is not None and now - track.absent_since >= self.hold_s:
                    track.shown_since = None
        return self.shown()

    def _more_specific_emerging(self, verdict: str, now: float) -> bool:
        """A more specific verdict has held half a hold and will show within the other half: the
        general one waits for it, so the lead does not go to the general verdict for seconds and
        then change (one disk slow fills the stripe cache too; a real kernel showed both)."""
        for other, track in self.tracks.items():
            if other == verdict:
                return False
            if (
                track.shown_since is None
                and track.holding_since is not None
                and now - track.holding_since >= self.hold_s / 2
            ):
                return True
        return False

    def shown(self) -> list[Shown]:
        return [
            Shown(verdict, track.shown_since, track.numbers, track.absent_since is not None)
            for verdict, track in self.tracks.items()
            if track.shown_since is not None
        ]

    def pending(self, now: float) -> dict[str, float]:
        """Verdicts that hold but do not show yet: seconds until they would."""
        return {
            verdict: max(self.hold_s - (now - track.holding_since), 0.0)
            for verdict, track in self.tracks.items()
            if track.shown_since is None and track.holding_since is not None
        }

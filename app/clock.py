"""The app's clock: wall time whose differences are monotonic differences.

A NAS often boots with a wrong clock and NTP steps it later, by hours or days. Durations (paces,
windows, the stall timer, the boost timer, backoffs) must not see that step, but times shown and
schedules ("01:00") follow the wall clock. So between two sampler ticks the app's now runs on the
monotonic clock from the wall time of the last tick, and each tick re-reads both: where the wall
clock moved by more than STEP_S against the monotonic one, the tick reports a step and the sampler
shifts what came before it onto the new wall time (app/store/clockstep.py), so a series stays
continuous and every difference within it stays a monotonic one. Smaller differences (NTP slewing
the clock by at most 0.5 ms/s) are taken silently at each tick.
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# A wall-clock step: the wall and monotonic clocks moved apart by more than this between ticks.
STEP_S = 5.0


@dataclass(frozen=True)
class Reading:
    """One tick's time."""

    wall: float  # unix seconds: the app's now from this tick on
    mono: float  # seconds of time.monotonic(): only differences mean anything
    step: float  # seconds the wall clock stepped since the last reading (0.0: none)


class Timeline:
    """Callable like time.time (the app's now); read() is the sampler's, once per tick."""

    def __init__(
        self,
        wall: Callable[[], float] = time.time,
        mono: Callable[[], float] = time.monotonic,
        step_s: float = STEP_S,
    ) -> None:
        self._wall = wall
        self._mono = mono
        self.step_s = step_s
        self._lock = threading.Lock()
        self._anchor = (wall(), mono())

    def __call__(self) -> float:
        wall, mono = self._anchor
        return wall + (self._mono() - mono)

    def mono(self) -> float:
        return self._mono()

    def read(self) -> Reading:
        """Both clocks now; the app's now becomes this wall time, a step is reported once."""
        with self._lock:
            wall, mono = self._wall(), self._mono()
            anchor_wall, anchor_mono = self._anchor
            moved = wall - (anchor_wall + (mono - anchor_mono))
            self._anchor = (wall, mono)
        return Reading(wall, mono, moved if abs(moved) > self.step_s else 0.0)


class _Unstepped(Timeline):
    def __call__(self) -> float:
        return self._wall()

    def read(self) -> Reading:
        now = self._wall()
        return Reading(now, now, 0.0)


def fixed_rate(clock: Callable[[], float]) -> Timeline:
    """A Timeline over a clock taken as never stepping (the demo's sped-up clock, tests' fake
    clocks): it serves as both clocks, so no step is ever seen."""
    return _Unstepped(clock, clock)

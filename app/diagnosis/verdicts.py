"""A running array's diagnosis as of one tick: the verdicts shown, the readings behind them, and
the change of the primary verdict that is worth an event."""

import functools
from dataclasses import dataclass, replace
from typing import Any

from app.diagnosis import text
from app.diagnosis.hysteresis import Shown
from app.diagnosis.rules import Observation, member_shape
from app.shapes import arrays as shapes


@dataclass(frozen=True)
class Verdict:
    verdict: str  # one of rules.VERDICTS
    title: str
    sentence: str  # the plain sentence under the progress bar
    finding: str  # the same without the advice
    since: float  # unix seconds: when it began to hold
    numbers: dict[str, Any]  # the evidence
    fading: bool  # stopped holding; leaves after hold_s unless it comes back

    def shape(self, now: float) -> shapes.VerdictBody:
        return shapes.VerdictBody(
            verdict=self.verdict,
            title=self.title,
            sentence=self.sentence,
            finding=self.finding,
            since=self.since,
            held_s=round(now - self.since, 1),
            fading=self.fading,
            numbers=self.numbers,
        )


@dataclass(frozen=True)
class Diagnosis:
    """One running array's verdicts as of one tick, with the readings behind them."""

    array: str
    ts: float  # unix seconds of the tick
    verdicts: tuple[Verdict, ...]  # shown, most specific first
    pending: dict[str, float]  # holding, not shown yet: seconds until they show
    observation: Observation  # the window's numbers, whatever the verdicts

    @functools.cached_property
    def readings(self) -> shapes.Readings:
        """The observation as plain numbers; built when asked for, not every tick."""
        return readings(self.observation)

    @property
    def primary(self) -> Verdict | None:
        return self.verdicts[0] if self.verdicts else None

    def beside_boost(self, offered: float | None, boost_off: bool = False) -> "Diagnosis":
        """These verdicts with their advice judged beside boost's estimate for this run
        (`offered`: its gain, 1.0 when it would not help; None: no estimate is offered, either
        because boost is on or, with `boost_off`, because its gain is not known yet: then the
        advice never says there is nothing to tune while the page offers boost)."""
        if offered is None and not boost_off:
            return self
        judged = {"boost_ratio": offered} if offered is not None else {"boost_unknown": True}
        verdicts = tuple(
            replace(v, sentence=text.sentence(v.verdict, {**v.numbers, **judged}))
            for v in self.verdicts
        )
        return replace(self, verdicts=verdicts)

    def shape(self) -> shapes.DiagnosisBody:
        """GET /api/arrays/{name}/diagnosis of a running array."""
        primary = self.primary
        return shapes.DiagnosisBody(
            array=self.array,
            ts=self.ts,
            running=True,
            verdict=primary.verdict if primary else None,
            sentence=primary.sentence if primary else None,
            verdicts=[v.shape(self.ts) for v in self.verdicts],
            pending={k: round(v, 1) for k, v in self.pending.items()},
            readings=self.readings,
        )


@dataclass(frozen=True)
class VerdictChange:
    """The shown primary verdict of a running array changed: worth an event."""

    array: str
    ts: float
    verdict: str | None  # None: nothing holds it back any more
    previous: str | None
    sentence: str | None
    numbers: dict[str, Any]

    def detail(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "previous": self.previous,
            "sentence": self.sentence,
            "numbers": self.numbers,
        }


def shown_verdict(shown: Shown) -> Verdict:
    return Verdict(
        verdict=shown.verdict,
        title=text.TITLES[shown.verdict],
        sentence=text.sentence(shown.verdict, shown.numbers),
        finding=text.finding(shown.verdict, shown.numbers),
        since=shown.since,
        numbers=shown.numbers,
        fading=shown.fading,
    )


def readings(obs: Observation) -> shapes.Readings:
    """The observation as plain, rounded numbers for JSON."""
    return shapes.Readings(
        speed_kb_s=obs.speed_kb_s,
        min_kb_s=obs.min_kb_s,
        max_kb_s=obs.max_kb_s,
        stripe_cache_size=obs.stripe_cache_size,
        stripe_cache_active=obs.stripe_cache_active,
        threads_cpu={k: round(v, 3) for k, v in obs.threads_cpu.items()},
        mem_available_kib=obs.mem_available_kib,
        window_s=None if obs.window_s is None else round(obs.window_s, 1),
        members=[member_shape(m) for m in obs.members],
        array_read_kib_s=None if obs.array_read_kib_s is None else round(obs.array_read_kib_s),
        array_write_kib_s=None if obs.array_write_kib_s is None else round(obs.array_write_kib_s),
        other_partitions_kib_s={k: round(v) for k, v in obs.other_partitions_kib_s.items()},
    )

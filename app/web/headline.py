"""The first screen's one sentence: what is happening, how far, when it
finishes, whether the data is safe; then the boost it offers or the effect boost measured."""

from dataclasses import dataclass, replace

from app.forecast.boost import BoostEstimate
from app.forecast.model import Forecast
from app.forecast.pool import PoolForecast
from app.live.forecasts import PoolForecastBody
from app.md.mdstat import PARITY_DISKS
from app.shapes.tuning import Effect, TuningState
from app.web.views import ArrayCard, BoostPanel, PastRun

# What md is doing, in the owner's words (the kernel's names are on the card below).
DOING = {
    "reshape": "is growing onto the new disk",
    "recovery": "is rebuilding onto the replacement disk",
    "resync": "is bringing its disks back in step",
    "check": "is being checked for errors",
}


@dataclass(frozen=True)
class HeadlineBoost:
    """Boost as the sentence says it."""

    on: bool
    state: TuningState  # what is tuned now
    effect: Effect | None  # boost's measured effect on the job, while boost is on
    estimate: BoostEstimate | None  # the finish boost would give, while it is off
    no_help: BoostEstimate | None  # boost's estimate when it would not speed the job up


@dataclass(frozen=True)
class Headline:
    """The parts of the first screen's sentence (templates/_headline.html). The job's fields
    are set while a job runs (`focus`)."""

    failed: list[str]  # the failed arrays' names
    focus: ArrayCard | None  # the running array the sentence speaks of
    safety: tuple[str, str]  # ("ok" | "warn" | "bad", the words)
    boost: HeadlineBoost
    last: PastRun | None  # the last finished run, said while nothing runs
    subject: str | None = None  # "Your storage pool", or the array's title
    phase: tuple[int | None, int | None] | None = None  # (phase, of phases) of a pool's job
    doing: str | None = None  # what md is doing, in the owner's words
    percent: float | None = None
    forecast: Forecast | PoolForecast | None = None  # the finish, when one is known
    no_forecast: str | None = None  # why there is no finish yet


def headline(
    cards: list[ArrayCard],
    pool: PoolForecastBody | None,
    boost: BoostPanel,
    runs: list[PastRun],
) -> Headline:
    """The sentence's parts for templates/_headline.html, from what the page shows below it."""
    running = [c for c in cards if c.running]
    focus = _focus(running, pool)
    found = Headline(
        failed=[c.array.name for c in cards if c.failed],
        focus=focus,
        safety=_safety(cards),
        boost=_boost(focus, boost),
        last=next((r for r in runs if r.run.finished is not None), None),
    )
    if focus is None or focus.sync is None:
        return found
    fc: Forecast | PoolForecast | None = focus.eta.forecast if focus.eta else None
    subject, phase = focus.title, None
    if pool is not None and focus.array.name in {m.name for m in pool.arrays}:
        subject, phase = "Your storage pool", (pool.pool.phase, pool.pool.phases)
        fc = pool.pool
    action = focus.sync.action
    return replace(
        found,
        subject=subject,
        phase=phase,
        doing=DOING.get(action, f"is running a {action}"),
        percent=focus.sync.percent,
        # A settling forecast (the pace before a change, scaled by it) is shown with its label:
        # right after boost the finish moves, it never turns into "no finish time".
        forecast=fc if fc is not None and fc.status in ("ok", "settling") else None,
        no_forecast=(fc.reason if fc is not None else None) or "measuring the pace",
    )


def _focus(running: list[ArrayCard], pool: PoolForecastBody | None) -> ArrayCard | None:
    """The job the owner cares about: the pool's running array, else the first running data
    array, else whatever runs (DSM's own arrays resync too)."""
    if pool is not None:
        names = {m.name for m in pool.arrays if m.state == "running"}
        for card in running:
            if card.array.name in names:
                return card
    data = [c for c in running if c.array.role == "data"]
    return next(iter(data or running), None)


def _safety(cards: list[ArrayCard]) -> tuple[str, str]:
    """("ok" | "warn" | "bad", the words): is the data safe, from the worst array."""
    for card in cards:
        if card.failed:
            return "bad", f"{card.title} has failed and the data on it is not available: see below."
    for card in cards:
        if not card.degraded or card.array.role != "data":
            continue
        name, level = card.title, card.array.level or ""
        disks = card.array.raid_disks or len(card.array.status or "")
        spare = _redundancy(level, disks) - card.missing
        if spare <= 0:
            return "bad", (
                f"Your data is readable, but {name} has no redundancy left: one more failed disk "
                "would lose it until the rebuild ends."
            )
        return "warn", f"Your data is safe, but {name} is degraded: it survives {spare} more."
    return "ok", "Your data is safe: every disk is working."


def _redundancy(level: str, disks: int) -> int:
    """Members an array can lose and keep its data (raid10: one per mirror, counted once)."""
    if level in PARITY_DISKS:
        return PARITY_DISKS[level]
    return {"raid1": max(disks - 1, 0), "raid10": 1}.get(level, 0)


def _boost(focus: ArrayCard | None, boost: BoostPanel) -> HeadlineBoost:
    """Boost as the sentence says it: on, with its measured effect; otherwise the tuning state
    (auto-tuned, a preset, a schedule's window) and what boost would give from there, or that it
    would not help."""
    tuning = boost.tuning
    state = tuning.state
    on = state.kind == "boost"
    name = focus.array.name if focus else None
    effects = [e for e in tuning.effects if e.preset == "boost"]
    effect = next((e for e in effects if e.array == name), effects[0] if effects else None)
    estimate = focus.eta.boost if focus and focus.eta and not on else None
    return HeadlineBoost(
        on=on,
        state=state,
        effect=effect if on else None,
        estimate=estimate if estimate and estimate.eta else None,
        no_help=estimate if estimate and not estimate.helps else None,
    )

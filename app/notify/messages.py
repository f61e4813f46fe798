"""An event as the owner reads it: what, which array, the ETA with its range, a link."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.diagnosis.text import TITLES
from app.formats import ACTION_LABELS, CLOCK_FORMAT, clock, duration
from app.live.forecasts import ArrayForecast, PoolForecastBody
from app.notify.observation import Event
from app.notify.senders import Message, Priority

# Forecast of an array's open run as live/forecasts.array_eta() shapes it, or None when it has none.
EtaLookup = Callable[[str], ArrayForecast | None]
PoolLookup = Callable[[], PoolForecastBody | None]


def zoned_clock(ts: float | None) -> str:
    """A wall time with the box's zone ("Mon 30 Nov 19:52 PST"): a message is read on a phone
    that may sit in another zone than the NAS, with no page beside it to name the zone."""
    return clock(ts, form=f"{CLOCK_FORMAT} %Z")


PRIORITY: dict[str, Priority] = {
    "broken": "urgent",
    "member_failed": "urgent",
    "degraded": "urgent",
    "sampler_failing": "urgent",
    "stalled": "high",
    "mismatch": "high",
    "boost_left_on": "high",
    "slower": "high",
    "milestone": "low",
    "slow_reason": "low",
    "resumed": "low",
}
TAGS = {
    "broken": ["rotating_light"],
    "member_failed": ["rotating_light"],
    "degraded": ["warning"],
    "sampler_failing": ["warning"],
    "stalled": ["hourglass"],
    "mismatch": ["warning"],
    "boost_left_on": ["rocket"],
    "finished": ["white_check_mark"],
    "pool_finished": ["white_check_mark"],
    "restored": ["white_check_mark"],
    "drift": ["wrench"],
    "slower": ["turtle", "leftwards_arrow_with_hook"],
    "slow_reason": ["turtle"],
}


@dataclass(frozen=True)
class Context:
    page_url: str  # MDBOOST_PUBLIC_URL
    eta: EtaLookup
    pool: PoolLookup


def page_link(page_url: str, array: str | None) -> str:
    base = page_url if page_url.endswith("/") else page_url + "/"
    return f"{base}#array-{array}" if array else base


def eta_line(view: ArrayForecast | None) -> str | None:
    """'ETA Tue 14 Oct 16:20 (15:50 – 17:05), in 3 h 10 min', or why there is none."""
    if view is None:
        return None
    fc = view.forecast
    if fc.eta is None:
        return f"ETA not known yet: {fc.reason or fc.status or 'no forecast'}."
    low, high = fc.low or fc.eta, fc.high or fc.eta
    left = view.eta_in_s
    return (
        f"ETA {zoned_clock(fc.eta)} (between {clock(low)} and {clock(high)}), in {duration(left)}."
    )


def _action(detail: dict[str, Any]) -> str:
    """md's own word for the operation (reshape, recovery, resync, check)."""
    return str(detail.get("action") or "operation")


def compose(event: Event, ctx: Context) -> Message:
    d, name = event.detail, event.array or ""
    action = _action(d)
    title, lines = _text(event, name, action, ctx)
    if event.array and event.kind not in ("finished", "restored", "broken"):
        line = eta_line(ctx.eta(event.array))
        if line:
            lines.append(line)
    if event.kind == "started" and d.get("pool_members"):
        line = _pool_line(ctx)
        if line:
            lines.append(line)
    return Message(
        key=event.key,
        kind=event.kind,
        title=title,
        body="\n".join(lines),
        priority=PRIORITY.get(event.kind, "default"),
        tags=TAGS.get(event.kind, []),
        click=page_link(ctx.page_url, event.array),
        array=event.array,
    )


def _text(event: Event, name: str, action: str, ctx: Context) -> tuple[str, list[str]]:
    d = event.detail
    kind = event.kind
    label = ACTION_LABELS.get(action, action.capitalize())
    if kind == "started":
        percent = d.get("percent")
        title = f"{name}: {action} started"
        lines = [f"{label} {name}" + (f", at {percent:.1f} % now." if percent else ".")]
        if d.get("pool_members"):
            phase = d["pool_phase"]
            title = f"{name}: {action} started (SHR expansion, array {phase})"
            queued = d.get("pool_queued") or []
            members = ", ".join(d["pool_members"] + queued)
            total = len(d["pool_members"]) + len(queued)
            lines.append(f"SHR expansion: array {phase} of {total} ({members}).")
        return title, lines
    if kind == "milestone":
        return f"{name}: {action} {d['percent']:g} % done", [
            f"{label} {name}: {d['percent']:g} % done."
        ]
    if kind == "finished":
        took = duration(d["finished"] - d["started"]) if d.get("started") else None
        outcome = d.get("outcome")
        if outcome == "completed":
            lines = [f"{label} {name} finished" + (f" after {took}." if took else ".")]
            following = _next_phase(name, ctx)
            if following is not None:
                return f"{name} done; {following}", [*lines, f"The job goes on: {following}."]
            return f"{name}: {action} finished", lines
        return f"{name}: {action} ended ({outcome})", [
            f"The {action} on {name} ended without completing: {outcome}."
        ]
    if kind == "stalled":
        percent = d.get("percent")
        at = f" at {percent:.1f} %" if percent is not None else ""
        return f"{name}: {action} stalled{at}", [
            f"No progress on {name} since {zoned_clock(d['since'])}, although the {action} runs.",
        ]
    if kind == "slow_reason":
        title = TITLES[d["verdict"]]
        return f"{name}: {title[0].lower()}{title[1:]}", [
            f"{label} {name}, since {zoned_clock(d['since'])}. {d['sentence']}"
        ]
    if kind == "resumed":
        return f"{name}: {action} moving again", [
            f"{name} progresses again after {duration(d['stalled_s'])} without progress."
        ]
    if kind == "degraded":
        status = f" [{d['status']}]" if d.get("status") else ""
        return f"{name} is degraded{status}", [
            f"{name} is missing {d['missing']} member(s): it has less redundancy until it rebuilds."
        ]
    if kind == "member_failed":
        return f"{name}: {d['device']} failed", [
            f"md marked {d['device']} faulty (F) in {name}. Replace the disk."
        ]
    if kind == "broken":
        return f"{name} is broken", [f"md marks {name} broken: it lost more members than it can."]
    if kind == "restored":
        status = f" [{d['status']}]" if d.get("status") else ""
        return f"{name}: redundant again{status}", [
            f"A spare became active: {name} has all its members in sync again."
        ]
    if kind == "mismatch":
        return f"{name}: check found {d['mismatch_cnt']} mismatches", [
            f"A check of {name} ({d.get('level')}) ended with mismatch_cnt={d['mismatch_cnt']}: "
            "parity and data disagree somewhere. Consider a repair and check the disks."
        ]
    if kind == "boost_left_on":
        arrays = ", ".join(d["arrays"])
        return "Boost is still on", [
            f"The tuned arrays ({arrays}) run nothing any more, but mdboost's tuning is still "
            "applied. Revert it on the page."
        ]
    if kind == "drift":
        where = f"{name}: " if name else ""
        return f"{where}{d['key']} changed by someone else", [
            f"mdboost set {d['key']} to {d['desired']}; it is now {d['current']}."
        ]
    if kind == "slower":
        where = f"{name}: " if name else ""
        return f"{where}{d['preset']} put back, it was slower", [f"{d['sentence']}."]
    if kind == "sampler_failing":
        return "mdboost cannot sample the arrays", [
            f"{d['failures']} samples in a row failed since {zoned_clock(d['since'])}: {d['error']}"
        ]
    if kind == "sampler_recovered":
        return "mdboost samples the arrays again", ["Sampling works again."]
    if kind == "pool_finished":
        members = ", ".join(d["members"])
        return "SHR expansion finished", [
            f"Every array of the storage pool is reshaped ({members}); "
            f"the last one finished {zoned_clock(d['finished'])}."
        ]
    return kind, [str(d)]


def _next_phase(name: str, ctx: Context) -> str | None:
    """The job's phase after `name` with its own length ("md3 next, about 1 d 8 h"), when
    the job goes on after it (app/live/job.py)."""
    view = ctx.pool()
    if not view:
        return None
    order = [f.name for f in view.pool.finishes]
    if name not in order:
        return None
    later = [f for f in view.pool.finishes[order.index(name) + 1 :] if f.state != "done"]
    if not later:
        return None
    following = later[0]
    if following.eta is None:
        return f"{following.name} next"
    return f"{following.name} next, about {duration(max(following.eta - view.now, 0.0))}"


def _pool_line(ctx: Context) -> str | None:
    view = ctx.pool()
    if not view:
        return None
    pool = view.pool
    if pool.eta is None:
        return None
    low, high = pool.low or pool.eta, pool.high or pool.eta
    return f"Whole pool: ETA {zoned_clock(pool.eta)} (between {clock(low)} and {clock(high)})."


def probe_message(page_url: str, key: str) -> Message:
    return Message(
        key=key,
        kind="test",
        title="mdboost test message",
        body="This destination works: mdboost will tell you here when a rebuild or reshape "
        "starts, passes each milestone, stalls or finishes, and when an array degrades.",
        tags=["wave"],
        click=page_link(page_url, None),
    )


def disk_full_message(page_url: str, key: str) -> Message:
    return Message(
        key=key,
        kind="disk_full",
        title="mdboost: the disk holding its database is full",
        body="Samples are not being recorded (mdboost keeps the latest in memory and writes "
        "them once there is room), and every change of tuning is refused until then. Free some "
        "space on that disk.",
        priority="high",
        tags=["warning"],
        click=page_link(page_url, None),
    )


def originals_lost_message(page_url: str, key: str, why: str, knobs: int) -> Message:
    return Message(
        key=key,
        kind="originals_lost",
        title="mdboost: the original values of the knobs it changed are lost",
        body=f"They could not be found at start-up ({why}). mdboost put md's own defaults back "
        f"on {knobs} knob{'' if knobs == 1 else 's'} instead: if you had set any of them "
        "yourself (or DSM had), set them again.",
        priority="high",
        tags=["warning"],
        click=page_link(page_url, None),
    )

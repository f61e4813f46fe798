"""Verdicts in plain words for an owner: what holds the sync back, and the one thing to do."""

from typing import Any

from app.formats import mb_s, ratio
from app.md.knobs import BUDGET_SHARE, CATALOGUE, stripe_cache_entries

TITLES = {
    "held_by_max": "Held by the speed limit",
    "yielding": "Held back by other I/O on the disks",
    "slow_member": "One slow disk",
    "cpu_bound": "Limited by the CPU",
    "stripe_cache": "md's parity memory is full",
    "disks_limit": "At the disks' limit",
}


def sentence(verdict: str, numbers: dict[str, Any]) -> str:
    """One sentence: the verdict, its strongest number, and what to do about it."""
    return f"{finding(verdict, numbers)} {todo(verdict, numbers)}"


def finding(verdict: str, numbers: dict[str, Any]) -> str:
    """The verdict and its strongest number, without the advice: for the verdicts beside the
    first, whose advice the first one's may contradict ("nothing to tune" vs "a bigger cache")."""
    return f"{TITLES[verdict]}: {_why(verdict, numbers)}"


def _why(verdict: str, n: dict[str, Any]) -> str:
    if verdict == "held_by_max":
        which = "this array's own maximum" if n.get("local") else "the maximum md allows"
        return f"it runs at {mb_s(n['speed_kb_s'])}, {which} ({mb_s(n['max_kb_s'])})."
    if verdict == "yielding":
        kinds = _io_kinds(n["array_read_kib_s"], n["array_write_kib_s"])
        process = n["processes"][0]["comm"] if n.get("processes") else None
        source = process or ("another program" if kinds else "other partitions")
        what = f"{kinds or 'I/O'} from {source}"
        busiest = n.get("busiest")
        busy = f" ({busiest['disk']} {_percent(busiest['busy'])} busy)" if busiest else ""
        return f"{_percent(n['share'])} of their traffic is {what}{busy}."
    if verdict == "slow_member":
        return (
            f"{n['disk']} takes {n['wait_ms']:.0f} ms per request, {n['ratio']:.0f}x the other "
            f"disks, and is the busiest ({_percent(n['busy'])})."
        )
    if verdict == "cpu_bound":
        work = "computing parity" if n.get("parity") else "working"
        return f"{n['thread']} uses {_percent(n['cores'])} of a CPU core {work}."
    if verdict == "stripe_cache":
        return f"{_percent(n['active'] / n['size'])} of the stripe cache is in use."
    if verdict == "disks_limit":
        low, high = _percent(n["busy_min"]), _percent(n["busy_max"])
        busy = low if low == high else f"{low} to {high}"
        return f"every member is {busy} busy, moving {mb_s(n['kib_s'])} together."
    raise ValueError(f"unknown verdict {verdict!r}")


# Boost's estimate above this gain is an offer: no verdict beside it says there is nothing to
# tune, and one at or below it is none: no verdict says boost helps.
BOOST_GAIN = 1.1


def todo(verdict: str, n: dict[str, Any]) -> str:
    """The one thing to do. `n["boost_ratio"]`, when set, is the gain boost's estimate offers
    for this run beside the verdict (1.0: it would not help): the advice never contradicts it."""
    offered = n.get("boost_ratio")
    if verdict == "held_by_max":
        if offered is not None and offered <= BOOST_GAIN:
            return "Boost is not expected to lift it: its estimate gains nothing here."
        return "Boost raises it."
    if verdict == "yielding":
        if n.get("below_min"):
            return "md already runs below its floor: pausing what competes is what helps."
        if offered is not None and offered <= BOOST_GAIN:
            return "Pausing what competes is what helps: boost's estimate gains nothing here."
        return "Boost raises its floor (md stops yielding below it), or pause what competes."
    if verdict == "slow_member":
        return "Check that disk's health (SMART): it may be failing, or an SMR disk."
    if verdict == "cpu_bound":
        if n.get("group_thread_cnt") is not None:
            return "Raising group_thread_cnt spreads the parity work over more cores."
        return "This kernel cannot spread it over more cores (no group_thread_cnt)."
    if verdict == "stripe_cache":
        room = stripe_cache_room(n)
        if room is not None and room <= n["size"]:
            return "A bigger cache would help, but there is no free memory for one."
        bigger = f" (up to {room / n['size']:.0f}x this one fits in memory)" if room else ""
        return f"A bigger stripe cache lets md work on more stripes at once{bigger}."
    if verdict == "disks_limit":
        if offered is not None and offered > BOOST_GAIN:
            return (
                f"Boost could still make them about ×{ratio(offered)} faster: md's larger "
                "requests move more for each second the disks are busy."
            )
        if n.get("boost_unknown"):
            return (
                "Boost may still help: md's larger requests move more for each second the "
                "disks are busy. Its gain here is estimated once the pace is known."
            )
        return "Nothing to tune: this is about as fast as these disks go."
    raise ValueError(f"unknown verdict {verdict!r}")


def stripe_cache_room(n: dict[str, Any]) -> int | None:
    """The largest stripe cache the tuning's RAM budget (a share of MemAvailable) could hold."""
    available, disks = n.get("mem_available_kib"), n.get("disks")
    if not available or not disks:
        return None
    fit = stripe_cache_entries(available * BUDGET_SHARE, disks)
    return min(fit, CATALOGUE["stripe_cache_size"].maximum)


def _io_kinds(reads: float, writes: float) -> str | None:
    """What the array's own users do: reads, writes, both; None when they do nothing."""
    if reads + writes <= 0:
        return None
    if reads >= 3 * writes:
        return "reads"
    if writes >= 3 * reads:
        return "writes"
    return "reads and writes"


def _percent(share: float) -> str:
    return f"{share * 100:.0f} %"

"""A verdict shows after a minute of holding and leaves after a minute of not: time is stepped."""

from app.diagnosis.hysteresis import Hysteresis
from app.diagnosis.rules import Findings

T0 = 1_700_000_000.0
HELD: Findings = {"held_by_max": {"speed_kb_s": 9800, "max_kb_s": 10000, "local": False}}


def feed(
    h: Hysteresis, start: float, end: float, findings: Findings, step: float = 5.0
) -> list[str]:
    """Ticks every `step` s in [start, end); the shown verdicts after the last."""
    shown: list[str] = []
    t = start
    while t < end:
        shown = [s.verdict for s in h.update(t, findings)]
        t += step
    return shown


def test_shows_only_after_holding_a_minute() -> None:
    h = Hysteresis()
    assert feed(h, T0, T0 + 60, HELD) == []  # ticks at 0..55 s
    assert h.pending(T0 + 55) == {"held_by_max": 5.0}
    shown = h.update(T0 + 60, HELD)
    assert [(s.verdict, s.since, s.fading) for s in shown] == [("held_by_max", T0, False)]


def test_leaves_only_after_a_minute_absent_and_fades_meanwhile() -> None:
    h = Hysteresis()
    feed(h, T0, T0 + 65, HELD)
    shown = h.update(T0 + 65, {})
    assert [(s.verdict, s.fading, s.numbers["speed_kb_s"]) for s in shown] == [
        ("held_by_max", True, 9800)
    ]
    assert feed(h, T0 + 70, T0 + 125, {}) == ["held_by_max"]  # absent 55 s
    assert h.update(T0 + 125, {}) == []


def test_bursts_shorter_than_a_minute_never_show_nor_clear() -> None:
    h = Hysteresis()
    changes, shown_before = 0, False
    for cycle in range(20):  # 40 s on, 30 s off, for 23 minutes
        start = T0 + cycle * 70
        for t, findings in ((start, HELD), (start + 40, {})):
            end = t + (40 if findings else 30)
            shown = bool(feed(h, t, end, findings))
            changes += shown != shown_before
            shown_before = shown
    assert changes == 0


def test_a_steady_verdict_survives_short_gaps_in_it() -> None:
    h = Hysteresis()
    feed(h, T0, T0 + 120, HELD)
    for cycle in range(10):  # 20 s gaps every 80 s: it stays, with its first since
        start = T0 + 120 + cycle * 80
        assert feed(h, start, start + 20, {}) == ["held_by_max"]
        shown = h.update(start + 20, HELD)
        assert [(s.since, s.fading) for s in shown] == [(T0, False)]
        feed(h, start + 20, start + 80, HELD)


def test_a_long_gap_in_sampling_restarts_the_clock() -> None:
    h = Hysteresis()
    feed(h, T0, T0 + 50, HELD)
    assert h.update(T0 + 600, HELD) == []  # 10 minutes unseen: it must hold a minute again
    assert feed(h, T0 + 605, T0 + 665, HELD) == ["held_by_max"]


def test_most_specific_first() -> None:
    h = Hysteresis(hold_s=0)
    both = {"disks_limit": {}, "yielding": {}}
    assert [s.verdict for s in h.update(T0, both)] == ["yielding", "disks_limit"]


def test_a_clock_stepping_back_restarts_the_clock() -> None:
    h = Hysteresis()
    feed(h, T0, T0 + 50, HELD)
    assert h.update(T0 - 3600, HELD) == []
    assert feed(h, T0 - 3595, T0 - 3535, HELD) == ["held_by_max"]


SLOW: Findings = {"slow_member": {"member": "vdb"}}
CACHE: Findings = {"stripe_cache": {"active": 250, "size": 256}}


def test_the_lead_goes_to_the_specific_verdict_that_emerges_seconds_later() -> None:
    """A real kernel's slow-member recovery: the cache is full from the first tick, the slow
    disk is told 4 s later. The general verdict must not lead for 4 s and then hand over."""
    h = Hysteresis()
    h.update(T0, CACHE)
    leads = []
    for t in range(4, 120, 4):
        shown = [s.verdict for s in h.update(T0 + t, CACHE | SLOW)]
        if shown and (not leads or leads[-1] != shown[0]):
            leads.append(shown[0])
    assert leads == ["slow_member"]
    assert [s.verdict for s in h.shown()] == ["slow_member", "stripe_cache"]
    assert h.shown()[1].since == T0  # it waited, but its streak is the one it held


def test_a_specific_blip_does_not_hold_back_a_steady_general_verdict() -> None:
    h = Hysteresis()
    feed(h, T0, T0 + 55, CACHE)
    feed(h, T0 + 55, T0 + 75, CACHE | SLOW)  # 20 s of a slow disk: under half a hold
    assert feed(h, T0 + 75, T0 + 80, CACHE) == ["stripe_cache"]
    h2 = Hysteresis()
    feed(h2, T0, T0 + 30, CACHE)
    feed(h2, T0 + 30, T0 + 65, CACHE | SLOW)  # the slow disk for 35 s: over half, still pending
    assert h2.update(T0 + 65, CACHE | SLOW) == []
    assert [s.verdict for s in h2.update(T0 + 70, CACHE)] == ["stripe_cache"]  # it passed

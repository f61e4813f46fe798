"""Plan a preset: which knob goes from what to what on which array, what it costs, what is skipped.

A plan only reads the kernel. It never exceeds the stripe-cache RAM budget, never plans a value
outside the catalogue's range, and refuses a plan that would leave a minimum above its maximum.
"""

from dataclasses import dataclass

from app.kernel.host import ARRAY_NAME, Host
from app.kernel.knobs import read_knob
from app.live.array_view import failed_names
from app.md import mdstat
from app.md.knobs import (
    CATALOGUE,
    LIMIT_PAIRS,
    SYSTEM,
    Knob,
    budget_from_available,
    stripe_cache_mib,
)
from app.shapes.tuning import PlanChange, PlanRam, PlanSkipped, PresetPlan
from app.tuning.planning.presets import AUTO, Preset
from app.tuning.planning.targets import PlanError, knob_targets, target_arrays

AUTO_STRIPE_CACHE_MAX = 16384  # seeds: 16384 fastest; 32768 slower

Wanted = dict[str, tuple[Knob, str | None, str, str, str]]  # key -> knob, target, from, to, why


@dataclass(frozen=True)
class KnobChange:
    key: str  # "stripe_cache_size@md2", or the knob name for a global knob
    knob: str
    target: str | None  # array or disk; None for global knobs
    unit: str
    from_value: str  # as normalised from the kernel file
    to_value: str
    reason: str
    cost_mib: float | None = None  # RAM of a stripe cache at the new size

    def shape(self) -> PlanChange:
        return PlanChange(
            key=self.key,
            knob=self.knob,
            target=self.target,
            unit=self.unit,
            from_=self.from_value,
            to=self.to_value,
            reason=self.reason,
            cost_mib=self.cost_mib,
        )


@dataclass(frozen=True)
class Skipped:
    knob: str
    target: str | None
    why: str


@dataclass(frozen=True)
class KnobPlan:
    """A preset's plan of knob writes on the chosen arrays, and what it skips and costs."""

    preset: str
    arrays: tuple[str, ...]
    changes: tuple[KnobChange, ...]
    skipped: tuple[Skipped, ...]
    unchanged: tuple[str, ...]  # keys already at the preset's value
    budget_mib: float
    cost_mib: float  # all arrays' stripe caches once the plan is applied
    notes: tuple[str, ...]

    def shape(self) -> PresetPlan:
        """The plan as the API and the page show it."""
        return PresetPlan(
            preset=self.preset,
            arrays=list(self.arrays),
            changes=[c.shape() for c in self.changes],
            skipped=[PlanSkipped(knob=s.knob, target=s.target, why=s.why) for s in self.skipped],
            unchanged=list(self.unchanged),
            ram=PlanRam(budget_mib=round(self.budget_mib, 1), cost_mib=round(self.cost_mib, 1)),
            notes=list(self.notes),
        )


def knob_key(knob: str, target: str | None) -> str:
    return f"{knob}@{target}" if target else knob


def budget_mib(host: Host, max_cache_mb: float | None) -> float:
    if max_cache_mb is not None:
        return max_cache_mb
    return budget_from_available(host.read_meminfo().get("MemAvailable", 0) / 1024)


def member_disks(array: mdstat.Array) -> int:
    """Disks a stripe-cache entry spans: raid_disks, else the members that are not spares."""
    if array.raid_disks:
        return array.raid_disks
    return max(1, sum(1 for d in array.devices if "S" not in d.flags))


def plan_preset(
    preset: Preset,
    host: Host,
    md: mdstat.MdStat,
    requested_arrays: list[str] | None = None,
    max_cache_mb: float | None = None,
) -> KnobPlan:
    failed_arrays = failed_names(md, host)
    arrays = target_arrays(md, requested_arrays, failed_arrays)
    syncing = {a.name for a in arrays if a.syncing}
    budget = budget_mib(host, max_cache_mb)
    wanted: Wanted = {}
    skipped: list[Skipped] = []
    notes = [f"{name} has failed: mdboost leaves it alone" for name in failed_arrays]
    for setting in preset.settings:
        knob = CATALOGUE[setting.knob]
        for target, skip in knob_targets(knob, arrays, host):
            if skip:
                skipped.append(Skipped(knob.name, target, skip))
                continue
            current = read_knob(host, knob, target)
            if current is None:
                skipped.append(Skipped(knob.name, target, "not supported on this kernel"))
                continue
            if not knob.safe_while_syncing and (target in syncing or knob.scope != "array"):
                skipped.append(Skipped(knob.name, target, "never changed while a sync runs"))
                continue
            key = knob_key(knob.name, target)
            wanted[key] = (knob, target, current, setting.value, setting.reason)
    cost = _fit_stripe_caches(wanted, md, host, budget, notes)
    _check_limits(wanted, host)
    changes, unchanged = [], []
    for key, (knob, target, current, desired, reason) in wanted.items():
        if desired == current:
            unchanged.append(key)
            continue
        array = md.array(target) if target and knob.name == "stripe_cache_size" else None
        cost_mib = stripe_cache_mib(int(desired), member_disks(array)) if array else None
        changes.append(
            KnobChange(key, knob.name, target, knob.unit, current, desired, reason, cost_mib)
        )
    return KnobPlan(
        preset=preset.name,
        arrays=tuple(a.name for a in arrays),
        changes=tuple(changes),
        skipped=tuple(skipped),
        unchanged=tuple(unchanged),
        budget_mib=budget,
        cost_mib=cost,
        notes=tuple(notes),
    )


def _fit_stripe_caches(
    wanted: Wanted,
    md: mdstat.MdStat,
    host: Host,
    budget: float,
    notes: list[str],
) -> float:
    """Resolve "auto" and shrink stripe caches to fit the budget; returns the total cost in MiB."""
    planned = {k: v for k, v in wanted.items() if v[0].name == "stripe_cache_size"}
    other_cost = stripe_cache_total_mib(md, host, skip={v[1] for v in planned.values()})
    total = other_cost
    if not planned:
        return total
    share = max(budget - other_cost, 0.0) / len(planned)
    for key, (knob, target, current, desired, reason) in planned.items():
        array = md.array(target or "")
        assert array is not None
        disks = member_disks(array)
        current_size = int(current)
        want = AUTO_STRIPE_CACHE_MAX if desired == AUTO else int(desired)
        fit = want
        while fit > knob.minimum and stripe_cache_mib(fit, disks) > share:
            fit = max(fit // 2, knob.minimum)
        if stripe_cache_mib(fit, disks) > share:
            fit = current_size  # no room at all
        if fit < want:
            notes.append(
                f"{target}: stripe cache limited to {max(fit, current_size)} by the RAM budget "
                f"({budget:.0f} MiB over all arrays)"
            )
        # Never shrink what is there: that frees RAM, it does not speed anything up.
        fit = max(fit, current_size)
        wanted[key] = (knob, target, current, knob.validate(fit), reason)
        total += stripe_cache_mib(fit, disks)
    return total


def stripe_cache_total_mib(
    md: mdstat.MdStat, host: Host, skip: set[str | None] | None = None
) -> float:
    """RAM the arrays' stripe caches hold now (all raid4/5/6 arrays except those in `skip`)."""
    total = 0.0
    for array in md.arrays:
        if array.name in (skip or set()) or not ARRAY_NAME.fullmatch(array.name):
            continue
        # Its one file, not the array's dozen attributes: a press plans with it.
        size = read_knob(host, CATALOGUE["stripe_cache_size"], array.name)
        if size is not None and size.isdigit():
            total += stripe_cache_mib(int(size), member_disks(array))
    return total


def _check_limits(wanted: Wanted, host: Host) -> None:
    """Refuse a plan that leaves any minimum above its maximum."""

    read: dict[str, str | None] = {}  # each file once, though two checks may ask for it

    def value(name: str, target: str | None) -> str | None:
        key = knob_key(name, target)
        if key in wanted:
            return wanted[key][3]
        if key not in read:
            read[key] = read_knob(host, CATALOGUE[name], target)
        return read[key]

    global_min, global_max = value("speed_limit_min", None), value("speed_limit_max", None)
    targets = {v[1] for v in wanted.values() if v[0].name in ("sync_speed_min", "sync_speed_max")}
    checks = [(None, LIMIT_PAIRS[0])] + [(t, LIMIT_PAIRS[1]) for t in sorted(targets, key=str)]
    for target, (low_name, high_name) in checks:
        low, high = value(low_name, target), value(high_name, target)
        low = global_min if low == SYSTEM else low
        high = global_max if high == SYSTEM else high
        if low is None or high is None:
            continue
        if int(low) > int(high):
            where = f" on {target}" if target else ""
            raise PlanError(f"{low_name} {low} would be above {high_name} {high}{where}")

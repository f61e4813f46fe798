"""render(): one box's present in the Prometheus text format, families built per request.

No global gauges: every scrape builds its families from the sampler's latest tick, so an array
that vanished has no stale series. Base units only (seconds, bytes, sectors); progress as a ratio
is left to PromQL (completed / total).
"""

from collections.abc import Iterator
from importlib import metadata

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import Metric

from app.forecast.model import Forecast
from app.forecast.pool import PoolForecast
from app.live.array_view import role_of
from app.live.snapshot import ArrayNow, Snapshot
from app.md.attributes import effective_limit
from app.md.mdstat import Array
from app.metrics import node

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # the text format GET /metrics answers in

KIB = 1024
SECTOR_BYTES = 512
SECTORS_PER_BLOCK = KIB // SECTOR_BYTES  # mdstat counts 1 KiB blocks, sysfs 512-byte sectors
# mdstat's actions (and its queued states), plus sysfs's "repair", which mdstat prints as resync.
ACTIONS = ("idle", "resync", "recovery", "check", "repair", "reshape", "delayed", "pending")
# Catalogue units in KiB become bytes (Prometheus base units); the others are plain counts.
_KNOB_UNITS = {"KiB/s": ("bytes_per_second", KIB), "KiB": ("bytes", KIB)}
try:
    VERSION = metadata.version("mdboost")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "unknown"


class _Families:
    """The Collector protocol over families already built: generate_latest() calls collect()."""

    def __init__(self, built: list[Metric]) -> None:
        self.built = built

    def collect(self) -> list[Metric]:
        return self.built


def render(snapshot: Snapshot, node_compat: bool = True) -> bytes:
    """The text exposition of `snapshot`; node_exporter's node_md_* series when `node_compat`."""
    built = [*_array_families(snapshot), *_box_families(snapshot)]
    if node_compat:
        built.extend(node.families(snapshot.arrays))
    return generate_latest(_Families(built))


def action_of(now: ArrayNow) -> str:
    sync = now.array.sync
    if sync is None:
        return "idle"
    if sync.action == "resync" and now.sysfs is not None and now.sysfs.sync_action == "repair":
        return "repair"
    return sync.action


def _gauge(name: str, documentation: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=["device", *labels])


def _array_families(snapshot: Snapshot) -> Iterator[Metric]:
    info = _gauge("mdboost_md_info", "Always 1: the array's level and role.", "level", "role")
    action = _gauge(
        "mdboost_md_sync_action",
        "1 for what md is doing now (idle, resync, recovery, check, repair, reshape, "
        "or delayed / pending when queued), 0 for the other actions.",
        "action",
    )
    completed = _gauge(
        "mdboost_md_sync_completed_sectors",
        "512-byte sectors done by the running operation (per member for recovery and reshape).",
    )
    total = _gauge(
        "mdboost_md_sync_total_sectors",
        "512-byte sectors the running operation covers, in the units of the completed count.",
    )
    speed = _gauge(
        "mdboost_md_sync_speed_bytes_per_second",
        "The running operation's speed, md's own average over the last ~30 s.",
    )
    kernel_left = _gauge(
        "mdboost_md_kernel_remaining_seconds",
        "The kernel's finish= estimate from mdstat, from the last ~30 s only.",
    )
    limit_min = _gauge(
        "mdboost_md_speed_limit_min_bytes_per_second",
        "md's floor for this array's sync while other I/O competes; source=local when set for "
        "this array, system when it follows /proc/sys/dev/raid/speed_limit_min.",
        "source",
    )
    limit_max = _gauge(
        "mdboost_md_speed_limit_max_bytes_per_second",
        "md's ceiling for this array's sync; source=local when set for this array, system when "
        "it follows /proc/sys/dev/raid/speed_limit_max.",
        "source",
    )
    degraded = _gauge("mdboost_md_degraded_disks", "Members missing from the array.")
    failed = _gauge(
        "mdboost_md_failed",
        "1 when md has given up on the array (its data is not available): mdstat or sysfs says "
        "broken, or fewer members work than its level needs; 0 otherwise.",
    )
    mismatch = _gauge(
        "mdboost_md_mismatch_sectors", "sysfs mismatch_cnt: sectors the last check found wrong."
    )
    cache_size = _gauge(
        "mdboost_md_stripe_cache_size", "raid4/5/6 stripe cache size, in entries (4 KiB a member)."
    )
    cache_active = _gauge(
        "mdboost_md_stripe_cache_active", "raid4/5/6 stripe cache entries in use now."
    )
    finish = _gauge(
        "mdboost_md_forecast_finish_timestamp_seconds",
        "mdboost's forecast of the running operation's finish (unix time): bound=mid is the "
        "estimate, low and high the plausible range.",
        "bound",
    )
    busy = _gauge(
        "mdboost_md_member_busy_ratio",
        "Share of the last sampling interval the member disk had I/O in flight.",
        "member",
    )
    wait = _gauge(
        "mdboost_md_member_wait_seconds",
        "Average time per request completed by the member disk over the last interval.",
        "member",
    )
    for now in snapshot.arrays:
        array, sysfs, name = now.array, now.sysfs, now.array.name
        info.add_metric([name, array.level or "", role_of(array)], 1)
        current = action_of(now)
        for each in ACTIONS:
            action.add_metric([name, each], 1.0 if each == current else 0.0)
        _add_progress(array, completed, total, speed, kernel_left)
        degraded.add_metric(
            [name],
            sysfs.degraded if sysfs is not None and sysfs.degraded is not None else array.missing,
        )
        failed.add_metric([name], 1.0 if now.failed else 0.0)
        _add_forecast(finish, [name], now.forecast)
        for member in now.members:
            busy.add_metric([name, member.member], member.busy_ratio)
            wait.add_metric([name, member.member], member.wait_seconds)
        if sysfs is None:
            continue
        for family, local, global_kb_s in (
            (limit_min, sysfs.sync_speed_min, snapshot.speed_limit_min_kb_s),
            (limit_max, sysfs.sync_speed_max, snapshot.speed_limit_max_kb_s),
        ):
            limit = effective_limit(local, global_kb_s)
            if limit is not None:
                family.add_metric([name, limit.source], limit.kb_s * KIB)
        for family, value in (
            (mismatch, sysfs.mismatch_cnt),
            (cache_size, sysfs.stripe_cache_size),
            (cache_active, sysfs.stripe_cache_active),
        ):
            if value is not None:
                family.add_metric([name], value)
    yield from (info, action, completed, total, speed, kernel_left, limit_min, limit_max)
    yield from (degraded, failed, mismatch, cache_size, cache_active, finish, busy, wait)


def _add_progress(
    array: Array,
    completed: GaugeMetricFamily,
    total: GaugeMetricFamily,
    speed: GaugeMetricFamily,
    kernel_left: GaugeMetricFamily,
) -> None:
    """The progress line's numbers, from the same mdstat read as everything else of the tick."""
    sync = array.sync
    if sync is None or not sync.running:
        return
    labels = [array.name]
    if sync.done_blocks is not None and sync.total_blocks is not None:
        completed.add_metric(labels, sync.done_blocks * SECTORS_PER_BLOCK)
        total.add_metric(labels, sync.total_blocks * SECTORS_PER_BLOCK)
    if sync.speed_kb_s is not None:
        speed.add_metric(labels, sync.speed_kb_s * KIB)
    if sync.finish_min is not None:
        kernel_left.add_metric(labels, sync.finish_min * 60)


def _add_forecast(
    family: GaugeMetricFamily, labels: list[str], forecast: Forecast | PoolForecast | None
) -> None:
    if forecast is None or forecast.status != "ok":
        return
    for bound, value in (("low", forecast.low), ("mid", forecast.eta), ("high", forecast.high)):
        if value is not None:
            family.add_metric([*labels, bound], value)


def _box_families(snapshot: Snapshot) -> Iterator[Metric]:
    build = GaugeMetricFamily(
        "mdboost_build_info", "Always 1: the mdboost version.", labels=["version"]
    )
    build.add_metric([VERSION], 1)
    yield build
    success = GaugeMetricFamily(
        "mdboost_sampler_last_success_timestamp_seconds",
        "Unix time of the sampler's last tick that read mdstat and stored it without error.",
    )
    if snapshot.last_success is not None:
        success.add_metric([], snapshot.last_success)
    yield success
    yield from _pool_families(snapshot.pool)
    yield from _tuning_families(snapshot)


def _pool_families(pool: PoolForecast | None) -> Iterator[Metric]:
    finish = GaugeMetricFamily(
        "mdboost_pool_forecast_finish_timestamp_seconds",
        "The SHR pool's expansion as one job: forecast finish of its last array (unix time), "
        "bound=mid the estimate, low and high the plausible range.",
        labels=["bound"],
    )
    phase = GaugeMetricFamily(
        "mdboost_pool_phase", "The SHR pool's array now syncing, counting from 1."
    )
    phases = GaugeMetricFamily(
        "mdboost_pool_phases", "Arrays in the SHR pool's expansion, done, syncing and queued."
    )
    if pool is not None and pool.phase is not None:
        phase.add_metric([], pool.phase)
        phases.add_metric([], pool.phases)
        _add_forecast(finish, [], pool)
    yield from (finish, phase, phases)


def _tuning_families(snapshot: Snapshot) -> Iterator[Metric]:
    active = GaugeMetricFamily(
        "mdboost_tuning_active", "1 while a tuning preset (boost) is applied, else 0."
    )
    # What is tuned, as the Job holds it: the page's notion, also while a revert's record waits
    # for disk space (the journal's session is still open then, the kernel holds its originals).
    applied = snapshot.job.tuned.preset
    active.add_metric([], 1.0 if applied is not None else 0.0)
    preset = GaugeMetricFamily(
        "mdboost_tuning_preset_info", "Always 1: the applied preset.", labels=["preset"]
    )
    started = GaugeMetricFamily(
        "mdboost_tuning_session_start_timestamp_seconds", "Unix time the applied preset was set."
    )
    if applied is not None:
        preset.add_metric([applied], 1)
    if snapshot.session_started is not None:
        started.add_metric([], snapshot.session_started)
    state = GaugeMetricFamily(
        "mdboost_tuning_state_info",
        "Always 1: what is tuned now, as the page's switch says it (off, boost, auto-tuning, "
        "auto-tuned, schedule, preset).",
        labels=["state"],
    )
    state.add_metric([snapshot.job.tuned.kind], 1)
    knob_labels = ["knob", "target", "unit"]
    value = GaugeMetricFamily(
        "mdboost_tuning_knob_value",
        "A knob mdboost tuned, as the kernel holds it now (KiB converted to bytes; absent when "
        "it follows the global value, 'system').",
        labels=knob_labels,
    )
    desired = GaugeMetricFamily(
        "mdboost_tuning_knob_desired",
        "The value mdboost wrote to the knob, in the same unit as mdboost_tuning_knob_value.",
        labels=knob_labels,
    )
    drift = GaugeMetricFamily(
        "mdboost_tuning_knob_drift",
        "1 when someone else changed a knob mdboost tuned (the kernel no longer holds what "
        "mdboost wrote), else 0.",
        labels=["knob", "target"],
    )
    for knob in snapshot.knobs:
        unit, scale = _KNOB_UNITS.get(knob.unit, (knob.unit, 1))
        labels = [knob.knob, knob.target or "", unit]
        for family, text in ((value, knob.current), (desired, knob.desired)):
            if text is not None and text.isdigit():
                family.add_metric(labels, int(text) * scale)
        drift.add_metric([knob.knob, knob.target or ""], 1.0 if knob.drift else 0.0)
    yield from (active, preset, started, state, value, desired, drift)

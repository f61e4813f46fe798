"""What the simulated disks and md's threads count while the reshape runs: /proc/diskstats'
counters, md's CPU time and the indexer's reads: the evidence "why is it slow" reads."""

from app.simulator.layout import (
    CLOCK_TICKS,
    COMPETING_DISK,
    COMPETING_READ_KB_S,
    COMPETING_REQUEST_KIB,
    DISKS,
    FULL_BUSY,
    HDD_WAIT_MS,
    MD_THREADS,
    SLOW_WAIT_FACTOR,
    SimState,
)


def count_io(
    state: SimState,
    step: float,
    speed: float,
    load: float,
    request_kib: float,
    slow: str | None,
    syncing_disks: tuple[str, ...],
    competing: bool,
    reshaping: str,
) -> None:
    """Advance the counters by one step of `step` s: the reshape at `speed` KiB/s on
    `syncing_disks` (none once it is done) at `load` of their capacity, in requests of
    `request_kib`; the `slow` member; the indexer's burst when `competing`."""
    for disk in DISKS:
        counters = state.disk_counters.setdefault(disk, [0.0] * 7)
        syncing = disk in syncing_disks
        kib = speed * step if syncing else 0.0
        busy = FULL_BUSY * load if syncing else 0.01
        wait = HDD_WAIT_MS
        if slow is not None and syncing:
            busy, wait = (0.99, wait * SLOW_WAIT_FACTOR) if disk == slow else (busy * 0.4, wait)
        reads = writes = kib / 2 / request_kib
        other = COMPETING_READ_KB_S * step if competing and disk == COMPETING_DISK else 0.0
        if other:
            reads += other / COMPETING_REQUEST_KIB
            busy = max(busy, 0.92)
        for i, add in enumerate(
            (reads, (kib / 2 + other) * 2, reads * wait, writes, kib, writes * wait)
        ):
            counters[i] += add
        counters[6] += busy * 1000 * step
    if competing:
        state.reader_bytes += COMPETING_READ_KB_S * 1024 * step
        md2 = state.disk_counters.setdefault("md2", [0.0] * 7)
        md2[0] += COMPETING_READ_KB_S * step / COMPETING_REQUEST_KIB
        md2[1] += COMPETING_READ_KB_S * step * 2
    cores = {"raid5": 0.05 + 0.3 * speed / 30_000, "reshape": 0.02}
    for pid, comm in MD_THREADS[reshaping]:
        ticks = cores[comm.split("_")[1]] * CLOCK_TICKS * step
        state.thread_ticks[str(pid)] = state.thread_ticks.get(str(pid), 0.0) + ticks

"""A syncing box whose /proc counters move the way the kernel's do, one step per tick."""

from dataclasses import dataclass, field

from app.kernel.host import CLOCK_TICKS
from tests.kernel_tree import KernelTree, diskstats_line, md_thread, syncing_box

T0 = 1_700_000_000.0
DISKS = ("sda", "sdb", "sdc", "sdd")


@dataclass
class Disk:
    """Per-second rates one disk runs at; counters accumulate as the kernel's do."""

    read_kib_s: float = 6000.0
    write_kib_s: float = 2000.0
    ios_s: float = 100.0
    wait_ms: float = 4.0
    busy: float = 0.4
    totals: list[float] = field(default_factory=lambda: [0.0] * 7)

    def step(self, seconds: float) -> None:
        reads = self.ios_s * seconds * 0.75
        writes = self.ios_s * seconds * 0.25
        for i, add in enumerate(
            (
                reads,
                self.read_kib_s * 2 * seconds,
                reads * self.wait_ms,
                writes,
                self.write_kib_s * 2 * seconds,
                writes * self.wait_ms,
                self.busy * 1000 * seconds,
            )
        ):
            self.totals[i] += add


class Box:
    """syncing_box() (md2 reshaping on sda5..sdd5) with counters that advance each tick."""

    def __init__(self, tree: KernelTree) -> None:
        self.tree = tree
        syncing_box(tree)
        self.disks = {d: Disk() for d in DISKS}
        self.md2 = Disk(read_kib_s=0, write_kib_s=0, ios_s=0, busy=0)
        self.speed_kb_s = 6000
        self.cpu = {"md2_raid5": 0.3, "md2_reshape": 0.05}
        self.cpu_ticks = dict.fromkeys(self.cpu, 0.0)
        self.pids = {"md2_raid5": 401, "md2_reshape": 402}
        self.now = T0
        self.write()

    def write(self) -> None:
        lines = [
            diskstats_line(name, *(int(v) for v in disk.totals))
            for name, disk in [*self.disks.items(), ("md2", self.md2)]
        ]
        self.tree.write("proc/diskstats", "\n".join(lines))
        self.tree.write("sys/block/md2/md/sync_speed", str(self.speed_kb_s))
        for name, pid in self.pids.items():
            md_thread(self.tree, pid, name, int(self.cpu_ticks[name]))

    def step(self, seconds: float = 5.0) -> None:
        self.now += seconds
        for disk in (*self.disks.values(), self.md2):
            disk.step(seconds)
        for name, cores in self.cpu.items():
            self.cpu_ticks[name] += cores * CLOCK_TICKS * seconds
        self.write()

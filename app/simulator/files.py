"""The simulated box's kernel files: /proc and /sys as Linux writes them, each file atomically."""

import os
import shutil
from pathlib import Path

from app.md import mdstat
from app.simulator.layout import (
    DISK_MODELS,
    DISK_SECTORS,
    DISKS,
    KNOB_DEFAULTS,
    MD0_BLOCKS,
    MD1_BLOCKS,
    MD3_DISKS,
    MD3_PER_DEVICE_BLOCKS,
    MD_THREADS,
    NEW_DATA_DISKS,
    OLD_DATA_DISKS,
    PER_DEVICE_BLOCKS,
    READER_COMM,
    READER_PID,
)

ARRAYS = ("md0", "md1", "md2", "md3")
PERSONALITIES = ("linear", "raid0", "raid1", "raid10", "raid6", "raid5", "raid4")


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class Tree:
    """Reads the knobs people write into the tree and writes what the kernel would show."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, relative: str) -> Path:
        return self.root / relative

    def write(self, relative: str, text: str) -> None:
        write_atomic(self.root / relative, text)

    def read_int(self, relative: str, default: int) -> int:
        try:
            return int(self.path(relative).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return default

    def local_limit(self, array: str, attr: str, global_value: int) -> int:
        """Mimic md: writing "system" returns to the global value, read back as "N (system)"."""
        path = self.path(f"sys/block/{array}/md/{attr}")
        try:
            words = path.read_text().split()
        except OSError:
            return global_value
        if not words:
            return global_value
        if words[0] == "system" or words[-1] == "(system)" or words[0] == "0":
            if words != [str(global_value), "(system)"]:
                write_atomic(path, f"{global_value} (system)\n")
            return global_value
        try:
            value = int(words[0])
        except ValueError:
            return global_value
        if words[1:] != ["(local)"]:
            write_atomic(path, f"{value} (local)\n")
        return value

    def build(self) -> None:
        """The box before anyone tuned it."""
        for relative, value in KNOB_DEFAULTS.items():
            self.write(relative, value + "\n")
        for array in ARRAYS:
            if array != "md2":
                self.write(f"sys/block/{array}/queue/read_ahead_kb", "128\n")
            for attr in ("sync_speed_min", "sync_speed_max"):
                self.write(f"sys/block/{array}/md/{attr}", "system\n")
        for disk in DISKS:
            self.write(f"sys/block/{disk}/queue/read_ahead_kb", "128\n")
            self.write(f"sys/block/{disk}/device/queue_depth", "31\n")
            self.write(f"sys/block/{disk}/size", f"{DISK_SECTORS[disk]}\n")
            self.write(f"sys/block/{disk}/device/model", f"{DISK_MODELS[disk]}\n")
            self.write(f"sys/block/{disk}/queue/rotational", "1\n")  # NAS hard disks
            for part in (1, 2, 5, 6):
                (self.root / "sys/block" / disk / f"{disk}{part}").mkdir(
                    parents=True, exist_ok=True
                )
        self.write(
            "proc/meminfo",
            "MemTotal:        8039084 kB\nMemFree:          402512 kB\n"
            "MemAvailable:    6283124 kB\nBuffers:          112344 kB\n"
            "Cached:          5210332 kB\n",
        )
        # raid1 arrays have no stripe_cache_size or group_thread_cnt: absent, as on a real kernel.
        for array in ("md0", "md1", "md3"):
            self.write(f"sys/block/{array}/md/mismatch_cnt", "0\n")

    def raise_read_ahead(self, array: str, kb: int) -> None:
        """md raises read-ahead to two stripes of the new geometry when a grow ends (real
        kernel, tests/realkernel: 2048 -> 3072 KiB with 512 KiB chunks)."""
        read_ahead = f"sys/block/{array}/queue/read_ahead_kb"
        if self.read_int(read_ahead, 0) < kb:
            self.write(read_ahead, f"{kb}\n")

    def become_raid5_md3(self) -> None:
        """DSM turns md3's raid1 pair into a raid5 and grows it onto the new disk."""
        self.write("sys/block/md3/md/stripe_cache_size", "256\n")
        self.write("sys/block/md3/md/group_thread_cnt", "0\n")

    def write_grow(
        self,
        array: str,
        sync: mdstat.Sync | None,
        done: int,
        total: int,
        speed: int,
        stripe_cache_active: int,
    ) -> None:
        """The sysfs files of a raid5 grow, while it runs (`sync`) or once it is done."""
        old_data, new_disks = (1, 3) if array == "md3" else (OLD_DATA_DISKS, len(DISKS))
        running = sync is not None
        grow = {
            "sync_action": "reshape" if running else "idle",
            "sync_completed": f"{done * 2} / {total * 2}" if running else "none",
            "sync_speed": str(speed) if running else "none",
            "reshape_position": str(done * 2 * old_data) if running else "none",
            "degraded": "0",
            "mismatch_cnt": "0",
            "raid_disks": f"{new_disks} ({new_disks - 1})" if running else str(new_disks),
            "level": "raid5",
            "stripe_cache_active": str(stripe_cache_active if running else 0),
        }
        for attr, value in grow.items():
            self.write(f"sys/block/{array}/md/{attr}", value + "\n")

    def write_idle_raid1(self, arrays: tuple[str, ...]) -> None:
        for idle in arrays:
            for attr, value in (("sync_action", "idle"), ("sync_completed", "none")):
                self.write(f"sys/block/{idle}/md/{attr}", value + "\n")
            self.write(f"sys/block/{idle}/md/degraded", "0\n")
            self.write(f"sys/block/{idle}/md/level", "raid1\n")

    def write_mdstat(self, reshaping: str, sync: mdstat.Sync | None) -> None:
        """The arrays as mdstat shows them; `sync` is the running grow's progress, on md2 or md3."""

        def members(part: int, disks: tuple[str, ...] = DISKS) -> tuple[mdstat.Device, ...]:
            return tuple(mdstat.Device(f"{d}{part}", i, "") for i, d in enumerate(disks))

        def raid1(name: str, part: int, blocks: int, disks: tuple[str, ...]) -> mdstat.Array:
            n = len(disks)
            return mdstat.Array(
                name, "active", False, False, "raid1", None, blocks, None,
                members(part, disks), n, n, "U" * n, None, None,
            )  # fmt: skip

        md2_sync = sync if reshaping == "md2" else None
        md2_blocks = PER_DEVICE_BLOCKS * (OLD_DATA_DISKS if md2_sync else NEW_DATA_DISKS)
        md2 = mdstat.Array(
            "md2", "active", False, False, "raid5", "1.2", md2_blocks, 64,
            members(5), 4, 4, "UUUU", None, md2_sync,
        )  # fmt: skip
        if reshaping == "md3":
            md3_blocks = MD3_PER_DEVICE_BLOCKS * (1 if sync else 2)
            md3 = mdstat.Array(
                "md3", "active", False, False, "raid5", "1.2", md3_blocks, 64,
                members(6, MD3_DISKS), 3, 3, "UUU", None, sync,
            )  # fmt: skip
        else:
            md3 = raid1("md3", 6, MD3_PER_DEVICE_BLOCKS, ("sda", "sdb"))
        arrays = (md2, md3, raid1("md1", 2, MD1_BLOCKS, DISKS), raid1("md0", 1, MD0_BLOCKS, DISKS))
        parsed = mdstat.MdStat(personalities=PERSONALITIES, arrays=arrays)
        self.write("proc/mdstat", mdstat.render(parsed))

    def write_diskstats(self, counters: dict[str, list[float]]) -> None:
        """/proc/diskstats as Linux >= 5.5 prints it (iostats.rst): the disks, then md."""
        lines = []
        devices = [(8, i * 16, d) for i, d in enumerate(DISKS)]
        devices += [(9, i, f"md{i}") for i in range(4)]
        for major, minor, name in devices:
            reads, read_sectors, read_ms, writes, written, write_ms, busy = (
                int(v) for v in counters.get(name, [0.0] * 7)
            )
            lines.append(
                f"{major:4d} {minor:7d} {name} {reads} 0 {read_sectors} {read_ms} {writes} 0 "
                f"{written} {write_ms} 0 {busy} {read_ms + write_ms} 0 0 0 0 0 0"
            )
        self.write("proc/diskstats", "\n".join(lines) + "\n")

    def write_processes(
        self, alive: set[str], thread_ticks: dict[str, float], reader_bytes: float
    ) -> None:
        """md's threads named in `alive` (by comm) in /proc/PID, and the indexer reading."""
        for threads in MD_THREADS.values():
            for pid, comm in threads:
                if comm not in alive:
                    shutil.rmtree(self.path(f"proc/{pid}"), ignore_errors=True)
                    continue
                ticks = int(thread_ticks.get(str(pid), 0.0))
                self.write(f"proc/{pid}/comm", comm + "\n")
                self.write(
                    f"proc/{pid}/stat",
                    f"{pid} ({comm}) S 2 0 0 0 -1 2129984 0 0 0 0 0 {ticks} 0 0 20 0 1 0 300 0 "
                    "0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0\n",
                )
        read = int(reader_bytes)
        self.write(f"proc/{READER_PID}/comm", READER_COMM + "\n")
        self.write(
            f"proc/{READER_PID}/io",
            f"rchar: {read}\nwchar: 0\nsyscr: {read // 131072}\nsyscw: 0\n"
            f"read_bytes: {read}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n",
        )

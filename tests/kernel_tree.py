"""Build temporary /proc + /sys trees the way the kernel lays them out, for tests."""

from pathlib import Path

RESHAPE_TOTAL = 1953494784  # 1 KiB blocks of a 2 TB member: md2's reshape in syncing_box()

DEFAULT_MD_ATTRS = {
    "sync_action": "idle",
    "sync_completed": "none",
    "sync_speed": "none",
    "reshape_position": "none",
    "degraded": "0",
    "mismatch_cnt": "0",
    "sync_speed_min": "1000 (system)",
    "sync_speed_max": "200000 (system)",
}


class KernelTree:
    """A temp directory with proc/ and sys/ subtrees; files are written like the kernel shows them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc = root / "proc"
        self.sys = root / "sys"
        self.write("proc/sys/dev/raid/speed_limit_min", "1000")
        self.write("proc/sys/dev/raid/speed_limit_max", "200000")
        self.write("proc/meminfo", "MemTotal: 8000000 kB\nMemAvailable: 4000000 kB\n")

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text.endswith("\n") else text + "\n")
        return path

    def read(self, relative: str) -> str:
        return (self.root / relative).read_text()

    def mdstat(self, text: str) -> None:
        self.write("proc/mdstat", text)

    def md(self, array: str, **attrs: str) -> None:
        """Create /sys/block/<array>/md with the defaults overridden by `attrs`."""
        for name, value in {**DEFAULT_MD_ATTRS, **attrs}.items():
            self.write(f"sys/block/{array}/md/{name}", value)
        if not (self.sys / "block" / array / "queue" / "read_ahead_kb").exists():
            self.write(f"sys/block/{array}/queue/read_ahead_kb", "128")

    def snapshot(self) -> dict[str, bytes]:
        """Every file's bytes, to prove that something changed nothing."""
        return {
            str(p.relative_to(self.root)): p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_file() and not p.is_symlink()
        }


def mdstat_text(*arrays: str) -> str:
    body = "\n".join(arrays)
    return (
        "Personalities : [linear] [raid0] [raid1] [raid10] [raid6] [raid5] [raid4] \n"
        f"{body}\nunused devices: <none>\n"
    )


def raid5(name: str = "md2", progress: str | None = None, status: str = "UUUU") -> str:
    lines = [
        f"{name} : active raid5 sda5[0] sdb5[1] sdc5[2] sdd5[3]",
        f"      5860484352 blocks super 1.2 level 5, 64k chunk, algorithm 2 [4/4] [{status}]",
    ]
    if progress:
        lines.append(f"      {progress}")
    return "\n".join(lines) + "\n"


def raid1(name: str = "md0") -> str:
    return (
        f"{name} : active raid1 sda1[0] sdb1[1] sdc1[2] sdd1[3]\n"
        "      2490176 blocks [4/4] [UUUU]\n"
    )


def progress(action: str, done: int, total: int, speed: int = 6000) -> str:
    percent = done * 1000 // total
    return (
        f"[==>..................]  {action} ={percent // 10:3d}.{percent % 10}% ({done}/{total}) "
        f"finish=100.0min speed={speed}K/sec"
    )


def syncing_box(tree: KernelTree) -> None:
    """md2 reshaping (raid5, 4 disks), md0 idle raid1, DSM-like knob values."""
    tree.mdstat(mdstat_text(raid5(progress=progress("reshape", 1000, RESHAPE_TOTAL)), raid1()))
    tree.md(
        "md2",
        sync_action="reshape",
        stripe_cache_size="513",
        group_thread_cnt="0",
        sync_speed_min="10000 (system)",
        sync_speed_max="200000 (system)",
    )
    tree.write("sys/block/md2/queue/read_ahead_kb", "384")
    tree.md("md0")
    tree.write("proc/sys/dev/raid/speed_limit_min", "10000")
    for disk in ("sda", "sdb", "sdc", "sdd"):
        tree.write(f"sys/block/{disk}/queue/read_ahead_kb", "128")
        (tree.sys / "block" / disk / f"{disk}5").mkdir(parents=True, exist_ok=True)
        (tree.sys / "block" / disk / f"{disk}1").mkdir(parents=True, exist_ok=True)


def booted(tree: KernelTree, boot_id: str, uptime_s: float) -> None:
    """The kernel's boot id and its uptime, as a (re)boot leaves them."""
    tree.write("proc/sys/kernel/random/boot_id", boot_id)
    tree.write("proc/uptime", f"{uptime_s:.2f} {uptime_s * 1.9:.2f}")


def idle_box(tree: KernelTree) -> None:
    """syncing_box() after md2's reshape ended."""
    syncing_box(tree)
    tree.mdstat(mdstat_text(raid5(), raid1()))
    tree.md("md2", stripe_cache_size="513", group_thread_cnt="0")


def act_like_md(tree: KernelTree, before: dict[str, bytes]) -> None:
    """md reads back a written "system" as "N (system)"; a plain file cannot: do it here."""
    for path in ("sys/block/md2/md/sync_speed_min", "sys/block/md2/md/sync_speed_max"):
        if tree.read(path) == "system\n":
            tree.write(path, before[path].decode())


def diskstats_line(
    name: str,
    reads: int = 0,
    sectors_read: int = 0,
    read_ms: int = 0,
    writes: int = 0,
    sectors_written: int = 0,
    write_ms: int = 0,
    busy_ms: int = 0,
) -> str:
    """One /proc/diskstats line as kernels >= 5.5 print it (20 fields, iostats.rst)."""
    return (
        f"   8       0 {name} {reads} 0 {sectors_read} {read_ms} {writes} 0 {sectors_written} "
        f"{write_ms} 0 {busy_ms} {read_ms + write_ms} 0 0 0 0 0 0"
    )


def md_thread(tree: KernelTree, pid: int, comm: str, cpu_ticks: int) -> None:
    """/proc/PID/{comm,stat} of a kernel thread (md's threads are children of kthreadd, pid 2)."""
    tree.write(f"proc/{pid}/comm", comm)
    tree.write(
        f"proc/{pid}/stat",
        f"{pid} ({comm}) S 2 0 0 0 -1 2129984 0 0 0 0 0 {cpu_ticks} 0 0 20 0 1 0 300 0 0 "
        "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0",
    )

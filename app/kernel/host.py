"""The only code that opens files under /proc and /sys, rooted at settings.proc_root / sys_root.

Every path is built here from validated names, never from raw input: an array is `md` + digits,
a disk a plain sysfs name. A missing file means "not available on this kernel" (None), not an error.
"""

import functools
import os
import re
from collections.abc import Collection, Iterable
from pathlib import Path

from app.kernel import procfs, sysfs
from app.md.attributes import ArraySysfs, parse_speed_limit
from app.md.disks import DiskStat, MemberDisk

ARRAY_NAME = re.compile(r"^md\d+$")
ATTR_READ_LIMIT = 65536  # sysfs attributes are at most a page; never read a device endlessly
MDSTAT_READ_LIMIT = 16 * 1024 * 1024
DISKSTATS_READ_LIMIT = 4 * 1024 * 1024  # ~100 bytes a line: tens of thousands of devices
# Clock ticks per second of /proc/PID/stat's utime and stime (USER_HZ; 100 on Linux).
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
DISK_NAME = re.compile(r"^[a-z][a-z0-9!_.-]*$")

# Per-array attributes sampled every tick (Documentation/admin-guide/md.rst, "md devices in sysfs").
MD_ATTRS = (
    "array_state",
    "sync_action",
    "sync_completed",
    "sync_speed",
    "reshape_position",
    "degraded",
    "mismatch_cnt",
    "raid_disks",
    "stripe_cache_size",
    "stripe_cache_active",
    "sync_speed_min",
    "sync_speed_max",
)


def check_array_name(name: str) -> str:
    if not ARRAY_NAME.fullmatch(name):
        raise ValueError(f"not an md array name: {name[:40]!r} (expected md followed by digits)")
    return name


def check_disk_name(name: str) -> str:
    if not DISK_NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"not a block device name: {name[:40]!r}")
    return name


class Host:
    """Reads and writes the kernel's md files under two roots (real, simulated, or a test tree)."""

    def __init__(self, proc_root: Path, sys_root: Path) -> None:
        self.proc_root = proc_root
        self.sys_root = sys_root
        # Each tick reads a dozen attributes per array: building their Paths anew was a quarter
        # of the sampler's CPU (scripts/bench_core.py). Bounded by arrays x attributes.
        self._md_attr_paths: dict[tuple[str, str], Path] = {}

    # ---- paths, built only from validated names
    def md_attr_path(self, array: str, attr: str) -> Path:
        path = self._md_attr_paths.get((array, attr))
        if path is None:
            path = self.sys_root / "block" / check_array_name(array) / "md" / _plain(attr)
            self._md_attr_paths[(array, attr)] = path
        return path

    def knob_path(self, template: str, target: str | None) -> Path:
        """A catalogue path template ("sys:block/{array}/md/x") for a validated target."""
        root_name, _, relative = template.partition(":")
        root = {"proc": self.proc_root, "sys": self.sys_root}[root_name]
        parts = []
        for part in relative.split("/"):
            if part == "{array}":
                part = check_array_name(target or "")
            elif part == "{disk}":
                part = check_disk_name(target or "")
            parts.append(_plain(part))
        return root.joinpath(*parts)

    def raid_sysctl_path(self, name: str) -> Path:
        return self.proc_root / "sys" / "dev" / "raid" / _plain(name)

    # ---- reading
    def read(self, path: Path | str, limit: int = ATTR_READ_LIMIT) -> str | None:
        """Text of a kernel file (at most `limit` bytes), or None when there is no such file."""
        try:
            with open(path, "rb") as file:
                return file.read(limit).decode(errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def read_mdstat(self) -> str | None:
        return self.read(self.proc_root / "mdstat", MDSTAT_READ_LIMIT)

    def has_block_device(self, name: str) -> bool:
        """Whether /sys/block lists this disk or array (a pulled disk leaves it)."""
        return (self.sys_root / "block" / check_disk_name(name)).is_dir()

    def read_array_sysfs(self, array: str) -> ArraySysfs:
        raw = {attr: self.read(self.md_attr_path(array, attr)) for attr in MD_ATTRS}
        action = raw["sync_action"]
        return ArraySysfs(
            array_state=raw["array_state"].strip() if raw["array_state"] else None,
            sync_action=action.strip() if action else None,
            sync_completed_sectors=sysfs.parse_sync_completed(raw["sync_completed"]),
            sync_speed_kb_s=sysfs.parse_int(raw["sync_speed"]),
            reshape_position=raw["reshape_position"].strip() if raw["reshape_position"] else None,
            degraded=sysfs.parse_int(raw["degraded"]),
            mismatch_cnt=sysfs.parse_int(raw["mismatch_cnt"]),
            raid_disks=sysfs.parse_raid_disks(raw["raid_disks"]),
            stripe_cache_size=sysfs.parse_int(raw["stripe_cache_size"]),
            stripe_cache_active=sysfs.parse_int(raw["stripe_cache_active"]),
            sync_speed_min=parse_speed_limit(raw["sync_speed_min"]),
            sync_speed_max=parse_speed_limit(raw["sync_speed_max"]),
        )

    def read_global_speed_limits(self) -> tuple[int | None, int | None]:
        """(speed_limit_min, speed_limit_max) in KiB/s from /proc/sys/dev/raid."""
        return (
            sysfs.parse_int(self.read(self.raid_sysctl_path("speed_limit_min"))),
            sysfs.parse_int(self.read(self.raid_sysctl_path("speed_limit_max"))),
        )

    def read_kernel_release(self) -> str | None:
        """The running kernel's release, as `uname -r` says ("5.10.0-32-amd64"); None if absent."""
        text = self.read(self.proc_root / "sys" / "kernel" / "osrelease")
        return (text.strip() or None) if text else None

    @functools.cached_property
    def boot_id(self) -> str | None:
        """This boot's id (/proc/sys/kernel/random/boot_id, new at every boot), read once and
        kept: knobs written during another boot are gone from the kernel. None if absent."""
        text = self.read(self.proc_root / "sys" / "kernel" / "random" / "boot_id", 256)
        return (text.strip() or None) if text else None

    def read_uptime_s(self) -> float | None:
        """Seconds since the kernel booted (/proc/uptime's first field); None if unreadable."""
        text = self.read(self.proc_root / "uptime", 256)
        return sysfs.parse_uptime(text) if text else None

    def read_meminfo(self) -> dict[str, int]:
        text = self.read(self.proc_root / "meminfo")
        return sysfs.parse_meminfo(text) if text else {}

    def read_diskstats(self, names: Collection[str] | None = None) -> dict[str, DiskStat]:
        """Every device's counters, or only those of `names`."""
        text = self.read(self.proc_root / "diskstats", DISKSTATS_READ_LIMIT)
        return sysfs.parse_diskstats(text, names) if text else {}

    # ---- processes (the md threads' CPU; who else reads and writes)
    def pids(self) -> list[int]:
        """Every process id under /proc, in order (kernel threads such as md2_raid5 included)."""
        try:
            names = os.listdir(self.proc_root)
        except OSError:
            return []
        return sorted(int(name) for name in names if name.isdigit())

    def read_pid_stat(self, pid: int) -> procfs.PidStat | None:
        """None when the process is gone or its stat cannot be parsed."""
        text = self._read_pid(pid, "stat")
        try:
            return procfs.parse_pid_stat(text) if text else None
        except ValueError:
            return None

    def read_pid_io(self, pid: int) -> procfs.PidIo | None:
        """None when the process is gone, or its io is not ours to read (another user's, or a
        container without the host's PID namespace)."""
        text = self._read_pid(pid, "io")
        try:
            return procfs.parse_pid_io(text) if text else None
        except ValueError:
            return None

    def read_pid_comm(self, pid: int) -> str | None:
        text = self._read_pid(pid, "comm")
        return text.rstrip("\n") if text else None

    def _read_pid(self, pid: int, name: str) -> str | None:
        try:
            # A plain string: this runs for every process when naming who competes.
            return self.read(f"{self.proc_root}/{int(pid)}/{_plain(name)}", 4096)
        except (PermissionError, ProcessLookupError):
            return None

    def whole_disk(self, member: str) -> str | None:
        """The disk holding a member partition (sda5 -> sda), from /sys/block/<disk>/<part>."""
        check_disk_name(member)
        if (self.sys_root / "block" / member).is_dir():
            return member
        block = self.sys_root / "block"
        if block.is_dir():
            for disk in sorted(os.listdir(block)):
                if (block / disk / member).is_dir():
                    return disk
        return None

    def read_member_disks(self, members: Iterable[str]) -> dict[str, MemberDisk]:
        """The disk under each member (sda5 -> sda), its whole size and its model, from
        /sys/block/<disk>/size and device/model; a member whose disk is not found is left out.
        The sampler calls this when the arrays' members change, never a request."""
        out: dict[str, MemberDisk] = {}
        seen: dict[str, MemberDisk] = {}
        for member in members:
            disk = self.whole_disk(member)
            if disk is None:
                continue
            if disk not in seen:
                size = self.read(self.sys_root / "block" / disk / "size")
                model = self.read(self.sys_root / "block" / disk / "device" / "model", 256)
                kib = int(size) // 2 if size is not None and size.strip().isdigit() else None
                seen[disk] = MemberDisk(disk, kib, sysfs.parse_model(model))
            out[member] = seen[disk]
        return out

    def read_disk_kib(self, members: Iterable[str]) -> dict[str, int]:
        """The whole size of each disk holding one of `members`, 1 KiB blocks (512-byte sectors
        in sysfs whatever the disk's own sector size); a disk gone or unreadable is left out."""
        disks = self.read_member_disks(members).values()
        return {d.disk: d.size_kib for d in disks if d.size_kib is not None}

    def read_rotational(self, disks: Iterable[str]) -> dict[str, bool]:
        """Whether each disk spins (/sys/block/<disk>/queue/rotational: 1 an HDD, 0 an SSD);
        a disk without the file is left out."""
        out: dict[str, bool] = {}
        for disk in disks:
            text = self.read(self.sys_root / "block" / check_disk_name(disk) / "queue/rotational")
            if text is not None and text.strip() in ("0", "1"):
                out[disk] = text.strip() == "1"
        return out

    # ---- writing (tuning only)
    def write(self, path: Path, value: str) -> None:
        """Write one value like `echo value > file`; raises OSError with the kernel's errno."""
        if not path.exists():  # never create a file: only attributes the kernel has are written
            raise FileNotFoundError(2, "no such kernel attribute", str(path))
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, f"{value}\n".encode())
        finally:
            os.close(fd)


def _plain(part: str) -> str:
    if not part or "/" in part or part in (".", ".."):
        raise ValueError(f"not a plain path component: {part[:40]!r}")
    return part

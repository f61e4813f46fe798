"""Can this process tune the kernel's md knobs, or only watch? Found out without writing anything.

In a container without privileges /sys and /proc/sys are mounted read-only and root lacks
CAP_SYS_ADMIN, which md wants for every attribute write (md_attr_store in drivers/md/md.c);
/proc/mdstat is visible as is, so monitoring works everywhere and only tuning needs privileges.

One notion, access, at two grains: TuningAccess for the whole (checked at start-up: the log's
first line, /healthz) and KnobAccess for each knob (checked as arrays come and go: the boost
panel, GET /api/tuning's "capabilities", a name the API keeps).
"""

import logging
import os
from pathlib import Path

from app.kernel.host import ARRAY_NAME, Host
from app.md.access import KnobAccess, TuningAccess
from app.md.knobs import CATALOGUE
from app.md.mdstat import MdStat

log = logging.getLogger(__name__)

CAP_SYS_ADMIN = 21  # bit number, include/uapi/linux/capability.h
# Per-array knobs that stand for "md sysfs is writable" (Documentation/admin-guide/md.rst).
MD_KNOBS = ("sync_speed_min", "sync_speed_max", "stripe_cache_size")
GLOBAL_LIMITS = ("speed_limit_min", "speed_limit_max")


def tuning_access(host: Host) -> TuningAccess:
    """Test writability with access(2) and the mount's read-only flag; changes no value."""
    problems: list[str] = []
    cap_sys_admin = _has_cap_sys_admin(host)
    if cap_sys_admin is False:
        problems.append("no CAP_SYS_ADMIN")
    md_knobs = [
        path
        for array in _arrays(host)
        for knob in MD_KNOBS
        if (path := host.md_attr_path(array, knob)).is_file()
    ]
    md_writable = _all_writable(md_knobs, host.sys_root / "block", problems)
    limits = [path for name in GLOBAL_LIMITS if (path := host.raid_sysctl_path(name)).is_file()]
    raid_dir = host.raid_sysctl_path(GLOBAL_LIMITS[0]).parent
    if not limits:
        problems.append(f"no {raid_dir}")
    sysctl_writable = bool(limits) and _all_writable(limits, raid_dir, problems)
    return TuningAccess(md_writable, sysctl_writable, cap_sys_admin, tuple(problems))


def report_tuning_access(host: Host) -> TuningAccess:
    """tuning_access(), logged as one line: a warning when tuning is off."""
    access = tuning_access(host)
    log.log(logging.INFO if access.writable else logging.WARNING, "%s", access.summary())
    return access


def _arrays(host: Host) -> list[str]:
    try:
        names = os.listdir(host.sys_root / "block")
    except OSError:
        return []
    return sorted(name for name in names if ARRAY_NAME.fullmatch(name))


def _all_writable(paths: list[Path], where: Path, problems: list[str]) -> bool:
    """Every path is writable; with none (no array yet), `where` is on a writable mount."""
    if _read_only_mount(where):
        problems.append(f"{_mount_point(where)} is mounted read-only")
        return False
    if not paths:
        if not where.is_dir():
            problems.append(f"no {where}")
        return where.is_dir()
    for path in paths:
        if not os.access(path, os.W_OK):
            problems.append(f"{path} is not writable")
            return False
    return True


def _read_only_mount(path: Path) -> bool:
    existing = _existing(path)
    try:
        return bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _mount_point(path: Path) -> Path:
    """The mount point holding `path` (for the message: "/sys is mounted read-only")."""
    current = _existing(path)
    while current != current.parent and not os.path.ismount(current):
        current = current.parent
    return current


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _has_cap_sys_admin(host: Host) -> bool | None:
    """From CapEff in proc_root/self/status; None when that file is not there (a test tree)."""
    status = host.read(host.proc_root / "self" / "status")
    for line in (status or "").splitlines():
        if line.startswith("CapEff:"):
            try:
                return bool(int(line.split(":", 1)[1], 16) >> CAP_SYS_ADMIN & 1)
            except ValueError:
                return None
    return None


def knob_access(host: Host, md: MdStat) -> list[KnobAccess]:
    """Each global and per-array knob: does this kernel have it, and may this process write it."""
    out = []
    for knob in CATALOGUE.values():
        if knob.scope == "member":
            continue
        targets: list[str | None] = [None]
        if knob.scope == "array":
            targets = [
                a.name
                for a in md.arrays
                if ARRAY_NAME.fullmatch(a.name) and knob.applies_to(a.level)
            ]
        for target in targets:
            path = host.knob_path(knob.path, target)
            supported = path.exists()
            writable = supported and os.access(path, os.W_OK)
            out.append(KnobAccess(knob.name, target, supported, writable))
    return out

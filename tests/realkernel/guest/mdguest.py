"""Helpers for scenario scripts that run as root INSIDE the real-kernel VM (no pytest there).

Every wait polls a condition with a deadline; every kernel answer that matters is recorded in
$OUT so the host-side test can assert on it and a failure can be diagnosed from the files.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

OUT = Path(os.environ.get("OUT", "/tmp/out"))
DISKS = sorted(f"/dev/{p.name}" for p in Path("/sys/block").glob("vd*"))
SPEED_LIMITS = Path("/proc/sys/dev/raid")
# md attributes worth keeping in a fixture tree (Documentation/admin-guide/md.rst).
MD_ATTRS = (
    "level",
    "raid_disks",
    "chunk_size",
    "array_state",
    "metadata_version",
    "sync_action",
    "sync_completed",
    "sync_speed",
    "sync_speed_min",
    "sync_speed_max",
    "reshape_position",
    "degraded",
    "mismatch_cnt",
    "stripe_cache_size",
    "stripe_cache_active",
    "group_thread_cnt",
    "consistency_policy",
)


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command, log it with its output, fail loudly if check and it fails."""
    result = subprocess.run(args, capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    say(f"$ {' '.join(args)} -> rc={result.returncode}" + (f"\n    {output}" if output else ""))
    if check and result.returncode != 0:
        raise RuntimeError(f"{args[0]} failed with rc={result.returncode}: {output}")
    return result


def wait_for(
    condition: Callable[[], object], what: str, timeout_s: float = 120, every_s: float = 0.1
) -> object:
    """Poll condition until it returns something truthy; raise naming what never happened."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"after {timeout_s:.0f} s still waiting for: {what}")
        time.sleep(every_s)


def read(path: str | Path) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError as error:
        return f"<{error.strerror}>"


def md_path(md: str, attr: str) -> Path:
    return Path("/sys/block") / md / "md" / attr


def mdstat() -> str:
    return Path("/proc/mdstat").read_text()


def mdstat_block(md: str) -> str:
    """The lines of /proc/mdstat that belong to one array (its stanza)."""
    lines, inside = [], False
    for line in mdstat().splitlines():
        if line.startswith(f"{md} :"):
            inside = True
        elif inside and (not line.strip() or not line.startswith((" ", "\t"))):
            break
        if inside:
            lines.append(line)
    return "\n".join(lines)


def write_attr(path: str | Path, value: str) -> str:
    """Write like a program would (one write of value + newline); return "ok" or the errno name."""
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, f"{value}\n".encode())
        finally:
            os.close(fd)
    except OSError as error:
        return errno.errorcode.get(error.errno or 0, str(error.errno))
    return "ok"


def set_speed_limits(min_kib_s: int, max_kib_s: int) -> None:
    # Order matters: the kernel accepts min > max silently, but keep them sane at every step.
    if min_kib_s > int(read(SPEED_LIMITS / "speed_limit_max")):
        (SPEED_LIMITS / "speed_limit_max").write_text(f"{max_kib_s}\n")
        (SPEED_LIMITS / "speed_limit_min").write_text(f"{min_kib_s}\n")
    else:
        (SPEED_LIMITS / "speed_limit_min").write_text(f"{min_kib_s}\n")
        (SPEED_LIMITS / "speed_limit_max").write_text(f"{max_kib_s}\n")


def running_action(md: str) -> str:
    """The sync action md is doing now ("idle" when none and nothing is queued in mdstat)."""
    action = read(md_path(md, "sync_action"))
    if action == "idle" and any(
        w in mdstat_block(md) for w in ("resync", "recovery", "reshape", "check")
    ):
        return "finishing"
    return action


def wait_idle(md: str, timeout_s: float = 300) -> float:
    started = time.monotonic()
    wait_for(lambda: running_action(md) == "idle", f"{md} to become idle", timeout_s, 0.25)
    return time.monotonic() - started


def wait_progress_line(md: str, action: str, timeout_s: float = 60) -> str:
    """Wait until mdstat shows action with a non-zero speed (the kernel's steady-state line)."""

    def shown() -> str | None:
        block = mdstat_block(md)
        if f"{action} =" in block and "speed=" in block and "speed=0K" not in block:
            return block
        return None

    return str(
        wait_for(shown, f"{md} mdstat line '{action} = ... speed=<non-zero>'", timeout_s, 0.2)
    )


def stop_all() -> None:
    for md in sorted(p.name for p in Path("/sys/block").glob("md*")):
        sh("mdadm", "--stop", f"/dev/{md}", check=False)
    wait_for(lambda: not list(Path("/sys/block").glob("md*")), "every md array to go away", 30)


def wipe(devices: Iterable[str]) -> None:
    for device in devices:
        subprocess.run(["mdadm", "--zero-superblock", device], capture_output=True)
        subprocess.run(["wipefs", "-a", "-q", device], capture_output=True)


def snapshot(state: str, arrays: Iterable[str]) -> Path:
    """Save a fixture tree for this array state: proc/, sys/ and `mdadm --detail` per array."""
    root = OUT / "fixtures" / state
    if root.exists():
        shutil.rmtree(root)
    (root / "proc" / "sys" / "dev" / "raid").mkdir(parents=True)
    (root / "proc" / "mdstat").write_text(mdstat())
    for name in ("speed_limit_min", "speed_limit_max"):
        (root / "proc" / "sys" / "dev" / "raid" / name).write_text(
            (SPEED_LIMITS / name).read_text()
        )
    members: set[str] = set()
    for md in arrays:
        md_dir = root / "sys" / "block" / md / "md"
        md_dir.mkdir(parents=True)
        for attr in MD_ATTRS:
            source = md_path(md, attr)
            if source.exists():
                with contextlib.suppress(OSError):  # e.g. EBUSY on some attributes
                    (md_dir / attr).write_text(source.read_text())
        queue = root / "sys" / "block" / md / "queue"
        queue.mkdir()
        (queue / "read_ahead_kb").write_text(
            Path(f"/sys/block/{md}/queue/read_ahead_kb").read_text()
        )
        for dev in Path(f"/sys/block/{md}/md").glob("dev-*"):
            members.add(dev.name.removeprefix("dev-"))
            with contextlib.suppress(OSError):  # a member's state: faulty,blocked and the like
                (md_dir / dev.name).mkdir()
                (md_dir / dev.name / "state").write_text((dev / "state").read_text())
        detail = subprocess.run(["mdadm", "--detail", f"/dev/{md}"], capture_output=True, text=True)
        (root / "mdadm-detail").mkdir(exist_ok=True)
        (root / "mdadm-detail" / f"{md}.txt").write_text(detail.stdout)
    for member in sorted(members):
        disk = member.rstrip("0123456789") if member.startswith("vd") else member
        queue = root / "sys" / "block" / disk / "queue"
        source = Path(f"/sys/block/{disk}/queue/read_ahead_kb")
        if not queue.exists() and source.exists():  # a member whose disk was unplugged has none
            queue.mkdir(parents=True)
            (queue / "read_ahead_kb").write_text(source.read_text())
    say(f"snapshot {state}:\n{mdstat()}")
    return root


def record(name: str, value: object) -> None:
    """Append one named fact to $OUT/facts.json for the host-side test."""
    path = OUT / "facts.json"
    facts = json.loads(path.read_text()) if path.exists() else {}
    facts[name] = value
    path.write_text(json.dumps(facts, indent=2, sort_keys=True))


def main(scenario: Callable[[], None]) -> None:
    """Run a scenario; print the traceback and exit non-zero on any failure."""
    started = time.monotonic()
    try:
        scenario()
    except Exception:
        traceback.print_exc()
        say(f"FAILED; mdstat now:\n{mdstat()}")
        sys.exit(1)
    say(f"scenario done in {time.monotonic() - started:.1f} s")

"""apt-get for the tests that install a Debian tool when it is missing (CI, or as root).

The suite runs in two processes (pytest-xdist: the real-kernel VMs beside the rest), so two
installs may meet: one lock file serialises them (tests/realkernel/vmharness.py and
tests/container/prepare.sh take the same one), and apt waits for any other dpkg user too."""

import fcntl
import os
import subprocess
from pathlib import Path

LOCK = Path("/var/lock/mdboost-apt.lock")
WAIT_FOR_DPKG = ["-o", "DPkg::Lock::Timeout=600"]


def install(*packages: str, recommends: bool = False) -> None:
    """apt-get update, then install `packages`; raises when apt fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    without_recommends = [] if recommends else ["--no-install-recommends"]
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["apt-get", *WAIT_FOR_DPKG, "update", "-q"], check=True, env=env)
        install = ["apt-get", *WAIT_FOR_DPKG, "install", "-y", "-q", *without_recommends]
        subprocess.run([*install, *packages], check=True, env=env)

"""apt-get for the tests that install a Debian tool when it is missing (CI, or as root).

The suite runs in two processes (pytest-xdist: the real-kernel VMs beside the rest), so two
installs may meet: one lock file serialises them (tests/realkernel/vmharness.py and
tests/container/prepare.sh take the same one), and apt waits for any other dpkg user too."""

import fcntl
import os
import subprocess
from pathlib import Path

LOCK = Path("/var/lock/mdboost-apt.lock")
# scripts/test.sh's switch: run the suite as it is, installing nothing (README, "Tests").
NO_INSTALL = "MDBOOST_TEST_NO_INSTALL"
WAIT_FOR_DPKG = ["-o", "DPkg::Lock::Timeout=600"]


def may_install() -> bool:
    """apt-get may add a missing tool: in CI or as root, unless MDBOOST_TEST_NO_INSTALL=1."""
    if os.environ.get(NO_INSTALL) == "1":
        return False
    return os.environ.get("CI") == "true" or os.geteuid() == 0


def not_installed(package: str) -> str:
    """Why a test that needs `package` skips, and how to give it the tool."""
    if os.environ.get(NO_INSTALL) == "1":
        return (
            f"{package} is missing and {NO_INSTALL}=1 installs nothing: apt-get install {package}"
        )
    return f"{package} is missing: as root, apt-get install {package} (CI=true does it)"


def install(*packages: str, recommends: bool = False) -> None:
    """apt-get update, then install `packages`; raises when apt fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    without_recommends = [] if recommends else ["--no-install-recommends"]
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["apt-get", *WAIT_FOR_DPKG, "update", "-q"], check=True, env=env)
        install = ["apt-get", *WAIT_FOR_DPKG, "install", "-y", "-q", *without_recommends]
        subprocess.run([*install, *packages], check=True, env=env)

"""Fixtures for the real-kernel suite: the VM image, built once and cached outside the repo.

Without root (to build the image or apt-get install qemu) the suite skips and says why; with
CI=true it never skips: a missing tool is a failure, so a green CI means the kernel really ran.
"""

import os

import pytest
import vmharness


@pytest.fixture(scope="session")
def vm_image() -> vmharness.Image:
    try:
        vmharness.check_repo_venv()
        vmharness.ensure_host_tools()
        return vmharness.build_image()
    except vmharness.HarnessUnavailable as why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"real-kernel suite cannot run in CI: {why}")
        pytest.skip(f"real-kernel suite skipped: {why}")

"""Fixtures for the real-kernel suite: the VM images, built once and cached outside the repo.

The full set runs on one kernel generation, REALKERNEL_KERNEL (default 6.1); the short set
(tests/realkernel/test_each_kernel.py, test_kernel_formats.py) on every kernel in
REALKERNEL_SMOKE (default: all of vmharness.KERNELS, comma separated).
Without root (to build an image or apt-get install qemu) the suite skips and says why; with
CI=true it never skips: a missing tool is a failure, so a green CI means the kernel really ran.
"""

import os

import pytest
import vmharness


def image_of(kernel: str) -> vmharness.Image:
    try:
        vmharness.check_repo_venv()
        vmharness.ensure_host_tools()
        return vmharness.build_image(kernel)
    except vmharness.HarnessUnavailable as why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"real-kernel suite cannot run in CI on {kernel}: {why}")
        pytest.skip(f"real-kernel suite skipped on {kernel}: {why}")


@pytest.fixture(scope="session")
def vm_image() -> vmharness.Image:
    """The full set's kernel (REALKERNEL_KERNEL)."""
    return image_of(vmharness.selected_kernel())


def smoke_kernels() -> list[str]:
    """The kernels the short set runs on, the full set's kernel first."""
    chosen = os.environ.get("REALKERNEL_SMOKE")
    wanted = (
        [k.strip() for k in chosen.split(",") if k.strip()] if chosen else list(vmharness.KERNELS)
    )
    for kernel in wanted:
        vmharness.check_kernel(kernel)
    first = vmharness.selected_kernel()
    return sorted(wanted, key=lambda k: k != first)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kernel" in metafunc.fixturenames:
        kernels = smoke_kernels()
        metafunc.parametrize("kernel", kernels, ids=[f"linux-{k}" for k in kernels], scope="module")

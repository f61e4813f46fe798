"""Fixtures for the real-kernel suite: the VM images, built once and cached outside the repo.

The full set runs on one kernel generation, REALKERNEL_KERNEL (default 6.1); the short set on
the kernels in REALKERNEL_SMOKE (default: all of vmharness.KERNELS, comma separated):
test_kernel_formats.py on those and the full set's, test_each_kernel.py on those but the full
set's (its own scenarios cover the same there).
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
    """REALKERNEL_SMOKE's kernels (default: all of vmharness.KERNELS)."""
    chosen = os.environ.get("REALKERNEL_SMOKE")
    wanted = (
        [k.strip() for k in chosen.split(",") if k.strip()] if chosen else list(vmharness.KERNELS)
    )
    return [vmharness.check_kernel(k) for k in wanted]


def format_kernels() -> list[str]:
    """Where test_kernel_formats.py captures: the full set's kernel first, then the short set's."""
    first = vmharness.selected_kernel()
    return [first, *(k for k in smoke_kernels() if k != first)]


def other_kernels() -> list[str]:
    """Where test_each_kernel.py runs: the short set's kernels but the full set's (whose own
    scenarios, test_api_on_real_kernel.py, hold the same and more)."""
    return [k for k in smoke_kernels() if k != vmharness.selected_kernel()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kernel" in metafunc.fixturenames:
        every = metafunc.module.__name__.endswith("test_kernel_formats")
        kernels = format_kernels() if every else other_kernels()
        metafunc.parametrize("kernel", kernels, ids=[f"linux-{k}" for k in kernels], scope="module")

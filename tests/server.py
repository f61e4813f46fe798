"""Run the real mdboost server (uvicorn in a subprocess) for end-to-end tests."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
        except (OSError, urllib.error.URLError):
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)  # polling interval, not synchronisation: the condition decides


class Server:
    """`mdboost demo` (or serve) as a child process on a free port."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str] | None = None,
        log: Path | None = None,
        command: list[str] | None = None,
        cwd: Path = PROJECT_ROOT,
        umask: int = -1,  # -1: the test's own
    ):
        self.command = command or [sys.executable, "-m", "app"]
        self.cwd = cwd
        self.umask = umask
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.args = [*args, "--host", "127.0.0.1", "--port", str(self.port)]
        self.env = {**os.environ, "MDBOOST_SAMPLE_SECONDS": "0.2", **(env or {})}
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Server":
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            [*self.command, *self.args],
            cwd=self.cwd,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            umask=self.umask,
        )
        try:
            wait_for(lambda: self.get("/healthz"), what=f"{self.base}/healthz")
        except BaseException:
            self.process.kill()  # a server that never answered must not outlive its test
            self.process.wait()
            raise
        return self

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=5) as response:
            return json.load(response)

    def text(self, path: str) -> str:
        with urllib.request.urlopen(self.base + path, timeout=5) as response:
            return str(response.read().decode())

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """JSON request; sends the server's MDBOOST_API_TOKEN as a Bearer token when it has one."""
        data = json.dumps(body).encode() if body is not None else None
        sent = {"Content-Type": "application/json"}
        if "MDBOOST_API_TOKEN" in self.env:
            sent["Authorization"] = f"Bearer {self.env['MDBOOST_API_TOKEN']}"
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers={**sent, **(headers or {})}
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def tree_server(tree: KernelTree, tmp_path: Path, **env: str) -> Server:
    """`mdboost serve` on a temporary /proc + /sys tree; `env` adds MDBOOST_* settings."""
    return Server(
        ["serve"],
        env={
            "MDBOOST_PROC_ROOT": str(tree.proc),
            "MDBOOST_SYS_ROOT": str(tree.sys),
            "MDBOOST_DB": str(tmp_path / "data" / "mdboost.db"),
            **env,
        },
        log=tmp_path / "server.log",
    )


def forecast_ok(server: Server, array: str) -> Callable[[], bool]:
    """For wait_for: the array's running operation has a finish time."""
    return lambda: server.get(f"/api/arrays/{array}/forecast")["forecast"]["status"] == "ok"


def runs_of(server: Server) -> dict[str, dict[str, Any]]:
    """Each array's newest run, as GET /api/runs lists them."""
    return {run["array"]: run for run in reversed(server.get("/api/runs")["runs"])}

"""app/logs.py: the app's own lines and uvicorn's (start-up, access) share one format."""

import re

from tests.server import Server

# LOG_FORMAT: "2026-11-23 09:00:00,123 INFO app.live.sampler: ..."
LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: "
)


def test_the_app_and_uvicorn_log_in_one_format(tmp_path):
    log = tmp_path / "server.log"
    with Server(["demo", "--state-dir", str(tmp_path / "box")], log=log) as server:
        server.get("/healthz")
    lines = log.read_text().splitlines()
    by_logger = {
        match.group(0).split()[-1].rstrip(":") for line in lines if (match := LINE.match(line))
    }
    assert [line for line in lines if not LINE.match(line)] == []
    assert {"uvicorn.error", "uvicorn.access"} <= by_logger  # "Uvicorn running on", GET /healthz
    assert any(name.startswith("app.") for name in by_logger)
    assert any('"GET /healthz HTTP/1.1" 200' in line for line in lines)

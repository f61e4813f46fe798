"""app/logs.py: the app's own lines and uvicorn's (start-up, access) share one format."""

import logging
import re
import sys

import yaml

from app import logs
from tests import PROJECT_ROOT
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


def test_a_repeated_error_is_written_once_a_minute_with_the_count_left_out(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(logs.time, "monotonic", lambda: now[0])
    repeat = logs.RepeatFilter()

    def error(message: str, level: int = logging.ERROR) -> logging.LogRecord:
        try:
            raise ValueError("bad number")
        except ValueError:
            return logging.LogRecord("app.web", level, __file__, 1, message, None, sys.exc_info())

    first, again, other = error("on POST /api/plan"), error("on POST /api/plan"), error("on GET /")
    assert repeat.filter(first) and not repeat.filter(again) and repeat.filter(other)
    assert all(not repeat.filter(error("on POST /api/plan")) for _ in range(100))
    assert repeat.filter(error("an info line", logging.INFO))  # only warnings and errors
    now[0] += 61
    later = error("on POST /api/plan")
    assert repeat.filter(later)
    assert later.getMessage() == "on POST /api/plan (and 101 more like it in the minute before)"


def test_compose_caps_the_containers_log():
    service = yaml.safe_load((PROJECT_ROOT / "compose.yaml").read_text())["services"]["mdboost"]
    logging_options = service["logging"]
    assert logging_options["driver"] == "json-file"
    assert set(logging_options["options"]) == {"max-size", "max-file"}

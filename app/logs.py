"""One log format for mdboost and uvicorn: cli.py configures logging with it, and uvicorn.run()
gets the same dictConfig, so its start-up, error and access lines look like the app's."""

import logging
import threading
import time
from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# logging.config.dictConfig schema. uvicorn's own default (uvicorn/config.py LOGGING_CONFIG) adds
# colour and its own access formatter; a plain Formatter renders the access line from its args.
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"mdboost": {"format": LOG_FORMAT}},
    "filters": {"once_a_minute": {"()": "app.logs.RepeatFilter"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "mdboost",
            "stream": "ext://sys.stderr",
            "filters": ["once_a_minute"],
        }
    },
    "root": {"handlers": ["stderr"], "level": "INFO"},
    # uvicorn's loggers pass their lines to the root's handler; none of their own.
    "loggers": {
        name: {"handlers": [], "level": "INFO", "propagate": True}
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
    },
}


REPEAT_WINDOW_S = 60.0
MAX_REMEMBERED = 1000  # distinct warnings and errors remembered within the window


class RepeatFilter(logging.Filter):
    """A warning or error repeated word for word is written once a minute, then with the count
    of those left out: a client repeating a failing request must not fill the disk with log."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[tuple[str, str, str], tuple[float, int]] = {}  # -> (written at, left out)
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        error = record.exc_info[1] if record.exc_info else None
        key = (record.name, record.getMessage(), repr(error))
        now = time.monotonic()
        with self.lock:
            written, left_out = self.seen.get(key, (-REPEAT_WINDOW_S, 0))
            if now - written < REPEAT_WINDOW_S:
                self.seen[key] = (written, left_out + 1)
                return False
            if len(self.seen) >= MAX_REMEMBERED:
                self.seen = {k: v for k, v in self.seen.items() if now - v[0] < REPEAT_WINDOW_S}
                if len(self.seen) >= MAX_REMEMBERED:
                    self.seen = {}  # a flood of distinct lines: memory first
            self.seen[key] = (now, 0)
        if left_out:
            record.msg = f"{record.msg} (and {left_out} more like it in the minute before)"
        return True

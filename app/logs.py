"""One log format for mdboost and uvicorn: cli.py configures logging with it, and uvicorn.run()
gets the same dictConfig, so its start-up, error and access lines look like the app's."""

from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# logging.config.dictConfig schema. uvicorn's own default (uvicorn/config.py LOGGING_CONFIG) adds
# colour and its own access formatter; a plain Formatter renders the access line from its args.
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"mdboost": {"format": LOG_FORMAT}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "mdboost",
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"handlers": ["stderr"], "level": "INFO"},
    # uvicorn's loggers pass their lines to the root's handler; none of their own.
    "loggers": {
        name: {"handlers": [], "level": "INFO", "propagate": True}
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
    },
}

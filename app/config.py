"""Settings: the only place that reads the environment (MDBOOST_<NAME>, in any case).

pydantic-settings reads and checks every setting; a bad value stops start-up with one line per
bad setting (`problems`), each naming the variable and what is wrong, never the value.
"""

import socket
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.resources import data_dir

MIN_PASSWORD_LENGTH = 8  # the set-up page's minimum, and MDBOOST_PASSWORD's
MIN_TOKEN_LENGTH = 32  # MDBOOST_API_TOKEN and MDBOOST_READ_TOKEN: too long to guess
PREFIX = "MDBOOST_"


class Settings(BaseSettings):
    """Every knob of mdboost itself; tests build their own instance: Settings(db=..., ...) takes
    the given values over the environment's."""

    # hide_input_in_errors: a bad value may be a secret, so no message or traceback shows it.
    model_config = SettingsConfigDict(env_prefix=PREFIX, hide_input_in_errors=True)

    proc_root: Path = Path("/proc")
    sys_root: Path = Path("/sys")
    db: Path = Path("data/mdboost.db")
    # Seconds between samples; None = 5 while any array syncs, 60 when all are idle.
    sample_seconds: float | None = Field(default=None, gt=0)
    busy_sample_seconds: float = 5.0
    idle_sample_seconds: float = 60.0
    # Samples of finished runs older than this are thinned to one per minute.
    downsample_after_days: float = 7.0
    # Samples older than this are deleted (0: kept forever); runs with their summaries and
    # events, and the tuning history, are kept forever.
    keep_days: float = Field(default=400.0, ge=0)
    migrations_dir: Path = data_dir("migrations")
    presets_dir: Path = data_dir("presets")  # built-in presets; users add theirs to data_dir
    templates_dir: Path = data_dir("templates")
    static_dir: Path = data_dir("static")
    # Simulator mode ("mdboost demo"): the page says so.
    demo: bool = False
    # Set by `mdboost demo` without MDBOOST_PASSWORD: boost, auto-tune and schedules need no
    # login; notifications and tokens need the password it prints at start.
    demo_open: bool = False

    # Tuning
    # Stripe-cache budget summed over all arrays; None = 25 % of MemAvailable at planning time.
    max_cache_mb: float | None = Field(default=None, gt=0)
    boost_hours: float | None = Field(default=None, gt=0)  # revert a session after this
    revert_on_exit: bool = True  # put the originals back when mdboost stops
    revert_on_finish: bool = True  # ... and when the tuned arrays' operations finish
    effect_minutes: float = Field(default=5.0, gt=0)  # window for the before/after speed
    # Auto-tune, in seconds of the app's clock: a step waits `settle` after a write,
    # then measures at least `measure` and at most `max_measure` (it stops between the two once
    # its speed is known to 3 %).
    autotune_settle_seconds: float = Field(default=30.0, ge=0)
    autotune_measure_seconds: float = Field(default=60.0, gt=0)
    autotune_max_measure_seconds: float = Field(default=300.0, gt=0)
    # Abort and put the values back when MemAvailable falls under this, or when the box's own
    # requests on the array wait longer than this on average (its I/O is starving).
    autotune_mem_floor_mb: float = Field(default=256.0, ge=0)
    autotune_starve_ms: float = Field(default=5000.0, gt=0)
    # The box's time zone for schedules: the usual TZ variable (Europe/Berlin);
    # unset: /etc/localtime, else UTC.
    tz: str | None = Field(default=None, validation_alias=AliasChoices("tz", "TZ"))
    # Security
    password: SecretStr | None = None  # admin password; unset: a one-time set-up page stores one
    api_token: SecretStr | None = None  # for API clients: Authorization: Bearer <token>
    # A token that may only read (GET API, /metrics, the page): for Prometheus.
    read_token: SecretStr | None = None
    read_requires_login: bool = False  # also require login to read the page and GET endpoints
    max_body_bytes: int = Field(default=65536, gt=0)
    # Requests rendered at once, and queued beyond those; more get 503 + Retry-After.
    max_active_requests: int = Field(default=4, gt=0)
    max_queued_requests: int = Field(default=32, ge=0)
    # Open connections uvicorn accepts before it answers 503 itself (a flood of sockets); at the
    # cap the oldest connection with no request in flight is closed to make room.
    max_connections: int = Field(default=256, gt=1)
    # Open connections per client address (reverse proxies in forwarded_allow_ips are exempt).
    max_connections_per_client: int = Field(default=16, gt=0)
    # A request head must arrive within this many seconds of the connection (or of its first
    # byte, on a kept-alive one), else 408 and closed: slowloris.
    header_timeout_seconds: float = Field(default=5.0, gt=0)
    # A request body must arrive within this many seconds, else 408 (slow clients).
    body_timeout_seconds: float = Field(default=10.0, gt=0)
    # Host names the page may be opened by, besides IP addresses, localhost, this machine's own
    # names and *.local: the DNS-rebinding guard. Comma-separated; *.example.org
    # allows a whole domain.
    allowed_hosts: Annotated[list[str], NoDecode] = []
    # Reverse proxies whose X-Forwarded-For/-Proto count: addresses or networks, comma-separated.
    # uvicorn's variable name, kept for existing set-ups; `*` trusts any peer.
    forwarded_allow_ips: str = Field(
        default="127.0.0.1,::1",
        validation_alias=AliasChoices("forwarded_allow_ips", "FORWARDED_ALLOW_IPS"),
    )
    # Notifications
    # Destination URLs separated by spaces, commas or newlines: ntfy://host/topic,
    # gotify://host/TOKEN, https://... (JSON webhook), smtp://user:pass@host:587/?to=a@b.example
    notify: SecretStr | None = None
    # The page's address in messages; unset: the one the owner used (notify/notifier.py).
    public_url: str | None = None
    notify_milestone_percent: float = Field(default=25.0, gt=0, le=100)  # milestones
    notify_stall_minutes: float = Field(default=10.0, gt=0)  # no progress this long: stalled
    notify_mismatch_threshold: int = Field(default=0, ge=0)  # a check above this: tell
    notify_sampler_failures: int = Field(default=3, ge=1)  # failed ticks in a row: tell
    notify_max_per_minute: int = Field(default=10, ge=1)  # per destination; then a summary
    notify_retry_seconds: float = Field(default=5.0, gt=0)  # first retry; doubles each time
    notify_retry_max_seconds: float = Field(default=600.0, gt=0)
    notify_timeout_seconds: float = Field(default=10.0, gt=0)  # per send
    # Destinations on the NAS itself or its link (127.0.0.1, ::1, 169.254.x.x, the NAS's own
    # addresses, names that resolve there): off, they are refused, so an admin's "test" is no
    # port probe from inside the NAS; on, for ntfy or Gotify running on the NAS.
    notify_allow_local: bool = False
    # GET /metrics: also export node_exporter's node_md_* series; turn off where
    # node_exporter already runs on the box, to avoid duplicates.
    metrics_node_compat: bool = True

    # Crash-safety tests only: the server kills itself at this point of an apply.
    test_crash_at: str | None = None

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value

    @field_validator("password")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_PASSWORD_LENGTH:
            raise ValueError(
                f"at least {MIN_PASSWORD_LENGTH} characters, like the set-up page asks"
            )
        return value

    @field_validator("api_token", "read_token")
    @classmethod
    def _hard_to_guess(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_TOKEN_LENGTH:
            raise ValueError(
                f"at least {MIN_TOKEN_LENGTH} characters (`openssl rand -hex 24` makes one): "
                "a short token can be guessed"
            )
        return value

    @property
    def data_dir(self) -> Path:
        return self.db.parent

    @property
    def page_url(self) -> str:
        return self.public_url or f"http://{socket.gethostname()}:8080/"


def env_names() -> dict[str, str]:
    """Each setting's environment variable, as docs/configuration.md names it: MDBOOST_<NAME>,
    or the other software's name where one replaces it (TZ, FORWARDED_ALLOW_IPS)."""
    names = {}
    for name, field in Settings.model_fields.items():
        choices = getattr(field.validation_alias, "choices", [])
        upper = [choice for choice in choices if isinstance(choice, str) and choice.isupper()]
        names[name] = upper[0] if upper else PREFIX + name.upper()
    return names


def problems(error: ValidationError) -> list[tuple[str, str]]:
    """(variable, what is wrong) for each bad setting, in the order Settings declares them."""
    names = env_names()
    found = []
    for problem in error.errors(include_input=False, include_url=False):
        field = str(problem["loc"][0])
        message = problem["msg"].removeprefix("Value error, ")
        found.append((names.get(field, PREFIX + field.upper()), message))
    return found


@lru_cache
def get_settings() -> Settings:
    return Settings()

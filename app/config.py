"""Settings: the only place that reads the environment (prefix MDBOOST_).

A small typed reader of our own (issue 27: pydantic-settings and python-dotenv cost the server
about 1 MiB of imports for the job below). Each setting is an annotated class attribute with its
default; `Annotated[..., Bounds(gt=0)]` adds a range, `Env("TZ")` another variable name, `Check`
a rule of its own. A value from the environment (or a string given to Settings()) is read as
pydantic read it before, with the same messages: names match in any case, booleans are
1/0/true/false/yes/no/on/off/t/f/y/n in any case, integers may end in ".0", a list is
comma-separated. Every bad setting is reported at once (`BadSettings.problems`).
"""

import copy
import math
import os
import socket
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any, ClassVar

from pydantic import SecretStr

from app.resources import data_dir

MIN_PASSWORD_LENGTH = 8  # the set-up page's minimum, and MDBOOST_PASSWORD's (issue 26)
PREFIX = "MDBOOST_"


@dataclass(frozen=True)
class Bounds:
    """A number's range; the messages are those pydantic gave for its Field(gt=...) etc."""

    gt: float | None = None
    ge: float | None = None
    le: float | None = None

    def check(self, value: float) -> None:
        # NaN fails every bound; the upper one is checked first, as pydantic did.
        if self.le is not None and not value <= self.le:
            raise ValueError(f"Input should be less than or equal to {_number(self.le)}")
        if self.ge is not None and not value >= self.ge:
            raise ValueError(f"Input should be greater than or equal to {_number(self.ge)}")
        if self.gt is not None and not value > self.gt:
            raise ValueError(f"Input should be greater than {_number(self.gt)}")


@dataclass(frozen=True)
class Env:
    """The variable the setting is read from instead of MDBOOST_<NAME> (TZ, FORWARDED_ALLOW_IPS:
    the names other software uses)."""

    name: str


@dataclass(frozen=True)
class Check:
    """A rule of the setting's own: raises ValueError with the message to print."""

    rule: Callable[[Any], None]


def _long_enough(value: SecretStr | None) -> None:
    if value is not None and len(value.get_secret_value()) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"at least {MIN_PASSWORD_LENGTH} characters, like the set-up page asks")


PasswordSetting = Annotated[SecretStr | None, Check(_long_enough)]


class Settings:
    """Every knob of mdboost itself; tests build their own instance: Settings(db=..., ...) takes
    the given values over the environment's."""

    proc_root: Path = Path("/proc")
    sys_root: Path = Path("/sys")
    db: Path = Path("data/mdboost.db")
    # Seconds between samples; None = 5 while any array syncs, 60 when all are idle.
    sample_seconds: Annotated[float | None, Bounds(gt=0)] = None
    busy_sample_seconds: float = 5.0
    idle_sample_seconds: float = 60.0
    # Samples of finished runs older than this are thinned to one per minute.
    downsample_after_days: float = 7.0
    # Samples older than this are deleted (0: kept forever); runs with their summaries and
    # events, and the tuning history, are kept forever (issue 27).
    keep_days: Annotated[float, Bounds(ge=0)] = 400.0
    migrations_dir: Path = data_dir("migrations")
    presets_dir: Path = data_dir("presets")  # built-in presets; users add theirs to data_dir
    templates_dir: Path = data_dir("templates")
    static_dir: Path = data_dir("static")
    # Simulator mode ("mdboost demo"): the page says so.
    demo: bool = False
    # Set by `mdboost demo` without MDBOOST_PASSWORD: boost, auto-tune and schedules need no
    # login; notifications and tokens need the password it prints at start (issue 26).
    demo_open: bool = False

    # Tuning (issue 3)
    # Stripe-cache budget summed over all arrays; None = 25 % of MemAvailable at planning time.
    max_cache_mb: Annotated[float | None, Bounds(gt=0)] = None
    boost_hours: Annotated[float | None, Bounds(gt=0)] = None  # revert a session after this
    revert_on_exit: bool = True  # put the originals back when mdboost stops
    revert_on_finish: bool = True  # ... and when the tuned arrays' operations finish
    effect_minutes: Annotated[float, Bounds(gt=0)] = 5.0  # window for the before/after speed
    # Auto-tune (issue 18), in seconds of the app's clock: a step waits `settle` after a write,
    # then measures at least `measure` and at most `max_measure` (it stops between the two once
    # its speed is known to 3 %).
    autotune_settle_seconds: Annotated[float, Bounds(ge=0)] = 30.0
    autotune_measure_seconds: Annotated[float, Bounds(gt=0)] = 60.0
    autotune_max_measure_seconds: Annotated[float, Bounds(gt=0)] = 300.0
    # Abort and put the values back when MemAvailable falls under this, or when the box's own
    # requests on the array wait longer than this on average (its I/O is starving).
    autotune_mem_floor_mb: Annotated[float, Bounds(ge=0)] = 256.0
    autotune_starve_ms: Annotated[float, Bounds(gt=0)] = 5000.0
    # The box's time zone for schedules (issue 18): the usual TZ variable (Europe/Berlin);
    # unset: /etc/localtime, else UTC.
    tz: Annotated[str | None, Env("TZ")] = None
    # Security (issue 7)
    password: PasswordSetting = None  # admin password; unset: a one-time set-up page stores one
    api_token: SecretStr | None = None  # for API clients: Authorization: Bearer <token>
    # A token that may only read (GET API, /metrics, the page): for Prometheus (issue 26).
    read_token: SecretStr | None = None
    read_requires_login: bool = False  # also require login to read the page and GET endpoints
    max_body_bytes: Annotated[int, Bounds(gt=0)] = 65536
    # Requests rendered at once, and queued beyond those; more get 503 + Retry-After (issue 13).
    max_active_requests: Annotated[int, Bounds(gt=0)] = 4
    max_queued_requests: Annotated[int, Bounds(ge=0)] = 32
    # Open connections uvicorn accepts before it answers 503 itself (a flood of sockets); at the
    # cap the oldest connection with no request in flight is closed to make room (issue 26).
    max_connections: Annotated[int, Bounds(gt=1)] = 256
    # Open connections per client address (reverse proxies in forwarded_allow_ips are exempt).
    max_connections_per_client: Annotated[int, Bounds(gt=0)] = 16
    # A request head must arrive within this many seconds of the connection (or of its first
    # byte, on a kept-alive one), else 408 and closed: slowloris (issue 26).
    header_timeout_seconds: Annotated[float, Bounds(gt=0)] = 5.0
    # A request body must arrive within this many seconds, else 408 (slow clients; issue 13).
    body_timeout_seconds: Annotated[float, Bounds(gt=0)] = 10.0
    # Host names the page may be opened by, besides IP addresses, localhost, this machine's own
    # names and *.local: the DNS-rebinding guard (issue 13). Comma-separated; *.example.org
    # allows a whole domain.
    allowed_hosts: list[str] = []  # noqa: RUF012 (copied per instance, never shared)
    # Reverse proxies whose X-Forwarded-For/-Proto count: addresses or networks, comma-separated.
    # uvicorn's variable name, kept for existing set-ups; `*` trusts any peer (issue 13).
    forwarded_allow_ips: Annotated[str, Env("FORWARDED_ALLOW_IPS")] = "127.0.0.1,::1"
    # Notifications (issue 16)
    # Destination URLs separated by spaces, commas or newlines: ntfy://host/topic,
    # gotify://host/TOKEN, https://... (JSON webhook), smtp://user:pass@host:587/?to=a@b.example
    notify: SecretStr | None = None
    # The page's address in messages; unset: the one the owner used (notify/notifier.py).
    public_url: str | None = None
    notify_milestone_percent: Annotated[float, Bounds(gt=0, le=100)] = 25.0  # milestones
    notify_stall_minutes: Annotated[float, Bounds(gt=0)] = 10.0  # no progress this long: stalled
    notify_mismatch_threshold: Annotated[int, Bounds(ge=0)] = 0  # a check above this: tell
    notify_sampler_failures: Annotated[int, Bounds(ge=1)] = 3  # failed ticks in a row: tell
    notify_max_per_minute: Annotated[int, Bounds(ge=1)] = 10  # per destination; then a summary
    notify_retry_seconds: Annotated[float, Bounds(gt=0)] = 5.0  # first retry; doubles each time
    notify_retry_max_seconds: Annotated[float, Bounds(gt=0)] = 600.0
    notify_timeout_seconds: Annotated[float, Bounds(gt=0)] = 10.0  # per send
    # GET /metrics (issue 17): also export node_exporter's node_md_* series; turn off where
    # node_exporter already runs on the box, to avoid duplicates.
    metrics_node_compat: bool = True

    # Crash-safety tests only: the server kills itself at this point of an apply.
    test_crash_at: str | None = None

    # The names set by the environment or by the caller, not left at their defaults.
    fields_set: frozenset[str]
    _NOT_SETTINGS: ClassVar[frozenset[str]] = frozenset({"fields_set"})

    def __init__(self, **given: Any) -> None:
        unknown = sorted(set(given) - set(fields()))
        if unknown:
            raise TypeError(f"Settings() got unknown settings: {', '.join(unknown)}")
        environ = {name.upper(): value for name, value in os.environ.items()}
        problems: list[tuple[str, str]] = []
        chosen = set()
        for field in fields().values():
            if field.name in given:
                raw = given[field.name]
            else:
                raw = next((environ[n] for n in field.env_names if n in environ), _UNSET)
            if raw is _UNSET:
                value = copy.copy(field.default)  # a list of its own, not the class's
            else:
                chosen.add(field.name)
                try:
                    value = field.read(raw)
                except ValueError as error:
                    problems.append((field.env_names[0], str(error)))
                    continue
            setattr(self, field.name, value)
        if problems:
            raise BadSettings(problems)
        self.fields_set = frozenset(chosen)

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields())
        return f"Settings({values})"

    @property
    def data_dir(self) -> Path:
        return self.db.parent

    @property
    def page_url(self) -> str:
        return self.public_url or f"http://{socket.gethostname()}:8080/"


class BadSettings(ValueError):
    """Settings the environment (or a caller) got wrong: (variable, what is wrong) each, never
    the value (it may be a secret)."""

    def __init__(self, problems: Iterable[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{name}: {message}" for name, message in self.problems))


_UNSET: Any = object()
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


@dataclass(frozen=True)
class Field:
    """One setting: its type's reader, its rules, and the variables it is read from."""

    name: str
    default: Any
    kind: type  # the type without None: Path, float, int, bool, str, SecretStr or list
    optional: bool
    bounds: Bounds | None
    check: Check | None
    env_names: tuple[str, ...]  # tried in order

    def read(self, raw: Any) -> Any:
        if raw is None and self.optional:
            value = None
        else:
            value = _READERS[self.kind](raw) if isinstance(raw, str) else _convert(self.kind, raw)
        if self.bounds is not None and value is not None:
            self.bounds.check(value)
        if self.check is not None:
            self.check.rule(value)
        return list(value) if isinstance(value, list) else value  # never the caller's list


@cache
def fields() -> dict[str, Field]:
    """Every setting by name, in the order Settings declares them."""
    hints = typing.get_type_hints(Settings, include_extras=True)
    found = {}
    for name, hint in hints.items():
        if name in Settings._NOT_SETTINGS or typing.get_origin(hint) is ClassVar:
            continue
        extras: tuple[Any, ...] = ()
        if typing.get_origin(hint) is Annotated:
            hint, *rest = typing.get_args(hint)
            extras = tuple(rest)
        kinds = [t for t in typing.get_args(hint) if t is not NoneType]
        optional = isinstance(hint, UnionType) and len(kinds) < len(typing.get_args(hint))
        kind = kinds[0] if isinstance(hint, UnionType) else hint
        kind = typing.get_origin(kind) or kind  # list[str] -> list
        env = [e.name for e in extras if isinstance(e, Env)]
        found[name] = Field(
            name=name,
            default=getattr(Settings, name),
            kind=kind,
            optional=optional,
            bounds=next((e for e in extras if isinstance(e, Bounds)), None),
            check=next((e for e in extras if isinstance(e, Check)), None),
            env_names=tuple(env) or (PREFIX + name.upper(),),
        )
    return found


def env_names() -> dict[str, str]:
    """Each setting's environment variable, as docs/configuration.md names it."""
    return {name: field.env_names[0] for name, field in fields().items()}


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _float(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ValueError(
            "Input should be a valid number, unable to parse string as a number"
        ) from None


def _int(raw: str) -> int:
    text = raw.strip()
    whole, dot, fraction = text.partition(".")
    if dot and fraction and set(fraction) == {"0"}:
        text = whole  # "10.0" is 10, as pydantic read it; "10." and "10.5" are not integers
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            "Input should be a valid integer, unable to parse string as an integer"
        ) from None


def _bool(raw: str) -> bool:
    word = raw.lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError("Input should be a valid boolean, unable to interpret input")


def _comma_separated(raw: str) -> list[str]:
    return [name.strip() for name in raw.split(",") if name.strip()]


_READERS: dict[type, Callable[[str], Any]] = {
    Path: Path,
    float: _float,
    int: _int,
    bool: _bool,
    str: str,
    SecretStr: SecretStr,
    list: _comma_separated,
}


def _convert(kind: type, value: Any) -> Any:
    """A value given to Settings() in Python (a Path, a number, a list): checked or converted
    to the setting's type."""
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, float) and not math.isnan(value) and value.is_integer():
        return int(value)
    if kind is Path and isinstance(value, os.PathLike):
        return Path(value)
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise ValueError(f"Input should be {kind.__name__}, not {type(value).__name__}")


@lru_cache
def get_settings() -> Settings:
    return Settings()

"""app/config.py: every MDBOOST_* setting is read from its variable with its type and range, and
every bad one is named at once with what is wrong, one line each, never with its value. The table
holds the variable names and messages that docs/configuration.md and existing set-ups rely on."""

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from app.config import MIN_PASSWORD_LENGTH, MIN_TOKEN_LENGTH, Settings, env_names, problems

NUMBER = "Input should be a valid number, unable to parse string as a number"
INTEGER = "Input should be a valid integer, unable to parse string as an integer"
BOOLEAN = "Input should be a valid boolean, unable to interpret input"
SHORT = f"at least {MIN_PASSWORD_LENGTH} characters, like the set-up page asks"
LONG_TOKEN = "t0ken" * 7  # 35 characters
SHORT_TOKEN = (
    f"at least {MIN_TOKEN_LENGTH} characters (`openssl rand -hex 24` makes one): "
    "a short token can be guessed"
)


def above(n: int) -> str:
    return f"Input should be greater than {n}"


def at_least(n: int) -> str:
    return f"Input should be greater than or equal to {n}"


# Every setting: a value as the environment gives it, what it reads as, and a bad value with its
# message (None: the setting takes any text).
EVERY_SETTING: dict[str, tuple[str, Any, str | None, str | None]] = {
    "proc_root": ("/host/proc", Path("/host/proc"), None, None),
    "sys_root": ("/host/sys", Path("/host/sys"), None, None),
    "db": ("/data/m.db", Path("/data/m.db"), None, None),
    "sample_seconds": ("2.5", 2.5, "0", above(0)),
    "busy_sample_seconds": ("1e1", 10.0, "five", NUMBER),
    "idle_sample_seconds": (" 30 ", 30.0, "", NUMBER),
    "downsample_after_days": ("1_000", 1000.0, "0x10", NUMBER),
    "keep_days": ("0", 0.0, "-1", at_least(0)),
    "migrations_dir": ("/m", Path("/m"), None, None),
    "presets_dir": ("/p", Path("/p"), None, None),
    "templates_dir": ("/t", Path("/t"), None, None),
    "static_dir": ("/s", Path("/s"), None, None),
    "demo": ("yes", True, "2", BOOLEAN),
    "demo_open": ("TrUe", True, " yes ", BOOLEAN),
    "max_cache_mb": ("512", 512.0, "-0", above(0)),
    "boost_hours": ("inf", math.inf, "nan", above(0)),
    "revert_on_exit": ("off", False, "maybe", BOOLEAN),
    "revert_on_finish": ("N", False, "", BOOLEAN),
    "effect_minutes": ("10.", 10.0, "0", above(0)),
    "autotune_settle_seconds": ("0", 0.0, "-0.5", at_least(0)),
    "autotune_measure_seconds": ("+5", 5.0, "0", above(0)),
    "autotune_max_measure_seconds": ("60", 60.0, "-1", above(0)),
    "autotune_mem_floor_mb": ("0", 0.0, "-1", at_least(0)),
    "autotune_starve_ms": ("100", 100.0, "0", above(0)),
    "tz": ("Europe/Berlin", "Europe/Berlin", None, None),
    "password": ("longenough1", SecretStr("longenough1"), "short12", SHORT),
    "api_token": (LONG_TOKEN, SecretStr(LONG_TOKEN), "t0ken", SHORT_TOKEN),
    "read_token": (LONG_TOKEN, SecretStr(LONG_TOKEN), "", SHORT_TOKEN),
    "read_requires_login": ("1", True, "1.0", BOOLEAN),
    "max_body_bytes": ("10.0", 10, "10.5", INTEGER),
    "max_active_requests": ("+3", 3, "0", above(0)),
    "max_queued_requests": ("00", 0, "-1", at_least(0)),
    "max_connections": ("2", 2, "1", above(1)),
    "max_connections_per_client": ("1_0", 10, "1e3", INTEGER),
    "header_timeout_seconds": ("0.5", 0.5, "0", above(0)),
    "body_timeout_seconds": ("2.0e0", 2.0, "ten", NUMBER),
    "allowed_hosts": (" nas.example, ,*.home ,", ["nas.example", "*.home"], None, None),
    "forwarded_allow_ips": ("*", "*", None, None),
    "notify": ("ntfy://ntfy.sh/x", SecretStr("ntfy://ntfy.sh/x"), None, None),
    "public_url": ("https://nas/", "https://nas/", None, None),
    "notify_milestone_percent": ("100", 100.0, "nan", "Input should be less than or equal to 100"),
    "notify_stall_minutes": ("1", 1.0, "0", above(0)),
    "notify_mismatch_threshold": ("0", 0, "-1", at_least(0)),
    "notify_sampler_failures": ("1", 1, "0", at_least(1)),
    "notify_max_per_minute": ("1", 1, "10.", INTEGER),
    "notify_retry_seconds": ("1", 1.0, "0", above(0)),
    "notify_retry_max_seconds": ("1", 1.0, "-1", above(0)),
    "notify_timeout_seconds": ("1", 1.0, "0", above(0)),
    "notify_allow_local": ("true", True, "perhaps", BOOLEAN),
    "metrics_node_compat": ("false", False, "no way", BOOLEAN),
    "test_crash_at": ("after_write", "after_write", None, None),
}


@pytest.fixture
def environ() -> Iterator[dict[str, str]]:
    """os.environ without any setting, restored afterwards."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.upper().startswith("MDBOOST_") or name.upper() in {"TZ", "FORWARDED_ALLOW_IPS"}:
            del os.environ[name]
    try:
        yield os.environ  # type: ignore[misc]
    finally:
        os.environ.clear()
        os.environ.update(saved)


def plain(value: Any) -> Any:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def test_the_table_covers_every_setting() -> None:
    assert set(EVERY_SETTING) == set(Settings.model_fields)


@pytest.mark.parametrize("name", sorted(EVERY_SETTING))
def test_every_setting_is_read_from_its_variable(name: str, environ: dict[str, str]) -> None:
    raw, expected, _, _ = EVERY_SETTING[name]
    environ[env_names()[name]] = raw
    settings = Settings()
    assert plain(getattr(settings, name)) == plain(expected)
    assert type(getattr(settings, name)) is type(expected)
    assert settings.model_fields_set == {name}


@pytest.mark.parametrize(
    "name", sorted(n for n, case in EVERY_SETTING.items() if case[2] is not None)
)
def test_a_bad_value_names_the_variable_and_what_is_wrong(
    name: str, environ: dict[str, str]
) -> None:
    _, _, bad, message = EVERY_SETTING[name]
    assert bad is not None
    environ[env_names()[name]] = bad
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert problems(raised.value) == [(env_names()[name], message)]
    # Never the value itself (it may be a secret): not in the lines, nor in a traceback.
    assert bad not in str(problems(raised.value)) or bad in message
    assert "input_value" not in str(raised.value)


def test_every_bad_setting_is_reported_at_once(environ: dict[str, str]) -> None:
    environ |= {"MDBOOST_KEEP_DAYS": "-1", "MDBOOST_DEMO": "maybe", "MDBOOST_MAX_CONNECTIONS": "x"}
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert problems(raised.value) == [
        ("MDBOOST_KEEP_DAYS", at_least(0)),
        ("MDBOOST_DEMO", BOOLEAN),
        ("MDBOOST_MAX_CONNECTIONS", INTEGER),
    ]


def test_unset_settings_keep_their_defaults(environ: dict[str, str]) -> None:
    settings = Settings()
    assert settings.model_fields_set == frozenset()
    assert settings.db == Path("data/mdboost.db")
    assert settings.sample_seconds is None
    assert settings.keep_days == 400.0
    assert settings.max_connections == 256
    assert settings.forwarded_allow_ips == "127.0.0.1,::1"
    assert settings.password is None
    assert settings.revert_on_exit is True
    assert settings.migrations_dir.is_dir()
    settings.allowed_hosts.append("changed.example")
    assert Settings().allowed_hosts == []  # each instance has a list of its own


def test_names_match_in_any_case_and_the_aliases_replace_the_prefix(
    environ: dict[str, str],
) -> None:
    environ |= {"mdboost_keep_days": "3", "tz": "Asia/Tokyo", "MDBOOST_TZ": "Europe/Paris"}
    environ["MDBOOST_FORWARDED_ALLOW_IPS"] = "10.0.0.1"
    settings = Settings()
    assert settings.keep_days == 3.0
    assert settings.tz == "Asia/Tokyo"  # TZ, as other software reads it; MDBOOST_TZ is no name
    assert settings.forwarded_allow_ips == "127.0.0.1,::1"
    assert env_names()["tz"] == "TZ"
    assert env_names()["forwarded_allow_ips"] == "FORWARDED_ALLOW_IPS"


def test_given_values_win_over_the_environment_and_are_checked(
    environ: dict[str, str], tmp_path: Path
) -> None:
    environ |= {"MDBOOST_DB": "/elsewhere.db", "MDBOOST_KEEP_DAYS": "9"}
    hosts = ["a.example"]
    settings = Settings(db=tmp_path / "m.db", password="longenough1", allowed_hosts=hosts)
    assert settings.db == tmp_path / "m.db"
    assert settings.keep_days == 9.0
    assert settings.password == SecretStr("longenough1")
    assert settings.allowed_hosts == hosts and settings.allowed_hosts is not hosts
    assert settings.model_fields_set == {"db", "password", "allowed_hosts", "keep_days"}
    assert Settings(sample_seconds=1, max_body_bytes=2.0).sample_seconds == 1.0
    assert Settings(db=str(tmp_path)).db == tmp_path
    with pytest.raises(ValidationError) as raised:
        Settings(sample_seconds=0, password="short", demo="perhaps")
    assert problems(raised.value) == [
        ("MDBOOST_SAMPLE_SECONDS", above(0)),
        ("MDBOOST_DEMO", BOOLEAN),
        ("MDBOOST_PASSWORD", SHORT),
    ]
    with pytest.raises(ValidationError):
        Settings(keep_days=None)  # None only where the setting may be unset
    with pytest.raises(ValidationError) as raised:
        Settings(keep_dayz=1)  # a misspelt setting is an error, not silently ignored
    assert problems(raised.value) == [("MDBOOST_KEEP_DAYZ", "Extra inputs are not permitted")]


def test_secrets_stay_out_of_the_repr(environ: dict[str, str]) -> None:
    environ |= {"MDBOOST_PASSWORD": "longenough1", "MDBOOST_NOTIFY": "ntfy://h/secret-topic"}
    text = repr(Settings())
    assert "longenough1" not in text and "secret-topic" not in text
    assert "keep_days=400.0" in text

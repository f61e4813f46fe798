"""requirements.lock and requirements-test.lock: every pin of pyproject.toml is in its lock with
its hashes, so setup.sh, CI and the Dockerfile (pip --require-hashes) install what was declared."""

import re
import tomllib

from tests import PROJECT_ROOT

PROJECT = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
# "name==version \" followed by its "--hash=sha256:..." lines.
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n((?:    --hash=sha256:[0-9a-f]{64}.*\n)+)", re.M)


def locked(name: str) -> dict[str, str]:
    text = (PROJECT_ROOT / name).read_text()
    return {canonical(m[1]): m[2] for m in PIN.finditer(text)}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requirements: list[str]) -> dict[str, str]:
    pins = [re.match(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)", r) for r in requirements]
    assert all(pins), requirements  # pyproject pins every dependency exactly
    return {canonical(p[1]): p[2] for p in pins if p}


def test_the_runtime_lock_holds_every_runtime_pin_with_hashes():
    lock = locked("requirements.lock")
    assert declared(PROJECT["dependencies"]).items() <= lock.items()
    assert not {"pytest", "mypy", "ruff"} & set(lock)  # test tools stay out of the image


def test_the_test_lock_holds_both_and_agrees_with_the_runtime_lock():
    runtime, test = locked("requirements.lock"), locked("requirements-test.lock")
    assert declared(PROJECT["optional-dependencies"]["test"]).items() <= test.items()
    assert runtime.items() <= test.items()


def test_every_pin_in_a_lock_carries_a_hash():
    for name in ("requirements.lock", "requirements-test.lock"):
        text = (PROJECT_ROOT / name).read_text()
        pins = re.findall(r"^[A-Za-z0-9_.-]+==", text, re.M)
        assert len(pins) == len(locked(name)) > 0, name

"""Presets are data: TOML files with a summary and a value and reason per knob.

Built-in presets live in presets/ at the project root; users may drop their own *.toml files into
the data directory. An invalid file is reported (file and key) and left out; the rest still load.
"""

import logging
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from app.tuning.catalogue import CATALOGUE

log = logging.getLogger(__name__)

AUTO = "auto"  # stripe_cache_size sized to the RAM budget
PRESET_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
AUTO_KNOBS = frozenset({"stripe_cache_size"})


class UnknownPreset(LookupError):
    """No preset of that name was loaded."""


@dataclass(frozen=True)
class Setting:
    knob: str
    value: str  # validated: an integer, "system", or "auto"
    reason: str


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    settings: tuple[Setting, ...]
    restore_originals: bool = False  # "stock": put back what mdboost found
    source: str = "built-in"


@dataclass(frozen=True)
class PresetError:
    file: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"preset file {self.file}: {self.key}: {self.message}"


def load_file(path: Path, source: str) -> Preset:
    """Parse and validate one preset file; raises ValueError('key: message')."""
    name = path.stem
    if not PRESET_NAME.fullmatch(name):
        raise ValueError(f"(file name): {name!r} is not a preset name (a-z, 0-9, - and _)")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"(syntax): {error}") from None
    unknown = set(data) - {"summary", "knobs", "restore_originals"}
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: unknown key")
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("summary: missing: say in one line what the preset is for")
    restore = data.get("restore_originals", False)
    if not isinstance(restore, bool):
        raise ValueError("restore_originals: must be true or false")
    knobs = data.get("knobs", {})
    if not isinstance(knobs, dict) or (not knobs and not restore):
        raise ValueError("knobs: a preset needs at least one [knobs.NAME] table")
    settings = []
    for knob_name, table in knobs.items():
        settings.append(_setting(knob_name, table))
    return Preset(name, summary.strip(), tuple(settings), restore, source)


def _setting(knob_name: str, table: object) -> Setting:
    key = f"knobs.{knob_name}"
    knob = CATALOGUE.get(knob_name)
    if knob is None:
        raise ValueError(f"{key}: unknown knob (known: {', '.join(sorted(CATALOGUE))})")
    if not isinstance(table, dict):
        raise ValueError(f"{key}: must be a table with value and reason")
    extra = set(table) - {"value", "reason"}
    if extra:
        raise ValueError(f"{key}.{sorted(extra)[0]}: unknown key")
    reason = table.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(f"{key}.reason: missing: every knob says why")
    value = table.get("value")
    if value == AUTO and knob_name in AUTO_KNOBS:
        return Setting(knob_name, AUTO, reason.strip())
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{key}.value: must be an integer")
    try:
        return Setting(knob_name, knob.validate(value), reason.strip())
    except ValueError as error:
        raise ValueError(f"{key}.value: {error}") from None


def load_all(
    builtin_dir: Path, user_dir: Path | None
) -> tuple[dict[str, Preset], list[PresetError]]:
    """Every valid preset by name, and the errors of the files that were left out."""
    presets: dict[str, Preset] = {}
    errors: list[PresetError] = []
    sources = [(builtin_dir, "built-in")]
    if user_dir is not None and user_dir.is_dir():
        sources.append((user_dir, "user"))
    for folder, source in sources:
        for path in sorted(folder.glob("*.toml")):
            try:
                preset = load_file(path, source)
            except (OSError, ValueError) as error:
                key, _, message = str(error).partition(": ")
                errors.append(PresetError(str(path), key, message))
                continue
            if preset.name in presets:
                errors.append(PresetError(str(path), "(file name)", "a built-in preset has it"))
                continue
            presets[preset.name] = preset
    for problem in errors:
        log.error("%s (left out; the other presets still work)", problem)
    return presets, errors

"""Presets are data: TOML files with a summary and a value and reason per knob.

Built-in presets live in presets/ at the project root; users may drop their own *.toml files into
the data directory. An invalid file is reported (file and key) and left out; the rest still load.
The file's shape is the pydantic models below: an unknown key anywhere is refused.
"""

import logging
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from app.md.knobs import CATALOGUE
from app.tuning.errors import TuningError

log = logging.getLogger(__name__)

AUTO = "auto"  # stripe_cache_size sized to the RAM budget
PRESET_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
AUTO_KNOBS = frozenset({"stripe_cache_size"})

# A line of text that says something: surrounding blanks are dropped, nothing left is refused.
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class UnknownPreset(TuningError, LookupError):
    """No preset of that name was loaded."""

    status = 404


class KnobFile(BaseModel):
    """One [knobs.NAME] table: the value and why (checked against the catalogue afterwards)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    value: int | str  # an integer, "system" where the knob has it, "auto" for the stripe cache
    reason: Text


class PresetFile(BaseModel):
    """A preset file as TOML gives it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    summary: Text
    restore_originals: bool = False
    knobs: dict[str, KnobFile] = Field(default_factory=dict)


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


# What a file's author should read for pydantic's error types.
_MESSAGES = {
    "extra_forbidden": "unknown key",
    "bool_type": "must be true or false",
    "dict_type": "must be a table",
    "model_type": "must be a table with value and reason",
    "string_type": "must be text",
}


def _first_problem(error: ValidationError) -> str:
    """'key: message' for the first problem, the key dotted as in the TOML file."""
    problem = error.errors()[0]
    # A value of int | str reports one problem per type; say what the file should hold.
    loc = [str(part) for part in problem["loc"] if part not in ("int", "str")]
    key = ".".join(loc)
    if loc[-1:] == ["value"]:
        return f"{key}: must be an integer"
    if problem["type"] in ("missing", "string_too_short"):
        why = "every knob says why" if loc[-1] == "reason" else "say in one line what it is for"
        return f"{key}: missing: {why}"
    return f"{key}: {_MESSAGES.get(problem['type'], problem['msg'])}"


def load_file(path: Path, source: str) -> Preset:
    """Parse and validate one preset file; raises ValueError('key: message')."""
    name = path.stem
    if not PRESET_NAME.fullmatch(name):
        raise ValueError(f"(file name): {name!r} is not a preset name (a-z, 0-9, - and _)")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"(syntax): {error}") from None
    try:
        parsed = PresetFile.model_validate(data)
    except ValidationError as error:
        raise ValueError(_first_problem(error)) from None
    if not parsed.knobs and not parsed.restore_originals:
        raise ValueError("knobs: a preset needs at least one [knobs.NAME] table")
    settings = tuple(_setting(knob_name, table) for knob_name, table in parsed.knobs.items())
    return Preset(name, parsed.summary, settings, parsed.restore_originals, source)


def _setting(knob_name: str, table: KnobFile) -> Setting:
    key = f"knobs.{knob_name}"
    knob = CATALOGUE.get(knob_name)
    if knob is None:
        raise ValueError(f"{key}: unknown knob (known: {', '.join(sorted(CATALOGUE))})")
    if table.value == AUTO and knob_name in AUTO_KNOBS:
        return Setting(knob_name, AUTO, table.reason)
    try:
        return Setting(knob_name, knob.validate(table.value), table.reason)
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

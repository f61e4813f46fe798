"""app/tuning/planning/presets.py: preset files are checked against their pydantic models; an error names
the file and the key, and the other presets still load."""

from pathlib import Path

import pytest

from app.resources import data_dir
from app.tuning.planning.presets import AUTO, load_all, load_file


def preset_file(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


GOOD_KNOB = '[knobs.read_ahead_kb]\nvalue = 4096\nreason = "longer read-ahead"\n'


def test_every_built_in_preset_loads():
    presets, errors = load_all(data_dir("presets"), None)
    assert errors == []
    assert set(presets) == {"stock", "balanced", "boost", "quiet"}
    assert presets["stock"].restore_originals
    assert all(s.reason for p in presets.values() for s in p.settings)


def test_a_valid_file_becomes_a_preset(tmp_path):
    text = (
        'summary = "  mine  "\n'
        + GOOD_KNOB
        + '[knobs.stripe_cache_size]\nvalue = "auto"\nreason = "fit"\n'
        + '[knobs.sync_speed_min]\nvalue = "system"\nreason = "back to the global"\n'
    )
    preset = load_file(preset_file(tmp_path, "mine", text), "user")
    assert (preset.name, preset.summary, preset.source) == ("mine", "mine", "user")
    assert [(s.knob, s.value) for s in preset.settings] == [
        ("read_ahead_kb", "4096"),
        ("stripe_cache_size", AUTO),
        ("sync_speed_min", "system"),
    ]


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ('summary = "x"\nsumary = "typo"\n' + GOOD_KNOB, "sumary", "unknown key"),
        (
            'summary = "x"\n[knobs.read_ahead_kb]\nvalue = 8\nreason = "r"\nreson = "typo"\n',
            "knobs.read_ahead_kb.reson",
            "unknown key",
        ),
        ('summary = "x"\nknobs = 3\n', "knobs", "must be a table"),
        (
            'summary = "x"\n[knobs.read_ahead_kb]\nvalue = 8\n',
            "knobs.read_ahead_kb.reason",
            "missing: every knob says why",
        ),
        (GOOD_KNOB, "summary", "missing: say in one line what it is for"),
        ('summary = "   "\n' + GOOD_KNOB, "summary", "missing: say in one line what it is for"),
        (
            'summary = "x"\nrestore_originals = "yes"\n',
            "restore_originals",
            "must be true or false",
        ),
        (
            'summary = "x"\n[knobs.read_ahead_kb]\nvalue = true\nreason = "r"\n',
            "knobs.read_ahead_kb.value",
            "must be an integer",
        ),
        (
            'summary = "x"\n[knobs.read_ahead_kb]\nvalue = 4.5\nreason = "r"\n',
            "knobs.read_ahead_kb.value",
            "must be an integer",
        ),
        (
            'summary = "x"\n[knobs.read_ahead_kb]\nvalue = 5\nreason = "r"\n',
            "knobs.read_ahead_kb.value",
            "read_ahead_kb: 5 is not a multiple of 4",
        ),
        (
            'summary = "x"\n[knobs.read_ahead_kb]\nvalue = "auto"\nreason = "r"\n',
            "knobs.read_ahead_kb.value",
            "read_ahead_kb: 'auto' is not an integer",
        ),
        ('summary = "x"\n', "knobs", "a preset needs at least one [knobs.NAME] table"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(tmp_path, text, key, message):
    with pytest.raises(ValueError) as refused:
        load_file(preset_file(tmp_path, "bad", text), "user")
    assert str(refused.value) == f"{key}: {message}"


def test_the_error_names_the_file_and_the_key_and_the_rest_load(tmp_path, caplog):
    user = tmp_path / "user"
    user.mkdir()
    typo = preset_file(user, "typo", 'summary = "x"\nrestore_original = true\n' + GOOD_KNOB)
    preset_file(user, "fine", 'summary = "fine"\n' + GOOD_KNOB)
    presets, errors = load_all(data_dir("presets"), user)
    assert [str(e) for e in errors] == [f"preset file {typo}: restore_original: unknown key"]
    assert "fine" in presets and "typo" not in presets
    assert f"preset file {typo}: restore_original: unknown key" in caplog.text

"""Where a preset goes: only arrays /proc/mdstat lists, by names host.py accepts."""

import pytest

from app.tuning.planning.targets import PlanError
from tests.tuning.tuners import make_tuner


@pytest.mark.parametrize("name", ["../../etc", "md0/../../x", "sda", "md", "md2 ", "MD2", "md99"])
def test_bad_array_names_change_nothing(box, tmp_path, name):
    before = box.snapshot()
    tuner = make_tuner(box, tmp_path)
    with pytest.raises(PlanError, match="no array named"):
        tuner.apply("boost", [name])
    assert box.snapshot() == before

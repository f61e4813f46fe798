"""The boost estimate never contradicts the README: a kernel generation the estimate has a clean
bench figure for shows that very ratio in the README's table, and one without says "not yet
measured cleanly" there."""

import re

from app.forecast.boost import CLEAN_BENCH
from app.forecast.physics import kernel_generation
from tests import PROJECT_ROOT


def readme_boost_cells() -> dict[str, str]:
    """The boost column of the README's table, by kernel generation."""
    cells = {}
    for line in (PROJECT_ROOT / "README.md").read_text().splitlines():
        found = re.match(r"\| (\d+\.\d+[.\d]*)[^|]*\|[^|]*\|([^|]*)\|", line)
        if found:
            cells[kernel_generation(found[1]) or ""] = found[2]
    return cells


def test_each_kernel_in_the_readme_has_the_estimates_figure_or_none():
    cells = readme_boost_cells()
    assert set(cells) == {"5.10", "6.1", "6.12"}
    for generation, cell in cells.items():
        bench = CLEAN_BENCH.get(generation)
        if bench is None:
            assert "not yet measured cleanly" in cell, (generation, cell)
        else:
            assert f"{bench.ratio:.2f}x" in cell, (generation, cell)
    for generation, bench in CLEAN_BENCH.items():
        row = next(
            line
            for line in (PROJECT_ROOT / "README.md").read_text().splitlines()
            if line.startswith(f"| {bench.release}")
        )
        assert bench.date in row and generation in bench.release

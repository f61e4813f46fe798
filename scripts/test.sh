#!/bin/sh
# Sets up .venv with the test tools and runs every check: ruff, mypy, the import layers, pytest.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh test
. .venv/bin/activate
ruff check .
ruff format --check .
mypy
lint-imports
# Two processes (pytest-xdist): the tests that boot QEMU one after another in one, the rest in
# the other, a module at a time (tests/conftest.py groups them); the whole CI run fits its budget.
exec pytest -n 2 --dist loadscope --no-loadscope-reorder "$@"

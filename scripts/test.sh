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
exec pytest "$@"

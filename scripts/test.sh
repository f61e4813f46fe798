#!/bin/sh
# Sets up .venv with the test tools and runs every check: ruff, mypy, the import layers, pytest.
# As root (and always with CI=true) the tests install the Debian tools they need when missing
# (chromium, prometheus, faketime, qemu, podman, buildah), and say so first. With
# MDBOOST_TEST_NO_INSTALL=1 nothing is installed: the tests that need a missing tool skip and
# say which. Arguments go to pytest (sh scripts/test.sh tests/web -x).
set -eu
cd "$(dirname "$0")/.."

missing=
command -v chromium >/dev/null || missing="$missing chromium"
command -v promtool >/dev/null || missing="$missing prometheus"
ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || missing="$missing faketime"
command -v qemu-system-x86_64 >/dev/null || missing="$missing qemu-system-x86"
command -v debootstrap >/dev/null || missing="$missing debootstrap"
command -v podman >/dev/null || missing="$missing podman"
command -v buildah >/dev/null || missing="$missing buildah"
if [ -n "$missing" ]; then
  if [ "${MDBOOST_TEST_NO_INSTALL:-}" = 1 ]; then
    echo "test.sh: MDBOOST_TEST_NO_INSTALL=1: installing nothing; the tests needing$missing skip"
  elif [ "${CI:-}" = true ] || [ "$(id -u)" = 0 ]; then
    echo "test.sh: the tests will install with apt-get:$missing (and what they need)."
    echo "test.sh: to install nothing and skip those tests: MDBOOST_TEST_NO_INSTALL=1 sh scripts/test.sh"
  else
    echo "test.sh: not root, installing nothing; the tests needing$missing skip"
  fi
fi

sh scripts/setup.sh test
. .venv/bin/activate
ruff check .
ruff format --check .
mypy
lint-imports
# Two processes (pytest-xdist): the tests that boot QEMU one after another in one, the rest in
# the other, a module at a time (tests/conftest.py groups them); the whole CI run fits its budget.
exec pytest -n 2 --dist loadscope --no-loadscope-reorder "$@"

#!/bin/sh
# Creates .venv in the repository root and installs mdboost (and, with "test", its test tools).
# Dependencies come from the hash-locked files (pip-compile --generate-hashes: requirements.lock
# for running, requirements-test.lock for running and testing), then mdboost itself without
# dependencies. Idempotent: reinstalls only when pyproject.toml or a lock changed.
set -eu
cd "$(dirname "$0")/.."
extra=${1:-}
# Debian's own python3 when present, so the venv also runs inside the real-kernel test VM.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if ! [ -x .venv/bin/python ]; then
  if ! "$py" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "setup: installing python3-venv (Debian ships venv separately)"
      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
      "$py" -m venv .venv
    else
      echo "setup: '$py -m venv' failed; on Debian run: sudo apt-get install python3-venv" >&2
      exit 1
    fi
  fi
fi
lock=requirements.lock
[ -n "$extra" ] && lock=requirements-test.lock
stamp=".venv/.installed-$(cat pyproject.toml "$lock" | cksum | cut -d' ' -f1)-$extra"
if ! [ -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q --require-hashes --no-deps -r "$lock"
  .venv/bin/python -m pip install -q --no-deps -e .
  rm -f .venv/.installed-*
  touch "$stamp"
fi

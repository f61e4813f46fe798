#!/bin/sh
# Creates .venv in the repository root and installs mdboost (and, with "test", its test tools).
# Idempotent: reinstalls only when pyproject.toml or constraints.txt changed.
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
stamp=".venv/.installed-$(cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)-$extra"
if ! [ -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  if [ -n "$extra" ]; then
    .venv/bin/python -m pip install -q -c constraints.txt -e ".[$extra]"
  else
    .venv/bin/python -m pip install -q -c constraints.txt -e .
  fi
  rm -f .venv/.installed-*
  touch "$stamp"
fi

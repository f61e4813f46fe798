#!/bin/sh
# Sets up .venv and runs mdboost: on a real md host it serves the real arrays,
# without /proc/mdstat it serves the built-in simulated Synology box.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
if [ -r "${MDBOOST_PROC_ROOT:-/proc}/mdstat" ]; then
  exec .venv/bin/mdboost serve "$@"
else
  echo "run: no ${MDBOOST_PROC_ROOT:-/proc}/mdstat here: starting the simulated array (mdboost demo)"
  exec .venv/bin/mdboost demo "$@"
fi

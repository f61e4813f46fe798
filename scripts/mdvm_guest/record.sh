#!/bin/bash
# Guest script for ../shared/tools/mdvm/run.sh (run by scripts/record_real5s.py): records one
# real md run as $IN/scenario.json says; results go to $OUT (the host's run dir /out).
set -u
uname -r > "$OUT/kernel.txt"
mdadm --version > "$OUT/mdadm.txt" 2>&1
python3 "$IN/mdrec.py" "$IN/scenario.json" "$OUT"

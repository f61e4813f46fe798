#!/bin/bash
# Guest script for ../shared/tools/mdvm (run by scripts/record_real_runs.py): records real md
# runs on HDD-like throttled disks for the forecast backtest.
# Each run is one sampler phase (1 Hz, sampler.py from mdvm's guest dir); tuning changes are
# appended to $OUT/events-<phase>.txt as "<unix seconds> <kind>". Runs:
#   grow-steady      raid5 3->4 grow, DSM-like defaults, nothing else
#   grow-bursts      the same with competing reads now and then
#   grow-changes     starts throttled, boost applied, later reverted to defaults; bursts too
#   recovery-steady  raid5 recovery of one disk held at speed_limit_max
#   recovery-changes recovery throttled, then boosted; bursts too
set -u
OUT=${OUT:-/tmp/out}; IN=${IN:-$(dirname "$0")}
D=(/dev/vda /dev/vdb /dev/vdc /dev/vdd)
SYS=/sys/block/md0/md
RUNS=${RUNS:-grow-steady grow-bursts grow-changes recovery-steady recovery-changes}

phase() { echo "$1" > /tmp/phase; echo "### $(date +%T) $1"; }
event() { echo "$(date +%s.%N) $2" >> "$OUT/events-$1.txt"; echo "  $(date +%T) event $2"; }
limits() { echo "$1" > /proc/sys/dev/raid/speed_limit_min; echo "$2" > /proc/sys/dev/raid/speed_limit_max; }
busy() { [ "$(cat $SYS/sync_action 2>/dev/null)" != idle ] || grep -qE 'resync|recovery|reshape' /proc/mdstat; }
wait_done() { sleep 1; while busy; do sleep 1; done; sleep 3; }
fresh() {
  mdadm --stop /dev/md0 >/dev/null 2>&1
  for d in "${D[@]}"; do mdadm --zero-superblock "$d" >/dev/null 2>&1; done
  mdadm --create /dev/md0 --run --level=5 --chunk=64 --raid-devices=3 --assume-clean \
    "${D[0]}" "${D[1]}" "${D[2]}" >/dev/null 2>&1
  echo 256 > $SYS/stripe_cache_size
}
grow() {
  mdadm /dev/md0 --add "${D[3]}" >/dev/null 2>&1
  mdadm --grow /dev/md0 --raid-devices=4 >/dev/null 2>&1 ||
    mdadm --grow /dev/md0 --raid-devices=4 --backup-file=/tmp/md0-grow.backup
}
recover() {
  mdadm /dev/md0 --fail "${D[2]}" >/dev/null 2>&1; mdadm /dev/md0 --remove "${D[2]}" >/dev/null 2>&1
  mdadm --zero-superblock "${D[2]}" >/dev/null 2>&1; mdadm /dev/md0 --add "${D[2]}" >/dev/null 2>&1
}
bursts() {  # competing reads of 10-25 s every 20-50 s until $1 exists
  while [ ! -e "$1" ]; do
    sleep $((20 + RANDOM % 30)); [ -e "$1" ] && break
    timeout $((10 + RANDOM % 15)) dd if=/dev/md0 of=/dev/null bs=1M iflag=direct \
      skip=$((RANDOM % 512)) 2>/dev/null
  done
}
boost() { limits 50000 200000; echo 16384 > $SYS/stripe_cache_size; }
defaults() { limits 10000 200000; echo 256 > $SYS/stripe_cache_size; }

cp "$IN/sampler.py" /tmp/sampler.py
phase idle
python3 /tmp/sampler.py "$OUT" /tmp/phase /tmp/sampler.stop &
SAMPLER=$!
uname -r > "$OUT/kernel.txt"
for run in $RUNS; do
  fresh; defaults; rm -f /tmp/bursts.stop; BP=
  case $run in
    grow-steady) phase $run; grow; wait_done ;;
    grow-bursts) phase $run; grow; bursts /tmp/bursts.stop & BP=$!; wait_done ;;
    grow-changes)
      limits 1000 3000; phase $run; grow; bursts /tmp/bursts.stop & BP=$!
      sleep 60; boost; event $run apply
      while busy && awk '{exit !($1 / $3 < 0.5)}' $SYS/sync_completed 2>/dev/null; do sleep 1; done
      defaults; event $run revert
      wait_done ;;
    recovery-steady) limits 1000 6000; recover; phase $run; wait_done ;;
    recovery-changes)
      limits 1000 3000; recover; phase $run; bursts /tmp/bursts.stop & BP=$!
      sleep 60; limits 5000 10000; event $run apply
      wait_done ;;
  esac
  touch /tmp/bursts.stop; [ -n "$BP" ] && wait "$BP"
  phase idle
  echo "$run done"
done
touch /tmp/sampler.stop; wait $SAMPLER

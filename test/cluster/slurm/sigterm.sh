#!/bin/sh
# The clean end on a signal: tl-driver runs long sleep tasks on 3 Slurm executors; this script
# sends it SIGTERM once they run. The driver gives up (exit 1: the jobs did not finish), sends
# STOP, has the launcher cancel whatever has not ended, and waits for Slurm to confirm every end:
# afterwards no job of the run is left in squeue, no tl-executor process runs, and no executor
# had to be stopped by force.
#
#   sigterm.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when all of that holds; 77 (skipped) as scancel.sh; 1 otherwise.
set -u
dir=$1
name=sigterm.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
trap slurm_cleanup EXIT
slurm_setup

# shellcheck disable=SC2046
"$dir/tl-driver" $(slurm_driver_args) --executors 3 --executor-cores 2 \
  --job sleep:20000:12 --timeout-s 120 >"$tmp/out" 2>"$tmp/err" &
drv=$!
read_port
wait_registered 3 || fail "3 executors did not register"
[ "$(run_jobs R | wc -l)" -eq 3 ] || fail "3 running jobs expected in squeue"
sleep 0.5
kill -TERM "$drv"
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 1 ] || fail "the driver exited with status $rc, not 1 (it gave up)"
grep -q 'giving up: signalled' "$tmp/err" || fail "the driver did not say it gave up on the signal"
check "the run gave up" '.gave_up == true and .ok == false'
check "no executor stopped by force" '.executors.stopped_by_force == 0'
check "3 executors started" '.executors.started == 3'
check_nothing_left
exit 0

#!/bin/sh
# (d) Dynamic allocation with Slurm executors: from 1 executor (--min-executors 1), a backlog of
# 800 sleep:20 tasks grows the allocation to --max-executors 4 (each a Slurm job); the last
# stage's one long task leaves three idle, which are released (STOP: their jobs complete with
# exit 0) back to 1. Every task ran exactly once: no retry, no loss; nothing left in squeue.
#
#   dynamic.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the JSON summary says what it must; 77 (skipped) as scancel.sh; 1
# otherwise.
set -u
dir=$1
name=dynamic.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
trap slurm_cleanup EXIT
slurm_setup

# shellcheck disable=SC2046
"$dir/tl-driver" $(slurm_driver_args) --executor-cores 2 --min-executors 1 --max-executors 4 \
  --backlog-timeout 100 --idle-timeout 500 --job sleep:20:800,sleep:3000:1 --timeout-s 120 \
  >"$tmp/out" 2>"$tmp/err" &
drv=$!
read_port
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
check "ok" '.ok == true and .launcher == "slurm"'
check "dynamic allocation 1..4" '.dynamic_allocation.min == 1 and .dynamic_allocation.max == 4'
check "grew to 4 and shrank to 1" \
  '.executors | .started == 4 and .most_active == 4 and .released == 3 and .active_at_end == 1 and
   .stopped_by_force == 0 and .lost == 0'
check "every task ran exactly once" \
  '.tasks == {"succeeded": 801, "launched": 801, "retries": 0} and
   .tl_stats.launched == 801 and .tl_stats.succeeded == 801'
check "no loss" '(.lost_executors | length) == 0'
check_drained
check_nothing_left
exit 0

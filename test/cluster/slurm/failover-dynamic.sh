#!/bin/sh
# Driver failover with dynamic allocation on Slurm (docs/cluster.md "Driver failover"): tl-driver
# --launcher slurm --state-dir with --min-executors 1 --executors 2 --max-executors 4 runs a
# 3-stage job: one 1.5 s task (an idle executor is released: its job ends), 3,000 sleep:5 tasks
# (the backlog submits more executors' jobs) and one 1.5 s task again. Once a third executor has
# registered, this script kills the driver with SIGKILL and starts it again with the same command
# line and state directory. The restarted driver takes back the jobs of the executors that were
# running, every one reconciles, none is lost, it releases the idle ones at the end (their jobs
# end as requested), and it leaves nothing in squeue.
#
#   failover-dynamic.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the JSON summary says what it must; 77 (skipped) without the cluster of
# test/cluster/slurm/cluster.sh, jq, or a tl-driver with --launcher slurm; 1 otherwise.
set -u
dir=$1
name=failover-dynamic.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
trap slurm_cleanup EXIT
slurm_setup

run_driver() {
  # shellcheck disable=SC2046 # the common options are separate words
  "$dir/tl-driver" $(slurm_driver_args) --min-executors 1 --executors 2 --max-executors 4 \
    --executor-cores 2 --backlog-timeout 200 --idle-timeout 500 --state-dir "$tmp/state" \
    --recovery-timeout-ms 30000 --pending-loss-timeout-ms 60000 \
    --job sleep:1500:1,sleep:5:3000,sleep:1500:1 --timeout-s 120 >"$tmp/out" 2>"$tmp/err" &
  drv=$!
}

run_driver
read_port
wait_for "$tmp/err" 'releasing exec-[12]: idle' 600 || fail "no executor was released"
wait_registered 3 || fail "no third executor registered"
sleep 0.5
crash_driver
[ "$(run_jobs R | wc -l)" -ge 1 ] || fail "no executor's job runs on without a driver"

restart_driver
check "recovered from the newest record, every executor reconciled" \
  '.recovery.from == "state" and .recovery.done and .recovery.executors_to_reconcile >= 2 and
   .recovery.reconciled == .recovery.executors_to_reconcile and .recovery.recovery_timeouts == 0'
# Taken back: every executor's job the record holds, those submitted but not registered yet at the
# kill included (they register with the restarted driver afresh, nothing to reconcile).
check "the slurm launcher took back the job of every executor to reconcile" \
  '.recovery.launcher_adopted >= .recovery.executors_to_reconcile and
   .recovery.launcher_adopted <= 4'
check "the job succeeded" '.jobs == {"succeeded": 1, "failed": 0}'
check "3002 tasks succeeded" '.tasks.succeeded == 3002'
check "no executor lost" '.executors.lost == 0 and (.lost_executors | length) == 0'
check "one released before the crash, more after it, never more than 4 at once" \
  '.executors.released >= 2 and .executors.most_active <= 4 and .executors.active_at_end == 1'
check_drained
[ -e "$tmp/state/state" ] && fail "the finished run left its record"
check_nothing_left
jq -c '[.recovery, .executors]' "$tmp/summary.json"
exit 0

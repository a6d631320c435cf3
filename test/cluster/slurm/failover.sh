#!/bin/sh
# Driver failover on Slurm (docs/cluster.md "Driver failover"): tl-driver --launcher slurm
# --state-dir runs a 2-stage job of 2,000 sleep:5 tasks each on 4 Slurm executors (2 cores each);
# once they run tasks, this script kills the driver with SIGKILL and, while no driver runs,
# cancels exec-2's job (scancel --signal=KILL). Then it starts the driver again with the same
# command line and state directory. The restarted driver takes the 4 jobs back by the job ids in
# its record, the 3 live executors reconcile, and exec-2's loss comes from Slurm's account
# (CANCELLED, not by the driver), not from the recovery timeout. The job succeeds, the ledger
# drains, and nothing of the run is left in squeue or running.
#
#   failover.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the JSON summary says what it must; 77 (skipped) without the cluster of
# test/cluster/slurm/cluster.sh, jq, or a tl-driver with --launcher slurm; 1 otherwise.
set -u
dir=$1
name=failover.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
trap slurm_cleanup EXIT
slurm_setup

run_driver() {
  # shellcheck disable=SC2046 # the common options are separate words
  "$dir/tl-driver" $(slurm_driver_args) --executors 4 --executor-cores 2 \
    --state-dir "$tmp/state" --recovery-timeout-ms 30000 --pending-loss-timeout-ms 60000 \
    --job sleep:5:2000,sleep:5:2000 --timeout-s 120 >"$tmp/out" 2>"$tmp/err" &
  drv=$!
}

run_driver
read_port
wait_registered 4 || fail "4 executors did not register"
sleep 1
crash_driver
[ "$(run_jobs R | wc -l)" -eq 4 ] || fail "the 4 executors' jobs do not run on without a driver"
job=$(job_of exec-2)
[ -n "$job" ] || fail "no running job for exec-2 in squeue"
scancel --signal=KILL "$job" || fail "scancel of job $job failed"

restart_driver
check "recovered from the newest record, every executor reconciled or lost" \
  '.recovery.from == "state" and .recovery.done and .recovery.executors_to_reconcile == 4 and
   .recovery.reconciled == 3'
check "the slurm launcher took the 4 jobs back" '.recovery.launcher_adopted == 4'
check "no executor lost to the recovery timeout" '.recovery.recovery_timeouts == 0'
check "the job succeeded" '.jobs == {"succeeded": 1, "failed": 0}'
check "4000 tasks succeeded" '.tasks.succeeded == 4000'
check "one lost executor, exec-2" \
  '(.lost_executors | length) == 1 and .lost_executors[0].id == "exec-2"'
check "Slurm's reason: CANCELLED, not by the driver, not the app's" \
  '.lost_executors[0] | .reason_kind == "TL_LOSS_PROCESS_LOST" and .caused_by_app == false and
   (.reason | test("CANCELLED \\(not by the driver\\)")) and
   (.reason_source == "squeue --json" or .reason_source == "scontrol show job")'
check "no pending-loss timeout" '.tl_stats.pending_loss_timeouts == 0'
check_drained
[ -e "$tmp/state/state" ] && fail "the finished run left its record"
check_nothing_left
jq -c '[.recovery, .lost_executors[0]]' "$tmp/summary.json"
exit 0

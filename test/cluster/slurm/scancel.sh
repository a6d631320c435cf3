#!/bin/sh
# (a) An executor's Slurm job cancelled from outside mid-stage: tl-driver runs a 2-stage job of
# 2,000 sleep:5 tasks each on 4 Slurm executors (2 cores each, max_task_failures 1); once they
# run tasks, this script finds one executor's job with squeue and runs `scancel --signal=KILL`
# on it. The closed connection is the first phase of the loss; the second comes from Slurm's
# account (CANCELLED, not by the driver: TL_LOSS_PROCESS_LOST, not the app's, so nothing counts
# toward max_task_failures 1), long before the 60 s pending-loss timeout. The job succeeds.
#
#   scancel.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the JSON summary says what it must; 77 (skipped) without the cluster of
# test/cluster/slurm/cluster.sh, jq, or a tl-driver with --launcher slurm; 1 otherwise. Nothing of
# this run is left in squeue or running, on any path.
set -u
dir=$1
name=scancel.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
trap slurm_cleanup EXIT
slurm_setup

# shellcheck disable=SC2046 # the common options are separate words
"$dir/tl-driver" $(slurm_driver_args) --executors 4 --executor-cores 2 --max-task-failures 1 \
  --pending-loss-timeout-ms 60000 --job sleep:5:2000,sleep:5:2000 --expect-losses 1 \
  --timeout-s 120 >"$tmp/out" 2>"$tmp/err" &
drv=$!
read_port
wait_registered 4 || fail "4 executors did not register"
sleep 0.5
job=$(job_of exec-2)
[ -n "$job" ] || fail "no running job for exec-2 in squeue"
scancel --signal=KILL "$job" || fail "scancel of job $job failed"
wait "$drv"
rc=$?
drv=''
check_verdict_allowing_outside_losses "$rc"
check "launcher slurm" '.launcher == "slurm"'
check "the job succeeded" '.jobs == {"succeeded": 1, "failed": 0}'
check "4000 tasks succeeded" '.tasks.succeeded == 4000'
check "one lost executor, exec-2" \
  '(.lost_executors | length) == 1 and .lost_executors[0].id == "exec-2"'
# shellcheck disable=SC2016 # $l is jq's
check "both phases: pending, then Slurm's reason (or the reason alone, before the close)" \
  '.lost_executors[0] as $l |
   ($l.phases_seen == ["pending", "process_lost"] and $l.detected_by == "connection closed") or
   ($l.phases_seen == ["process_lost"] and $l.detected_by == "launcher end")'
check "Slurm's reason: CANCELLED, not by the driver, not the app's" \
  '.lost_executors[0] | .reason_kind == "TL_LOSS_PROCESS_LOST" and .caused_by_app == false and
   (.reason | test("CANCELLED \\(not by the driver\\)")) and
   (.reason_source == "squeue --json" or .reason_source == "scontrol show job")'
check "no pending-loss timeout" '.tl_stats.pending_loss_timeouts == 0'
check_drained
check_nothing_left
jq -c '.lost_executors[0]' "$tmp/summary.json"
exit 0

#!/bin/sh
# (e) SPARK-18553 with Slurm executors: max_task_failures 1, two executors of 5 cores; during the
# result stage this script kills exec-1's process with SIGKILL (not through Slurm). Slurm records
# the job as FAILED by signal 9: TL_LOSS_EXITED 137, the app's, so its RUNNING attempts count:
# the stage and the job fail, the survivor's zombie attempts end afterwards, the ledger drains
# and every task set's payload is handed back (taskset_released for both stages).
#
#   spark18553.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the JSON summary says what it must; 77 (skipped) as scancel.sh; 1
# otherwise.
set -u
dir=$1
name=spark18553.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
trap slurm_cleanup EXIT
slurm_setup

# shellcheck disable=SC2046
"$dir/tl-driver" $(slurm_driver_args) --executors 2 --executor-cores 5 --max-task-failures 1 \
  --pending-loss-timeout-ms 60000 --job noop:100,sleep:500:400 --expect-losses 1 \
  --expect-job-failure --timeout-s 120 >"$tmp/out" 2>"$tmp/err" &
drv=$!
read_port
wait_registered 2 || fail "2 executors did not register"
# Stage 1 (noop) is over within the second; stage 2 runs 10 tasks of 500 ms at a time for 20 s.
# Only attempts that reported RUNNING count (Spark's rule), and exec-1's 5 start and end
# together: with tasks of 50 ms a kill fell now and then in the millisecond in which all 5 were
# launched and none had said it runs, and then nothing counted; with 500 ms that window is a
# tenth as likely.
sleep 1
victim=$(pgrep -f -- "tl-executor .*--port $port --id exec-1 " | head -1)
[ -n "$victim" ] || fail "exec-1's process not found"
kill -KILL "$victim"
wait "$drv"
rc=$?
drv=''
check_verdict_allowing_outside_losses "$rc"
check "the job failed" '.jobs == {"succeeded": 0, "failed": 1}'
check "exec-1: killed by signal 9 as Slurm says, the app's" \
  '(.lost_executors | length) == 1 and (.lost_executors[0] | .id == "exec-1" and
    .reason_kind == "TL_LOSS_EXITED" and .exit_code == 137 and .caused_by_app == true and
    (.reason | test("killed by signal 9")) and
    (.reason_source == "squeue --json" or .reason_source == "scontrol show job"))'
check "both task sets released (payloads handed back)" '.tl_stats.tasksets_released == 2'
grep -q 'stage 2: [^(]*FAILED ([0-9]* succeeded, [1-9][0-9]* failed attempts, [1-9][0-9]* counted; [1-9][0-9]* finished as zombies' \
  "$tmp/out" || fail "the result stage did not fail with counted failures and zombies"
check_drained
check_nothing_left
exit 0

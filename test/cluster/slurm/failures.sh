#!/bin/sh
# (b) Which executor ends count toward max_task_failures (1 here) with Slurm executors:
#   1. crash tasks: the executor exits 42; Slurm says FAILED 42:0: TL_LOSS_EXITED 42, the app's:
#      the stage and the job fail.
#   2. --kill-executor-after: the driver cancels exec-1 (scancel --signal=KILL): TL_LOSS_KILLED,
#      requested, not the app's: the job succeeds.
#   3. --external-kill-after: the same scancel, not as the driver: Slurm says CANCELLED (not by
#      the driver): TL_LOSS_PROCESS_LOST, not the app's: the job succeeds.
#
#   failures.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when each run's JSON summary says what it must; 77 (skipped) as scancel.sh; 1
# otherwise.
set -u
dir=$1
name=failures.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
trap slurm_cleanup EXIT
slurm_setup

run() { # run ARGS...: the driver with the common options; its status in $rc
  rm -f "$tmp/summary.json"
  # Emptied here, not by the child's redirection: read_port must not find the previous run's
  # port before the new driver's shell truncates the file.
  : >"$tmp/out"
  : >"$tmp/err"
  # shellcheck disable=SC2046
  "$dir/tl-driver" $(slurm_driver_args) --max-task-failures 1 --timeout-s 90 "$@" \
    >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  read_port
  wait "$drv"
  rc=$?
  drv=''
  [ "$rc" -eq 0 ] || fail "the driver exited with status $rc ($*)"
}

# 1. An exit code from the app counts.
run --executors 3 --executor-cores 2 --job noop:50,crash:4 --expect-job-failure
check "crash: the job failed" '.jobs == {"succeeded": 0, "failed": 1}'
check "crash: an executor exited 42, the app's, as Slurm says" \
  '[.lost_executors[] | select(.reason_kind == "TL_LOSS_EXITED" and .exit_code == 42 and
    .caused_by_app == true and (.reason | test("FAILED: exited 42")) and
    (.reason_source == "squeue --json" or .reason_source == "scontrol show job"))] | length >= 1'
grep -q 'stage 2: crash x 4: FAILED ([0-9]* succeeded, [1-9][0-9]* failed attempts, [1-9][0-9]* counted' \
  "$tmp/out" || fail "crash: no failure counted toward max_task_failures"
check "crash: the ledger saw the failures" '.tl_stats.failed >= 1'
check_drained
check_nothing_left

# 2. A kill by the driver does not count.
run --executors 3 --executor-cores 2 --job sleep:5:1500,sleep:5:1500 --kill-executor-after 300 \
  --expect-losses 1
check "driver kill: the job succeeded" '.jobs == {"succeeded": 1, "failed": 0}'
! grep -q ' [1-9][0-9]* counted;' "$tmp/out" || fail "driver kill: a failure was counted"
check "driver kill: exec-1 killed by the driver, requested, not the app's" \
  '(.lost_executors | length) == 1 and (.lost_executors[0] | .id == "exec-1" and
    .reason_kind == "TL_LOSS_KILLED" and .caused_by_app == false and
    (.reason | test("cancelled by the driver")))'
check_drained
check_nothing_left

# 3. A cancel from outside does not count.
run --executors 3 --executor-cores 2 --job sleep:5:1500,sleep:5:1500 --external-kill-after 300 \
  --expect-losses 1
check "outside cancel: the job succeeded" '.jobs == {"succeeded": 1, "failed": 0}'
! grep -q ' [1-9][0-9]* counted;' "$tmp/out" || fail "outside cancel: a failure was counted"
check "outside cancel: exec-1 lost, CANCELLED not by the driver, not the app's" \
  '(.lost_executors | length) == 1 and (.lost_executors[0] | .id == "exec-1" and
    .reason_kind == "TL_LOSS_PROCESS_LOST" and .caused_by_app == false and
    (.reason | test("CANCELLED \\(not by the driver\\)")))'
check_drained
check_nothing_left
exit 0

#!/bin/sh
# Driver failover (docs/cluster.md "Driver failover"): tl-driver --state-dir runs a 3-stage job of
# 22,000 `sleep` tasks on 3 executors; the script kills it with SIGKILL at a moment drawn from
# SEED, then starts it again with the same command line and state directory. The executors keep
# running their tasks, reconnect and reconcile; the restarted driver must finish the job (every
# index succeeded exactly once as the driver's DAG layer counts: its summary says "OK" only then),
# say that it recovered, drain the ledger, and leave no tl-executor behind.
#
#   failover.sh DIR SEED MOMENTS [MODE]   DIR holds tl-driver and tl-executor; MOMENTS kills, one
#                                         run each; MODE:
#     plain         the driver alone is killed (the default)
#     executor      an executor is killed too, during the outage: the restarted driver loses it
#                   to the recovery timeout and runs its tasks again elsewhere
#     torn          the driver kills itself halfway through writing a record (its 20th), so that
#                   state.tmp is torn: recovery reads state, never state.tmp
#     linked        the driver kills itself between the link and the rename of a write (its
#                   20th): state is still the older record, and recovery reads it
#     corrupt       after the kill a byte of state is flipped: recovery falls back to state.prev
#                   (or to state.tmp, whole, when the kill came between the renames of a write)
#     refused       after the kill a restart with other jobs is refused, then both records
#                   are cut short: the restart refuses, with its message, and starts nothing
#     adopt         records only at registrations, stage boundaries and tid reservations
#                   (--snapshot-ms of an hour): the newest record is old, and the executors
#                   name hundreds of attempts it does not hold; the restored ledger adopts each
#                   one whose task set it holds with its index pending, so none runs again
#     dynamic       dynamic allocation (1 to 4 executors, 2 at first) on a 5-stage job of 22,002
#                   tasks whose first and last stages are one 800 ms task each: executors are
#                   released while it runs and started for the backlog of the middle stages,
#                   before the kill and after the restart; no task runs twice
#     release       the same job and allocation; the driver kills itself inside the write of
#                   the record that holds its first release, before the release's STOP went
#                   out: the released executor runs on, and the restart, from the record before,
#                   reconciles it (it loses no executor to the recovery timeout)
#     released      the same, the kill inside the write after that one: the release is in the
#                   record and its STOP went out, so the executor is gone; the restart removes it
#                   as released at once (again, no executor lost to the recovery timeout)
#
# Launches never wait for a record (records are written off the loop every --snapshot-ms), but
# a new stage's first launches wait for the record that holds its task set: recovered from the
# newest record, with no executor killed, the restored ledger adopts every attempt launched
# after it (RECONCILE names each with its task set, index and attempt), so no task runs twice:
# the executors start exactly the job's 22,000.
#
# Exit status: 0 when every run was as it must be, 1 otherwise. No process is left behind.
set -u
dir=$1
seed=$2
moments=$3
mode=${4:-plain}
tmp=$(mktemp -d)
name="failover.sh ($mode)"
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_all() {
  kill_port_executors
  cleanup
}
trap cleanup_all EXIT

# The n-th number of a small linear congruential sequence from the seed, in [0, $2).
draw() {
  echo $(((seed * 1103515245 + $1 * 12345 + 7919) % 2147483648 % $2))
}

state="$tmp/state"
executors='--executors 3'
jobs='sleep:2:8000,sleep:1:8000,sleep:2:6000'
tasks=22000
last=exec-3 # the executor whose registration starts the clock of the kill
dynamic=0 # dynamic allocation, and its job
case $mode in dynamic | release | released) dynamic=1 ;; esac
if [ "$dynamic" -eq 1 ]; then
  executors='--min-executors 1 --executors 2 --max-executors 4 --backlog-timeout 150
    --idle-timeout 300'
  jobs="sleep:800:1,$jobs,sleep:800:1"
  tasks=22002
  last=exec-2
fi
args="$executors --cores 4 --job $jobs --state-dir $state --snapshot-ms 100 --heartbeat-ms 200
  --recovery-timeout-ms 3000 --pending-loss-timeout-ms 2000 --timeout-s 120"

run=0
while [ "$run" -lt "$moments" ]; do
  run=$((run + 1))
  rm -rf "$state"
  : >"$tmp/out"
  : >"$tmp/err1"
  extra=''
  case $mode in
  torn) extra='--crash-in-state-write 20:torn' ;;
  adopt) extra='--snapshot-ms 3600000' ;;
  linked) extra='--crash-in-state-write 20:linked' ;;
  release) extra='--crash-in-state-write release:torn' ;;
  released) extra='--crash-in-state-write release+1:torn' ;;
  esac
  # shellcheck disable=SC2086 # the arguments are split on purpose
  # Its executors write to err1 too, to the end: the restarted driver writes to err.
  "$dir/tl-driver" $args $extra >"$tmp/out" 2>"$tmp/err1" &
  drv=$!
  wait_for "$tmp/out" '^listening on ' || fail "run $run: the driver did not listen"
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
  wait_for "$tmp/err1" "executor $last registered" || fail "run $run: $last did not register"
  case $mode in
  torn | linked | release | released)
    wait "$drv"
    rc=$?
    [ "$rc" -eq 137 ] || fail "run $run: the driver did not kill itself in its write ($rc)"
    ;;
  *)
    # A moment 0.2 to 2.7 s after the executors registered: within any of the three stages (the
    # job takes 3.5 s here, longer under a sanitizer).
    ms=$((200 + $(draw "$run" 2500)))
    # dynamic: within its first stage, the release, the growth or the middle stages (5 s)
    [ "$mode" = dynamic ] && ms=$((200 + $(draw "$run" 3000)))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    kill -0 "$drv" 2>/dev/null || fail "run $run: the driver ended before the kill at $ms ms"
    kill -9 "$drv"
    wait "$drv" 2>/dev/null
    ;;
  esac
  drv=''
  n=$(executors_of "$port" | wc -l)
  if [ "$dynamic" -eq 1 ]; then
    [ "$n" -ge 1 ] || fail "run $run: no executor survived the driver"
  else
    [ "$n" -eq 3 ] || fail "run $run: $n executors survived the driver, not 3"
  fi
  first_err=$(cat "$tmp/err1")
  case $mode in
  executor)
    victim=$(executors_of "$port" | head -n 1)
    kill -9 "$victim"
    ;;
  corrupt)
    size=$(wc -c <"$state/state")
    at=$(($(draw "$run" $((size - 40))) + 40))
    byte=$(od -An -tu1 -j "$at" -N1 "$state/state" | tr -d ' ')
    oct=$(printf '%03o' $(((byte + 1) % 256)))
    printf '%b' "\\0$oct" |
      dd of="$state/state" bs=1 seek="$at" conv=notrunc 2>/dev/null
    ;;
  refused)
    # First a restart with other jobs: refused with its message, the directory unchanged.
    listing=$(ls -l "$state")
    rc=0
    other=$(echo "$args" | sed 's/sleep:2:6000/sleep:2:6001/')
    # shellcheck disable=SC2086
    "$dir/tl-driver" $other >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "run $run: a restart with other jobs exited $rc, not 1"
    grep -q 'cannot be recovered: its jobs differ' "$tmp/err" ||
      fail "run $run: a restart with other jobs does not say why it is refused"
    [ "$(ls -l "$state")" = "$listing" ] || fail "run $run: the refusal changed the directory"
    for f in state state.prev state.tmp; do
      [ -f "$state/$f" ] || continue # state.tmp: only between a write's renames
      size=$(wc -c <"$state/$f")
      dd if=/dev/null of="$state/$f" bs=1 seek=$((size - 1)) 2>/dev/null
    done
    ;;
  esac
  [ -f "$state/state" ] || [ -f "$state/state.prev" ] || fail "run $run: no record was left"
  before=$(ls "$state")

  # The restart: the same command line, the same directory.
  : >"$tmp/out"
  : >"$tmp/err"
  [ "$mode" = adopt ] || extra='' # the fault was the first run's
  # shellcheck disable=SC2086
  "$dir/tl-driver" $args $extra --summary-json "$tmp/summary.json" >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  wait "$drv"
  rc=$?
  drv=''
  if [ "$mode" = refused ]; then
    [ "$rc" -eq 1 ] || fail "run $run: the restart on cut records exited $rc, not 1"
    grep -q 'cannot be read, and recovery is refused: .*state is truncated.*state.prev is truncated' \
      "$tmp/err" || fail "run $run: the refusal does not say why"
    [ "$(ls "$state")" = "$before" ] || fail "run $run: the refusal changed the directory"
    grep -q '^listening' "$tmp/out" && fail "run $run: the refused restart listened"
    for p in $(executors_of "$port"); do kill -9 "$p" 2>/dev/null; done
    echo "run $run: refused as it must be"
    continue
  fi
  [ "$rc" -eq 0 ] || fail "run $run: the restarted driver exited $rc (first run's stderr:
$first_err)"
  grep -q '^OK$' "$tmp/out" || fail "run $run: no OK"
  grep -q '^recovered: from ' "$tmp/out" || fail "run $run: the summary does not say it recovered"
  grep -q 'job 1: succeeded' "$tmp/out" || fail "run $run: the job did not succeed"
  case $mode in
  executor)
    grep -q 'executors lost to the recovery timeout' "$tmp/out" || fail "run $run: no line"
    grep -Eq ' 1 executors lost to the recovery timeout' "$tmp/out" ||
      fail "run $run: the killed executor was not lost to the recovery timeout"
    ;;
  adopt)
    grep -Eq 'reconciled 3 \([1-9][0-9]+ tids named' "$tmp/out" ||
      fail "run $run: the executors named fewer than 10 tids"
    ;;
  corrupt)
    # state.prev, or state.tmp when the kill came between a write's renames: state.prev was the
    # flipped file's second name then, and state.tmp the newest record, whole.
    grep -Eq 'recovered: from .*/state\.(prev|tmp) ' "$tmp/out" ||
      fail "run $run: recovery did not fall back to state.prev or state.tmp"
    ;;
  torn | linked | release | released)
    grep -q 'recovered: from .*/state;' "$tmp/out" ||
      fail "run $run: recovery did not read state"
    ;;
  esac
  # The JSON summary's recovery, where jq is. dynamic: every executor that was running is
  # reconciled (none is killed), one at least was released (the last stage's single task leaves
  # the others idle), never more than 4 at once.
  expect='.recovery.executors_to_reconcile == 3 and
    (.recovery.reconciled + .recovery.recovery_timeouts) == 3'
  [ "$dynamic" -eq 1 ] && expect='.recovery.executors_to_reconcile >= 1 and
    .recovery.reconciled == .recovery.executors_to_reconcile and
    .recovery.recovery_timeouts == 0 and .executors.released >= 1 and
    .executors.most_active <= 4 and .executors.lost == 0'
  # The adopted executors are active: the restart is never short of --min-executors.
  if [ "$dynamic" -eq 1 ] && grep -q 'fewer than --min-executors' "$tmp/err"; then
    fail "run $run: the restarted driver did not count the adopted executors as active"
  fi
  # Launches never waited for tids (the reservation is asked for ahead), and no write failed.
  expect="$expect and .state.waits_tids == 0 and .state.failed == 0 and
    .state.degraded.times == 0 and .state.records >= 1"
  if command -v jq >/dev/null 2>&1; then
    jq -e ".ok and .recovery.done and $expect" "$tmp/summary.json" >/dev/null ||
      fail "run $run: the JSON summary is wrong: $(jq -c '{recovery, executors, state}' "$tmp/summary.json")"
  fi
  [ -e "$state/state" ] && fail "run $run: the finished run left its record"
  sleep 0.2
  left=$(executors_of "$port" | wc -l)
  [ "$left" -eq 0 ] || fail "run $run: $left tl-executor processes left"
  # From the newest record, every attempt an executor names is held or adopted by the restored
  # ledger (its task set is in the record: a new stage's launches waited for the record that
  # holds it), and an end the record holds whose SYNCED did not arrive is named and unknown (a
  # KILL for a task that ended): no task runs twice, and the executors, which all lived, started
  # exactly the job's 22,000 tasks.
  # Every executor says it at its exit: those the first driver started in err1, those the
  # restarted one started (dynamic) in err.
  n=$(grep -ac ' tasks started$' "$tmp/err1")
  started=$(cat "$tmp/err1" "$tmp/err" | grep -ao '[0-9]* tasks started$' |
    awk '{ n += $1 } END { print n + 0 }')
  case $mode in
  plain | torn | linked | adopt | dynamic | release | released)
    [ "$dynamic" -eq 1 ] || [ "$n" -eq 3 ] ||
      fail "run $run: $n executors said how many tasks they started, not 3"
    [ "$started" -eq "$tasks" ] ||
      fail "run $run: the executors started $started tasks, not the job's $tasks"
    ;;
  esac
  printf 'run %s: %s; the executors started %s tasks\n' "$run" "$(grep '^recovered: ' "$tmp/out")" \
    "$started"
  grep '^attempts: ' "$tmp/out"
  [ "$dynamic" -eq 0 ] || grep '^allocation: ' "$tmp/out"
done
exit 0

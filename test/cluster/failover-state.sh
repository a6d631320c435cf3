#!/bin/sh
# The state directory of driver failover and the record of the run across restarts
# (docs/cluster.md "Driver failover", "The JSON summary"), in one of its modes:
#
#   failover-state.sh DIR MODE   DIR holds tl-driver and tl-executor; MODE:
#     lock      a driver runs on a state directory; a second one started on it while the first
#               runs is refused at once (exit status 1, naming the directory and the first one's
#               pid), reads nothing and listens on nothing; the first runs on to OK
#     links     a symbolic link planted at state.tmp, state, state.prev, state.prev.tmp or lock
#               (dangling, or to a file of the user's) makes the driver refuse, naming it: the
#               link's target is neither created nor changed; a directory writable by its group
#               or by others is refused; a 0700 directory with nothing planted runs to OK
#     history   the driver is killed (SIGKILL), an executor is killed while it is down, the
#               restart loses it to the recovery timeout, the restarted driver is killed too and
#               started again: the last summary, text and JSON, tells the whole run: the lost
#               executor with its reason, both recoveries, the time since the run's first start
#     open      the loss of an executor started elsewhere begins (its connection closed), the
#               driver is killed before the pending-loss timeout ends it; after the restart the
#               timeout ends it, and the summary shows the one loss with both its phases
#
# Exit status: 0 when the driver did what it must, 1 otherwise. No process is left behind.
set -u
dir=$1
mode=$2
tmp=$(mktemp -d)
name="failover-state.sh ($mode)"
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_all() {
  kill_port_executors
  chmod -R u+rwx "$tmp" 2>/dev/null
  cleanup
}
trap cleanup_all EXIT

state="$tmp/state"
: >"$tmp/out"
: >"$tmp/err"

case $mode in
lock)
  "$dir/tl-driver" --executors 2 --cores 2 --job sleep:20:200 --state-dir "$state" \
    --snapshot-ms 50 --timeout-s 60 >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  wait_for "$tmp/out" '^listening on ' || fail "the first driver did not listen"
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
  wait_for "$tmp/err" 'executor exec-2 registered' || fail "exec-2 did not register"
  # The second driver, the same command line and directory, while the first runs.
  start=$(date +%s)
  rc=0
  "$dir/tl-driver" --executors 2 --cores 2 --job sleep:20:200 --state-dir "$state" \
    --snapshot-ms 50 --timeout-s 60 >"$tmp/out2" 2>"$tmp/err2" || rc=$?
  [ "$rc" -eq 1 ] || fail "the second driver exited $rc, not 1: $(cat "$tmp/out2" "$tmp/err2")"
  [ $(($(date +%s) - start)) -le 3 ] || fail "the second driver was not refused at once"
  grep -q "$state is in use by another tl-driver (pid $drv holds $state/lock)" \
    "$tmp/err2" || fail "the refusal does not name the directory and the pid: $(cat "$tmp/err2")"
  grep -q 'recover' "$tmp/err2" && fail "the second driver read the record: $(cat "$tmp/err2")"
  grep -q '^listening' "$tmp/out2" && fail "the second driver listened"
  wait "$drv"
  rc=$?
  drv=''
  [ "$rc" -eq 0 ] || fail "the first driver exited $rc"
  grep -q '^OK$' "$tmp/out" || fail "the first driver did not finish OK"
  [ -e "$state/state" ] && fail "the finished run left its record"
  [ -f "$state/lock" ] || fail "no lock file"
  [ "$(stat -c %a "$state/lock")" = 600 ] || fail "the lock file is not 0600"
  echo "$name: the second driver was refused: $(cat "$tmp/err2")"
  ;;

links)
  # The driver on a state directory holding a link: refused (exit 1), naming the file.
  refused_for() { # refused_for FILE-NAME WHAT-THE-MESSAGE-SAYS
    rc=0
    "$dir/tl-driver" --quiet --executors 1 --cores 1 --job noop:10 --state-dir "$state" \
      --timeout-s 20 >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "$1: the driver exited $rc, not 1"
    grep -q "$2" "$tmp/err" || fail "$1: the driver does not say why it refuses"
    grep -q '^listening' "$tmp/out" && fail "$1: the refused driver listened"
    return 0
  }
  for f in state.tmp state state.prev state.prev.tmp lock; do
    rm -rf "$state" "$tmp/target"
    mkdir -m 700 "$state"
    ln -s "$tmp/target" "$state/$f" # dangling: a write through it would create the target
    refused_for "$f" "$state/$f is a symbolic link"
    [ -e "$tmp/target" ] && fail "$f: the link's target was created"
    echo keep >"$tmp/target" # now to a file of the user's: not read, not changed
    refused_for "$f" "$state/$f is a symbolic link"
    [ "$(cat "$tmp/target")" = keep ] || fail "$f: the link's target was changed"
    [ -L "$state/$f" ] || fail "$f: the link was removed"
  done
  for m in 777 770 1777; do
    rm -rf "$state"
    mkdir "$state"
    chmod "$m" "$state"
    refused_for "mode $m" "$state is writable by its group or others"
    [ "$(ls -A "$state")" = '' ] || fail "mode $m: the refused driver wrote in the directory"
  done
  # Nothing planted: the run goes on.
  rm -rf "$state"
  mkdir -m 700 "$state"
  rc=0
  "$dir/tl-driver" --quiet --executors 1 --cores 1 --job noop:10 --state-dir "$state" \
    --timeout-s 20 >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 0 ] || fail "a good directory: the driver exited $rc"
  echo "$name: every link and open directory refused"
  ;;

history)
  # Two executors of 2 cores; 20 ms tasks, 2 s of work for the three drivers in all: the first
  # restart, which waits 1.2 s for the killed executor, must not finish the job.
  args="--executors 2 --cores 2 --job sleep:20:400 --state-dir $state --snapshot-ms 50
    --heartbeat-ms 100 --recovery-timeout-ms 1200 --pending-loss-timeout-ms 1000 --timeout-s 60"
  # shellcheck disable=SC2086 # the arguments are split on purpose
  "$dir/tl-driver" $args >"$tmp/out" 2>"$tmp/err1" &
  drv=$!
  wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
  wait_for "$tmp/err1" 'executor exec-2 registered' || fail "exec-2 did not register"
  sleep 0.2
  kill -9 "$drv"
  wait "$drv" 2>/dev/null
  drv=''
  victim=$(executors_of "$port" | head -n 1)
  [ -n "$victim" ] || fail "no executor survived the driver"
  kill -9 "$victim"
  # The first restart: it loses the killed executor to the recovery timeout, then it is killed
  # once a record holds that.
  # shellcheck disable=SC2086
  "$dir/tl-driver" $args >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  wait_for "$tmp/err" 'recovery done in' || fail "the first restart did not end its recovery"
  grep -q ' 1 lost to the recovery timeout' "$tmp/err" ||
    fail "the first restart did not lose the killed executor to the recovery timeout"
  sleep 0.3
  kill -0 "$drv" 2>/dev/null || fail "the first restart ended before its kill"
  kill -9 "$drv"
  wait "$drv" 2>/dev/null
  drv=''
  # The second restart, to the end.
  : >"$tmp/out"
  : >"$tmp/err"
  # shellcheck disable=SC2086
  "$dir/tl-driver" $args --summary-json "$tmp/summary.json" >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  wait "$drv"
  rc=$?
  drv=''
  [ "$rc" -eq 0 ] || fail "the second restart exited $rc"
  grep -q '^OK$' "$tmp/out" || fail "no OK"
  # The text: the loss (one lost executor, detected by the recovery timeout, its real reason),
  # both recoveries, the run's time.
  grep -q '^losses: 1 executors lost' "$tmp/out" || fail "the losses line does not count 1"
  grep -q '^  lost executors: 1; detected by .* recovery timeout 1; real reasons .*recovery_timeout 1$' \
    "$tmp/out" || fail "the lost executors line does not tell the recovery timeout"
  grep -q '^  lost exec-[12]: detected by recovery timeout; phases recovery_timeout; TL_LOSS_RECOVERY_TIMEOUT' \
    "$tmp/out" || fail "the lost executor is not shown with its reason"
  grep -q '^recoveries: 2 in this run' "$tmp/out" || fail "no recoveries line for 2"
  grep -q '^  recovery 1 of 2, at [0-9.]* s: from .*/state; 2 executors to reconcile, recovery [0-9.]* s; reconciled 1 .* 1 executors lost to the recovery timeout' \
    "$tmp/out" || fail "the first recovery is not described"
  grep -q '^recovered: from .*/state; 1 executors to reconcile, .* 0 executors lost to the recovery timeout' \
    "$tmp/out" || fail "the last recovery is not described"
  grep -q '^run: 3 drivers, first started ' "$tmp/out" || fail "no run line"
  # The JSON: the same (where jq is).
  command -v jq >/dev/null 2>&1 && ! jq -e '.ok and .executors.lost == 1 and .tl_stats.recovery_timeouts == 1 and
    .lost_executors_total == 1 and (.lost_executors | length) == 1 and
    (.lost_executors[0] | .detected_by == "recovery timeout" and
      .reason_kind == "TL_LOSS_RECOVERY_TIMEOUT" and .phases_seen == ["recovery_timeout"] and
      .reason_source == "tl_tick (recovery timeout)") and
    .recoveries_total == 2 and (.recoveries | length) == 2 and
    (.recoveries[0] | .from == "state" and .done and .executors_to_reconcile == 2 and
      .reconciled == 1 and .recovery_timeouts == 1) and
    (.recoveries[1] | .from == "state" and .done and .executors_to_reconcile == 1 and
      .reconciled == 1 and .recovery_timeouts == 0 and .at_seconds > .recoveries[0].at_seconds) and
    .recovery == (.recoveries[1] | del(.at_seconds)) and
    .run.drivers == 3 and .run.seconds >= .run.this_driver_seconds and
    .run.seconds > .recoveries[1].at_seconds and .run.first_start_unix > 1.7e9' \
    "$tmp/summary.json" >/dev/null &&
    fail "the JSON summary is wrong: $(jq -c '{executors, lost_executors_total, lost_executors,
      recoveries_total, recoveries, recovery, run}' "$tmp/summary.json")"
  sleep 0.2
  left=$(executors_of "$port" | wc -l)
  [ "$left" -eq 0 ] || fail "$left tl-executor processes left"
  grep -E '^(tasks:|losses:|  lost|recover|  recovery|run:)' "$tmp/out"
  ;;
open)
  # An executor started elsewhere (--accept 1) is killed: its loss begins (pending) and waits for
  # the pending-loss timeout, and the driver is killed before that comes. The restart's ledger
  # holds it pending; its timeout ends the loss that the record kept open.
  printf 'failover-state-token-%s\n' "$$" >"$tmp/token"
  args="--executors 1 --accept 1 --cores 4 --job sleep:5:1000 --token-file $tmp/token
    --state-dir $state --snapshot-ms 50 --heartbeat-ms 100 --pending-loss-timeout-ms 1000
    --expect-losses 1 --timeout-s 60"
  # shellcheck disable=SC2086 # the arguments are split on purpose
  "$dir/tl-driver" $args >"$tmp/out" 2>"$tmp/err1" &
  drv=$!
  wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
  "$dir/tl-executor" --host 127.0.0.1 --port "$port" --id ext-1 --cores 4 --heartbeat-ms 100 \
    --token-file "$tmp/token" 2>"$tmp/ext-err" &
  ext=$!
  wait_for "$tmp/err1" 'executor ext-1 registered' || fail "ext-1 did not register"
  sleep 0.3
  kill -9 "$ext"
  wait "$ext" 2>/dev/null
  ext=''
  wait_for "$tmp/err1" 'executor ext-1 lost' || fail "the loss of ext-1 did not begin"
  sleep 0.2 # a record holds the loss begun
  kill -9 "$drv"
  wait "$drv" 2>/dev/null
  drv=''
  # shellcheck disable=SC2086
  "$dir/tl-driver" $args --summary-json "$tmp/summary.json" >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  wait "$drv"
  rc=$?
  drv=''
  [ "$rc" -eq 0 ] || fail "the restart exited $rc"
  grep -q '^OK$' "$tmp/out" || fail "no OK"
  grep -q '^  lost executors: 1; detected by connection closed 1,' "$tmp/out" ||
    fail "the lost executors line does not count the loss begun before the restart"
  grep -q '^  lost ext-1: detected by connection closed; phases pending, pending_timeout; TL_LOSS_PENDING_TIMEOUT' \
    "$tmp/out" || fail "the loss begun before the restart is not ended by its timeout after it"
  command -v jq >/dev/null 2>&1 && ! jq -e '.lost_executors_total == 1 and
    (.lost_executors[0] | .id == "ext-1" and .phases_seen == ["pending", "pending_timeout"])' \
    "$tmp/summary.json" >/dev/null &&
    fail "the JSON summary is wrong: $(jq -c '.lost_executors' "$tmp/summary.json")"
  sleep 0.2
  left=$(executors_of "$port" | wc -l)
  [ "$left" -eq 0 ] || fail "$left tl-executor processes left"
  grep -E '^(losses:|  lost)' "$tmp/out"
  ;;
*)
  echo "$name: unknown mode" >&2
  exit 2
  ;;
esac
exit 0

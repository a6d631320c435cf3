#!/bin/sh
# The clean end when an executor does not go: while a job of long tasks runs on 2 executors, the
# script stops exec-2 (SIGSTOP) and sends the driver SIGTERM. The driver sends STOP to both;
# exec-1 exits, exec-2 cannot, so 2 s later the driver has the launcher stop it (stop_all:
# SIGKILL, then SIGCONT), waits for its end and exits 1 (it gave up), with no executor left.
#
#   forced-stop.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when all of that holds; 77 (skipped) without pgrep; 1 otherwise.
set -u
dir=$1
name=forced-stop.sh
command -v pgrep >/dev/null 2>&1 || {
  echo "$name: pgrep is not installed: skipped" >&2
  exit 77
}
tmp=$(mktemp -d)
drv='' execs=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  stop_driver "$drv"
  for p in $execs; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

"$dir/tl-driver" --executors 2 --cores 4 --job sleep:20000:8 --timeout-s 30 \
  >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/err" 'executor exec-2 registered' || fail "exec-2 did not register"
wait_for "$tmp/err" 'executor exec-1 registered' || fail "exec-1 did not register"
execs=$(pgrep -P "$drv")
exec2=$(pgrep -P "$drv" -f -- '--id exec-2$|--id exec-2 ')
[ -n "$exec2" ] || fail "exec-2's process not found among the driver's children: $execs"
kill -STOP "$exec2"
kill -TERM "$drv"
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 1 ] || fail "the driver exited with status $rc, not 1"
for p in $execs; do
  if kill -0 "$p" 2>/dev/null; then
    fail "executor process $p is still running"
  fi
done
execs=''
grep -q 'giving up: signalled' "$tmp/err" || fail "the driver did not give up on SIGTERM"
grep -q '1 executors did not stop within 2000 ms: stopping them' "$tmp/err" ||
  fail "exec-2 was not stopped by force"
for want in 'stopped by force 1$' \
  'exec-2: exit code 137, TL_LOSS_KILLED: .*(stopped by force: it did not stop in time)' \
  '^FAILED$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
# exec-1 took its STOP and exited 0: no line for it.
if grep -q '^  exec-1: exit code' "$tmp/out"; then
  fail "exec-1 did not exit cleanly"
fi
cat "$tmp/out"
exit 0

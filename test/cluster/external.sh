#!/bin/sh
# An executor started elsewhere, lost without an exit status: tl-driver spawns one executor and
# waits (--accept 1) for a second, which this script starts itself with tl-executor, the token
# in a file. Once that executor runs tasks, the script kills it with SIGKILL. The driver cannot
# learn why (it is not its child): the closed connection is the first phase (TL_LOSS_PENDING),
# the pending-loss timeout the second; the frozen tasks then rerun on the spawned executor and
# the job succeeds.
#
#   external.sh DIR [ADDR]    DIR holds tl-driver and tl-executor; ADDR is the address to
#                             listen on (127.0.0.1; ::1 tests IPv6)
#
# Exit status: 0 when the summary says what it must; 77 (skipped) when ADDR cannot be listened
# on here; 1 otherwise. No process is left behind on any path.
set -u
dir=$1
addr=${2:-127.0.0.1}
tmp=$(mktemp -d)
name=external.sh
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
trap cleanup EXIT

printf 'external-test-token-%s\n' "$$" >"$tmp/token"
"$dir/tl-driver" --listen "$addr" --token-file "$tmp/token" --executors 1 --accept 1 \
  --cores 4 --job sleep:5:3000 --pending-loss-timeout-ms 500 --expect-losses 1 --timeout-s 30 \
  >"$tmp/out" 2>"$tmp/err" &
drv=$!
if ! wait_for "$tmp/out" '^listening on '; then
  if grep -q 'listen on' "$tmp/err"; then
    echo "external.sh: cannot listen on $addr here: skipped" >&2
    cat "$tmp/err" >&2
    exit 77
  fi
  fail "the driver did not listen"
fi
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
[ -n "$port" ] || fail "no port in the driver's output"

"$dir/tl-executor" --host "$addr" --port "$port" --id ext-1 --cores 4 --heartbeat-ms 100 \
  --token-file "$tmp/token" 2>"$tmp/ext-err" &
ext=$!
wait_for "$tmp/err" 'executor ext-1 registered' || fail "ext-1 did not register"
sleep 0.5
kill -9 "$ext" 2>/dev/null || fail "ext-1 was not running when it was to be killed"
wait "$ext" 2>/dev/null
ext=''
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
for want in 'job 1: succeeded' 'executors: 1 spawned with [0-9]* cores each, 2 registered' \
  'pending on close 1, heartbeat timeout 0, exited 0, killed by the driver 0' \
  'pending-loss timeout 1;' \
  'lost ext-1: detected by connection closed; phases pending, pending_timeout; TL_LOSS_PENDING_TIMEOUT, caused by the app' \
  'tl_check OK' '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
# ext-1's tasks reran: some attempt after the first of its task.
grep -q 'attempts: [0-9]* launched, [1-9][0-9]* retries' "$tmp/out" || fail "nothing reran"
cat "$tmp/out"
exit 0

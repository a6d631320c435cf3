#!/bin/sh
# An executor started elsewhere, lost without an exit status: tl-driver spawns one executor and
# waits (--accept 1) for a second, which this script starts itself with tl-executor, the token
# in a file. Once that executor runs tasks, the script kills it with SIGKILL. The driver cannot
# learn why (it is not its child): the closed connection is the first phase (TL_LOSS_PENDING),
# the pending-loss timeout the second; the frozen tasks then rerun on the spawned executor and
# the job succeeds. The driver's log and summary must name the executor in full, whatever its
# id (ctest runs it with the longest, 255 bytes, too). An id of 256 bytes is refused by
# tl-executor before it connects (exit status 2); the decoder's refusal of a longer id in a
# REGISTER frame is tested by cluster-proto.
#
#   external.sh DIR [ADDR [ID]]    DIR holds tl-driver and tl-executor; ADDR is the address to
#                                  listen on (127.0.0.1; ::1 tests IPv6); ID the executor's id
#                                  (ext-1)
#
# Exit status: 0 when the summary says what it must; 77 (skipped) when ADDR cannot be listened
# on here; 1 otherwise. No process is left behind on any path.
set -u
dir=$1
addr=${2:-127.0.0.1}
id=${3:-ext-1}
tmp=$(mktemp -d)
name=external.sh
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
trap cleanup EXIT

printf 'external-test-token-%s\n' "$$" >"$tmp/token"
too_long=$(printf 'long-%0246d-endx' 7) # one byte more than the longest id
"$dir/tl-executor" --port 1 --id "$too_long" --token-file "$tmp/token" 2>"$tmp/ext-err"
rc=$?
[ "$rc" -eq 2 ] || fail "tl-executor took a ${#too_long}-byte id (exit status $rc)"
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

"$dir/tl-executor" --host "$addr" --port "$port" --id "$id" --cores 4 --heartbeat-ms 100 \
  --token-file "$tmp/token" 2>"$tmp/ext-err" &
ext=$!
wait_for "$tmp/err" "executor $id registered" || fail "$id did not register"
sleep 0.5
kill -9 "$ext" 2>/dev/null || fail "$id was not running when it was to be killed"
wait "$ext" 2>/dev/null
ext=''
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
for want in 'job 1: succeeded' 'executors: 1 spawned with [0-9]* cores each, 2 registered' \
  'pending on close 1, heartbeat timeout 0, exited 0, killed by the driver 0' \
  'pending-loss timeout 1;' \
  "lost $id: detected by connection closed; phases pending, pending_timeout; TL_LOSS_PENDING_TIMEOUT, caused by the app" \
  'tl_check OK' '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
# Its tasks reran: some attempt after the first of its task.
grep -q 'attempts: [0-9]* launched, [1-9][0-9]* retries' "$tmp/out" || fail "nothing reran"
cat "$tmp/out"
exit 0

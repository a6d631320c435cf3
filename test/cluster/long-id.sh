#!/bin/sh
# An executor id of 255 bytes, the longest the ledger and the protocol take, over the wire:
# tl-driver spawns one executor and waits (--accept 1) for a second, which this script starts
# with tl-executor --id and a 255-byte id. It registers, runs tasks and is killed (SIGKILL); the
# pending-loss timeout ends its loss, its tasks rerun and the job succeeds. The driver's log and
# summary must name it in full. A 256-byte --id is refused by tl-executor before it connects
# (exit status 2); the decoder's refusal of a longer id in a REGISTER frame is tested by
# cluster-proto.
#
#   long-id.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the summary says what it must; 1 otherwise. No process is left behind.
set -u
dir=$1
tmp=$(mktemp -d)
name=long-id.sh
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
trap cleanup EXIT

# 255 bytes: "long-" and 250 more, ending in "-end".
id=$(printf 'long-%0246d-end' 7)
[ "${#id}" -eq 255 ] || fail "the test's id is ${#id} bytes, not 255"
too_long="${id}x"

printf 'long-id-test-token-%s\n' "$$" >"$tmp/token"
"$dir/tl-executor" --port 1 --id "$too_long" --token-file "$tmp/token" 2>"$tmp/ext-err"
rc=$?
[ "$rc" -eq 2 ] || fail "tl-executor took a 256-byte id (exit status $rc)"

"$dir/tl-driver" --token-file "$tmp/token" --executors 1 --accept 1 --cores 4 \
  --job sleep:5:3000 --pending-loss-timeout-ms 500 --expect-losses 1 --timeout-s 30 \
  >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
[ -n "$port" ] || fail "no port in the driver's output"

"$dir/tl-executor" --port "$port" --id "$id" --cores 4 --heartbeat-ms 100 \
  --token-file "$tmp/token" 2>"$tmp/ext-err" &
ext=$!
wait_for "$tmp/err" "executor $id registered" || fail "the long id did not register"
sleep 0.5
kill -9 "$ext" 2>/dev/null || fail "the long-id executor was not running when it was to be killed"
wait "$ext" 2>/dev/null
ext=''
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
for want in 'job 1: succeeded' 'executors: 1 spawned with [0-9]* cores each, 2 registered' \
  "lost $id: detected by connection closed; phases pending, pending_timeout" \
  'tl_check OK' '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
grep -q 'attempts: [0-9]* launched, [1-9][0-9]* retries' "$tmp/out" || fail "nothing reran"
exit 0

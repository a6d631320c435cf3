#!/bin/sh
# Dynamic allocation next to an executor started elsewhere that took an id of the launcher's
# kind: tl-driver starts exec-1 and waits (--accept 1) for a second executor, which this script
# starts as exec-2. The backlog then makes the driver start more executors; it must not start
# one as exec-2 (the ledger would refuse its REGISTER, and its end would be reported as the
# loss of the script's executor), nor ever release the script's executor (only executors the
# launcher started are released). The job succeeds, no executor is lost.
#
#   dynamic-external-id.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the summary says what it must; 1 otherwise. No process is left behind.
set -u
dir=$1
tmp=$(mktemp -d)
name=dynamic-external-id.sh
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
trap cleanup EXIT

printf 'dynamic-external-id-token-%s\n' "$$" >"$tmp/token"
"$dir/tl-driver" --token-file "$tmp/token" --executors 1 --accept 1 --cores 2 \
  --min-executors 1 --max-executors 3 --backlog-timeout 100 --idle-timeout 300 \
  --job sleep:20:300 --expect-losses 0 --timeout-s 30 >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
[ -n "$port" ] || fail "no port in the driver's output"

"$dir/tl-executor" --port "$port" --id exec-2 --cores 2 --heartbeat-ms 100 \
  --token-file "$tmp/token" 2>"$tmp/ext-err" &
ext=$!
wait "$drv"
rc=$?
drv=''
wait "$ext"
ext_rc=$?
ext=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
[ "$ext_rc" -eq 0 ] || fail "the script's exec-2 exited with status $ext_rc"
for want in 'job 1: succeeded' 'exec-2 is taken by an executor started elsewhere' \
  'losses: 0 executors lost' 'tl_check OK' '^OK$'; do
  grep -q "$want" "$tmp/out" "$tmp/err" || fail "the driver's output lacks: $want"
done
if grep -q 'releasing exec-2\|executor exec-2 requested' "$tmp/err"; then
  fail "the driver started or released an exec-2 of its own"
fi
exit 0

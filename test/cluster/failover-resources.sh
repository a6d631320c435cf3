#!/bin/sh
# Driver failover with GPUs (docs/cluster.md "Resources", "Driver failover"): tl-driver
# --state-dir accepts two executors this script starts (gpu=0,1, 4 cores, --task-command
# gpu-task.sh) and runs 30 tasks that hold a whole gpu, then 24 that hold 1/2 of one. Once a few
# have run, the driver is killed with SIGKILL and started again with the same command line. The
# executors' tasks run on, they reconnect and reconcile; the restored ledger brings back the
# grants its record holds, kills the attempts it does not adopt (an attempt that holds addresses
# is never adopted) and runs them again. Every task checks its own CUDA_VISIBLE_DEVICES and
# TL_RESOURCE_GPU as in cluster-resources (never two whole holders of an address on one
# executor, never three sharing it), no executor is granted what its running tasks hold (it
# would exit 5), and at the end nothing is held and tl_check is clean.
#
#   failover-resources.sh DIR    DIR holds tl-driver and tl-executor
#
# It needs the snapshot format that carries executors' resources and attempts' grants (version
# 3): with an older one the restored ledger holds the executors without their resources, their
# REGISTER does not match and is refused. Registered in CMake (cluster-failover-resources) with
# that format.
#
# Exit status: 0 when everything held; 1 otherwise. No process is left behind.
set -u
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
name=failover-resources.sh
drv='' ext='' exb=''
# shellcheck source=test/cluster/common.sh
. "$here/common.sh"
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_all() {
  if [ -n "$exb" ]; then kill -9 "$exb" 2>/dev/null; fi
  cleanup
}
trap cleanup_all EXIT

printf 'failover-resources-token-%s\n' "$$" >"$tmp/token"
mkdir "$tmp/d"
TL_TEST_DIR=$tmp/d
export TL_TEST_DIR
args="--token-file $tmp/token --executors 0 --accept 2 --state-dir $tmp/state --snapshot-ms 100
  --heartbeat-ms 200 --recovery-timeout-ms 3000 --timeout-s 40
  --job exec:whole:30+gpu=1,exec:share:24+gpu=1/2"
# shellcheck disable=SC2086 # the arguments are split on purpose
"$dir/tl-driver" $args >"$tmp/out" 2>"$tmp/err1" &
drv=$!
wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
for id in ex-a ex-b; do
  "$dir/tl-executor" --port "$port" --id "$id" --cores 4 --heartbeat-ms 200 --reconnect-s 20 \
    --token-file "$tmp/token" --resource gpu=0,1 --task-command "$here/gpu-task.sh" \
    2>"$tmp/$id.err" &
  if [ "$id" = ex-a ]; then ext=$!; else exb=$!; fi
done
tries=0
while [ "$(wc -l <"$tmp/d/whole.log" 2>/dev/null || echo 0)" -lt 6 ]; do
  tries=$((tries + 1))
  [ "$tries" -gt 200 ] && fail "fewer than 6 gpu tasks ran in 10 s"
  sleep 0.05
done
kill -9 "$drv" 2>/dev/null || fail "the driver ended before the kill"
wait "$drv" 2>/dev/null
drv=''
sleep 0.3
: >"$tmp/out"
# shellcheck disable=SC2086
"$dir/tl-driver" $args >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait "$drv"
rc=$?
drv=''
wait "$ext" 2>/dev/null
rca=$?
wait "$exb" 2>/dev/null
rcb=$?
ext='' exb=''
[ "$rc" -eq 0 ] || fail "the restarted driver exited with status $rc"
if [ "$rca" -ne 0 ] || [ "$rcb" -ne 0 ]; then
  fail "ex-a exited $rca, ex-b $rcb: $(cat "$tmp"/ex-*.err)"
fi
[ -s "$tmp/d/violations" ] && fail "the tasks saw: $(cat "$tmp/d/violations")"
for want in '^recovered: from ' 'job 1: succeeded' 'tl_check OK' \
  'when the jobs ended: 1 names, 4 addresses, 0 held, 0 units used' '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
[ "$(cut -d' ' -f3 "$tmp/d/share.log" | sort -n | tail -1)" -le 2 ] ||
  fail "more than two tasks shared a gpu"
cat "$tmp/out"
exit 0

#!/bin/sh
# GPUs end to end (docs/cluster.md "Resources"): tl-driver accepts three executors this script
# starts itself. ex-a and ex-b declare gpu=0,1 (ex-b through a discovery script) and 4 cores;
# ex-c is of profile 1, with no gpu. Job 1 runs a CPU stage, then 12 tasks holding one whole gpu
# each, then 16 holding 1/2 of one; job 2 runs 6 tasks of profile 1. Every gpu task is a process
# (gpu-task.sh, through --task-command) that checks its own CUDA_VISIBLE_DEVICES and
# TL_RESOURCE_GPU: one address, the same in both, never held whole by two running tasks of one
# executor, and shared by at most 2; the share stage must see 2 share one. Once ex-b runs gpu
# tasks it is killed with SIGKILL: its frozen tasks keep their addresses until the pending-loss
# timeout, then run again on ex-a. At the end nothing may be held: the summary's resources line
# says 0 held when the jobs ended, and tl_check is clean. Profile 1's tasks ran on ex-c alone,
# and no gpu task did.
#
#   resources.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when everything held; 1 otherwise. No process is left behind.
set -u
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
name=resources.sh
drv='' ext='' exb='' exc=''
# shellcheck source=test/cluster/common.sh
. "$here/common.sh"
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_all() {
  for p in $exb $exc; do kill -9 "$p" 2>/dev/null; done
  cleanup
}
trap cleanup_all EXIT

printf 'resources-test-token-%s\n' "$$" >"$tmp/token"
mkdir "$tmp/d"
TL_TEST_DIR=$tmp/d
export TL_TEST_DIR
cat >"$tmp/discover.sh" <<'EOS'
#!/bin/sh
echo '{"name": "gpu", "addresses": ["0", "1"]}'
EOS
chmod +x "$tmp/discover.sh"

# Refused declarations: each is a bad argument (exit 2) with its reason, before any connection.
refused() { # WHY ARGS...: tl-executor ARGS exits 2 saying WHY
  _why=$1
  shift
  "$dir/tl-executor" --port 1 --token-file "$tmp/token" "$@" 2>"$tmp/refused" >/dev/null
  _rc=$?
  [ "$_rc" -eq 2 ] || fail "tl-executor $* exited $_rc, not 2"
  grep -q "$_why" "$tmp/refused" || fail "tl-executor $*: not '$_why': $(cat "$tmp/refused")"
}
script() { # NAME BODY: a discovery script
  printf '#!/bin/sh\n%s\n' "$2" >"$tmp/$1"
  chmod +x "$tmp/$1"
}
script comma.sh 'echo "{\"name\": \"gpu\", \"addresses\": [\"0,1\"]}"'
script nojson.sh 'echo "gpu: 0 1"'
script noname.sh 'echo "{\"addresses\": [\"0\"]}"'
script none.sh 'echo "{\"name\": \"gpu\", \"addresses\": []}"'
script badname.sh 'echo "{\"name\": \"g/pu\", \"addresses\": [\"0\"]}"'
script exit3.sh 'exit 3'
script big.sh 'head -c 70000 /dev/zero | tr "\\0" " "'
script slow.sh 'sleep 5'
refused "address '0,1'" --resource-discovery "$tmp/comma.sh"
refused 'not JSON' --resource-discovery "$tmp/nojson.sh"
refused 'one object' --resource-discovery "$tmp/noname.sh"
refused '1 to 1024 addresses' --resource-discovery "$tmp/none.sh"
refused "resource name 'g/pu'" --resource-discovery "$tmp/badname.sh"
refused 'failed (exit status 3)' --resource-discovery "$tmp/exit3.sh"
refused 'wrote more than its limit' --resource-discovery "$tmp/big.sh"
refused 'ran longer than its limit' --discovery-timeout-ms 200 --resource-discovery "$tmp/slow.sh"
refused "declared twice" --resource gpu=0 --resource-discovery "$tmp/discover.sh"
refused "declared twice" --resource gpu=0,1,0
refused 'NAME=ADDR' --resource gpu
refused "address ''" --resource gpu=0,,1

"$dir/tl-driver" --token-file "$tmp/token" --executors 0 --accept 3 \
  --job 'noop:20,exec:whole:12+gpu=1,exec:share:16+gpu=1/2' --job 'exec:profile:6@1' \
  --pending-loss-timeout-ms 300 --expect-losses 1 --timeout-s 30 >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
[ -n "$port" ] || fail "no port in the driver's output"

start() { # ID ARGS...: an executor of this test
  _id=$1
  shift
  "$dir/tl-executor" --port "$port" --id "$_id" --heartbeat-ms 100 --token-file "$tmp/token" \
    --task-command "$here/gpu-task.sh" "$@" 2>"$tmp/$_id.err" &
}
start ex-a --cores 4 --resource gpu=0,1
ext=$!
start ex-b --cores 4 --resource-discovery "$tmp/discover.sh"
exb=$!
start ex-c --cores 2 --profile 1
exc=$!
wait_for "$tmp/d/whole.log" '^ex-b ' || fail "ex-b ran no gpu task"
kill -9 "$exb" 2>/dev/null || fail "ex-b was not running when it was to be killed"
wait "$exb" 2>/dev/null
exb=''
wait "$drv"
rc=$?
drv=''
wait "$ext" 2>/dev/null
rca=$?
wait "$exc" 2>/dev/null
rcc=$?
ext='' exc=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
# 0 after STOP; 5 would say a launch took more of an address than its running tasks left.
if [ "$rca" -ne 0 ] || [ "$rcc" -ne 0 ]; then
  fail "ex-a exited $rca, ex-c $rcc: $(cat "$tmp"/ex-*.err)"
fi
[ -s "$tmp/d/violations" ] && fail "the tasks saw: $(cat "$tmp/d/violations")"
for want in 'job 1: succeeded' 'job 2: succeeded' 'tl_check OK' \
  'resources: [1-9][0-9]* addresses granted to launches; at most [1-9][0-9]* held at once; when the jobs ended: 1 names, 2 addresses, 0 held, 0 units used' \
  '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
grep -q 'executor ex-b registered .*profile 0, 1 resources' "$tmp/err" ||
  fail "ex-b did not register its discovered gpu"
grep -q 'executor ex-c registered .*profile 1, 0 resources' "$tmp/err" ||
  fail "ex-c did not register as profile 1"
# Whole: 12 tasks succeeded (ex-b's frozen ones ran again), on ex-a and ex-b only.
[ "$(grep -c . "$tmp/d/whole.log")" -ge 12 ] || fail "fewer than 12 whole-gpu tasks ran"
grep -qv '^ex-[ab] ' "$tmp/d/whole.log" && fail "a gpu task ran off ex-a and ex-b"
# Share: 2 tasks held one address at once, never more (gpu-task.sh checks the bound).
[ "$(grep -c . "$tmp/d/share.log")" -ge 16 ] || fail "fewer than 16 shared-gpu tasks ran"
[ "$(cut -d' ' -f3 "$tmp/d/share.log" | sort -n | tail -1)" = 2 ] ||
  fail "no two tasks shared a gpu: $(cat "$tmp/d/share.log")"
# Profile 1: on ex-c only.
[ "$(grep -c '^ex-c$' "$tmp/d/profile.log")" -ge 6 ] || fail "profile 1's tasks did not run"
grep -qv '^ex-c$' "$tmp/d/profile.log" && fail "a profile 1 task ran off ex-c"
cat "$tmp/out"

# KILL of exec tasks: a stage whose index 0 fails at once (--max-task-failures 1) while the
# others hold a gpu for 20 s; --kill-on-job-failure kills them. Each process is sent SIGKILL and
# reported KILLED once it exited, its gpu free only then: the run ends in seconds, not 20 (the
# driver's --timeout-s 15 would fail it).
: >"$tmp/out"
"$dir/tl-driver" --token-file "$tmp/token" --executors 0 --accept 1 --max-task-failures 1 \
  --kill-on-job-failure --expect-job-failure --job 'exec:doomed:6+gpu=1' --timeout-s 15 \
  >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^listening on ' || fail "the second driver did not listen"
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
start ex-k --cores 4 --resource gpu=0,1
ext=$!
wait "$drv"
rc=$?
drv=''
wait "$ext" 2>/dev/null
rck=$?
ext=''
[ "$rc" -eq 0 ] || fail "the second driver exited with status $rc"
[ "$rck" -eq 0 ] || fail "ex-k exited $rck: $(cat "$tmp/ex-k.err")"
[ -s "$tmp/d/violations" ] && fail "the doomed tasks saw: $(cat "$tmp/d/violations")"
for want in 'job 1: FAILED' '[1-9] killed)' 'tl_check OK' 'when the jobs ended: 1 names, 2 addresses, 0 held' '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the second summary lacks: $want"
done
cat "$tmp/out"
exit 0

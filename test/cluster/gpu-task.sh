#!/bin/sh
# The task command of test/cluster/resources.sh (tl-executor --task-command): one `exec:MODE`
# task, checking the addresses tl-executor gave its process. Every fault is appended to
# $TL_TEST_DIR/violations and makes it exit 1; what it saw is appended to $TL_TEST_DIR/MODE.log.
#
#   whole    holds one whole gpu: CUDA_VISIBLE_DEVICES and TL_RESOURCE_GPU name one address,
#            the same; no other running task of its executor holds it (a lock directory per
#            executor and address, taken with mkdir); 200 ms
#   share    holds 1/2 of a gpu: as whole, but up to 2 tasks of its executor may hold the
#            address at once: it counts the holders (a file each) and logs the count; 300 ms
#   profile  logs its executor's id and holds no gpu (CUDA_VISIBLE_DEVICES unset or empty)
#   doomed   index 0 fails at once; every other index holds its gpu (a lock, as whole) for 20 s,
#            unless it is killed first (the lock is then left behind, as a killed process leaves
#            it); logged in doomed.log
set -u
d=$TL_TEST_DIR
mode=$1
violation() {
  echo "$mode tid $TL_TASK_TID on $TL_EXECUTOR_ID: $*" >>"$d/violations"
  exit 1
}
gpu=${TL_RESOURCE_GPU-unset}
cuda=${CUDA_VISIBLE_DEVICES-unset}
case $mode in
profile)
  [ -z "${CUDA_VISIBLE_DEVICES:-}" ] || violation "CUDA_VISIBLE_DEVICES=$cuda without a gpu"
  echo "$TL_EXECUTOR_ID" >>"$d/profile.log"
  exit 0
  ;;
whole | share | doomed) ;;
*) violation "unknown mode" ;;
esac
[ "$cuda" = "$gpu" ] || violation "CUDA_VISIBLE_DEVICES=$cuda, TL_RESOURCE_GPU=$gpu"
case $gpu in
0 | 1) ;;
*) violation "TL_RESOURCE_GPU=$gpu: not one address of 0,1" ;;
esac
key="$d/$TL_EXECUTOR_ID-gpu$gpu"
if [ "$mode" = doomed ]; then
  [ "$TL_TASK_INDEX" -eq 0 ] && exit 1
  mkdir "$key.doomed" 2>/dev/null || violation "gpu $gpu is held by another task"
  echo "$TL_EXECUTOR_ID $gpu $TL_TASK_TID" >>"$d/doomed.log"
  sleep 20
  exit 0
fi
if [ "$mode" = whole ]; then
  mkdir "$key.lock" 2>/dev/null || violation "gpu $gpu is held by another task"
  echo "$TL_EXECUTOR_ID $gpu $TL_TASK_TID" >>"$d/whole.log"
  sleep 0.2
  rmdir "$key.lock"
  exit 0
fi
[ -d "$key.lock" ] && violation "gpu $gpu is held whole by another task"
: >"$key.share.$TL_TASK_TID"
n=$(find "$d" -name "$TL_EXECUTOR_ID-gpu$gpu.share.*" | wc -l)
echo "$TL_EXECUTOR_ID $gpu $n" >>"$d/share.log"
[ "$n" -le 2 ] || violation "gpu $gpu is shared by $n tasks"
sleep 0.3
rm -f "$key.share.$TL_TASK_TID"
exit 0

#!/bin/sh
# The task command of test/cluster/slurm/gpus.sh (tl-executor --task-command): one exec task
# holding one whole gpu, run by a tl-executor inside a Slurm job that asked for --gres=gpu:2.
# It checks that CUDA_VISIBLE_DEVICES and TL_RESOURCE_GPU name one address, the same, that the
# address is one of its job's (SLURM_JOB_GPUS, which the executor's job script inherits from
# Slurm: global indices, on this cluster without device cgroups the same names as the job's
# CUDA_VISIBLE_DEVICES), and that no other running task on the node holds it (a lock directory
# per address, taken with mkdir: the node is one machine, so this spans every executor). Every
# fault is appended to $TL_TEST_DIR/violations and makes it exit 1; what it held is appended to
# $TL_TEST_DIR/held.log as "JOBID EXECUTOR GPU". 300 ms.
set -u
d=$TL_TEST_DIR
violation() {
  echo "tid $TL_TASK_TID on $TL_EXECUTOR_ID (job ${SLURM_JOB_ID-none}): $*" >>"$d/violations"
  exit 1
}
gpu=${TL_RESOURCE_GPU-unset}
cuda=${CUDA_VISIBLE_DEVICES-unset}
job=${SLURM_JOB_GPUS-unset}
[ "$cuda" = "$gpu" ] || violation "CUDA_VISIBLE_DEVICES=$cuda, TL_RESOURCE_GPU=$gpu"
case $gpu in
'' | *[!0-9]*) violation "TL_RESOURCE_GPU=$gpu: not one address" ;;
esac
case ,$job, in
*,"$gpu",*) ;;
*) violation "gpu $gpu is not one of its Slurm job's (SLURM_JOB_GPUS=$job)" ;;
esac
mkdir "$d/gpu$gpu.lock" 2>/dev/null || violation "gpu $gpu is held by another task"
echo "$SLURM_JOB_ID $TL_EXECUTOR_ID $gpu" >>"$d/held.log"
sleep 0.3
rmdir "$d/gpu$gpu.lock"
exit 0

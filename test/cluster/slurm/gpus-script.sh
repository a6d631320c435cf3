#!/bin/sh
# tl-slurm-gpus on its own (docs/slurm.md "GPUs"), no cluster needed: the addresses it prints for
# the environments Slurm gives a job, each run with only the variables named.
#   - Slurm's list and CUDA_VISIBLE_DEVICES naming as many GPUs: CUDA_VISIBLE_DEVICES's (the
#     names the job sees: 0,1 under ConstrainDevices for global 2,3; the same 2,3 without).
#   - CUDA_VISIBLE_DEVICES naming another count (one inherited from the submitting shell):
#     Slurm's list. SLURM_STEP_GPUS before SLURM_JOB_GPUS.
#   - No Slurm list: CUDA_VISIBLE_DEVICES (UUIDs too), else GPU_DEVICE_ORDINAL.
#   - Nothing set, or a quote or a backslash in the list used: exit 1 with the reason.
#
#   gpus-script.sh SCRIPT    SCRIPT is tl-slurm-gpus
#
# Exit status: 0 when every case printed what it must; 1 otherwise.
set -u
script=$1
bad=0
want() { # OUTPUT VAR=VALUE...: the script prints OUTPUT with only those variables set
  _want=$1
  shift
  _got=$(env -i PATH="$PATH" "$@" sh "$script" 2>&1)
  if [ "$_got" != "$_want" ]; then
    echo "gpus-script.sh: $*: got '$_got', want '$_want'" >&2
    bad=1
  fi
}
refused() { # WHY VAR=VALUE...: the script exits 1 saying WHY
  _why=$1
  shift
  _got=$(env -i PATH="$PATH" "$@" sh "$script" 2>&1)
  _rc=$?
  case $_rc:$_got in
  1:*"$_why"*) ;;
  *)
    echo "gpus-script.sh: $*: exit $_rc, '$_got'; want exit 1 saying '$_why'" >&2
    bad=1
    ;;
  esac
}
want '{"name": "gpu", "addresses": ["0", "1"]}' SLURM_JOB_GPUS=2,3 CUDA_VISIBLE_DEVICES=0,1
want '{"name": "gpu", "addresses": ["2", "3"]}' SLURM_JOB_GPUS=2,3 CUDA_VISIBLE_DEVICES=2,3
want '{"name": "gpu", "addresses": ["2", "3"]}' SLURM_JOB_GPUS=2,3 CUDA_VISIBLE_DEVICES=0
want '{"name": "gpu", "addresses": ["2", "3"]}' SLURM_JOB_GPUS=2,3 GPU_DEVICE_ORDINAL=0,1
want '{"name": "gpu", "addresses": ["1"]}' SLURM_STEP_GPUS=1 SLURM_JOB_GPUS=0,1
want '{"name": "gpu", "addresses": ["0"]}' SLURM_STEP_GPUS=1 SLURM_JOB_GPUS=0,1 CUDA_VISIBLE_DEVICES=0
want '{"name": "gpu", "addresses": ["GPU-a1", "GPU-b2"]}' CUDA_VISIBLE_DEVICES=GPU-a1,GPU-b2
want '{"name": "gpu", "addresses": ["3"]}' GPU_DEVICE_ORDINAL=3
refused "no GPU in Slurm's allocation"
refused "no GPU in Slurm's allocation" SLURM_JOB_GPUS= CUDA_VISIBLE_DEVICES=
refused 'CUDA_VISIBLE_DEVICES holds a quote' 'CUDA_VISIBLE_DEVICES=0"'
refused 'SLURM_JOB_GPUS holds a quote or a backslash' "SLURM_JOB_GPUS=1\\"
refused 'GPU_DEVICE_ORDINAL holds a quote' 'GPU_DEVICE_ORDINAL="'
[ "$bad" -eq 0 ] || exit 1
echo "gpus-script.sh: 13 cases as expected"

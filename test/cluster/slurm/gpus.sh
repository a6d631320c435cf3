#!/bin/sh
# GPUs from Slurm's allocation (docs/slurm.md "GPUs"): tl-driver --launcher slurm --executors 2
# --executor-gpus 2 on the private cluster, whose node declares 4 GPUs without devices
# (cluster.sh). Each executor's job asks for --gres=gpu:2 and its tl-executor declares what
# tl-slurm-gpus finds in the job's environment. 24 tasks each hold one whole gpu (exec:gpu
# +gpu=1); each is a process (gpu-task.sh, given to the executors by a wrapper named tl-executor
# next to tl-slurm-gpus, as --executor) that checks its own CUDA_VISIBLE_DEVICES and
# TL_RESOURCE_GPU: one address, the same in both, one of its Slurm job's, held by no other
# running task on the node. While the executors run, this script reads each job's GPU indices
# from slurmctld (`scontrol -d show job`: GRES=gpu:2(IDX:...)): the two jobs must hold disjoint
# pairs, each executor must have registered 2 resources' addresses, and every task must have
# held an address of its own job's pair. The job succeeds, nothing is left.
#
#   gpus.sh DIR    DIR holds tl-driver, tl-executor and tl-slurm-gpus
#
# Exit status: 0 when all of that held; 77 (skipped) without the cluster of
# test/cluster/slurm/cluster.sh, one with no GPU (TL_SLURM_GPUS=0: mknod failed), jq, or a
# tl-driver with --launcher slurm; 1 otherwise. Nothing of this run is left in squeue or running.
set -u
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
name=gpus.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$here/common.sh"
trap slurm_cleanup EXIT
slurm_setup
[ "${TL_SLURM_GPUS:-0}" -ge 4 ] ||
  skip "the cluster's node declares ${TL_SLURM_GPUS:-0} GPUs, not 4 (cluster.sh: TL_SLURM_GPUS)"
[ -x "$dir/tl-slurm-gpus" ] || fail "no $dir/tl-slurm-gpus"

# The executors' program: tl-executor with --task-command, next to tl-slurm-gpus (the launcher
# looks for the discovery script beside the program it runs).
mkdir "$tmp/bin" "$tmp/d"
cat >"$tmp/bin/tl-executor" <<EOS
#!/bin/sh
exec '$dir/tl-executor' --task-command '$here/gpu-task.sh' "\$@"
EOS
chmod +x "$tmp/bin/tl-executor"
ln -s "$dir/tl-slurm-gpus" "$tmp/bin/tl-slurm-gpus"
TL_TEST_DIR=$tmp/d # sbatch passes the environment on to the job, and tl-executor to its tasks
export TL_TEST_DIR

# shellcheck disable=SC2046 # the common options are separate words
"$dir/tl-driver" $(slurm_driver_args) --executor "$tmp/bin/tl-executor" --executors 2 \
  --executor-cores 2 --executor-gpus 2 --job 'exec:gpu:24+gpu=1' --timeout-s 60 \
  >"$tmp/out" 2>"$tmp/err" &
drv=$!
read_port
wait_registered 2 || fail "2 executors did not register"

# Slurm's word on each running job's GPUs, read while the executors run: "JOBID 0,1".
: >"$tmp/idx"
for job in $(run_jobs R); do
  idx=$(scontrol -d show job "$job" | sed -n 's/.*GRES=gpu:2(IDX:\([^)]*\)).*/\1/p')
  # IDX is a list of indices and ranges (0-1, 0,2): made a comma-separated list.
  list=$(echo "$idx" | tr ',' '\n' |
    awk -F- 'NF == 2 { for (i = $1; i <= $2; i++) print i; next } NF == 1 && $1 != "" { print }' |
    paste -sd, -)
  echo "$job $list" >>"$tmp/idx"
done
wait "$drv"
rc=$?
drv=''
echo "$name: the driver exited with status $rc; Slurm's allocations: $(tr '\n' ';' <"$tmp/idx")" >&2
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
[ -s "$tmp/d/violations" ] && fail "the tasks saw: $(cat "$tmp/d/violations")"
check "launcher slurm" '.launcher == "slurm"'
check "the job succeeded" '.jobs == {"succeeded": 1, "failed": 0}'
check "24 tasks succeeded" '.tasks.succeeded == 24'
check "no executor lost" '(.lost_executors | length) == 0'
check_drained
[ "$(grep -c 'executor exec-[0-9]* registered .* 1 resources' "$tmp/err")" -eq 2 ] ||
  fail "the 2 executors did not each register their gpus"

# Slurm's allocations: 2 running jobs, 2 GPUs each, no GPU in both.
[ "$(awk 'NF == 2' "$tmp/idx" | wc -l)" -eq 2 ] || fail "not 2 running jobs with GPUs: $(cat "$tmp/idx")"
all=$(cut -d' ' -f2 "$tmp/idx" | tr ',' '\n')
[ "$(echo "$all" | grep -c .)" -eq 4 ] || fail "not 2 GPUs per job: $(cat "$tmp/idx")"
[ "$(echo "$all" | sort -u | grep -c .)" -eq 4 ] || fail "two jobs share a GPU: $(cat "$tmp/idx")"
# Every task held an address of its own job's pair, as slurmctld gave it; both jobs ran tasks.
[ "$(grep -c . "$tmp/d/held.log")" -ge 24 ] || fail "fewer than 24 tasks ran"
while read -r job ex gpu; do
  list=$(awk -v j="$job" '$1 == j { print $2 }' "$tmp/idx")
  case ,$list, in
  *,"$gpu",*) ;;
  *) fail "a task of $ex (job $job) held gpu $gpu; Slurm gave that job '$list'" ;;
  esac
done <"$tmp/d/held.log"
[ "$(cut -d' ' -f1 "$tmp/d/held.log" | sort -u | wc -l)" -eq 2 ] ||
  fail "the tasks did not run in both jobs: $(sort -u "$tmp/d/held.log" | tr '\n' ';')"
check_nothing_left
cut -d' ' -f1,3 "$tmp/d/held.log" | sort | uniq -c | tr '\n' ';' >&2
echo >&2
exit 0

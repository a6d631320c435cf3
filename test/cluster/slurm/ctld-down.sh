#!/bin/sh
# (c) slurmctld down while an executor is lost: tl-driver runs sleep:10 tasks on 3 Slurm
# executors (about 10 s of work); this script stops slurmctld (by its pid: cluster.sh stop-ctld), then kills one
# executor's process with SIGKILL. Slurm cannot say why it went (the launcher's squeue and
# scontrol fail, and it reports nothing), so the loss stays pending until the driver's
# pending-loss timeout (3 s) ends it as TL_LOSS_PENDING_TIMEOUT; its tasks rerun on the two
# others and the job succeeds. slurmctld is started again on its saved state once the timeout
# has passed, so that the clean end can cancel and confirm every job.
#
#   ctld-down.sh DIR SRC    DIR holds tl-driver and tl-executor; SRC is the source tree
#
# Exit status: 0 when the JSON summary says what it must; 77 (skipped) as scancel.sh; 1
# otherwise. slurmctld is running again on every path.
set -u
dir=$1
src=$2
name=ctld-down.sh
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/slurm/common.sh
. "$(dirname "$0")/common.sh"
ctld_stopped=''
# Starts slurmctld again if this script stopped it (a skipped run touched nothing).
restart_ctld() {
  [ -n "$ctld_stopped" ] || return 0
  "$src/test/cluster/slurm/cluster.sh" start-ctld >/dev/null 2>&1 && ctld_stopped=''
}
trap 'restart_ctld; slurm_cleanup' EXIT
slurm_setup

# shellcheck disable=SC2046
"$dir/tl-driver" $(slurm_driver_args) --executors 3 --executor-cores 2 \
  --pending-loss-timeout-ms 3000 --job sleep:10:6000 --expect-losses 1 --timeout-s 120 \
  >"$tmp/out" 2>"$tmp/err" &
drv=$!
read_port
wait_registered 3 || fail "3 executors did not register"
sleep 0.5
victim=$(pgrep -f -- "tl-executor .*--port $port --id exec-2 " | head -1)
[ -n "$victim" ] || fail "exec-2's process not found"
ctld_stopped=yes
"$src/test/cluster/slurm/cluster.sh" stop-ctld || fail "cannot stop slurmctld"
kill -KILL "$victim"
sleep 6 # past the pending-loss timeout, slurmctld still down
kill -0 "$drv" 2>/dev/null || fail "the driver ended while slurmctld was down"
restart_ctld || fail "slurmctld did not start again"
wait "$drv"
rc=$?
drv=''
check_verdict_allowing_outside_losses "$rc"
check "the job succeeded" '.jobs == {"succeeded": 1, "failed": 0} and .tasks.succeeded == 6000'
check "exec-2 lost, ended by the pending-loss timeout" \
  '(.lost_executors | length) == 1 and (.lost_executors[0] | .id == "exec-2" and
    .phases_seen == ["pending", "pending_timeout"])'
check "one pending-loss timeout" '.tl_stats.pending_loss_timeouts == 1'
check_drained
check_nothing_left
exit 0

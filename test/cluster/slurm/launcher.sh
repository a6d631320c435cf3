#!/bin/sh
# The slurm launcher on its own against the cluster of test/cluster/slurm/cluster.sh:
# tl-test-launcher-slurm (test/cluster/unit/test_launcher_slurm.c) starts executors as Slurm jobs
# and checks the end reported for each way one can end; then nothing of its jobs may be left in
# squeue and no tl-executor of its own running.
#
#   launcher.sh PROGRAM EXECUTOR    the tl-test-launcher-slurm and the tl-executor to run
#
# Exit status: the program's (0 passed, 1 failed); 77 (skipped) without the cluster.
set -u
program=$1
executor=$2
name=launcher.sh
envfile=${TL_SLURM_DIR:-/tmp/tl-slurm}/env.sh
if [ ! -r "$envfile" ]; then
  echo "$name: no Slurm cluster ($envfile missing: test/cluster/slurm/cluster.sh up): skipped" >&2
  exit 77
fi
# shellcheck disable=SC1090
. "$envfile"
if ! timeout 20 sinfo -h -o %T 2>/dev/null | grep -Eq '^(idle|mixed|allocated)$'; then
  echo "$name: the Slurm cluster does not answer: skipped" >&2
  exit 77
fi
"$program" "$executor" "${TL_SLURM_PARTITION:-tl}"
rc=$?
left=$(squeue -h -t PD,R,CG,CF,S -o '%j' | grep -c '^tl-exec-exec-')
if [ "$left" -ne 0 ]; then
  echo "$name: $left executor jobs left in squeue" >&2
  squeue >&2
  rc=1
fi
if pgrep -f -- "^$executor " >/dev/null; then
  echo "$name: tl-executor processes left" >&2
  rc=1
fi
exit $rc

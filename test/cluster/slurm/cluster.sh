#!/usr/bin/env bash
# A private single-node Slurm cluster for the slurm tests (docs/slurm.md): munged, slurmctld and
# slurmd of this machine, started from a directory of their own (configuration, munge key and
# socket, spool, state, logs, pid files) on ports of their own, so that a Slurm already set up
# here is neither used nor disturbed.
#
#   cluster.sh up        install the packages if missing (root only), start the cluster, wait
#                        until the node is idle, print the environment and write it to ENVFILE
#   cluster.sh down      stop exactly what `up` started (by the pids in its pid files), remove
#                        its directory
#   cluster.sh status    say whether it is up (0) or not (1)
#   cluster.sh stop-ctld / start-ctld
#                        stop slurmctld (by its pid) / start it again on the same state: the
#                        tests' "controller down" fault
#
# Environment: TL_SLURM_DIR (the directory, default /tmp/tl-slurm), TL_SLURM_PORT (slurmctld's
# port; slurmd takes the next one; default 16817), TL_SLURM_CPUS (CPUs the node declares, default
# 16), TL_SLURM_GPUS (GPUs the node declares, 0 to 16, default 4; 0: no GRES), TL_SLURM_NO_INSTALL=1
# (never run apt-get). ENVFILE is $TL_SLURM_DIR/env.sh; the tests source it (`export
# SLURM_CONF=...`, TL_SLURM_PARTITION, TL_SLURM_DIR, TL_SLURM_GPUS: the GPUs configured).
#
# GPUs without devices (docs/slurm.md "GPUs"): the node declares Gres=gpu:N, and gres.conf names
# one device file per GPU, $TL_SLURM_DIR/dev/gpuI, made with mknod as character devices 1:3 (the
# numbers of /dev/null: nothing here opens them, and one opened would be harmless). Slurm 22.05
# needs them to be devices: with `Count=N` and no File it drops the GPUs ("Removing file-less
# GPU") and the node goes INVAL; with plain files it schedules them but sets no GPU variable in
# the job's environment. Where mknod fails, the node declares no GPU (TL_SLURM_GPUS=0 in ENVFILE)
# and the GPU test skips.
#
# Exit status: 0 done; 77 Slurm cannot run here (packages missing and not root, or not root:
# slurmd must be root); 1 failure (a Slurm not ours is running, the directory is in use, a daemon
# did not come up: everything this run started is stopped again).
set -euo pipefail

dir=${TL_SLURM_DIR:-/tmp/tl-slurm}
ctld_port=${TL_SLURM_PORT:-16817}
slurmd_port=$((ctld_port + 1))
cpus=${TL_SLURM_CPUS:-16}
gpus=${TL_SLURM_GPUS:-4}
conf=$dir/etc/slurm.conf
envfile=$dir/env.sh
packages=(slurmctld slurmd slurm-client munge)
daemons=(munged slurmctld slurmd)

say() { printf 'cluster.sh: %s\n' "$*" >&2; }

pidfile_of() {
  case $1 in
  munged) echo "$dir/munge/munged.pid" ;;
  slurmctld) echo "$dir/run/slurmctld.pid" ;;
  slurmd) echo "$dir/run/slurmd.pid" ;;
  esac
}

# The pid in daemon $1's pid file if that process is alive and is that daemon; empty otherwise.
live_pid() {
  local f pid
  f=$(pidfile_of "$1")
  [[ -r $f ]] || return 0
  pid=$(tr -dc 0-9 <"$f")
  [[ -n $pid ]] || return 0
  [[ -r /proc/$pid/comm ]] || return 0
  [[ $(cat "/proc/$pid/comm") == "$1"* ]] || return 0
  echo "$pid"
}

# Stops daemon $1 by its pid file: SIGTERM, then SIGKILL after 10 s.
stop_daemon() {
  local pid
  pid=$(live_pid "$1")
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    [[ -e /proc/$pid ]] || return 0
    sleep 0.1
  done
  say "$1 ($pid) ignored SIGTERM: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

# Pids of processes named $1 that are not ours (not the pid in our pid file).
foreign_pids() {
  local ours p
  ours=$(live_pid "$1")
  for p in $(pgrep -x "$1" || true); do
    [[ $p == "$ours" ]] || printf '%s ' "$p"
  done
}

have_packages() {
  command -v munged >/dev/null && command -v slurmctld >/dev/null &&
    command -v slurmd >/dev/null && command -v sbatch >/dev/null
}

install_packages() {
  have_packages && return 0
  if ((EUID != 0)); then
    say "Slurm is not installed (${packages[*]}) and this is not root: cannot run a cluster here"
    exit 77
  fi
  if [[ ${TL_SLURM_NO_INSTALL:-0} == 1 ]]; then
    say "Slurm is not installed and TL_SLURM_NO_INSTALL=1: cannot run a cluster here"
    exit 77
  fi
  say "installing ${packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  local log=/tmp/tl-slurm-apt.log
  if ! apt-get install -y -q "${packages[@]}" >"$log" 2>&1; then
    if ! { apt-get update -q >>"$log" 2>&1 && apt-get install -y -q "${packages[@]}" >>"$log" 2>&1; }; then
      tail -20 "$log" >&2
      say "apt-get could not install ${packages[*]}: cannot run a cluster here"
      exit 77
    fi
  fi
  have_packages || {
    say "installed, but the programs are still missing"
    exit 77
  }
}

# The GPUs' device files and gres.conf (see the top); sets $gpus to 0 where mknod fails.
write_gres() {
  local i
  ((gpus > 0)) || return 0
  install -d -m 755 "$dir/dev"
  for ((i = 0; i < gpus; i++)); do
    if ! mknod -m 666 "$dir/dev/gpu$i" c 1 3 2>"$dir/log/mknod.err"; then
      say "mknod failed ($(cat "$dir/log/mknod.err")): the node declares no GPU"
      gpus=0
      return 0
    fi
  done
  {
    echo "# Written by test/cluster/slurm/cluster.sh: GPUs without devices (docs/slurm.md)."
    echo "AutoDetect=off"
    for ((i = 0; i < gpus; i++)); do
      echo "Name=gpu File=$dir/dev/gpu$i"
    done
  } >"$dir/etc/gres.conf"
}

write_config() {
  local node=$1 gres='' types='# No GPU: no GresTypes'
  write_gres
  if ((gpus > 0)); then
    gres=" Gres=gpu:$gpus"
    types=GresTypes=gpu
  fi
  cat >"$conf" <<EOF
# Written by test/cluster/slurm/cluster.sh: a private single-node cluster (docs/slurm.md).
ClusterName=tl
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge-run/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
ReturnToService=2
MailProg=/bin/true
# Finished jobs stay visible to squeue and scontrol this long: the window in which a driver asks
# for the real reason of a loss.
MinJobAge=1800
KillWait=5
InactiveLimit=0
SlurmctldDebug=info
SlurmdDebug=info
$types
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus$gres State=UNKNOWN
PartitionName=tl Nodes=$node Default=YES MaxTime=INFINITE OverSubscribe=YES State=UP
EOF
}

start_munged() {
  # munged checks permissions strictly: its own directory owned by munge, mode 700; the
  # socket's directory 755; every parent traversable.
  install -d -m 700 -o munge -g munge "$dir/munge"
  install -d -m 755 -o munge -g munge "$dir/munge-run"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chown munge:munge "$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  su -s /bin/sh munge -c "munged --socket=$dir/munge-run/munge.socket \
    --key-file=$dir/munge/munge.key --pid-file=$dir/munge/munged.pid \
    --log-file=$dir/munge/munged.log --seed-file=$dir/munge/munged.seed"
}

start_ctld() {
  SLURM_CONF=$conf slurmctld -f "$conf"
}

# Waits up to $2 tenths of a second for command $1 to succeed.
wait_until() {
  for _ in $(seq "$2"); do
    eval "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

up() {
  install_packages
  if ((EUID != 0)); then
    say "slurmd must run as root here: cannot run a cluster"
    exit 77
  fi
  case $gpus in
  [0-9] | 1[0-6]) ;;
  *)
    say "TL_SLURM_GPUS=$gpus: want 0 to 16"
    exit 1
    ;;
  esac
  if [[ -e $dir ]]; then
    say "$dir already exists: a cluster of ours may be up (cluster.sh status / down)"
    exit 1
  fi
  local d foreign=''
  for d in "${daemons[@]}"; do
    foreign+=$(foreign_pids "$d")
  done
  if [[ -n $foreign ]]; then
    say "a Slurm or munge not started by this script is running (pids $foreign): not touching it"
    exit 1
  fi
  local node
  node=$(hostname -s)
  install -d -m 755 "$dir" "$dir/etc" "$dir/run" "$dir/log" "$dir/spool" "$dir/state"
  trap 'say "failed: stopping what was started"; down_quiet; exit 1' ERR
  write_config "$node"
  start_munged
  wait_until "[[ -S $dir/munge-run/munge.socket ]]" 100 || {
    cat "$dir/munge/munged.log" >&2 || true
    false
  }
  start_ctld
  wait_until "SLURM_CONF=$conf scontrol ping | grep -q UP" 150 || {
    tail -20 "$dir/log/slurmctld.log" >&2 || true
    false
  }
  SLURM_CONF=$conf slurmd -f "$conf"
  wait_until "SLURM_CONF=$conf sinfo -h -o %T | grep -qx idle" 300 || {
    tail -20 "$dir/log/slurmd.log" >&2 || true
    SLURM_CONF=$conf sinfo >&2 || true
    false
  }
  trap - ERR
  {
    echo "# The private Slurm cluster of test/cluster/slurm/cluster.sh"
    echo "export SLURM_CONF=$conf"
    echo "export TL_SLURM_DIR=$dir"
    echo "export TL_SLURM_PARTITION=tl"
    echo "export TL_SLURM_GPUS=$gpus"
  } >"$envfile"
  cat "$envfile"
  say "up: node $node, $cpus CPUs, $gpus GPUs, partition tl; environment in $envfile"
}

# True once squeue lists no job of this cluster that has not ended.
no_live_jobs() {
  [[ -z $(SLURM_CONF=$conf timeout 10 squeue -h -o %i -t PD,R,CG,CF,S 2>/dev/null) ]]
}

down_quiet() {
  local d p
  # Jobs first, while the controller can still cancel them (their processes are slurmd's).
  if [[ -n $(live_pid slurmctld) ]]; then
    SLURM_CONF=$conf timeout 20 scancel --full --signal=KILL --partition=tl >/dev/null 2>&1 || true
    for _ in $(seq 100); do
      no_live_jobs && break
      sleep 0.1
    done
  fi
  for d in slurmd slurmctld munged; do
    stop_daemon "$d"
  done
  # A slurmstepd still running a job once slurmd is gone: ours if it has our SLURM_CONF (slurmd,
  # started with it, passes it on).
  for p in $(pgrep -x slurmstepd || true); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$conf"; then
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$dir"
}

down() {
  if [[ ! -e $dir ]]; then
    say "not up ($dir does not exist)"
    return 0
  fi
  down_quiet
  say "down"
}

status() {
  local d pid rc=0
  for d in "${daemons[@]}"; do
    pid=$(live_pid "$d")
    if [[ -n $pid ]]; then
      echo "$d: running, pid $pid"
    else
      echo "$d: not running"
      rc=1
    fi
  done
  if ((rc == 0)); then
    echo "node: $(SLURM_CONF=$conf sinfo -h -o %T 2>&1)"
    cat "$envfile"
  fi
  return $rc
}

case ${1:-} in
up) up ;;
down) down ;;
status) status ;;
stop-ctld) stop_daemon slurmctld ;;
start-ctld)
  [[ -n $(live_pid slurmctld) ]] || start_ctld
  wait_until "SLURM_CONF=$conf scontrol ping | grep -q UP" 150
  ;;
*)
  echo "usage: $0 up|down|status|stop-ctld|start-ctld" >&2
  exit 2
  ;;
esac

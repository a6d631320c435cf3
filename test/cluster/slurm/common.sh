# shellcheck shell=sh disable=SC2154 # $name, $tmp, $dir are set by the script that sources this
# Shared by the slurm test scripts (sourced, not run): they need the private cluster of
# test/cluster/slurm/cluster.sh (its environment file) and a tl-driver with --launcher slurm. Each
# script sets $name, $dir (holding tl-driver and tl-executor) and $tmp; its driver's stdout and
# stderr go to $tmp/out and $tmp/err.

skip() {
  echo "$name: $*: skipped" >&2
  exit 77
}

# Says why the test failed, shows the driver's output and the JSON summary, and exits 1 (the EXIT
# trap cleans up).
fail() {
  echo "$name: $*" >&2
  for f in out err summary.json; do
    if [ -s "$tmp/$f" ]; then
      echo "--- $f" >&2
      cat "$tmp/$f" >&2
    fi
  done
  exit 1
}

# Skips unless the cluster is up, jq is there and this tl-driver has --launcher slurm. Sets
# $partition and $tag (a comment put on every job this run submits, so that the checks and the
# cleanup see only this run's jobs).
slurm_setup() {
  envfile=${TL_SLURM_DIR:-/tmp/tl-slurm}/env.sh
  [ -r "$envfile" ] || skip "no Slurm cluster ($envfile missing: test/cluster/slurm/cluster.sh up)"
  # shellcheck disable=SC1090
  . "$envfile"
  command -v sbatch >/dev/null 2>&1 || skip "the Slurm client commands are not installed"
  command -v jq >/dev/null 2>&1 || skip "jq is not installed"
  state=$(timeout 20 sinfo -h -o %T 2>/dev/null | head -1)
  case $state in
  idle | mixed | allocated | mix | alloc) ;;
  *) skip "the Slurm cluster does not answer or its node is not usable ('$state')" ;;
  esac
  "$dir/tl-driver" --help 2>&1 | grep -q -- '--launcher local|slurm' ||
    skip "this tl-driver has no --launcher slurm"
  partition=${TL_SLURM_PARTITION:-tl}
  tag="tl-test-$name-$$"
}

# Job ids of this run's jobs (by $tag) in state(s) $1 (squeue's -t list), one per line.
run_jobs() {
  squeue -h -t "$1" -o '%i %k' 2>/dev/null | awk -v tag="$tag" '$2 == tag { print $1 }'
}

# tl-executor processes of this run (their --port is the driver's).
run_executors() {
  [ -n "${port:-}" ] || return 0
  pgrep -f -- "tl-executor .*--port $port " || true
}

# The driver's port, once it listens.
read_port() {
  wait_for "$tmp/out" '^listening on ' 200 || fail "the driver did not listen"
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
  [ -n "$port" ] || fail "no port in the driver's output"
}

# Waits up to $3 tenths of a second (default 300) for a line matching $2 in file $1.
wait_for() {
  _tries=0
  while ! grep -q -- "$2" "$1" 2>/dev/null; do
    _tries=$((_tries + 1))
    [ "$_tries" -gt "${3:-300}" ] && return 1
    sleep 0.1
  done
  return 0
}

# Waits up to $2 tenths of a second for $1 lines matching "executor exec-K registered".
wait_registered() {
  _tries=0
  while [ "$(grep -c 'executor exec-[0-9]* registered' "$tmp/err" 2>/dev/null)" -lt "$1" ]; do
    _tries=$((_tries + 1))
    [ "$_tries" -gt "${2:-600}" ] && return 1
    sleep 0.1
  done
  return 0
}

# The job id of this run's running job for executor $1 (tl-exec-$1).
job_of() {
  squeue -h -t R -o '%i %j %k' | awk -v tag="$tag" -v n="tl-exec-$1" '$2 == n && $3 == tag { print $1 }'
}

# After a run: no job of this run left in squeue that has not ended (15 s for the ends of those
# being cancelled), and no tl-executor process of this run.
check_nothing_left() {
  for _ in $(seq 150); do
    [ -z "$(run_jobs PD,R,CG,CF,S,ST,SO,RS,RQ,SI)" ] && [ -z "$(run_executors)" ] && return 0
    sleep 0.1
  done
  squeue >&2
  fail "left behind: jobs $(run_jobs PD,R,CG,CF,S,ST,SO,RS,RQ,SI | tr '\n' ' ')executors $(run_executors | tr '\n' ' ')"
}

# The EXIT trap: the driver (SIGTERM, then SIGKILL), then whatever of this run is left.
slurm_cleanup() {
  if [ -n "${drv:-}" ]; then
    kill -TERM "$drv" 2>/dev/null
    for _ in $(seq 100); do
      kill -0 "$drv" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$drv" 2>/dev/null
  fi
  if [ -n "${tag:-}" ] && command -v squeue >/dev/null 2>&1; then
    jobs=$(run_jobs PD,R,CG,CF,S,ST,SO,RS,RQ,SI)
    # shellcheck disable=SC2086 # one word per job id
    [ -z "$jobs" ] || scancel --signal=KILL $jobs 2>/dev/null
  fi
  for p in $(run_executors); do
    kill -KILL "$p" 2>/dev/null
  done
  wait 2>/dev/null
  rm -rf "$tmp"
}

# check DESCRIPTION JQ-EXPRESSION: the expression must be true of the JSON summary.
check() {
  jq -e "$2" "$tmp/summary.json" >/dev/null 2>&1 || fail "the JSON summary: $1"
}

# The driver's verdict: the losses this script causes from outside (scancel, kill) are losses the
# run survives (the driver's summary says "ended from outside the driver"), so the driver must
# exit 0, without giving up and without stopping any executor by force. The checks that follow
# say whether the run was right.
check_verdict_allowing_outside_losses() {
  echo "$name: the driver exited with status $1" >&2
  [ "$1" -eq 0 ] || fail "the driver exited with status $1"
  check "the driver did not give up" '.gave_up == false'
  check "no executor stopped by force" '.executors.stopped_by_force == 0'
}

# The ledger drained: no attempt, no task set left.
check_drained() {
  check "the ledger drained" \
    '.tl_stats | .attempts_running == 0 and .attempts_frozen == 0 and .tasksets_active == 0 and
     .tasksets_zombie == 0 and .executors_pending_loss == 0'
}

# Failover tests: kills the driver with SIGKILL, as a crash would; it must leave its record.
crash_driver() {
  kill -9 "$drv"
  wait "$drv" 2>/dev/null
  drv=''
  [ -f "$tmp/state/state" ] || fail "the killed driver left no record"
}

# Failover tests: with the crashed run's output put aside (out1, err1), starts the driver again
# (the script's run_driver, on the same state directory), waits for it and checks its verdict
# and that it says it recovered.
restart_driver() {
  mv "$tmp/out" "$tmp/out1"
  mv "$tmp/err" "$tmp/err1"
  run_driver
  wait "$drv"
  _rc=$?
  drv=''
  check_verdict_allowing_outside_losses "$_rc"
  grep -q '^recovered: from ' "$tmp/out" || fail "the summary does not say it recovered"
}

# The common driver options of these tests.
slurm_driver_args() {
  echo "--launcher slurm --partition $partition --slurm-arg --comment=$tag --slurm-poll-ms 200" \
    "--advertise 127.0.0.1 --listen 127.0.0.1 --heartbeat-ms 200 --summary-json $tmp/summary.json"
}

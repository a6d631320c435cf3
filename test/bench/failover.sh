#!/bin/sh
# The cluster's failover figures (docs/performance.md "Driver failover"): tl-driver --state-dir
# runs 10,000 long `sleep` tasks at once on 16 executors (625 task slots each: 25 cores, a queue
# of 600), is killed with SIGKILL once every task runs, and is started again at once on the same
# directory. Printed: the time from the restart to the last executor's reconciliation, as the
# restarted driver measures it, the record the crashed driver left (its size, per running
# attempt), and the restarted driver's writes of its records (each holds the 10,000 attempts). The figures are measurements, not tests: nothing here fails on a slow machine.
#
# Then what holding launches for a record costs: one job of short `sleep` tasks (3 executors of 4
# cores) run without --state-dir, with it, and with it and --launch-before-record, interleaved,
# ROUNDS times for tasks of 2 ms, of 20 ms, and of 2 ms with --queue 2; printed are each run's
# wall time as a ratio to the run without --state-dir of the same round, and how long launches
# waited.
#
#   failover.sh DIR [ROUNDS]   DIR holds tl-driver and tl-executor; ROUNDS kills (3)
set -u
dir=$1
rounds=${2:-3}
tmp=$(mktemp -d)
drv=''
port=''

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  [ -n "$drv" ] && kill -9 "$drv" 2>/dev/null
  if [ -n "$port" ]; then
    pkill -9 -f "tl-executor --host [^ ]* --port $port " 2>/dev/null
  fi
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# Waits up to 30 s for a line matching $2 in file $1.
wait_for() {
  _n=0
  while ! grep -q "$2" "$1" 2>/dev/null; do
    _n=$((_n + 1))
    [ "$_n" -gt 600 ] && return 1
    sleep 0.05
  done
}

args="--executors 16 --cores 25 --queue 600 --job sleep:60000:10000 --state-dir $tmp/state
  --snapshot-ms 200 --heartbeat-ms 1000 --timeout-s 120"
r=0
while [ "$r" -lt "$rounds" ]; do
  r=$((r + 1))
  rm -rf "$tmp/state"
  # shellcheck disable=SC2086 # split on purpose
  "$dir/tl-driver" $args --progress --progress-ms 100 >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  wait_for "$tmp/out" '^listening on ' || { echo "failover.sh: no listen" >&2; exit 1; }
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
  # Every task launched and running: the progress line shows 10,000 running (or the ledger's
  # record was written after; a record every 200 ms, so wait for two more).
  wait_for "$tmp/err" 'executor exec-16 registered' || { echo "failover.sh: no exec-16" >&2; exit 1; }
  sleep 1.5
  kill -9 "$drv"
  wait "$drv" 2>/dev/null
  bytes=$(wc -c <"$tmp/state/state")
  # shellcheck disable=SC2086
  "$dir/tl-driver" $args >"$tmp/out2" 2>"$tmp/err2" &
  drv=$!
  wait_for "$tmp/err2" 'recovery done in ' || { echo "failover.sh: no recovery" >&2; cat "$tmp/err2" >&2; exit 1; }
  line=$(grep 'recovery done in ' "$tmp/err2")
  frozen=$(sed -n 's/.* \([0-9][0-9]*\) attempts frozen.*/\1/p' "$tmp/err2")
  kill -TERM "$drv" # gives up: STOP to the executors
  wait "$drv" 2>/dev/null
  drv=''
  echo "round $r: record $bytes bytes for $frozen running attempts ($((bytes / (frozen > 0 ? frozen : 1))) B each); ${line#tl-driver: }"
  grep '^state: ' "$tmp/out2" | sed 's/^/  restarted driver: /'
  grep '^  exec-[0-9]*: reconciled' "$tmp/out2" | sort -t' ' -k5 -n | tail -n 1 | sed 's/^ */  last: /'
  sleep 0.5
  port=''
done

# Wall milliseconds of one run of job $1 with the options after it (none: no --state-dir).
job_ms() {
  _job=$1
  shift
  rm -rf "$tmp/jstate"
  _t0=$(date +%s%N)
  # shellcheck disable=SC2086 # split on purpose
  "$dir/tl-driver" --quiet --executors 3 --cores 4 --job "$_job" "$@" >"$tmp/jout" 2>&1 ||
    { echo "failover.sh: the job $_job $* failed" >&2; cat "$tmp/jout" >&2; exit 1; }
  echo $((($(date +%s%N) - _t0) / 1000000))
}

# The last: the 2 ms job again with --queue 2 (each executor holds 2 launches beyond its cores, in
# every run of the round, the baseline's included), so that the wait for a record overlaps the
# tasks still running.
for spec in sleep:2:4000,sleep:2:4000 sleep:20:600,sleep:20:600 sleep:2:4000,sleep:2:4000:q2; do
  job=${spec%:q2}
  queue=''
  [ "$job" = "$spec" ] || queue='--queue 2'
  r=0
  while [ "$r" -lt "$rounds" ]; do
    r=$((r + 1))
    # shellcheck disable=SC2086 # $queue: split on purpose
    base=$(job_ms "$job" $queue)
    # shellcheck disable=SC2086
    early=$(job_ms "$job" $queue --state-dir "$tmp/jstate" --launch-before-record)
    # shellcheck disable=SC2086
    held=$(job_ms "$job" $queue --state-dir "$tmp/jstate")
    wait_line=$(sed -n 's/^launches: //p' "$tmp/jout")
    echo "$job${queue:+ $queue} round $r: no --state-dir $base ms; --launch-before-record" \
      "$(awk "BEGIN { printf \"%.2f\", $early / $base }")x; held for a record" \
      "$(awk "BEGIN { printf \"%.2f\", $held / $base }")x ($wait_line)"
  done
done

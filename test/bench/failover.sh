#!/bin/sh
# The cluster's failover figures (docs/performance.md "Driver failover"): tl-driver --state-dir
# runs 10,000 long `sleep` tasks at once on 16 executors (625 task slots each: 25 cores, a queue
# of 600), is killed with SIGKILL once every task runs, and is started again at once on the same
# directory. Printed: the time from the restart to the last executor's reconciliation, as the
# restarted driver measures it, the record the crashed driver left (its size, per running
# attempt), and the restarted driver's writes of its records (each holds the 10,000 attempts). The figures are measurements, not tests: nothing here fails on a slow machine.
#
# Then what --state-dir costs: the same job (3 executors of 4 cores) without and with it,
# interleaved, ROUNDS times, for 20,000 `noop` tasks and 6,000 `sleep` tasks of 2 ms; printed are
# each run's job time, the best of each, and their ratio.
#
#   failover.sh DIR [ROUNDS [KILLS]]   DIR holds tl-driver and tl-executor; ROUNDS of each job
#                                      (3), KILLS kills (ROUNDS; 0: the costs alone)
set -u
dir=$1
rounds=${2:-3}
kills=${3:-$rounds}
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
while [ "$r" -lt "$kills" ]; do
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

# What --state-dir costs: the job's time ("tasks: N in X s", from offers begun to the last task
# set released) of one run of job $1 with the options after it (none: no --state-dir).
job_s() {
  _job=$1
  shift
  rm -rf "$tmp/jstate"
  # shellcheck disable=SC2086 # split on purpose
  "$dir/tl-driver" --quiet --executors 3 --cores 4 --job "$_job" "$@" >"$tmp/jout" 2>&1 ||
    { echo "failover.sh: the job $_job $* failed" >&2; cat "$tmp/jout" >&2; exit 1; }
  sed -n 's/^tasks: [0-9]* in \([0-9.]*\) s.*/\1/p' "$tmp/jout"
}

# The same job without and with --state-dir, side by side, ROUNDS times each, interleaved; the
# best of each, and their ratio.
for job in noop:20000 sleep:2:6000; do
  r=0
  bases='' states='' waits=''
  while [ "$r" -lt "$rounds" ]; do
    r=$((r + 1))
    base=$(job_s "$job")
    with=$(job_s "$job" --state-dir "$tmp/jstate")
    line=$(sed -n 's/^state: //p' "$tmp/jout")
    waits=$(sed -n 's/^launches: //p' "$tmp/jout")
    echo "$job round $r: no --state-dir $base s; --state-dir $with s ($line)"
    bases="$bases $base"
    states="$states $with"
  done
  best_base=$(echo "$bases" | tr ' ' '\n' | sed '/^$/d' | sort -n | head -n 1)
  best_state=$(echo "$states" | tr ' ' '\n' | sed '/^$/d' | sort -n | head -n 1)
  echo "$job best of $rounds: no --state-dir $best_base s, --state-dir $best_state s:" \
    "$(awk "BEGIN { printf \"%.2f\", $best_state / $best_base }")x (last run's launches: $waits)"
done

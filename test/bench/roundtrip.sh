#!/usr/bin/env bash
# The strict round trip against its floor (docs/performance.md "The strict round trip against a
# raw ping-pong"): `tl-driver --bench --queue 0` (one task in flight per core, every task a LAUNCH
# out and a STATUS back) and `tl-pingpong` (the same frames' bytes over loopback TCP between
# plain processes, as many pairs as the bench has executors x cores), run in turn, RUNS times,
# the order of the two swapped every run. Printed: each run's tasks/s, round trips/s and their
# ratio, then the ratios' median and range; and the CPU time (user + system, the processes each
# started included) per task and per round trip, which a busy machine disturbs less than the
# rates (the driver's includes its start: submitting the tasks, spawning the executors). A
# measurement, run by hand, not a test: nothing here fails on a slow machine.
#
#   roundtrip.sh BUILD [RUNS [TASKS [EXTRA...]]]
#     BUILD   the build directory (examples/cluster/tl-driver and test/bench/tl-pingpong in it)
#     RUNS    pairs of runs (7)
#     TASKS   tasks of each --bench run, round trips of each ping-pong (100000)
#     EXTRA   more tl-driver options, e.g. --executors 4 (the ping-pong then has 4 pairs; with
#             --cores above 1 a LAUNCH frame carries several tasks while each pair carries one,
#             so the ratio is no longer like for like)
set -euo pipefail

build=${1:?usage: roundtrip.sh BUILD [RUNS [TASKS [EXTRA...]]]}
runs=${2:-7}
tasks=${3:-100000}
shift $(($# < 3 ? $# : 3))
extra=("$@")
driver=$build/examples/cluster/tl-driver
pingpong=$build/test/bench/tl-pingpong
for b in "$driver" "$pingpong"; do
  [[ -x $b ]] || { echo "roundtrip.sh: no $b (build it first)" >&2; exit 2; }
done

# The pairs: --bench's executors (2) times their cores (1), or what EXTRA says.
executors=2
cores=1
for ((i = 0; i < ${#extra[@]}; i++)); do
  case ${extra[i]} in
  --executors) executors=${extra[i + 1]} ;;
  --executors=*) executors=${extra[i]#*=} ;;
  --cores | --executor-cores) cores=${extra[i + 1]} ;;
  --cores=* | --executor-cores=*) cores=${extra[i]#*=} ;;
  esac
done
pairs=$((executors * cores))

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TIMEFORMAT='%U %S'

# Runs a command, its output to $tmp/out; prints its CPU time per task in microseconds.
cpu_of() {
  local t
  t=$({ time "$@" >"$tmp/out" 2>"$tmp/err"; } 2>&1) || {
    echo "roundtrip.sh: $1 failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  }
  awk -v n="$tasks" '{ printf "%.1f", ($1 + $2) * 1e6 / n }' <<<"$t"
}

# "tasks/s cpu-us" of one `tl-driver --bench --queue 0` run.
bench() {
  local cpu
  cpu=$(cpu_of "$driver" --quiet --bench --queue 0 --tasks "$tasks" "${extra[@]}")
  echo "$(sed -n 's/^tasks: .*: \([0-9]*\) tasks\/s$/\1/p' "$tmp/out") $cpu"
}

# "round-trips/s cpu-us" of one `tl-pingpong` run.
ping() {
  local cpu
  cpu=$(cpu_of "$pingpong" --quiet --pairs "$pairs" --round-trips "$tasks")
  echo "$(sed -n 's/^round trips: .*: \([0-9]*\) round trips\/s$/\1/p' "$tmp/out") $cpu"
}

echo "tl-driver --bench --queue 0 --tasks $tasks ${extra[*]} against tl-pingpong --pairs $pairs," \
  "$runs runs, interleaved"
printf '%-4s %10s %14s %7s %13s %13s\n' run 'tasks/s' 'round trips/s' ratio 'us CPU/task' 'us CPU/trip'
ratios=()
tcpus=()
pcpus=()
for ((run = 1; run <= runs; run++)); do
  if ((run % 2)); then
    read -r t tc < <(bench)
    read -r p pc < <(ping)
  else
    read -r p pc < <(ping)
    read -r t tc < <(bench)
  fi
  r=$(awk -v t="$t" -v p="$p" 'BEGIN { printf "%.3f", t / p }')
  ratios+=("$r")
  tcpus+=("$tc")
  pcpus+=("$pc")
  printf '%-4s %10s %14s %7s %13s %13s\n' "$run" "$t" "$p" "$r" "$tc" "$pc"
done

# "median M, range A to B" of the numbers on stdin, each printed with $1 digits after the point.
summary() {
  sort -n | awk -v d="$1" '
    { r[NR] = $1 }
    END {
      m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
      f = "%." d "f"
      printf "median " f ", range " f " to " f, m, r[1], r[NR]
    }'
}
echo "ratio (tasks/s / round trips/s): $(printf '%s\n' "${ratios[@]}" | summary 3), $runs runs"
echo "us CPU per task: $(printf '%s\n' "${tcpus[@]}" | summary 1);" \
  "per round trip: $(printf '%s\n' "${pcpus[@]}" | summary 1)"

#!/usr/bin/env bash
# The strict round trip against its floor (docs/performance.md "The strict round trip against a
# raw ping-pong"): `tl-driver --bench --queue 0` (one task in flight per core, every task a LAUNCH
# out and a STATUS back) and `tl-pingpong` (the same frames' bytes over loopback TCP between
# plain processes, as many pairs as the bench has executors x cores), run in turn, RUNS times,
# the order of the two swapped every run. Printed: each run's tasks/s, round trips/s and their
# ratio, then the ratios' median and range. A measurement, run by hand, not a test: nothing here
# fails on a slow machine.
#
#   roundtrip.sh BUILD [RUNS [TASKS [EXTRA...]]]
#     BUILD   the build directory (examples/cluster/tl-driver and test/bench/tl-pingpong in it)
#     RUNS    pairs of runs (7)
#     TASKS   tasks of each --bench run, round trips of each ping-pong (100000)
#     EXTRA   more tl-driver options, e.g. --cores 2 (the ping-pong then has 2 x 2 pairs)
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

# tasks/s of one `tl-driver --bench --queue 0` run.
bench() {
  local out
  out=$("$driver" --quiet --bench --queue 0 --tasks "$tasks" "${extra[@]}") || {
    echo "roundtrip.sh: tl-driver failed" >&2
    exit 1
  }
  sed -n 's/^tasks: .*: \([0-9]*\) tasks\/s$/\1/p' <<<"$out"
}

# round trips/s of one `tl-pingpong` run.
ping() {
  local out
  out=$("$pingpong" --quiet --pairs "$pairs" --round-trips "$tasks") || {
    echo "roundtrip.sh: tl-pingpong failed" >&2
    exit 1
  }
  sed -n 's/^round trips: .*: \([0-9]*\) round trips\/s$/\1/p' <<<"$out"
}

echo "tl-driver --bench --queue 0 --tasks $tasks ${extra[*]} against tl-pingpong --pairs $pairs," \
  "$runs runs, interleaved"
printf '%-4s %12s %16s %7s\n' run 'tasks/s' 'round trips/s' ratio
ratios=()
for ((run = 1; run <= runs; run++)); do
  if ((run % 2)); then
    t=$(bench)
    p=$(ping)
  else
    p=$(ping)
    t=$(bench)
  fi
  r=$(awk -v t="$t" -v p="$p" 'BEGIN { printf "%.3f", t / p }')
  ratios+=("$r")
  printf '%-4s %12s %16s %7s\n' "$run" "$t" "$p" "$r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '
  { r[NR] = $1 }
  END {
    m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "ratio (tasks/s / round trips/s): median %.3f, range %.3f to %.3f, %d runs\n", m, r[1], r[NR], NR
  }'

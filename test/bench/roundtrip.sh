#!/usr/bin/env bash
# The strict round trip against its floor (docs/performance.md "The strict round trip against a
# raw ping-pong"): `tl-driver --bench --queue 0` (one task in flight per core, every task a LAUNCH
# out and a STATUS back) and `tl-pingpong` (the same frames' bytes over loopback TCP between
# plain processes, as many pairs as the bench has executors x cores), RUNS runs of TASKS tasks
# and as many round trips each. A run is SLICES slices of each, the two taking turns (the one
# that goes first alternates), so that what else the machine does in a run falls on both much
# alike. Printed: each run's tasks/s and round trips/s (its tasks over the seconds of its slices,
# as each program times them) and their ratio, then the ratios' median and range; and the CPU
# time (user + system, the processes each started included) per task and per round trip, which a
# busy machine disturbs less than the rates (the driver's includes each slice's start:
# submitting the tasks, spawning the executors, about 40 ms of CPU). A measurement, run by hand,
# not a test: nothing here fails on a slow machine.
#
#   roundtrip.sh BUILD [RUNS [TASKS [SLICES [EXTRA...]]]]
#     BUILD   the build directory (examples/cluster/tl-driver and test/bench/tl-pingpong in it)
#     RUNS    runs (7)
#     TASKS   tasks of a run (100000), split evenly over its slices
#     SLICES  slices of a run (5)
#     EXTRA   more tl-driver options, e.g. --executors 4 (the ping-pong then has 4 pairs; with
#             --cores above 1 a LAUNCH frame carries several tasks while each pair carries one,
#             so the ratio is no longer like for like)
#
# AA=OPTIONS in the environment (AA= for none) adds a third program to every slice, a second
# `tl-pingpong OPTIONS` (the three take turns in a rotating order), and a column: its round
# trips/s over the first ping-pong's in the same run. With AA= that is the ping-pong against
# itself, the spread this machine alone gives a ratio when both sides do the same work; with
# AA=--executor-poll, the ping-pong whose executors wait in epoll_wait as an event loop does.
set -euo pipefail

build=${1:?usage: roundtrip.sh BUILD [RUNS [TASKS [SLICES [EXTRA...]]]]}
runs=${2:-7}
tasks=${3:-100000}
slices=${4:-5}
shift $(($# < 4 ? $# : 4))
extra=("$@")
driver=$build/examples/cluster/tl-driver
pingpong=$build/test/bench/tl-pingpong
for b in "$driver" "$pingpong"; do
  [[ -x $b ]] || { echo "roundtrip.sh: no $b (build it first)" >&2; exit 2; }
done
slice=$((tasks / slices))
((slice > 0)) || { echo "roundtrip.sh: fewer tasks than slices" >&2; exit 2; }
tasks=$((slice * slices))

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

# Runs a command, its output to $tmp/out; prints its CPU time (user + system) in seconds.
cpu_of() {
  local t
  t=$({ time "$@" >"$tmp/out" 2>"$tmp/err"; } 2>&1) || {
    echo "roundtrip.sh: $1 failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  }
  awk '{ print $1 + $2 }' <<<"$t"
}

# "seconds cpu-seconds" of one slice of `tl-driver --bench --queue 0`: the seconds it prints
# ("tasks: N in S s: R tasks/s", from the first offer to the release).
bench() {
  local cpu
  cpu=$(cpu_of "$driver" --quiet --bench --queue 0 --tasks "$slice" "${extra[@]}")
  echo "$(sed -n 's/^tasks: [0-9]* in \([0-9.]*\) s: .*/\1/p' "$tmp/out") $cpu"
}

# "seconds cpu-seconds" of one slice of `tl-pingpong` ("round trips: N in S s: ..."), its
# options after the pairs and the round trips.
ping() {
  local cpu
  cpu=$(cpu_of "$pingpong" --quiet --pairs "$pairs" --round-trips "$slice" "$@")
  echo "$(sed -n 's/^round trips: [0-9]* in \([0-9.]*\) s: .*/\1/p' "$tmp/out") $cpu"
}

# The third program of each slice (AA), or none.
aa=${AA-none}
read -r -a aa_opts <<<"${AA-}"

echo "tl-driver --bench --queue 0 ${extra[*]} against tl-pingpong --pairs $pairs: $runs runs of" \
  "$tasks, each $slices slices of $slice taking turns"
[[ $aa == none ]] || echo "AA: a second tl-pingpong ${aa_opts[*]} in every slice, its rate over the first's"
printf '%-4s %10s %14s %7s %13s %13s' run 'tasks/s' 'round trips/s' ratio 'us CPU/task' 'us CPU/trip'
[[ $aa == none ]] && echo || printf ' %7s\n' AA
ratios=()
tcpus=()
pcpus=()
aas=()
turn=0
for ((run = 1; run <= runs; run++)); do
  ts=0 tc=0 ps=0 pc=0 as=0
  for ((s = 0; s < slices; s++)); do
    a1=0
    if [[ $aa == none ]]; then
      if ((turn++ % 2 == 0)); then
        read -r t1 c1 < <(bench)
        read -r p1 c2 < <(ping)
      else
        read -r p1 c2 < <(ping)
        read -r t1 c1 < <(bench)
      fi
    else
      case $((turn++ % 3)) in
      0)
        read -r t1 c1 < <(bench)
        read -r p1 c2 < <(ping)
        read -r a1 _ < <(ping "${aa_opts[@]}")
        ;;
      1)
        read -r p1 c2 < <(ping)
        read -r a1 _ < <(ping "${aa_opts[@]}")
        read -r t1 c1 < <(bench)
        ;;
      *)
        read -r a1 _ < <(ping "${aa_opts[@]}")
        read -r t1 c1 < <(bench)
        read -r p1 c2 < <(ping)
        ;;
      esac
    fi
    read -r ts tc ps pc as < <(awk -v a="$ts" -v b="$tc" -v c="$ps" -v d="$pc" -v x="$as" \
      -v e="$t1" -v f="$c1" -v g="$p1" -v h="$c2" -v y="$a1" \
      'BEGIN { print a + e, b + f, c + g, d + h, x + y }')
  done
  read -r t p r tu pu ar < <(awk -v n="$tasks" -v ts="$ts" -v tc="$tc" -v ps="$ps" -v pc="$pc" \
    -v as="$as" 'BEGIN { printf "%.0f %.0f %.3f %.1f %.1f %.3f\n", n / ts, n / ps, ps / ts,
      tc * 1e6 / n, pc * 1e6 / n, (as > 0 ? ps / as : 0) }')
  ratios+=("$r")
  tcpus+=("$tu")
  pcpus+=("$pu")
  aas+=("$ar")
  printf '%-4s %10s %14s %7s %13s %13s' "$run" "$t" "$p" "$r" "$tu" "$pu"
  [[ $aa == none ]] && echo || printf ' %7s\n' "$ar"
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
[[ $aa == none ]] ||
  echo "AA (second ping-pong / first): $(printf '%s\n' "${aas[@]}" | summary 3), $runs runs"
echo "us CPU per task: $(printf '%s\n' "${tcpus[@]}" | summary 1);" \
  "per round trip: $(printf '%s\n' "${pcpus[@]}" | summary 1)"

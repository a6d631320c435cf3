#!/bin/bash
# tl-driver --bench against its null floor (--null-ledger: the same driver, executors, frames and
# loop, a FIFO and a map of running tids in place of the ledger), interleaved: for each run, each
# setting, the ledger and then the null floor, one at a time. Printed: every run's tasks/s, then
# per setting the medians, ranges and the ratio of the medians, ledger / null floor, with the
# range of the per-run ratios (docs/performance.md "The wire's own floor"). Measurements, not a
# test: nothing here fails on a slow machine. Run by hand; not part of CI.
#
#   floor.sh DIR [RUNS [SETTING...]]
#
# DIR holds tl-driver and tl-executor (build/examples/cluster); RUNS of each (7); each SETTING
# one quoted string of bench options, by default the bench's own (100,000 tasks, 2 executors of
# 1 core, --queue 1) and two deep pipelines of 1,000,000 tasks: --queue 16, and --cores 16
# --queue 16.
#
#   test/bench/floor.sh build/examples/cluster 7
#   test/bench/floor.sh build/examples/cluster 5 "--queue 0" "--queue 4 --tasks 400000"
set -euo pipefail

if [ $# -lt 1 ] || [ ! -x "$1/tl-driver" ]; then
  echo "usage: $0 DIR [RUNS [SETTING...]]   (DIR holds tl-driver and tl-executor)" >&2
  exit 2
fi
dir=$1
runs=${2:-7}
shift $(($# < 2 ? $# : 2))
settings=("$@")
[ ${#settings[@]} -gt 0 ] ||
  settings=("" "--queue 16 --tasks 1000000" "--cores 16 --queue 16 --tasks 1000000")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One run: tasks/s of tl-driver --bench with the setting and the extra option, or "failed".
bench() {
  local out
  # shellcheck disable=SC2086 # a setting is a list of options
  if out=$("$dir/tl-driver" --quiet --bench $1 $2) && grep -qx OK <<<"$out"; then
    sed -n 's/^tasks: .*: \([0-9]*\) tasks\/s$/\1/p' <<<"$out"
  else
    echo failed
  fi
}

for ((r = 1; r <= runs; r++)); do
  for i in "${!settings[@]}"; do
    l=$(bench "${settings[$i]}" "")
    n=$(bench "${settings[$i]}" --null-ledger)
    echo "$l $n" >>"$tmp/s$i"
    printf 'run %d, --bench %s: ledger %s, null floor %s tasks/s\n' "$r" "${settings[$i]}" "$l" "$n"
  done
done

echo
printf '%-42s %22s %22s %18s\n' "--bench" "ledger (median, range)" "null (median, range)" \
  "ratio (run range)"
for i in "${!settings[@]}"; do
  grep -v failed "$tmp/s$i" | awk -v name="${settings[$i]:-(default)}" '
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++)
        for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { n++; l[n] = $1; f[n] = $2; q[n] = $1 / $2 }
    END {
      if (n == 0) { printf "%-42s no run passed\n", name; exit }
      ml = median(l, n); mf = median(f, n); median(q, n)
      printf "%-42s %8d (%d-%d) %8d (%d-%d) %6.2f (%.2f-%.2f)\n", name, ml, l[1], l[n], mf, f[1],
             f[n], ml / mf, q[1], q[n]
    }'
done

#!/bin/sh
# ab.sh A B [ROUNDS [GROUPS]]: tl-bench binary A against binary B, interleaved (A B, then B A,
# ...), ROUNDS rounds (default 10) of each group in GROUPS (default "lifecycle offers"); prints,
# per figure and field (value, ratio), each side's median and range and the medians' ratio B/A.
# For a change that must not cost what it does not use: build the tree before it (git archive
# into a temporary directory, cmake, --target tl-bench) as A and the tree with it as B.
set -eu
a=$1 b=$2 rounds=${3:-10} groups=${4:-"lifecycle offers"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
  for g in $groups; do
    if [ $((i % 2)) -eq 0 ]; then order="A B"; else order="B A"; fi
    for side in $order; do
      if [ "$side" = A ]; then bin=$a; else bin=$b; fi
      "$bin" --only "$g" | grep '^bench=' | sed "s/^/$side /" >>"$out/lines"
    done
  done
  i=$((i + 1))
done
awk '
  function med(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j + 1] = arr[j]; arr[j + 1] = t }
    return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
  }
  {
    side = $1; sub(/^bench=/, "", $2); name = $2
    for (k = 3; k <= NF; k++) {
      split($k, kv, "=")
      if (kv[1] != "value" && kv[1] != "ratio") continue
      key = name " " kv[1]
      if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
      n[side, key]++; v[side, key, n[side, key]] = kv[2] + 0
    }
  }
  END {
    printf "%-40s %10s %20s %10s %20s %6s\n", "figure", "A median", "A range", "B median", "B range", "B/A"
    for (q = 1; q <= nk; q++) {
      key = order[q]
      for (s = 1; s <= 2; s++) {
        side = s == 1 ? "A" : "B"; m = n[side, key]; lo = 1e300; hi = -1e300
        for (i = 1; i <= m; i++) { x[i] = v[side, key, i]; if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
        md[side] = med(x, m); rg[side] = sprintf("%.2f-%.2f", lo, hi)
      }
      printf "%-40s %10.2f %20s %10.2f %20s %6.3f\n", key, md["A"], rg["A"], md["B"], rg["B"], md["B"] / md["A"]
    }
  }' "$out/lines"

#!/bin/sh
# tl-sim's trace names the addresses each attempt held, and they never overlap more than they
# may: run tl-sim with GPU options and --trace, then read the trace alone (jq). Every attempt
# that held addresses is a complete event with "gpu": "0,2" in its args, as many as the summary
# counts; a GPU executor's process is labelled "gpu xG"; and on each executor, each address is
# held by at most LIMIT attempts at any moment (1 for whole GPUs, k for shares of 1/k), and by
# exactly LIMIT at some moment (the check can fail both ways). Times are compared in integer
# nanoseconds; an attempt that ends when another starts does not overlap it.
#
#   gpu_trace.sh TL-SIM LIMIT [ARGS...]
#
# Exit status: 0 when the trace is as it must be; 77 (skipped) without jq; 1 otherwise.
set -u
command -v jq >/dev/null 2>&1 || { echo "jq not found: skipped"; exit 77; }
sim=$1
limit=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sim" --quiet --trace "$tmp/t.json" "$@" >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
held=$(sed -n 's/^gpu .*; \([0-9]*\) attempts held addresses.*/\1/p' "$tmp/out")
if [ -z "$held" ] || [ "$held" -eq 0 ]; then
  echo "no attempt held addresses"
  cat "$tmp/out"
  exit 1
fi
peak=$(jq -e --argjson held "$held" '
  [.traceEvents[] | select(.ph == "X" and .args.gpu != null)] as $x
  | if ($x | length) != $held then error("\($x | length) events name addresses, not \($held)")
    else . end
  | if ([.traceEvents[] | select(.name == "process_labels") | .args.labels
         | test("^gpu x[0-9]+$")] | length) == 0 then error("no process labelled gpu") else . end
  | [$x[] | {pid, s: (.ts * 1000 | round), e: ((.ts + .dur) * 1000 | round),
             a: (.args.gpu | split(",")[])}]
  | if ([.[] | .a | test("^[0-9]+$")] | all) then . else error("an address is not a number") end
  | group_by([.pid, .a])
  | map([.[] | [.s, 1], [.e, -1]] | sort_by(.[0], .[1])
        | reduce .[] as $ev ({n: 0, max: 0}; .n += $ev[1] | .max = ([.max, .n] | max)) | .max)
  | max' "$tmp/t.json") || { echo "the trace is not as expected"; exit 1; }
if [ "$peak" -ne "$limit" ]; then
  echo "an address was held by at most $peak attempts at once, not $limit"
  exit 1
fi
echo "gpu trace OK: $held attempts named their addresses; at most $peak on one address at once"

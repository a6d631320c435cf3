#!/bin/sh
# tl-sim --trace writes valid Chrome Trace Event JSON with the expected tracks: a named process
# per executor with a named thread per core, every attempt a complete event on one of those
# threads with a palette colour and its outcome, instants for the marks and counters for the
# ledger's sizes. Needs jq.
#
#   trace.sh TL-SIM [ARGS...]
#
# Exit status: 0 when the trace is as it must be; 77 (skipped) without jq; 1 otherwise.
set -u
command -v jq >/dev/null 2>&1 || { echo "jq not found: skipped"; exit 77; }
sim=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sim" --quiet --trace "$tmp/t.json" "$@" >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
execs=$(sed -n 's/^cluster .*; \([0-9]*\) executors in all$/\1/p' "$tmp/out")
attempts=$(sed -n 's/^attempts *\([0-9]*\) ended:.*/\1/p' "$tmp/out")
jq -e --argjson execs "$execs" --argjson attempts "$attempts" '
  def ev(ph): [.traceEvents[] | select(.ph == ph)];
  (.displayTimeUnit == "ms") and (.traceEvents | type == "array")
  # one named process per executor (pids 1..N) and the ledger (pid 0)
  and ([ev("M")[] | select(.name == "process_name") | .pid] | unique) == [range(0; $execs + 1)]
  and ([ev("M")[] | select(.name == "process_name" and .pid > 0) | .args.name
        | test("^exec-[0-9]+ \\(host-[0-9]+, rack-[0-9]+\\)$")] | all)
  # every attempt: a complete event on a named (executor, core) thread
  and (ev("X") | length) == $attempts
  and ([ev("M")[] | select(.name == "thread_name" and .pid > 0) | [.pid, .tid]]) as $threads
  | ([ev("X")[] | [.pid, .tid]] | unique) - $threads == []
  and ([ev("X")[] | (.dur >= 0) and (.ts >= 0)
        and (.cname | IN("good", "bad", "terrible", "grey", "black", "olive"))
        and (.args.outcome | IN("success", "failed", "fetch failed", "killed", "lost",
                                "zombie success"))] | all)
  # marks and counters
  and ([ev("i")[] | .name] | (index("joined") != null) and (index("stage submitted") != null)
                             and (index("task set released") != null))
  and ([ev("i")[] | .s | IN("g", "p")] | all)
  and ([ev("C")[] | .name] | unique) == ["attempts", "executors", "task sets", "tasks pending"]
  and ([ev("C")[] | .args | to_entries[] | .value | type == "number"] | all)
' "$tmp/t.json" >/dev/null || { echo "the trace is not as expected"; exit 1; }
echo "trace OK: $(jq '.traceEvents | length' "$tmp/t.json") events, $execs executors, $attempts attempts"

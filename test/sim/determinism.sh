#!/bin/sh
# The same seed gives the same run: two independent tl-sim processes with the same arguments
# must print the same summary (but for its wall-clock lines) and write the same trace and the
# same call journal.
#
#   determinism.sh TL-SIM [ARGS...]
#
# Exit status: 0 when both runs agree and both exited 0; 1 otherwise.
set -u
sim=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in a b; do
  if ! "$sim" --quiet --trace "$tmp/$run.json" --journal "$tmp/$run.journal" "$@" \
      >"$tmp/$run.out" 2>&1; then
    echo "run $run failed:"
    cat "$tmp/$run.out"
    exit 1
  fi
  grep -v '^wall' "$tmp/$run.out" >"$tmp/$run.summary"
done
status=0
diff -u "$tmp/a.summary" "$tmp/b.summary" || status=1
cmp "$tmp/a.json" "$tmp/b.json" || status=1
cmp "$tmp/a.journal" "$tmp/b.journal" || status=1
cat "$tmp/a.summary"
if [ $status -eq 0 ]; then
  echo "deterministic: same summary, trace ($(wc -c <"$tmp/a.json") bytes) and journal ($(wc -l <"$tmp/a.journal") lines)"
fi
exit $status

#!/bin/sh
# tl-sim's default run with --svg and --metrics: the SVG is well-formed (xmllint, when
# installed), says the ledger drained, and draws the zombie task sets' series back to zero at
# its end; the metrics file is Prometheus text whose values are the run's own: nothing left
# running, frozen, pending or zombie, every task set of the summary released.
#
#   outputs.sh TL-SIM
#
# Exit status: 0 when both are as they must be; 1 otherwise.
set -u
sim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "outputs.sh: $*" >&2
  exit 1
}
"$sim" --quiet --svg "$tmp/run.svg" --metrics "$tmp/run.prom" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "tl-sim failed"; }
grep -q '^verdict  *DRAINED' "$tmp/out" || fail "the run did not drain"

# The SVG.
if command -v xmllint >/dev/null 2>&1; then
  xmllint --noout "$tmp/run.svg" || fail "the SVG is not well-formed XML"
else
  echo "xmllint not installed: the SVG's well-formedness is checked by sim-svg-render only"
fi
grep -q 'drained: all back to 0' "$tmp/run.svg" || fail "the SVG does not say the ledger drained"
grep -q 'zombie task set' "$tmp/run.svg" || fail "the SVG shows no zombie task set"

# The metrics: HELP and TYPE for each sample, and the run's values.
samples=$(grep -c '^taskledger_[a-z_]* [0-9][0-9]*$' "$tmp/run.prom")
helps=$(grep -c '^# HELP taskledger_' "$tmp/run.prom")
types=$(grep -c '^# TYPE taskledger_[a-z_]* \(gauge\|counter\)$' "$tmp/run.prom")
if [ "$samples" -le 20 ] || [ "$samples" -ne "$helps" ] || [ "$samples" -ne "$types" ]; then
  fail "metrics: $samples samples, $helps HELP lines, $types TYPE lines"
fi
for zero in attempts_running attempts_frozen tasks_pending tasksets_active tasksets_zombie \
  executors_pending_loss; do
  grep -q "^taskledger_$zero 0$" "$tmp/run.prom" || fail "metrics: taskledger_$zero is not 0"
done
released=$(sed -n 's/^ledger .* released \([0-9]*\)$/\1/p' "$tmp/out")
if [ -z "$released" ] ||
  ! grep -q "^taskledger_tasksets_released_total $released$" "$tmp/run.prom"; then
  fail "metrics: taskledger_tasksets_released_total is not the summary's $released"
fi
echo "SVG and metrics as they must be ($samples metrics, $released task sets released)"

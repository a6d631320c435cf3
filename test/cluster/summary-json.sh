#!/bin/sh
# tl-driver --summary-json on the cluster-loss-kill scenario: exec-1 is SIGKILLed by the driver
# mid-stage. The JSON must hold one lost executor, exec-1, whose phases are pending then killed
# (the closed connection first) or killed alone (the exit callback first: both phases in one
# report, and the close then finds it removed), the reason TL_LOSS_KILLED, not the app's, from
# the waitpid status; 4,000 tasks succeeded; and every field of tl_stats, as
# include/taskledger.h declares them.
#
#   summary-json.sh DIR SRC    DIR holds tl-driver and tl-executor; SRC is the source tree
#
# Exit status: 0 when the JSON says what it must; 77 (skipped) without jq; 1 otherwise.
set -u
dir=$1
src=$2
name=summary-json.sh
command -v jq >/dev/null 2>&1 || {
  echo "$name: jq is not installed: skipped" >&2
  exit 77
}
tmp=$(mktemp -d)
drv=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  stop_driver "$drv"
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

"$dir/tl-driver" --quiet --executors 3 --cores 4 --job sleep:5:2000,sleep:5:2000 \
  --kill-executor-after 500 --expect-losses 1 --timeout-s 30 \
  --summary-json "$tmp/summary.json" >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
[ -s "$tmp/summary.json" ] || fail "no JSON summary"
jq -e . "$tmp/summary.json" >/dev/null || fail "the summary is not JSON: $(cat "$tmp/summary.json")"

check() { # check DESCRIPTION JQ-EXPRESSION: the expression must be true
  jq -e "$2" "$tmp/summary.json" >/dev/null || {
    cat "$tmp/summary.json" >&2
    fail "the JSON summary: $1"
  }
}
check "launcher local, ok" '.launcher == "local" and .ok == true and .gave_up == false'
check "one job, succeeded" '.jobs == {"succeeded": 1, "failed": 0}'
check "4000 tasks succeeded, some retried" '.tasks.succeeded == 4000 and .tasks.retries > 0'
check "3 executors started, none released" '.executors.started == 3 and .executors.released == 0'
check "one lost executor, exec-1" '(.lost_executors | length) == 1 and .lost_executors[0].id == "exec-1"'
# shellcheck disable=SC2016 # $l is jq's
check "its phases: pending then killed, or killed alone" \
  '.lost_executors[0] as $l |
   ($l.phases_seen == ["pending", "killed"] and $l.detected_by == "connection closed") or
   ($l.phases_seen == ["killed"] and $l.detected_by == "launcher end")'
check "its reason: killed by the driver, from the exit status" \
  '.lost_executors[0] | .reason_kind == "TL_LOSS_KILLED" and .caused_by_app == false and
   .reason_source == "waitpid status" and (.reason | test("killed by the driver"))'
check "the ledger drained" \
  '.tl_stats | .attempts_running == 0 and .attempts_frozen == 0 and .tasksets_active == 0 and
   .tasksets_zombie == 0 and .executors_lost == 1 and .pending_loss_timeouts == 0'

# Every tl_stats field the header declares, and no other.
fields=$(sed -n '/^typedef struct tl_stats {/,/^} tl_stats;/p' "$src/include/taskledger.h" |
  sed -n 's/^ *\(size_t\|uint64_t\) *\([a-z_]*\);.*/\2/p')
[ "$(echo "$fields" | wc -l)" -gt 20 ] || fail "could not read tl_stats' fields from the header"
for f in $fields; do
  check "tl_stats.$f" ".tl_stats | has(\"$f\") and (.\"$f\" | type) == \"number\""
done
n=$(echo "$fields" | wc -l)
check "tl_stats has $n fields" "(.tl_stats | length) == $n"
cat "$tmp/out"
exit 0

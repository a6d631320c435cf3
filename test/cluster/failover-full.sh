#!/bin/bash
# A full file system under --state-dir (docs/cluster.md "Driver failover", "Degraded"): the driver
# runs with RLIMIT_FSIZE at 24 KiB (bash's ulimit -f), so its first record (1,200 pending tasks,
# about 10 KB) is written, and every record written while its 2 executors hold 608 attempts
# (4 cores and a queue of 300 each, about 45 bytes an attempt) fails with EFBIG (the driver ignores
# SIGXFSZ); records fit again as the job ends. Records are asked for every 10 ms, so a couple of
# hundred writes fail. The driver must:
#   - run the job to its end all the same (OK, 1,200 tasks succeeded);
#   - log the failures rate-limited: the first one, then at most one line every 10 s
#     (RECORD_FAIL_LOG_S) with a count, and one line when a write succeeds again: at most 3
#     lines about it in this run of a few seconds, however many failed;
#   - be in one "failover degraded" state while it lasts: taskledger_driver_failover_degraded 1
#     on /metrics, scraped after the first failure was logged;
#   - say it in the summary ("degraded: failover degraded N times ...") and in the JSON summary
#     (state.degraded: times at least 1, failures as many as state.failed, at least 20).
#
#   failover-full.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when all of that holds; 1 otherwise. No process is left behind.
set -u
dir=$1
tmp=$(mktemp -d)
drv=
name=failover-full.sh
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
trap cleanup EXIT

# GET /metrics into $1 over bash's /dev/tcp.
scrape() {
  local fd
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET /metrics HTTP/1.0\r\n\r\n' >&"$fd"
  timeout 10 cat <&"$fd" >"$1"
  local rc=$?
  exec {fd}<&-
  return $rc
}

(
  ulimit -f 24 # KiB in bash
  exec "$dir/tl-driver" --executors 2 --cores 4 --queue 300 --job sleep:20:1200 \
    --state-dir "$tmp/state" --snapshot-ms 10 --metrics-port 0 --timeout-s 60 \
    --summary-json "$tmp/summary.json"
) >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^metrics on ' || fail "the driver did not print its metrics port"
port=$(sed -n 's/^metrics on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
wait_for "$tmp/err" 'failover degraded: a crash now recovers' || fail "no write failed"
scrape "$tmp/metrics" || fail "no answer on /metrics"
grep -q '^taskledger_driver_failover_degraded 1' "$tmp/metrics" ||
  fail "/metrics does not say degraded: $(grep failover "$tmp/metrics")"
grep -Eq '^taskledger_driver_state_write_failures_total [1-9]' "$tmp/metrics" ||
  fail "/metrics counts no failed write"
wait "$drv"
rc=$?
drv=
[ "$rc" -eq 0 ] || fail "the driver exited $rc"
grep -q '^OK$' "$tmp/out" || fail "no OK"
grep -q '^tasks: 1200 ' "$tmp/out" || fail "not every task succeeded"
grep -q 'File too large' "$tmp/err" || fail "no write failed with EFBIG"
lines=$(grep -c 'writing the state\|the state is written again' "$tmp/err")
[ "$lines" -le 3 ] || fail "$lines log lines about failed writes: not rate-limited"
grep -q 'the state is written again, after [0-9]* failed writes' "$tmp/err" ||
  fail "the end of the degraded state was not logged"
grep -Eq '^degraded: failover degraded [1-9][0-9]* times, [0-9.]+ s in all, [0-9]+ failed writes' \
  "$tmp/out" || fail "the summary does not say degraded"
if command -v jq >/dev/null 2>&1; then
  jq -e '.ok and .state.degraded.times >= 1 and .state.failed >= 20 and
    .state.degraded.failures == .state.failed and .state.degraded.seconds > 0' \
    "$tmp/summary.json" >/dev/null ||
    fail "the JSON summary is wrong: $(jq -c .state "$tmp/summary.json")"
fi
echo "$name: $(grep '^degraded: ' "$tmp/out"); $lines log lines"
exit 0

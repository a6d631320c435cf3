#!/bin/bash
# tl-driver --metrics-port: while a job of 40 tasks of 200 ms runs on 2 executors of 4 cores, the
# script reads the metrics port from the driver's stdout and fetches GET /metrics over bash's
# /dev/tcp (no curl needed) until some task has launched. The response must be 200 with the
# Prometheus content type and a Content-Length that matches the body; the body must hold the
# ledger's 40 metrics, then the driver's own (taskledger_driver_*) if it has any,
# taskledger_attempts_running at most the 8 cores and taskledger_launched_total at least that
# and at most 40. A wrong path must get 404, another method 405, a malformed request
# 400 and an oversized head 431. A connection left with half a request must not keep the driver
# from finishing: it exits 0 (its summary says OK) and that connection gets EOF, no answer.
#
# The server is GNU libmicrohttpd (examples/cluster/driver/metrics_http.c), and one expectation follows
# it: on an oversized head it answers 431 after reading only its first METRICS_HTTP_MEMORY_MAX
# bytes and closes at once, so the rest of the head, unread, turns the close into a reset. The
# client's write may then fail (EPIPE) and its read end with ECONNRESET after the 431; neither is
# an error here (fetch_cut), the 431 having arrived first. The old hand-written server read and
# dropped the rest before closing. Every other status is checked as before.
#
#   metrics.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when all of that holds; 1 otherwise. No process is left behind on any path.
set -u
dir=$1
tmp=$(mktemp -d)
drv=
name=metrics.sh
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
# shellcheck disable=SC2317 # run by the trap
cleanup() {
  { exec 4<&-; } 2>/dev/null
  stop_driver "$drv"
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# Sends $1 (with its backslash escapes, as printf %b reads them) to the metrics port and writes
# the whole response to $2.
fetch() {
  local fd
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf '%b' "$1" >&"$fd"
  timeout 10 cat <&"$fd" >"$2"
  local rc=$?
  exec {fd}<&-
  return $rc
}
# fetch for a request the server answers before reading all of it, then closes with the rest
# unread (a reset): a failed write, and a reset after the answer, are not errors; 1 when nothing
# came back (or after 10 s).
fetch_cut() {
  local fd
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
  (
    trap '' PIPE
    printf '%b' "$1" >&"$fd"
  ) 2>/dev/null
  timeout 10 cat <&"$fd" >"$2" 2>/dev/null
  local rc=$?
  exec {fd}<&-
  [ "$rc" -ne 124 ] && [ -s "$2" ]
}
# The value of metric $1 in response file $2.
metric() { sed -n "s/^$1 \\([0-9][0-9]*\\)\\r\\{0,1\\}\$/\\1/p" "$2"; }

"$dir/tl-driver" --quiet --executors 2 --cores 4 --job sleep:200:40 --metrics-port 0 \
  --timeout-s 30 >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^metrics on ' || fail "the driver did not print its metrics port"
port=$(sed -n 's/^metrics on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
[ -n "$port" ] || fail "no port in the metrics line"

# GET /metrics until a task has launched (the executors register first).
launched=0
for _ in $(seq 100); do
  fetch 'GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: text/plain\r\n\r\n' "$tmp/m" ||
    fail "GET /metrics: no response"
  launched=$(metric taskledger_launched_total "$tmp/m")
  [ -n "$launched" ] && [ "$launched" -gt 0 ] && break
  sleep 0.05
done
if [ -z "$launched" ] || [ "$launched" -eq 0 ]; then fail "no task launched: $(cat "$tmp/m")"; fi
head -n 1 "$tmp/m" | grep -q $'^HTTP/1\\.[01] 200 OK\r$' || fail "status: $(head -n 1 "$tmp/m")"
grep -qi $'^Content-Type: text/plain; version=0\\.0\\.4\r$' "$tmp/m" || fail "no Prometheus type"
length=$(sed -n 's/^Content-Length: \([0-9][0-9]*\)\r$/\1/ip' "$tmp/m")
body=$(($(wc -c <"$tmp/m") - $(sed -n '1,/^\r$/p' "$tmp/m" | wc -c)))
if [ -z "$length" ] || [ "$length" -ne "$body" ]; then
  fail "Content-Length ${length:-none}, body $body"
fi
# The ledger's 40 (tl_metrics_text), then the driver's own (taskledger_driver_*, the extra text
# of metrics_http_set_extra), if it has any, after them all.
types=$(grep '^# TYPE taskledger_[a-z_]* \(gauge\|counter\)$' "$tmp/m" |
  grep -vc '^# TYPE taskledger_driver_')
[ "$types" -eq 40 ] || fail "$types ledger metrics, want 40"
first_driver=$(grep -n '^# [A-Z]* taskledger_driver_' "$tmp/m" | head -n 1 | cut -d: -f1)
last_ledger=$(grep -n '^taskledger_[a-z_]* ' "$tmp/m" | grep -v ':taskledger_driver_' |
  tail -n 1 | cut -d: -f1)
if [ -n "$first_driver" ] && [ "$first_driver" -lt "$last_ledger" ]; then
  fail "the driver's metrics (line $first_driver) before the ledger's last (line $last_ledger)"
fi
running=$(metric taskledger_attempts_running "$tmp/m")
if [ -z "$running" ] || [ "$running" -gt 8 ]; then fail "attempts_running ${running:-none}"; fi
if [ "$launched" -lt "$running" ] || [ "$launched" -gt 40 ]; then
  fail "launched_total $launched with attempts_running $running"
fi
grep -q '^# TYPE taskledger_launched_total counter$' "$tmp/m" || fail "launched_total's type"
grep -q '^# TYPE taskledger_attempts_running gauge$' "$tmp/m" || fail "attempts_running's type"

# What is not GET /metrics.
fetch 'GET /nope HTTP/1.0\r\n\r\n' "$tmp/r" || fail "GET /nope: no response"
head -n 1 "$tmp/r" | grep -q $'^HTTP/1\\.[01] 404 ' || fail "GET /nope: $(head -n 1 "$tmp/r")"
fetch 'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n' "$tmp/r" ||
  fail "POST: no response"
head -n 1 "$tmp/r" | grep -q $'^HTTP/1\\.[01] 405 ' || fail "POST: $(head -n 1 "$tmp/r")"
fetch 'GET /metrics\r\n\r\n' "$tmp/r" || fail "malformed: no response"
head -n 1 "$tmp/r" | grep -q $'^HTTP/1\\.[01] 400 ' || fail "malformed: $(head -n 1 "$tmp/r")"
fetch_cut "GET /metrics HTTP/1.1\\r\\nX-Long: $(head -c 5000 /dev/zero | tr '\0' a)\\r\\n\\r\\n" \
  "$tmp/r" || fail "oversized: no response"
head -n 1 "$tmp/r" | grep -q $'^HTTP/1\\.[01] 431 ' || fail "oversized: $(head -n 1 "$tmp/r")"

# Half a request, left open while the driver finishes.
exec 4<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect"
printf 'GET /metr' >&4

wait "$drv"
rc=$?
drv=
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
timeout 10 cat <&4 >"$tmp/half" || fail "the half request's connection was not closed"
[ ! -s "$tmp/half" ] || fail "the half request was answered: $(cat "$tmp/half")"
exec 4<&-
for want in 'job 1: succeeded' 'tl_check OK' '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
echo "metrics.sh: launched_total $launched, attempts_running $running at the first scrape"
exit 0

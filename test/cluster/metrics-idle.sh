#!/bin/bash
# tl-driver --metrics-port against idle clients: 16 connections from 127.0.0.2 that send
# nothing, each opened again 20 ms after the server closes it (16 persistent idle clients, the
# attack that once starved a scraper: the old server held 16 connections at most, 5 s each),
# while a scraper on 127.0.0.1 fetches GET /metrics 60 times, 100 ms apart. At least 57 of the
# 60 scrapes must get a 200 with the metrics in its body; no idle connection may get an answer,
# none may stay open longer than about the server's idle timeout (METRICS_HTTP_TIMEOUT_MS, 2 s:
# at most 3.5 s here), and some must have been held that long (else they took no slot and the
# test proved nothing); then the driver must end OK (status 0).
#
# The idle clients come from another address than the scraper's on purpose: the server limits
# the connections of one address (METRICS_HTTP_PER_IP_MAX, 8), which is what keeps them from
# taking the slots a scraper elsewhere needs. Idle clients on the scraper's own address could
# still crowd it out; each holds a slot for the idle timeout only.
#
#   metrics-idle.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when all of that holds; 77 (skipped) without python3, or where 127.0.0.2
# cannot be bound; 1 otherwise. No process is left behind on any path.
set -u
dir=$1
name=metrics-idle.sh
command -v python3 >/dev/null 2>&1 || {
  echo "$name: python3 is not installed: skipped" >&2
  exit 77
}
python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null || {
  echo "$name: 127.0.0.2 cannot be bound here: skipped" >&2
  exit 77
}
tmp=$(mktemp -d)
drv='' idle=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
# shellcheck disable=SC2317 # run by the trap
idle_cleanup() {
  if [ -n "$idle" ]; then kill -9 "$idle" 2>/dev/null; fi
  cleanup
}
trap idle_cleanup EXIT

# GET /metrics over bash's /dev/tcp (from 127.0.0.1), the whole response to $1; 1 when the
# connection failed or the response took more than 2 s. A server that closes the connection at
# once makes the write fail (EPIPE, in a subshell that ignores SIGPIPE), not the script.
scrape() {
  local fd
  : >"$1"
  { exec {fd}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
  (
    trap '' PIPE
    printf 'GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n' >&"$fd"
  ) 2>/dev/null
  timeout 2 cat <&"$fd" >"$1" 2>/dev/null
  local rc=$?
  exec {fd}<&-
  return $rc
}

# 4 cores, 120 tasks of 600 ms: 18 s of job, longer than the 60 scrapes take even under TSan on
# a loaded machine (with 12 s, a run there saw the job end before the last 4 scrapes).
"$dir/tl-driver" --quiet --executors 2 --cores 2 --job sleep:600:120 --metrics-port 0 \
  --timeout-s 60 >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^metrics on ' || fail "the driver did not print its metrics port"
port=$(sed -n 's/^metrics on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
[ -n "$port" ] || fail "no port in the metrics line"

# The idle clients: they write "ready" to $tmp/ready once all 16 are open, and run until
# $tmp/stop exists; then they write their account to $tmp/idle, one "key value" a line.
python3 - "$port" "$tmp" <<'EOF' &
import os, selectors, socket, sys, time

port, tmp = int(sys.argv[1]), sys.argv[2]
CLIENTS, REOPEN_S, SOURCE = 16, 0.02, "127.0.0.2"
sel = selectors.DefaultSelector()
opened = closed = answered = connect_errors = held = 0
max_life = 0.0
reopen_at = []  # when each closed client connects again


def connect():
    global opened, connect_errors
    s = socket.socket()
    try:
        s.bind((SOURCE, 0))
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        connect_errors += 1
        reopen_at.append(time.monotonic() + REOPEN_S)
        return
    opened += 1
    sel.register(s, selectors.EVENT_READ, time.monotonic())


for _ in range(CLIENTS):
    connect()
with open(os.path.join(tmp, "ready"), "w") as f:
    f.write("ready\n")
stop = os.path.join(tmp, "stop")
while not os.path.exists(stop):
    for key, _ in sel.select(timeout=0.01):
        s, since = key.fileobj, key.data
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data:  # an answer to a request never sent
            answered += 1
            continue
        life = time.monotonic() - since
        closed += 1
        max_life = max(max_life, life)
        held += life >= 1.5
        sel.unregister(s)
        s.close()
        reopen_at.append(time.monotonic() + REOPEN_S)
    now = time.monotonic()
    due = [t for t in reopen_at if t <= now]
    reopen_at[:] = [t for t in reopen_at if t > now]
    for _ in due:
        connect()
now = time.monotonic()
oldest_open = max([now - key.data for key in sel.get_map().values()] or [0.0])
with open(os.path.join(tmp, "idle"), "w") as f:
    f.write(f"opened {opened}\nclosed {closed}\nheld {held}\nanswered {answered}\n")
    f.write(f"connect_errors {connect_errors}\n")
    f.write(f"max_life_ms {int(max_life * 1000)}\noldest_open_ms {int(oldest_open * 1000)}\n")
EOF
idle=$!
for _ in $(seq 100); do
  [ -e "$tmp/ready" ] && break
  kill -0 "$idle" 2>/dev/null || fail "the idle clients did not start"
  sleep 0.05
done
[ -e "$tmp/ready" ] || fail "the idle clients did not connect"
sleep 0.3 # let the server take them in

ok=0
for i in $(seq 60); do
  if scrape "$tmp/m" && head -n 1 "$tmp/m" | grep -q $'^HTTP/1\\.[01] 200 ' &&
    grep -q '^taskledger_launched_total [0-9]' "$tmp/m"; then
    ok=$((ok + 1))
  else
    echo "$name: scrape $i: $(head -c 80 "$tmp/m" | head -n 1)" >&2
  fi
  sleep 0.1
done

touch "$tmp/stop"
wait "$idle"
idle_rc=$?
idle=''
[ "$idle_rc" -eq 0 ] || fail "the idle clients failed (status $idle_rc)"
# The value of key $1 in the idle clients' account.
idle_value() { sed -n "s/^$1 //p" "$tmp/idle"; }
[ -n "$(idle_value max_life_ms)" ] || fail "the idle clients wrote no account"
echo "$name: $ok of 60 scrapes answered 200; idle clients: $(tr '\n' ' ' <"$tmp/idle")"
[ "$ok" -ge 57 ] || fail "only $ok of 60 scrapes got a 200 with the metrics"
[ "$(idle_value answered)" -eq 0 ] || fail "an idle connection got an answer"
[ "$(idle_value max_life_ms)" -le 3500 ] ||
  fail "an idle connection was held $(idle_value max_life_ms) ms (want about 2000)"
[ "$(idle_value oldest_open_ms)" -le 3500 ] ||
  fail "an idle connection was still open after $(idle_value oldest_open_ms) ms"
[ "$(idle_value held)" -gt 0 ] || fail "no idle connection was held: they took no slot"

wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
for want in 'job 1: succeeded' 'tl_check OK' '^OK$'; do
  grep -q "$want" "$tmp/out" || fail "the summary lacks: $want"
done
exit 0

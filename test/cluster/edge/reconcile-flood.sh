#!/bin/bash
# A reconciliation of 131,071 attempts does not stall the driver's loop (issue 28, D7; ctest
# reconcile-flood, labels edge and failover; docs/cluster.md "Driver failover").
#
#   reconcile-flood.sh DIR    DIR holds tl-driver and tl-executor
#
# tl-driver --state-dir runs a job of 3 s tasks on two executors it waits for (--accept 2):
# `victim` and `hb`, real tl-executor processes. Once both run tasks, the driver and `victim` are
# killed (SIGKILL) and the driver is started again on the same directory: `hb` reconnects and
# reconciles, and goes on heartbeating every 100 ms against a heartbeat timeout of 1.5 s (6 s
# under a sanitizer). While recovery waits for `victim` (so that the job cannot end meanwhile),
# a client with the token (edge/attack.py's encoders) registering a new id reconciles 131,071
# attempts (a stray reconciliation: every tid killed, as its frames come), and one that names
# 131,073 in all is closed for it. Then a client registers as `victim`, which the restored ledger
# holds RECOVERING, and reconciles 131,071 attempts it does not know, in 4 RECONCILE frames: each
# gets a KILL, in at most 2 KILL frames; the driver says it applied the reconciliation in less
# than the heartbeat timeout (0.07 to 0.5 s here, under load; 2.2 to 2.9 s, a write per KILL,
# before), and `hb` is never lost to its heartbeat timeout. The job then succeeds, and `hb` ends
# under the restarted driver's epoch, 2.
#
# Exit status: 0 when all of that held; 77 (skipped) without python3; 1 otherwise. No process is
# left behind on any path.
set -u
dir=$1
name="reconcile-flood.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null 2>&1 || {
  echo "$name: python3 is not installed: skipped" >&2
  exit 77
}
tmp=$(mktemp -d)
drv='' ext='' hb=''
# shellcheck source=test/cluster/common.sh
. "$here/../common.sh"
# shellcheck disable=SC2317 # run by the trap
flood_cleanup() {
  if [ -n "$hb" ]; then kill -9 "$hb" 2>/dev/null; fi
  cleanup
}
trap flood_cleanup EXIT
token=$(head -c 24 /dev/urandom | base64)
export TL_CLUSTER_TOKEN=$token

# The heartbeat timeout, and the bound on the reconciliation's time: 1.5 s, or 6 s under a
# sanitizer (TL_EDGE_SANITIZED=1, as for edge.sh), which slows the ledger's call several times.
bound_ms=1500
[ "${TL_EDGE_SANITIZED:-0}" = 1 ] && bound_ms=6000
args=(--state-dir "$tmp/state" --executors 0 --accept 2 --cores 2 --job sleep:3000:4
  --heartbeat-timeout-ms "$bound_ms" --recovery-timeout-ms 20000 --pending-loss-timeout-ms 300
  --timeout-s 60)
"$dir/tl-driver" "${args[@]}" >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
"$dir/tl-executor" --port "$port" --id victim --cores 2 --heartbeat-ms 100 2>"$tmp/victim" &
ext=$!
"$dir/tl-executor" --port "$port" --id hb --cores 2 --heartbeat-ms 100 2>"$tmp/hb" &
hb=$!
wait_for "$tmp/err" 'executor victim registered' || fail "victim did not register"
wait_for "$tmp/err" 'executor hb registered' || fail "hb did not register"
sleep 0.5 # their launches go out once a record holds them
kill -9 "$drv" "$ext"
wait "$drv" "$ext" 2>/dev/null
drv='' ext=''
mv "$tmp/err" "$tmp/err1"
"$dir/tl-driver" "${args[@]}" --port "$port" >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/err" 'executor hb reconciled' || fail "hb did not reconcile"

# The clients: REGISTER, then a reconciliation of the given items; each reads what the driver
# sends until it closes the connection or 3 s pass, and says how many KILL frames came and how
# many tids they named, and whether the driver closed the connection.
cat >"$tmp/client.py" <<'EOF'
import os, socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
import attack
port, exec_id, n, base = int(sys.argv[2]), sys.argv[3].encode(), int(sys.argv[4]), 1 << 40
items = [(base + i, base, i, 0, 0) for i in range(n)]  # no such task set: none adopted
s = socket.create_connection(("127.0.0.1", port))
s.sendall(attack.register_frame(exec_id, socket.gethostname().encode(), 2,
                                os.environ["TL_CLUSTER_TOKEN"].encode()) +
          attack.reconcile_frames(items))
buf, frames, tids, closed, end = b"", 0, 0, 0, time.time() + 3
s.settimeout(0.2)
while time.time() < end:
    try:
        data = s.recv(1 << 20)
    except socket.timeout:
        continue
    except ConnectionResetError:
        data = b""
    if not data:
        closed = 1
        break
    buf += data
    while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from("<I", buf)[0]:
        size = struct.unpack_from("<I", buf)[0]
        if buf[5] == attack.MSG_KILL:
            reason = struct.unpack_from("<H", buf, 7)[0]
            frames += 1
            tids += struct.unpack_from("<I", buf, 9 + reason)[0]
        buf = buf[4 + size:]
    if tids >= n:
        break
print("kill_frames=%d kill_tids=%d closed=%d" % (frames, tids, closed))
EOF
client() { python3 "$tmp/client.py" "$here" "$port" "$@"; }

out=$(client stray-1 131071) || fail "the stray client failed"
echo "stray: $out"
case $out in *"kill_tids=131071 "*) ;; *) fail "a stray reconciliation was not killed: $out" ;; esac
wait_for "$tmp/err" 'executor stray-1 reconciled 131071 attempts, but it was not recovering' ||
  fail "the stray reconciliation is not logged"

out=$(client over-1 131073) || fail "the over-limit client failed"
echo "over the limit: $out"
case $out in *"closed=1"*) ;; *) fail "a reconciliation over the limit was not closed: $out" ;; esac
grep -q 'closing connection of over-1 .*: a reconciliation of more than 131072 attempts' \
  "$tmp/err" || fail "the refusal is not logged"

out=$(client victim 131071) || fail "the client failed"
echo "victim: $out"
case $out in *"kill_tids=131071 "*) ;; *) fail "not every unknown tid was killed: $out" ;; esac
frames=$(echo "$out" | sed -n 's/.*kill_frames=\([0-9]*\).*/\1/p')
[ "$frames" -le 2 ] || fail "$frames KILL frames for one reconciliation"
# Its KILLs may reach the client before the driver logs the reconciliation.
wait_for "$tmp/err" 'executor victim reconciled: 131071 tids named, 131071 unknown' ||
  fail "the reconciliation is not logged"
line=$(grep 'executor victim reconciled: 131071 tids named, 131071 unknown' "$tmp/err")
ms=$(echo "$line" | sed -n 's/.*applied in \([0-9]*\)\.[0-9] ms$/\1/p')
if [ -z "$ms" ] || [ "$ms" -ge "$bound_ms" ]; then fail "the reconciliation took the loop $ms ms: $line"; fi

wait "$drv"
rc=$?
drv=''
grep 'executor hb lost' "$tmp/err" && fail "hb was lost: the loop stalled"
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
grep -q '^OK$' "$tmp/out" || fail "the summary does not say OK"
wait "$hb" 2>/dev/null
hb=''
# The restarted driver runs under the next epoch, which hb took (docs/cluster.md "Fencing").
grep -q 'hb: driver epoch 2; 0 drivers of an older epoch refused' "$tmp/hb" ||
  fail "hb did not take the restarted driver's epoch 2: $(cat "$tmp/hb")"
echo "$line"
exit 0

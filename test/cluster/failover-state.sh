#!/bin/sh
# The state directory of driver failover (docs/cluster.md "Driver failover"), in one of its
# modes:
#
#   failover-state.sh DIR MODE   DIR holds tl-driver and tl-executor; MODE:
#     lock      a driver runs on a state directory; a second one started on it while the first
#               runs is refused at once (exit status 1, naming the directory and the first one's
#               pid), reads nothing and listens on nothing; the first runs on to OK
#     links     a symbolic link planted at state.tmp, state, state.prev, state.prev.tmp or lock
#               (dangling, or to a file of the user's) makes the driver refuse, naming it: the
#               link's target is neither created nor changed; a directory writable by its group
#               or by others is refused; a 0700 directory with nothing planted runs to OK
#
# Exit status: 0 when the driver did what it must, 1 otherwise. No process is left behind.
set -u
dir=$1
mode=$2
tmp=$(mktemp -d)
name="failover-state.sh ($mode)"
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"

# Every tl-executor that connects to $1 (its command line names the port).
executors_of() {
  pgrep -f "tl-executor --host [^ ]* --port $1 " 2>/dev/null
}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_all() {
  if [ -n "${port:-}" ]; then
    for p in $(executors_of "$port"); do kill -9 "$p" 2>/dev/null; done
  fi
  chmod -R u+rwx "$tmp" 2>/dev/null
  cleanup
}
trap cleanup_all EXIT

state="$tmp/state"
: >"$tmp/out"
: >"$tmp/err"

case $mode in
lock)
  "$dir/tl-driver" --executors 2 --cores 2 --job sleep:20:200 --state-dir "$state" \
    --snapshot-ms 50 --timeout-s 60 >"$tmp/out" 2>"$tmp/err" &
  drv=$!
  wait_for "$tmp/out" '^listening on ' || fail "the first driver did not listen"
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
  wait_for "$tmp/err" 'executor exec-2 registered' || fail "exec-2 did not register"
  # The second driver, the same command line and directory, while the first runs.
  start=$(date +%s)
  rc=0
  "$dir/tl-driver" --executors 2 --cores 2 --job sleep:20:200 --state-dir "$state" \
    --snapshot-ms 50 --timeout-s 60 >"$tmp/out2" 2>"$tmp/err2" || rc=$?
  [ "$rc" -eq 1 ] || fail "the second driver exited $rc, not 1: $(cat "$tmp/out2" "$tmp/err2")"
  [ $(($(date +%s) - start)) -le 3 ] || fail "the second driver was not refused at once"
  grep -q "$state is in use by another tl-driver (pid $drv holds $state/lock)" \
    "$tmp/err2" || fail "the refusal does not name the directory and the pid: $(cat "$tmp/err2")"
  grep -q 'recover' "$tmp/err2" && fail "the second driver read the record: $(cat "$tmp/err2")"
  grep -q '^listening' "$tmp/out2" && fail "the second driver listened"
  wait "$drv"
  rc=$?
  drv=''
  [ "$rc" -eq 0 ] || fail "the first driver exited $rc"
  grep -q '^OK$' "$tmp/out" || fail "the first driver did not finish OK"
  [ -e "$state/state" ] && fail "the finished run left its record"
  [ -f "$state/lock" ] || fail "no lock file"
  [ "$(stat -c %a "$state/lock")" = 600 ] || fail "the lock file is not 0600"
  echo "$name: the second driver was refused: $(cat "$tmp/err2")"
  ;;

links)
  # The driver on a state directory holding a link: refused (exit 1), naming the file.
  refused_for() { # refused_for FILE-NAME WHAT-THE-MESSAGE-SAYS
    rc=0
    "$dir/tl-driver" --quiet --executors 1 --cores 1 --job noop:10 --state-dir "$state" \
      --timeout-s 20 >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "$1: the driver exited $rc, not 1"
    grep -q "$2" "$tmp/err" || fail "$1: the driver does not say why it refuses"
    grep -q '^listening' "$tmp/out" && fail "$1: the refused driver listened"
    return 0
  }
  for f in state.tmp state state.prev state.prev.tmp lock; do
    rm -rf "$state" "$tmp/target"
    mkdir -m 700 "$state"
    ln -s "$tmp/target" "$state/$f" # dangling: a write through it would create the target
    refused_for "$f" "$state/$f is a symbolic link"
    [ -e "$tmp/target" ] && fail "$f: the link's target was created"
    echo keep >"$tmp/target" # now to a file of the user's: not read, not changed
    refused_for "$f" "$state/$f is a symbolic link"
    [ "$(cat "$tmp/target")" = keep ] || fail "$f: the link's target was changed"
    [ -L "$state/$f" ] || fail "$f: the link was removed"
  done
  for m in 777 770 1777; do
    rm -rf "$state"
    mkdir "$state"
    chmod "$m" "$state"
    refused_for "mode $m" "$state is writable by its group or others"
    [ "$(ls -A "$state")" = '' ] || fail "mode $m: the refused driver wrote in the directory"
  done
  # Nothing planted: the run goes on.
  rm -rf "$state"
  mkdir -m 700 "$state"
  rc=0
  "$dir/tl-driver" --quiet --executors 1 --cores 1 --job noop:10 --state-dir "$state" \
    --timeout-s 20 >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 0 ] || fail "a good directory: the driver exited $rc"
  echo "$name: every link and open directory refused"
  ;;

*)
  echo "$name: unknown mode" >&2
  exit 2
  ;;
esac
exit 0

# shellcheck shell=sh disable=SC2154 # $name and $tmp are set by the script that sources this
# Shared by the cluster test scripts (sourced, not run). They set $tmp, whose out and err files
# hold the driver's stdout and stderr, $name, the script's name for messages, and, for cleanup,
# $drv and $ext: the driver's pid and an executor's the script started itself ('' when none).

# Says why the test failed, shows the driver's output, and exits 1 (the EXIT trap cleans up).
fail() {
  echo "$name: $*" >&2
  echo "--- driver stdout" >&2
  cat "$tmp/out" >&2
  echo "--- driver stderr" >&2
  cat "$tmp/err" >&2
  exit 1
}

# Waits up to 10 s for a line matching $2 in file $1; 1 if none came.
wait_for() {
  _tries=0
  while ! grep -q "$2" "$1" 2>/dev/null; do
    _tries=$((_tries + 1))
    [ "$_tries" -gt 200 ] && return 1
    sleep 0.05
  done
  return 0
}

# Stops driver $1 if it still runs: SIGTERM first (the driver then kills its executors and waits
# for them), SIGKILL after 5 s.
stop_driver() {
  [ -n "$1" ] || return 0
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null
  return 0
}

# The usual EXIT trap: the script's own executor (SIGKILL), the driver (stop_driver), the
# temporary directory. A script with more to undo defines its own.
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  if [ -n "${ext:-}" ]; then kill -9 "$ext" 2>/dev/null; fi
  stop_driver "${drv:-}"
  wait 2>/dev/null
  rm -rf "$tmp"
}

# Every tl-executor that connects to $1 (its command line names the port).
executors_of() {
  pgrep -f "tl-executor --host [^ ]* --port $1 " 2>/dev/null
}

# SIGKILL to every tl-executor of the driver's port, when the script learnt it ($port).
kill_port_executors() {
  if [ -n "${port:-}" ]; then
    for p in $(executors_of "$port"); do kill -9 "$p" 2>/dev/null; done
  fi
}

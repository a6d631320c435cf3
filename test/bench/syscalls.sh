#!/bin/bash
# System calls per task of tl-driver --bench, counted, for the driver and its executors apart
# (docs/performance.md "The wire's own floor"). The driver runs under `perf stat --no-inherit`
# and each executor under its own `perf stat`, through a wrapper given as --executor, each
# counting the syscalls tracepoints: every system call (raw_syscalls:sys_enter) and read, write,
# writev, epoll_wait, epoll_pwait, epoll_ctl, and its CPU time (task-clock: the whole process,
# its start and end included, in us per task). Without perf, or without access to the tracepoints
# (kernel.perf_event_paranoid), it counts with `strace -c` instead (much slower: the batching it
# sees differs, the counts are comparable only with each other; SYSCALLS_TOOL=strace asks for
# it). Measurements, not a test:
# nothing here fails on a slow machine. Run by hand; not part of CI.
#
#   syscalls.sh DIR [TL-DRIVER OPTIONS...]
#
# DIR holds tl-driver and tl-executor (build/examples/cluster). The options are the bench's,
# --bench --quiet added: by default --queue 16 --tasks 1000000 (the full pipeline: each
# executor's 17 task slots refilled as one LAUNCH frame and reported as one STATUS frame).
#
#   test/bench/syscalls.sh build/examples/cluster
#   test/bench/syscalls.sh build/examples/cluster --queue 1 --tasks 200000
#   test/bench/syscalls.sh build/examples/cluster --queue 16 --tasks 1000000 --null-ledger
set -euo pipefail

if [ $# -lt 1 ] || [ ! -x "$1/tl-driver" ] || [ ! -x "$1/tl-executor" ]; then
  echo "usage: $0 DIR [TL-DRIVER OPTIONS...]   (DIR holds tl-driver and tl-executor)" >&2
  exit 2
fi
dir=$(cd "$1" && pwd)
shift
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(--queue 16 --tasks 1000000)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

events=raw_syscalls:sys_enter
names=(read write writev epoll_wait epoll_pwait epoll_ctl)
for n in "${names[@]}"; do
  events+=",syscalls:sys_enter_$n"
done
events+=",task-clock" # the CPU time of each process (perf only)

tool=strace
if [ "${SYSCALLS_TOOL:-}" = strace ]; then
  : # asked for
elif command -v perf >/dev/null &&
  perf stat -x, -o "$tmp/probe" -e "$events" true >/dev/null 2>&1; then
  tool=perf
elif ! command -v strace >/dev/null; then
  echo "$0: neither perf (with the syscalls tracepoints) nor strace is usable" >&2
  exit 1
fi

# The executor's wrapper: the real tl-executor under the counter, one output file per process.
if [ "$tool" = perf ]; then
  printf '#!/bin/sh\nexec perf stat -x, -o "%s/exec.$$" -e "%s" "%s/tl-executor" "$@"\n' \
    "$tmp" "$events" "$dir" >"$tmp/executor"
else
  printf '#!/bin/sh\nexec strace -c -U calls,name -o "%s/exec.$$" "%s/tl-executor" "$@"\n' \
    "$tmp" "$dir" >"$tmp/executor"
fi
chmod +x "$tmp/executor"

driver=("$dir/tl-driver" --bench --quiet --executor "$tmp/executor" "${opts[@]}")
if [ "$tool" = perf ]; then
  perf stat -x, --no-inherit -o "$tmp/driver" -e "$events" "${driver[@]}" >"$tmp/out"
else
  strace -c -U calls,name -o "$tmp/driver" "${driver[@]}" >"$tmp/out"
fi
grep '^tasks:' "$tmp/out"
tasks=$(sed -n 's/^tasks: \([0-9]*\) in .*/\1/p' "$tmp/out")
grep -qx OK "$tmp/out" || echo "the run did not pass (its summary did not end with OK)"

# count FILE... NAME: the calls of one system call (NAME; "all" for every one) in those files.
count() {
  local name=${*: -1}
  local files=("${@:1:$#-1}")
  if [ "$tool" = perf ]; then
    local ev=syscalls:sys_enter_$name
    [ "$name" = all ] && ev=raw_syscalls:sys_enter
    awk -F, -v ev="$ev" '$3 == ev { n += $1 } END { print n + 0 }' "${files[@]}"
  else # strace -c -U calls,name: "CALLS NAME" lines, the last one's NAME "total"
    [ "$name" = all ] && name=total
    awk -v name="$name" '$2 == name { n += $1 } END { print n + 0 }' "${files[@]}"
  fi
}

# The CPU time in those files, in us per task (task-clock, counted by perf; "-" with strace).
cpu() {
  if [ "$tool" = perf ]; then
    awk -F, -v t="$tasks" '$3 == "task-clock" { ms += $1 } END { printf "%.2f", ms * 1000 / t }' "$@"
  else
    echo -
  fi
}

row() { # LABEL FILE...
  local label=$1
  shift
  local all per
  all=$(count "$@" all)
  printf '%-16s' "$label"
  for n in "${names[@]}"; do
    printf ' %11s' "$(count "$@" "$n")"
  done
  per=$(awk -v a="$all" -v t="$tasks" 'BEGIN { printf "%.3f", a / t }')
  printf ' %11s %9s %11s\n' "$all" "$per" "$(cpu "$@")"
}

echo "counted by $tool; tl-driver ${opts[*]}"
printf '%-16s' process
for n in "${names[@]}"; do
  printf ' %11s' "$n"
done
printf ' %11s %9s %11s\n' all "per task" "us CPU/task"
row driver "$tmp/driver"
execs=("$tmp"/exec.*)
row "executors (${#execs[@]})" "${execs[@]}"
row "together" "$tmp/driver" "${execs[@]}"

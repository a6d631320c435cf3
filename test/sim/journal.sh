#!/bin/sh
# tl-sim's call journal replays through tl-replay: every call returns what it returned in the
# run, tl_check stays clean after each, and the replayed scheduler drains.
#
#   journal.sh TL-SIM TL-REPLAY [ARGS...]
set -u
sim=$1
replay=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sim" --quiet --journal "$tmp/journal" "$@" >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
"$replay" "$tmp/journal"

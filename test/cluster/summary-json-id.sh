#!/bin/sh
# tl-driver --summary-json with an executor id that is not plain ASCII: an executor started
# elsewhere (--accept 1) registers under an id holding a quote, a backslash, a tab, a byte that
# is not UTF-8 (0xff), an overlong form (0xc0 0xaf) and a well-formed e-acute, and is lost
# (SIGKILL; the pending-loss timeout ends it). JSON is UTF-8 (RFC 8259): the file must be valid
# UTF-8, and the id must read back with the quote, backslash and tab escaped, each bad byte as
# U+FFFD and the e-acute as it was.
#
#   summary-json-id.sh DIR    DIR holds tl-driver and tl-executor
#
# Exit status: 0 when the JSON says what it must; 77 (skipped) without jq or iconv; 1 otherwise.
set -u
dir=$1
name=summary-json-id.sh
for tool in jq iconv; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "$name: $tool is not installed: skipped" >&2
    exit 77
  }
done
tmp=$(mktemp -d)
drv='' ext=''
# shellcheck source=test/cluster/common.sh
. "$(dirname "$0")/common.sh"
trap cleanup EXIT

printf 'summary-json-id-token-%s\n' "$$" >"$tmp/token"
"$dir/tl-driver" --token-file "$tmp/token" --executors 1 --accept 1 --cores 2 \
  --job sleep:5:600 --pending-loss-timeout-ms 300 --expect-losses 1 --timeout-s 30 \
  --summary-json "$tmp/summary.json" >"$tmp/out" 2>"$tmp/err" &
drv=$!
wait_for "$tmp/out" '^listening on ' || fail "the driver did not listen"
port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/out")
[ -n "$port" ] || fail "no port in the driver's output"

id=$(printf 'e"x\\\377\t\300\257z\303\251')
"$dir/tl-executor" --port "$port" --id "$id" --cores 2 --heartbeat-ms 100 \
  --token-file "$tmp/token" 2>"$tmp/ext-err" &
ext=$!
wait_for "$tmp/err" 'registered' || fail "the external executor did not register"
sleep 0.3
kill -9 "$ext" 2>/dev/null || fail "the external executor was not running when it was to be killed"
wait "$ext" 2>/dev/null
ext=''
wait "$drv"
rc=$?
drv=''
[ "$rc" -eq 0 ] || fail "the driver exited with status $rc"
[ -s "$tmp/summary.json" ] || fail "no JSON summary"
iconv -f UTF-8 -t UTF-8 "$tmp/summary.json" >/dev/null 2>&1 ||
  fail "the JSON summary is not valid UTF-8: $(od -c "$tmp/summary.json" | grep -m1 '377\|300')"
got=$(jq -r '.lost_executors | length' "$tmp/summary.json") || fail "jq cannot read the JSON"
[ "$got" = 1 ] || fail "lost_executors has $got entries, not 1"
want=$(printf 'e"x\\\357\277\275\t\357\277\275\357\277\275z\303\251')
got=$(jq -r '.lost_executors[0].id' "$tmp/summary.json")
[ "$got" = "$want" ] || fail "the id reads back as '$got', not '$want'"
exit 0

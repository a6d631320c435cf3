#!/bin/sh
# The SVGs of tl-sim-svg-tests through xmllint: each must be well-formed XML.
#
#   wellformed_svg.sh TESTS    TESTS is the tl-sim-svg-tests program
#
# Exit status: 0 when every file is well-formed; 77 (skipped) when xmllint (Debian package
# libxml2-utils) is not installed; 1 otherwise.
set -u
tests=$1
if ! command -v xmllint >/dev/null 2>&1; then
  echo "wellformed_svg.sh: xmllint not installed (Debian: libxml2-utils); skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tests" "$tmp" >/dev/null || { echo "wellformed_svg.sh: $tests failed" >&2; exit 1; }
n=0
for f in "$tmp"/*.svg; do
  xmllint --noout "$f" || { echo "wellformed_svg.sh: $(basename "$f") is not well-formed" >&2; exit 1; }
  n=$((n + 1))
done
[ "$n" -ge 6 ] || { echo "wellformed_svg.sh: only $n files" >&2; exit 1; }
echo "wellformed_svg.sh: $n SVGs well-formed"

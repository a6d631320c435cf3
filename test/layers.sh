#!/usr/bin/env bash
# The library's layering, checked on the built archive: every file of lib/ calls only files of
# its own layer or lower ones, and no two files call each other.
#
#   test/layers.sh LIBTASKLEDGER.a [DESIGN.md]
#
# The layers come from one table, docs/design.md's "Layers" (one row per file:
# | `lib/FILE.c` | N name | what it holds |). Who calls whom comes from the object files: a file
# that leaves a tl__ symbol undefined (nm -u) calls the file that defines it. Inline functions
# of a header count for the file that includes them, which is where their calls are made.
# Fails (status 1) when:
#   - a file uses a tl__ symbol of a file on a higher layer;
#   - two files use each other (a cycle of two, whatever their layers);
#   - a larger cycle exists among the files of one layer;
#   - an object file of the archive has no row in the table, or a row names no object file.
# Prints each fault on its own line, and the calls between files when all is well with -v.
set -euo pipefail

verbose=0
if [[ ${1:-} == -v ]]; then
  verbose=1
  shift
fi
if (($# < 1 || $# > 2)); then
  echo "usage: test/layers.sh [-v] LIBTASKLEDGER.a [DESIGN.md]" >&2
  exit 2
fi
archive=$1
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
design=${2:-$here/../docs/design.md}
[[ -r $archive ]] || {
  echo "layers: cannot read $archive" >&2
  exit 2
}
[[ -r $design ]] || {
  echo "layers: cannot read $design" >&2
  exit 2
}

# file layer name, from the table's rows.
# shellcheck disable=SC2016 # the backquotes are the table's, not the shell's
table=$(sed -n 's/^| `lib\/\([a-z_]*\)\.c` | \([0-9]\) \([a-z ]*[a-z]\) |.*/\1 \2 \3/p' "$design")
if [[ -z $table ]]; then
  echo "layers: no layer table in $design" >&2
  exit 2
fi

# nm -A on an archive prefixes each line with "archive:member:"; members are FILE.c.o.
defs=$(nm -A --defined-only "$archive" | awk '$(NF-1) ~ /^[TDBRC]$/ && $NF ~ /^tl__/ {
  n = split($1, p, ":"); m = p[n - 1]; sub(/\.c\.o$/, "", m); sub(/\.o$/, "", m); print $NF, m }')
uses=$(nm -A -u "$archive" | awk '$(NF-1) == "U" && $NF ~ /^tl__/ {
  n = split($1, p, ":"); m = p[n - 1]; sub(/\.c\.o$/, "", m); sub(/\.o$/, "", m); print $NF, m }')
members=$(nm -A "$archive" 2>/dev/null | awk -F: '{ m = $2; sub(/\.c\.o$/, "", m); sub(/\.o$/, "", m); print m }' |
  sort -u)

awk -v verbose="$verbose" '
  part == "table" { nfiles++; layer[$1] = $2; name[$1] = $3; for (i = 4; i <= NF; i++) name[$1] = name[$1] " " $i; next }
  part == "members" { member[$1] = 1; next }
  part == "defs" { owner[$1] = $2; next }
  part == "uses" {
    sym = $1; user = $2
    if (!(sym in owner)) next  # defined outside the archive (never, for tl__), or nowhere: the link says
    def = owner[sym]
    if (def == user) next
    key = user SUBSEP def
    if (!(key in calls)) { calls[key] = sym; ncalls++ } else if (length(calls[key]) < 200) calls[key] = calls[key] " " sym
    next
  }
  END {
    bad = 0
    for (m in member) if (!(m in layer)) { printf "layers: lib/%s.c is in the archive but not in the table\n", m; bad = 1 }
    for (m in layer) if (!(m in member)) { printf "layers: lib/%s.c is in the table but not in the archive\n", m; bad = 1 }
    for (key in calls) {
      split(key, uf, SUBSEP); u = uf[1]; d = uf[2]
      if (!(u in layer) || !(d in layer)) continue
      if (layer[d] > layer[u]) {
        printf "layers: %s.c (%d %s) uses %s.c (%d %s), a higher layer: %s\n", u, layer[u], name[u], d, layer[d], name[d], calls[key]
        bad = 1
      }
      if ((d SUBSEP u) in calls && u < d) {
        printf "layers: %s.c and %s.c use each other: %s / %s\n", u, d, calls[key], calls[d SUBSEP u]
        bad = 1
      }
    }
    # Longer cycles can only form within one layer: a depth-first search over same-layer calls.
    for (key in calls) {
      split(key, uf, SUBSEP)
      if (layer[uf[1]] == layer[uf[2]]) { adj[uf[1]] = adj[uf[1]] " " uf[2] }
    }
    for (m in adj) colour[m] = 0
    for (m in adj) if (colour[m] == 0 && dfs(m)) bad = 1
    if (verbose && !bad)
      for (key in calls) { split(key, uf, SUBSEP); printf "%s.c (%d) -> %s.c (%d): %s\n", uf[1], layer[uf[1]], uf[2], layer[uf[2]], calls[key] }
    if (!bad) printf "layers: %d files, %d calls between files, all downward or within a layer, no cycle\n", nfiles, ncalls
    exit bad
  }
  function dfs(m,    n, i, next_, found) {
    colour[m] = 1; found = 0
    n = split(adj[m], next_, " ")
    for (i = 1; i <= n; i++) {
      if (colour[next_[i]] == 1) { printf "layers: a cycle within layer %d passes %s.c -> %s.c\n", layer[m], m, next_[i]; found = 1 }
      else if (colour[next_[i]] == 0 && dfs(next_[i])) found = 1
    }
    colour[m] = 2
    return found
  }
' part=table <(echo "$table") part=members <(echo "$members") part=defs <(echo "$defs") \
  part=uses <(echo "$uses")

#!/usr/bin/env bash
# A program's layering, checked on its built objects: every file calls only files of its own
# layer or lower ones, and no two files call each other. Two programs are held to it: the
# library (lib/, its archive) and tl-driver (examples/cluster/driver/, its object files).
#
#   test/layers.sh [-v] [--dir DIR] [--prefix PREFIX | --all-symbols] ARCHIVE|OBJECT... [TABLE.md]
#
# The layers come from one table in TABLE.md (default docs/design.md), one row per file:
# | `DIR/FILE.c` | N name | what it holds |, DIR being lib unless --dir names another. Who calls
# whom comes from the object files (an archive's members, or object files named FILE.c.o): a
# file that leaves a symbol undefined (nm -u) calls the file that defines it. Only the symbols
# that start with PREFIX count (default tl__, the library's internal ones; --all-symbols counts
# every global symbol, as for tl-driver, whose files share plain names). Inline functions of a
# header count for the file that includes them, which is where their calls are made.
# Fails (status 1) when:
#   - a file uses a symbol of a file on a higher layer;
#   - two files use each other (a cycle of two, whatever their layers);
#   - a larger cycle exists among the files of one layer;
#   - an object file has no row in the table, or a row names no object file.
# Prints each fault on its own line, and the calls between files when all is well with -v.
set -euo pipefail

verbose=0
dir=lib
prefix=tl__
inputs=()
table_doc=
while (($# > 0)); do
  case $1 in
  -v) verbose=1 ;;
  --dir)
    dir=$2
    shift
    ;;
  --prefix)
    prefix=$2
    shift
    ;;
  --all-symbols) prefix= ;;
  *.md) table_doc=$1 ;;
  *) inputs+=("$1") ;;
  esac
  shift
done
if ((${#inputs[@]} == 0)); then
  echo "usage: test/layers.sh [-v] [--dir DIR] [--prefix PREFIX | --all-symbols] ARCHIVE|OBJECT... [TABLE.md]" >&2
  exit 2
fi
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
design=${table_doc:-$here/../docs/design.md}
for f in "${inputs[@]}"; do
  [[ -r $f ]] || {
    echo "layers: cannot read $f" >&2
    exit 2
  }
done
[[ -r $design ]] || {
  echo "layers: cannot read $design" >&2
  exit 2
}

# file layer name, from the table's rows.
# shellcheck disable=SC2016 # the backquotes are the table's, not the shell's
table=$(awk -v dir="$dir" '
  BEGIN { head = "| `" dir "/" }
  index($0, head) == 1 {
    rest = substr($0, length(head) + 1)
    if (!match(rest, /^[a-z_0-9]+\.c` \| [0-9] [a-z ]*[a-z] \|/)) next
    file = substr(rest, 1, index(rest, ".c`") - 1)
    rest = substr(rest, index(rest, "| ") + 2)
    layer = substr(rest, 1, 1)
    name = substr(rest, 3, index(rest, " |") - 3)
    print file, layer, name
  }' "$design")
if [[ -z $table ]]; then
  echo "layers: no layer table for $dir/ in $design" >&2
  exit 2
fi

# nm -A prefixes each line with "archive:member:" for an archive's members and with "object:"
# for an object file; either way the file is the last name before the address, FILE.c.o.
# shellcheck disable=SC2016 # awk's program, not the shell's
file_of='n = split($1, p, ":"); m = p[n - 1]; sub(/.*\//, "", m); sub(/\.c\.o$/, "", m); sub(/\.o$/, "", m)'
defs=$(nm -A --defined-only "${inputs[@]}" | awk -v prefix="$prefix" '$(NF-1) ~ /^[TDBRC]$/ && (prefix == "" || index($NF, prefix) == 1) {
  '"$file_of"'; print $NF, m }')
uses=$(nm -A -u "${inputs[@]}" | awk -v prefix="$prefix" '$(NF-1) == "U" && (prefix == "" || index($NF, prefix) == 1) {
  '"$file_of"'; print $NF, m }')
members=$(nm -A "${inputs[@]}" 2>/dev/null | awk '{ '"$file_of"'; print m }' | sort -u)

awk -v verbose="$verbose" -v dir="$dir" '
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
    for (m in member) if (!(m in layer)) { printf "layers: %s/%s.c is in the objects but not in the table\n", dir, m; bad = 1 }
    for (m in layer) if (!(m in member)) { printf "layers: %s/%s.c is in the table but not in the objects\n", dir, m; bad = 1 }
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

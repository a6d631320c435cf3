#!/usr/bin/env bash
# The project's file sizes: no C source or header of the library, the programs beside it or the
# public headers is over MAX lines (default 1,500), and tl-driver's file with main(),
# examples/cluster/driver/driver.c, is under MAIN_MAX (default 800). Tests (test/, test_*.c,
# fuzz_*.c) are not held to it. A file that grows past the limit is a subsystem that wants a
# file of its own (docs/design.md "Files and layers", docs/cluster.md "The driver's files and
# layers").
#
#   test/sizes.sh [--max MAX] [--main-max MAIN_MAX] [SOURCE_DIR]
#
# Prints each file over its limit and fails (status 1); prints the largest file when all is well.
set -euo pipefail

max=1500
main_max=800
src=
while (($# > 0)); do
  case $1 in
  --max)
    max=$2
    shift
    ;;
  --main-max)
    main_max=$2
    shift
    ;;
  *) src=$1 ;;
  esac
  shift
done
src=${src:-$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/..}
cd "$src"

bad=0
largest=0
largest_file=
while IFS= read -r f; do
  n=$(wc -l <"$f")
  if ((n > max)); then
    echo "sizes: $f is $n lines, over $max"
    bad=1
  fi
  if ((n > largest)); then
    largest=$n
    largest_file=$f
  fi
done < <(find lib include examples -type f \( -name '*.c' -o -name '*.h' \) \
  ! -name 'test_*.c' ! -name 'fuzz_*.c' | sort)
main_file=examples/cluster/driver/driver.c
n=$(wc -l <"$main_file")
if ((n >= main_max)); then
  echo "sizes: $main_file (tl-driver's main) is $n lines, not under $main_max"
  bad=1
fi
if ((bad == 0)); then
  echo "sizes: every file at most $max lines (the largest: $largest_file, $largest); $main_file $n lines"
fi
exit "$bad"

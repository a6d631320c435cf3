#!/usr/bin/env bash
# Packaging test, run by ctest (test/package/CMakeLists.txt) after a normal build. It installs
# the build into a scratch prefix and proves, from outside the source tree, that:
#   - the installed tree holds the libraries, the public headers, the CMake package and the .pc
#     file, and nothing private; the exported targets have no empty $<LINK_ONLY:> entry;
#   - the shared library exports every TL_EXTERN function of the header and nothing but tl_*;
#   - the installed headers compile without a warning in a strict C99 program (fatal with
#     --werror 1, as the project's own builds have it);
#   - a consumer builds and runs with find_package(taskledger) against taskledger::taskledger
#     and taskledger::taskledger_static, and with pkg-config (shared, and --static against a
#     tree that holds only the static library); a consumer of the libuv driver (taskledger-uv.h,
#     calling libuv itself) links against either target alone, or `pkg-config taskledger` alone,
#     and runs. Consumers are built as a user builds them, without -Werror, and the package must
#     not add it;
#   - README.md's example (its CMake lines, find_package's version among them, and its C
#     program) builds against the installed tree and prints what the README says;
#   - all of that still works after the installed tree is moved somewhere else (relocatable);
#   - the library's own build with the default options and TL_BUILD_TESTS=OFF,
#     TL_BUILD_EXAMPLES=OFF compiles without -Werror and builds the libraries and nothing else.
set -euo pipefail

usage() {
  cat >&2 <<'EOF'
usage: package-test.sh --source-dir DIR --build-dir DIR --work-dir DIR --consumer DIR
                       --version X.Y.Z --soname libtaskledger.so.N --libdir lib --cc CC
                       --cmake CMAKE --generator GEN [--config CFG] [--san-flags FLAGS]
                       [--werror 0|1]
EOF
  exit 2
}

source_dir="" build_dir="" work_dir="" consumer="" version="" soname="" libdir="" cc="" cmake=""
generator="" config="" san_flags="" werror=0
while (($# > 0)); do
  (($# >= 2)) || usage
  case $1 in
    --source-dir) source_dir=$2 ;;
    --build-dir) build_dir=$2 ;;
    --work-dir) work_dir=$2 ;;
    --consumer) consumer=$2 ;;
    --version) version=$2 ;;
    --soname) soname=$2 ;;
    --libdir) libdir=$2 ;;
    --cc) cc=$2 ;;
    --cmake) cmake=$2 ;;
    --generator) generator=$2 ;;
    --config) config=$2 ;;
    --san-flags) san_flags=$2 ;;
    --werror) werror=$2 ;;
    *) usage ;;
  esac
  shift 2
done
for v in source_dir build_dir work_dir consumer version soname libdir cc cmake generator; do
  [[ -n ${!v} ]] || usage
done

# Flags for every consumer: a strict C99 program with warnings on, but not -Werror: a user's
# build, which a warning must not break. The headers' own check below adds -Werror.
read -ra san <<<"$san_flags"
warn=(-std=c99 -Wall -Wextra -Wpedantic -Wstrict-prototypes)
expected="taskledger $version"

rm -rf "$work_dir"
mkdir -p "$work_dir/logs"
work_dir=$(cd "$work_dir" && pwd)
logs=$work_dir/logs

ok() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

# run_logged NAME CMD...: runs CMD with its output in logs/NAME.log, shown if it fails.
run_logged() {
  local name=$1
  shift
  if ! "$@" >"$logs/$name.log" 2>&1; then
    printf 'FAIL: %s\n  command: %s\n  output:\n' "$name" "$*" >&2
    sed 's/^/    /' "$logs/$name.log" >&2
    exit 1
  fi
}

# run_program NAME CMD...: runs a consumer and checks that it printed exactly "$expected".
run_program() {
  local name=$1 out
  shift
  run_logged "$name" "$@"
  out=$(cat "$logs/$name.log")
  [[ $out == "$expected" ]] || fail "$name printed '$out', expected '$expected'"
}

# pc DIR ARGS...: pkg-config with DIR searched first.
orig_pkg_config_path=${PKG_CONFIG_PATH:-}
pc() {
  PKG_CONFIG_PATH=$1${orig_pkg_config_path:+:$orig_pkg_config_path} pkg-config "${@:2}"
}

# needs_libtaskledger FILE: whether FILE has a DT_NEEDED entry for the shared library.
needs_libtaskledger() {
  readelf -d "$1" | grep -q 'NEEDED.*\[libtaskledger\.so'
}

# ---- install ----
prefix=$work_dir/prefix
install_cmd=("$cmake" --install "$build_dir" --prefix "$prefix")
[[ -z $config ]] || install_cmd+=(--config "$config")
run_logged install "${install_cmd[@]}"
ok "installed $build_dir into $prefix"

# ---- layout ----
for f in "include/taskledger.h" "include/taskledger-uv.h" \
  "$libdir/libtaskledger.so" "$libdir/$soname" \
  "$libdir/libtaskledger.so.$version" "$libdir/libtaskledger.a" \
  "$libdir/cmake/taskledger/taskledgerConfig.cmake" \
  "$libdir/cmake/taskledger/taskledgerConfigVersion.cmake" \
  "$libdir/cmake/taskledger/taskledgerTargets.cmake" \
  "$libdir/pkgconfig/taskledger.pc"; do
  [[ -e $prefix/$f ]] || fail "not installed: $f"
done
stray=$(find "$prefix/include" -type f ! -name 'taskledger*.h')
[[ -z $stray ]] || fail "private files installed: $stray"
stray=$(find "$prefix" -name '*testing*')
[[ -z $stray ]] || fail "test library installed: $stray"
found=$(readelf -d "$prefix/$libdir/libtaskledger.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $found == "$soname" ]] || fail "SONAME is '$found', expected '$soname'"
if readelf -d "$prefix/$libdir/libtaskledger.so" | grep -Eq '\((RPATH|RUNPATH)\)'; then
  fail "the installed shared library keeps an RPATH/RUNPATH"
fi
ok "layout: libraries, header, CMake package, .pc file; SONAME $soname; no RPATH"

# ---- exported targets ----
# A static library's private $<BUILD_INTERFACE:...> dependency is exported as an empty
# $<LINK_ONLY:>; no entry of an exported INTERFACE_LINK_LIBRARIES may be empty.
exports=("$prefix/$libdir/cmake/taskledger/"taskledgerTargets*.cmake)
if grep -nF '$<LINK_ONLY:>' "${exports[@]}" >"$work_dir/empty-entries.txt" ||
  grep -nE 'INTERFACE_LINK_LIBRARIES "(;|.*;;|.*;")' "${exports[@]}" >>"$work_dir/empty-entries.txt"; then
  fail "empty entries in the exported targets: $(cat "$work_dir/empty-entries.txt")"
fi
ok "exported targets: no empty \$<LINK_ONLY:> or empty entry ($(basename -a "${exports[@]}" | paste -sd ' '))"

# ---- exported symbols ----
nm -D --defined-only "$prefix/$libdir/libtaskledger.so" | awk 'NF >= 3 {print $3}' |
  sed 's/@.*//' | sort -u >"$work_dir/exported.txt"
# Sanitizer runtimes add their own hooks to an instrumented library; they are not ours.
grep -Ev '^(tl_[a-z0-9][a-z0-9_]*|__(asan|ubsan|sanitizer|lsan|tsan|odr_asan)[a-zA-Z0-9_.]*)$' \
  "$work_dir/exported.txt" >"$work_dir/unexpected.txt" || true
if [[ -s $work_dir/unexpected.txt ]]; then
  fail "the shared library exports symbols other than tl_*: $(tr '\n' ' ' <"$work_dir/unexpected.txt")"
fi
sed -n 's/^TL_EXTERN [^(]*[ *]\(tl_[a-z0-9_]*\)(.*/\1/p' "$prefix/include/"taskledger*.h |
  sort -u >"$work_dir/declared.txt"
[[ -s $work_dir/declared.txt ]] || fail "found no TL_EXTERN function in the installed header"
missing=$(comm -23 "$work_dir/declared.txt" "$work_dir/exported.txt" | tr '\n' ' ')
[[ -z $missing ]] || fail "declared TL_EXTERN but not exported: $missing"
ok "exports: $(wc -l <"$work_dir/declared.txt") TL_EXTERN functions, nothing but tl_*"

# ---- the installed headers, strictly ----
# Both consumers' sources, compiled only, with -Werror when the project's build has it: the
# headers must not warn in a strict C99 program. Without --werror 1 (a user's build of the
# tests) a warning is shown, not fatal.
read -ra pc_flags <<<"$(pc "$prefix/$libdir/pkgconfig" --cflags taskledger)"
strict=("${warn[@]}") strict_note="warnings not fatal"
if ((werror)); then
  strict+=(-Werror) strict_note=-Werror
fi
for src in consumer.c consumer_uv.c; do
  run_logged "header-$src" "$cc" "${strict[@]}" -fsyntax-only "$consumer/$src" "${pc_flags[@]}"
  if [[ -s $logs/header-$src.log ]]; then
    printf 'warning: the installed headers warn in %s:\n' "$src" >&2
    sed 's/^/    /' "$logs/header-$src.log" >&2
  fi
done
ok "headers: taskledger.h and taskledger-uv.h compile in strict C99 ($strict_note)"

# ---- consumers ----
# check_consumers PREFIX TAG: builds and runs every consumer against the tree at PREFIX.
check_consumers() {
  local pfx=$1 tag=$2 bdir dir pc_dir pc_flags static_only
  bdir=$work_dir/$tag

  # CMake package, shared and static targets. The consumer's CMakeLists.txt also checks what
  # the imported targets carry.
  run_logged "$tag-cmake-configure" "$cmake" -S "$consumer" -B "$bdir/cmake" -G "$generator" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$pfx" \
    -DCMAKE_C_FLAGS="${warn[*]} ${san[*]}" -DCMAKE_EXE_LINKER_FLAGS="${san[*]}" \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DTL_EXPECT_VERSION="$version"
  dir=$(sed -n 's/^taskledger_DIR:PATH=//p' "$bdir/cmake/CMakeCache.txt")
  [[ $(readlink -f "$dir") == $(readlink -f "$pfx/$libdir/cmake/taskledger") ]] ||
    fail "$tag: find_package found taskledger in '$dir', not under $pfx"
  [[ -s $bdir/cmake/compile_commands.json ]] || fail "$tag: no compile_commands.json"
  ! grep -q -- '-Werror' "$bdir/cmake/compile_commands.json" ||
    fail "$tag: the package adds -Werror to its consumers' compiles"
  run_logged "$tag-cmake-build" "$cmake" --build "$bdir/cmake"
  run_program "$tag-cmake-shared" "$bdir/cmake/consumer_shared"
  run_program "$tag-cmake-static" "$bdir/cmake/consumer_static"
  run_program "$tag-cmake-uv" "$bdir/cmake/consumer_uv"
  run_program "$tag-cmake-uv-static" "$bdir/cmake/consumer_uv_static"
  needs_libtaskledger "$bdir/cmake/consumer_shared" ||
    fail "$tag: consumer_shared does not link libtaskledger.so"
  needs_libtaskledger "$bdir/cmake/consumer_uv" ||
    fail "$tag: consumer_uv does not link libtaskledger.so"
  ! needs_libtaskledger "$bdir/cmake/consumer_static" ||
    fail "$tag: consumer_static links libtaskledger.so"
  ! needs_libtaskledger "$bdir/cmake/consumer_uv_static" ||
    fail "$tag: consumer_uv_static links libtaskledger.so"
  ok "$tag: find_package(taskledger $version) -> taskledger::taskledger and ::taskledger_static, no -Werror"
  ok "$tag: the libuv driver (taskledger-uv.h, tl_uv_start on a loop) with either target alone"

  # pkg-config, shared library.
  pc_dir=$pfx/$libdir/pkgconfig
  [[ $(pc "$pc_dir" --modversion taskledger) == "$version" ]] || fail "$tag: pkg-config version"
  [[ $(readlink -f "$(pc "$pc_dir" --variable=prefix taskledger)") == $(readlink -f "$pfx") ]] ||
    fail "$tag: the .pc file's prefix is $(pc "$pc_dir" --variable=prefix taskledger), not $pfx"
  read -ra pc_flags <<<"$(pc "$pc_dir" --cflags --libs taskledger)"
  mkdir -p "$bdir/pc"
  run_logged "$tag-pc-shared-build" "$cc" "${warn[@]}" "${san[@]}" "$consumer/consumer.c" \
    -o "$bdir/pc/consumer_shared" "${pc_flags[@]}"
  run_program "$tag-pc-shared" env LD_LIBRARY_PATH="$pfx/$libdir" "$bdir/pc/consumer_shared"
  needs_libtaskledger "$bdir/pc/consumer_shared" ||
    fail "$tag: the pkg-config shared consumer does not link libtaskledger.so"
  ok "$tag: cc app.c \$(pkg-config --cflags --libs taskledger), run with LD_LIBRARY_PATH"

  # pkg-config, the libuv driver: the program calls libuv itself, and taskledger's .pc file
  # Requires libuv, so taskledger alone names it.
  read -ra pc_flags <<<"$(pc "$pc_dir" --cflags --libs taskledger)"
  run_logged "$tag-pc-uv-build" "$cc" "${warn[@]}" "${san[@]}" "$consumer/consumer_uv.c" \
    -o "$bdir/pc/consumer_uv" "${pc_flags[@]}"
  run_program "$tag-pc-uv" env LD_LIBRARY_PATH="$pfx/$libdir" "$bdir/pc/consumer_uv"
  ok "$tag: cc app.c \$(pkg-config --cflags --libs taskledger) with taskledger-uv.h"

  # pkg-config --static, against a copy of the tree without the shared library, so that
  # -ltaskledger can only mean the archive and its dependencies must come from the .pc file.
  static_only=$bdir/static-only
  cp -a "$pfx" "$static_only"
  rm -f "$static_only/$libdir"/libtaskledger.so*
  read -ra pc_flags <<<"$(pc "$static_only/$libdir/pkgconfig" --static --cflags --libs taskledger)"
  run_logged "$tag-pc-static-build" "$cc" "${warn[@]}" "${san[@]}" "$consumer/consumer.c" \
    -o "$bdir/pc/consumer_static" "${pc_flags[@]}"
  run_program "$tag-pc-static" "$bdir/pc/consumer_static"
  ! needs_libtaskledger "$bdir/pc/consumer_static" ||
    fail "$tag: the pkg-config --static consumer links libtaskledger.so"
  ok "$tag: cc app.c \$(pkg-config --static --cflags --libs taskledger)"
}

check_consumers "$prefix" installed

# ---- the README's own example ----
# "Using it in your program" in README.md, as a reader copies it: its CMake lines (the
# find_package version among them) and its C program, built against the installed tree and run.
readme=$source_dir/README.md
readme_dir=$work_dir/readme
mkdir -p "$readme_dir"
awk '/^## Using it in your program/ { on = 1 } on && /^```cmake$/ { grab = 1; next }
  grab && /^```$/ { exit } grab' "$readme" >"$readme_dir/snippet.cmake"
awk '/^## Using it in your program/ { on = 1 } on && /^```c$/ { grab = 1; next }
  grab && /^```$/ { exit } grab' "$readme" >"$readme_dir/app.c"
if ! grep -q '^find_package(taskledger ' "$readme_dir/snippet.cmake" || [[ ! -s $readme_dir/app.c ]]; then
  fail "README.md's example: no CMake lines with find_package, or no C program"
fi
{
  echo 'cmake_minimum_required(VERSION 3.13)'
  echo 'project(readme_example C)'
  cat "$readme_dir/snippet.cmake"
} >"$readme_dir/CMakeLists.txt"
run_logged readme-configure "$cmake" -S "$readme_dir" -B "$readme_dir/build" -G "$generator" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="${san[*]}" \
  -DCMAKE_EXE_LINKER_FLAGS="${san[*]}"
run_logged readme-build "$cmake" --build "$readme_dir/build"
"$readme_dir/build/app" >"$readme_dir/out.txt" 2>&1 || fail "README.md's example exited non-zero"
if ! grep -q '^4 launched, 0 still running$' "$readme_dir/out.txt" ||
  ! grep -q '^task set 1 released; its payload .* is ours again$' "$readme_dir/out.txt"; then
  fail "README.md's example printed: $(cat "$readme_dir/out.txt")"
fi
ok "README.md's example: $(grep -o 'find_package([^)]*)' "$readme_dir/snippet.cmake") builds it, and it runs"

# ---- relocation ----
moved=$work_dir/elsewhere/deeper/moved-prefix
mkdir -p "$(dirname "$moved")"
mv "$prefix" "$moved"
if grep -rlF "$prefix" "$moved" >"$work_dir/mentions.txt"; then
  fail "the installed tree names its original prefix: $(tr '\n' ' ' <"$work_dir/mentions.txt")"
fi
ok "moved the installed tree to $moved; no file in it names $prefix"
check_consumers "$moved" relocated

# ---- the library alone, with the default options ----
# What a user who builds only the library gets: no TL_WERROR given (its default must be OFF),
# no build type (the project's default), TL_BUILD_TESTS=OFF and TL_BUILD_EXAMPLES=OFF. Its
# compiles must not have -Werror, and it must build the shared and static libraries and
# nothing else: no test, example or test-helper executable or library.
lib_build=$work_dir/lib-only
run_logged lib-only-configure "$cmake" -S "$source_dir" -B "$lib_build" -G "$generator" \
  -DCMAKE_C_COMPILER="$cc" -DTL_BUILD_TESTS=OFF -DTL_BUILD_EXAMPLES=OFF \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
grep -qx 'TL_WERROR:BOOL=OFF' "$lib_build/CMakeCache.txt" ||
  fail "lib-only: TL_WERROR's default is $(sed -n 's/^TL_WERROR:BOOL=//p' "$lib_build/CMakeCache.txt"), not OFF"
grep -q -- '-Wall' "$lib_build/compile_commands.json" ||
  fail "lib-only: compile_commands.json has no -Wall: not the library's compiles?"
! grep -q -- '-Werror' "$lib_build/compile_commands.json" ||
  fail "lib-only: the default build compiles with -Werror"
build_cmd=("$cmake" --build "$lib_build" --parallel 2)
[[ -z $config ]] || build_cmd+=(--config "$config")
run_logged lib-only-build "${build_cmd[@]}"
# Every library and executable in the build tree (CMakeFiles/ holds only CMake's own probes).
find "$lib_build" -path '*/CMakeFiles' -prune -o \( -type f -o -type l \) \
  \( -name '*.a' -o -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -printf '%f\n' |
  sort >"$work_dir/lib-only-built.txt"
printf '%s\n' libtaskledger.a libtaskledger.so "$soname" "libtaskledger.so.$version" |
  sort -u >"$work_dir/lib-only-expected.txt"
if ! cmp -s "$work_dir/lib-only-built.txt" "$work_dir/lib-only-expected.txt"; then
  fail "lib-only: built $(paste -sd ' ' "$work_dir/lib-only-built.txt"), expected only $(paste -sd ' ' "$work_dir/lib-only-expected.txt")"
fi
ok "lib-only: default TL_WERROR OFF, no -Werror; built only $(paste -sd ' ' "$work_dir/lib-only-built.txt")"

ok "package test passed"

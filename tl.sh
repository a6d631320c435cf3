#!/usr/bin/env bash
# Quick start for taskledger on Debian: checks (and, as root, installs) the Debian packages the
# build needs, configures and builds in build/ (warnings as errors: -DTL_WERROR=ON), then runs
# the SPARK-18553 demo or the test suite.
#
#   ./tl.sh demo    build, then run build/examples/spark-18553/tl-spark-18553
#   ./tl.sh test    build, then run the whole test suite with ctest
#   ./tl.sh build   build only
#
# Safe to run again: packages already installed are left alone and the build is incremental.
# The exit status is the demo's, ctest's, or that of the step that failed.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

readonly build_dir=build
readonly demo=$build_dir/examples/spark-18553/tl-spark-18553
# make: CMake's default generator; libc6-dev: C headers and crt files (only a Recommends of gcc).
readonly packages=(cmake make gcc libc6-dev pkg-config libuv1-dev uthash-dev check valgrind
  libmicrohttpd-dev libjansson-dev libxml2-dev python3
  python3-dev python3-cffi python3-pytest python3-venv python3-pip python3-setuptools)

say() { printf 'tl.sh: %s\n' "$*" >&2; }

usage() {
  printf 'usage: %s demo|test|build\n' "$0" >&2
  exit 2
}

# Prints, one a line, the packages of $packages that dpkg does not report as installed.
missing_packages() {
  local pkg status
  for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ $status == *" installed" ]] || printf '%s\n' "$pkg"
  done
}

# apt_get show|hide ARGS...: runs apt-get with its output kept in a log; on failure the end of
# the log is shown (show) or not (hide: a failure that is expected and dealt with).
apt_get() {
  local on_failure=$1 log rc=0
  shift
  log=$(mktemp)
  DEBIAN_FRONTEND=noninteractive apt-get "$@" >"$log" 2>&1 || rc=$?
  if ((rc != 0)) && [[ $on_failure == show ]]; then
    tail -n 20 "$log" >&2
  fi
  rm -f "$log"
  return "$rc"
}

ensure_packages() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    say "dpkg-query not found: this script is for Debian; install these yourself:"
    say "  ${packages[*]}"
    exit 1
  fi
  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    return 0
  fi

  local install_line="apt-get install -y ${missing[*]}"
  if ((EUID != 0)); then
    say "missing Debian packages: ${missing[*]}"
    say "install them as root, then run this again:"
    printf '  %s\n' "$install_line" >&2
    exit 1
  fi
  say "installing missing Debian packages: $install_line"
  if ! apt_get hide install -y "${missing[@]}"; then
    # Usually no package lists yet (a fresh image) or stale ones.
    say "that failed; fetching the package lists (apt-get update) and trying again"
    apt_get show update || { say "apt-get update failed"; exit 1; }
    apt_get show install -y "${missing[@]}" || { say "$install_line failed"; exit 1; }
  fi
  say "installed: ${missing[*]}"
}

build() {
  # TL_WERROR=ON on every run, whatever the cache holds: the option's default is OFF (a user's
  # build of a release), and the project's own builds must fail on any warning.
  local configure=(cmake -S . -B "$build_dir" --log-level=WARNING -DTL_WERROR=ON)
  # The first configure picks the build type; later runs keep whatever the cache holds.
  [[ -f $build_dir/CMakeCache.txt ]] || configure+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
  "${configure[@]}"
  cmake --build "$build_dir" --parallel "$(nproc)"
}

(($# == 1)) || usage
case $1 in
  demo)
    ensure_packages
    build
    say "running $demo"
    exec "$demo"
    ;;
  test)
    ensure_packages
    build
    exec ctest --test-dir "$build_dir" --output-on-failure -j2
    ;;
  build)
    ensure_packages
    build
    ;;
  *) usage ;;
esac

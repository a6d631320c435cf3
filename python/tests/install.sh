#!/usr/bin/env bash
# ctest python-install: the path docs/python.md gives a user, from outside the source tree:
# the C library installed into a scratch prefix (cmake --install), a virtual environment that
# sees Debian's python3-cffi (--system-site-packages), `pip install --no-build-isolation` of a
# copy of python/ found through the prefix's taskledger.pc, and a program run with that
# environment's interpreter and no LD_LIBRARY_PATH (the extension's run path finds the library).
# Offline: --no-index, so pip takes nothing from the network.
#   install.sh PYTHON SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail

python=$1 source_dir=$2 build_dir=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
pc=$(find "$work/prefix" -name taskledger.pc)
[[ -n $pc ]] || { echo "no taskledger.pc under $work/prefix" >&2; exit 1; }
test -f "$work/prefix/include/taskledger-ffi.h"
cp -r "$source_dir/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
"$python" -m venv --system-site-packages "$work/venv"
PKG_CONFIG_PATH=$(dirname "$pc") "$work/venv/bin/pip" install --no-build-isolation --no-index \
  --disable-pip-version-check -q "$work/src"
cd "$work"
env -u LD_LIBRARY_PATH -u PYTHONPATH "$work/venv/bin/python" - "$work" <<'PY'
import sys
import taskledger as tl

assert tl.__file__.startswith(sys.argv[1] + "/venv/"), tl.__file__
ended = []


class Handler:
    def task_ended(self, task, end):
        ended.append((task.index, end.result))


with tl.Scheduler(Handler()) as s:
    s.executor_add("e1", "h1", 4)
    s.submit(4, stage_id=0, payload="job")
    for launch in s.resource_offers([("e1", 4)]):
        s.status_update("e1", launch.tid, tl.TaskState.FINISHED, result=launch.index * 10)
    s.dispatch()
    s.check()
    assert sorted(ended) == [(0, 0), (1, 10), (2, 20), (3, 30)], ended
    assert s.stats().tasksets_active == 0
print("installed taskledger", tl.__version__, "ran 4 tasks")
PY

"""Builds taskledger._taskledger, the compiled half of the binding (cffi, API mode, out of line).

The declarations come from taskledger-ffi.h, which the C project generates from taskledger.h for
exactly this use (tools/gen-ffi-header.py); the C compiler then checks every struct, function and
constant of it against taskledger.h itself, so a binding built against a library with another
header fails here, at build time, instead of corrupting memory at run time.

Where the library is: TASKLEDGER_INCLUDE_DIR and TASKLEDGER_LIBRARY_DIR when set (an in-tree build
sets both), else what `pkg-config taskledger` says (an installed library: `cmake --install`
writes taskledger.pc), else /usr/local. The extension links libtaskledger.so with that directory
as its run path, so an install under any prefix loads without LD_LIBRARY_PATH.
"""

import os
import shlex
import subprocess

from cffi import FFI


def _pkg_config(flag):
    try:
        out = subprocess.run(["pkg-config", flag, "taskledger"], check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [w[2:] for w in shlex.split(out) if w[:2] in ("-I", "-L")]


def _dirs():
    inc = os.environ.get("TASKLEDGER_INCLUDE_DIR")
    lib = os.environ.get("TASKLEDGER_LIBRARY_DIR")
    if not inc:
        found = _pkg_config("--cflags-only-I")
        inc = found[0] if found else "/usr/local/include"
    if not lib:
        found = _pkg_config("--libs-only-L")
        lib = found[0] if found else "/usr/local/lib"
    return inc, lib


# The callbacks the binding gives the library: each finds its Scheduler through ud.
CALLBACKS = """
extern "Python" {
  void _tl_py_task_started(void *, const tl_task_info *);
  void _tl_py_task_ended(void *, const tl_task_info *, const tl_task_end *);
  void _tl_py_taskset_failed(void *, const tl_taskset_info *, const char *);
  void _tl_py_taskset_released(void *, const tl_taskset_info *, void *);
  void _tl_py_executor_added(void *, const char *, const char *);
  void _tl_py_executor_lost(void *, const char *, void *, const tl_loss_reason *);
  void _tl_py_speculative_task_submitted(void *, const tl_taskset_info *, uint32_t);
  void _tl_py_revive_offers(void *);
  void _tl_py_kill_task(void *, tl_tid, const char *, void *, bool, const char *);
  bool _tl_py_taskset_restored(void *, const tl_taskset_info *, void **);
  void *_tl_py_executor_restored(void *, const char *, const char *);
  void _tl_py_executor_removed(void *, const char *, void *, const tl_loss_reason *);
  void _tl_py_taskset_unschedulable(void *, const tl_taskset_info *, const char *);
  void _tl_py_taskset_schedulable(void *, const tl_taskset_info *);
  void _tl_py_demand_changed(void *, const tl_demand *);
  uint64_t _tl_py_clock(void *);
  void _tl_py_journal(void *, const char *);
  void _tl_py_events_ready(void *);
  void _tl_py_result_free(void *);
  int _tl_py_write(void *, const void *, size_t);
  int _tl_py_read(void *, void *, size_t);
}
"""

include_dir, library_dir = _dirs()
ffibuilder = FFI()
with open(os.path.join(include_dir, "taskledger-ffi.h"), encoding="utf-8") as f:
    ffibuilder.cdef(f.read())
ffibuilder.cdef(CALLBACKS)
ffibuilder.set_source(
    "taskledger._taskledger",
    "#include <taskledger.h>",
    include_dirs=[include_dir],
    library_dirs=[library_dir],
    runtime_library_dirs=[library_dir],
    libraries=["taskledger"],
    # A field whose type differs between the two headers is an error, not a warning.
    extra_compile_args=["-Werror=incompatible-pointer-types"],
)

if __name__ == "__main__":
    import sys
    # In-tree build: _ffi_build.py OUTDIR compiles the module under OUTDIR/taskledger/.
    ffibuilder.compile(tmpdir=sys.argv[1] if len(sys.argv) > 1 else ".", verbose=False)

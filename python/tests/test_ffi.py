"""The FFI header against the library: every constant the compiled module declares has the value
the C compiler gives it (cffi raises on a mismatch), and the enums match the header's tables."""

import os
import re

import taskledger as tl
from taskledger import _ffi as ffi, _lib as lib

FFI_HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "taskledger-ffi.h")


def test_every_constant_matches_the_c_header():
    with open(FFI_HEADER, encoding="utf-8") as f:
        text = f.read()
    defines = re.findall(r"^#define (TL_\w+) ", text, re.M)
    enumerators = re.findall(r"^  (TL_\w+) = ", text, re.M)
    assert len(defines) >= 15 and len(enumerators) >= 50
    for n in defines + enumerators:
        getattr(lib, n)  # ffi.error when the cdef's value disagrees with the compiler's
    assert lib.TL_SHARE_UNIT == 144403552893600 and lib.TL_TICK_NEVER == 2**64 - 1


def test_enums_and_names_agree_with_the_library():
    for e in tl.EndKind:
        assert ffi.string(lib.tl_end_kind_name(e)).decode() == e.name
    for e in tl.LossKind:
        assert ffi.string(lib.tl_loss_kind_name(e)).decode() == e.name
    for e in tl.Locality:
        assert ffi.string(lib.tl_locality_name(e)).decode() == e.name
    for e in tl.TaskState:
        assert ffi.string(lib.tl_task_state_name(e)).decode() == e.name
    for e in tl.ExecutorState:
        assert ffi.string(lib.tl_executor_state_name(e)).decode() == e.name


def test_each_error_code_has_its_class():
    for code in range(-15, 0):
        cls = tl.error_class(code)
        assert cls.code == code
        assert cls.name == ffi.string(lib.tl_err_name(code)).decode()
        assert getattr(tl, cls.name) is cls
        assert issubclass(cls, tl.TaskledgerError)
    assert tl.error_class(-99) is tl.TaskledgerError


def test_version_is_the_library_s():
    assert tl.__version__ == "%d.%d.%d" % (tl.VERSION_MAJOR, tl.VERSION_MINOR, tl.VERSION_PATCH)
    assert lib.tl_version() == tl.VERSION_HEX

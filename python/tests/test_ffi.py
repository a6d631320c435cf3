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


# --- tools/gen-ffi-header.py -------------------------------------------------------------------

import importlib.util  # noqa: E402

import pytest  # noqa: E402

GEN = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "gen-ffi-header.py")
HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "taskledger.h")


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_ffi_header", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_ffi_header_is_what_the_generator_writes():
    gen = load_generator()
    with open(HEADER, encoding="utf-8") as f:
        text = gen.generate(f.read())
    with open(FFI_HEADER, encoding="utf-8") as f:
        assert f.read() == text


def test_the_generator_expands_tables_and_evaluates_constants():
    gen = load_generator()
    out = gen.generate("""#ifndef TASKLEDGER_H
#define TASKLEDGER_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
#define TL_A 2 /* two */
#define TL_B (TL_A << 4)
#define TL_BIG UINT64_C(144403552893600)
#define TL_X_MAP(XX) \\
  XX(ONE, -1, "One, with a comma.") \\
  XX(TWO, TL_A, "Two")
typedef enum tl_x {
#define TL__X_ENUM(name, value, sentence) TL_X_##name = (value),
  TL_X_MAP(TL__X_ENUM)
#undef TL__X_ENUM
} tl_x;
TL_EXTERN int tl_f(int a,
                   int b);
#ifdef __cplusplus
}
#endif
#endif
""")
    assert "#define TL_B 32\n" in out and "#define TL_BIG 144403552893600\n" in out
    assert "  TL_X_ONE = -1,\n  TL_X_TWO = 2,\n" in out
    assert "int tl_f(int a,\n         int b);" in out
    for gone in ("#if", "#include", "extern", "TL_EXTERN", "XX", "two"):
        assert gone not in out


@pytest.mark.parametrize("bad", [
    "#ifdef SOMETHING\nint tl_hidden(void);\n#endif\n",  # a declaration in a conditional
    "#define TL_C sizeof(int)\n",                          # a constant it cannot evaluate
    "#define TL_D TL_UNKNOWN\n",                           # a name it does not know
    "#pragma once\n",                                      # a directive it does not know
])
def test_the_generator_refuses_what_it_does_not_know(bad):
    gen = load_generator()
    with pytest.raises(gen.GenError):
        gen.generate("#ifndef TASKLEDGER_H\n#define TASKLEDGER_H\n" + bad + "#endif\n")

#!/usr/bin/env python3
"""Writes include/taskledger-ffi.h: taskledger.h as a foreign-function interface reads it.

An FFI that parses C declarations without a preprocessor (Python's cffi `cdef`, LuaJIT's
`ffi.cdef`) cannot read taskledger.h as it is: the include guard, the `#include`s, the
`extern "C"` block, the TL_EXTERN export attribute and the X-macro tables that generate the
enums are all preprocessor work, and an object-like `#define` whose value is an expression
(`UINT64_C(...)`, `(A << 16) | B`) is not an integer literal. This script does that work once,
from the header itself, and writes the same declarations with:

  - every enum written out, member by member, with its value;
  - every object-like integer constant as `#define TL_NAME <decimal literal>`;
  - no comments, no conditionals, no includes, no export attribute.

It understands exactly the constructs taskledger.h uses and stops with an error on anything else
(a new conditional with declarations in it, a macro it cannot evaluate), so the two files cannot
drift apart silently: ctest's `ffi-header` runs `--check`, which fails when the committed file is
not what this script writes from the committed header.

Usage: gen-ffi-header.py [--check] HEADER OUTPUT
"""

import re
import sys

GUARD = "TASKLEDGER_H"

# Blocks of taskledger.h that hold only platform glue: what may appear in a skipped #if block.
GLUE = re.compile(
    r'^(extern "C" \{|\}|#(if|ifdef|ifndef|elif|else|endif)\b.*|#define TL_EXTERN\b.*)$')


class GenError(Exception):
    pass


def strip_comments(text):
    """Removes /* */ and // comments, keeping string and character literals and line count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise GenError("unterminated comment")
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def logical_lines(text):
    """Joins backslash-continued lines; yields (the line with its runs of blanks made one space
    and stripped, the line with its indentation kept and its end stripped); blank ones as ''."""
    text = re.sub(r"\\\n", " ", text)
    for line in text.split("\n"):
        yield re.sub(r"\s+", " ", line).strip(), line.rstrip()


def split_args(s):
    """Splits a macro call's arguments at top-level commas, honouring strings and parentheses."""
    args, depth, cur, i = [], 0, [], 0
    while i < len(s):
        c = s[i]
        if c == '"':
            j = i + 1
            while s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            cur.append(s[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    args.append("".join(cur).strip())
    return args


def table_entries(body):
    """The XX(...) calls of an X-macro table's body, each as its argument list."""
    entries, i = [], 0
    while True:
        i = body.find("XX(", i)
        if i < 0:
            return entries
        depth, j = 0, i + 2
        while True:
            if body[j] == '"':
                j += 1
                while body[j] != '"':
                    j += 2 if body[j] == "\\" else 1
            elif body[j] == "(":
                depth += 1
            elif body[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        entries.append(split_args(body[i + 3:j]))
        i = j + 1


def evaluate(expr, constants):
    """The integer value of a constant's definition, from literals and earlier constants."""
    e = re.sub(r"UINT64_C\(\s*([0-9]+)\s*\)", r"\1", expr)
    e = e.replace("UINT64_MAX", str(2**64 - 1)).replace("UINT32_MAX", str(2**32 - 1))
    e = re.sub(r"\b([0-9]+)[uUlL]+\b", r"\1", e)

    def name(m):
        if m.group(0) not in constants:
            raise GenError("cannot evaluate %r: %s is not an integer constant" % (expr, m.group(0)))
        return str(constants[m.group(0)])

    e = re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", name, e)
    if not re.fullmatch(r"[0-9\s()<>|&+\-*~^]+", e):
        raise GenError("cannot evaluate %r" % expr)
    return int(eval(e, {"__builtins__": {}}))  # digits and operators only, checked above


def generate(source):
    lines = list(logical_lines(strip_comments(source)))
    out = []
    constants = {}
    tables = {}     # TL_X_MAP -> entries
    templates = {}  # TL__X_ENUM -> (prefix, has sentence arg)
    depth_skip = 0  # nesting depth inside a skipped conditional
    guard_open = False
    exported = False  # inside a TL_EXTERN declaration that spans lines
    for line, raw in lines:
        if depth_skip:
            if not GLUE.match(line) and line:
                raise GenError("declaration inside a conditional block: %r" % line)
            if re.match(r"#(if|ifdef|ifndef)\b", line):
                depth_skip += 1
            elif line.startswith("#endif"):
                depth_skip -= 1
            continue
        if not line:
            if out and out[-1] != "":
                out.append("")
            continue
        if line == "#ifndef " + GUARD and not guard_open:
            guard_open = True
            continue
        if line.startswith("#endif") and guard_open and line == "#endif":
            guard_open = False  # the guard's own #endif is the header's last line
            continue
        if re.match(r"#(if|ifdef|ifndef)\b", line):
            depth_skip = 1
            continue
        if line.startswith("#include") or line.startswith("#undef") or line == "#define " + GUARD:
            continue
        m = re.match(r"#define (TL_\w+_MAP)\(XX\) (.*)$", line)
        if m:
            tables[m.group(1)] = table_entries(m.group(2))
            continue
        m = re.match(r"#define (TL__\w+_ENUM)\(([^)]*)\) (TL_\w*)##name = \(value\),$", line)
        if m:
            templates[m.group(1)] = m.group(3)
            continue
        m = re.match(r"#define (TL_\w+) (.+)$", line)
        if m:
            value = evaluate(m.group(2), constants)
            constants[m.group(1)] = value
            out.append("#define %s %d" % (m.group(1), value))
            continue
        if line.startswith("#"):
            raise GenError("unexpected directive: %r" % line)
        m = re.match(r"(TL_\w+_MAP)\((TL__\w+_ENUM)\)$", line)
        if m:
            if m.group(1) not in tables or m.group(2) not in templates:
                raise GenError("unknown table or template: %r" % line)
            prefix = templates[m.group(2)]
            for entry in tables[m.group(1)]:
                value = evaluate(entry[1], constants)
                constants[prefix + entry[0]] = value
                out.append("  %s%s = %d," % (prefix, entry[0], value))
            continue
        m = re.match(r"(TL_\w+) = (.+?),?$", line)
        if m and not line.startswith("TL_EXTERN"):
            constants[m.group(1)] = evaluate(m.group(2), constants)
        if raw.startswith("TL_EXTERN "):
            # A declaration's continuation lines are aligned under its parenthesis: they move
            # left with it.
            raw = raw[len("TL_EXTERN "):]
            exported = not raw.endswith(";")
        elif exported and raw.startswith(" " * len("TL_EXTERN ")):
            raw = raw[len("TL_EXTERN "):]
            exported = not raw.endswith(";")
        if "TL_EXTERN" in raw or "##" in raw:
            raise GenError("unexpected macro use: %r" % line)
        out.append(raw)
    if guard_open or depth_skip:
        raise GenError("unbalanced conditionals")
    while out and out[-1] == "":
        out.pop()
    head = [
        "/* taskledger-ffi.h: the declarations of taskledger.h for foreign-function interfaces that",
        " * read C without a preprocessor (cffi's cdef, LuaJIT's ffi.cdef). Generated from",
        " * taskledger.h by tools/gen-ffi-header.py: do not edit. No include guard, no includes: it",
        " * assumes <stdbool.h>, <stddef.h> and <stdint.h>. The contracts are taskledger.h's. */",
        "",
    ]
    return "\n".join(head + out) + "\n"


def main(argv):
    check = False
    if argv and argv[0] == "--check":
        check, argv = True, argv[1:]
    if len(argv) != 2:
        sys.stderr.write("usage: gen-ffi-header.py [--check] HEADER OUTPUT\n")
        return 2
    with open(argv[0], encoding="utf-8") as f:
        try:
            text = generate(f.read())
        except GenError as e:
            sys.stderr.write("gen-ffi-header.py: %s: %s\n" % (argv[0], e))
            return 1
    if check:
        try:
            with open(argv[1], encoding="utf-8") as f:
                current = f.read()
        except OSError as e:
            sys.stderr.write("gen-ffi-header.py: %s\n" % e)
            return 1
        if current != text:
            sys.stderr.write("gen-ffi-header.py: %s is stale: run tools/gen-ffi-header.py %s %s\n"
                             % (argv[1], argv[0], argv[1]))
            return 1
        return 0
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""A dim, and a small integer tensor known entry by entry, have one home: shape/.

    one_dim_type.py SRCDIR BUILDDIR

shape/dim.h defines the dim (a number, a named dim or unknown) and the shape
value; shape inference, fold, fuse and the evaluator's shape checks all use
them. Three rules keep it so:
  - the polynomials of named dims (shape/symdim.h, sym_*) are the dim type's
    internals: no object but shape/dim.c's and symdim.c's own uses them
    (read from the built objects' symbols, as file_cycles.py does);
  - above the shape layer (eval/, passes/, api/) no code compares named dims by
    their text itself (strcmp and the like on a `sym`): dim_eq says when two
    dims are equal, and an unknown dim equals nothing;
  - only shape inference (shape/) sets a value's shape_value: a pass that
    knows a value in part asks inference, it does not keep a copy of its own.
Exits 1 naming each place that breaks one.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_cycles  # noqa: E402

POLY_USERS = {os.path.join("shape", "dim.c"), os.path.join("shape", "symdim.c")}
ABOVE_SHAPE = ("eval", "passes", "api")
NAME_COMPARE = re.compile(r"\b(strcmp|strncmp|memcmp|strcasecmp)\s*\([^;]*\bsyms?\b")
SETS_SHAPE_VALUE = re.compile(r"(->|\.)shape_value\s*=[^=]")


def poly_users(srcdir, builddir):
    found = []
    objs = file_cycles.objects(builddir)
    for src in sorted(objs):
        rel = os.path.relpath(src, srcdir)
        if rel.split(os.sep)[0] not in file_cycles.FOLDERS or rel in POLY_USERS:
            continue
        for obj in objs[src]:
            if not os.path.exists(obj):
                continue
            _, used = file_cycles.symbols(obj)
            syms = sorted(s for s in used if s.startswith("sym_"))
            if syms:
                found.append(f"{rel}: uses the polynomials ({', '.join(syms)}); "
                             "go through shape/dim.h")
                break
    return found


def sources(srcdir, layers):
    for layer in layers:
        for dirpath, _, names in os.walk(os.path.join(srcdir, layer)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.join(dirpath, name)


def text_rules(srcdir):
    found, checked = [], 0
    for path in sources(srcdir, ABOVE_SHAPE + ("graph",)):
        rel = os.path.relpath(path, srcdir)
        checked += 1
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for no, line in enumerate(lines, 1):
            if rel.split(os.sep)[0] in ABOVE_SHAPE and NAME_COMPARE.search(line):
                found.append(f"{rel}:{no}: compares named dims by their text; use dim_eq")
            if SETS_SHAPE_VALUE.search(line):
                found.append(f"{rel}:{no}: sets a shape_value outside shape inference")
    return found, checked


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    srcdir, builddir = sys.argv[1], sys.argv[2]
    found, checked = text_rules(srcdir)
    found += poly_users(srcdir, builddir)
    for f in found:
        print(f)
    print(f"{checked} files checked")
    return 1 if found or checked < 20 else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""No hand-written source file is over 1,500 lines.

    file_sizes.py SRCDIR

A file that long holds more than one job (shape inference once held 53 rules,
a value propagator and its driver in 2,480 lines): split it by what it does,
as eval/ops_*.c and passes/upgrade/adapt_*.c are. Generated files are exempt:
a file whose first line says GENERATED (passes/upgrade/opset_table.c, the
operator changelog as a table). Reads the C, Python, JavaScript and shell
sources under SRCDIR (not build folders or caches); exits 1 naming each file
over the limit.
"""
import os
import sys

LIMIT = 1500
SOURCES = (".c", ".h", ".py", ".js", ".sh")
SCRIPTS = ("run", "test", "fuzz")  # the top-level scripts have no suffix
SKIP_DIRS = {".git", ".cache", "build", "node_modules", "out", "__pycache__"}


def sources(srcdir):
    for dirpath, dirs, names in os.walk(srcdir):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            top_script = dirpath == srcdir and name in SCRIPTS
            if name.endswith(SOURCES) or top_script:
                yield os.path.join(dirpath, name)


def generated(first_line):
    return "GENERATED" in first_line


def over_limit(srcdir):
    found, checked = [], 0
    for path in sources(srcdir):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        checked += 1
        if len(lines) > LIMIT and not generated(lines[0]):
            found.append((os.path.relpath(path, srcdir), len(lines)))
    return found, checked


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    found, checked = over_limit(sys.argv[1])
    for path, n in found:
        print(f"{path}: {n} lines, over {LIMIT}: split it by what its parts do")
    print(f"{checked} files checked")
    return 1 if found or checked < 50 else 0


if __name__ == "__main__":
    sys.exit(main())

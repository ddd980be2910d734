#!/usr/bin/python3
"""Each layer includes only the layers below it.

    layers.py SRCDIR

The layers, lowest first, and what each may include besides itself and system
headers (the layout table of docs/layout.md says the same):

    graph/   onnx.pb-c.h and onnx-data.pb-c.h (proto/) and include/tileopt.h (for
             the status codes)
    shape/   graph/
    eval/    graph/, shape/ (the dim type and its broadcast: the evaluator's shape
             checks are the shape layer's, over static dims)
    passes/  graph/, shape/, eval/
    api/     graph/, shape/, eval/, passes/, include/tileopt.h
    tools/   include/tileopt.h only: the CLI is a client of the public API
    python/  include/tileopt.h only: so is the Python package's extension

Reads every #include "..." of the .c and .h files under those folders; exits 1
naming each include that runs against the order.
"""
import os
import re
import sys

ALLOWED = {
    "graph": {"graph", "onnx.pb-c.h", "onnx-data.pb-c.h", "tileopt.h"},
    "shape": {"shape", "graph", "onnx.pb-c.h", "tileopt.h"},
    "eval": {"eval", "shape", "graph", "onnx.pb-c.h", "tileopt.h"},
    "passes": {"passes", "graph", "shape", "eval", "onnx.pb-c.h", "tileopt.h"},
    "api": {"api", "passes", "graph", "shape", "eval", "onnx.pb-c.h", "tileopt.h"},
    "tools": {"tools", "tileopt.h"},
    "python": {"python", "tileopt.h"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def violations(srcdir):
    found, checked = [], 0
    for layer, allowed in ALLOWED.items():
        for dirpath, _, names in os.walk(os.path.join(srcdir, layer)):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                checked += 1
                for inc in INCLUDE.findall(text):
                    # "eval/eval.h" -> eval; "onnx.pb-c.h" and "tileopt.h" as they are;
                    # "upgrade_impl.h" beside the file -> the file's own layer
                    target = inc.split("/")[0] if "/" in inc else inc
                    if "/" not in inc and os.path.exists(os.path.join(dirpath, inc)):
                        target = layer
                    if target not in allowed:
                        found.append(f"{os.path.relpath(path, srcdir)}: includes \"{inc}\"")
    return found, checked


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    found, checked = violations(sys.argv[1])
    for v in found:
        print("layer order broken:", v)
    print(f"{checked} files checked")
    return 1 if found or checked < 20 else 0


if __name__ == "__main__":
    sys.exit(main())

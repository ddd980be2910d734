#!/usr/bin/python3
"""numpy broadcasting is written once: shape/dim.c's dim_bcast.

    one_broadcast.py SRCDIR

Shape inference, fuse and the evaluator each had a broadcast of their own, and
they drifted (one took an unknown dim for 1, one for a clash). Every function of
the library (graph/, shape/, eval/, passes/, api/) whose name says it
broadcasts (`broadcast` or `bcast` in it) must be the shape layer's or call it
(dim_bcast_*, dim_broadcast2), directly or through another such function,
unless it is one of the few listed below, which ask something about
broadcasting without computing a broadcast shape. Exits 1 naming each function
that broadcasts by itself.
"""
import os
import re
import sys

LIBRARY = ("graph", "shape", "eval", "passes", "api")
HOME = os.path.join("shape", "dim.c")
THE_ONE = re.compile(r"\b(dim_bcast_\w+|dim_broadcast2)\s*\(")
# name -> why it computes no broadcast shape
NOT_A_BROADCAST = {
    "op_broadcasts": "the op table: whether an op broadcasts at an opset",
    "up_adapt_broadcast": "the upgrade adapter that rewrites legacy broadcast/axis attributes",
    "up_adapt_drop_broadcast": "the upgrade adapter that drops a legacy broadcast attribute",
    "fz_is_broadcast": "whether a Tile repeats only axes of size 1",
    "tile_is_redundant_broadcast": "fold's guard: whether a Tile's readers broadcast anyway",
}
DEFINITION = re.compile(
    r"^(?:static\s+)?(?:inline\s+)?(?:const\s+)?[A-Za-z_][\w\s\*]*?\b"
    r"(\w*(?:broadcast|bcast)\w*)\s*\(([^;{]*?)\)\s*\{", re.M | re.S | re.I)


def body(text, open_brace):
    depth = 0
    for i in range(open_brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_brace:i + 1]
    return text[open_brace:]


def definitions(srcdir):
    for layer in LIBRARY:
        for dirpath, _, names in os.walk(os.path.join(srcdir, layer)):
            for name in sorted(names):
                if not name.endswith(".c"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for m in DEFINITION.finditer(text):
                    yield os.path.relpath(path, srcdir), m.group(1), body(text, m.end() - 1)


def offenders(srcdir):
    defs = list(definitions(srcdir))
    # the shape layer's own, those that call it, and (to a fixed point) those
    # that call one of these: a wrapper of a wrapper still broadcasts once
    good = {name for path, name, text in defs if path == HOME or THE_ONE.search(text)}
    grew = bool(good)
    while grew:
        calls = re.compile(r"\b(%s)\s*\(" % "|".join(map(re.escape, sorted(good))))
        more = {name for _, name, text in defs if name not in good and calls.search(text)}
        grew = bool(more)
        good |= more
    found = [f"{path}: {name} broadcasts without shape/dim.c's dim_bcast"
             for path, name, _ in defs if name not in good and name not in NOT_A_BROADCAST]
    return found, len(defs)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    found, seen = offenders(sys.argv[1])
    for f in found:
        print(f)
    print(f"{seen} functions named for broadcasting checked")
    return 1 if found or seen < 5 else 0


if __name__ == "__main__":
    sys.exit(main())

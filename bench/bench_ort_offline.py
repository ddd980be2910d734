#!/usr/bin/python3
"""How many Tiles does each optimizer remove? ONNX Runtime's own offline optimizer
(basic and extended levels, saved through optimizedModelFilePath) against
`tileopt optimize` with the default passes, over every model of the real-model
suite (tests/real/, in .cache/real/) that holds a Tile. Counts Tiles in every
graph, subgraphs included, and prints them per model and in total.

    /usr/bin/python3 bench/bench_ort_offline.py [--tileopt PATH] [--only TEXT]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import onnx

from bench_real import CACHE, HERE, fetch_models, find_tileopt

LEVELS = ("basic", "extended")


def count_tiles(graph):
    n = 0
    for node in graph.node:
        n += node.op_type == "Tile" and node.domain in ("", "ai.onnx")
        for a in node.attribute:
            if a.HasField("g"):
                n += count_tiles(a.g)
            for g in a.graphs:
                n += count_tiles(g)
    return n


def tiles_in(path):
    return count_tiles(onnx.load(path, load_external_data=False).graph)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tileopt")
    ap.add_argument("--only", help="only models whose name contains this")
    args = ap.parse_args()
    tool = find_tileopt(args.tileopt)
    fetch_models(args.only, "bench_ort_offline")
    rows, totals = [], {"original": 0, "tileopt": 0, **{lv: 0 for lv in LEVELS}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(CACHE)):
            model = os.path.join(CACHE, name, "model.onnx")
            if (args.only and args.only not in name) or not os.path.isfile(model):
                continue
            before = tiles_in(model)
            if not before:
                continue
            row = {"original": before}
            for lv in LEVELS:
                out = os.path.join(tmp, f"{name}.{lv}.onnx")
                r = subprocess.run(["node", os.path.join(HERE, "ort_offline.js"), model, out, lv],
                                   capture_output=True, text=True)
                row[lv] = tiles_in(out) if r.returncode == 0 else None
            out = os.path.join(tmp, f"{name}.tileopt.onnx")
            r = subprocess.run([tool, "optimize", model, "-o", out, "-q"],
                               capture_output=True, text=True)
            row["tileopt"] = tiles_in(out) if r.returncode == 0 else None
            rows.append((name, row))
            for k, v in row.items():
                totals[k] += v or 0
    cols = ["original"] + list(LEVELS) + ["tileopt"]
    print(f"{'model':40s}" + "".join(f"{c:>10s}" for c in cols))
    for name, row in rows:
        print(f"{name:40s}" + "".join(f"{'-' if row[c] is None else row[c]:>10}" for c in cols))
    print(f"{'Tiles in all':40s}" + "".join(f"{totals[c]:>10}" for c in cols))
    removed = {c: totals["original"] - totals[c] for c in cols[1:]}
    print("removed: " + ", ".join(f"{c} {removed[c]}" for c in cols[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

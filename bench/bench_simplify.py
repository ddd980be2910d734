#!/usr/bin/python3
"""Does the default run simplify as well as ONNX Runtime's basic level, and
never grow the file? Over every model of the real-model suite (.cache/real):
node counts (every graph, subgraphs included) and file bytes of the original,
of `tileopt optimize` with the default passes (and of a second tileopt, --base,
to compare two revisions), and of the model ONNX Runtime saves at its basic
level (optimizedModelFilePath). A row is flagged `GREW` when tileopt's file is
bigger than the original, `MORE` when it keeps more nodes than ORT basic on a
model where ORT does not grow the file (by more than ORT_SLACK bytes: the
opset imports ORT writes into every model it saves). --skip adds a column of
tileopt without those passes (`--skip gqa`: the simplification alone, without
the If by which gqa keeps both attention forms), flagged `MORE-` likewise.

    /usr/bin/python3 bench/bench_simplify.py [--tileopt PATH] [--base PATH]
        [--skip PASSES] [--only TEXT] [--no-ort] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx

from bench_real import CACHE, HERE, find_tileopt


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if a.HasField("g"):
                n += count_nodes(a.g)
            for g in a.graphs:
                n += count_nodes(g)
    return n


def nodes_in(path):
    return count_nodes(onnx.load(path, load_external_data=False).graph)


# What ONNX Runtime adds to any model it saves (its opset imports), not growth.
ORT_SLACK = 1024


def optimize(tool, src, dst, *extra):
    r = subprocess.run([tool, "optimize", src, "-o", dst, "--quiet", *extra],
                       capture_output=True, text=True)
    return r.returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tileopt")
    ap.add_argument("--base", help="a second tileopt to compare against (before)")
    ap.add_argument("--skip", help="a column of tileopt without these passes (comma-separated)")
    ap.add_argument("--only", help="only models whose name contains this")
    ap.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime's basic level")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    tool = find_tileopt(args.tileopt)
    rows = []
    cols = ["orig"] + (["base"] if args.base else []) + ["tileopt"] + \
        (["skip"] if args.skip else []) + ([] if args.no_ort else ["ort"])
    print(f"{'model':40} " + " ".join(f"{c + ' nodes':>13} {c + ' bytes':>13}" for c in cols))
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(CACHE)):
            model = os.path.join(CACHE, name, "model.onnx")
            if (args.only and args.only not in name) or not os.path.isfile(model):
                continue
            row = {"model": name, "orig": (nodes_in(model), os.path.getsize(model))}
            for col, t, extra in (("base", args.base, ()), ("tileopt", tool, ()),
                                  ("skip", args.skip and tool, ("--skip-passes", args.skip))):
                if not t:
                    continue
                out = os.path.join(tmp, f"{name}.{col}.onnx")
                row[col] = (nodes_in(out), os.path.getsize(out)) \
                    if optimize(t, model, out, *extra) else None
            if not args.no_ort:
                out = os.path.join(tmp, f"{name}.ort.onnx")
                r = subprocess.run(["node", os.path.join(HERE, "ort_offline.js"), model, out,
                                    "basic"], capture_output=True, text=True)
                row["ort"] = (nodes_in(out), os.path.getsize(out)) if r.returncode == 0 \
                    else None
            flags = []
            t, o = row.get("tileopt"), row.get("ort")
            if t and t[1] > row["orig"][1]:
                flags.append("GREW")
            ort_kept_size = o and o[1] <= row["orig"][1] + ORT_SLACK
            if t and ort_kept_size and t[0] > o[0]:
                flags.append("MORE")
            k = row.get("skip")
            if k and ort_kept_size and k[0] > o[0]:
                flags.append("MORE-")
            row["flags"] = flags
            row["ort_kept_size"] = bool(ort_kept_size)
            rows.append(row)
            cells = " ".join(f"{v[0]:>13} {v[1]:>13}" if v else f"{'fail':>13} {'':>13}"
                             for v in (row.get(c) for c in cols))
            print(f"{name:40} {cells} {' '.join(flags)}", flush=True)
    tot = {c: sum(r[c][0] for r in rows if all(r.get(k) for k in cols)) for c in cols}
    print("total nodes (models where every column ran): " +
          ", ".join(f"{c} {v}" for c, v in tot.items()))
    print(f"grew: {sum('GREW' in r['flags'] for r in rows)}, more nodes than ORT basic: "
          f"{sum('MORE' in r['flags'] for r in rows)} of {len(rows)}" +
          (f" ({sum('MORE-' in r['flags'] for r in rows)} without {args.skip})"
           if args.skip else ""))
    for col in ("tileopt", "skip"):
        both = [r for r in rows if r.get(col) and r["ort_kept_size"]]
        if both:
            fewer = sum(r[col][0] < r["ort"][0] for r in both)
            same = sum(r[col][0] == r["ort"][0] for r in both)
            print(f"{col}: against ORT basic on the {len(both)} models where ORT keeps the "
                  f"file's size: fewer nodes on {fewer}, as many on {same}, more on "
                  f"{len(both) - fewer - same}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Benchmark of the fold pass: a model of repeated Shape->Gather->Concat->Tile blocks.

Block i: Shape(a[i-1]) -> Gather([0]) -> Concat(., [2]) gives repeats [1,2],
Tile(x[1,4]) -> [1,8], and a[i] = Add(a[i-1], tile) accumulates (5 nodes per
block; the shapes come from the running value, as exporters emit them). The fold pass folds every shape chain and turns
the repeats into initializers. Prints the time of the fold pass (from the report)
and of the whole `tileopt optimize` run (wall and CPU: on a loaded machine the
CPU time is the steadier figure), best of 3, at N and 2N nodes, and the ratios.

Usage: bench_fold.py [--nodes N] [--tileopt PATH] [--check] [--hub]
  --check: exit 1 unless the N-node fold pass takes under 2 s and the pass at 2N
           takes at most 2.2 times as long.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(n_nodes, hub=False):
    blocks = max(1, n_nodes // 5)
    nodes = []
    acc = None
    for i in range(blocks):
        s, g, r, t = f"s{i}", f"g{i}", f"r{i}", f"t{i}"
        nodes.append(helper.make_node("Shape", ["x" if hub else (acc or "x")], [s],
                                      name=f"shape{i}"))
        nodes.append(helper.make_node("Gather", [s, "idx"], [g], name=f"gather{i}", axis=0))
        nodes.append(helper.make_node("Concat", [g, "two"], [r], name=f"concat{i}", axis=0))
        nodes.append(helper.make_node("Tile", ["x", r], [t], name=f"tile{i}"))
        out = "y" if i == blocks - 1 else f"a{i}"
        nodes.append(helper.make_node("Add", [acc or "zero", t], [out], name=f"add{i}"))
        acc = out
    inits = [numpy_helper.from_array(np.array([0], dtype=np.int64), "idx"),
             numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
             numpy_helper.from_array(np.zeros((1, 8), dtype=np.float32), "zero")]
    graph = helper.make_graph(
        nodes, "bench_fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def run(tileopt, path, tmp):
    out = os.path.join(tmp, "out.onnx")
    rep = os.path.join(tmp, "r.json")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cp = subprocess.run([tileopt, "optimize", path, "-o", out, "--passes", "fold",
                         "--report", rep, "--quiet"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if cp.returncode != 0:
        sys.exit(f"tileopt failed: {cp.stderr.strip()}")
    with open(rep) as f:
        report = json.load(f)
    fold = [p for p in report["passes"] if p["name"] == "fold"][0]
    m = onnx.load(out)
    left = sum(1 for n in m.graph.node if n.op_type in ("Shape", "Gather", "Concat"))
    if left:
        sys.exit(f"{left} shape-chain nodes left after fold")
    return fold["duration_ms"] / 1000.0, wall, cpu, len(fold["actions"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--tileopt", default=os.environ.get("TILEOPT") or os.path.join(
        os.environ.get("BUILDDIR", "build"), "tools", "tileopt"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--hub", action="store_true",
                    help="every Shape reads x (one value with N/5 readers) instead of the "
                         "running value")
    a = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (a.nodes, 2 * a.nodes):
            path = os.path.join(tmp, f"m{n}.onnx")
            onnx.save(build(n, a.hub), path)
            best = None
            for _ in range(3):
                r = run(a.tileopt, path, tmp)
                best = r if best is None or r[0] < best[0] else best
            results.append((n, *best))
            print(f"{n:>8} nodes: fold pass {best[0]:.3f} s, whole optimize {best[1]:.3f} s "
                  f"(cpu {best[2]:.3f} s), {best[3]} actions")
    (n1, p1, w1, c1, _), (n2, p2, w2, c2, _) = results
    print(f"ratio at 2x nodes: fold pass {p2 / p1:.2f}x, whole optimize {w2 / w1:.2f}x "
          f"(cpu {c2 / c1:.2f}x)")
    if a.check and (p1 >= 2.0 or p2 > 2.2 * p1):
        sys.exit("fold pass too slow or not linear")


if __name__ == "__main__":
    main()

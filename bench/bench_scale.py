#!/usr/bin/python3
"""Scale: tileopt on models of 100k to 800k nodes, beside ONNX Runtime's offline
optimizer.

The model repeats the shape chain exporters emit around a Tile whose repeats
come from a dynamic batch: block i reads a[i-1] ([N, 8], N symbolic),
Shape -> Gather(0) -> Unsqueeze -> Concat(., [1]) gives repeats [N, 1],
Tile(bias[1, 8]) -> [N, 8], then Add(a[i-1], .) -> Relu -> Mul(., scale) gives
a[i] (8 nodes per block, each block with its own bias and scale). A variant adds
100 MB of initializers (25 of 4 MB, summed into a second output) to show what the
passes do with payloads they do not change.

For each size it times `tileopt optimize` with the default passes and with
`--passes none` (load and save only), best wall time of --runs, with the CPU
time (user + system) and peak RSS of that run (GNU time), and prints the ratio
of each doubling and their geometric mean. The runs go round all sizes in turn
rather than one size after another: this VM's speed drifts by a quarter within
minutes, and a slow spell then touches every size instead of one. ONNX Runtime's basic offline optimizer (bench/ort_offline.js) runs on
the same kind of model from 5k nodes, doubling until one run takes more than a
minute (the next size would take longer still), beside tileopt's time there.

    /usr/bin/python3 bench/bench_scale.py [--sizes 100000,200000,400000,800000]
        [--runs 3] [--tileopt PATH] [--no-ort] [--no-big]

Goal on the 2-core machine this project measures on: 400k nodes in 2 s or less
and 300 MB peak RSS or less with the default passes, at most 2.2x time per
doubling from 100k to 800k.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_LIMIT_S = 60.0
ORT_KILL_S = 300


def build(n_nodes, big_mb=0):
    """The block model with about n_nodes nodes (and big_mb MB of initializers)."""
    blocks = max(1, n_nodes // 8)
    nodes, inits = [], []
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes0")
    inits += [one, zero, axes]
    acc = "x"
    for i in range(blocks):
        p = f"b{i}_"
        nodes += [
            helper.make_node("Shape", [acc], [p + "shape"], name=p + "Shape"),
            helper.make_node("Gather", [p + "shape", "zero"], [p + "batch"], name=p + "Gather",
                             axis=0),
            helper.make_node("Unsqueeze", [p + "batch", "axes0"], [p + "batch1"],
                             name=p + "Unsqueeze"),
            helper.make_node("Concat", [p + "batch1", "one"], [p + "reps"], name=p + "Concat",
                             axis=0),
            helper.make_node("Tile", [p + "bias", p + "reps"], [p + "tiled"], name=p + "Tile"),
            helper.make_node("Add", [acc, p + "tiled"], [p + "sum"], name=p + "Add"),
            helper.make_node("Relu", [p + "sum"], [p + "relu"], name=p + "Relu"),
            helper.make_node("Mul", [p + "relu", p + "scale"],
                             ["y" if i == blocks - 1 else p + "out"], name=p + "Mul"),
        ]
        rng = np.random.default_rng(i)
        inits.append(numpy_helper.from_array(rng.standard_normal((1, 8)).astype(np.float32),
                                             p + "bias"))
        inits.append(numpy_helper.from_array(np.full(8, 0.5, np.float32), p + "scale"))
        acc = p + "out"
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])]
    if big_mb:
        count, each = 25, big_mb * 1024 * 1024 // 25 // 4
        prev = None
        for k in range(count):
            inits.append(numpy_helper.from_array(np.full(each, k, np.float32), f"big{k}"))
            if prev is not None:
                out = "big_sum" if k == count - 1 else f"big_acc{k}"
                nodes.append(helper.make_node("Add", [prev, f"big{k}"], [out], name=f"big_add{k}"))
                prev = out
            else:
                prev = f"big{k}"
        outputs.append(helper.make_tensor_value_info("big_sum", TensorProto.FLOAT, [each]))
    graph = helper.make_graph(nodes, "scale",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              outputs, initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def timed(cmd):
    """(wall seconds, peak RSS in MB, exit code, stderr, CPU seconds) of cmd. The
    peak comes from GNU time, a small process between: a child forked from this
    Python (which holds big models) would report the parent's peak as its own."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        cp = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", rss.name] + cmd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        try:
            kb, user, system = (float(x) for x in rss.read().strip().splitlines()[-1].split())
        except (ValueError, IndexError):  # killed before time wrote it
            kb = user = system = 0.0
    return wall, kb / 1024.0, cp.returncode, cp.stderr, user + system


def run_ok(cmd):
    """(wall, RSS, CPU) of cmd, which must succeed."""
    wall, rss, rc, err, cpu = timed(cmd)
    if rc != 0:
        sys.exit(f"{' '.join(cmd)} failed ({rc}): {err.strip()[-500:]}")
    return wall, rss, cpu


def best(cmd, runs):
    return min(run_ok(cmd) for _ in range(runs))


def ratios(times):
    return ["-"] + [f"{b / a:.2f}x" for a, b in zip(times, times[1:])]


def per_doubling(times, sizes):
    """Geometric mean of the ratio per doubling, first size to last."""
    return (times[-1] / times[0]) ** (1 / np.log2(sizes[-1] / sizes[0]))


def ort_series(a, tmp):
    """ONNX Runtime's basic offline optimizer from 5k nodes, doubling until a run
    takes more than a minute (killed after ORT_KILL_S), beside tileopt's time on
    the same model."""
    n = 5000
    while n <= max(int(s) for s in a.sizes.split(",")):
        src = os.path.join(tmp, f"ort{n}.onnx")
        onnx.save(build(n), src)
        t = best([a.tileopt, "optimize", src, "-o", os.path.join(tmp, "o.onnx"), "--quiet"],
                 a.runs)[0]
        cmd = ["timeout", str(ORT_KILL_S), "node", os.path.join(HERE, "ort_offline.js"), src,
               os.path.join(tmp, "ort.onnx"), "basic"]
        wall, rss, rc, err, _ = timed(cmd)
        if rc != 0:
            why = "killed" if rc == 124 else err.strip()[-200:]
            print(f"ORT basic {n:7d} nodes: no result after {wall:.0f} s ({why}); "
                  f"tileopt {t:.2f} s", flush=True)
            return
        print(f"ORT basic {n:7d} nodes: {wall:7.2f} s {rss:6.0f} MB; tileopt {t:6.2f} s: "
              f"ORT takes {wall / t:.0f}x tileopt's time", flush=True)
        if wall > ORT_LIMIT_S:
            return
        n *= 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,200000,400000,800000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tileopt", default=os.environ.get("TILEOPT") or os.path.join(
        os.path.dirname(HERE), "build", "release", "tools", "tileopt"))
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--no-big", action="store_true")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    variants = [("plain", 0)] + ([] if a.no_big else [("+100 MB", 100)])
    modes = {"default": [], "none": ["--passes", "none"]}
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        models = []  # (label, n, path, nodes, MB)
        for label, mb in variants:
            for n in sizes:
                src = os.path.join(tmp, f"m{n}_{mb}.onnx")
                m = build(n, mb)
                onnx.save(m, src)
                models.append((label, n, src, len(m.graph.node), os.path.getsize(src) / 1e6))
                del m
        out = os.path.join(tmp, "out.onnx")
        runs = {}
        for r in range(a.runs):
            for label, n, src, _, _ in models:
                for mode, extra in modes.items():
                    cmd = [a.tileopt, "optimize", src, "-o", out, "--quiet"] + extra
                    runs.setdefault((label, n, mode), []).append(run_ok(cmd))
            print(f"round {r + 1} of {a.runs} done", file=sys.stderr, flush=True)
        for label, _ in variants:
            walls = {mode: [] for mode in modes}
            for lab, n, src, nodes, size_mb in models:
                if lab != label:
                    continue
                line = f"{label:8} {nodes:7d} nodes {size_mb:6.1f} MB file:"
                for mode in modes:
                    wall, rss, cpu = min(runs[(label, n, mode)])
                    walls[mode].append(wall)
                    line += (f" {'| ' if mode != 'default' else ''}{mode} {wall:5.2f} s "
                             f"(cpu {cpu:5.2f} s) {rss:4.0f} MB")
                print(line, flush=True)
                os.unlink(src)
            for mode in modes:
                if len(sizes) > 1:
                    print(f"{label}: {mode}, time per doubling "
                          f"{' '.join(ratios(walls[mode]))}, "
                          f"{per_doubling(walls[mode], sizes):.2f}x on average", flush=True)
        if not a.no_ort:
            ort_series(a, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

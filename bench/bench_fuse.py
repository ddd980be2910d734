#!/usr/bin/python3
"""Benchmark the fuse pass: original vs `tileopt optimize --passes fuse` in ONNX
Runtime (onnxruntime-node, through bench/ort_time.js), 1 intra-op thread and ORT's
default, both models timed in the same run, interleaved. Prints one line per case
with the median times and the ratio original/optimized (> 1: faster).

    /usr/bin/python3 bench/bench_fuse.py [--tileopt PATH] [--rounds N] [--quick]

Cases (the fuse rules' typical shapes):
  bias_input  Add(Tile(b[1,64,1,1], [8,1,56,56]), y[8,64,56,56]), b a graph input
  bias_init   the same with b an initializer (ORT constant-folds that Tile itself)
  unary       Relu(Tile(x[256,256], [8,8]))
  chain       Mul(Add(Tile(x[256,256], [8,8]), c), y[2048,2048]), c a scalar
  split       Add(Tile(x[64,256], [16,4]), y[1024,1024]) with --fuse-split (rule 4)
  expand      Tile(b[1,64,1,1], [8,1,56,56]) vs Expand(b, [8,64,56,56]): the shape
              rule 5 leaves as Tile (ORT runs this Expand slower)
  expand_inner  Tile(b[256,1], [1,2048]) vs Expand: the shape rule 5 rewrites
  --rule5     adds the other shapes behind rule 5's guard (docs/passes.md's table):
              expand_<x>_<repeats>, Tile vs Expand, "opt" being the Expand
Targets (on the time inside ONNX Runtime, from its profiler): bias_input and unary
>= 1.5x, chain and bias_init >= 1.2x, none < 0.95x. The wall time of node's
session.run() is printed beside it.

The evaluator half (view vs materialized Tile in tileopt's own evaluator) is
bench/bench_view.c (meson target bench/bench_view), run here from a release
build (build-bench/, set up with meson on first use, or --eval-builddir).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ORT_TIME = os.path.join(HERE, "ort_time.js")


def find_tileopt(given):
    if given:
        return given
    if os.environ.get("TILEOPT"):
        return os.environ["TILEOPT"]
    cands = sorted(glob.glob(os.path.join(REPO, "build*", "tools", "tileopt")),
                   key=os.path.getmtime, reverse=True)
    if not cands:
        sys.exit("bench_fuse: no tileopt binary (build it, or pass --tileopt)")
    return cands[0]


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "bench", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def case_bias(as_init):
    rng = np.random.default_rng(0)
    b = rng.standard_normal((1, 64, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Tile", ["b", "reps"], ["bt"]),
             helper.make_node("Add", ["bt", "y"], ["z"])]
    inits = [i64("reps", [8, 1, 56, 56])]
    inputs = [vi("y", [8, 64, 56, 56])]
    feed = {"y": [8, 64, 56, 56]}
    if as_init:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        inputs.insert(0, vi("b", [1, 64, 1, 1]))
        feed["b"] = [1, 64, 1, 1]
    return model(nodes, inputs, [vi("z", [8, 64, 56, 56])], inits), feed


def case_unary():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["xt"]),
             helper.make_node("Relu", ["xt"], ["z"])]
    return (model(nodes, [vi("x", [256, 256])], [vi("z", [2048, 2048])],
                  [i64("reps", [8, 8])]), {"x": [256, 256]})


def case_chain():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["xt"]),
             helper.make_node("Add", ["xt", "c"], ["s"]),
             helper.make_node("Mul", ["s", "y"], ["z"])]
    inits = [i64("reps", [8, 8]),
             numpy_helper.from_array(np.array(0.5, dtype=np.float32), "c")]
    return (model(nodes, [vi("x", [256, 256]), vi("y", [2048, 2048])],
                  [vi("z", [2048, 2048])], inits),
            {"x": [256, 256], "y": [2048, 2048]})


def case_split():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["xt"]),
             helper.make_node("Add", ["xt", "y"], ["z"])]
    return (model(nodes, [vi("x", [64, 256]), vi("y", [1024, 1024])],
                  [vi("z", [1024, 1024])], [i64("reps", [16, 4])]),
            {"x": [64, 256], "y": [1024, 1024]})


# Size-1 broadcasts around rule 5's guard: few and many innermost repeats, an
# outer axis repeated too, outer axes only.
RULE5_SHAPES = [([8192, 1], [1, 2]), ([8192, 1], [1, 4]), ([8192, 1], [1, 8]),
                ([2048, 1], [1, 16]), ([2048, 1], [1, 32]), ([8192, 1], [1, 256]),
                ([1, 64, 1, 1], [8, 1, 1, 56]), ([1, 512, 1, 1], [1, 1, 56, 56]),
                ([1, 2048], [256, 1]),
                # nn.MultiheadAttention's bias_k.repeat(1, bsz, 1) feeding Concat
                ([1, 1, 64], [1, 8, 1]), ([1, 1, 512], [1, 32, 1])]


def case_expand(xs, reps):
    ts = [a * b for a, b in zip(xs, reps)]
    tile = model([helper.make_node("Tile", ["b", "reps"], ["z"])],
                 [vi("b", xs)], [vi("z", ts)], [i64("reps", reps)])
    expand = model([helper.make_node("Expand", ["b", "shape"], ["z"])],
                   [vi("b", xs)], [vi("z", ts)], [i64("shape", ts)])
    return tile, expand, {"b": xs}


def optimize(tileopt, src, dst, extra):
    r = subprocess.run([tileopt, "optimize", src, "-o", dst, "--passes", "fuse",
                        "--quiet"] + extra, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_fuse: tileopt optimize {src} failed: {r.stderr.strip()}")


def time_models(tmp, models, feed, threads, rounds, prealloc=False):
    prof = tempfile.mkdtemp(dir=tmp)
    spec = {"models": [{"label": k, "path": p} for k, p in models],
            "inputs": feed, "threads": threads, "warmup": 5, "rounds": rounds,
            "prealloc": prealloc, "profile_dir": prof}
    sp = os.path.join(tmp, "spec.json")
    with open(sp, "w") as f:
        json.dump(spec, f)
    r = subprocess.run(["node", ORT_TIME, sp], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_fuse: ort_time failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def bench_eval(builddir, rounds):
    """Run bench_view (bench/bench_view.c) from a release build."""
    if not builddir:
        builddir = os.path.join(REPO, "build-bench")
        if not os.path.isdir(builddir):
            subprocess.run(["meson", "setup", builddir, "-Dbuildtype=release",
                            "-Dtests=false"], cwd=REPO, check=True,
                           capture_output=True)
    r = subprocess.run(["ninja", "-C", builddir, "bench/bench_view"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_fuse: building bench_view failed: {r.stdout.strip()[-2000:]}")
    exe = os.path.join(builddir, "bench", "bench_view")
    r = subprocess.run([exe, str(rounds)], capture_output=True, text=True)
    print("evaluator (Add(Tile(x), y): view vs materialized Tile, target >= 2x):")
    print(r.stdout.rstrip())
    if r.returncode != 0:
        sys.exit(f"bench_fuse: bench_view failed: {r.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tileopt")
    ap.add_argument("--cases", help="comma-separated subset of the ORT cases")
    ap.add_argument("--eval-only", action="store_true",
                    help="only the evaluator benchmark (bench_view.c)")
    ap.add_argument("--no-eval", action="store_true",
                    help="skip the evaluator benchmark")
    ap.add_argument("--eval-builddir",
                    help="release build dir to link bench_view against "
                         "(default: build-bench, set up on first use)")
    ap.add_argument("--rule5", action="store_true",
                    help="also time Tile against Expand on the shapes behind rule 5's guard")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--no-prealloc", action="store_true",
                    help="let ORT allocate outputs on every run and node copy them into "
                         "fresh JS buffers (adds the same fixed cost to both models)")
    args = ap.parse_args()
    rounds = 10 if args.quick else args.rounds
    if not args.no_eval:
        bench_eval(args.eval_builddir, rounds)
    if args.eval_only:
        return []
    tileopt = find_tileopt(args.tileopt)
    targets = {"bias_input": 1.5, "unary": 1.5, "chain": 1.2, "bias_init": 1.2}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for name, (m, feed), extra in [
                ("bias_input", case_bias(False), []),
                ("bias_init", case_bias(True), []),
                ("unary", case_unary(), []),
                ("chain", case_chain(), []),
                ("chain_split", case_chain(), ["--fuse-split"]),
                ("split", case_split(), ["--fuse-split"])]:
            src = os.path.join(tmp, name + ".onnx")
            dst = os.path.join(tmp, name + ".opt.onnx")
            onnx.save(m, src)
            optimize(tileopt, src, dst, extra)
            cases.append((name, src, dst, feed))
        shapes = [("expand", [1, 64, 1, 1], [8, 1, 56, 56]),
                  ("expand_inner", [256, 1], [1, 2048])]
        if args.rule5:
            shapes += [("expand_%s_%s" % ("x".join(map(str, xs)), "x".join(map(str, reps))),
                        xs, reps) for xs, reps in RULE5_SHAPES]
        for name, xs, reps in shapes:
            tile, expand, feed = case_expand(xs, reps)
            src = os.path.join(tmp, name + ".tile.onnx")
            dst = os.path.join(tmp, name + ".expand.onnx")
            onnx.save(tile, src)
            onnx.save(expand, dst)
            cases.append((name, src, dst, feed))

        print(f"ONNX Runtime, original vs optimized, {rounds} interleaved runs "
              f"({'ORT-allocated' if args.no_prealloc else 'pre-allocated'} outputs).\n"
              "ORT ms: median duration of ORT's own model_run (its profiler), the time "
              "inside ONNX Runtime; ratio = orig/opt of it, checked against the target.\n"
              "wall: the same ratio of the median wall time of session.run() in node, "
              "which adds the binding's copy of each output into a JS buffer (equal for "
              "both models); min = of the fastest wall times; cpu = of the median "
              "process CPU time.")
        print(f"{'case':<12} {'threads':>7} {'orig ms':>9} {'opt ms':>9} {'ratio':>7}"
              f" {'wall':>7} {'min':>7} {'cpu':>7}  target")
        if args.cases:
            keep = set(args.cases.split(","))
            cases = [c for c in cases if c[0] in keep]
        for name, src, dst, feed in cases:
            for threads in (1, 0):
                t = time_models(tmp, [("orig", src), ("opt", dst)], feed, threads,
                                rounds, not args.no_prealloc)
                o, n = t["orig"]["ort_median_ms"], t["opt"]["ort_median_ms"]
                ratio = o / n if n > 0 else float("inf")
                wo, wn = t["orig"]["median_ms"], t["opt"]["median_ms"]
                wratio = wo / wn if wn > 0 else float("inf")
                mo, mn = t["orig"]["min_ms"], t["opt"]["min_ms"]
                mratio = mo / mn if mn > 0 else float("inf")
                co, cn = t["orig"]["cpu_median_ms"], t["opt"]["cpu_median_ms"]
                cratio = co / cn if cn > 0 else float("inf")
                tgt = targets.get(name, 0.95)
                ok = "ok" if ratio >= tgt else "MISS"
                if name in ("split", "chain_split") or name.startswith("expand"):
                    ok = "info"
                print(f"{name:<12} {threads or 'default':>7} {o:9.3f} {n:9.3f} "
                      f"{ratio:6.2f}x {wratio:6.2f}x {mratio:6.2f}x {cratio:6.2f}x"
                      f"  >={tgt} {ok}", flush=True)
                results.append({"case": name, "threads": threads, "orig_ms": o,
                                "opt_ms": n, "ratio": ratio, "wall_ratio": wratio,
                                "min_ratio": mratio, "cpu_ratio": cratio})
    return results


if __name__ == "__main__":
    main()

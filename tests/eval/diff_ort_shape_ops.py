#!/usr/bin/python3
"""Differential test: the shape-subgraph and reduction kernels against ONNX
Runtime on random valid parameters. Each round builds one model of many
independent nodes over random float and int64 inputs (some fed through Tile and
Expand views first), runs it in `tileopt run` and in ORT, and compares every
output (rtol 1e-3, atol 1e-7 for floats, exact otherwise). Seeded; exit 77
(skipped) when ONNX Runtime is not installed."""
import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

ROUNDS = int(os.environ.get("DIFF_ROUNDS", "6"))
NODES = 70


class Builder:
    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.outs, self.k = rng, [], [], [], 0

    def name(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def const(self, arr):
        n = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def node(self, op, ins, n_out=1, **attrs):
        outs = [self.name("t") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, **attrs))
        return outs

    def out(self, names):
        self.outs.extend(names)


def random_case(b, src, shape):
    """One random node (or short chain) reading src of the given shape."""
    rng = b.rng
    r = len(shape)
    axis = rng.randrange(r)
    op = rng.choice(["Slice", "Gather", "Transpose", "Concat", "Reduce", "Expand", "Reshape",
                     "Unsqueeze", "Squeeze", "Flatten", "ArgMax", "CumSum", "Split",
                     "GatherElements", "Trilu", "Shape"])
    if op == "Slice":
        k = rng.randint(1, r)
        axes = rng.sample(range(r), k)
        starts = [rng.randint(-shape[a] - 2, shape[a] + 2) for a in axes]
        ends = [rng.randint(-shape[a] - 2, shape[a] + 2) for a in axes]
        steps = [rng.choice([-3, -2, -1, 1, 2, 3]) for _ in axes]
        b.out(b.node("Slice", [src, b.const(np.array(starts, np.int64)),
                               b.const(np.array(ends, np.int64)),
                               b.const(np.array(axes, np.int64)),
                               b.const(np.array(steps, np.int64))]))
    elif op == "Gather":
        idx = np.array([rng.randint(-shape[axis], shape[axis] - 1)
                        for _ in range(rng.randint(1, 5))], np.int64)
        if rng.random() < 0.3:
            idx = idx[:1].reshape(())
        b.out(b.node("Gather", [src, b.const(idx)], axis=axis - r * rng.randint(0, 1)))
    elif op == "Transpose":
        b.out(b.node("Transpose", [src], perm=rng.sample(range(r), r)))
    elif op == "Concat":
        b.out(b.node("Concat", [src, src, src][:rng.randint(1, 3)], axis=axis))
    elif op == "Reduce":
        red = rng.choice(["ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean",
                          "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"])
        if red in ("ReduceL2", "ReduceLogSumExp") and not src.startswith("f"):
            # integer results of floating-point math: ORT rounds its own way
            # (the evaluator truncates the float result, as the ONNX reference does)
            red = "ReduceSumSquare"
        axes = rng.sample(range(r), rng.randint(1, r))
        keep = rng.randint(0, 1)
        if red == "ReduceSum":
            b.out(b.node(red, [src, b.const(np.array(axes, np.int64))], keepdims=keep))
        else:
            b.out(b.node(red, [src], axes=axes, keepdims=keep))
    elif op == "Expand":
        tgt = [rng.choice([1, d]) if rng.random() < 0.5 else d for d in shape]
        tgt = [rng.randint(1, 3)] * rng.randint(0, 1) + tgt
        b.out(b.node("Expand", [src, b.const(np.array(tgt, np.int64))]))
    elif op == "Reshape":
        s = list(shape)
        if r >= 2 and rng.random() < 0.5:
            s = [0] + [-1]
        else:
            s = [int(np.prod(shape))]
        b.out(b.node("Reshape", [src, b.const(np.array(s, np.int64))]))
    elif op == "Unsqueeze":
        ax = sorted(rng.sample(range(r + 2), 2))
        b.out(b.node("Unsqueeze", [src, b.const(np.array(ax, np.int64))]))
    elif op == "Squeeze":
        u = b.node("Unsqueeze", [src, b.const(np.array([axis], np.int64))])
        b.out(b.node("Squeeze", [u[0], b.const(np.array([axis - r - 1], np.int64))]))
    elif op == "Flatten":
        b.out(b.node("Flatten", [src], axis=rng.randint(-r, r)))
    elif op == "ArgMax":
        b.out(b.node(rng.choice(["ArgMax", "ArgMin"]), [src], axis=axis,
                     keepdims=rng.randint(0, 1), select_last_index=rng.randint(0, 1)))
    elif op == "CumSum":
        b.out(b.node("CumSum", [src, b.const(np.array(axis, np.int64))],
                     exclusive=rng.randint(0, 1), reverse=rng.randint(0, 1)))
    elif op == "Split":
        d = shape[axis]
        cut = sorted(rng.randint(0, d) for _ in range(2))
        parts = [cut[0], cut[1] - cut[0], d - cut[1]]
        b.out(b.node("Split", [src, b.const(np.array(parts, np.int64))], n_out=3, axis=axis))
    elif op == "GatherElements":
        ishape = [rng.randint(1, d) for d in shape]
        ishape[axis] = rng.randint(1, 4)
        idx = np.array([rng.randint(-shape[axis], shape[axis] - 1)
                        for _ in range(int(np.prod(ishape)))], np.int64).reshape(ishape)
        b.out(b.node("GatherElements", [src, b.const(idx)], axis=axis))
    elif op == "Trilu":
        if r >= 2:
            b.out(b.node("Trilu", [src, b.const(np.array(rng.randint(-3, 3), np.int64))],
                         upper=rng.randint(0, 1)))
    elif op == "Shape":
        b.out(b.node("Shape", [src], start=rng.randint(-r - 1, r), end=rng.randint(-r, r + 1)))


def one_round(seed, d):
    rng = random.Random(seed)
    b = Builder(rng)
    shape = [rng.randint(1, 4) for _ in range(rng.randint(2, 4))]
    xf = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    xi = np.random.default_rng(seed + 1).integers(-9, 9, shape).astype(np.int64)
    # sources: the inputs, and views of them (Tile with repeats 1 on a size-1
    # axis and Expand to the same shape keep the shape but change the layout)
    half = [max(1, s // 2) if s % 2 == 0 else s for s in shape]
    srcs = []
    for nm in ("xf", "xi"):
        kind = nm[1]  # source names start with f (float) or i (int64)
        srcs.append(kind + "_in")
        b.nodes.append(helper.make_node("Identity", [nm], [kind + "_in"]))
        sl = b.node("Slice", [nm, b.const(np.zeros(len(shape), np.int64)),
                              b.const(np.array(half, np.int64))])[0]
        reps = [s // h_ for s, h_ in zip(shape, half)]
        tiled = b.node("Tile", [sl, b.const(np.array(reps, np.int64))])[0]
        b.nodes.append(helper.make_node("Identity", [tiled], [kind + "_tile"]))
        srcs.append(kind + "_tile")
        one = b.node("ReduceMax", [nm], axes=[0], keepdims=1)[0]
        exp = b.node("Expand", [one, b.const(np.array(shape, np.int64))])[0]
        b.nodes.append(helper.make_node("Identity", [exp], [kind + "_expand"]))
        srcs.append(kind + "_expand")
    for _ in range(NODES):
        random_case(b, rng.choice(srcs), shape)
    opset = 15  # Trilu (14), Shape start/end (15)
    g = helper.make_graph(
        b.nodes, "g",
        [helper.make_tensor_value_info("xf", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("xi", TensorProto.INT64, shape)],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in b.outs],
        b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    # ORT wants typed graph outputs: take the element types onnx infers
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for o in m.graph.output:
        o.type.tensor_type.elem_type = types[o.name]
    path = os.path.join(d, f"round{seed}.onnx")
    onnx.save(m, path)
    want = h.run_ort(path, [xf, xi])
    got = h.run_tileopt(path, [xf, xi])
    h.assert_close(got, want)
    return len(b.outs)


def main():
    if not h.ort_available()[0]:
        print("ONNX Runtime not available: skipped")
        return 77
    total = 0
    with h.tempdir() as d:
        for seed in range(ROUNDS):
            total += one_round(1000 + seed, d)
    print(f"{ROUNDS} rounds, {total} outputs match ONNX Runtime")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Shape inference and fold on hostile models: never a crash, never a wrong shape.

Seeded random models: a few nodes of the ops inference knows, fed constants that
are often invalid (negative or huge repeats, wrong lengths, out-of-range axes,
overflowing pads and strides). `tileopt optimize --passes fold --fold-scope all
--infer-shapes` must exit 0 or 1 (a clear error), never crash or trip a sanitizer
(run this with the ASan/UBSan build). When onnx.shape_inference (strict) accepts
the model, every dim both sides know must agree.
"""
import os
import random
import sys

import numpy as np
import onnx
import onnx.shape_inference
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
COUNT = int(os.environ.get("INFER_FUZZ_COUNT", "150"))
BIG = 2 ** 62


def rand_ints(rng, n):
    pool = [0, 1, 2, 3, -1, -2, -5, 7, BIG, -BIG, 2 ** 31]
    return [rng.choice(pool) if rng.random() < 0.3 else rng.randint(0, 3) for _ in range(n)]


def build(rng, k):
    rank = rng.randint(0, 4)
    shape = [rng.choice([1, 2, 3, "N"]) for _ in range(rank)]
    inits, nodes = [], []
    cur, cur_rank = "x", rank

    def const(vals, name):
        inits.append(numpy_helper.from_array(np.array(vals, dtype=np.int64), name))
        return name

    for j in range(rng.randint(1, 4)):
        out = f"v{j}"
        op = rng.choice(["Tile", "Reshape", "Expand", "Unsqueeze", "Squeeze", "Slice",
                         "Gather", "Concat", "Transpose", "Pad", "Shape", "Flatten",
                         "ReduceSum", "Conv", "MaxPool", "Split", "Range", "ConstantOfShape"])
        n = max(cur_rank + rng.choice([-1, 0, 0, 1]), 0)
        if op == "Tile":
            nodes.append(helper.make_node(op, [cur, const(rand_ints(rng, n), f"r{j}")], [out]))
        elif op in ("Reshape", "Expand"):
            nodes.append(helper.make_node(op, [cur, const(rand_ints(rng, n), f"s{j}")], [out]))
        elif op in ("Unsqueeze", "Squeeze"):
            nodes.append(helper.make_node(op, [cur, const(rand_ints(rng, rng.randint(1, 2)),
                                                          f"a{j}")], [out]))
        elif op == "Slice":
            m = rng.randint(1, 2)
            nodes.append(helper.make_node(op, [cur, const(rand_ints(rng, m), f"st{j}"),
                                               const(rand_ints(rng, m), f"en{j}"),
                                               const(rand_ints(rng, m), f"ax{j}"),
                                               const(rand_ints(rng, m), f"sp{j}")], [out]))
        elif op == "Gather":
            nodes.append(helper.make_node(op, [cur, const(rand_ints(rng, 1), f"i{j}")], [out],
                                          axis=rng.choice([0, 1, -1, 5])))
        elif op == "Concat":
            nodes.append(helper.make_node(op, [cur, cur], [out], axis=rng.choice([0, 1, -1, 9])))
        elif op == "Transpose":
            nodes.append(helper.make_node(op, [cur], [out], perm=rand_ints(rng, n)))
        elif op == "Pad":
            nodes.append(helper.make_node(op, [cur, const(rand_ints(rng, 2 * n), f"p{j}")],
                                          [out]))
        elif op == "Shape":
            nodes.append(helper.make_node(op, [cur], [out], start=rng.choice([0, -1, 9]),
                                          end=rng.choice([1, -1, 20])))
        elif op == "Flatten":
            nodes.append(helper.make_node(op, [cur], [out], axis=rng.choice([0, 1, -1, 7])))
        elif op == "ReduceSum":
            nodes.append(helper.make_node(op, [cur, const(rand_ints(rng, 1), f"ra{j}")], [out],
                                          keepdims=rng.randint(0, 1)))
        elif op == "Conv":
            w = numpy_helper.from_array(np.ones([1, 1] + [1] * max(n - 2, 0), np.float32),
                                        f"w{j}")
            inits.append(w)
            nodes.append(helper.make_node(op, [cur, f"w{j}"], [out],
                                          strides=rand_ints(rng, max(n - 2, 0)),
                                          pads=rand_ints(rng, 2 * max(n - 2, 0))))
        elif op == "MaxPool":
            nodes.append(helper.make_node(op, [cur], [out],
                                          kernel_shape=rand_ints(rng, max(n - 2, 0)),
                                          ceil_mode=rng.randint(0, 1)))
        elif op == "Split":
            nodes.append(helper.make_node(op, [cur], [out, out + "b"], axis=0))
        elif op == "Range":
            nodes.append(helper.make_node(op, [const(rng.choice([0, -BIG, BIG]), f"ra{j}"),
                                               const(rng.choice([5, BIG, -BIG]), f"rb{j}"),
                                               const(rng.choice([1, -1, 3, BIG]), f"rc{j}")],
                                          [out]))
        else:
            nodes.append(helper.make_node(op, [const(rand_ints(rng, rng.randint(0, 3)),
                                                     f"c{j}")], [out]))
        cur, cur_rank = out, n
    g = helper.make_graph(nodes, f"fuzz{k}", [helper.make_tensor_value_info("x", F, shape)],
                          [helper.make_tensor_value_info(cur, F, None)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def onnx_would_crash(m):
    """onnx.shape_inference itself divides by a zero stride (SIGFPE): skip those."""
    return any(a.name == "strides" and 0 in a.ints for n in m.graph.node for a in n.attribute)


def dims_of(graph):
    out = {}
    for v in list(graph.value_info) + list(graph.output):
        tt = v.type.tensor_type
        if tt.HasField("shape"):
            out[v.name] = [d.dim_value if d.HasField("dim_value") else None
                           for d in tt.shape.dim]
    return out


def infer_and_fold_should_survive_hostile_models():
    rng = random.Random(5)
    crashes, wrong, strict_ok = [], [], 0
    with h.tempdir() as d:
        for k in range(COUNT):
            m = build(rng, k)
            src, dst = os.path.join(d, f"{k}.onnx"), os.path.join(d, f"{k}.out.onnx")
            onnx.save(m, src)
            cp = h.tileopt("optimize", src, "-o", dst, "--passes", "none", "--infer-shapes")
            cp2 = h.tileopt("optimize", src, "-o", dst + ".f", "--passes", "fold",
                            "--fold-scope", "all", "--quiet")
            for c in (cp, cp2):
                if c.returncode not in (0, 1) or "runtime error" in c.stderr or \
                        "Sanitizer" in c.stderr:
                    crashes.append(f"model {k}: exit {c.returncode}: {c.stderr[-300:]}")
            if cp.returncode != 0 or onnx_would_crash(m):
                continue
            try:
                ref = onnx.shape_inference.infer_shapes(m, strict_mode=True)
            except Exception:
                continue
            strict_ok += 1
            ours, theirs = dims_of(onnx.load(dst).graph), dims_of(ref.graph)
            for name, a in ours.items():
                b = theirs.get(name)
                if b is None:
                    continue
                # onnx computes some dims (Range) in double: beyond 2^53 it rounds
                if len(a) != len(b) or any(x is not None and y is not None and x != y and
                                           max(x, y) <= 2 ** 53 for x, y in zip(a, b)):
                    wrong.append(f"model {k}: {name}: ours {a} onnx {b}")
    print(f"{COUNT} models, {strict_ok} accepted by strict onnx inference")
    for c in (crashes + wrong)[:20]:
        print("PROBLEM", c)
    assert not crashes, f"{len(crashes)} crashes"
    assert not wrong, f"{len(wrong)} disagreements"


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

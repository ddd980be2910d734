#!/usr/bin/python3
"""Robustness: single-node models of the shape-subgraph ops with hostile
attributes and inputs (huge, negative, out-of-range, empty, INT64 extremes).
`tileopt run` must exit 0 or 1 with a message, never crash or trip a sanitizer
(run it with an ASan/UBSan build to get the most out of it). Seeded: the same
cases every run."""
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TILEOPT = os.environ["TILEOPT"]
VALUES = [0, 1, 2, 3, -1, -2, 7, 2**31, 2**40, -2**63, 2**63 - 1]
OPS = ["Reshape", "Slice", "Gather", "Concat", "Unsqueeze", "Squeeze", "Expand", "Transpose",
       "Range", "ConstantOfShape", "Shape", "Flatten", "ReduceSum", "ReduceProd", "ReduceMax",
       "ReduceMean", "ReduceL2", "ReduceLogSumExp", "Size", "ArgMax", "GatherElements",
       "Split", "Trilu", "CumSum"]


def ints(rng, n=None):
    return [rng.choice(VALUES) for _ in range(rng.randint(0, 4) if n is None else n)]


def case(rng, d):
    op = rng.choice(OPS)
    dtype = rng.choice([np.float32, np.int64, object])
    x = np.arange(6).reshape(rng.choice([(6,), (2, 3), (1, 2, 3), (3, 1, 2)]))
    x = x.astype(str).astype(object) if dtype is object else x.astype(dtype)
    inits, ins, attrs = [], ["x"], {}

    def init(name, v):
        inits.append(numpy_helper.from_array(np.array(v, np.int64), name))

    if op in ("Reshape", "Expand"):
        init("s", ints(rng))
        ins = ["x", "s"]
    elif op == "ConstantOfShape":
        init("s", ints(rng))
        ins = ["s"]
    elif op == "Slice":
        n = rng.randint(0, 3)
        for k in "abcd":
            init(k, ints(rng, n))
        ins = ["x", "a", "b", "c", "d"]
    elif op == "Gather":
        init("i", ints(rng))
        ins, attrs["axis"] = ["x", "i"], rng.choice(VALUES)
    elif op == "Concat":
        ins, attrs["axis"] = ["x", "x"], rng.choice(VALUES)
    elif op in ("Unsqueeze", "Squeeze", "ReduceSum"):
        init("a", ints(rng))
        ins = ["x", "a"]
    elif op in ("ReduceMax", "ReduceMean", "ReduceProd", "ReduceL2", "ReduceLogSumExp"):
        attrs["axes"] = ints(rng)
    elif op == "Transpose":
        attrs["perm"] = ints(rng, x.ndim)
    elif op == "Range":
        for k in "abc":
            init(k, rng.choice(VALUES))
        ins = ["a", "b", "c"]
    elif op == "Flatten":
        attrs["axis"] = rng.choice(VALUES)
    elif op == "Shape":
        attrs["start"], attrs["end"] = rng.choice(VALUES), rng.choice(VALUES)
    elif op == "ArgMax":
        attrs["axis"], attrs["select_last_index"] = rng.choice(VALUES), rng.randint(0, 1)
    elif op == "GatherElements":
        init("i", np.array(ints(rng, x.size)).reshape(x.shape) if rng.random() < 0.8
             else ints(rng))
        ins, attrs["axis"] = ["x", "i"], rng.choice(VALUES)
    elif op == "Split":
        init("s", ints(rng))
        ins = ["x", "s"] if rng.random() < 0.7 else ["x"]
        attrs["axis"] = rng.choice(VALUES)
    elif op in ("Trilu", "CumSum"):
        init("k", rng.choice(VALUES))
        ins = ["x", "k"]
    elem = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64,
            object: TensorProto.STRING}[dtype]
    outs = ["y"] if op != "Split" else ["y", "y2", "y3"][:rng.randint(1, 3)]
    g = helper.make_graph(
        [helper.make_node(op, ins, outs, **attrs)], "g",
        [helper.make_tensor_value_info("x", elem, list(x.shape))] if "x" in ins else [],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs], inits)
    path = os.path.join(d, "m.onnx")
    opset = 14 if op == "Trilu" else 13
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    args = [TILEOPT, "run", path]
    if "x" in ins:
        with open(os.path.join(d, "x.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        args.append(os.path.join(d, "x.pb"))
    return op, attrs, [numpy_helper.to_array(t).tolist() for t in inits], args


def main():
    rng = random.Random(20261122)
    env = dict(os.environ, UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    bad = 0
    n = int(os.environ.get("FUZZ_CASES", "300"))
    with tempfile.TemporaryDirectory() as d:
        for _ in range(n):
            op, attrs, inits, args = case(rng, d)
            p = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
            sane = p.returncode == 0 or (p.returncode == 1 and
                                         p.stderr.startswith("tileopt: error: "))
            if not sane or "Sanitizer" in p.stderr or "runtime error" in p.stderr:
                bad += 1
                print(f"FAIL {op} attrs={attrs} inits={inits}: exit {p.returncode}\n"
                      f"{p.stderr[:800]}")
    print(f"{n} cases, {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Scale of one node with many inputs: a Concat of N one-element int64
initializers, summed by ReduceSum, feeding a Tile's repeats. Linear code takes
twice the time when N doubles; this prints the time of `tileopt optimize` per
size, with the default passes and with `--fold-scope all`, and the ratio of each
doubling against the size before it, measured in the same run.

    /usr/bin/python3 bench/scale_concat_inputs.py [--sizes 5000,10000,20000,40000]
        [--tileopt PATH]

Measured on the 2-core machine (release build): each doubling takes about 2x
the time (25,000 inputs 0.17 s, 50,000 0.40 s, 100,000 0.83 s, default passes
and --fold-scope all alike). Before fold counted a constant's readers through
the value's uses, it scanned all of the node's inputs with strcmp for each
constant input: each doubling took 4x and 100,000 inputs ran past 3 minutes.
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


def concat_model(n):
    inits = [numpy_helper.from_array(np.array([1], np.int64), f"c{i}") for i in range(n)]
    inits += [numpy_helper.from_array(np.array([0], np.int64), "axes"),
              numpy_helper.from_array(np.array([1], np.int64), "one")]
    nodes = [helper.make_node("Concat", [f"c{i}" for i in range(n)], ["cat"], axis=0),
             helper.make_node("ReduceSum", ["cat", "axes"], ["s"], keepdims=1),
             helper.make_node("Concat", ["s", "one"], ["rep"], axis=0),
             helper.make_node("Tile", ["x", "rep"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="5000,10000,20000,40000")
    ap.add_argument("--tileopt", default=os.path.join(HERE, "..", "build", "release", "tools",
                                                      "tileopt"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'inputs':>8} {'default s':>10} {'x prev':>7} {'fold all s':>11} {'x prev':>7}")
    prev = {}
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            src, out = os.path.join(d, f"c{n}.onnx"), os.path.join(d, "o.onnx")
            onnx.save(concat_model(n), src)
            row = [f"{n:>8}"]
            for key, extra in (("default", []), ("all", ["--fold-scope", "all"])):
                t0 = time.monotonic()
                subprocess.run([args.tileopt, "optimize", src, "-o", out, "-q", *extra],
                               check=True)
                t = time.monotonic() - t0
                ratio = f"{t / prev[key]:.1f}x" if key in prev else "-"
                row += [f"{t:>10.2f}" if key == "default" else f"{t:>11.2f}", f"{ratio:>7}"]
                prev[key] = t
            print(" ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

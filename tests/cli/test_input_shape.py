#!/usr/bin/python3
"""--input-shape NAME:D1,D2,...: fixing a graph input's dims for one run.

The model is the pattern PyTorch exports for `pos.repeat(x.shape[0], 1, 1)` added
to x: Tile's repeats come from Shape(x), whose batch is the named dim N. With the
batch fixed, the shape subgraph folds to constants, the output declares the fixed
dims everywhere N stood, and it computes what the original computes at that
batch, in ONNX Runtime and in the evaluator.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

F = TensorProto.FLOAT


def batch_repeat_model():
    pos = numpy_helper.from_array(
        np.linspace(-1, 1, 16 * 64, dtype=np.float32).reshape(1, 16, 64), "pos")
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"], name="shape"),
        helper.make_node("Gather", ["sx", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "one", "one"], ["reps"], name="concat", axis=0),
        helper.make_node("Tile", ["pos", "reps"], ["pt"], name="tile"),
        helper.make_node("Add", ["x", "pt"], ["y"], name="add"),
    ]
    inits = [pos, numpy_helper.from_array(np.array(0, np.int64), "zero"),
             h.i64("axes0", [0]), h.i64("one", [1])]
    g = helper.make_graph(nodes, "batch_repeat", [h.vi("x", F, ["N", 16, 64])],
                          [h.vi("y", F, ["N", 16, 64])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def declared(vi):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in vi.type.tensor_type.shape.dim]


def input_shape_should_let_a_batch_repeat_fold_away():
    with h.tempdir() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(batch_repeat_model(), src)
        # without it fold cannot compute the repeats (fuse still drops the Tile,
        # seeing the same named dim on both sides of the Add)
        report = h.optimize_checked(src, dst, "fold")
        (fold,) = report["passes"]
        assert [a["reason"] for a in fold["actions"]] == [
            "repeats are known only symbolically: [N,1,1]"], fold["actions"]
        report = h.optimize_checked(src, dst, "fold", "--input-shape", "x:3,16,64")
        (fold,) = report["passes"]
        assert {a["node"] for a in fold["actions"] if a["action"] == "folded"} >= {
            "shape", "concat"}, fold["actions"]
        report = h.optimize_checked(src, dst, "fold,fuse", "--input-shape", "x:3,16,64")
        out = onnx.load(dst)
        ops = [n.op_type for n in out.graph.node]
        assert ops == ["Add"], ops
        assert declared(out.graph.input[0]) == [3, 16, 64], declared(out.graph.input[0])
        assert declared(out.graph.output[0]) == [3, 16, 64], declared(out.graph.output[0])
        assert report["input_shapes"] == [{"name": "x", "shape": [3, 16, 64]}], report
        feeds = {"x": np.random.default_rng(4).standard_normal((3, 16, 64)).astype(np.float32)}
        want = h.run_ort(src, feeds)
        h.assert_close(h.run_ort(dst, feeds), want, what="ORT optimized output")
        h.assert_close(h.run_tileopt(dst, feeds), want, what="evaluator optimized output")


def input_shape_should_refuse_what_does_not_fit_the_model():
    with h.tempdir() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(batch_repeat_model(), src)
        for spec, code, words in (
                ("z:3,16,64", 1, "no graph input of that name"),
                ("pos:1,16,64", 1, "no graph input of that name"),
                ("x:3,16", 1, "2 dims given, the model declares 3"),
                ("x:3,15,64", 1, "dim 1 is 16 in the model, 15 given"),
                ("x:3,a,64", 2, "--input-shape 'x:3,a,64'"),
                ("x3,16,64", 2, "NAME:D1,D2"),
                ("x:3,-1,64", 2, "numbers 0 and up")):
            cp = h.tileopt("optimize", src, "-o", dst, "--input-shape", spec)
            assert cp.returncode == code, f"{spec}: exit {cp.returncode}: {cp.stderr}"
            assert words in cp.stderr, f"{spec}: {cp.stderr}"
            assert not os.path.exists(dst), spec


def input_shape_should_refuse_initializers_and_one_name_given_two_sizes():
    with h.tempdir() as d:
        dst = os.path.join(d, "o.onnx")
        # IR 3 lists initializers among the graph inputs: still no input to fix
        m = batch_repeat_model()
        m.ir_version = 3
        m.graph.input.append(h.vi("pos", F, [1, 16, 64]))
        src = os.path.join(d, "ir3.onnx")
        onnx.save(m, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--input-shape", "pos:1,16,64")
        assert cp.returncode == 1 and "it is an initializer" in cp.stderr, cp.stderr
        # x[N, 16, N]: both N get one size or the fix is refused
        m = batch_repeat_model()
        m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "N"
        src = os.path.join(d, "nn.onnx")
        onnx.save(m, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--input-shape", "x:3,16,64")
        assert cp.returncode == 1 and "dims 0 and 2 are both 'N'" in cp.stderr, cp.stderr
        assert not os.path.exists(dst)
        too_many = "x:" + ",".join(["1"] * 65)
        cp = h.tileopt("optimize", src, "-o", dst, "--input-shape", too_many)
        assert cp.returncode == 2 and "at most 64" in cp.stderr, cp.stderr


def input_shape_should_take_names_with_colons_and_the_last_value_given():
    m = batch_repeat_model()
    m.graph.input[0].name = "x:0"
    for n in m.graph.node:
        n.input[:] = ["x:0" if i == "x" else i for i in n.input]
    with h.tempdir() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(m, src)
        rep = os.path.join(d, "r.json")
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--report", rep, "--input-shape",
                              "x:0:5,16,64", "--input-shape", "x:0:2,16,64"))
        h.check(dst)
        with open(rep) as f:
            assert json.load(f)["input_shapes"] == [{"name": "x:0", "shape": [2, 16, 64]}]
        assert declared(onnx.load(dst).graph.input[0]) == [2, 16, 64]


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

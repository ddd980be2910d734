#!/usr/bin/python3
"""upgrade past opset 17, up to 26 (the newest opset ONNX Runtime 1.30 runs):
every schema step whose form changed (the reductions' axes becoming an input at
18, Split's num_outputs at 18, DFT's axis input at 20, GridSample's mode names
at 20, GroupNormalization's per-channel scale and bias at 21) and ops whose
later versions only widen their types. onnx 1.12's
checker stops at 17, so each output must run in ONNX Runtime and give the
original's outputs there, tileopt's shape inference must give the shapes ONNX
Runtime's outputs have, and --verify must match in tileopt's evaluator.
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
from validate_report import report_errors  # noqa: E402

TARGETS = (18, 20, 26)
F = TensorProto.FLOAT


def model(nodes, inputs, outputs, opset, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def out(name):
    return helper.make_tensor_value_info(name, F, None)


def inferred_shapes(path):
    """{value name: dims} of the graph outputs from tileopt --infer-shapes."""
    m = onnx.load(path)
    shapes = {}
    for v in list(m.graph.output) + list(m.graph.value_info):
        t = v.type.tensor_type
        if t.HasField("shape"):
            shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None
                              for d in t.shape.dim]
    return shapes


def check_upgrades(m, feeds, what):
    """m through upgrade to each target: the report says so, ORT gives the same
    outputs, the inferred output shapes are ORT's, verify matches."""
    with h.tempdir() as d:
        src = os.path.join(d, "src.onnx")
        onnx.save(m, src)
        want = h.run_ort(src, feeds)
        for t in TARGETS:
            dst = os.path.join(d, f"up{t}.onnx")
            rep = dst + ".json"
            cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", "--target-opset",
                           t, "--infer-shapes", "--verify=strict", "--report", rep)
            assert cp.returncode == 0, f"{what} -> {t}: {cp.stderr}"
            with open(rep) as f:
                r = json.load(f)
            assert report_errors(r) == [], report_errors(r)
            assert r["verify"]["verdict"] == "match", (what, t, r["verify"])
            up = onnx.load(dst)
            assert up.opset_import[0].version == t, (what, up.opset_import)
            got = h.run_ort(dst, feeds)
            h.assert_close(got, want, what=f"{what} at opset {t}")
            shapes = inferred_shapes(dst)
            for o, arr in zip(up.graph.output, got):
                assert shapes.get(o.name) == list(arr.shape), \
                    f"{what} at {t}: {o.name} inferred {shapes.get(o.name)}, ORT {arr.shape}"
        return r


REDUCTIONS = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
              "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare"]


def upgrade_should_move_the_reductions_axes_to_an_input_at_18():
    x = np.random.default_rng(1).uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
    for op in REDUCTIONS:
        nodes = [helper.make_node(op, ["x"], ["a"], axes=[1]),
                 helper.make_node(op, ["x"], ["b"], axes=[0, -1], keepdims=0),
                 helper.make_node(op, ["x"], ["c"])]
        m = model(nodes, [helper.make_tensor_value_info("x", F, [2, 3, 4])],
                  [out("a"), out("b"), out("c")], 13)
        r = check_upgrades(m, {"x": x}, op)
        acts = [a for p in r["passes"] for a in p["actions"] if a["action"] != "skipped"]
        assert sum(a.get("axes") is not None for a in acts) == 2, (op, acts)


def upgrade_should_give_split_num_outputs_at_18():
    x = np.arange(24, dtype=np.float32).reshape(2, 6, 2)
    nodes = [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1),
             helper.make_node("Split", ["x", "sp"], ["d", "e"], axis=1)]
    m = model(nodes, [helper.make_tensor_value_info("x", F, [2, 6, 2])],
              [out(n) for n in "abcde"], 13, [h.i64("sp", [2, 4])])
    check_upgrades(m, {"x": x}, "Split")


def upgrade_should_give_dft_its_axis_as_an_input_at_20():
    x = np.random.default_rng(2).standard_normal((2, 8, 5, 1)).astype(np.float32)
    nodes = [helper.make_node("DFT", ["x"], ["a"]),
             helper.make_node("DFT", ["x"], ["b"], axis=2),
             helper.make_node("DFT", ["x", "n"], ["c"], axis=1, onesided=1)]
    m = model(nodes, [helper.make_tensor_value_info("x", F, [2, 8, 5, 1])],
              [out("a"), out("b"), out("c")], 17, [h.i64("n", 6)])
    check_upgrades(m, {"x": x}, "DFT")


def upgrade_should_rename_grid_sample_modes_at_20():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.1, 1.1, (1, 3, 4, 2)).astype(np.float32)
    nodes = [helper.make_node("GridSample", ["x", "g"], ["a"]),
             helper.make_node("GridSample", ["x", "g"], ["b"], mode="bicubic",
                              align_corners=1),
             helper.make_node("GridSample", ["x", "g"], ["c"], mode="nearest",
                              padding_mode="border"),
             helper.make_node("GridSample", ["x", "g"], ["d"], mode="bilinear",
                              padding_mode="reflection")]
    m = model(nodes, [helper.make_tensor_value_info("x", F, [1, 2, 5, 6]),
                      helper.make_tensor_value_info("g", F, [1, 3, 4, 2])],
              [out(n) for n in "abcd"], 16)
    check_upgrades(m, {"x": x, "g": grid}, "GridSample")


def upgrade_should_carry_ops_whose_later_versions_only_widen_types():
    """Reshape, Shape, Cast, Pad, Resize, Transpose, Squeeze, ConstantOfShape,
    TopK, Equal, ScatterElements: schemas from 18 to 25 add types or optional
    inputs and attributes whose defaults keep the old meaning."""
    x = np.random.default_rng(4).standard_normal((1, 2, 4, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["z"],
                         value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Add", ["x", "z"], ["a"]),
        helper.make_node("Reshape", ["a", "shp"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
        helper.make_node("Pad", ["x", "pads"], ["p"], mode="reflect"),
        helper.make_node("Resize", ["x", "", "scales"], ["rs"], mode="linear"),
        helper.make_node("Cast", ["t"], ["c"], to=TensorProto.DOUBLE),
        helper.make_node("Cast", ["c"], ["cf"], to=F),
        helper.make_node("TopK", ["t", "k"], ["tv", "ti"], axis=0),
        helper.make_node("Cast", ["ti"], ["tif"], to=F),
        helper.make_node("Squeeze", ["rs", "ax0"], ["sq"]),
        helper.make_node("ScatterElements", ["x", "idx", "upd"], ["sc"], axis=3),
    ]
    inits = [h.i64("shp", [8, 4]), h.i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             h.i64("k", [3]), h.i64("ax0", [0]),
             numpy_helper.from_array(np.zeros((1, 2, 4, 1), np.int64), "idx"),
             numpy_helper.from_array(np.ones((1, 2, 4, 1), np.float32), "upd")]
    m = model(nodes, [helper.make_tensor_value_info("x", F, [1, 2, 4, 4])],
              [out(n) for n in ("cf", "p", "sq", "tv", "tif", "sc")], 13, inits)
    check_upgrades(m, {"x": x}, "type-only steps")


def upgrade_should_repeat_group_normalization_scales_per_channel_at_21():
    """GroupNormalization-18 scales and shifts per group, 21 per channel: each
    value is repeated C / num_groups times. Constants with a known channel count
    become constants; a scale given at run time, or an input whose channel count
    only the run knows, are repeated by Reshape and Expand in the graph. (The
    evaluator has no GroupNormalization: ONNX Runtime is the judge.)"""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 5)).astype(np.float32)
    s, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3,
                            epsilon=1e-3)
    consts = [numpy_helper.from_array(s, "s"), numpy_helper.from_array(b, "b")]
    cases = [("constants, C known", [6], consts, {}, 0),
             ("scale at run time", [6], consts[1:], {"s": s}, 1),
             ("C unknown", ["C"], consts, {}, 2)]
    for what, cdim, inits, extra, n_dynamic in cases:
        inputs = [helper.make_tensor_value_info("x", F, [2] + cdim + [5])]
        inputs += [helper.make_tensor_value_info(k, F, [3]) for k in extra]
        m = model([node], inputs, [out("y")], 18, inits)
        feeds = dict({"x": x}, **extra)
        with h.tempdir() as d:
            src = os.path.join(d, "g.onnx")
            onnx.save(m, src)
            want = h.run_ort(src, feeds)
            for t in (21, 26):
                dst = os.path.join(d, f"o{t}.onnx")
                cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade",
                               "--target-opset", t, "--report", dst + ".json")
                assert cp.returncode == 0, (what, cp.stderr)
                with open(dst + ".json") as f:
                    assert report_errors(json.load(f)) == []
                h.assert_close(h.run_ort(dst, feeds), want, what=f"{what} at {t}")
                up = onnx.load(dst)
                expands = [n for n in up.graph.node if n.op_type == "Expand"]
                assert len(expands) == n_dynamic, (what, [n.op_type for n in up.graph.node])


def upgrade_should_refuse_group_normalization_whose_channels_do_not_split():
    """6 channels in 4 groups have no per-channel repeat: the error names the
    node and nothing is written."""
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4,
                            name="gn")
    m = model([node], [helper.make_tensor_value_info("x", F, [1, 6, 2])], [out("y")], 18,
              [numpy_helper.from_array(np.ones(4, np.float32), "s"),
               numpy_helper.from_array(np.zeros(4, np.float32), "b")])
    with h.tempdir() as d:
        src, dst = os.path.join(d, "g.onnx"), os.path.join(d, "o.onnx")
        onnx.save(m, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--target-opset", 21)
        assert cp.returncode == 1 and "gn: 6 channels in 4 groups" in cp.stderr, cp.stderr
        assert not os.path.exists(dst)


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

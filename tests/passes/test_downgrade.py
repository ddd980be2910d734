#!/usr/bin/python3
"""upgrade going down (--target-opset below the model's): each down adapter
(inputs that were attributes before, Split's num_outputs, Clip's bounds,
Softmax's axis, Resize's roi and scales, Tile-6 back to Tile-1), the steps that
only added types or defaulted attributes, and the refusals, which name every
node that cannot go down and why. Outputs at opset 7 or more run in ONNX Runtime
against the original and pass onnx's checker; Tile-1 (below 7, which ONNX
Runtime does not run) is checked in tileopt's evaluator and by going back up.
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

F = TensorProto.FLOAT


def model(nodes, inputs, outputs, opset, inits=(), ir=8):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def down(m, target, feeds, what, checker=True):
    """m taken down to target: exits 0, the report is valid and says so, the
    output is at target with the IR that opset shipped with, passes the
    checker, gives the original's outputs in ONNX Runtime, and verifies."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        rep = dst + ".json"
        cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", "--target-opset",
                       target, "--verify=strict", "--report", rep)
        assert cp.returncode == 0, f"{what} -> {target}: {cp.stderr}"
        with open(rep) as f:
            r = json.load(f)
        assert report_errors(r) == [], report_errors(r)
        assert r["verify"]["verdict"] == "match", (what, r["verify"])
        out = onnx.load(dst)
        assert out.opset_import[0].version == target, out.opset_import
        if checker:
            h.check(dst)
        if target >= 7:
            h.assert_close(h.run_ort(dst, feeds), h.run_ort(src, feeds), what=what)
        return out, r


def refused(m, target, *expect):
    """m cannot go down to target: exit 1, nothing written, the error names each
    expected text (node, op, versions, why)."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--target-opset", target,
                       "--report", dst + ".json")
        assert cp.returncode == 1, cp.stderr
        assert not os.path.exists(dst)
        for e in expect:
            assert e in cp.stderr, (e, cp.stderr)
        with open(dst + ".json") as f:
            r = json.load(f)
        skipped = [a for p in r["passes"] for a in p["actions"] if a["action"] == "skipped"]
        assert skipped and all(a.get("reason") and "from" in a for a in skipped), skipped
        return cp.stderr


def downgrade_should_take_axes_and_split_inputs_back_to_attributes():
    x = np.random.default_rng(1).standard_normal((2, 1, 6)).astype(np.float32)
    nodes = [helper.make_node("Squeeze", ["x", "a1"], ["s"]),
             helper.make_node("Unsqueeze", ["s", "a0"], ["u"]),
             helper.make_node("ReduceSum", ["u", "a2"], ["r"], keepdims=1),
             helper.make_node("Split", ["x", "sp"], ["p", "q"], axis=2),
             helper.make_node("Softmax", ["p"], ["sm"]),
             helper.make_node("LogSoftmax", ["q"], ["ls"], axis=2)]
    m = model(nodes, [vi("x", [2, 1, 6])],
              [vi("r", [1, 1, 6]), vi("sm", [2, 1, 2]), vi("ls", [2, 1, 4])], 13,
              [h.i64("a1", [1]), h.i64("a0", [0]), h.i64("a2", [1]), h.i64("sp", [2, 4])])
    for target in (12, 11, 9, 7):
        out, r = down(m, target, {"x": x}, "axes inputs")
        for n in out.graph.node:
            assert len(n.input) == 1, (target, n.op_type, list(n.input))
        acts = [a for p in r["passes"] for a in p["actions"] if a["action"] == "downgraded"]
        assert len(acts) >= 6, acts
        if target < 9:
            # IR 3 (opset 7): every initializer is a graph input again
            inputs = {i.name for i in out.graph.input}
            assert out.ir_version == 3 and all(t.name in inputs for t in out.graph.initializer)


def downgrade_should_take_slice_inputs_back_to_attributes():
    """Slice-10's inputs are Slice-1's attributes when constant, negative axes made
    non-negative; steps other than 1 and inputs computed at run time stay."""
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["a"]),
             helper.make_node("Slice", ["x", "st", "en"], ["b"])]
    m = model(nodes, [vi("x", [3, 4, 5])], [vi("a", [3, 2, 3]), vi("b", [2, 3, 5])], 13,
              [h.i64("st", [1, 1]), h.i64("en", [3, 4]), h.i64("ax", [1, -1])])
    out, _ = down(m, 9, {"x": x}, "Slice")
    attrs = [{a.name: list(a.ints) for a in n.attribute} for n in out.graph.node]
    assert attrs[0] == {"starts": [1, 1], "ends": [3, 4], "axes": [1, 2]}, attrs
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["a"], name="stepped")]
    m = model(nodes, [vi("x", [3, 4, 5])], [vi("a", None)], 13,
              [h.i64("st", [0]), h.i64("en", [5]), h.i64("ax", [2]), h.i64("sp", [2])])
    refused(m, 9, "stepped (Slice 13->1: Slice-1 takes no steps other than 1)")


def downgrade_should_make_negative_axes_count_from_the_front_below_11():
    """Before 11, Concat, Split, Squeeze, Unsqueeze (whose axes index the output),
    the reductions, ArgMax, TopK, Flatten, Compress and the softmaxes took no
    negative axes: each becomes the axis it means, from the known rank; an input
    of unknown rank is refused."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 1, 6)).astype(np.float32)
    nodes = [helper.make_node("Concat", ["x", "x"], ["cat"], axis=-1, name="cat"),
             helper.make_node("Split", ["cat"], ["p", "q"], axis=-1, name="split"),
             helper.make_node("Squeeze", ["x", "sq_axes"], ["sq"], name="squeeze"),
             helper.make_node("Unsqueeze", ["sq", "unsq_axes"], ["unsq"], name="unsqueeze"),
             helper.make_node("ReduceMax", ["x"], ["rmax"], axes=[-1, -3], name="rmax"),
             helper.make_node("ArgMax", ["x"], ["am"], axis=-1, name="argmax"),
             helper.make_node("TopK", ["x", "k"], ["tv", "ti"], axis=-1, name="topk"),
             helper.make_node("Flatten", ["x"], ["fl"], axis=-1, name="flatten"),
             helper.make_node("Compress", ["x", "mask"], ["cp"], axis=-1, name="compress"),
             helper.make_node("Hardmax", ["fl"], ["hm"], axis=-1, name="hardmax")]
    outs = [vi("p", [2, 1, 6]), vi("q", [2, 1, 6]), vi("unsq", [2, 6, 1]),
            vi("rmax", [1, 1, 1]), vi("am", [2, 1, 1], TensorProto.INT64),
            vi("tv", [2, 1, 2]), vi("ti", [2, 1, 2], TensorProto.INT64), vi("fl", [2, 6]),
            vi("cp", [2, 1, 3]), vi("hm", [2, 6])]
    mask = numpy_helper.from_array(np.array([1, 0, 1, 1, 0, 0], np.bool_), "mask")
    m = model(nodes, [vi("x", [2, 1, 6])], outs, 13,
              [h.i64("sq_axes", [-2]), h.i64("unsq_axes", [-1]), h.i64("k", [2]), mask])
    out, r = down(m, 10, {"x": x}, "negative axes")
    want = {"cat": ("axis", 2), "split": ("axis", 2), "squeeze": ("axes", [1]),
            "unsqueeze": ("axes", [2]), "rmax": ("axes", [2, 0]), "argmax": ("axis", 2),
            "topk": ("axis", 2), "flatten": ("axis", 2), "compress": ("axis", 2),
            "hardmax": ("axis", 1)}
    for n in out.graph.node:
        attrs = {a.name: (list(a.ints) if a.ints else a.i) for a in n.attribute}
        key, value = want[n.name]
        assert attrs[key] == value, (n.name, attrs)
    assert any(a.get("axis") == 2 for p in r["passes"] for a in p["actions"]
               if a["node"] == "cat"), r["passes"]
    # the rank is what makes it exact: without it the step is refused
    nodes = [helper.make_node("Concat", ["y", "y"], ["o"], axis=-1, name="blind")]
    m = model(nodes, [vi("y", None)], [vi("o", None)], 13)
    refused(m, 9, "blind (Concat 13->4: a negative axis of an input of unknown rank")


def downgrade_should_take_opset_18_forms_to_17_and_13():
    x = np.random.default_rng(2).uniform(0.5, 2, (2, 7, 3)).astype(np.float32)
    nodes = [helper.make_node("ReduceMean", ["x", "ax"], ["m"], keepdims=0),
             helper.make_node("ReduceL2", ["x"], ["l"]),
             helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3),
             helper.make_node("Split", ["x"], ["d", "e"], axis=2, num_outputs=2)]
    # 7 into 3 parts is uneven (3, 3, 1): a constant split input then
    m = model(nodes, [vi("x", [2, 7, 3])], [vi(n, None) for n in "mlabcde"], 18,
              [h.i64("ax", [1])])
    for target in (17, 13):
        down(m, target, {"x": x}, "opset 18 forms", checker=False)


def downgrade_should_carry_steps_that_only_added_types_or_defaults():
    """Reshape-14's allowzero=0 and MaxPool-10's ceil_mode=0 hold their
    defaults, which is what the older versions do; Relu-14 only added types."""
    x = np.random.default_rng(3).standard_normal((1, 2, 4, 4)).astype(np.float32)
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                              ceil_mode=0),
             helper.make_node("Relu", ["p"], ["r"]),
             helper.make_node("Reshape", ["r", "shp"], ["y"], allowzero=0)]
    m = model(nodes, [vi("x", [1, 2, 4, 4])], [vi("y", [2, 4])], 14, [h.i64("shp", [2, 4])])
    for target in (13, 9, 7):
        out, _ = down(m, target, {"x": x}, "defaults")
        attrs = {n.op_type: [a.name for a in n.attribute] for n in out.graph.node}
        assert "allowzero" not in attrs["Reshape"], attrs
        if target < 10:
            assert "ceil_mode" not in attrs["MaxPool"], attrs


def downgrade_should_take_clip_bounds_and_resize_inputs_back():
    x = np.random.default_rng(4).standard_normal((1, 1, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
             helper.make_node("Clip", ["x", "", "hi"], ["d"]),
             helper.make_node("Resize", ["c", "", "", "sizes"], ["r"], mode="nearest")]
    m = model(nodes, [vi("x", [1, 1, 3, 3])], [vi("d", [1, 1, 3, 3]), vi("r", [1, 1, 6, 6])],
              13, [numpy_helper.from_array(np.array(-0.5, np.float32), "lo"),
                   numpy_helper.from_array(np.array(0.25, np.float32), "hi"),
                   h.i64("sizes", [1, 1, 6, 6])])
    out, _ = down(m, 11, {"x": x}, "Resize roi and scales")
    resize = [n for n in out.graph.node if n.op_type == "Resize"][0]
    assert all(resize.input[:3]), list(resize.input)
    clip = helper.make_node("Clip", ["x", "lo", "hi"], ["c"])
    m = model([clip], [vi("x", [1, 1, 3, 3])], [vi("c", [1, 1, 3, 3])], 13, m.graph.initializer[:2])
    out, _ = down(m, 10, {"x": x}, "Clip bounds")
    attrs = {a.name: a.f for a in out.graph.node[0].attribute}
    assert attrs == {"min": -0.5, "max": 0.25}, attrs


def downgrade_should_take_tile_to_tile_1_and_back():
    """Tile-13 -> 6 (every type Tile-6 takes) -> Tile-1 when one axis repeats;
    the evaluator runs Tile-1, and going back up gives ONNX Runtime's result."""
    for dtype, elem in ((np.float32, F), (np.float64, TensorProto.DOUBLE)):
        x = np.arange(6).reshape(2, 3).astype(dtype)
        nodes = [helper.make_node("Tile", ["x", "rep"], ["y"])]
        m = model(nodes, [vi("x", [2, 3], elem)], [vi("y", [2, 9], elem)], 13,
                  [h.i64("rep", [1, 3])])
        down(m, 6, {"x": x}, "Tile 13->6", checker=False)
        out, r = down(m, 5, {"x": x}, "Tile 13->1", checker=False)
        tile = out.graph.node[-1]
        assert tile.op_type == "Tile" and len(tile.input) == 3, tile
        with h.tempdir() as d:
            src, back = os.path.join(d, "t1.onnx"), os.path.join(d, "back.onnx")
            onnx.save(out, src)
            h.expect_ok(h.tileopt("optimize", src, "-o", back, "--target-opset", 13))
            h.assert_close(h.run_ort(back, {"x": x}), [np.tile(x, (1, 3))])
    # bfloat16 is no type of Tile-6; two tiled axes are no Tile-1
    m = model([helper.make_node("Tile", ["x", "rep"], ["y"], name="bf")],
              [vi("x", [2, 3], TensorProto.BFLOAT16)], [vi("y", [2, 9], TensorProto.BFLOAT16)],
              13, [h.i64("rep", [1, 3])])
    refused(m, 6, "bf (Tile 13->6: element type BFLOAT16 is not in version 6)")
    m = model([helper.make_node("Tile", ["x", "rep"], ["y"], name="two")],
              [vi("x", [2, 3])], [vi("y", [4, 9])], 13, [h.i64("rep", [2, 3])])
    refused(m, 5, "two (Tile 13->1: Tile-1 repeats one axis")


def tile_should_go_down_its_whole_history_in_every_type():
    """Tile 13 -> 6 -> 1 for every element type: each version takes its own
    (Tile-6 all but bfloat16, Tile-1 the float types), verified in tileopt's
    evaluator, and the others are refused naming the type."""
    tile6 = [t for t in range(1, 16)]
    tile1 = [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE]
    for elem in range(1, 17):
        m = model([helper.make_node("Tile", ["x", "rep"], ["y"], name="t")],
                  [vi("x", [2, 3], elem)], [vi("y", [2, 6], elem)], 13, [h.i64("rep", [1, 2])])
        name = TensorProto.DataType.Name(elem)
        for target, allowed in ((6, tile6), (5, tile1)):
            if elem in allowed:
                down(m, target, {}, f"Tile {name} -> {target}", checker=False)
            else:  # the first step down that lacks the type names it
                version = 6 if elem not in tile6 else 1
                refused(m, target, f"element type {name} is not in version {version}")


def downgrade_should_rewrite_ops_younger_than_the_target_as_older_ones():
    """HardSwish, GreaterOrEqual, LessOrEqual and LayerNormalization (its Mean and
    InvStdDev outputs, a float16 input normalized in float) become the older ops
    their definitions use, at 11 and at 9; NaN compares false as before."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32) * 4
    x[0, 0, :2] = np.nan
    y = np.round(rng.standard_normal((2, 3, 4)).astype(np.float32) * 4)
    i = rng.integers(-3, 3, (2, 3, 4)).astype(np.int64)
    nodes = [helper.make_node("HardSwish", ["x"], ["hs"]),
             helper.make_node("GreaterOrEqual", ["x", "y"], ["ge"]),
             helper.make_node("LessOrEqual", ["i", "j"], ["le"]),
             helper.make_node("LayerNormalization", ["y", "sc", "b"], ["ln", "mean", "inv"],
                              axis=1, epsilon=1e-3),
             helper.make_node("LayerNormalization", ["h", "sc16"], ["ln16"])]
    h16 = rng.standard_normal((2, 3, 4)).astype(np.float16)
    sc = rng.standard_normal((3, 4)).astype(np.float32)
    m = model(nodes, [vi("x", [2, 3, 4]), vi("y", [2, 3, 4]), vi("i", [2, 3, 4], TensorProto.INT64),
                      vi("h", [2, 3, 4], TensorProto.FLOAT16)],
              [vi("hs", [2, 3, 4]), vi("ge", [2, 3, 4], TensorProto.BOOL),
               vi("le", [2, 3, 4], TensorProto.BOOL), vi("ln", [2, 3, 4]),
               vi("mean", [2, 1, 1]), vi("inv", [2, 1, 1]), vi("ln16", [2, 3, 4], TensorProto.FLOAT16)],
              17, [numpy_helper.from_array(sc, "sc"), numpy_helper.from_array(sc[0] * 0 + 0.5, "b"),
                   numpy_helper.from_array(i[0], "j"),
                   numpy_helper.from_array(sc[0].astype(np.float16), "sc16")])
    feeds = {"x": x, "y": y, "i": i, "h": h16}
    for target in (11, 9):
        if target == 9:  # Equal takes floats from 11 only: the float comparison stays
            refused(m, 9, "GreaterOrEqual 16->9: op does not exist at the target opset: an "
                    "op the rewrite needs does not take this element type")
            m.graph.node.remove(m.graph.node[1])
            m.graph.output.remove(m.graph.output[1])
            feeds.pop("x")
            m.graph.input.remove(m.graph.input[0])
            m.graph.node.remove(m.graph.node[0])
            m.graph.output.remove(m.graph.output[0])
        out, r = down(m, target, feeds, f"younger ops -> {target}")
        ops = {n.op_type for n in out.graph.node}
        assert not ops & {"HardSwish", "GreaterOrEqual", "LessOrEqual", "LayerNormalization"}, ops
        acts = [a for p in r["passes"] for a in p["actions"] if a.get("into")]
        assert len(acts) == len(nodes) - (0 if target == 11 else 2), acts
    m = model([helper.make_node("LayerNormalization", ["x", "sc"], ["y"], name="ln")],
              [vi("x", None)], [vi("y", None)], 17, [numpy_helper.from_array(sc, "sc")])
    refused(m, 11, "ln (LayerNormalization 17->11: op does not exist at the target opset: the "
            "rank of the input is unknown")
    m = model([helper.make_node("HardSwish", ["x"], ["y"], name="hs")],
              [vi("x", [2])], [vi("y", [2])], 17)
    refused(m, 6, "hs (HardSwish 14->6: op does not exist at the target opset, and its rewrite "
            "as older ops needs numpy broadcasting (opset 7))")


def downgrade_should_take_resize_to_upsample_where_coordinates_allow():
    """Resize asymmetric (nearest with floor, or linear) is Resize-10 and then
    Upsample below 10 (scales an attribute below 9, from sizes when the shape is
    known); half_pixel, the default, has no older form; neither has Resize-19's
    half_pixel_symmetric below 19."""
    x = np.random.default_rng(5).standard_normal((1, 2, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("Resize", ["x", "", "sc"], ["a"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             helper.make_node("Resize", ["x", "", "", "sz"], ["b"], mode="linear",
                              coordinate_transformation_mode="asymmetric")]
    m = model(nodes, [vi("x", [1, 2, 3, 4])], [vi("a", [1, 2, 6, 8]), vi("b", [1, 2, 6, 12])], 13,
              [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc"),
               h.i64("sz", [1, 2, 6, 12])])
    for target in (10, 9, 8):
        out, r = down(m, target, {"x": x}, f"Resize -> {target}")
        ops = [n.op_type for n in out.graph.node if n.op_type in ("Resize", "Upsample")]
        assert ops == ["Resize" if target == 10 else "Upsample"] * 2, (target, ops)
        if target == 8:
            assert all(len(n.input) == 1 and n.attribute for n in out.graph.node
                       if n.op_type == "Upsample"), out.graph.node
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["a"], mode="linear", name="hp")],
              [vi("x", [1, 2, 3, 4])], [vi("a", [1, 2, 6, 8])], 13,
              [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")])
    refused(m, 9, "hp (Resize 13->9: Resize-10 maps coordinates as asymmetric only)")
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["a"], mode="linear", name="hps",
                                coordinate_transformation_mode="half_pixel_symmetric")],
              [vi("x", [1, 2, 3, 4])], [vi("a", [1, 2, 6, 8])], 19,
              [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")])
    refused(m, 18, "hps (Resize 19->18: coordinate_transformation_mode 'half_pixel_symmetric' "
            "is new in version 19)")


def downgrade_should_pad_maxpool_for_ceil_mode_and_take_pad_inputs_back():
    """MaxPool-10's ceil_mode=1 is MaxPool-8 with more end padding (checked on
    sizes where the ceiling adds a window and where it does not); Pad-11's pads
    and constant_value become Pad-2's attributes; Slice ends that shape inference
    computes from static dims are constants for Slice-1."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 7, 8)).astype(np.float32)
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 3], strides=[2, 2],
                              ceil_mode=1, dilations=[1, 1]),
             helper.make_node("MaxPool", ["x"], ["q"], kernel_shape=[2, 3], strides=[3, 2],
                              pads=[1, 0, 0, 1], ceil_mode=1),
             helper.make_node("Pad", ["x", "pads", "cv"], ["c"]),
             helper.make_node("Pad", ["x", "pads"], ["r"], mode="reflect"),
             helper.make_node("Shape", ["x"], ["shp"]),
             helper.make_node("Gather", ["shp", "three"], ["w"], axis=0),
             helper.make_node("Div", ["w", "two"], ["half"]),
             helper.make_node("Slice", ["x", "zero", "half", "three"], ["s"])]
    shapes = {"p": [1, 2, 4, 4], "q": [1, 2, 3, 4], "c": [1, 2, 10, 11], "r": [1, 2, 10, 11],
              "s": [1, 2, 7, 4]}
    m = model(nodes, [vi("x", [1, 2, 7, 8])], [vi(n, d) for n, d in shapes.items()], 13,
              [h.i64("pads", [0, 0, 1, 2, 0, 0, 2, 1]), h.i64("three", [3]), h.i64("two", [2]),
               h.i64("zero", [0]), numpy_helper.from_array(np.array(1.5, np.float32), "cv")])
    out, r = down(m, 9, {"x": x}, "MaxPool, Pad and Slice -> 9")
    pools = [{a.name: list(a.ints) for a in n.attribute if a.ints}
             for n in out.graph.node if n.op_type == "MaxPool"]
    # the ceiling adds a window on both axes of p (one more row and column of
    # padding), none on q's
    assert pools[0]["pads"] == [0, 0, 1, 1] and pools[1]["pads"] == [1, 0, 0, 1], pools
    assert all(len(n.input) == 1 for n in out.graph.node if n.op_type in ("Pad", "Slice"))
    nodes[0] = helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 2], ceil_mode=1,
                                strides=[2, 2], auto_pad="SAME_UPPER", name="same")
    m = model(nodes[:1], [vi("x", [1, 2, 7, 8])], [vi("p", None)], 13)
    refused(m, 7, "same (MaxPool 12->1: ceil_mode=1 needs known spatial dims, explicit pads")


def downgrade_should_refuse_the_older_forms_a_node_does_not_fit():
    """Resize cubic or with another nearest rounding than floor has no Resize-10
    form; Upsample-7 needs constant scales; Pad-2 a constant float value;
    MaxPool-8 no dilations: each refused with its reason, in one error."""
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    asym = {"coordinate_transformation_mode": "asymmetric"}
    nodes = [helper.make_node("Resize", ["x", "", "sc"], ["a"], mode="cubic", name="cubic", **asym),
             helper.make_node("Resize", ["x", "", "sc"], ["b"], mode="nearest", name="round",
                              **asym),
             helper.make_node("Resize", ["x", "", "s"], ["c"], mode="nearest", name="dyn",
                              nearest_mode="floor", **asym),
             helper.make_node("Pad", ["x", "pads", "v"], ["d"], name="pad"),
             helper.make_node("MaxPool", ["x"], ["e"], kernel_shape=[2, 2], dilations=[2, 2],
                              name="dil")]
    m = model(nodes, [vi("x", [1, 2, 3, 4]), vi("s", [4]), vi("v", [])],
              [vi(n, None) for n in "abcde"], 13,
              [sc, h.i64("pads", [0, 0, 1, 1, 0, 0, 1, 1])])
    err = refused(m, 8, "cubic (Resize 13->8: Resize-10 has no cubic mode)",
                  "round (Resize 13->8: Resize-10 rounds nearest with floor only)",
                  "dyn (Resize 13->8: op does not exist at the target opset: Upsample-7 holds "
                  "scales as an attribute: they must be constant)",
                  "pad (Pad 13->2: Pad's constant_value is not a float constant)",
                  "dil (MaxPool 12->8: MaxPool-8 has no dilations)")
    assert "5 nodes" in err, err


def downgrade_should_list_every_node_it_cannot_take_down():
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=1, name="soft"),
             helper.make_node("Celu", ["x"], ["g"], name="celu"),
             helper.make_node("ReduceMean", ["x", "ax"], ["m"], name="dyn"),
             helper.make_node("Relu", ["i"], ["j"], name="intrelu")]
    m = model(nodes, [vi("x", [2, 3, 4]), vi("ax", [1], TensorProto.INT64),
                      vi("i", [2], TensorProto.INT32)],
              [vi("s", [2, 3, 4]), vi("g", [2, 3, 4]), vi("m", None),
               vi("j", [2], TensorProto.INT32)], 18)
    err = refused(m, 11, "soft (Softmax 13->11: before 13", "celu (Celu 12->11: op does not "
                  "exist at the target opset)", "dyn (ReduceMean 18->11: an input "
                  "that became an attribute is computed at run time)",
                  "intrelu (Relu 14->6: element type INT32 is not in version 13)")
    assert "4 nodes" in err, err


def downgrade_should_refuse_what_no_older_form_says():
    """A reduction told to pass its input through when axes are empty, Clip
    bounds computed at run time, Split-18's num_outputs over an axis of unknown
    size: each refused with its reason, in one error."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], noop_with_empty_axes=1, name="noop"),
             helper.make_node("Clip", ["x", "lo"], ["c"], name="clip"),
             helper.make_node("Split", ["d"], ["a", "b"], axis=0, num_outputs=2, name="split")]
    m = model(nodes, [vi("x", [2, 3]), vi("lo", []), vi("d", ["N"])],
              [vi("m", None), vi("c", [2, 3]), vi("a", None), vi("b", None)], 18)
    err = refused(m, 10, "noop (ReduceMean 18->1: noop_with_empty_axes with axes that may be "
                  "empty has no older form)", "clip (Clip 13->6: Clip's min or max is not a "
                  "float constant)", "split (Split 18->2: num_outputs of an axis whose size "
                  "is unknown")
    assert "3 nodes" in err, err


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

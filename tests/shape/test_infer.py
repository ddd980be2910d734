#!/usr/bin/python3
"""Shape inference cases, through `tileopt optimize --passes none --infer-shapes`.

Each case builds a model, writes the inferred shapes to value_info and checks the
types of named values: symbolic dims, shape values computed by Shape chains, both
Tile forms, If merging, unknown ops, and conflicts with declared types.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


vi, i64 = h.vi, h.i64


def make(nodes, inputs, outputs, inits=(), opset=13, value_info=(), ir=None):
    g = helper.make_graph(nodes, "infer_test", inputs, outputs, initializer=list(inits),
                          value_info=list(value_info))
    kw = {"ir_version": ir} if ir else {}
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], **kw)


def infer(m, expect_ok=True):
    """(types by name, CompletedProcess): name -> (elem, [dim value | dim param | None])."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--passes", "none", "--infer-shapes")
        if not expect_ok:
            return None, cp
        h.expect_ok(cp)
        h.check(dst)
        out = onnx.load(dst)
    types = {}
    for v in list(out.graph.value_info) + list(out.graph.output):
        tt = v.type.tensor_type
        dims = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.WhichOneof("value") == "dim_value"
                    else (d.dim_param if d.WhichOneof("value") == "dim_param" else None)
                    for d in tt.shape.dim]
        types[v.name] = (tt.elem_type, dims)
    return types, cp


def infer_should_broadcast_symbolic_dims():
    nodes = [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["o"])]
    t, _ = infer(make(nodes, [vi("x", F, ["N", 1, 3]), vi("y", F, [4, 1])], [vi("o", F, None)]))
    assert t["s"] == (F, ["N", 4, 3]), t["s"]
    assert t["o"] == (F, ["N", 4, 3]), t["o"]


def infer_should_not_guess_broadcast_of_two_different_symbols():
    nodes = [helper.make_node("Add", ["x", "y"], ["s"])]
    t, _ = infer(make(nodes, [vi("x", F, ["A", 3]), vi("y", F, ["B", 3])], [vi("s", F, None)]))
    assert t["s"] == (F, [None, 3]), t["s"]


def infer_should_carry_shape_values_into_reshape():
    nodes = [helper.make_node("Shape", ["x"], ["shp"]),
             helper.make_node("Gather", ["shp", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "twelve"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["r"])]
    t, _ = infer(make(nodes, [vi("x", F, ["N", 3, 4])], [vi("r", F, None)],
                      [i64("zero", 0), i64("axes", [0]), i64("twelve", [12])]))
    assert t["r"] == (F, ["N", 12]), t["r"]
    assert t["shp"] == (I64, [3]) and t["target"] == (I64, [2]), t


def infer_should_fill_reshape_minus_one_by_cancelling_symbols():
    nodes = [helper.make_node("Reshape", ["x", "target"], ["r"])]
    t, _ = infer(make(nodes, [vi("x", F, ["N", 3, 4])], [vi("r", F, None)],
                      [i64("target", [0, -1])]))
    assert t["r"] == (F, ["N", 12]), t["r"]


def agree_with_ort(m, types, feeds, sizes):
    """ONNX Runtime's output shapes on feeds equal the inferred dims of every graph
    output, each named dim evaluated with the sizes given (e.g. {"N": 3})."""
    with h.tempdir() as d:
        path = os.path.join(d, "m.onnx")
        onnx.save(m, path)
        outs = h.run_ort(path, feeds)
    for o, got in zip(m.graph.output, outs):
        want = [d if isinstance(d, int) else eval(d, {}, dict(sizes))  # noqa: S307
                for d in types[o.name][1]]
        assert list(got.shape) == want, (o.name, got.shape, types[o.name])


def _batch(name="n"):
    """Nodes putting x's dim 0 (the named dim N) into scalar `name`."""
    return [helper.make_node("Shape", ["x"], ["shp"]),
            helper.make_node("Gather", ["shp", "zero"], [name], axis=0)]


def infer_should_compute_with_named_dims():
    # Reshape(x[N,16,64], [4*N, 256]), then that to [-1, 64]: 16*N; Flatten at 2
    nodes = _batch() + [
        helper.make_node("Mul", ["n", "four"], ["n4"]),
        helper.make_node("Unsqueeze", ["n4", "axes"], ["n4_1"]),
        helper.make_node("Concat", ["n4_1", "c256"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Reshape", ["r", "m1_64"], ["r2"]),
        helper.make_node("Flatten", ["x"], ["fl"], axis=2)]
    m = make(nodes, [vi("x", F, ["N", 16, 64])], [vi("r2", F, None), vi("fl", F, None)],
             [i64("zero", 0), i64("four", 4), i64("axes", [0]), i64("c256", [256]),
              i64("m1_64", [-1, 64])])
    t, _ = infer(m)
    assert t["r"] == (F, ["4*N", 256]), t["r"]
    assert t["r2"] == (F, ["16*N", 64]), t["r2"]
    assert t["fl"] == (F, ["16*N", 64]), t["fl"]
    agree_with_ort(m, t, {"x": np.ones((3, 16, 64), np.float32)}, {"N": 3})


def infer_should_cancel_named_dims_back_to_numbers():
    # Div(Mul(N, 4), N) is 4: x reshaped to [N, 4*3] through it
    nodes = _batch() + [
        helper.make_node("Mul", ["n", "four"], ["n4"]),
        helper.make_node("Div", ["n4", "n"], ["q"]),
        helper.make_node("Mul", ["q", "three"], ["q3"]),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Unsqueeze", ["q3", "axes"], ["q3_1"]),
        helper.make_node("Concat", ["n1", "q3_1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"])]
    t, _ = infer(make(nodes, [vi("x", F, ["N", 3, 4])], [vi("r", F, None)],
                      [i64("zero", 0), i64("four", 4), i64("three", 3), i64("axes", [0])]))
    assert t["r"] == (F, ["N", 12]), t["r"]


def infer_should_add_named_dims_along_a_concat_axis_and_tile_by_them():
    # Concat of [N,3] and [1,3]; Tile(w[5,3], [2*N, 1]); x flattened by its Size
    nodes = _batch() + [
        helper.make_node("Concat", ["x", "z"], ["c"], axis=0),
        helper.make_node("Mul", ["n", "two"], ["n2"]),
        helper.make_node("Unsqueeze", ["n2", "axes"], ["n2_1"]),
        helper.make_node("Concat", ["n2_1", "one"], ["reps"], axis=0),
        helper.make_node("Tile", ["w", "reps"], ["t"]),
        helper.make_node("Size", ["x"], ["size"]),
        helper.make_node("Unsqueeze", ["size", "axes"], ["size1"]),
        helper.make_node("Reshape", ["x", "size1"], ["flat"])]
    m = make(nodes, [vi("x", F, ["N", 3]), vi("z", F, [1, 3]), vi("w", F, [5, 3])],
             [vi("c", F, None), vi("t", F, None), vi("flat", F, None)],
             [i64("zero", 0), i64("two", 2), i64("axes", [0]), i64("one", [1])])
    t, _ = infer(m)
    assert t["c"] == (F, ["N + 1", 3]), t["c"]
    assert t["t"] == (F, ["10*N", 3]), t["t"]
    assert t["flat"] == (F, ["3*N"]), t["flat"]
    feeds = {"x": np.ones((4, 3), np.float32), "z": np.ones((1, 3), np.float32),
             "w": np.ones((5, 3), np.float32)}
    agree_with_ort(m, t, feeds, {"N": 4})


def infer_should_follow_the_expand_pattern_exporters_emit():
    # PyTorch's y.expand(x.shape[0], 3): Where(Equal(shape, -1), ones, shape)
    # feeds Expand; Max(N, 0) and Range(0, N, 1) keep N
    nodes = _batch() + [
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "three"], ["shape"], axis=0),
        helper.make_node("ConstantOfShape", ["two"], ["ones"],
                         value=numpy_helper.from_array(np.array([1], np.int64))),
        helper.make_node("Mul", ["ones", "m1"], ["minus"]),
        helper.make_node("Equal", ["shape", "minus"], ["eq"]),
        helper.make_node("Where", ["eq", "ones", "shape"], ["target"]),
        helper.make_node("Expand", ["y", "target"], ["e"]),
        helper.make_node("Max", ["n", "zero"], ["nmax"]),
        helper.make_node("Range", ["zero", "nmax", "one"], ["rng"])]
    m = make(nodes, [vi("x", F, ["N", 3]), vi("y", F, [1, 3])],
             [vi("e", F, None), vi("rng", I64, None)],
             [i64("zero", 0), i64("axes", [0]), i64("three", [3]), i64("two", [2]),
              i64("m1", -1), i64("one", 1)])
    t, _ = infer(m)
    assert t["e"] == (F, ["N", 3]), t["e"]
    assert t["rng"] == (I64, ["N"]), t["rng"]
    feeds = {"x": np.ones((5, 3), np.float32), "y": np.ones((1, 3), np.float32)}
    agree_with_ort(m, t, feeds, {"N": 5})


def infer_should_leave_a_dim_unknown_where_a_division_is_not_exact():
    # N // 2 is no polynomial: the dim stays unknown, never "N/2" guessed
    nodes = _batch() + [
        helper.make_node("Div", ["n", "two"], ["h"]),
        helper.make_node("Unsqueeze", ["h", "axes"], ["h1"]),
        helper.make_node("Concat", ["h1", "m1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"])]
    t, _ = infer(make(nodes, [vi("x", F, ["N", 4])], [vi("r", F, None)],
                      [i64("zero", 0), i64("two", 2), i64("axes", [0]), i64("m1", [-1])]))
    assert t["r"] == (F, [None, None]), t["r"]


def infer_should_infer_tile_from_computed_repeats():
    t, _ = infer(onnx.load(os.path.join(h.MODELS, "shape_repeats.onnx")))
    assert t["reps"] == (I64, [3]), t["reps"]
    assert t["y"] == (F, [4, 3, 4]), t["y"]


def infer_should_keep_symbols_on_axes_tiled_once():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["y"])]
    t, _ = infer(make(nodes, [vi("x", F, ["N", 3])], [vi("y", F, None)], [i64("reps", [1, 4])]))
    assert t["y"] == (F, ["N", 12]), t["y"]


def infer_should_infer_the_legacy_tile_form():
    nodes = [helper.make_node("Tile", ["x", "tiles", "axis"], ["y"])]
    inits = [numpy_helper.from_array(np.array([3.0], dtype=np.float32), "tiles"),
             numpy_helper.from_array(np.array([-1.0], dtype=np.float32), "axis")]
    m = make(nodes, [vi("x", F, [2, 5]), vi("tiles", F, [1]), vi("axis", F, [1])],
             [vi("y", F, None)], inits, opset=5, ir=3)
    t, _ = infer(m)
    assert t["y"] == (F, [2, 15]), t["y"]


def infer_should_merge_if_branches():
    then_g = helper.make_graph([helper.make_node("Relu", ["a"], ["ta"])], "then", [],
                               [vi("ta", F, None)])
    else_g = helper.make_graph([helper.make_node("Relu", ["b"], ["eb"])], "else", [],
                               [vi("eb", F, None)])
    nodes = [helper.make_node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g)]
    t, _ = infer(make(nodes, [vi("c", TensorProto.BOOL, []), vi("a", F, [2, 3]),
                              vi("b", F, [2, 4])], [vi("o", F, None)]))
    assert t["o"] == (F, [2, None]), t["o"]


def infer_should_leave_outputs_of_unknown_ops_unknown():
    nodes = [helper.make_node("Mystery", ["x"], ["m"], domain="com.example"),
             helper.make_node("Relu", ["m"], ["o"])]
    g = helper.make_graph(nodes, "unknown", [vi("x", F, [2, 3])], [vi("o", F, ["a", "b"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("com.example", 1)])
    t, _ = infer(m)
    assert "m" not in t or t["m"][1] is None, t.get("m")
    assert t["o"] == (F, ["a", "b"]), t["o"]


def infer_should_refine_declared_unknown_dims():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["o"])]
    t, _ = infer(make(nodes, [vi("x", F, ["N", 3])], [vi("o", F, None)],
                      value_info=[vi("r", F, ["N", None])]))
    assert t["r"] == (F, ["N", 3]), t["r"]


def infer_should_refuse_a_conflict_with_declared_value_info_naming_both():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["o"])]
    m = make(nodes, [vi("x", F, [2, 3])], [vi("o", F, None)],
             value_info=[vi("r", F, [2, 5])])
    _, cp = infer(m, expect_ok=False)
    assert cp.returncode == 1, (cp.returncode, cp.stderr)
    assert "value r" in cp.stderr, cp.stderr
    assert "FLOAT[2,3]" in cp.stderr and "FLOAT[2,5]" in cp.stderr, cp.stderr


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

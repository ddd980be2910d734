#!/usr/bin/python3
"""Model-level tests of the fuse pass.

Every case builds a small model, runs `tileopt optimize --passes fuse`, checks the
output with onnx.checker (full check), validates the report against the schema,
and evaluates original and optimized models in ONNX Runtime and in tileopt's
evaluator on the same seeded inputs: all four must agree.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

F, I32, I64, B = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL


vi, i64 = h.vi, h.i64


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def make(nodes, inputs, outputs, inits=(), opset=13, value_info=True):
    g = helper.make_graph(nodes, "fuse_test", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    if value_info:
        # Declared intermediate shapes: the pass must keep them valid.
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    return m


def optimize(m, *extra, feeds=None, ort=True, evaluator=True):
    """Optimize m with fuse; check, validate and compare. Returns (model, actions)."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        report = h.optimize_checked(src, dst, "fuse", *extra)
        feeds = feeds or h.random_feeds(src, seed=3)
        if ort:
            want = h.run_ort(src, feeds)
            h.assert_close(h.run_ort(dst, feeds), want, what="ORT optimized output")
        else:
            want = h.run_tileopt(src, feeds)
        if evaluator:
            h.assert_close(h.run_tileopt(src, feeds), want, what="evaluator original")
            h.assert_close(h.run_tileopt(dst, feeds), want, what="evaluator optimized")
        out = onnx.load(dst)
        (p,) = [p for p in report["passes"] if p["name"] == "fuse"]
        return out, p["actions"]


def ops(m):
    return [n.op_type for n in m.graph.node]


def producer(m, name):
    (n,) = [n for n in m.graph.node if name in n.output]
    return n


def fused(actions, rule):
    return [a for a in actions if a["action"] == "fused" and a.get("rule") == rule]


def skipped(actions):
    return [a for a in actions if a["action"] == "skipped"]


def tile_add_bias(b_as_init, elem=F, np_t=np.float32):
    n, c, hh, w = 2, 3, 4, 5
    nodes = [helper.make_node("Tile", ["b", "reps"], ["bt"], name="tile"),
             helper.make_node("Add", ["x", "bt"], ["y"], name="add")]
    inputs = [vi("x", elem, [n, c, hh, w])]
    inits = [i64("reps", [n, 1, hh, w])]
    if b_as_init:
        inits.append(const("b", (np.arange(c) - 1).astype(np_t).reshape(1, c, 1, 1)))
    else:
        inputs.append(vi("b", elem, [1, c, 1, 1]))
    return make(nodes, inputs, [vi("y", elem, [n, c, hh, w])], inits)


# ---------------------------------------------------------------- rule 1

def fuse_should_drop_tile_of_bias_read_by_broadcasting_add():
    out, actions = optimize(tile_add_bias(False))
    assert ops(out) == ["Add"], ops(out)
    assert list(out.graph.node[0].input) == ["x", "b"], "operand order changed"
    (a,) = fused(actions, 1)
    assert a["node"] == "add" and a["tile"] == "tile"
    # b [1,3,1,1] float32, repeats [2,1,4,5]: axis i -> (r_i, d_i), strides (0, s_i)
    assert a["view"]["shape"] == [2, 1, 1, 3, 4, 1, 5, 1], a["view"]
    assert a["view"]["strides"] == [0, 12, 0, 4, 0, 4, 0, 4], a["view"]
    assert a["bytes_before"] == 2 * 3 * 4 * 5 * 4 and a["bytes_after"] == 0
    assert a["elements_before"] == a["elements_after"] == 120


def fuse_should_drop_tile_of_initializer_bias_for_int_types():
    out, _ = optimize(tile_add_bias(True, I32, np.int32))
    assert ops(out) == ["Add"], ops(out)


def fuse_should_leave_no_tile_in_bias_tile_model():
    with h.tempdir() as d:
        dst = os.path.join(d, "o.onnx")
        h.expect_ok(h.tileopt("optimize", os.path.join(h.MODELS, "bias_tile.onnx"),
                              "-o", dst, "--passes", "fuse"))
        h.check(dst)
        assert "Tile" not in ops(onnx.load(dst))
    m = onnx.load(os.path.join(h.MODELS, "bias_tile.onnx"))
    out, _ = optimize(m)
    assert "Tile" not in ops(out)


def fuse_should_drop_a_constant_bias_tile_that_fold_leaves_for_where():
    # Fold leaves a constant Tile over size-1 axes to fuse when every reader
    # broadcasts anyway; fold and fuse read that from one op table, so Where, a
    # broadcasting op of three operands, gets the Tile dropped like Add does.
    n, c, w = 2, 3, 4
    nodes = [helper.make_node("Tile", ["b", "reps"], ["bt"], name="tile"),
             helper.make_node("Where", ["cond", "bt", "x"], ["y"], name="where")]
    m = make(nodes, [vi("cond", B, [n, c, w]), vi("x", F, [n, c, w])],
             [vi("y", F, [n, c, w])],
             [const("b", np.arange(c, dtype=np.float32).reshape(1, c, 1)),
              i64("reps", [n, 1, w])])
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        report = h.optimize_checked(src, dst, "fold,fuse")
        assert "Tile" not in ops(onnx.load(dst)), ops(onnx.load(dst))
        (p,) = [p for p in report["passes"] if p["name"] == "fuse"]
        (a,) = fused(p["actions"], 1)
        assert a["node"] == "where" and a["tile"] == "tile", a
        feeds = h.random_feeds(src, seed=5)
        want = h.run_ort(src, feeds)
        h.assert_close(h.run_ort(dst, feeds), want, what="ORT optimized output")
        h.assert_close(h.run_tileopt(dst, feeds), want, what="evaluator optimized")


def fuse_should_sink_tile_below_where_with_tiling_invariant_operands():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Where", ["cond", "t", "zero"], ["y"], name="where")]
    m = make(nodes, [vi("x", F, [3, 4]), vi("cond", B, [1, 4])], [vi("y", F, [6, 4])],
             [i64("reps", [2, 1]), const("zero", np.zeros([1], np.float32))])
    out, actions = optimize(m)
    assert ops(out) == ["Where", "Tile"], ops(out)
    (a,) = fused(actions, 3)
    assert a["rule_name"] == "elementwise op with tiling-invariant operands", a


def fuse_should_drop_tile_read_by_a_three_operand_max():
    nodes = [helper.make_node("Tile", ["b", "reps"], ["bt"], name="tile"),
             helper.make_node("Max", ["x", "bt", "z"], ["y"], name="max")]
    m = make(nodes, [vi("x", F, [2, 3]), vi("b", F, [1, 3]), vi("z", F, [3])],
             [vi("y", F, [2, 3])], [i64("reps", [2, 1])])
    out, actions = optimize(m)
    assert ops(out) == ["Max"], ops(out)
    assert list(out.graph.node[0].input) == ["x", "b", "z"]
    assert len(fused(actions, 1)) == 1, actions


def fuse_should_keep_tile_when_where_operands_vary_along_the_tiled_axes():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Where", ["cond", "t", "y0"], ["y"], name="where")]
    m = make(nodes, [vi("x", F, [3, 4]), vi("cond", B, [6, 8]), vi("y0", F, [6, 8])],
             [vi("y", F, [6, 8])], [i64("reps", [2, 2])])
    out, actions = optimize(m)
    assert "Tile" in ops(out)
    assert any("varies along the tiled axes" in a.get("reason", "") for a in skipped(actions)), actions


def _batch_repeat(x_shape, pos_shape, reps_from="x", extra_inputs=(), consumer="Add"):
    """y = x + Tile(pos, Concat(Shape(src)[0], 1, ...)): the repeats come from the
    batch of `reps_from`, as PyTorch exports `pos.repeat(x.shape[0], 1, 1)`."""
    rank = len(pos_shape)
    nodes = [helper.make_node("Shape", [reps_from], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1"] + ["one"] * (rank - 1), ["reps"], name="concat",
                              axis=0),
             helper.make_node("Tile", ["pos", "reps"], ["pt"], name="tile"),
             {"Add": helper.make_node("Add", ["x", "pt"], ["y"], name="add"),
              "Where": helper.make_node("Where", ["mask", "pt", "x"], ["y"], name="where"),
              "Relu": helper.make_node("Relu", ["pt"], ["y"], name="relu")}[consumer]]
    pos = const("pos", np.linspace(-1, 1, int(np.prod(pos_shape)), dtype=np.float32)
                .reshape(pos_shape))
    inits = [pos, const("zero", np.array(0, np.int64)), i64("axes0", [0]), i64("one", [1])]
    return make(nodes, [vi("x", F, x_shape)] + list(extra_inputs), [vi("y", F, None)], inits)


def fuse_should_drop_a_tile_whose_symbolic_repeats_are_the_batch_it_is_added_to():
    # DETR's query_embed.repeat(1, bs, 1) and every position table repeated over a
    # dynamic batch: the repeats are the named dim N, on the size-1 axis of pos.
    m = _batch_repeat(["N", 16, 64], [1, 16, 64])
    feeds = {"x": np.random.default_rng(2).standard_normal((3, 16, 64)).astype(np.float32)}
    out, actions = optimize(m, feeds=feeds)
    assert ops(out) == ["Add"], ops(out)
    assert list(out.graph.node[0].input) == ["x", "pos"]
    (a,) = fused(actions, 1)
    assert a["repeats_symbolic"] == ["N", 1, 1] and a["tile"] == "tile", a


def fuse_should_keep_a_symbolic_tile_when_the_other_operand_has_another_batch():
    # the repeats are z's batch M, the Add's operand is x's batch N: not provably
    # the same size, so the Tile stays and says why
    m = _batch_repeat(["N", 16, 64], [1, 16, 64], reps_from="z",
                      extra_inputs=[vi("z", F, ["M", 4])])
    feeds = {"x": np.ones((2, 16, 64), np.float32), "z": np.ones((2, 4), np.float32)}
    out, actions = optimize(m, feeds=feeds)
    assert "Tile" in ops(out)
    reasons = [a["reason"] for a in skipped(actions)]
    assert any("operand 'x' [N,16,64] does not carry the repeated dims (repeats [M,1,1])" in r
               for r in reasons), reasons


def fuse_should_rewire_the_reader_of_a_symbolic_tile_that_is_also_a_graph_output():
    m = _batch_repeat(["N", 16, 64], [1, 16, 64])
    m.graph.output.append(vi("pt", F, ["N", 16, 64]))
    feeds = {"x": np.ones((2, 16, 64), np.float32)}
    out, actions = optimize(m, feeds=feeds)
    (add,) = [n for n in out.graph.node if n.op_type == "Add"]
    assert list(add.input) == ["x", "pos"], add.input
    assert "Tile" in ops(out)
    assert any(a["reason"].startswith("it is a graph output") for a in skipped(actions)), actions


def fuse_should_drop_a_symbolic_tile_read_by_where():
    # Where(mask[N,16,64], Tile(pos, [N,1,1]), x): the mask carries N
    m = _batch_repeat(["N", 16, 64], [1, 16, 64], extra_inputs=[vi("mask", B, ["N", 16, 64])],
                      consumer="Where")
    rng = np.random.default_rng(6)
    feeds = {"x": rng.standard_normal((3, 16, 64)).astype(np.float32),
             "mask": rng.standard_normal((3, 16, 64)) > 0}
    out, actions = optimize(m, feeds=feeds)
    assert ops(out) == ["Where"], ops(out)
    assert list(out.graph.node[0].input) == ["mask", "pos", "x"]
    assert len(fused(actions, 1)) == 1, actions


def fuse_should_keep_a_symbolic_tile_that_really_tiles():
    # pos has 2 rows: repeating them M times (z's batch) is data, not a broadcast
    m = _batch_repeat(["K", 16, 64], [2, 16, 64], reps_from="z",
                      extra_inputs=[vi("z", F, ["M", 4])])
    feeds = {"x": np.ones((4, 16, 64), np.float32), "z": np.ones((2, 4), np.float32)}
    out, actions = optimize(m, feeds=feeds)
    assert "Tile" in ops(out)
    reasons = [a["reason"] for a in skipped(actions)]
    assert any("a real tiling" in r for r in reasons), reasons


def fuse_should_sink_a_symbolic_tile_below_its_unary_reader():
    # Relu(Tile(pos, [N,1,1])) -> Tile(Relu(pos), [N,1,1]): Relu runs on pos alone,
    # the new Tile reads the same repeats
    m = _batch_repeat(["N", 16, 64], [2, 16, 64], consumer="Relu")
    out, actions = optimize(m, feeds={"x": np.ones((3, 16, 64), np.float32)})
    assert ops(out)[-2:] == ["Relu", "Tile"], ops(out)
    relu, tile = out.graph.node[-2:]
    assert relu.input[0] == "pos" and tile.input == [relu.output[0], "reps"]
    (a,) = fused(actions, 2)
    assert a["repeats_symbolic"] == ["N", 1, 1], a


def fuse_should_read_the_shape_of_a_tile_from_its_input():
    # DETR's decoder: tgt = zeros_like(query_pos), query_pos = Tile(q, [1,N,1]);
    # Shape(Tile(x, r)) is Shape(x) * r, so the Shape no longer keeps the Tile
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one_i"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["one", "n1", "one"], ["reps"], name="concat", axis=0),
             helper.make_node("Tile", ["q", "reps"], ["qt"], name="tile"),
             helper.make_node("Shape", ["qt"], ["qs"], name="shape_of_tile"),
             helper.make_node("ConstantOfShape", ["qs"], ["zeros"], name="zeros_like",
                              value=numpy_helper.from_array(np.zeros([1], np.float32))),
             helper.make_node("Add", ["zeros", "qt"], ["y"], name="add")]
    q = const("q", np.linspace(-1, 1, 10 * 8, dtype=np.float32).reshape(10, 1, 8))
    m = make(nodes, [vi("x", F, [6, "N", 8])], [vi("y", F, [10, "N", 8])],
             [q, const("one_i", np.array(1, np.int64)), i64("axes0", [0]), i64("one", [1])])
    feeds = {"x": np.ones((6, 3, 8), np.float32)}
    out, actions = optimize(m, feeds=feeds)
    assert "Tile" not in ops(out), ops(out)
    (a,) = fused(actions, 6)
    assert a["node"] == "shape_of_tile" and a["repeats_symbolic"] == [1, "N", 1], a
    mul = [n for n in out.graph.node if n.op_type == "Mul"]
    assert len(mul) == 1 and mul[0].input[1] == "reps", ops(out)


def fuse_should_read_a_whole_shape_window_of_a_tile_from_its_input():
    # the dynamo exporter writes x.shape as Shape(x, start=0) and zeros_like as
    # Expand(0, shape): the same rewrite as for a plain Shape
    q = const("q", np.linspace(-1, 1, 10 * 8, dtype=np.float32).reshape(10, 1, 8))
    for window in ({"start": 0}, {"start": -3, "end": 3}, {"end": 5}):
        nodes = [helper.make_node("Shape", ["x"], ["n1"], name="batch", start=1, end=2),
                 helper.make_node("Concat", ["one", "n1", "one"], ["reps"], name="concat",
                                  axis=0),
                 helper.make_node("Tile", ["q", "reps"], ["qt"], name="tile"),
                 helper.make_node("Shape", ["qt"], ["qs"], name="shape_of_tile", **window),
                 helper.make_node("Expand", ["zero", "qs"], ["zeros"], name="zeros_like"),
                 helper.make_node("Add", ["zeros", "qt"], ["y"], name="add")]
        m = make(nodes, [vi("x", F, [6, "N", 8])], [vi("y", F, [10, "N", 8])],
                 [q, const("zero", np.array(0, np.float32)), i64("one", [1])], opset=18)
        out, actions = optimize(m, feeds={"x": np.ones((6, 3, 8), np.float32)})
        assert "Tile" not in ops(out), (window, ops(out))
        (a,) = fused(actions, 6)
        assert a["node"] == "shape_of_tile", a


def fuse_should_keep_a_tile_whose_shape_is_read_through_a_window():
    # Shape-15's start/end: the Tile's shape window is not rewritten
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Shape", ["t"], ["y"], name="shape", start=1)]
    m = make(nodes, [vi("x", F, ["N", 3])], [vi("y", I64, [1])], [i64("reps", [1, 2])],
             opset=15)
    out, actions = optimize(m, feeds={"x": np.ones((2, 3), np.float32)})
    assert ops(out) == ["Tile", "Shape"], ops(out)
    assert any("reads a window of the Tile's shape" in a["reason"] for a in skipped(actions))


def fuse_should_let_matmul_broadcast_a_tiled_batch():
    # torch.bmm(a, w.repeat(B, 1, 1)): MatMul broadcasts batch dims itself, over a
    # static batch and over a named one; a Tile of a matrix axis stays
    for a_shape, reps in (([6, 3, 4], [6, 1, 1]), (["N", 3, 4], None)):
        nodes = [helper.make_node("Tile", ["w", "reps"], ["wt"], name="tile"),
                 helper.make_node("MatMul", ["a", "wt"], ["y"], name="matmul")]
        inits = []
        if reps is None:
            nodes = [helper.make_node("Shape", ["a"], ["s"], name="shape"),
                     helper.make_node("Slice", ["s", "zero", "one"], ["n"], name="slice"),
                     helper.make_node("Concat", ["n", "one", "one"], ["reps"], name="cat",
                                      axis=0)] + nodes
            inits = [i64("zero", [0]), i64("one", [1])]
        else:
            inits = [i64("reps", reps)]
        m = make(nodes, [vi("a", F, a_shape), vi("w", F, [1, 4, 5])],
                 [vi("y", F, [a_shape[0], 3, 5])], inits)
        rng = np.random.default_rng(9)
        feeds = {"a": rng.standard_normal((6, 3, 4)).astype(np.float32),
                 "w": rng.standard_normal((1, 4, 5)).astype(np.float32)}
        out, actions = optimize(m, feeds=feeds)
        assert ops(out)[-1:] == ["MatMul"] and "Tile" not in ops(out), ops(out)
        (a,) = fused(actions, 1)
        assert a["rule_name"] == "redundant Tile: MatMul broadcasts the batch dims itself", a
    nodes = [helper.make_node("Tile", ["w", "reps"], ["wt"], name="tile"),
             helper.make_node("MatMul", ["a", "wt"], ["y"], name="matmul")]
    m = make(nodes, [vi("a", F, [2, 3, 8]), vi("w", F, [2, 4, 5])], [vi("y", F, [2, 3, 5])],
             [i64("reps", [1, 2, 1])])
    out, actions = optimize(m)
    assert ops(out) == ["Tile", "MatMul"], ops(out)
    assert any("tiles a matrix axis" in s["reason"] for s in skipped(actions)), actions


# ---------------------------------------------------------------- rule 2

def fuse_should_sink_tile_to_the_end_of_a_unary_chain():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Relu", ["t"], ["a"], name="relu"),
             helper.make_node("LeakyRelu", ["a"], ["b"], name="leaky", alpha=0.3),
             helper.make_node("Clip", ["b", "lo", "hi"], ["c"], name="clip"),
             helper.make_node("Neg", ["c"], ["y"], name="neg")]
    m = make(nodes, [vi("x", F, [3, 4])], [vi("y", F, [6, 12])],
             [i64("reps", [2, 3]), const("lo", np.float32(-0.5)),
              const("hi", np.float32(0.75))])
    out, actions = optimize(m)
    assert ops(out).count("Tile") == 1
    t = producer(out, "y")
    assert t.op_type == "Tile", "graph output must come from the sunk Tile"
    assert len(fused(actions, 2)) == 4
    for a in fused(actions, 2):
        assert a["elements_before"] == 72 and a["elements_after"] == 12
    leaky = [n for n in out.graph.node if n.op_type == "LeakyRelu"][0]
    assert abs(leaky.attribute[0].f - 0.3) < 1e-6


def fuse_should_sink_tile_below_cast_with_the_new_type():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Cast", ["t"], ["y"], name="cast", to=TensorProto.INT32)]
    m = make(nodes, [vi("x", F, [2, 3])], [vi("y", I32, [4, 3])], [i64("reps", [2, 1])])
    out, actions = optimize(m)
    assert ops(out) == ["Cast", "Tile"], ops(out)
    (a,) = fused(actions, 2)
    assert a["bytes_after"] == 4 * 3 * 4


def fuse_should_not_sink_past_clip_with_runtime_bounds():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Clip", ["t", "lo"], ["y"], name="clip")]
    m = make(nodes, [vi("x", F, [2, 3]), vi("lo", F, [])], [vi("y", F, [4, 3])],
             [i64("reps", [2, 1])])
    out, actions = optimize(m)
    assert ops(out) == ["Tile", "Clip"], ops(out)
    (s,) = skipped(actions)
    assert s["node"] == "tile" and "not a constant" in s["reason"], s


# ---------------------------------------------------------------- guards

def fuse_should_keep_tile_with_a_non_elementwise_consumer():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Relu", ["t"], ["y"], name="relu"),
             helper.make_node("Transpose", ["t"], ["z"], name="tr", perm=[1, 0])]
    m = make(nodes, [vi("x", F, [2, 3])],
             [vi("y", F, [2, 6]), vi("z", F, [6, 2])], [i64("reps", [1, 2])])
    out, actions = optimize(m)
    assert ops(out) == ["Tile", "Relu", "Transpose"], ops(out)
    reasons = " ".join(s["reason"] for s in skipped(actions))
    assert "tr" in reasons and "Transpose" in reasons, reasons
    assert not fused(actions, 2)


def fuse_should_keep_a_tile_that_is_a_graph_output():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    m = make(nodes, [vi("x", F, [2, 3])], [vi("t", F, [4, 3]), vi("y", F, [4, 3])],
             [i64("reps", [2, 1])])
    out, actions = optimize(m)
    assert producer(out, "t").op_type == "Tile"
    assert producer(out, "y").op_type == "Relu"
    assert any("graph output" in s["reason"] for s in skipped(actions))


def fuse_should_rewrite_each_consumer_and_then_drop_the_tile():
    # One Tile read by a broadcasting Add (rule 1), a Sigmoid (rule 2) and a Mul
    # by a scalar (rule 3): every reader is rewritten, so the Tile goes away.
    nodes = [helper.make_node("Tile", ["b", "reps"], ["t"], name="tile"),
             helper.make_node("Add", ["t", "x"], ["y"], name="add"),
             helper.make_node("Sigmoid", ["t"], ["z"], name="sig"),
             helper.make_node("Mul", ["t", "s"], ["w"], name="mul")]
    m = make(nodes, [vi("b", F, [1, 4]), vi("x", F, [3, 4])],
             [vi("y", F, [3, 4]), vi("z", F, [3, 4]), vi("w", F, [3, 4])],
             [i64("reps", [3, 1]), const("s", np.float32(2.5))])
    out, actions = optimize(m)
    assert not any(n.op_type == "Tile" and "b" in n.input for n in out.graph.node)
    assert producer(out, "y").op_type == "Add"
    # the sunk Tiles repeat an outer size-1 axis: rule 5 keeps them (ORT's Tile
    # copies whole rows there, faster than its Expand) and says so
    assert producer(out, "z").op_type == "Tile"
    assert producer(out, "w").op_type == "Tile"
    assert sum("not made Expand" in s["reason"] for s in skipped(actions)) == 2
    assert len(fused(actions, 1)) == 1 and len(fused(actions, 2)) == 1
    assert len(fused(actions, 3)) == 1


def fuse_should_rewrite_allowed_consumers_while_another_keeps_the_tile():
    # Add reads the bias directly (rule 1) although Transpose still needs the Tile;
    # the Sigmoid is not sunk, since that would materialize the Tile twice.
    nodes = [helper.make_node("Tile", ["b", "reps"], ["t"], name="tile"),
             helper.make_node("Add", ["x", "t"], ["y"], name="add"),
             helper.make_node("Sigmoid", ["t"], ["s"], name="sig"),
             helper.make_node("Transpose", ["t"], ["z"], name="tr", perm=[1, 0])]
    m = make(nodes, [vi("b", F, [1, 4]), vi("x", F, [3, 4])],
             [vi("y", F, [3, 4]), vi("s", F, [3, 4]), vi("z", F, [4, 3])],
             [i64("reps", [3, 1])])
    out, actions = optimize(m)
    assert list(producer(out, "y").input) == ["x", "b"]
    assert producer(out, "s").op_type == "Sigmoid"
    assert list(producer(out, "s").input) == ["t"]
    # the Tile that stays repeats an outer size-1 axis: rule 5 leaves it
    assert producer(out, "t").op_type == "Tile"
    assert len(fused(actions, 1)) == 1 and not fused(actions, 2)
    (s,) = [s for s in skipped(actions) if s.get("node") == "tile"]
    assert "tr" in s["reason"] and "not made Expand" in s["reason"], s


def fuse_should_skip_legacy_tile1_and_ask_for_upgrade():
    src = os.path.join(h.MODELS, "legacy_tile1.onnx")
    # ONNX Runtime has no Tile-1 kernel: the evaluator is the reference here.
    out, actions = optimize(onnx.load(src), ort=False)
    assert ops(out) == ops(onnx.load(src))
    (s,) = skipped(actions)
    assert "upgrade" in s["reason"], s


def fuse_should_sink_a_unary_op_past_a_tile_whose_input_has_a_named_dim():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    m = make(nodes, [vi("x", F, ["N", 3])], [vi("y", F, ["M", 3])],
             [i64("reps", [2, 1])], value_info=False)
    out, actions = optimize(m, feeds={"x": np.ones((2, 3), np.float32)})
    assert ops(out) == ["Relu", "Tile"], ops(out)
    (a,) = fused(actions, 2)
    assert a["repeats"] == [2, 1] and a["input_shape"] == ["N", 3], a
    assert a["tiled_shape"] == [None, 3] and "view" not in a, a


def fuse_should_sink_a_unary_op_past_a_tile_with_repeats_known_at_run_time():
    # Relu(Tile(x, r)) == Tile(Relu(x), r) whatever r holds: its length is enough
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    m = make(nodes, [vi("x", F, [2, 3]), vi("reps", I64, [2])], [vi("y", F, [4, 3])],
             value_info=False)
    feeds = {"x": np.ones((2, 3), np.float32), "reps": np.array([2, 1], np.int64)}
    out, actions = optimize(m, feeds=feeds)
    assert ops(out) == ["Relu", "Tile"], ops(out)
    (a,) = fused(actions, 2)
    assert a["repeats_symbolic"] == [None, None], a


def fuse_should_skip_a_tile_it_cannot_read_and_say_what_is_unknown():
    # repeats of unknown length, an input of unknown rank (Reshape to a run-time
    # shape), a binary reader whose operand may vary along axes tiled by run-time
    # repeats
    reshape = [helper.make_node("Reshape", ["x0", "s"], ["x"], name="reshape")]
    cases = [([], [vi("x", F, [2, 3]), vi("reps", I64, ["K"])], "Relu",
              "are not a constant int64 tensor, and their length is unknown"),
             (reshape, [vi("x0", F, [6]), vi("s", I64, ["K"]), vi("reps", I64, [2])], "Relu",
              "rank of input 'x' unknown"),
             ([], [vi("x", F, [2, 3]), vi("reps", I64, [2])], "Add",
              "operand 'x' [2,3] is not known to stay the same along the tiled axes: a real "
              "tiling (repeats [?,?])")]
    for pre, inputs, op, want in cases:
        nodes = pre + [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
                       helper.make_node(op, ["t"] + (["x"] if op == "Add" else []), ["y"],
                                        name="c")]
        m = make(nodes, inputs, [vi("y", F, ["A", "B"])], value_info=False)
        feeds = {"x": np.ones((2, 3), np.float32), "reps": np.array([1, 1], np.int64),
                 "x0": np.ones(6, np.float32), "s": np.array([2, 3], np.int64)}
        feeds = {i.name: feeds[i.name] for i in inputs}
        out, actions = optimize(m, feeds=feeds)
        assert ops(out) == [n.op_type for n in nodes], (want, ops(out))
        reasons = [s["reason"] for s in skipped(actions)]
        assert any(want in r for r in reasons), (want, reasons)


def fuse_should_fail_naming_the_tile_when_constant_repeats_break_the_spec():
    # Invalid models (the checker refuses them): the pass fails with an error
    # naming the node, like fold, never crashes, and leaves no output file.
    cases = {
        "negative": ([2, 3], np.array([2, -1], np.int64)),
        "rank": ([2, 3], np.array([2], np.int64)),
        "int64": ([2, 3], np.array([2, 1], np.int32)),
        "overflows": ([2, 3], np.array([2 ** 62, 4], np.int64)),
    }
    for what, (shape, reps) in cases.items():
        nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
                 helper.make_node("Relu", ["t"], ["y"], name="relu")]
        m = make(nodes, [vi("x", F, shape)], [vi("y", F, None)],
                 [const("reps", reps)], value_info=False)
        with h.tempdir() as d:
            src, dst = os.path.join(d, "s.onnx"), os.path.join(d, "d.onnx")
            onnx.save(m, src)
            cp = h.tileopt("optimize", src, "-o", dst, "--passes", "fuse")
            assert cp.returncode == 1, (what, cp.returncode, cp.stderr)
            assert cp.stderr.startswith("tileopt: error:"), (what, cp.stderr)
            assert "tile" in cp.stderr and what in cp.stderr, (what, cp.stderr)
            assert not os.path.exists(dst), what


# ---------------------------------------------------------------- rule 3

def fuse_should_keep_operand_order_of_non_commutative_ops():
    # c - T, T / c, c ^ T, c < T: the tiling-invariant operand stays on its side.
    for op, elem, npt in [("Sub", F, np.float32), ("Div", I32, np.int32),
                          ("Pow", F, np.float32), ("Less", F, np.float32)]:
        first = op in ("Sub", "Pow", "Less")
        ins = ["c", "t"] if first else ["t", "c"]
        out_elem = B if op == "Less" else elem
        cval = np.array([[3, 2, 7]], dtype=npt) if op != "Pow" else \
            np.array([[1.5, 2.0, 0.5]], dtype=npt)
        nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
                 helper.make_node(op, ins, ["y"], name="op")]
        m = make(nodes, [vi("x", elem, [2, 3])], [vi("y", out_elem, [8, 3])],
                 [i64("reps", [4, 1]), const("c", cval)])
        feeds = None
        if op == "Pow":
            feeds = {"x": np.abs(np.random.default_rng(1).standard_normal((2, 3)))
                     .astype(np.float32) + 0.1}
        if op == "Div":
            feeds = {"x": np.array([[7, -7, 9], [-9, 12, 5]], np.int32)}
        out, actions = optimize(m, feeds=feeds)
        assert ops(out) == [op, "Tile"], (op, ops(out))
        n = out.graph.node[0]
        assert list(n.input) == (["c", "x"] if first else ["x", "c"]), (op, n.input)
        assert len(fused(actions, 3)) == 1


def fuse_should_merge_two_tiles_with_equal_repeats():
    nodes = [helper.make_node("Tile", ["a", "reps"], ["ta"], name="tile_a"),
             helper.make_node("Tile", ["b", "reps"], ["tb"], name="tile_b"),
             helper.make_node("Sub", ["tb", "ta"], ["y"], name="sub")]
    m = make(nodes, [vi("a", I64, [2, 3]), vi("b", I64, [2, 3])],
             [vi("y", I64, [4, 6])], [i64("reps", [2, 2])])
    out, actions = optimize(m)
    assert ops(out) == ["Sub", "Tile"], ops(out)
    assert list(out.graph.node[0].input) == ["b", "a"]
    assert len(fused(actions, 3)) == 1


def fuse_should_not_merge_tiles_with_different_repeats():
    nodes = [helper.make_node("Tile", ["a", "ra"], ["ta"], name="tile_a"),
             helper.make_node("Tile", ["b", "rb"], ["tb"], name="tile_b"),
             helper.make_node("Add", ["ta", "tb"], ["y"], name="add")]
    m = make(nodes, [vi("a", F, [2, 3]), vi("b", F, [4, 1])],
             [vi("y", F, [4, 3])], [i64("ra", [2, 1]), i64("rb", [1, 3])])
    out, actions = optimize(m)
    # tile_b is a broadcast the Add does itself (rule 1); tile_a is not.
    assert ops(out) == ["Tile", "Add"], ops(out)
    assert list(out.graph.node[1].input) == ["ta", "b"]


def fuse_should_combine_rules_through_a_chain():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Add", ["t", "c"], ["s"], name="add"),
             helper.make_node("Mul", ["s", "y"], ["z"], name="mul")]
    m = make(nodes, [vi("x", F, [4, 8]), vi("y", F, [8, 16])], [vi("z", F, [8, 16])],
             [i64("reps", [2, 2]), const("c", np.float32(0.5))])
    out, actions = optimize(m)
    assert ops(out) == ["Add", "Tile", "Mul"], ops(out)
    (s,) = skipped(actions)
    assert "--fuse-split" in s["reason"], s
    out, actions = optimize(m, "--fuse-split")
    assert "Tile" not in ops(out), ops(out)
    assert ops(out).count("Mul") == 1
    assert fused(actions, 3) and fused(actions, 4)


# ---------------------------------------------------------------- rule 4

def fuse_should_leave_tile_add_alone_by_default_and_split_it_on_request():
    src = os.path.join(h.MODELS, "tile_add.onnx")
    m = onnx.load(src)
    out, actions = optimize(m)
    assert ops(out) == ops(m), ops(out)
    (s,) = skipped(actions)
    assert "--fuse-split" in s["reason"], s
    out, actions = optimize(m, "--fuse-split")
    assert "Tile" not in ops(out), ops(out)
    (a,) = fused(actions, 4)
    assert a["bytes_before"] == 1024 * 1024 * 4 and a["bytes_after"] == 0
    assert a["view"]["shape"] == [16, 64, 4, 256]
    assert a["view"]["strides"] == [0, 1024, 0, 4]


def fuse_should_split_when_the_tile_is_the_second_operand():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Div", ["y", "t"], ["z"], name="div")]
    m = make(nodes, [vi("x", F, [3, 1, 4]), vi("y", F, [6, 5, 8])],
             [vi("z", F, [6, 5, 8])], [i64("reps", [2, 5, 2])])
    feeds = {"x": np.arange(1, 13, dtype=np.float32).reshape(3, 1, 4),
             "y": np.random.default_rng(2).standard_normal((6, 5, 8)).astype(np.float32)}
    out, _ = optimize(m, "--fuse-split", feeds=feeds)
    assert "Tile" not in ops(out)
    div = [n for n in out.graph.node if n.op_type == "Div"][0]
    assert producer(out, div.input[1]).input[0] == "x", "x must stay the divisor"


# ---------------------------------------------------------------- rule 5

def _tile_feeding_transpose(opset, reps=(2, 1, 16), bs=(1, 4, 1)):
    nodes = [helper.make_node("Tile", ["b", "reps"], ["t"], name="tile"),
             helper.make_node("Transpose", ["t"], ["z"], name="tr", perm=[2, 1, 0])]
    ts = [d * r for d, r in zip(bs, reps)]
    return make(nodes, [vi("b", F, list(bs))], [vi("z", F, ts[::-1])],
                [i64("reps", list(reps))], opset=opset)


def fuse_should_turn_a_remaining_broadcast_tile_into_expand():
    # the innermost axis alone repeats a size-1 axis 16 times (the outer repeat
    # is across a non-repeated axis): the shape where ORT's Expand wins
    out, actions = optimize(_tile_feeding_transpose(13))
    assert ops(out) == ["Expand", "Transpose"], ops(out)
    (a,) = [a for a in actions if a.get("rule") == 5]
    assert a["action"] == "rewritten" and a["node"] == "tile"
    assert a["view"]["shape"] == [2, 1, 1, 4, 16, 1]
    assert a["view"]["strides"] == [0, 16, 0, 4, 0, 4]
    # Expand(b, repeats) is the Tile exactly: b has size 1 wherever it repeats
    assert out.graph.node[0].input[1] == "reps", out.graph.node[0].input


def fuse_should_keep_a_broadcast_tile_where_ort_runs_expand_slower():
    # few innermost repeats, and the bias shape (outer and inner axes repeated):
    # ORT's Expand is slower than its Tile there, so the Tile stays, with why
    for reps, bs in (([2, 1, 8], [1, 4, 1]), ([1, 8, 16], [4, 1, 1])):
        out, actions = optimize(_tile_feeding_transpose(13, reps, bs))
        assert ops(out) == ["Tile", "Transpose"], (reps, ops(out))
        (s,) = [s for s in skipped(actions) if s.get("node") == "tile"]
        assert "not made Expand (rule 5)" in s["reason"], s


def fuse_should_keep_tile_before_opset_8_where_expand_does_not_exist():
    out, _ = optimize(_tile_feeding_transpose(7))
    assert ops(out) == ["Tile", "Transpose"], ops(out)


# ---------------------------------------------------------------- subgraphs

def fuse_should_rewrite_inside_if_branches():
    then_g = helper.make_graph(
        [helper.make_node("Tile", ["x", "reps"], ["t"], name="then_tile"),
         helper.make_node("Relu", ["t"], ["r"], name="then_relu")],
        "then", [], [vi("r", F, [4, 3])])
    else_g = helper.make_graph(
        [helper.make_node("Tile", ["x", "reps"], ["t2"], name="else_tile"),
         helper.make_node("Neg", ["t2"], ["r2"], name="else_neg")],
        "else", [], [vi("r2", F, [4, 3])])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="if",
                              then_branch=then_g, else_branch=else_g)]
    m = make(nodes, [vi("cond", B, []), vi("x", F, [2, 3])], [vi("y", F, [4, 3])],
             [i64("reps", [2, 1])])
    for c in (True, False):
        feeds = {"cond": np.array(c), "x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2}
        out, actions = optimize(m, feeds=feeds)
        br = {a.name: a.g for a in out.graph.node[0].attribute}
        assert [n.op_type for n in br["then_branch"].node] == ["Relu", "Tile"]
        assert [n.op_type for n in br["else_branch"].node] == ["Neg", "Tile"]
        assert all("graph" in a for a in fused(actions, 2))


def fuse_should_drop_a_symbolic_tile_inside_a_branch_with_repeats_from_outside():
    # the repeats come from Shape(x) in the main graph; the Tile and the Add that
    # broadcasts anyway sit in a branch and read x and the repeats from outside.
    # A long If name makes a graph path longer than the report log copies on
    # its stack: the Tile is still named by the fused Add, not swept apart.
    then_g = helper.make_graph(
        [helper.make_node("Tile", ["pos", "reps"], ["pt"], name="then_tile"),
         helper.make_node("Add", ["x", "pt"], ["r"], name="then_add")],
        "then", [], [vi("r", F, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["r2"], name="else_id")],
                               "else", [], [vi("r2", F, None)])
    for name in ("if", "if_" + "x" * 300):
        nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
                 helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
                 helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
                 helper.make_node("Concat", ["n1", "one", "one"], ["reps"], name="concat",
                                  axis=0),
                 helper.make_node("If", ["cond"], ["y"], name=name,
                                  then_branch=then_g, else_branch=else_g)]
        pos = const("pos", np.linspace(-1, 1, 4 * 8, dtype=np.float32).reshape(1, 4, 8))
        m = make(nodes, [vi("cond", B, []), vi("x", F, ["N", 4, 8])], [vi("y", F, None)],
                 [pos, const("zero", np.array(0, np.int64)), i64("axes0", [0]),
                  i64("one", [1])])
        for c in (True, False):
            feeds = {"cond": np.array(c),
                     "x": np.random.default_rng(5).standard_normal((3, 4, 8)).astype(np.float32)}
            out, actions = optimize(m, feeds=feeds)
            br = {a.name: a.g for a in out.graph.node[-1].attribute}
            assert [n.op_type for n in br["then_branch"].node] == ["Add"], br["then_branch"].node
            (a,) = fused(actions, 1)
            assert a["graph"] == name + "/then_branch", a
            assert a["tile"] == "then_tile" and a["repeats_symbolic"] == ["N", 1, 1], a
            assert not [x for x in actions if x["node"] == "then_tile"], actions


def fuse_should_drop_a_symbolic_tile_inside_a_loop_body():
    # a Loop body adds the batch-repeated table to its carried value each step
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Tile", ["pos", "reps"], ["pt"], name="body_tile"),
         helper.make_node("Add", ["acc_in", "pt"], ["acc_out"], name="body_add")],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("acc_in", F, ["N", 4, 8])],
        [vi("cond_out", B, []), vi("acc_out", F, ["N", 4, 8])])
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1", "one", "one"], ["reps"], name="concat", axis=0),
             helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop", body=body)]
    pos = const("pos", np.linspace(-1, 1, 4 * 8, dtype=np.float32).reshape(1, 4, 8))
    m = make(nodes, [vi("x", F, ["N", 4, 8])], [vi("y", F, ["N", 4, 8])],
             [pos, const("zero", np.array(0, np.int64)), i64("axes0", [0]), i64("one", [1]),
              const("trips", np.array(3, np.int64))])
    feeds = {"x": np.random.default_rng(7).standard_normal((2, 4, 8)).astype(np.float32)}
    out, actions = optimize(m, feeds=feeds)
    (loop,) = [n for n in out.graph.node if n.op_type == "Loop"]
    assert [n.op_type for n in loop.attribute[0].g.node] == ["Identity", "Add"]
    (a,) = fused(actions, 1)
    assert a["graph"] == "loop/body" and a["repeats_symbolic"] == ["N", 1, 1], a


def fuse_should_drop_a_symbolic_tile_inside_a_scan_body():
    # a Scan body adds the batch-repeated table (repeats from outside) to each
    # slice of a sequence scanned along axis 0
    body = helper.make_graph(
        [helper.make_node("Tile", ["pos", "reps"], ["pt"], name="body_tile"),
         helper.make_node("Add", ["x_t", "pt"], ["y_t"], name="body_add"),
         helper.make_node("Identity", ["state_in"], ["state_out"], name="carry")],
        "body", [vi("state_in", F, [1]), vi("x_t", F, ["N", 4, 8])],
        [vi("state_out", F, [1]), vi("y_t", F, ["N", 4, 8])])
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one_i"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1", "one", "one"], ["reps"], name="concat", axis=0),
             helper.make_node("Scan", ["state", "x"], ["state_final", "y"], name="scan",
                              body=body, num_scan_inputs=1)]
    pos = const("pos", np.linspace(-1, 1, 4 * 8, dtype=np.float32).reshape(1, 4, 8))
    m = make(nodes, [vi("x", F, [3, "N", 4, 8])],
             [vi("state_final", F, [1]), vi("y", F, [3, "N", 4, 8])],
             [pos, const("one_i", np.array(1, np.int64)), i64("axes0", [0]), i64("one", [1]),
              const("state", np.zeros([1], np.float32))])
    feeds = {"x": np.random.default_rng(8).standard_normal((3, 2, 4, 8)).astype(np.float32)}
    # the evaluator has no Scan yet: ONNX Runtime is the oracle
    out, actions = optimize(m, feeds=feeds, evaluator=False)
    (scan,) = [n for n in out.graph.node if n.op_type == "Scan"]
    body_ops = [n.op_type for n in [a for a in scan.attribute if a.name == "body"][0].g.node]
    assert body_ops == ["Add", "Identity"], body_ops
    (a,) = fused(actions, 1)
    assert a["graph"] == "scan/body" and a["repeats_symbolic"] == ["N", 1, 1], a


# ---------------------------------------------------------------- random

def _random_model(rng):
    """A Tile followed by a random elementwise chain; operands of every kind the
    rules distinguish (invariant, broadcast, full-size, second Tile), sometimes a
    second reader of an intermediate and a graph output in the middle."""
    rank = int(rng.integers(1, 4))
    d = [int(v) for v in rng.integers(1, 4, size=rank)]
    r = [int(v) for v in rng.integers(1, 4, size=rank)]
    t = [a * b for a, b in zip(d, r)]
    inputs, inits, nodes, outputs = [vi("x", F, d)], [i64("reps", r)], [], []
    nodes.append(helper.make_node("Tile", ["x", "reps"], ["v0"], name="tile"))
    cur, k = "v0", 0
    for step in range(int(rng.integers(1, 5))):
        k += 1
        out = f"v{k}"
        kind = rng.choice(["unary", "invariant", "full", "bias", "tile2"])
        op = str(rng.choice(["Add", "Sub", "Mul", "Max", "Div"]))
        swap = bool(rng.integers(0, 2))
        if kind == "unary":
            nodes.append(helper.make_node(str(rng.choice(["Relu", "Neg", "Abs", "Sigmoid",
                                                          "Tanh"])), [cur], [out]))
        else:
            name = f"o{k}"
            if kind == "invariant":
                shp = [1 if ri > 1 else di for di, ri in zip(d, r)][int(rng.integers(0, rank)):]
                inits.append(const(name, rng.uniform(1, 2, size=shp).astype(np.float32)))
            elif kind == "full":
                inputs.append(vi(name, F, t))
            elif kind == "bias":
                shp = [1 if bool(rng.integers(0, 2)) else ti for ti in t]
                inputs.append(vi(name, F, shp))
            else:
                inputs.append(vi(name + "_x", F, d))
                nodes.append(helper.make_node("Tile", [name + "_x", "reps"], [name]))
            if op == "Div":
                op = "Mul"  # no division by values near 0 from random inputs
            ins = [name, cur] if swap else [cur, name]
            nodes.append(helper.make_node(op, ins, [out]))
        if rng.integers(0, 4) == 0:
            outputs.append(vi(cur, F, None))
        cur = out
    outputs.append(vi(cur, F, None))
    return make(nodes, inputs, outputs, inits)


def fuse_should_match_ort_on_random_tile_chains():
    rng = np.random.default_rng(20261122)
    for i in range(12):
        m = _random_model(rng)
        for extra in ([], ["--fuse-split"]):
            try:
                optimize(m, *extra)
            except AssertionError as e:
                raise AssertionError(f"random model {i} {extra}: {e}\n"
                                     f"{onnx.helper.printable_graph(m.graph)}") from e


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

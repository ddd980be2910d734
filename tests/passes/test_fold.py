#!/usr/bin/python3
"""Model-level tests of the fold pass, one or more per rule.

Each case builds a small model, runs `tileopt optimize --passes fold`, checks the
output with onnx.checker (full check), validates the report against the schema,
and evaluates the original and the folded model on the same seeded inputs in
ONNX Runtime and in tileopt's evaluator: all four must agree.
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


def f32(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.float32), name)


def const_node(out, arr, name=None):
    return helper.make_node("Constant", [], [out], name=name or out,
                            value=numpy_helper.from_array(np.asarray(arr), out))


def make(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "fold_test", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def fold(m, *extra, evaluate=True, feeds=None, passes="fold", ort_src=True):
    """Fold m; check, validate, compare. Returns (folded model, actions)."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        if isinstance(m, str):
            src = m
        else:
            onnx.save(m, src)
        report = h.optimize_checked(src, dst, passes, *extra)
        if evaluate:
            feeds = feeds or h.random_feeds(src, seed=5)
            # ORT has no kernel for some legacy forms: the evaluator stands in
            want = h.run_ort(src, feeds) if ort_src else h.run_tileopt(src, feeds)
            h.assert_close(h.run_ort(dst, feeds), want, what="ORT, folded vs original")
            h.assert_close(h.run_tileopt(src, feeds), want, what="evaluator, original")
            h.assert_close(h.run_tileopt(dst, feeds), want, what="evaluator, folded")
        out = onnx.load(dst)
        actions = [a for p in report["passes"] for a in p["actions"]]
        return out, actions


def ops(m):
    return [n.op_type for n in m.graph.node]


def of(actions, action, op=None):
    return [a for a in actions if a["action"] == action and (op is None or a["op"] == op)]


SHAPE_CHAIN = {"Shape", "Gather", "Unsqueeze", "Concat", "Cast", "Slice", "Squeeze"}


# ------------------------------------------------------------ sample models

def fold_should_fold_the_shape_chain_of_shape_repeats_model():
    m, acts = fold(os.path.join(h.MODELS, "shape_repeats.onnx"))
    assert not SHAPE_CHAIN & set(ops(m)), ops(m)
    # Tile of the run-time input x stays, its repeats now an initializer
    assert ops(m) == ["Tile"], ops(m)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert list(inits[m.graph.node[0].input[1]]) == [2, 1, 1]
    folded = of(acts, "folded")
    assert {a["op"] for a in folded} == {"Shape", "Gather", "Unsqueeze", "Concat"}, folded
    assert all("bytes_after" in a and "bytes_before" in a for a in folded)


def fold_should_leave_the_tile_of_const_tile_model_that_would_grow_the_file():
    # 24 bytes tiled to 144: the fold would write more than it removes
    m, acts = fold(os.path.join(h.MODELS, "const_tile.onnx"))
    assert ops(m) == ["Tile", "Add"], ops(m)
    (skip,) = of(acts, "skipped", "Tile")
    assert skip["rule"] == "fold-limit" and "would grow" in skip["reason"], skip
    assert skip["bytes_written"] > skip["bytes_freed"], skip


def fold_should_fold_away_the_tile_of_const_tile_model_when_growth_is_allowed():
    m, acts = fold(os.path.join(h.MODELS, "const_tile.onnx"), "--fold-limit", "1M")
    assert "Tile" not in ops(m) and "Constant" not in ops(m), ops(m)
    tile = of(acts, "folded", "Tile")
    assert len(tile) == 1 and tile[0]["bytes_after"] > 0, acts
    assert tile[0]["bytes_written"] > tile[0]["bytes_freed"], tile


# ------------------------------------------------------------ size policy

def big_tile_model():
    # 4x4 float tiled 1024x1024 times: a 64 MiB [4096, 4096] constant
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"], name="big"),
             helper.make_node("ReduceSum", ["t"], ["s"], keepdims=0),
             helper.make_node("Add", ["x", "s"], ["y"])]
    return make(nodes, [vi("x", F, [1])], [vi("y", F, [1])],
                [f32("c", np.arange(16).reshape(4, 4) % 3), i64("reps", [1024, 1024])])


def fold_scope_tile_should_leave_a_64mb_tile_unfolded():
    m, acts = fold(big_tile_model(), "--fold-scope", "tile", "--fold-limit", "1M")
    assert "Tile" in ops(m)
    skip = of(acts, "skipped", "Tile")
    assert skip and skip[0]["rule"] == "fold-limit", acts
    assert skip[0]["bytes_after"] == 4096 * 4096 * 4, skip
    assert "--fold-limit" in skip[0]["reason"], skip


def fold_scope_tile_should_fold_a_64mb_tile_with_a_higher_limit():
    m, acts = fold(big_tile_model(), "--fold-scope", "tile", "--fold-limit", "100000000")
    assert "Tile" not in ops(m), ops(m)
    folded = of(acts, "folded", "Tile")
    assert folded and folded[0]["bytes_after"] == 4096 * 4096 * 4, acts


def fold_should_fold_a_transpose_of_a_weight_over_the_limit():
    # 4 MiB in, 4 MiB out: the model does not grow, whatever --fold-limit says
    w = np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024) % 7
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], name="tr", perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["y"])]
    m, acts = fold(make(nodes, [vi("x", F, [2, 1024])], [vi("y", F, [2, 1024])],
                        [f32("w", w)]), "--fold-scope", "all")
    assert ops(m) == ["MatMul"], ops(m)
    done = of(acts, "folded", "Transpose")
    assert done and done[0]["bytes_after"] == 4 << 20, acts


def fold_should_fold_a_chain_whose_intermediate_is_over_the_limit():
    # the 64 MiB Tile is never stored: only the scalar at the chain's end is
    m, acts = fold(big_tile_model(), "--fold-scope", "all")
    assert ops(m) == ["Add"], ops(m)
    tile = of(acts, "folded", "Tile")
    assert tile and tile[0]["rule"] == "inside a constant chain", acts
    assert m.ByteSize() < 10000, m.ByteSize()


def fold_should_keep_a_chain_intermediate_that_a_reader_still_needs():
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"], name="big"),
             helper.make_node("ReduceSum", ["t"], ["s"], keepdims=0),
             helper.make_node("Add", ["x", "s"], ["y"]),
             helper.make_node("Add", ["x2", "t"], ["z"])]
    m, acts = fold(make(nodes, [vi("x", F, [1]), vi("x2", F, [4096, 4096])],
                        [vi("y", F, [1]), vi("z", F, [4096, 4096])],
                        [f32("c", np.arange(16).reshape(4, 4) % 3), i64("reps", [1024, 1024])]),
                   "--fold-scope", "all")
    assert sorted(ops(m)) == ["Add", "Add", "Tile"], ops(m)
    skip = of(acts, "skipped", "Tile")
    assert skip and skip[0]["rule"] == "fold-limit", acts
    assert of(acts, "folded", "ReduceSum"), acts


def growth_model():
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"], name="grow"),
             helper.make_node("Add", ["x", "t"], ["y"])]
    return make(nodes, [vi("x", F, [64, 64])], [vi("y", F, [64, 64])],
                [f32("c", np.ones((4, 4))), i64("reps", [16, 16])])


def fold_should_refuse_growth_over_fold_max_growth():
    m, acts = fold(growth_model(), "--fold-limit", "1M", "--fold-max-growth", "10")
    assert "Tile" in ops(m)
    skip = of(acts, "skipped", "Tile")
    assert skip and skip[0]["rule"] == "fold-max-growth", acts
    assert skip[0]["bytes_after"] == 64 * 64 * 4, skip


def fold_should_fold_growth_within_fold_max_growth():
    m, _ = fold(growth_model(), "--fold-limit", "1M", "--fold-max-growth", "1000")
    assert "Tile" not in ops(m)


# ------------------------------------------------------------ rewrites without values

def fold_should_remove_a_tile_with_all_repeats_one():
    nodes = [helper.make_node("Tile", ["x", "ones"], ["t"], name="noop"),
             helper.make_node("Relu", ["t"], ["y"])]
    m, acts = fold(make(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                        [i64("ones", [1, 1])]))
    assert ops(m) == ["Relu"] and m.graph.node[0].input[0] == "x", ops(m)
    assert of(acts, "eliminated", "Tile"), acts


def fold_should_keep_the_output_name_when_removing_a_tile_graph_output():
    nodes = [helper.make_node("Tile", ["x", "ones"], ["y"], name="noop")]
    m, acts = fold(make(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                        [i64("ones", [1, 1])]))
    assert ops(m) == ["Identity"] and m.graph.output[0].name == "y", ops(m)


def fold_should_merge_a_tile_of_a_tile():
    nodes = [helper.make_node("Tile", ["x", "a"], ["t1"], name="inner"),
             helper.make_node("Tile", ["t1", "b"], ["y"], name="outer")]
    m, acts = fold(make(nodes, [vi("x", F, [2, 3])], [vi("y", F, [4, 9])],
                        [i64("a", [2, 1]), i64("b", [1, 3])]))
    assert ops(m) == ["Tile"], ops(m)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert m.graph.node[0].input[0] == "x"
    assert list(inits[m.graph.node[0].input[1]]) == [2, 3]
    rw = of(acts, "rewritten", "Tile")
    assert rw and rw[0]["repeats"] == [2, 3], acts


def fold_should_not_merge_when_the_inner_tile_has_another_consumer():
    nodes = [helper.make_node("Tile", ["x", "a"], ["t1"], name="inner"),
             helper.make_node("Tile", ["t1", "b"], ["y"], name="outer"),
             helper.make_node("Relu", ["t1"], ["z"])]
    m, _ = fold(make(nodes, [vi("x", F, [2, 3])], [vi("y", F, [4, 9]), vi("z", F, [4, 3])],
                     [i64("a", [2, 1]), i64("b", [1, 3])]))
    assert ops(m).count("Tile") == 2, ops(m)


def fold_should_make_constant_node_repeats_an_initializer():
    nodes = [const_node("reps", np.array([3, 1], dtype=np.int64)),
             helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")]
    m, acts = fold(make(nodes, [vi("x", F, [2, 3])], [vi("y", F, [6, 3])]))
    assert ops(m) == ["Tile"], ops(m)
    inits = {t.name for t in m.graph.initializer}
    assert m.graph.node[0].input[1] in inits


def fold_should_report_tiles_with_run_time_repeats():
    nodes = [helper.make_node("Tile", ["x", "r"], ["y"], name="dyn")]
    m, acts = fold(make(nodes, [vi("x", F, [2, 3]), vi("r", I64, [2])], [vi("y", F, ["a", "b"])]),
                   evaluate=False)
    skip = of(acts, "skipped", "Tile")
    assert skip and "not constant" in skip[0]["reason"], acts


# ------------------------------------------------------------ shapes

def symbolic_model(index):
    # x is [N, 3, 4]: dims 1 and 2 are static, dim 0 is not
    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape"),
             helper.make_node("Gather", ["shp", "idx"], ["d"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["d", "axes"], ["d1"], name="unsq"),
             helper.make_node("Concat", ["ones", "d1", "one"], ["reps"], name="cat", axis=0),
             helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")]
    return make(nodes, [vi("x", F, ["N", 3, 4])], [vi("y", F, ["N", "M", 4])],
                [i64("idx", index), i64("axes", [0]), i64("ones", [1]), i64("one", [1])])


def fold_should_fold_gather_of_static_dims_of_a_symbolic_shape():
    m, acts = fold(symbolic_model(2))
    assert ops(m) == ["Tile"], ops(m)
    folded = of(acts, "folded", "Gather")
    assert folded and folded[0]["rule"] == "static dims of a shape", acts


def fold_should_not_fold_gather_of_a_symbolic_dim():
    m, acts = fold(symbolic_model(0))
    assert "Shape" in ops(m) and "Gather" in ops(m), ops(m)


def fold_should_fold_slice_of_static_dims_of_a_symbolic_shape():
    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape"),
             helper.make_node("Slice", ["shp", "st", "en"], ["tail"], name="slice"),
             helper.make_node("Concat", ["one", "tail"], ["reps"], name="cat", axis=0),
             helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")]
    m, acts = fold(make(nodes, [vi("x", F, ["N", 2, 3])], [vi("y", F, ["N", 4, 9])],
                        [i64("st", [1]), i64("en", [3]), i64("one", [1])]))
    assert ops(m) == ["Tile"], ops(m)


def fold_should_carry_a_partial_shape_down_a_chain_to_a_static_pick():
    # Concat keeps N in its output, so shape inference names a dim there; only
    # the Gather after it picks static entries. The Shape and the Concat must
    # still be evaluated as partial shapes for the Gather to fold from them.
    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape"),
             helper.make_node("Concat", ["shp", "five"], ["ext"], name="ext", axis=0),
             helper.make_node("Gather", ["ext", "idx"], ["picked"], name="gather", axis=0),
             helper.make_node("Concat", ["one", "picked"], ["reps"], name="cat", axis=0),
             helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")]
    m, acts = fold(make(nodes, [vi("x", F, ["N", 3, 4])], [vi("y", F, ["N", 9, 20])],
                        [i64("five", [5]), i64("idx", [1, 3]), i64("one", [1])]))
    assert ops(m) == ["Tile"], ops(m)
    (gather,) = [a for a in of(acts, "folded") if a["node"] == "gather"]
    assert gather["rule"] == "static dims of a shape", gather


def fold_should_fold_a_value_whose_named_dims_cancel():
    # repeats [Div(Mul(N, 4), N), 1]: 4 whatever N is, so the Tile folds to a
    # constant-repeats Tile and the Shape chain goes
    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape"),
             helper.make_node("Gather", ["shp", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Mul", ["n", "four"], ["n4"], name="mul"),
             helper.make_node("Div", ["n4", "n"], ["q"], name="div"),
             helper.make_node("Unsqueeze", ["q", "axes"], ["q1"], name="unsq"),
             helper.make_node("Concat", ["q1", "one"], ["reps"], name="cat", axis=0),
             helper.make_node("Tile", ["w", "reps"], ["y"], name="tile")]
    m, acts = fold(make(nodes, [vi("x", F, ["N", 3]), vi("w", F, [2, 5])], [vi("y", F, [8, 5])],
                        [i64("zero", 0), i64("four", 4), i64("axes", [0]), i64("one", [1])]))
    assert ops(m) == ["Tile"], ops(m)
    (div,) = [a for a in of(acts, "folded") if a["node"] == "div"]
    # written alone, the scalar would take more bytes than the Div frees: it
    # folds with the chain that ends in the repeats
    assert div["rule"] == "inside a constant chain" and div["bytes_written"] == 0, div
    reps = [t for t in m.graph.initializer if t.name == m.graph.node[0].input[1]]
    assert list(numpy_helper.to_array(reps[0])) == [4, 1]


def fold_and_fuse_should_reach_their_fixed_point_in_one_run():
    # Transpose(Neg(Tile(c, [N,1]))): fuse moves Neg onto the constant c, which
    # leaves fold work; fold and fuse run again, and a second optimize changes
    # nothing
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsq"),
             helper.make_node("Concat", ["n1", "one"], ["reps"], name="cat", axis=0),
             helper.make_node("Tile", ["c", "reps"], ["t"], name="tile"),
             helper.make_node("Neg", ["t"], ["neg"], name="neg"),
             helper.make_node("Transpose", ["neg"], ["y"], name="transpose")]
    m = make(nodes, [vi("x", F, ["N", 4])], [vi("y", F, [4, "N"])],
             [f32("c", [[1, 2, 3, 4]]), i64("zero", 0), i64("axes", [0]), i64("one", [1])])
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}
    with h.tempdir() as d:
        src, dst, again = (os.path.join(d, f) for f in ("src.onnx", "dst.onnx", "again.onnx"))
        onnx.save(m, src)
        report = h.optimize_checked(src, dst, "fold,fuse")
        runs = [(p["name"], p.get("round", 1)) for p in report["passes"]]
        assert runs == [("fold", 1), ("fuse", 1), ("fold", 2), ("fuse", 2)], runs
        (neg,) = [a for a in report["passes"][2]["actions"] if a["action"] == "folded"]
        assert neg["op"] == "Neg", report["passes"][2]
        out = onnx.load(dst)
        assert ops(out)[-2:] == ["Tile", "Transpose"] and "Neg" not in ops(out), ops(out)
        h.assert_close(h.run_ort(dst, feeds), h.run_ort(src, feeds), what="ORT")
        h.optimize_checked(dst, again, "fold,fuse")
        with open(dst, "rb") as a, open(again, "rb") as b:
            assert a.read() == b.read(), "a second optimize changed the output"


# ------------------------------------------------------------ scope

def scope_model():
    # a constant subexpression that does not feed a Tile, and one that does
    nodes = [helper.make_node("Add", ["c1", "c2"], ["k"], name="unrelated"),
             helper.make_node("Mul", ["x", "k"], ["y"]),
             helper.make_node("Add", ["r1", "r2"], ["reps"], name="reps_add"),
             helper.make_node("Tile", ["x", "reps"], ["z"], name="tile")]
    return make(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3]), vi("z", F, [4, 3])],
                [f32("c1", [1.5]), f32("c2", [2.0]), i64("r1", [1, 0]), i64("r2", [1, 1])])


def fold_scope_tile_should_fold_only_the_tile_subgraph():
    m, _ = fold(scope_model(), "--fold-scope", "tile")
    assert ops(m) == ["Add", "Mul", "Tile"], ops(m)


def fold_scope_all_should_fold_every_constant_node():
    m, _ = fold(scope_model(), "--fold-scope", "all")
    assert ops(m) == ["Mul", "Tile"], ops(m)


def fold_should_fold_every_constant_node_by_default():
    m, _ = fold(scope_model())
    assert ops(m) == ["Mul", "Tile"], ops(m)


def fold_should_leave_a_generated_weight_generated_by_default():
    # ConstantOfShape([256, 256]) is 20 bytes of node that would become 256 KB
    # of initializer: the default run never grows the file
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["w"], name="gen",
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    m = make(nodes, [vi("x", F, [256, 256])], [vi("y", F, [256, 256])], [i64("shape", [256, 256])])
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        report = h.optimize_checked(src, dst, "fold")
        assert os.path.getsize(dst) <= os.path.getsize(src)
    acts = [a for p in report["passes"] for a in p["actions"]]
    (skip,) = of(acts, "skipped", "ConstantOfShape")
    assert skip["rule"] == "fold-limit" and "would grow" in skip["reason"], skip
    assert skip["bytes_written"] >= 256 * 256 * 4 > skip["bytes_freed"], skip
    out, _ = fold(m)
    assert ops(out) == ["ConstantOfShape", "Add"], ops(out)


def fold_should_keep_graph_output_names_of_folded_values():
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Relu", ["x"], ["y"])]
    # the Identity that keeps the name costs more than the Shape: allowed here
    m, _ = fold(make(nodes, [vi("x", F, [2, 3])], [vi("s", I64, [2]), vi("y", F, [2, 3])]),
                "--fold-limit", "1K")
    assert [o.name for o in m.graph.output] == ["s", "y"]
    assert "Shape" not in ops(m), ops(m)


def fold_should_not_fold_random_ops():
    nodes = [helper.make_node("RandomUniform", [], ["r"], shape=[2, 3], seed=1.0),
             helper.make_node("Add", ["x", "r"], ["y"])]
    m, _ = fold(make(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])]), "--fold-scope", "all",
                evaluate=False)
    assert "RandomUniform" in ops(m), ops(m)


# ------------------------------------------------------------ subgraphs

def fold_should_fold_inside_if_bodies_reading_outer_constants():
    body_nodes = [helper.make_node("Shape", ["x"], ["bs"], name="b_shape"),
                  helper.make_node("Gather", ["bs", "outer_idx"], ["bd"], name="b_gather"),
                  helper.make_node("Unsqueeze", ["bd", "outer_axes"], ["bd1"], name="b_unsq"),
                  helper.make_node("Concat", ["bd1", "outer_one"], ["breps"], name="b_cat",
                                   axis=0),
                  helper.make_node("Tile", ["x", "breps"], ["then_out"], name="b_tile")]
    then_g = helper.make_graph(body_nodes, "then", [], [vi("then_out", F, None)])
    else_g = helper.make_graph([helper.make_node("Tile", ["x", "outer_reps"], ["else_out"],
                                                 name="e_tile")],
                               "else", [], [vi("else_out", F, None)])
    nodes = [const_node("outer_reps", np.array([2, 1], dtype=np.int64), name="k_reps"),
             helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g,
                              else_branch=else_g)]
    m = make(nodes, [vi("cond", TensorProto.BOOL, []), vi("x", F, [2, 3])],
             [vi("y", F, [4, 3])],
             [i64("outer_idx", 0), i64("outer_axes", [0]), i64("outer_one", [1])])
    for c in (True, False):
        feeds = {"cond": np.array(c), "x": np.arange(6, dtype=np.float32).reshape(2, 3)}
        out, acts = fold(m, feeds=feeds)
    then_ops = [n.op_type for n in out.graph.node[-1].attribute[0].g.node]
    else_ops = [n.op_type for n in out.graph.node[-1].attribute[1].g.node]
    assert then_ops == ["Tile"] and else_ops == ["Tile"], (then_ops, else_ops)
    assert any(a.get("graph") for a in of(acts, "folded")), acts


def fold_should_fold_outer_shape_chains_that_feed_a_tile_in_a_body():
    # the repeats of the Tile inside the If come from a Shape chain outside it
    then_g = helper.make_graph([helper.make_node("Tile", ["x", "reps"], ["t_out"],
                                                 name="inner_tile")],
                               "then", [], [vi("t_out", F, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["x2"], ["e_out"])],
                               "else", [], [vi("e_out", F, None)])
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "idx"], ["d"], name="gather", axis=0),
             helper.make_node("Concat", ["d", "one"], ["reps"], name="cat", axis=0),
             helper.make_node("Concat", ["x", "x"], ["x2"], name="x2", axis=0),
             helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g,
                              else_branch=else_g)]
    m = make(nodes, [vi("cond", TensorProto.BOOL, []), vi("x", F, [2, 3])],
             [vi("y", F, [4, 3])], [i64("idx", [0]), i64("one", [1])])
    for c in (True, False):
        feeds = {"cond": np.array(c), "x": np.arange(6, dtype=np.float32).reshape(2, 3)}
        out, acts = fold(m, feeds=feeds)
    assert ops(out) == ["Concat", "If"], ops(out)
    inner = [a.g for a in out.graph.node[-1].attribute if a.name == "then_branch"][0]
    inits = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}
    assert list(inits[inner.node[0].input[1]]) == [2, 1], inits


def fold_should_fold_inside_loop_bodies():
    body = helper.make_graph(
        [helper.make_node("Shape", ["v_in"], ["bs"], name="b_shape"),
         helper.make_node("Gather", ["bs", "idx"], ["bd"], name="b_gather", axis=0),
         helper.make_node("Concat", ["one", "bd"], ["breps"], name="b_cat", axis=0),
         helper.make_node("Tile", ["x", "breps"], ["t"], name="b_tile"),
         helper.make_node("Add", ["v_in", "t"], ["v_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", F, [2, 6])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [2, 6])])
    nodes = [helper.make_node("Loop", ["trip", "", "v0"], ["v"], name="loop", body=body)]
    m = make(nodes, [vi("x", F, [2, 3]), vi("v0", F, [2, 6])], [vi("v", F, [2, 6])],
             [i64("trip", 3), i64("idx", [0]), i64("one", [1])])
    out, acts = fold(m)
    body_ops = [n.op_type for n in out.graph.node[0].attribute[0].g.node]
    # Shape(v_in) is static ([2,6] declared), so the chain folds: repeats [1,2]
    assert body_ops == ["Tile", "Add", "Identity"], body_ops


def fold_should_fold_after_upgrading_a_legacy_tile1_model():
    m, acts = fold(os.path.join(h.MODELS, "legacy_tile1.onnx"), passes="upgrade,fold",
                   ort_src=False)
    assert all(n.op_type != "Tile" or len(n.input) == 2 for n in m.graph.node), ops(m)


def fold_should_treat_initializers_of_ir3_models_as_constants():
    # before IR 4 every initializer is also listed as a graph input
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"], name="tile"),
             helper.make_node("Add", ["x", "t"], ["y"])]
    m = make(nodes, [vi("x", F, [4, 6]), vi("c", F, [2, 3]), vi("reps", I64, [2])],
             [vi("y", F, [4, 6])], [f32("c", np.arange(6).reshape(2, 3)), i64("reps", [2, 2])],
             opset=8)
    m.ir_version = 3
    # the inputs stay listed, so nothing is freed: growth has to be allowed
    out, acts = fold(m, "--fold-limit", "1M", feeds={"x": np.ones((4, 6), dtype=np.float32)})
    assert ops(out) == ["Add"], ops(out)
    assert of(acts, "folded", "Tile"), acts


def fold_should_keep_runtime_overridable_initializers_unfolded():
    # IR >= 4: an initializer that is also a graph input may be fed at run time
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"], name="tile"),
             helper.make_node("Add", ["x", "t"], ["y"])]
    m = make(nodes, [vi("x", F, [4, 6]), vi("c", F, [2, 3])], [vi("y", F, [4, 6])],
             [f32("c", np.arange(6).reshape(2, 3)), i64("reps", [2, 2])])
    out, _ = fold(m, feeds={"x": np.ones((4, 6), dtype=np.float32),
                            "c": np.ones((2, 3), dtype=np.float32)}, evaluate=False)
    assert "Tile" in ops(out), ops(out)


def fold_should_sweep_value_info_of_removed_values():
    m = onnx.shape_inference.infer_shapes(onnx.load(os.path.join(h.MODELS, "shape_repeats.onnx")))
    assert {v.name for v in m.graph.value_info} >= {"shp", "n", "n1", "reps"}
    out, _ = fold(m)
    left = {v.name for v in out.graph.value_info}
    assert not left & {"shp", "n", "n1", "reps"}, left


def fold_should_leave_a_broadcast_tile_to_its_broadcasting_reader():
    # bias [1,C,1,1] tiled to [N,C,H,W] and added to x [N,C,H,W]: Add broadcasts
    m, acts = fold(os.path.join(h.MODELS, "bias_tile.onnx"))
    assert "Tile" in ops(m), ops(m)
    skip = of(acts, "skipped", "Tile")
    assert skip and skip[0]["rule"] == "broadcast", acts


def fold_should_fold_a_size_one_tile_its_reader_would_not_broadcast():
    # the other operand is [1,1]: without the Tile the Add result would shrink
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"], name="tile"),
             helper.make_node("Add", ["x", "t"], ["y"])]
    m, acts = fold(make(nodes, [vi("x", F, [1, 1])], [vi("y", F, [3, 4])],
                        [f32("c", [[1.5]]), i64("reps", [3, 4])]))
    assert "Tile" not in ops(m), ops(m)


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

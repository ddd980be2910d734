#!/usr/bin/python3
"""Model-level tests of the simplification passes (passes/eliminate/), each rule
and the cases it must leave alone.

Each case builds a small model, runs `tileopt optimize --passes PASS`, checks the
output with onnx.checker (full check), validates the report against the schema,
and evaluates the original and the output on the same seeded inputs in ONNX
Runtime and in tileopt's evaluator: all four must agree.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
vi, i64 = h.vi, h.i64


def f32(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.float32), name)


def make(nodes, inputs, outputs, inits=(), opset=13, ir=None):
    g = helper.make_graph(nodes, "eliminate_test", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    if ir:
        m.ir_version = ir
    return m


def run(m, passes, *extra, feeds=None):
    """Optimize m with passes; check, validate, compare. Returns (model, actions)."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        report = h.optimize_checked(src, dst, passes, *extra)
        feeds = feeds or h.random_feeds(src, seed=7)
        want = h.run_ort(src, feeds)
        h.assert_close(h.run_ort(dst, feeds), want, what="ORT, output vs original")
        h.assert_close(h.run_tileopt(src, feeds), want, what="evaluator, original")
        h.assert_close(h.run_tileopt(dst, feeds), want, what="evaluator, output")
        out = onnx.load(dst)
        return out, [a for p in report["passes"] for a in p["actions"]]


def ops(g):
    return [n.op_type for n in (g.graph.node if hasattr(g, "graph") else g.node)]


def of(actions, action, op=None):
    return [a for a in actions if a["action"] == action and (op is None or a["op"] == op)]


def node(op, ins, outs, name=None, **attrs):
    return helper.make_node(op, ins, outs, name=name or outs[0], **attrs)


X = vi("x", F, [2, 3, 4])
Y = vi("y", F, [2, 3, 4])


# ------------------------------------------------------------ eliminate_identity

def eliminate_identity_should_remove_an_identity_between_two_nodes():
    m = make([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["i"]),
              node("Neg", ["i"], ["y"])], [X], [Y])
    out, acts = run(m, "eliminate_identity")
    assert ops(out) == ["Relu", "Neg"], ops(out)
    (e,) = of(acts, "eliminated", "Identity")
    assert e["rule"] == "Identity", e


def eliminate_identity_should_hand_a_graph_output_name_to_the_producer():
    m = make([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["y"])], [X], [Y])
    out, _ = run(m, "eliminate_identity")
    assert ops(out) == ["Relu"] and out.graph.node[0].output[0] == "y", out.graph


def eliminate_identity_should_not_remove_an_identity_from_a_graph_input_to_an_output():
    # removing it would rename the output (or make x an output itself)
    m = make([node("Identity", ["x"], ["y"])], [X], [Y])
    out, acts = run(m, "eliminate_identity")
    assert ops(out) == ["Identity"], ops(out)
    (s,) = of(acts, "skipped", "Identity")
    assert "graph output" in s["reason"], s


def eliminate_identity_should_not_merge_two_graph_outputs():
    m = make([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["y"])], [X],
             [vi("r", F, [2, 3, 4]), Y])
    out, acts = run(m, "eliminate_identity")
    assert ops(out) == ["Relu", "Identity"], ops(out)
    assert [o.name for o in out.graph.output] == ["r", "y"]
    assert of(acts, "skipped", "Identity"), acts


def if_model(cond_input, then_nodes, then_out, else_nodes, else_out, inits=()):
    then_g = helper.make_graph(then_nodes, "then", [], [then_out])
    else_g = helper.make_graph(else_nodes, "else", [], [else_out])
    n = helper.make_node("If", [cond_input], ["y"], name="if", then_branch=then_g,
                         else_branch=else_g)
    return n


def eliminate_identity_should_work_inside_if_branches():
    n = if_model("c", [node("Identity", ["x"], ["t1"]), node("Relu", ["t1"], ["t"])],
                 vi("t", F, [2, 3, 4]), [node("Neg", ["x"], ["e"])], vi("e", F, [2, 3, 4]))
    m = make([n], [vi("c", B, []), X], [Y])
    out, acts = run(m, "eliminate_identity")
    (then_g,) = [a.g for a in out.graph.node[0].attribute if a.name == "then_branch"]
    assert ops(then_g) == ["Relu"], ops(then_g)
    (e,) = of(acts, "eliminated", "Identity")
    assert e["graph"].startswith("if/"), e


# ------------------------------------------------------------- eliminate_dropout

def eliminate_dropout_should_remove_a_dropout_at_inference():
    m = make([node("Dropout", ["x"], ["d"], ratio=0.5), node("Relu", ["d"], ["y"])], [X], [Y],
             opset=11)
    out, acts = run(m, "eliminate_dropout")
    assert ops(out) == ["Relu"], ops(out)
    assert of(acts, "eliminated", "Dropout"), acts


def eliminate_dropout_should_remove_one_with_a_constant_false_training_mode():
    m = make([node("Dropout", ["x", "r", "t"], ["d"]), node("Relu", ["d"], ["y"])], [X], [Y],
             [f32("r", 0.5), numpy_helper.from_array(np.array(False), "t")])
    out, _ = run(m, "eliminate_dropout")
    assert ops(out) == ["Relu"], ops(out)


def eliminate_dropout_should_keep_a_dropout_in_training_mode():
    # a constant true training_mode drops at random (ratio 0 here, so that the
    # original and the output can be compared): it is no no-op
    m = make([node("Dropout", ["x", "r", "t"], ["d"]), node("Relu", ["d"], ["y"])], [X], [Y],
             [f32("r", 0.0), numpy_helper.from_array(np.array(True), "t")])
    out, acts = run(m, "eliminate_dropout")
    assert "Dropout" in ops(out), ops(out)
    (s,) = of(acts, "skipped", "Dropout")
    assert "training" in s["reason"], s


def eliminate_dropout_should_keep_a_dropout_whose_mask_is_read():
    m = make([node("Dropout", ["x"], ["d", "mask"]), node("Relu", ["d"], ["y"])], [X],
             [Y, vi("mask", B, [2, 3, 4])])
    out, acts = run(m, "eliminate_dropout")
    assert "Dropout" in ops(out), ops(out)
    (s,) = of(acts, "skipped", "Dropout")
    assert "mask" in s["reason"], s


def eliminate_dropout_should_keep_a_dropout_whose_training_mode_is_an_input():
    m = make([node("Dropout", ["x", "", "t"], ["d"]), node("Relu", ["d"], ["y"])],
             [X, vi("t", B, [])], [Y])
    out, acts = run(m, "eliminate_dropout", feeds={"x": np.ones((2, 3, 4), np.float32),
                                                   "t": np.array(False)})
    assert "Dropout" in ops(out), ops(out)
    (s,) = of(acts, "skipped", "Dropout")
    assert "run time" in s["reason"], s


# ----------------------------------------------------------------- eliminate_nop

def nop(op, ins, inits=(), outshape=(2, 3, 4), opset=13, **attrs):
    m = make([node(op, ["x"] + ins, ["n"], name="nop", **attrs), node("Relu", ["n"], ["y"])],
             [X], [vi("y", F, list(outshape))], inits, opset=opset)
    return run(m, "eliminate_nop")


def eliminate_nop_should_remove_each_no_op():
    cases = [
        ("Transpose", [], (), {"perm": [0, 1, 2]}),
        ("Slice", ["s", "e"], (i64("s", [0, 0]), i64("e", [2, 2**62])), {}),
        ("Slice", ["s", "e", "a"], (i64("s", [-3]), i64("e", [9]), i64("a", [1])), {}),
        ("Pad", ["p"], (i64("p", [0] * 6),), {}),
        ("Cast", [], (), {"to": F}),
        ("Concat", [], (), {"axis": 1}),
        ("Reshape", ["sh"], (i64("sh", [2, 3, 4]),), {}),
        ("Expand", ["sh"], (i64("sh", [1, 3, 1]),), {}),
        ("Unsqueeze", [], (), {}),
    ]
    for op, ins, inits, attrs in cases[:-1]:
        out, acts = nop(op, ins, inits, **attrs)
        assert ops(out) == ["Relu"], (op, ops(out))
        (e,) = of(acts, "eliminated", op)
        assert e["rule"], e


def eliminate_nop_should_remove_a_transpose_that_moves_only_axes_of_size_1():
    m = make([node("Transpose", ["x"], ["n"], perm=[1, 0, 2]), node("Relu", ["n"], ["y"])],
             [vi("x", F, [1, 1, 4])], [vi("y", F, [1, 1, 4])])
    out, acts = run(m, "eliminate_nop")
    assert ops(out) == ["Relu"], ops(out)


def eliminate_nop_should_keep_ops_that_change_their_input():
    cases = [
        ("Transpose", [], (), (2, 4, 3), {"perm": [0, 2, 1]}),
        ("Slice", ["s", "e"], (i64("s", [1]), i64("e", [2])), (1, 3, 4), {}),
        ("Slice", ["s", "e", "a", "st"], (i64("s", [-1]), i64("e", [-2**62]), i64("a", [2]),
                                         i64("st", [-1])), (2, 3, 4), {}),
        ("Pad", ["p"], (i64("p", [0, 0, 1, 0, 0, 0]),), (2, 3, 5), {}),
        ("Cast", [], (), (2, 3, 4), {"to": TensorProto.DOUBLE}),
        ("Reshape", ["sh"], (i64("sh", [2, 4, 3]),), (2, 4, 3), {}),
    ]
    for op, ins, inits, shape, attrs in cases:
        if op == "Cast":
            m = make([node("Cast", ["x"], ["n"], name="nop", **attrs),
                      node("Cast", ["n"], ["y"], to=F)], [X], [Y])
            out, acts = run(m, "eliminate_nop")
            assert ops(out) == ["Cast", "Cast"], ops(out)
            continue
        out, acts = nop(op, ins, inits, outshape=shape, **attrs)
        assert ops(out) == [op, "Relu"], (op, ops(out))
        assert not of(acts, "eliminated", op), acts


def eliminate_nop_should_keep_a_no_op_transpose_from_a_graph_input_to_an_output():
    # the output would have to be renamed, or the input named as an output
    m = make([node("Transpose", ["x"], ["y"], perm=[0, 1, 2])], [X], [Y])
    out, acts = run(m, "eliminate_nop")
    assert ops(out) == ["Transpose"], ops(out)
    (s,) = of(acts, "skipped", "Transpose")
    assert "graph output" in s["reason"], s


def eliminate_nop_should_move_a_graph_output_name_onto_the_producer():
    m = make([node("Relu", ["x"], ["r"]), node("Transpose", ["r"], ["y"], perm=[0, 1, 2])],
             [X], [Y])
    out, _ = run(m, "eliminate_nop")
    assert ops(out) == ["Relu"] and out.graph.node[0].output[0] == "y", out.graph


def eliminate_nop_should_keep_a_squeeze_whose_dim_may_not_be_1():
    m = make([node("Squeeze", ["x", "a"], ["n"]), node("Relu", ["n"], ["y"])],
             [vi("x", F, [2, "d", 4])], [vi("y", F, [2, 4])], [i64("a", [1])])
    out, _ = run(m, "eliminate_nop", feeds={"x": np.ones((2, 1, 4), np.float32)})
    assert ops(out) == ["Squeeze", "Relu"], ops(out)


def eliminate_nop_should_remove_a_reshape_or_flatten_that_keeps_every_dim_by_its_form():
    # no dim is known: the form alone says every dim comes back
    for op, ins, inits, xshape, attrs in (
            ("Reshape", ["s"], [i64("s", [0, 0, 0])], [None, None, None], {}),
            ("Reshape", ["s"], [i64("s", [-1, 0, 4])], [None, 3, 4], {}),
            ("Reshape", ["s"], [i64("s", [-1])], [None], {}),
            ("Flatten", [], [], [None, None], {"axis": 1}),
            ("Flatten", [], [], ["a", None], {"axis": -1})):
        m = make([node(op, ["x"] + ins, ["n"], name="nop", **attrs), node("Relu", ["n"], ["y"])],
                 [vi("x", F, xshape)], [vi("y", F, [None] * len(xshape))], inits)
        out, acts = run(m, "eliminate_nop", feeds={"x": np.ones((2, 3, 4)[:len(xshape)],
                                                                np.float32)})
        assert ops(out) == ["Relu"], (op, xshape, ops(out))
        assert of(acts, "eliminated", op), acts


def eliminate_nop_should_keep_a_reshape_or_flatten_whose_form_may_change_a_dim():
    # -1 beside a copied dim that may be 0 is undefined there; 0 with allowzero
    # is a size (x must be empty); a 3-D Flatten joins two dims
    for op, ins, inits, xshape, opset, attrs in (
            ("Reshape", ["s"], [i64("s", [0, 0, -1])], [None, None, None], 13, {}),
            ("Reshape", ["s"], [i64("s", [0, 3, 4])], [None, 3, 4], 14, {"allowzero": 1}),
            ("Flatten", [], [], [None, None, None], 13, {"axis": 1})):
        ys = [None] * (2 if op == "Flatten" else 3)
        m = make([node(op, ["x"] + ins, ["n"], name="nop", **attrs), node("Relu", ["n"], ["y"])],
                 [vi("x", F, xshape)], [vi("y", F, ys)], inits, opset=opset)
        x = np.ones((0, 3, 4) if opset == 14 else (2, 3, 4), np.float32)
        out, acts = run(m, "eliminate_nop", feeds={"x": x})
        assert ops(out) == [op, "Relu"], (op, xshape, ops(out))


def eliminate_nop_should_remove_arithmetic_by_a_neutral_constant():
    # either operand of Add and Mul; a scalar or all-1 dims broadcast to x's shape,
    # known or not; NaN, the infinities and -0 go through as they are (but +0 added)
    x = np.array([[[np.nan, np.inf, -np.inf, -0.0], [1.5, -2, 3e38, 1e-40],
                   [0, 1, 2, 3]]] * 2, np.float32)
    cases = [
        ("Add", ["x", "k"], f32("k", 0.0)), ("Add", ["k", "x"], f32("k", [[[0.0]]])),
        ("Sub", ["x", "k"], f32("k", [0.0])), ("Mul", ["k", "x"], f32("k", 1.0)),
        ("Div", ["x", "k"], f32("k", 1.0)),
        ("Pow", ["x", "k"], f32("k", 1.0)),
    ]
    for xshape in ([2, 3, 4], [None, None, 4]):
        for op, ins, k in cases:
            m = make([node(op, ins, ["n"], name="nop"), node("Neg", ["n"], ["y"])],
                     [vi("x", F, xshape)], [vi("y", F, xshape)], [k])
            out, acts = run(m, "eliminate_nop", feeds={"x": x})
            assert ops(out) == ["Neg"], (op, ins, xshape, ops(out))
            (e,) = of(acts, "eliminated", op)
            assert e["rule"], e


def eliminate_nop_should_keep_arithmetic_that_changes_or_widens_its_input():
    cases = [
        # a constant that is not neutral, or not the same everywhere
        ("Add", ["x", "k"], f32("k", 1e-30), [2, 3, 4], None),
        ("Mul", ["x", "k"], f32("k", [1.0, 1, 1, -1]), [2, 3, 4], None),
        # the neutral constant on the side where it is not neutral: 0 - x, 1 / x
        ("Sub", ["k", "x"], f32("k", 0.0), [2, 3, 4], None),
        ("Div", ["k", "x"], f32("k", 1.0), [2, 3, 4], None),
        ("Pow", ["k", "x"], f32("k", 1.0), [2, 3, 4], None),
        # a one-element constant of more dims broadcasts x to a larger shape
        ("Mul", ["x", "k"], f32("k", np.ones((1, 1, 1, 1))), [1, 2, 3, 4], "broadcast"),
        # a vector of 1s or 0s is a parameter ONNX Runtime fuses with its neighbours
        ("Mul", ["x", "k"], f32("k", [1.0, 1, 1, 1]), [2, 3, 4], "several elements"),
        ("Add", ["x", "k"], f32("k", np.zeros((2, 3, 4))), [2, 3, 4], "several elements"),
    ]
    for op, ins, k, yshape, why in cases:
        m = make([node(op, ins, ["n"], name="nop"), node("Neg", ["n"], ["y"])],
                 [vi("x", F, [2, 3, 4])], [vi("y", F, yshape)], [k])
        out, acts = run(m, "eliminate_nop")
        assert ops(out) == [op, "Neg"], (op, ins, ops(out))
        assert not of(acts, "eliminated", op), acts
        if why:
            (s,) = of(acts, "skipped", op)
            assert why in s["reason"], (why, s)


# ----------------------------------------------------------- eliminate_idempotent

def eliminate_idempotent_should_remove_the_second_of_two_relus():
    m = make([node("Relu", ["x"], ["a"]), node("Relu", ["a"], ["b"]), node("Neg", ["b"], ["y"])],
             [X], [Y])
    out, acts = run(m, "eliminate_idempotent")
    assert ops(out) == ["Relu", "Neg"], ops(out)
    assert of(acts, "eliminated", "Relu"), acts


def eliminate_idempotent_should_keep_two_different_ops():
    m = make([node("Neg", ["x"], ["a"]), node("Abs", ["a"], ["b"]), node("Relu", ["b"], ["y"])],
             [X], [Y])
    out, _ = run(m, "eliminate_idempotent")
    assert ops(out) == ["Neg", "Abs", "Relu"], ops(out)


# --------------------------------------------------- eliminate_nop_monotone_argmax

def argmax_of(op, arg="ArgMax", opset=13, xshape=(2, 3, 4), op_attrs=None, **attrs):
    yshape = list(xshape)
    yshape[attrs.get("axis", 0)] = 1
    return make([node(op, ["x"], ["f"], name="f", **(op_attrs or {})),
                 node(arg, ["f"], ["y"], name="am", **attrs)],
                [vi("x", F, list(xshape))], [vi("y", I64, yshape)], opset=opset)


POSITIVE = {"x": np.random.default_rng(5).uniform(0.1, 3, (2, 3, 4)).astype(np.float32)}


def eliminate_nop_monotone_argmax_should_read_through_exp_log_and_sqrt():
    for op, arg, feeds in (("Exp", "ArgMax", None), ("Exp", "ArgMin", None),
                           ("Log", "ArgMax", POSITIVE), ("Sqrt", "ArgMin", POSITIVE)):
        out, acts = run(argmax_of(op, arg, axis=1), "eliminate_nop_monotone_argmax",
                        feeds=feeds)
        assert ops(out) == [arg] and out.graph.node[0].input[0] == "x", (op, ops(out))
        (r,) = of(acts, "rewritten", arg)
        assert r["from"] == "f", r
        (e,) = of(acts, "eliminated", op)


def eliminate_nop_monotone_argmax_should_read_through_a_softmax_over_the_same_reduction():
    # from opset 13 the same axis; before, any axis at or after the one the
    # Softmax coerces its input to 2-D at (one row, one denominator)
    cases = [("Softmax", 13, {"axis": 2}, {}), ("LogSoftmax", 13, {"axis": -1}, {"axis": 2}),
             ("Softmax", 13, {"axis": 1}, {"axis": -2}), ("Softmax", 11, {"axis": 1}, {}),
             ("Softmax", 11, {"axis": 2}, {}), ("LogSoftmax", 11, {"axis": 1}, {"axis": 1}),
             ("Softmax", 9, {"axis": 2}, {"axis": 2})]
    for op, opset, am, sm in cases:
        out, acts = run(argmax_of(op, opset=opset, op_attrs=sm, **am),
                        "eliminate_nop_monotone_argmax")
        assert ops(out) == ["ArgMax"], (op, opset, am, sm, ops(out))
        assert of(acts, "rewritten", "ArgMax"), acts


def eliminate_nop_monotone_argmax_should_keep_a_softmax_over_another_reduction():
    cases = [("Softmax", 13, {"axis": 1}, {}), ("LogSoftmax", 13, {"axis": 0}, {"axis": 1}),
             ("Softmax", 11, {"axis": 0}, {}), ("Softmax", 11, {"axis": 1}, {"axis": 2})]
    for op, opset, am, sm in cases:
        out, acts = run(argmax_of(op, opset=opset, op_attrs=sm, **am),
                        "eliminate_nop_monotone_argmax")
        assert ops(out) == [op, "ArgMax"], (op, opset, am, sm, ops(out))
        (s,) = of(acts, "skipped", "ArgMax")
        assert "axis" in s["reason"], s


def eliminate_nop_monotone_argmax_should_keep_an_op_read_elsewhere_or_that_saturates():
    m = argmax_of("Exp", axis=1)
    m.graph.output.append(vi("f", F, [2, 3, 4]))
    out, acts = run(m, "eliminate_nop_monotone_argmax")
    assert ops(out) == ["Exp", "ArgMax"], ops(out)
    (s,) = of(acts, "skipped", "ArgMax")
    assert "read elsewhere" in s["reason"], s
    # Tanh(10) and Tanh(20) are both 1 in float: the original's index is the
    # first, the input's the second
    for op in ("Tanh", "Sigmoid", "Erf"):
        out, acts = run(argmax_of(op, axis=1), "eliminate_nop_monotone_argmax")
        assert ops(out) == [op, "ArgMax"], ops(out)
        (s,) = of(acts, "skipped", "ArgMax")
        assert "saturates" in s["reason"], s


def eliminate_nop_monotone_argmax_should_leave_an_argmax_of_a_non_monotone_op_alone():
    for op in ("Relu", "Abs", "Neg"):
        out, acts = run(argmax_of(op, axis=1), "eliminate_nop_monotone_argmax")
        assert ops(out) == [op, "ArgMax"] and not acts, (ops(out), acts)


def eliminate_nop_monotone_argmax_should_pick_the_true_maximum_where_exp_rounds_a_tie():
    # exp(1e-9) and exp(2e-9) are both 1.0f: the original's ArgMax picks the
    # first of the tie, the rewritten one the larger input. The decision
    # (docs/passes.md): the index of the true maximum is as right
    m = argmax_of("Exp", xshape=(1, 2), axis=1)
    x = np.array([[1e-9, 2e-9]], np.float32)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        h.optimize_checked(src, dst, "eliminate_nop_monotone_argmax")
        assert h.run_ort(src, {"x": x})[0].tolist() == [[0]]
        assert h.run_ort(dst, {"x": x})[0].tolist() == [[1]]
        assert h.run_tileopt(dst, {"x": x})[0].tolist() == [[1]]


# -------------------------------------------------------------------- eliminate_if

def eliminate_if_should_inline_the_branch_a_constant_condition_picks():
    for cond, want in ((True, ["Relu", "Neg"]), (False, ["Neg", "Abs"])):
        n = if_model("c", [node("Relu", ["x"], ["t1"]), node("Neg", ["t1"], ["t"])],
                     vi("t", F, [2, 3, 4]),
                     [node("Neg", ["x"], ["e1"]), node("Abs", ["e1"], ["e"])],
                     vi("e", F, [2, 3, 4]))
        m = make([n], [X], [Y], [numpy_helper.from_array(np.array(cond), "c")])
        out, acts = run(m, "eliminate_if")
        assert ops(out) == want, ops(out)
        assert [o.name for o in out.graph.output] == ["y"]
        (e,) = of(acts, "eliminated", "If")
        assert e["branch"] == ("then_branch" if cond else "else_branch"), e


def eliminate_if_should_inline_a_branch_with_initializers_and_reused_names():
    # the branch's names ("t", "w") are defined in the outer graph too: the
    # inlined copies get fresh ones
    then_g = helper.make_graph([node("Add", ["x", "w"], ["t"])], "then", [],
                               [vi("t", F, [2, 3, 4])], initializer=[f32("w", np.ones(4))])
    else_g = helper.make_graph([node("Neg", ["x"], ["e"])], "else", [], [vi("e", F, [2, 3, 4])])
    n = helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g,
                         else_branch=else_g)
    m = make([n, node("Mul", ["y", "w"], ["t"]), node("Relu", ["t"], ["z"])], [X],
             [vi("z", F, [2, 3, 4])],
             [numpy_helper.from_array(np.array(True), "c"), f32("w", np.full(4, 3))])
    out, _ = run(m, "eliminate_if")
    assert ops(out) == ["Add", "Mul", "Relu"], ops(out)
    assert len(out.graph.initializer) == 2, out.graph.initializer


def eliminate_if_should_keep_an_if_whose_condition_is_an_input():
    n = if_model("c", [node("Relu", ["x"], ["t"])], vi("t", F, [2, 3, 4]),
                 [node("Neg", ["x"], ["e"])], vi("e", F, [2, 3, 4]))
    m = make([n], [vi("c", B, []), X], [Y])
    out, acts = run(m, "eliminate_if")
    assert ops(out) == ["If"], ops(out)
    assert not of(acts, "eliminated"), acts


# ------------------------------------------------- eliminate_duplicate_initializers

def eliminate_duplicate_initializers_should_merge_equal_constants():
    m = make([node("Add", ["x", "a"], ["s"]), node("Mul", ["s", "b"], ["y"])], [X], [Y],
             [f32("a", np.full((4,), 2)), f32("b", np.full((4,), 2))])
    out, acts = run(m, "eliminate_duplicate_initializers")
    assert [t.name for t in out.graph.initializer] == ["a"], out.graph.initializer
    assert out.graph.node[1].input[1] == "a"
    assert of(acts, "rewritten", "Mul"), acts


def eliminate_duplicate_initializers_should_keep_constants_that_differ_in_bits_or_type():
    m = make([node("Add", ["x", "a"], ["s"]), node("Mul", ["s", "b"], ["t"]),
              node("Add", ["t", "c"], ["y"])], [X], [Y],
             [f32("a", np.zeros(4)), f32("b", -np.zeros(4)), f32("c", np.zeros((1, 4)))])
    out, _ = run(m, "eliminate_duplicate_initializers")
    assert len(out.graph.initializer) == 3, out.graph.initializer


def eliminate_duplicate_initializers_should_keep_an_overridable_one():
    # from IR 4 an initializer listed as a graph input is a default the caller
    # may replace
    m = make([node("Add", ["x", "a"], ["s"]), node("Mul", ["s", "b"], ["y"])],
             [X, vi("b", F, [4])], [Y], [f32("a", np.full((4,), 2)), f32("b", np.full((4,), 2))])
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        h.optimize_checked(src, dst, "eliminate_duplicate_initializers")
        out = onnx.load(dst)
    assert len(out.graph.initializer) == 2, out.graph.initializer


# ------------------------------------------------- eliminate_common_subexpression

def eliminate_common_subexpression_should_merge_a_repeated_chain():
    m = make([node("Shape", ["x"], ["s1"]), node("Shape", ["x"], ["s2"]),
              node("Reshape", ["x", "s1"], ["r1"]), node("Reshape", ["x", "s2"], ["r2"]),
              node("Add", ["r1", "r2"], ["y"])], [X], [Y])
    out, acts = run(m, "eliminate_common_subexpression")
    assert ops(out) == ["Shape", "Reshape", "Add"], ops(out)
    assert len(of(acts, "eliminated")) == 2, acts


def eliminate_common_subexpression_should_keep_nodes_with_other_attributes():
    m = make([node("Transpose", ["x"], ["a"], perm=[0, 2, 1]),
              node("Transpose", ["x"], ["b"], perm=[2, 0, 1]),
              node("ReduceSum", ["a"], ["ra"], keepdims=0),
              node("ReduceSum", ["b"], ["rb"], keepdims=0),
              node("Add", ["ra", "rb"], ["y"])], [X], [vi("y", F, [])])
    out, _ = run(m, "eliminate_common_subexpression")
    assert len(ops(out)) == 5, ops(out)


def eliminate_common_subexpression_should_keep_random_ops():
    m = make([node("RandomUniformLike", ["x"], ["a"], seed=1.0),
              node("RandomUniformLike", ["x"], ["b"], seed=1.0),
              node("Add", ["a", "b"], ["s"]), node("Mul", ["s", "x"], ["z"]),
              node("Shape", ["z"], ["y"])], [X], [vi("y", I64, [3])])
    out, _ = run(m, "eliminate_common_subexpression")
    assert ops(out).count("RandomUniformLike") == 2, ops(out)


def eliminate_common_subexpression_should_keep_two_graph_outputs():
    m = make([node("Relu", ["x"], ["a"]), node("Relu", ["x"], ["b"])], [X],
             [vi("a", F, [2, 3, 4]), vi("b", F, [2, 3, 4])])
    out, acts = run(m, "eliminate_common_subexpression")
    assert ops(out) == ["Relu", "Relu"], ops(out)
    assert of(acts, "skipped", "Relu"), acts


# ----------------------------------------------------------------- eliminate_dead

def eliminate_dead_should_remove_unread_nodes_and_initializers():
    m = make([node("Relu", ["x"], ["y"]), node("Neg", ["x"], ["n"]), node("Abs", ["n"], ["a"]),
              node("Add", ["x", "w"], ["u"])], [X], [Y], [f32("w", np.ones(4)),
                                                           f32("unused", np.ones(4))])
    out, acts = run(m, "eliminate_dead")
    assert ops(out) == ["Relu"], ops(out)
    assert not out.graph.initializer, out.graph.initializer
    assert len(of(acts, "eliminated")) == 3, acts


def eliminate_dead_should_keep_an_unread_initializer_the_caller_may_override():
    m = make([node("Relu", ["x"], ["y"])], [X, vi("w", F, [4])], [Y], [f32("w", np.ones(4))])
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        h.optimize_checked(src, dst, "eliminate_dead")
        out = onnx.load(dst)
    assert [t.name for t in out.graph.initializer] == ["w"]
    assert [i.name for i in out.graph.input] == ["x", "w"]


# --------------------------------------------------- fuse_consecutive_transposes

def fuse_consecutive_transposes_should_remove_a_pair_that_cancels():
    m = make([node("Transpose", ["x"], ["a"], perm=[0, 2, 1]),
              node("Transpose", ["a"], ["b"], perm=[0, 2, 1]), node("Relu", ["b"], ["y"])],
             [X], [Y])
    out, acts = run(m, "fuse_consecutive_transposes")
    assert ops(out) == ["Relu"], ops(out)
    assert len(of(acts, "eliminated", "Transpose")) == 2, acts


def fuse_consecutive_transposes_should_merge_a_chain_into_one():
    m = make([node("Transpose", ["x"], ["a"], perm=[1, 0, 2]),
              node("Transpose", ["a"], ["b"], perm=[0, 2, 1]),
              node("Transpose", ["b"], ["c"]), node("Relu", ["c"], ["y"])],
             [X], [vi("y", F, [2, 4, 3])])
    out, _ = run(m, "fuse_consecutive_transposes")
    assert ops(out) == ["Transpose", "Relu"], ops(out)


def fuse_consecutive_transposes_should_keep_a_transpose_read_by_a_graph_output():
    # the first one's value is an output of the model: it stays, and the
    # second reads x directly
    m = make([node("Transpose", ["x"], ["a"], perm=[0, 2, 1]),
              node("Transpose", ["a"], ["b"], perm=[2, 1, 0]), node("Relu", ["b"], ["y"])],
             [X], [vi("a", F, [2, 4, 3]), vi("y", F, [3, 4, 2])])
    out, _ = run(m, "fuse_consecutive_transposes")
    assert ops(out) == ["Transpose", "Transpose", "Relu"], ops(out)
    assert [o.name for o in out.graph.output] == ["a", "y"]
    assert all(n.input[0] == "x" for n in out.graph.node if n.op_type == "Transpose")


def fuse_consecutive_transposes_should_keep_an_output_name_when_the_pair_cancels():
    m = make([node("Transpose", ["x"], ["a"], perm=[0, 2, 1]),
              node("Transpose", ["a"], ["y"], perm=[0, 2, 1])], [X], [Y])
    out, _ = run(m, "fuse_consecutive_transposes")
    assert [o.name for o in out.graph.output] == ["y"]
    assert len(out.graph.node) == 1, ops(out)


# --------------------------------------------------------- the default pipeline

def default_pipeline_should_simplify_in_one_run_what_a_second_run_keeps():
    # Identity -> Dropout -> Conv -> BatchNormalization -> Transpose pair ->
    # Relu twice, and a duplicated Shape chain: the passes feed each other
    # (the Identity gone, the Conv reads x; the BN folds; CSE merges), and a
    # second optimize writes the same bytes
    c = 4
    rng = np.random.default_rng(9)
    inits = [f32("w", rng.standard_normal((c, 3, 3, 3))), f32("b", rng.standard_normal(c)),
             f32("s", rng.standard_normal(c)), f32("bb", rng.standard_normal(c)),
             f32("mean", rng.standard_normal(c)), f32("var", np.abs(rng.standard_normal(c)) + 1)]
    nodes = [node("Identity", ["x"], ["i"]), node("Dropout", ["i"], ["d"]),
             node("Conv", ["d", "w", "b"], ["cv"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["cv", "s", "bb", "mean", "var"], ["bn"]),
             node("Transpose", ["bn"], ["t1"], perm=[0, 2, 3, 1]),
             node("Transpose", ["t1"], ["t2"], perm=[0, 3, 1, 2]),
             node("Relu", ["t2"], ["r1"]), node("Relu", ["r1"], ["r2"]),
             node("Shape", ["r2"], ["sh1"]), node("Shape", ["r2"], ["sh2"]),
             node("Reshape", ["r2", "sh1"], ["y1"]), node("Reshape", ["r2", "sh2"], ["y2"]),
             node("Add", ["y1", "y2"], ["y"])]
    m = make(nodes, [vi("x", F, [1, 3, 5, 5])], [vi("y", F, [1, c, 5, 5])], inits)
    with h.tempdir() as d:
        src, dst, again = (os.path.join(d, n) for n in ("src.onnx", "dst.onnx", "again.onnx"))
        onnx.save(m, src)
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--quiet"))
        h.check(dst)
        feeds = h.random_feeds(src, seed=3)
        h.assert_close(h.run_ort(dst, feeds), h.run_ort(src, feeds))
        h.expect_ok(h.tileopt("optimize", dst, "-o", again, "--quiet"))
        with open(dst, "rb") as a, open(again, "rb") as b:
            assert a.read() == b.read(), "a second run changed the model"
        out = onnx.load(dst)
        assert os.path.getsize(dst) < os.path.getsize(src)
    assert ops(out) == ["Conv", "Relu", "Add"], ops(out)


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

#!/usr/bin/python3
"""Model-level tests of the merging passes (passes/merge/): Reshapes, a Squeeze
and an Unsqueeze, Casts in a row, Squeezes, Unsqueezes, Slices and Concats in a
row, Log of a Softmax, a reduction and the Unsqueeze putting its dims back,
MatMul + Add and Transposes into Gemm, and Pad into Conv and AveragePool
(passes/conv/pad.c), each rule and the cases it must leave alone.

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
from test_eliminate import make, node, of, ops, run  # noqa: E402

F, D, I32, I64, U8 = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32,
                      TensorProto.INT64, TensorProto.UINT8)
vi, i64 = h.vi, h.i64
RNG = np.random.default_rng(5)
X = vi("x", F, [2, 3, 4])


def f32(name, v):
    return numpy_helper.from_array(np.asarray(v, dtype=np.float32), name)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def skip_reasons(acts, op=None):
    return [a["reason"] for a in of(acts, "skipped", op)]


# ------------------------------------------------------- fuse_consecutive_reshapes

def fuse_consecutive_reshapes_should_merge_two_reshapes():
    m = make([node("Reshape", ["x", "s1"], ["a"]), node("Reshape", ["a", "s2"], ["b"]),
              node("Relu", ["b"], ["y"])], [X], [vi("y", F, [4, 6])],
             [i64("s1", [6, 4]), i64("s2", [4, 6])])
    out, acts = run(m, "fuse_consecutive_reshapes")
    assert ops(out) == ["Reshape", "Relu"], ops(out)
    assert out.graph.node[0].input[0] == "x"
    (r,) = of(acts, "rewritten", "Reshape")
    assert r["from"] == "a", r
    assert of(acts, "eliminated", "Reshape"), acts


def fuse_consecutive_reshapes_should_merge_a_chain_in_one_run():
    m = make([node("Reshape", ["x", "s1"], ["a"]), node("Reshape", ["a", "s2"], ["b"]),
              node("Reshape", ["b", "s3"], ["c"]), node("Relu", ["c"], ["y"])], [X],
             [vi("y", F, [24])], [i64("s1", [6, 4]), i64("s2", [4, 6]), i64("s3", [-1])])
    out, _ = run(m, "fuse_consecutive_reshapes")
    assert ops(out) == ["Reshape", "Relu"], ops(out)


def fuse_consecutive_reshapes_should_merge_flatten_squeeze_and_unsqueeze_before_a_reshape():
    cases = [
        (node("Flatten", ["x"], ["a"], axis=2), (), [6, 4]),
        (node("Unsqueeze", ["x", "ax"], ["a"]), (i64("ax", [0]),), [4, 6]),
    ]
    for first, inits, shape in cases:
        m = make([first, node("Reshape", ["a", "s"], ["b"]), node("Relu", ["b"], ["y"])], [X],
                 [vi("y", F, [4, 6])], list(inits) + [i64("s", [4, 6])])
        out, _ = run(m, "fuse_consecutive_reshapes")
        assert ops(out) == ["Reshape", "Relu"], (first.op_type, ops(out))
    m = make([node("Squeeze", ["x", "ax"], ["a"]), node("Reshape", ["a", "s"], ["b"]),
              node("Relu", ["b"], ["y"])], [vi("x", F, [2, 1, 12])], [vi("y", F, [4, 6])],
             [i64("ax", [1]), i64("s", [4, 6])])
    out, _ = run(m, "fuse_consecutive_reshapes")
    assert ops(out) == ["Reshape", "Relu"], ops(out)


def fuse_consecutive_reshapes_should_write_a_copied_dim_as_the_number_it_is():
    # [6, 4] -> [3, 8] -> [0, -1]: the 0 copies the 3 of the middle shape, which
    # x's first dim (6) is not
    m = make([node("Reshape", ["x", "s1"], ["a"]), node("Reshape", ["a", "s2"], ["b"]),
              node("Relu", ["b"], ["y"])], [vi("x", F, [6, 4])], [vi("y", F, [3, 8])],
             [i64("s1", [3, 8]), i64("s2", [0, -1])])
    out, _ = run(m, "fuse_consecutive_reshapes")
    assert ops(out) == ["Reshape", "Relu"], ops(out)
    (shape,) = [numpy_helper.to_array(t) for t in out.graph.initializer
                if t.name == out.graph.node[0].input[1]]
    assert list(shape) == [3, -1], shape


def fuse_consecutive_reshapes_should_keep_a_0_that_copies_the_same_named_dim():
    m = make([node("Reshape", ["x", "s1"], ["a"]), node("Reshape", ["a", "s2"], ["b"]),
              node("Relu", ["b"], ["y"])], [vi("x", F, ["n", 12])], [vi("y", F, ["n", 12])],
             [i64("s1", [0, 3, 4]), i64("s2", [0, -1])])
    out, _ = run(m, "fuse_consecutive_reshapes")
    assert ops(out) == ["Reshape", "Relu"], ops(out)
    assert out.graph.node[0].input[1] == "s2"


def fuse_consecutive_reshapes_should_keep_a_0_that_copies_a_dim_x_may_not_have():
    # the first target is known only at run time: the 0 copies a dim of its
    # output, and copying x's instead gives another shape ([2, 2, 2] of 24
    # elements: an error)
    m = make([node("Reshape", ["x", "s1"], ["a"]), node("Reshape", ["a", "s2"], ["b"]),
              node("Relu", ["b"], ["y"])], [X, vi("s1", I64, [2])], [vi("y", F, ["k", 2, 2])],
             [i64("s2", [0, 2, 2])])
    feeds = {"x": rand(2, 3, 4), "s1": np.array([6, 4], np.int64)}
    out, acts = run(m, "fuse_consecutive_reshapes", feeds=feeds)
    assert ops(out) == ["Reshape", "Reshape", "Relu"], ops(out)
    assert any("copies a dim" in r for r in skip_reasons(acts, "Reshape")), acts


def fuse_consecutive_reshapes_should_keep_a_first_reshape_read_elsewhere():
    for extra_nodes, outs in (
            ([], [vi("a", F, [6, 4]), vi("y", F, [4, 6])]),
            ([node("Neg", ["a"], ["z"])], [vi("z", F, [6, 4]), vi("y", F, [4, 6])])):
        m = make([node("Reshape", ["x", "s1"], ["a"]), node("Reshape", ["a", "s2"], ["b"]),
                  node("Relu", ["b"], ["y"])] + extra_nodes, [X], outs,
                 [i64("s1", [6, 4]), i64("s2", [4, 6])])
        out, acts = run(m, "fuse_consecutive_reshapes")
        assert ops(out).count("Reshape") == 2, ops(out)
        assert out.graph.node[1].input[0] == "a", out.graph.node[1]
        assert any("read elsewhere" in r for r in skip_reasons(acts, "Reshape")), acts


# ------------------------------------------------------------- fold_reshape_target

def dims_target(pieces, rest):
    """Concat of Shape(x)[a:b] slices and constants: pieces is a list of
    (start, end) slices of x's shape or constant lists."""
    nodes, inits, parts = [node("Shape", ["x"], ["sh"])], list(rest), []
    for k, p in enumerate(pieces):
        if isinstance(p, tuple):
            inits += [i64(f"s{k}", [p[0]]), i64(f"e{k}", [p[1]])]
            nodes.append(node("Slice", ["sh", f"s{k}", f"e{k}"], [f"p{k}"]))
        else:
            inits.append(i64(f"p{k}", p))
        parts.append(f"p{k}")
    nodes += [node("Concat", parts, ["target"], axis=0), node("Reshape", ["x", "target"], ["r"]),
              node("Relu", ["r"], ["y"])]
    return nodes, inits


def fold_reshape_target_should_make_a_target_known_entry_by_entry_a_constant():
    # [n, 12]: n is x's dim 0 there, a 0 copies it (an empty batch too); [12, n]:
    # n is the element count over 12, a -1 (at n = 0 the original's target
    # [12, 0] would copy x's 3: it runs only where n is no 0)
    for pieces, ys, want, batches in (([(0, 1), [12]], ["n", 12], [0, 12], (2, 0)),
                                      ([[12], (0, 1)], [12, "n"], [12, -1], (2,))):
        nodes, inits = dims_target(pieces, [])
        m = make(nodes, [vi("x", F, ["n", 3, 4])], [vi("y", F, ys)], inits)
        for n in batches:
            out, acts = run(m, "fold_reshape_target,eliminate_dead",
                            feeds={"x": rand(n, 3, 4)})
            assert ops(out) == ["Reshape", "Relu"], ops(out)
            (r,) = of(acts, "rewritten", "Reshape")
            (target,) = [numpy_helper.to_array(t) for t in out.graph.initializer
                         if t.name == out.graph.node[0].input[1]]
            assert list(target) == want, target


def fold_reshape_target_should_make_a_target_that_only_adds_or_drops_ones_an_unsqueeze():
    # [n, w, 120] -> Concat(n, 1, w, 120): an Unsqueeze at 1, exact for an empty
    # batch too (where [0, 1, -1, 120] would divide by 0); [n, 120, 1, w] ->
    # Concat(n, 120, 1, w)[..] written with w first: a Squeeze at 2
    for pieces, xs, ys, feed_shape, op, axes in (
            ([(0, 1), [1], (1, 3)], ["n", "w", 120], ["n", 1, "w", 120], (0, 5, 120),
             "Unsqueeze", [1]),
            ([(0, 1), [1], (1, 3)], ["n", "w", 120], ["n", 1, "w", 120], (2, 5, 120),
             "Unsqueeze", [1]),
            ([(0, 2), (3, 4)], ["n", 120, 1, "w"], ["n", 120, "w"], (0, 120, 1, 7),
             "Squeeze", [2])):
        nodes, inits = dims_target(pieces, [])
        m = make(nodes, [vi("x", F, xs)], [vi("y", F, ys)], inits)
        out, acts = run(m, "fold_reshape_target,eliminate_dead",
                        feeds={"x": rand(*feed_shape)})
        assert ops(out) == [op, "Relu"], ops(out)
        (a,) = [numpy_helper.to_array(t) for t in out.graph.initializer
                if t.name == out.graph.node[0].input[1]]
        assert list(a) == axes, a
        (r,) = of(acts, "rewritten", "Reshape")
        assert r["op_now"] == op, r
    # before opset 13 the axes are an attribute
    nodes, inits = dims_target([(0, 1), [1], (1, 3)], [])
    m = make(nodes, [vi("x", F, ["n", "w", 120])], [vi("y", F, ["n", 1, "w", 120])], inits,
             opset=11)
    out, _ = run(m, "fold_reshape_target,eliminate_dead")
    assert ops(out) == ["Unsqueeze", "Relu"], ops(out)
    assert [list(a.ints) for a in out.graph.node[0].attribute if a.name == "axes"] == [[1]]


def fold_reshape_target_should_keep_targets_minus_one_cannot_stand_for():
    # [n, 4, m] of [n, m, 4]: m would be a -1 beside the copied n (0 elements of
    # an empty batch leave it undefined); [m, n] of [n, m]: two entries known
    # only at run time; a target another node reads
    cases = [
        ([(0, 1), [4], (1, 2)], ["n", 4, "m"], "which -1 would divide by", []),
        ([(1, 2), (0, 1)], ["m", "n"], "more than one", []),
        ([(0, 1), [12]], ["n", 12], "read elsewhere", [node("Neg", ["target"], ["t2"])]),
    ]
    for pieces, ys, why, extra in cases:
        nodes, inits = dims_target(pieces, [])
        xs = ["n", "m", 4] if len(ys) == 3 else (["n", 3, 4] if extra else ["n", "m"])
        outs = [vi("y", F, ys)] + ([vi("t2", I64, [2])] if extra else [])
        m = make(nodes + extra, [vi("x", F, xs)], outs, inits)
        out, acts = run(m, "fold_reshape_target,eliminate_dead")
        assert "Shape" in ops(out), ops(out)
        assert any(why in r for r in skip_reasons(acts, "Reshape")), (why, acts)


# ---------------------------------------------------------- fuse_squeeze_unsqueeze

def fuse_squeeze_unsqueeze_should_remove_a_pair_that_cancels():
    x1 = vi("x", F, [2, 1, 4])
    for opset, first, second, inits in (
            (13, node("Squeeze", ["x", "a1"], ["s"]), node("Unsqueeze", ["s", "a1"], ["u"]),
             [i64("a1", [1])]),
            (11, node("Squeeze", ["x"], ["s"], axes=[-2]), node("Unsqueeze", ["s"], ["u"],
                                                                 axes=[1]), []),
            (13, node("Unsqueeze", ["x", "a2"], ["s"]), node("Squeeze", ["s", "a3"], ["u"]),
             [i64("a2", [0, -1]), i64("a3", [4, 0])]),
            (13, node("Squeeze", ["x"], ["s"]), node("Unsqueeze", ["s", "a1"], ["u"]),
             [i64("a1", [1])])):
        m = make([first, second, node("Relu", ["u"], ["y"])], [x1],
                 [vi("y", F, [2, 1, 4])], inits, opset=opset)
        out, acts = run(m, "fuse_squeeze_unsqueeze")
        assert ops(out) == ["Relu"], (opset, first.op_type, ops(out))
        assert len(of(acts, "eliminated")) == 2, acts


def fuse_squeeze_unsqueeze_should_keep_a_pair_on_other_axes():
    m = make([node("Squeeze", ["x", "a1"], ["s"]), node("Unsqueeze", ["s", "a0"], ["u"]),
              node("Relu", ["u"], ["y"])], [vi("x", F, [2, 1, 4])], [vi("y", F, [1, 2, 4])],
             [i64("a1", [1]), i64("a0", [0])])
    out, acts = run(m, "fuse_squeeze_unsqueeze")
    assert ops(out) == ["Squeeze", "Unsqueeze", "Relu"], ops(out)
    assert any("other axes" in r for r in skip_reasons(acts)), acts


def fuse_squeeze_unsqueeze_should_keep_a_squeeze_of_every_1_of_an_unknown_shape():
    # Squeeze without axes takes whatever dims are 1 at run time: "a" may be 1,
    # and then y is [4, 1], not x
    m = make([node("Squeeze", ["x"], ["s"]), node("Unsqueeze", ["s", "a1"], ["u"]),
              node("Relu", ["u"], ["y"])], [vi("x", F, ["a", 1, 4])], [vi("y", F, ["p", "q"])],
             [i64("a1", [1])])
    out, acts = run(m, "fuse_squeeze_unsqueeze", feeds={"x": rand(1, 1, 4)})
    assert ops(out) == ["Squeeze", "Unsqueeze", "Relu"], ops(out)
    assert skip_reasons(acts), acts


def fuse_squeeze_unsqueeze_should_keep_the_first_when_a_graph_output_reads_it():
    m = make([node("Squeeze", ["x", "a1"], ["s"]), node("Unsqueeze", ["s", "a1"], ["u"]),
              node("Relu", ["u"], ["y"])], [vi("x", F, [2, 1, 4])],
             [vi("s", F, [2, 4]), vi("y", F, [2, 1, 4])], [i64("a1", [1])])
    out, _ = run(m, "fuse_squeeze_unsqueeze")
    assert ops(out) == ["Squeeze", "Relu"], ops(out)
    assert [o.name for o in out.graph.output] == ["s", "y"]
    assert out.graph.node[1].input[0] == "x"


def fuse_squeeze_unsqueeze_should_keep_a_pair_from_a_graph_input_to_a_graph_output():
    m = make([node("Squeeze", ["x", "a1"], ["s"]), node("Unsqueeze", ["s", "a1"], ["y"])],
             [vi("x", F, [2, 1, 4])], [vi("y", F, [2, 1, 4])], [i64("a1", [1])])
    out, acts = run(m, "fuse_squeeze_unsqueeze")
    assert ops(out) == ["Squeeze", "Unsqueeze"], ops(out)
    assert any("graph output" in r for r in skip_reasons(acts)), acts


# ---------------------------------------------------------- fuse_consecutive_casts

def cast_chain(elem, mid, to, shape=(2, 3, 4), extra_nodes=(), extra_out=()):
    return make([node("Cast", ["x"], ["c1"], to=mid), node("Cast", ["c1"], ["c2"], to=to),
                 node("Abs", ["c2"], ["y"])] + list(extra_nodes), [vi("x", elem, list(shape))],
                [vi("y", to, list(shape))] + list(extra_out))


def fuse_consecutive_casts_should_remove_an_exact_round_trip():
    for elem, mid in ((F, D), (U8, I32), (I32, I64), (TensorProto.FLOAT16, F)):
        out, acts = run(cast_chain(elem, mid, elem), "fuse_consecutive_casts")
        assert ops(out) == ["Abs"], (elem, mid, ops(out))
        assert len(of(acts, "eliminated", "Cast")) == 2, acts


def fuse_consecutive_casts_should_read_the_input_of_an_exact_cast():
    for elem, mid, to in ((F, D, I32), (U8, F, I64), (TensorProto.BOOL, I32, F)):
        out, acts = run(cast_chain(elem, mid, to), "fuse_consecutive_casts")
        assert ops(out) == ["Cast", "Abs"], (elem, mid, to, ops(out))
        assert out.graph.node[0].input[0] == "x"
        (r,) = of(acts, "rewritten", "Cast")
        assert r["from"] == "c1", r


def fuse_consecutive_casts_should_keep_a_chain_whose_first_cast_is_not_exact():
    # int32 -> float -> int32 changes 2^24 + 1; float -> int32 -> float drops
    # fractions; double -> float -> float16 rounds twice; int64 -> double loses
    # big values too
    for elem, mid, to in ((I32, F, I32), (F, I32, F), (D, F, TensorProto.FLOAT16),
                          (I64, D, I64), (F, TensorProto.FLOAT16, F)):
        feeds = None
        if elem == I32:
            feeds = {"x": np.full((2, 3, 4), 2**24 + 1, np.int32)}
        out, acts = run(cast_chain(elem, mid, to), "fuse_consecutive_casts", feeds=feeds)
        assert ops(out) == ["Cast", "Cast", "Abs"], (elem, mid, to, ops(out))
        assert any("exactly" in r for r in skip_reasons(acts, "Cast")), acts


def fuse_consecutive_casts_should_keep_an_exact_cast_another_node_reads():
    m = cast_chain(F, D, I32, extra_nodes=[node("Neg", ["c1"], ["z"])],
                   extra_out=[vi("z", D, [2, 3, 4])])
    out, acts = run(m, "fuse_consecutive_casts")
    assert ops(out) == ["Cast", "Cast", "Abs", "Neg"], ops(out)
    assert any("read elsewhere" in r for r in skip_reasons(acts, "Cast")), acts


def fuse_consecutive_casts_should_keep_the_output_name_of_a_round_trip():
    m = make([node("Relu", ["x"], ["r"]), node("Cast", ["r"], ["c1"], to=D),
              node("Cast", ["c1"], ["y"], to=F)], [X], [vi("y", F, [2, 3, 4])])
    out, _ = run(m, "fuse_consecutive_casts")
    assert ops(out) == ["Relu"] and out.graph.node[0].output[0] == "y", out.graph


# ------------------------------------------------------- fuse_consecutive_squeezes

def unranked():
    """x made by a Reshape to a shape known only at run time: its rank is
    unknown. Returns the node, the graph inputs and feeds."""
    return (node("Reshape", ["x_in", "sh"], ["x"]),
            [vi("x_in", F, [2, 3, 4]), vi("sh", I64, ["k"])],
            {"x_in": rand(2, 3, 4), "sh": np.array([2, 3, 4], np.int64)})


def axes_of(m, n):
    """The axes of Squeeze/Unsqueeze/Reduce n of model m (input or attribute)."""
    for a in n.attribute:
        if a.name == "axes":
            return list(a.ints)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    return list(inits[n.input[1]]) if len(n.input) > 1 and n.input[1] else None


def attr(n, name, default=None):
    for a in n.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def assert_one_left(m, op, want):
    """fuse_consecutive_squeezes on m (two ops `op` from x to s to a Relu):
    one op left, reading x with axes want, the first recorded eliminated.
    Returns the rewritten op's action."""
    out, acts = run(m, "fuse_consecutive_squeezes")
    assert ops(out) == [op, "Relu"], ops(out)
    n = out.graph.node[0]
    assert n.input[0] == "x" and axes_of(out, n) == want, (want, n)
    (r,) = of(acts, "rewritten", op)
    assert r["from"] == "s", r
    assert of(acts, "eliminated", op), acts
    return r


def fuse_consecutive_squeezes_should_merge_two_squeezes():
    x = vi("x", F, [1, 2, 1, 3, 1])
    # the second's axis 1 is x's axis 2 (the first took axis 0); -1 and 0
    # count from ranks 5 and 4; a Squeeze of every 1 of a known shape
    for opset, first, second, inits, want in (
            (13, node("Squeeze", ["x", "a0"], ["s"]), node("Squeeze", ["s", "a1"], ["q"]),
             [i64("a0", [0]), i64("a1", [1])], [0, 2]),
            (11, node("Squeeze", ["x"], ["s"], axes=[-1]), node("Squeeze", ["s"], ["q"], axes=[0]),
             [], [0, 4]),
            (13, node("Squeeze", ["x", "a4"], ["s"]), node("Squeeze", ["s"], ["q"]),
             [i64("a4", [4])], [0, 2, 4])):
        out_shape = [d for i, d in enumerate([1, 2, 1, 3, 1]) if i not in want]
        m = make([first, second, node("Relu", ["q"], ["y"])], [x], [vi("y", F, out_shape)],
                 inits, opset=opset)
        r = assert_one_left(m, "Squeeze", want)
        assert r["axes"] == want, r


def fuse_consecutive_squeezes_should_merge_two_unsqueezes():
    x = vi("x", F, [2, 3])
    # [2, 3] -> [2, 1, 3] -> [1, 2, 1, 3]: the first's axis 1 sits at 2 once the
    # second put its 1 at 0; -1 counts from ranks 3 and 4
    for opset, first, second, inits, want in (
            (13, node("Unsqueeze", ["x", "a1"], ["s"]), node("Unsqueeze", ["s", "a0"], ["u"]),
             [i64("a1", [1]), i64("a0", [0])], [0, 2]),
            (13, node("Unsqueeze", ["x", "a0"], ["s"]), node("Unsqueeze", ["s", "a2"], ["u"]),
             [i64("a0", [0]), i64("a2", [2])], [0, 2]),
            (11, node("Unsqueeze", ["x"], ["s"], axes=[-1]),
             node("Unsqueeze", ["s"], ["u"], axes=[-1, 0]), [], [0, 3, 4])):
        shape = [2, 3]
        for a in want:
            shape.insert(a, 1)
        m = make([first, second, node("Relu", ["u"], ["y"])], [x], [vi("y", F, shape)],
                 inits, opset=opset)
        assert_one_left(m, op="Unsqueeze", want=want)


def fuse_consecutive_squeezes_should_merge_a_chain_in_one_run():
    m = make([node("Unsqueeze", ["x", "a0"], ["u1"]), node("Unsqueeze", ["u1", "a0"], ["u2"]),
              node("Unsqueeze", ["u2", "a0"], ["u3"]), node("Relu", ["u3"], ["y"])], [X],
             [vi("y", F, [1, 1, 1, 2, 3, 4])], [i64("a0", [0])])
    out, _ = run(m, "fuse_consecutive_squeezes")
    assert ops(out) == ["Unsqueeze", "Relu"], ops(out)
    assert axes_of(out, out.graph.node[0]) == [0, 1, 2]


def fuse_consecutive_squeezes_should_keep_a_first_read_elsewhere():
    # a graph output or another node reads the first: the second reading x
    # would remove nothing
    for extra_nodes, outs in (
            ([], [vi("s", F, [2, 1, 4]), vi("y", F, [2, 4])]),
            ([node("Neg", ["s"], ["z"])], [vi("z", F, [2, 1, 4]), vi("y", F, [2, 4])])):
        m = make([node("Squeeze", ["x", "a0"], ["s"]), node("Squeeze", ["s", "a1"], ["q"]),
                  node("Relu", ["q"], ["y"])] + extra_nodes, [vi("x", F, [1, 2, 1, 4])], outs,
                 [i64("a0", [0]), i64("a1", [1])])
        out, acts = run(m, "fuse_consecutive_squeezes")
        assert ops(out).count("Squeeze") == 2, ops(out)
        assert out.graph.node[1].input[0] == "s", out.graph.node[1]
        assert any("merging would remove nothing" in r
                   for r in skip_reasons(acts, "Squeeze")), acts


def fuse_consecutive_squeezes_should_keep_axes_it_cannot_count():
    # a negative axis of an unknown rank; a Squeeze of every 1 of a shape
    # known only at run time (b may be 1, and then y is [2])
    reshape, ins, feeds = unranked()
    cases = [
        (make([reshape, node("Unsqueeze", ["x", "m1"], ["s"]),
               node("Unsqueeze", ["s", "a0"], ["u"]), node("Relu", ["u"], ["y"])], ins,
              [vi("y", F, [1, 2, 3, 4, 1])], [i64("m1", [-1]), i64("a0", [0])]), feeds,
         "Unsqueeze"),
        (make([node("Squeeze", ["x", "a1"], ["s"]), node("Squeeze", ["s"], ["q"]),
               node("Relu", ["q"], ["y"])], [vi("x", F, [2, 1, "b", 1])], [vi("y", F, [2, 3])],
              [i64("a1", [1])]), {"x": rand(2, 1, 3, 1)}, "Squeeze"),
    ]
    for m, feeds, op in cases:
        out, acts = run(m, "fuse_consecutive_squeezes", feeds=feeds)
        assert ops(out)[-3:] == [op, op, "Relu"], ops(out)
        assert any("not known" in r for r in skip_reasons(acts, op)), acts


# --------------------------------------------------------- fuse_consecutive_slices

XS = vi("x", F, [4, 6, 8])


def slice_pair(first, second, inits, out_shape, opset=13, extra_nodes=(), extra_out=(),
               inputs=(XS,), pre=()):
    return make(list(pre) + [first, second, node("Relu", ["t"], ["y"])] + list(extra_nodes),
                list(inputs),
                [vi("y", F, out_shape)] + list(extra_out), inits, opset=opset)


def fuse_consecutive_slices_should_merge_slices_of_other_axes():
    cases = [
        # axes given, a step, an end past the dim
        (node("Slice", ["x", "s1", "e1", "a1"], ["s"]),
         node("Slice", ["s", "s2", "e2", "a2", "st2"], ["t"]),
         [i64("s1", [1]), i64("e1", [3]), i64("a1", [0]), i64("s2", [-7]), i64("e2", [100]),
          i64("a2", [2]), i64("st2", [2])], [2, 6, 4], 13, [0, 2]),
        # the first's axes by default, the second's -2 counted from rank 3
        (node("Slice", ["x", "s1", "e1"], ["s"]),
         node("Slice", ["s", "s2", "e2", "m2"], ["t"]),
         [i64("s1", [1]), i64("e1", [-1]), i64("s2", [0]), i64("e2", [3]), i64("m2", [-2])],
         [2, 3, 8], 10, [0, 1]),
        # the attribute form of opsets before 10
        (node("Slice", ["x"], ["s"], starts=[2], ends=[5], axes=[1]),
         node("Slice", ["s"], ["t"], starts=[0, 1], ends=[1, 3], axes=[0, 2]),
         [], [1, 3, 2], 9, [1, 0, 2]),
    ]
    for first, second, inits, shape, opset, want in cases:
        out, acts = run(slice_pair(first, second, inits, shape, opset), "fuse_consecutive_slices")
        assert ops(out) == ["Slice", "Relu"], (opset, ops(out))
        sl = out.graph.node[0]
        assert sl.input[0] == "x", sl
        (r,) = of(acts, "rewritten", "Slice")
        assert r["from"] == "s" and r["axes"] == want, r
        assert of(acts, "eliminated", "Slice"), acts


def fuse_consecutive_slices_should_keep_two_slices_of_one_axis():
    # 1 and -2 are one axis of a rank-3 x: the second's start counts on what
    # the first left
    m = slice_pair(node("Slice", ["x", "s1", "e1", "a1"], ["s"]),
                   node("Slice", ["s", "s2", "e2", "m2"], ["t"]),
                   [i64("s1", [1]), i64("e1", [5]), i64("a1", [1]), i64("s2", [1]),
                    i64("e2", [3]), i64("m2", [-2])], [4, 2, 8])
    out, acts = run(m, "fuse_consecutive_slices")
    assert ops(out) == ["Slice", "Slice", "Relu"], ops(out)
    assert any("same axis (1)" in r for r in skip_reasons(acts, "Slice")), acts


def fuse_consecutive_slices_should_keep_what_it_cannot_merge():
    cases = [
        # the first's output is a graph output
        ("merging would remove nothing",
         slice_pair(node("Slice", ["x", "s1", "e1", "a1"], ["s"]),
                    node("Slice", ["s", "s2", "e2", "a2"], ["t"]),
                    [i64("s1", [1]), i64("e1", [3]), i64("a1", [0]), i64("s2", [1]),
                     i64("e2", [3]), i64("a2", [1])], [2, 2, 8],
                    extra_out=[vi("s", F, [2, 6, 8])]), None),
        # starts known only at run time
        ("not all constants",
         slice_pair(node("Slice", ["x", "k", "e1", "a1"], ["s"]),
                    node("Slice", ["s", "s2", "e2", "a2"], ["t"]),
                    [i64("e1", [3]), i64("a1", [0]), i64("s2", [1]), i64("e2", [3]),
                     i64("a2", [1])], [None, 2, 8], inputs=(XS, vi("k", I64, [1]))),
         {"x": rand(4, 6, 8), "k": np.array([1], np.int64)}),
        # a negative axis of an unknown rank
        ("unknown rank",
         slice_pair(node("Slice", ["x", "s1", "e1", "m1"], ["s"]),
                    node("Slice", ["s", "s2", "e2", "a2"], ["t"]),
                    [i64("s1", [1]), i64("e1", [3]), i64("m1", [-1]), i64("s2", [1]),
                     i64("e2", [3]), i64("a2", [0])], [2, 3, 2], inputs=unranked()[1],
                    pre=[unranked()[0]]), unranked()[2]),
    ]
    for want, m, feeds in cases:
        out, acts = run(m, "fuse_consecutive_slices", feeds=feeds)
        assert ops(out)[-3:] == ["Slice", "Slice", "Relu"], (want, ops(out))
        assert any(want in r for r in skip_reasons(acts, "Slice")), (want, acts)


# -------------------------------------------------------- fuse_consecutive_concats

def cat(ins, out, axis):
    return node("Concat", ins, [out], axis=axis)


def fuse_consecutive_concats_should_splice_an_inner_concat_on_the_same_axis():
    ins = [vi(n, F, [2, 3, 4]) for n in "abcd"]
    # -2 and 1 are one axis of rank 3; an inner Concat read in two slots
    for inner, outer, want, shape in (
            (cat(["a", "b"], "i", 1), cat(["c", "i", "d"], "o", -2), ["c", "a", "b", "d"],
             [2, 12, 4]),
            (cat(["a", "b"], "i", 0), cat(["i", "c", "i"], "o", 0),
             ["a", "b", "c", "a", "b"], [10, 3, 4])):
        m = make([inner, outer, node("Relu", ["o"], ["y"])], ins, [vi("y", F, shape)])
        out, acts = run(m, "fuse_consecutive_concats")
        assert ops(out) == ["Concat", "Relu"], ops(out)
        assert list(out.graph.node[0].input) == want, out.graph.node[0]
        (r,) = of(acts, "rewritten", "Concat")
        assert r["from"] == "i", r
        assert of(acts, "eliminated", "Concat"), acts


def fuse_consecutive_concats_should_flatten_a_chain_in_one_run():
    ins = [vi(n, F, [2, 3]) for n in "abcd"]
    m = make([cat(["a", "b"], "i", 1), cat(["i", "c"], "j", 1), cat(["d", "j"], "o", 1),
              node("Relu", ["o"], ["y"])], ins, [vi("y", F, [2, 12])])
    out, _ = run(m, "fuse_consecutive_concats")
    assert ops(out) == ["Concat", "Relu"], ops(out)
    assert list(out.graph.node[0].input) == ["d", "a", "b", "c"], out.graph.node[0]
    # a tree: the inner ones in any slot, each spliced where it was read
    m = make([cat(["b", "c"], "i", 0), cat(["a", "i"], "j", 0), cat(["j", "d"], "o", 0),
              node("Relu", ["o"], ["y"])], ins, [vi("y", F, [8, 3])])
    out, acts = run(m, "fuse_consecutive_concats")
    assert ops(out) == ["Concat", "Relu"], ops(out)
    assert list(out.graph.node[0].input) == ["a", "b", "c", "d"], out.graph.node[0]
    assert len(of(acts, "eliminated", "Concat")) == 2, acts


def fuse_consecutive_concats_should_keep_what_it_cannot_splice():
    ins = [vi(n, F, [2, 2]) for n in "abc"]
    cases = [
        ("another axis", [cat(["a", "b"], "i", 0), cat(["i", "i"], "o", 1)], [vi("y", F, [4, 4])]),
        ("read elsewhere", [cat(["a", "b"], "i", 1), cat(["i", "c"], "o", 1)],
         [vi("y", F, [2, 6]), vi("i", F, [2, 4])]),
        ("read elsewhere", [cat(["a", "b"], "i", 1), cat(["i", "c"], "o", 1),
                            node("Neg", ["i"], ["z"])], [vi("y", F, [2, 6]), vi("z", F, [2, 4])]),
    ]
    for want, nodes, outs in cases:
        m = make(nodes[:2] + [node("Relu", ["o"], ["y"])] + nodes[2:], ins, outs)
        out, acts = run(m, "fuse_consecutive_concats")
        assert ops(out).count("Concat") == 2, (want, ops(out))
        assert any(want in r for r in skip_reasons(acts, "Concat")), (want, acts)


# ---------------------------------------------------- fuse_consecutive_log_softmax

def fuse_consecutive_log_softmax_should_make_one_log_softmax():
    # before 13 both ops flatten to 2-D at the axis (default 1), from 13 both
    # work along one axis (default -1): the attribute carries over as it is
    for opset, attrs in ((11, {}), (11, {"axis": 2}), (13, {}), (13, {"axis": 1}),
                         (12, {"axis": -2})):
        m = make([node("Softmax", ["x"], ["s"], **attrs), node("Log", ["s"], ["l"]),
                  node("Relu", ["l"], ["y"])], [X], [vi("y", F, [2, 3, 4])], opset=opset)
        out, acts = run(m, "fuse_consecutive_log_softmax")
        assert ops(out) == ["LogSoftmax", "Relu"], (opset, ops(out))
        ls = out.graph.node[0]
        assert ls.input[0] == "x" and attr(ls, "axis") == attrs.get("axis"), ls
        (e,) = of(acts, "eliminated", "Log")
        assert e["rule"] == "Log of a Softmax into LogSoftmax", e
        assert of(acts, "eliminated", "Softmax"), acts


def fuse_consecutive_log_softmax_should_keep_the_output_name():
    m = make([node("Softmax", ["x"], ["s"]), node("Log", ["s"], ["y"])], [X],
             [vi("y", F, [2, 3, 4])])
    out, _ = run(m, "fuse_consecutive_log_softmax")
    assert ops(out) == ["LogSoftmax"] and out.graph.node[0].output[0] == "y", out.graph


def fuse_consecutive_log_softmax_should_keep_a_softmax_read_elsewhere():
    for extra_nodes, outs in (([], [vi("y", F, [2, 3, 4]), vi("s", F, [2, 3, 4])]),
                              ([node("Neg", ["s"], ["z"])],
                               [vi("y", F, [2, 3, 4]), vi("z", F, [2, 3, 4])])):
        m = make([node("Softmax", ["x"], ["s"]), node("Log", ["s"], ["y"])] + extra_nodes,
                 [X], outs)
        out, acts = run(m, "fuse_consecutive_log_softmax")
        assert "LogSoftmax" not in ops(out) and "Log" in ops(out), ops(out)
        assert any("read elsewhere" in r for r in skip_reasons(acts, "Log")), acts


# ----------------------------------------------- fuse_consecutive_reduce_unsqueeze

def reduce_pair(op, r_ins, r_attrs, u, inits, out_shape, opset=13, extra_nodes=(),
                extra_out=(), inputs=(X,), pre=()):
    u_node = (node("Unsqueeze", ["r", "ua"], ["u"]) if opset >= 13
              else node("Unsqueeze", ["r"], ["u"], axes=u))
    if opset >= 13:
        inits = list(inits) + [i64("ua", u)]
    return make(list(pre) + [node(op, ["x"] + r_ins, ["r"], keepdims=0, **r_attrs), u_node,
                 node("Relu", ["u"], ["y"])] + list(extra_nodes), list(inputs),
                [vi("y", F, out_shape)] + list(extra_out), inits, opset=opset)


def run_past_checker(m, passes, feeds=None):
    """run() for opsets past the ones onnx's checker knows (it stops at 17):
    the report is validated, and ONNX Runtime and the evaluator give the
    original's outputs. Returns (model, actions)."""
    import json
    from validate_report import report_errors
    with h.tempdir() as d:
        src, dst, rep = (os.path.join(d, n) for n in ("src.onnx", "dst.onnx", "report.json"))
        onnx.save(m, src)
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", passes, "--report", rep))
        with open(rep) as f:
            report = json.load(f)
        assert not report_errors(report), report_errors(report)
        feeds = feeds or h.random_feeds(src, seed=7)
        want = h.run_ort(src, feeds)
        h.assert_close(h.run_ort(dst, feeds), want, what="ORT, output vs original")
        h.assert_close(h.run_tileopt(src, feeds), want, what="evaluator, original")
        h.assert_close(h.run_tileopt(dst, feeds), want, what="evaluator, output")
        return onnx.load(dst), [a for p in report["passes"] for a in p["actions"]]


def fuse_consecutive_reduce_unsqueeze_should_keep_the_dims_instead():
    cases = [
        # axes an input of ReduceSum from 13, of the others from 18
        ("ReduceSum", ["ra"], {}, [1], [i64("ra", [1])], [2, 1, 4], 13),
        ("ReduceMax", ["ra"], {}, [0, 2], [i64("ra", [2, 0])], [1, 3, 1], 18),
        # the attribute form, a negative axis on either side
        ("ReduceMean", [], {"axes": [-1]}, [2], [], [2, 3, 1], 13),
        ("ReduceSum", [], {"axes": [1]}, [-2], [], [2, 1, 4], 11),
        ("ReduceL2", [], {"axes": [0, 1]}, [0, 1], [], [1, 1, 4], 17),
        # no axes: every axis, put back by an Unsqueeze of every axis
        ("ReduceProd", [], {}, [0, 1, 2], [], [1, 1, 1], 13),
        ("ReduceLogSumExp", [], {}, [2, 1, 0], [], [1, 1, 1], 18),
        ("ReduceSum", [], {"noop_with_empty_axes": 0}, [0, 1, 2], [], [1, 1, 1], 13),
    ]
    for op, r_ins, r_attrs, u, inits, shape, opset in cases:
        m = reduce_pair(op, r_ins, r_attrs, u, inits, shape, opset)
        out, acts = (run if opset <= 17 else run_past_checker)(
            m, "fuse_consecutive_reduce_unsqueeze")
        assert ops(out) == [op, "Relu"], (op, opset, ops(out))
        r = out.graph.node[0]
        assert attr(r, "keepdims") == 1 and r.output[0] == "u", r
        (a,) = of(acts, "rewritten", op)
        assert a["from"] == "u", a
        assert of(acts, "eliminated", "Unsqueeze"), acts


def fuse_consecutive_reduce_unsqueeze_should_keep_the_graph_output_name():
    m = make([node("ReduceSum", ["x", "ra"], ["r"], keepdims=0),
              node("Unsqueeze", ["r", "ra"], ["y"])], [X], [vi("y", F, [2, 1, 4])],
             [i64("ra", [1])])
    out, _ = run(m, "fuse_consecutive_reduce_unsqueeze")
    assert ops(out) == ["ReduceSum"] and out.graph.node[0].output[0] == "y", out.graph


def fuse_consecutive_reduce_unsqueeze_should_keep_what_it_cannot_merge():
    cases = [
        # the Unsqueeze puts its 1 elsewhere: [2, 4] -> [1, 2, 4], not [2, 1, 4]
        ("other axes", dict(op="ReduceSum", r_ins=["ra"], r_attrs={}, u=[0],
                            inits=[i64("ra", [1])], out_shape=[1, 2, 4])),
        ("other axes", dict(op="ReduceMean", r_ins=[], r_attrs={"axes": [0, 2]}, u=[0],
                            inits=[], out_shape=[1, 3], opset=11)),
        # the Reduce's output is read elsewhere
        ("read elsewhere", dict(op="ReduceMax", r_ins=[], r_attrs={"axes": [1]}, u=[1],
                                inits=[], out_shape=[2, 1, 4],
                                extra_out=[vi("r", F, [2, 4])])),
        # an identity: noop_with_empty_axes without axes, [2, 3, 4] -> [1, 2, 3, 4]
        ("reduces no axis", dict(op="ReduceSum", r_ins=[], r_attrs={"noop_with_empty_axes": 1},
                                 u=[0], inits=[], out_shape=[1, 2, 3, 4])),
        # every axis of an unknown rank
        ("unknown rank", dict(op="ReduceSum", r_ins=[], r_attrs={}, u=[0], inits=[],
                              out_shape=[1], inputs=unranked()[1], pre=[unranked()[0]])),
    ]
    for want, kw in cases:
        feeds = unranked()[2] if "pre" in kw else None
        out, acts = run(reduce_pair(**kw), "fuse_consecutive_reduce_unsqueeze", feeds=feeds)
        assert "Unsqueeze" in ops(out), (want, ops(out))
        assert any(want in r for r in skip_reasons(acts, "Unsqueeze")), (want, acts)


def consecutive_passes_should_reach_their_fixed_point_in_one_default_run():
    # Slice, Slice, Unsqueeze, Unsqueeze, Concat of a Concat, Softmax, Log,
    # ReduceSum without keepdims, Unsqueeze: one of each op is left
    m = make([node("Slice", ["x", "z1", "e1", "z1"], ["s1"]),
              node("Slice", ["s1", "z1", "e2", "o1"], ["s2"]),
              node("Unsqueeze", ["s2", "z1"], ["u1"]), node("Unsqueeze", ["u1", "z1"], ["u2"]),
              node("Concat", ["u2", "u2"], ["c1"], axis=2),
              node("Concat", ["c1", "u2"], ["c2"], axis=2),
              node("Softmax", ["c2"], ["sm"]), node("Log", ["sm"], ["lg"]),
              node("ReduceSum", ["lg", "r3"], ["rs"], keepdims=0),
              node("Unsqueeze", ["rs", "r3"], ["y"])],
             [X], [vi("y", F, [1, 1, 3, 2, 1])],
             [i64("z1", [0]), i64("o1", [1]), i64("e1", [1]), i64("e2", [2]), i64("r3", [4])])
    out = fixed_point(m)
    assert ops(out) == ["Slice", "Unsqueeze", "Concat", "LogSoftmax", "ReduceSum"], ops(out)


# ------------------------------------------------------- fuse_matmul_add_into_gemm

A = vi("a", F, [3, 4])


def matmul_add(c_shape, a=A, b_shape=(4, 5), b_const=True, c_first=False, extra_nodes=(),
               extra_out=(), y_shape=(3, 5), opset=13):
    inits = [f32("c", rand(*c_shape))]
    ins = [a]
    if b_const:
        inits.append(f32("b", rand(*b_shape)))
    else:
        ins.append(vi("b", F, list(b_shape)))
    add_in = ["c", "mm"] if c_first else ["mm", "c"]
    return make([node("MatMul", ["a", "b"], ["mm"]), node("Add", add_in, ["s"]),
                 node("Relu", ["s"], ["y"])] + list(extra_nodes), ins,
                [vi("y", F, list(y_shape))] + list(extra_out), inits, opset=opset)


def fuse_matmul_add_into_gemm_should_make_one_gemm():
    for c_shape, c_first, opset in (((5,), False, 13), ((1, 5), True, 13), ((3, 5), False, 9),
                                    ((3, 1), False, 11), ((1,), False, 7)):
        out, acts = run(matmul_add(c_shape, c_first=c_first, opset=opset),
                        "fuse_matmul_add_into_gemm")
        assert ops(out) == ["Gemm", "Relu"], (c_shape, ops(out))
        assert list(out.graph.node[0].input) == ["a", "b", "c"], out.graph.node[0]
        (e,) = of(acts, "eliminated", "Add")
        assert e["rule"] == "MatMul + Add into Gemm", e
        assert of(acts, "eliminated", "MatMul"), acts


def fuse_matmul_add_into_gemm_should_keep_the_illegal_forms():
    # a batched A, a computed B, Cs that widen the output (a third axis; [3, 1]
    # over a product of one row), a MatMul another node reads, a MatMul read
    # by a graph output
    cases = [
        ("not known to be 2-D", dict(c_shape=(5,), a=vi("a", F, [2, 3, 4]), y_shape=(2, 3, 5))),
        ("no 2-D constant", dict(c_shape=(5,), b_const=False)),
        ("rank over 2", dict(c_shape=(2, 3, 5), y_shape=(2, 3, 5))),
        ("broadcast", dict(c_shape=(3, 1), a=vi("a", F, [1, 4]), y_shape=(3, 5))),
        ("read elsewhere", dict(c_shape=(5,), extra_nodes=[node("Neg", ["mm"], ["z"])],
                                extra_out=[vi("z", F, [3, 5])])),
        ("read elsewhere", dict(c_shape=(5,), extra_out=[vi("mm", F, [3, 5])])),
    ]
    for want, kw in cases:
        out, acts = run(matmul_add(**kw), "fuse_matmul_add_into_gemm")
        assert "Gemm" not in ops(out), (want, ops(out))
        assert any(want in r for r in skip_reasons(acts, "Add")), (want, acts)


def fuse_matmul_add_into_gemm_should_keep_integer_matmuls():
    m = make([node("MatMul", ["a", "b"], ["mm"]), node("Add", ["mm", "c"], ["y"])],
             [vi("a", I32, [3, 4])], [vi("y", I32, [3, 5])],
             [numpy_helper.from_array(np.ones((4, 5), np.int32), "b"),
              numpy_helper.from_array(np.ones(5, np.int32), "c")])
    out, acts = run(m, "fuse_matmul_add_into_gemm")
    assert ops(out) == ["MatMul", "Add"], ops(out)
    assert any("float and double" in r for r in skip_reasons(acts, "Add")), acts


# -------------------------------------------------------- fuse_transpose_into_gemm

def fuse_transpose_into_gemm_should_flip_trans_a_and_trans_b():
    for trans_a, trans_b in ((0, 0), (1, 0), (0, 1), (1, 1)):
        a_shape = [3, 4] if trans_a else [4, 3]  # transposed again by the Transpose
        b = rand(5, 4) if not trans_b else rand(4, 5)
        m = make([node("Transpose", ["a"], ["ta"], perm=[1, 0]), node("Transpose", ["b"], ["tb"]),
                  node("Gemm", ["ta", "tb", "c"], ["g"], transA=trans_a, transB=trans_b,
                       alpha=0.5),
                  node("Relu", ["g"], ["y"])],
                 [vi("a", F, a_shape)], [vi("y", F, [3, 5])], [f32("b", b), f32("c", rand(5))])
        out, acts = run(m, "fuse_transpose_into_gemm")
        assert ops(out) == ["Gemm", "Relu"], ops(out)
        g = out.graph.node[0]
        attrs = {a.name: a for a in g.attribute}
        assert attrs["transA"].i == 1 - trans_a and attrs["transB"].i == 1 - trans_b, g
        assert list(g.input) == ["a", "b", "c"], g
        assert len(of(acts, "rewritten", "Gemm")) == 2, acts


def fuse_transpose_into_gemm_should_keep_a_transpose_another_node_reads():
    m = make([node("Transpose", ["a"], ["ta"], perm=[1, 0]),
              node("Gemm", ["ta", "b"], ["y"]), node("Neg", ["ta"], ["z"])],
             [vi("a", F, [4, 3])], [vi("y", F, [3, 5]), vi("z", F, [3, 4])],
             [f32("b", rand(4, 5))])
    out, acts = run(m, "fuse_transpose_into_gemm")
    assert ops(out) == ["Transpose", "Gemm", "Neg"], ops(out)
    assert out.graph.node[1].input[0] == "ta"
    assert any("read elsewhere" in r for r in skip_reasons(acts, "Gemm")), acts


def gemm_transposed(trans_a=0, trans_b=0, c=None, c_first=None, alpha=0.5, beta=1.5,
                    extra_nodes=(), extra_out=(), opset=13):
    a_shape = [4, 3] if trans_a else [3, 4]
    b = rand(5, 4) if trans_b else rand(4, 5)
    inits = [f32("b", b)] + ([f32("c", c)] if c is not None else [])
    ins = ["a", "b"] + (["c"] if c is not None else [])
    nodes = [node("Gemm", ins, ["g"], name="gemm", transA=trans_a, transB=trans_b, alpha=alpha,
                  beta=beta),
             node("Transpose", ["g"], ["t"], name="t", perm=[1, 0]), node("Relu", ["t"], ["y"])]
    return make(nodes + list(extra_nodes), [vi("a", F, a_shape)],
                [vi("y", F, [5, 3])] + list(extra_out), inits, opset=opset)


def fuse_transpose_into_gemm_should_swap_the_operands_of_a_gemm_read_transposed():
    # (A'B')^T = B'^T A'^T: Gemm(B, A) with transA = !transB, transB = !transA
    for trans_a, trans_b in ((0, 0), (1, 0), (0, 1), (1, 1)):
        for c, want_c in ((None, None), (rand(5), (5, 1)), (rand(1, 5), (5, 1)),
                          (rand(3, 1), (1, 3)), (rand(3, 5), (5, 3)), (np.float32(0.7), ()),
                          (rand(1, 1), (1, 1))):
            out, acts = run(gemm_transposed(trans_a, trans_b, c), "fuse_transpose_into_gemm")
            assert ops(out) == ["Gemm", "Relu"], ops(out)
            g = out.graph.node[0]
            attrs = {a.name: a for a in g.attribute}
            assert attrs["transA"].i == 1 - trans_b and attrs["transB"].i == 1 - trans_a, g
            assert list(g.input[:2]) == ["b", "a"] and g.output[0] == "t", g
            if want_c is not None:
                (ct,) = [i for i in out.graph.initializer if i.name == g.input[2]]
                assert tuple(ct.dims) == want_c, (c.shape, ct.dims)
            (e,) = of(acts, "eliminated", "Transpose")
            assert e["into"] == "gemm", e


def fuse_transpose_into_gemm_should_keep_the_name_of_a_transposed_graph_output():
    m = make([node("Gemm", ["a", "b"], ["g"], name="gemm"),
              node("Transpose", ["g"], ["y"], name="t")],
             [vi("a", F, [3, 4])], [vi("y", F, [5, 3])], [f32("b", rand(4, 5))])
    out, _ = run(m, "fuse_transpose_into_gemm")
    assert ops(out) == ["Gemm"] and out.graph.node[0].output[0] == "y", out.graph


def fuse_transpose_into_gemm_should_keep_a_transpose_of_a_gemm_read_elsewhere():
    m = gemm_transposed(extra_nodes=[node("Neg", ["g"], ["z"])],
                        extra_out=[vi("z", F, [3, 5])])
    out, acts = run(m, "fuse_transpose_into_gemm")
    assert ops(out) == ["Gemm", "Transpose", "Relu", "Neg"], ops(out)
    assert any("read elsewhere" in r for r in skip_reasons(acts, "Transpose")), acts


def fuse_transpose_into_gemm_should_keep_a_transpose_whose_c_cannot_be_transposed():
    # a computed C: no constant to transpose
    m = make([node("Gemm", ["a", "b", "c"], ["g"], name="gemm"),
              node("Transpose", ["g"], ["y"], name="t")],
             [vi("a", F, [3, 4]), vi("c", F, [3, 5])], [vi("y", F, [5, 3])],
             [f32("b", rand(4, 5))])
    out, acts = run(m, "fuse_transpose_into_gemm")
    assert ops(out) == ["Gemm", "Transpose"], ops(out)
    assert any("no constant" in r for r in skip_reasons(acts, "Transpose")), acts
    # a C another Gemm reads stays beside its copy: over the size policy
    m = gemm_transposed(c=rand(30, 5), extra_nodes=[
        node("Gemm", ["a2", "b", "c"], ["g2"], name="gemm2")])
    m.graph.input[0].CopyFrom(vi("a", F, [30, 4]))
    m.graph.input.append(vi("a2", F, [30, 4]))
    m.graph.output[0].CopyFrom(vi("y", F, [5, 30]))
    m.graph.output.append(vi("g2", F, [30, 5]))
    out, acts = run(m, "fuse_transpose_into_gemm")
    assert ops(out) == ["Gemm", "Transpose", "Relu", "Gemm"], ops(out)
    assert any("--fold-limit" in r for r in skip_reasons(acts, "Transpose")), acts
    out, _ = run(m, "fuse_transpose_into_gemm", "--fold-limit", "1M")
    assert ops(out) == ["Gemm", "Relu", "Gemm"], ops(out)


def gemm_passes_should_take_a_transposed_matmul_in_one_default_run():
    # Transpose -> MatMul -> Add: the default pipeline makes one Gemm with
    # transA, and a second optimize writes the same bytes
    m = make([node("Transpose", ["a"], ["ta"], perm=[1, 0]), node("MatMul", ["ta", "b"], ["mm"]),
              node("Add", ["mm", "c"], ["s"]), node("Relu", ["s"], ["y"])],
             [vi("a", F, [4, 3])], [vi("y", F, [3, 5])], [f32("b", rand(4, 5)), f32("c", rand(5))])
    out = fixed_point(m)
    assert ops(out) == ["Gemm", "Relu"], ops(out)


# ------------------------------------------------- fuse_pad_into_conv, _into_pool

XC = vi("x", F, [1, 2, 5, 5])


def padded(reader, pads, value=None, mode=None, opset=13, out_shape=None, extra_nodes=(),
           extra_out=(), reader_ins=("p",), inits=()):
    pad_ins = ["x", "pads"] + (["v"] if value is not None else [])
    inits = [i64("pads", pads)] + ([f32("v", value)] if value is not None else []) + list(inits)
    attrs = {"mode": mode} if mode else {}
    nodes = [node("Pad", pad_ins, ["p"], name="pad", **attrs), reader]
    return make(nodes + [node("Relu", [reader.output[0]], ["y"])] + list(extra_nodes), [XC],
                [vi("y", F, out_shape)] + list(extra_out), inits, opset=opset)


def conv(pads=None, **attrs):
    if pads:
        attrs["pads"] = pads
    return node("Conv", ["p", "w"], ["c"], name="conv", **attrs)


W = f32("w", rand(3, 2, 3, 3))


def fuse_pad_into_conv_should_make_a_zero_pad_the_convs_own():
    for pads, conv_pads, value, want in (
            ([0, 0, 1, 2, 0, 0, 2, 1], None, None, [1, 2, 2, 1]),
            ([0, 0, 1, 1, 0, 0, 1, 1], [1, 0, 0, 1], 0.0, [2, 1, 1, 2])):
        h_out = 5 + pads[2] + pads[6] + (conv_pads[0] + conv_pads[2] if conv_pads else 0) - 2
        w_out = 5 + pads[3] + pads[7] + (conv_pads[1] + conv_pads[3] if conv_pads else 0) - 2
        m = padded(conv(conv_pads), pads, value, out_shape=[1, 3, h_out, w_out], inits=[W])
        out, acts = run(m, "fuse_pad_into_conv")
        assert ops(out) == ["Conv", "Relu"], ops(out)
        c = out.graph.node[0]
        assert c.input[0] == "x" and list(c.attribute[0].ints) == want, c
        (r,) = of(acts, "rewritten", "Conv")
        assert r["from"] == "pad", r


def fuse_pad_into_conv_should_read_the_attribute_form_of_old_opsets():
    m = make([node("Pad", ["x"], ["p"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1]), conv(),
              node("Relu", ["c"], ["y"])], [XC], [vi("y", F, [1, 3, 5, 5])], [W], opset=9)
    out, _ = run(m, "fuse_pad_into_conv")
    assert ops(out) == ["Conv", "Relu"], ops(out)


def fuse_pad_into_conv_should_keep_pads_a_conv_cannot_do():
    # edge mode, a value other than 0, a crop, the channels padded, a Pad read
    # elsewhere, a Conv with auto_pad
    cases = [
        ("mode", dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="edge", out_shape=[1, 3, 5, 5])),
        ("value", dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], value=1.5, out_shape=[1, 3, 5, 5])),
        ("crops", dict(pads=[0, 0, 1, -1, 0, 0, 1, 1], out_shape=[1, 3, 5, 3])),
        ("channel", dict(pads=[0, 1, 1, 1, 0, 0, 1, 1], out_shape=[1, 3, 5, 5],
                         reader=node("Conv", ["p", "w3"], ["c"], name="conv"),
                         inits=[f32("w3", rand(3, 3, 3, 3))])),
        ("read elsewhere", dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], out_shape=[1, 3, 5, 5],
                                extra_out=[vi("p", F, [1, 2, 7, 7])])),
        ("auto_pad", dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], out_shape=[1, 3, 7, 7],
                          reader=node("Conv", ["p", "w"], ["c"], name="conv",
                                      auto_pad="SAME_UPPER"))),
    ]
    for want, kw in cases:
        reader = kw.pop("reader", conv())
        kw["inits"] = kw.get("inits", []) + [W]
        out, acts = run(padded(reader, **kw), "fuse_pad_into_conv")
        assert ops(out)[0] == "Pad", (want, ops(out))
        assert any(want in r for r in skip_reasons(acts, "Conv")), (want, acts)


def pool(op, **attrs):
    return node(op, ["p"], ["c"], name="pool", kernel_shape=[3, 3], **attrs)


def fuse_pad_into_pool_should_take_a_zero_pad_into_an_average_pool_counting_its_pads():
    m = padded(pool("AveragePool", count_include_pad=1, pads=[1, 0, 0, 1]),
               [0, 0, 1, 1, 0, 0, 1, 1], out_shape=[1, 2, 6, 6])
    out, acts = run(m, "fuse_pad_into_pool")
    assert ops(out) == ["AveragePool", "Relu"], ops(out)
    pads = [a for a in out.graph.node[0].attribute if a.name == "pads"][0]
    assert list(pads.ints) == [2, 1, 1, 2], pads


def fuse_pad_into_pool_should_make_a_pool_without_pads_count_the_pads_it_takes():
    # count_include_pad=0 (given or the default) and no pads of its own: every
    # window divides by 9, the Pad's zeros included, as the merged pool counting
    # its pads does
    for reader, shape in ((pool("AveragePool"), [1, 2, 5, 5]),
                          (pool("AveragePool", count_include_pad=0, pads=[0] * 4), [1, 2, 5, 5]),
                          (pool("AveragePool", strides=[2, 2]), [1, 2, 3, 3])):
        out, acts = run(padded(reader, [0, 0, 1, 1, 0, 0, 1, 1], out_shape=shape),
                        "fuse_pad_into_pool")
        assert ops(out) == ["AveragePool", "Relu"], ops(out)
        attrs = {a.name: a for a in out.graph.node[0].attribute}
        assert attrs["count_include_pad"].i == 1 and list(attrs["pads"].ints) == [1] * 4, attrs
        (r,) = of(acts, "rewritten", "AveragePool")
        assert "count_include_pad=1" in r["rule"], r


def fuse_pad_into_pool_should_keep_pads_a_pool_does_differently():
    # a pool that leaves its own pads out of the average would have to count the
    # Pad's and not its own (shown below by the model folding would make);
    # MaxPool pads with -inf; ceil_mode is left alone
    pads = [0, 0, 1, 1, 0, 0, 1, 1]
    for want, reader, shape in (
            ("count_include_pad=0", pool("AveragePool", pads=[1, 1, 1, 1]), [1, 2, 7, 7]),
            ("-inf", pool("MaxPool"), [1, 2, 5, 5]),
            ("ceil_mode", pool("AveragePool", count_include_pad=1, ceil_mode=1,
                               strides=[2, 2]), [1, 2, 3, 3])):
        out, acts = run(padded(reader, pads, out_shape=shape), "fuse_pad_into_pool")
        assert ops(out)[0] == "Pad", (want, ops(out))
        assert any(want in r for r in skip_reasons(acts)), (want, acts)
    with h.tempdir() as d:
        a, b = os.path.join(d, "a.onnx"), os.path.join(d, "b.onnx")
        onnx.save(padded(pool("AveragePool", pads=[1, 1, 1, 1]), pads, out_shape=[1, 2, 7, 7]),
                  a)
        onnx.save(make([pool("AveragePool", pads=[2, 2, 2, 2]), node("Relu", ["c"], ["y"])],
                       [vi("p", F, [1, 2, 5, 5])], [vi("y", F, [1, 2, 7, 7])]), b)
        x = rand(1, 2, 5, 5)
        (ya,), (yb,) = h.run_ort(a, {"x": x}), h.run_ort(b, {"p": x})
        assert not np.allclose(ya, yb), "folding would have been exact"


def merge_passes_should_reach_their_fixed_point_in_one_default_run():
    # Pad -> Conv -> Cast to double and back -> Reshape -> Reshape ->
    # Unsqueeze -> Squeeze: one Conv and one Reshape are left
    m = make([node("Pad", ["x", "pads"], ["p"]), node("Conv", ["p", "w"], ["c"]),
              node("Cast", ["c"], ["d"], to=D), node("Cast", ["d"], ["f"], to=F),
              node("Reshape", ["f", "s1"], ["r1"]), node("Reshape", ["r1", "s2"], ["r2"]),
              node("Unsqueeze", ["r2", "ax"], ["u"]), node("Squeeze", ["u", "ax"], ["q"]),
              node("Relu", ["q"], ["y"])], [XC], [vi("y", F, [3, 25])],
             [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]), W, i64("s1", [75]), i64("s2", [3, 25]),
              i64("ax", [1])])
    out = fixed_point(m)
    assert ops(out) == ["Conv", "Reshape", "Relu"], ops(out)


def fixed_point(m):
    """The default run of m: checked, the same outputs in ORT and the
    evaluator, never bigger, and a second run writes the same bytes."""
    with h.tempdir() as d:
        src, dst, again = (os.path.join(d, n) for n in ("src.onnx", "dst.onnx", "again.onnx"))
        onnx.save(m, src)
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--quiet"))
        h.check(dst)
        feeds = h.random_feeds(src, seed=3)
        want = h.run_ort(src, feeds)
        h.assert_close(h.run_ort(dst, feeds), want)
        h.assert_close(h.run_tileopt(dst, feeds), want)
        h.expect_ok(h.tileopt("optimize", dst, "-o", again, "--quiet"))
        with open(dst, "rb") as a, open(again, "rb") as b:
            assert a.read() == b.read(), "a second run changed the model"
        assert os.path.getsize(dst) <= os.path.getsize(src)
        return onnx.load(dst)


# ------------------------------------------------------------------ sink_transposes

def tr(x, y, perm):
    return node("Transpose", [x], [y], perm=list(perm))


def transposes(m):
    return [list(n.attribute[0].ints) for n in m.graph.node if n.op_type == "Transpose"]


def rules(acts, action, op=None):
    return [a["rule"] for a in of(acts, action, op)]


def sink_transposes_should_cancel_a_pair_around_unary_elementwise_ops():
    m = make([tr("x", "t", [1, 0, 2]), node("Relu", ["t"], ["r"]),
              node("Cast", ["r"], ["c"], to=TensorProto.DOUBLE), node("Sigmoid", ["c"], ["s"]),
              tr("s", "y", [1, 0, 2])], [X], [vi("y", D, [2, 3, 4])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ["Relu", "Cast", "Sigmoid"], ops(out)
    assert out.graph.node[0].input[0] == "x" and out.graph.node[-1].output[0] == "y"
    assert sorted(rules(acts, "eliminated", "Transpose")) == [
        "moved past the ops after it until a Transpose or the ops themselves undo it",
        "undoes the Transpose moved down to it"], acts
    assert len(of(acts, "rewritten")) == 3, acts


def sink_transposes_should_merge_two_transposes_that_do_not_cancel():
    m = make([tr("x", "t", [1, 0, 2]), node("Neg", ["t"], ["r"]), tr("r", "y", [0, 2, 1])],
             [X], [vi("y", F, [3, 4, 2])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ["Neg", "Transpose"], ops(out)
    assert transposes(out) == [[1, 2, 0]], transposes(out)
    assert rules(acts, "rewritten", "Transpose") == [
        "merged with the Transpose moved down to it"], acts


def sink_transposes_should_move_past_a_binary_op_with_a_one_value_constant():
    # the constant on either side, as a scalar or of shape [1, 1]
    m = make([tr("x", "t", [2, 0, 1]), node("Mul", ["t", "two"], ["a"]),
              node("Sub", ["one", "a"], ["b"]), node("Greater", ["b", "half"], ["c"]),
              tr("c", "y", [1, 2, 0])], [X], [vi("y", TensorProto.BOOL, [2, 3, 4])],
             [f32("two", 2.0), f32("one", [[1.0]]), f32("half", [0.5])])
    out, _ = run(m, "sink_transposes")
    assert ops(out) == ["Mul", "Sub", "Greater"], ops(out)


def sink_transposes_should_keep_a_binary_op_with_a_constant_of_several_values():
    m = make([tr("x", "t", [1, 0, 2]), node("Add", ["t", "c"], ["a"]), tr("a", "y", [1, 0, 2])],
             [X], [vi("y", F, [2, 3, 4])], [f32("c", rand(4))])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ["Transpose", "Add", "Transpose"], ops(out)
    assert any("transposed copy" in r for r in skip_reasons(acts, "Transpose")), acts


def sink_unsqueeze(axes, opset):
    """x [2, 3, 4] -> Transpose(2, 0, 1) -> Unsqueeze(axes) -> the Transpose that
    undoes what moving the first one past the Unsqueeze leaves."""
    p = [2, 0, 1]
    rank = 3 + len(axes)
    ins = {a % rank for a in axes}
    kept = [j for j in range(rank) if j not in ins]
    it = iter(p)
    q = [j if j in ins else kept[next(it)] for j in range(rank)]
    back = list(np.argsort(q))
    shape = [1] * rank
    tshape = iter([4, 2, 3])
    for j in range(rank):
        if j not in ins:
            shape[j] = next(tshape)
    yshape = [shape[b] for b in back]
    if opset >= 13:
        un = node("Unsqueeze", ["t", "ax"], ["u"])
        inits = [i64("ax", axes)]
    else:
        un = node("Unsqueeze", ["t"], ["u"], axes=axes)
        inits = []
    return make([tr("x", "t", p), un, tr("u", "y", back)], [X], [vi("y", F, yshape)], inits,
                opset=opset)


def sink_transposes_should_move_past_an_unsqueeze():
    for axes, opset in (([1, -1], 13), ([0], 13), ([0, 2, 4], 13), ([3], 11)):
        out, acts = run(sink_unsqueeze(axes, opset), "sink_transposes")
        assert ops(out) == ["Unsqueeze"], (axes, opset, ops(out))
        assert of(acts, "eliminated", "Transpose"), acts


def sink_transposes_should_move_past_a_squeeze_with_its_axes_remapped():
    x = vi("x", F, [2, 1, 4, 1])
    for opset in (13, 11):
        sq = (node("Squeeze", ["t", "ax"], ["s"]) if opset >= 13
              else node("Squeeze", ["t"], ["s"], axes=[0, -1]))
        m = make([tr("x", "t", [3, 2, 0, 1]), sq, tr("s", "y", [1, 0])], [x],
                 [vi("y", F, [2, 4])], [i64("ax", [0, -1])] if opset >= 13 else [], opset=opset)
        out, _ = run(m, "sink_transposes")
        assert ops(out) == ["Squeeze"], ops(out)
        sq = out.graph.node[0]
        if opset >= 13:
            (axes,) = [numpy_helper.to_array(t) for t in out.graph.initializer
                       if t.name == sq.input[1]]
        else:
            axes = sq.attribute[0].ints
        assert sorted(axes) == [1, 3], axes


def sink_transposes_should_move_past_a_slice_with_its_axes_remapped():
    cases = [
        # axes given, a negative one among them
        ([i64("st", [1, 0]), i64("en", [3, 2]), i64("ax", [-2, 2])], ["st", "en", "ax"],
         [2, 2, 2]),
        # no axes: the first len(starts) axes; steps after an empty axes slot
        ([i64("st", [0, 1]), i64("en", [1, 3])], ["st", "en"], [1, 3, 2]),
        ([i64("st", [0, 1]), i64("en", [1, 3]), i64("sp", [1, 1])], ["st", "en", "", "sp"],
         [1, 3, 2]),
        # int32 indices: the new axes have their type
        ([numpy_helper.from_array(np.array(v, np.int32), n) for n, v in
          (("st", [1]), ("en", [3]), ("ax", [1]))], ["st", "en", "ax"], [2, 3, 2]),
    ]
    for inits, ins, shape in cases:
        m = make([tr("x", "t", [0, 2, 1]), node("Slice", ["t"] + ins, ["s"]),
                  tr("s", "y", [0, 2, 1])], [X], [vi("y", F, shape)], inits)
        out, _ = run(m, "sink_transposes")
        assert ops(out) == ["Slice"], (ins, ops(out))
    m = make([tr("x", "t", [0, 2, 1]),
              node("Slice", ["t"], ["s"], starts=[1], ends=[3], axes=[1]),
              tr("s", "y", [0, 2, 1])], [X], [vi("y", F, [2, 3, 2])], opset=9)
    out, _ = run(m, "sink_transposes")
    (axes,) = [a.ints for a in out.graph.node[0].attribute if a.name == "axes"]
    assert ops(out) == ["Slice"] and list(axes) == [2], out.graph


def sink_transposes_should_keep_a_slice_with_computed_axes():
    m = make([tr("x", "t", [0, 2, 1]), node("Slice", ["t", "st", "en", "ax"], ["s"]),
              tr("s", "y", [0, 2, 1])], [X, vi("ax", I64, [1])], [vi("y", F, [2, 3, 2])],
             [i64("st", [1]), i64("en", [3])])
    feeds = {"x": rand(2, 3, 4), "ax": np.array([1], np.int64)}
    out, acts = run(m, "sink_transposes", feeds=feeds)
    assert ops(out) == ["Transpose", "Slice", "Transpose"], ops(out)
    assert any("computed at run time" in r for r in skip_reasons(acts, "Transpose")), acts


def sink_transposes_should_make_one_transpose_after_a_concat_of_transposes():
    m = make([tr("x", "a", [0, 2, 1]), tr("x2", "b", [0, 2, 1]),
              node("Concat", ["a", "b", "a"], ["c"], axis=-2), node("Relu", ["c"], ["y"])],
             [X, vi("x2", F, [2, 3, 5])], [vi("y", F, [2, 13, 3])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ["Concat", "Transpose", "Relu"], ops(out)
    assert out.graph.node[0].attribute[0].i == 2
    (c,) = of(acts, "rewritten", "Concat")
    assert c["perm"] == [0, 2, 1], c
    assert len(of(acts, "eliminated", "Transpose")) == 2, acts


def sink_transposes_should_keep_a_concat_of_transposes_by_different_permutations():
    m = make([tr("x", "a", [0, 2, 1]), tr("x2", "b", [2, 1, 0]),
              node("Concat", ["a", "b"], ["y"], axis=1)],
             [X, vi("x2", F, [3, 4, 2])], [vi("y", F, [2, 8, 3])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ["Transpose", "Transpose", "Concat"], ops(out)
    assert any("different permutations" in r for r in skip_reasons(acts, "Concat")), acts


def unfold(rows=2, cols=3):
    """What an exporter writes for an unfold of x [1, 1, 4 * rows, 2 * cols] into
    4 x 2 patches: a Slice, Transpose and Unsqueeze per row, a Concat, and the
    same per column."""
    nodes, inits = [], [i64("a2", [2]), i64("a3", [3])]
    rs = []
    for r in range(rows):
        inits += [i64(f"rs{r}", [4 * r]), i64(f"re{r}", [4 * r + 4])]
        nodes += [node("Slice", ["x", f"rs{r}", f"re{r}", "a2"], [f"r{r}"]),
                  tr(f"r{r}", f"rt{r}", [0, 1, 3, 2]),
                  node("Unsqueeze", [f"rt{r}", "a2"], [f"ru{r}"])]
        rs.append(f"ru{r}")
    nodes.append(node("Concat", rs, ["rows"], axis=2))
    cs = []
    for c in range(cols):
        inits += [i64(f"cs{c}", [2 * c]), i64(f"ce{c}", [2 * c + 2])]
        nodes += [node("Slice", ["rows", f"cs{c}", f"ce{c}", "a3"], [f"c{c}"]),
                  tr(f"c{c}", f"ct{c}", [0, 1, 2, 4, 3]),
                  node("Unsqueeze", [f"ct{c}", "a3"], [f"cu{c}"])]
        cs.append(f"cu{c}")
    nodes += [node("Concat", cs, ["y"], axis=3)]
    return make(nodes, [vi("x", F, [1, 1, 4 * rows, 2 * cols])],
                [vi("y", F, [1, 1, rows, cols, 4, 2])], inits)


def sink_transposes_should_remove_every_transpose_of_an_unfold():
    out, acts = run(unfold(), "sink_transposes")
    assert "Transpose" not in ops(out), ops(out)
    assert len(of(acts, "eliminated", "Transpose")) == 2 + 1 + 3, acts
    out = fixed_point(unfold(3, 4))
    assert "Transpose" not in ops(out), ops(out)


def sink_transposes_should_merge_into_every_reader_when_each_leads_to_a_transpose():
    m = make([tr("x", "t", [1, 0, 2]), node("Relu", ["t"], ["r"]), tr("r", "y", [1, 0, 2]),
              node("Neg", ["t"], ["n"]), tr("n", "z", [1, 2, 0]), tr("t", "w", [0, 2, 1])],
             [X], [vi("y", F, [2, 3, 4]), vi("z", F, [2, 4, 3]), vi("w", F, [3, 4, 2])])
    out, _ = run(m, "sink_transposes")
    assert sorted(ops(out)) == ["Neg", "Relu", "Transpose", "Transpose"], ops(out)
    assert sorted(transposes(out)) == [[0, 2, 1], [1, 2, 0]], transposes(out)


def sink_transposes_should_move_down_only_a_branch_that_undoes_it():
    # the Transpose stays for a graph output, or for a reader whose ops lead
    # to no Transpose; the Relu's branch, which ends at its inverse, reads x
    t, back = tr("x", "t", [1, 0, 2]), [tr("r", "y", [1, 0, 2])]
    relu, y, t_shape = node("Relu", ["t"], ["r"]), vi("y", F, [2, 3, 4]), [3, 2, 4]
    cases = [
        ([t, relu] + back, [y, vi("t", F, t_shape)], "graph output"),
        ([t, relu] + back + [node("Softmax", ["t"], ["z"])], [y, vi("z", F, t_shape)],
         "several readers"),
    ]
    for nodes, outs, why in cases:
        m = make(nodes, [X], outs)
        out, acts = run(m, "sink_transposes")
        assert len(ops(out)) == len(ops(m)) - 1, (why, ops(out))
        assert ops(out).count("Transpose") == 1, (why, ops(out))
        (relu_out,) = [n for n in out.graph.node if n.op_type == "Relu"]
        assert relu_out.input[0] == "x", relu_out
        assert any(why in r and "read its input instead" in r
                   for r in skip_reasons(acts, "Transpose")), (why, acts)
    # a branch whose end Transpose only merges (no inverse) would remove nothing
    m = make([t, relu, tr("r", "y", [0, 2, 1])], [X],
             [vi("y", F, [3, 4, 2]), vi("t", F, t_shape)])
    out, _ = run(m, "sink_transposes")
    assert ops(out) == ops(m), ops(out)


def sink_transposes_should_move_past_a_reduction():
    # Transpose, ReduceMax over y's axes, the inverse Transpose: a reduction of
    # x's axes; without keepdims the axes go as a Squeeze's would
    # (ReduceSum takes its axes as an input from opset 13, the others from 18)
    for op, keep in (("ReduceMax", 1), ("ReduceMax", 0), ("ReduceSum", 1), ("ReduceSum", 0)):
        axes = [2]
        back = [1, 0, 2] if keep else [1, 0]
        red = (node(op, ["t", "ax"], ["r"], keepdims=keep) if op == "ReduceSum"
               else node(op, ["t"], ["r"], axes=axes, keepdims=keep))
        y_shape = [2, 3, 1] if keep else [2, 3]
        m = make([tr("x", "t", [1, 0, 2]), red, tr("r", "y", back)], [X], [vi("y", F, y_shape)],
                 [i64("ax", axes)] if op == "ReduceSum" else [], opset=13)
        out, _ = run(m, "sink_transposes")
        assert ops(out) == [op], (op, keep, ops(out))
        r = out.graph.node[0]
        if op == "ReduceSum":
            (got,) = [list(numpy_helper.to_array(t)) for t in out.graph.initializer
                      if t.name == r.input[1]]
        else:
            got = [a.ints for a in r.attribute if a.name == "axes"][0]
        assert list(got) == [2], (op, keep, got)
    # y's axis 0 is x's axis 1: the reduction names it
    m = make([tr("x", "t", [1, 0, 2]), node("ReduceMean", ["t"], ["r"], axes=[0], keepdims=1),
              tr("r", "y", [1, 0, 2])], [X], [vi("y", F, [2, 1, 4])], opset=13)
    out, _ = run(m, "sink_transposes")
    assert ops(out) == ["ReduceMean"], ops(out)
    axes = [list(a.ints) for a in out.graph.node[0].attribute if a.name == "axes"]
    assert axes == [[1]], axes


def sink_transposes_should_keep_a_transpose_read_elsewhere():
    t = tr("x", "t", [1, 0, 2])
    relu, t_shape = node("Relu", ["t"], ["r"]), [3, 2, 4]
    cases = [
        # ops that lead to a graph output, or to an op it does not move past
        ([t, relu], [vi("r", F, t_shape)], "remove nothing"),
        ([t, relu, node("Softmax", ["r"], ["z"])], [vi("z", F, t_shape)], "remove nothing"),
    ]
    for nodes, outs, why in cases:
        m = make(nodes, [X], outs)
        out, acts = run(m, "sink_transposes")
        assert ops(out) == ops(m), (why, ops(out))
        assert any(why in r for r in skip_reasons(acts, "Transpose")), (why, acts)


def sink_transposes_should_leave_a_transpose_next_to_no_op_it_moves_past():
    m = make([tr("x", "t", [1, 0, 2]), node("Softmax", ["t"], ["y"])], [X],
             [vi("y", F, [3, 2, 4])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ["Transpose", "Softmax"] and not acts, acts


def sink_transposes_should_drop_a_transpose_a_gather_of_one_index_makes_needless():
    # Gather of a scalar on axis 0 of Transpose(x, (1, 0, 2)) is Gather on x's
    # axis 1, whose other axes keep their order
    m = make([tr("x", "t", [1, 0, 2]), node("Gather", ["t", "i"], ["y"], axis=0)], [X],
             [vi("y", F, [2, 4])], [i64("i", 1)])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ["Gather"] and out.graph.node[0].attribute[0].i == 1, out.graph
    assert out.graph.node[0].output[0] == "y"


def sink_transposes_should_move_past_a_gather_of_a_list_of_indices():
    m = make([tr("x", "t", [1, 0, 2]), node("Gather", ["t", "i"], ["g"], axis=-1),
              tr("g", "y", [1, 0, 2])], [X], [vi("y", F, [2, 3, 2])], [i64("i", [3, 0])])
    out, _ = run(m, "sink_transposes")
    assert ops(out) == ["Gather"] and out.graph.node[0].attribute[0].i == 2, out.graph
    m = make([tr("x", "t", [1, 0, 2]), node("Gather", ["t", "i"], ["g"], axis=2),
              tr("g", "y", [1, 0, 2, 3])], [X], [vi("y", F, [2, 3, 2, 1])],
             [i64("i", [[3], [0]])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ops(m), ops(out)
    assert any("rank 2" in r for r in skip_reasons(acts, "Transpose")), acts


def channel_shuffle(c=8, hw=3):
    """ShuffleNet's channel shuffle as torch exports it, batch folded into the
    first Reshape: two halves of the channels interleaved, then split by
    Gather."""
    return make([node("Reshape", ["x", "s1"], ["r1"]), tr("r1", "t", [1, 0, 2]),
                 node("Reshape", ["t", "s2"], ["r2"]),
                 node("Gather", ["r2", "i0"], ["y0"], axis=0),
                 node("Gather", ["r2", "i1"], ["y1"], axis=0)],
                [vi("x", F, [1, c, hw, hw])],
                [vi("y0", F, [1, c // 2, hw, hw]), vi("y1", F, [1, c // 2, hw, hw])],
                [i64("s1", [c // 2, 2, hw * hw]), i64("s2", [2, -1, c // 2, hw, hw]),
                 i64("i0", 0), i64("i1", 1)])


def sink_transposes_should_move_past_a_reshape_that_splits_axes():
    # the Transpose moves past the Reshape (its runs [2], [1, 4], [3, 3]) and
    # both Gathers, after which nothing is left to permute
    out, acts = run(channel_shuffle(), "sink_transposes")
    assert ops(out) == ["Reshape", "Reshape", "Gather", "Gather"], ops(out)
    (t,) = of(acts, "eliminated", "Transpose")
    assert t["ends"] == 2, t
    shape = [numpy_helper.to_array(i) for i in out.graph.initializer
             if i.name == out.graph.node[1].input[1]][0]
    assert list(shape) == [1, 4, 2, 3, 3], shape
    assert [n.attribute[0].i for n in out.graph.node[2:]] == [2, 2], out.graph
    # the default run makes one Reshape of it, as ONNX Runtime's basic level does
    out = fixed_point(channel_shuffle(16, 5))
    assert ops(out) == ["Reshape", "Gather", "Gather"], ops(out)


def sink_transposes_should_keep_a_reshape_that_merges_axes_it_moved_apart():
    m = make([tr("x", "t", [1, 0, 2]), node("Reshape", ["t", "s"], ["r"]),
              node("Reshape", ["r", "s2"], ["y"])], [X], [vi("y", F, [2, 3, 4])],
             [i64("s", [12, 2]), i64("s2", [2, 3, 4])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ops(m), ops(out)
    assert any("merges axes" in r for r in skip_reasons(acts, "Transpose")), acts


def sink_transposes_should_follow_every_branch_that_ends_at_a_transpose():
    m = make([tr("x", "t", [1, 0, 2]), node("Relu", ["t"], ["r"]), tr("r", "y", [1, 0, 2]),
              node("Unsqueeze", ["r", "ax"], ["u"]), tr("u", "z", [1, 0, 2, 3])],
             [X], [vi("y", F, [2, 3, 4]), vi("z", F, [2, 3, 4, 1])], [i64("ax", [3])])
    out, _ = run(m, "sink_transposes")
    assert ops(out) == ["Relu", "Unsqueeze"], ops(out)
    # one branch to a Softmax: the Transpose would need a copy there
    m = make([tr("x", "t", [1, 0, 2]), node("Relu", ["t"], ["r"]), tr("r", "y", [1, 0, 2]),
              node("Softmax", ["r"], ["z"])], [X], [vi("y", F, [2, 3, 4]), vi("z", F, [3, 2, 4])])
    out, acts = run(m, "sink_transposes")
    assert ops(out) == ops(m), ops(out)
    assert skip_reasons(acts, "Transpose"), acts


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

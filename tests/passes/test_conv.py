#!/usr/bin/python3
"""Model-level tests of the Conv folds (passes/conv/): BatchNormalization, Mul,
Add and Sub by a per-channel constant folded into the Conv before them, and the
cases left alone.

Each case builds a small model, runs `tileopt optimize --passes PASS`, checks the
output with onnx.checker (full check), validates the report against the schema,
and evaluates the original and the output on the same seeded inputs in ONNX
Runtime and in tileopt's evaluator: all four agree within the verify tolerance
(folding rounds the sums differently).
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

F = TensorProto.FLOAT
vi = h.vi
RNG = np.random.default_rng(3)


def f32(name, v):
    return numpy_helper.from_array(np.asarray(v, dtype=np.float32), name)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def bn_params(c, var=None):
    return [f32("s", rand(c)), f32("bb", rand(c)), f32("mean", rand(c)),
            f32("var", np.abs(rand(c)) + 0.5 if var is None else var)]


BN_IN = ["s", "bb", "mean", "var"]
X = vi("x", F, [1, 4, 6, 6])


def conv_bn(bias=True, group=1, c=6, bn_out="y", extra_out=(), extra_nodes=(), var=None,
            opset=13):
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = [f32("w", rand(c, 4 // group, 3, 3))] + ([f32("b", rand(c))] if bias else [])
    nodes = [node("Conv", ins, ["c"], name="conv", group=group, pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c"] + BN_IN, [bn_out], name="bn", epsilon=1e-3)]
    outs = [vi(bn_out, F, [1, c, 6, 6])] + list(extra_out)
    return make(nodes + list(extra_nodes), [X], outs, inits + bn_params(c, var), opset=opset)


def fuse_bn_into_conv_should_fold_a_batchnorm_into_the_conv_before_it():
    for bias, group in ((True, 1), (False, 1), (True, 2)):
        out, acts = run(conv_bn(bias, group), "fuse_bn_into_conv")
        assert ops(out) == ["Conv"], ops(out)
        assert out.graph.node[0].output[0] == "y" and len(out.graph.node[0].input) == 3
        (e,) = of(acts, "eliminated", "BatchNormalization")
        assert e["into"] == "conv", e
        # the old weights and the BN's constants are gone: no growth
        assert len(out.graph.initializer) == 2, [t.name for t in out.graph.initializer]


def fuse_bn_into_conv_should_work_at_opset_9():
    out, _ = run(conv_bn(opset=9), "fuse_bn_into_conv")
    assert ops(out) == ["Conv"], ops(out)


def fuse_bn_into_conv_should_keep_a_bn_whose_conv_output_is_read_elsewhere():
    m = conv_bn(extra_nodes=[node("Relu", ["c"], ["r"])], extra_out=[vi("r", F, [1, 6, 6, 6])])
    out, acts = run(m, "fuse_bn_into_conv")
    assert "BatchNormalization" in ops(out), ops(out)
    (s,) = of(acts, "skipped", "BatchNormalization")
    assert "read elsewhere" in s["reason"], s


def fuse_bn_into_conv_should_keep_a_bn_whose_weights_another_conv_shares():
    # the scaled copy would stay beside the original the other Conv reads
    m = conv_bn(extra_nodes=[node("Conv", ["x", "w"], ["c2"], name="conv2", pads=[1, 1, 1, 1])],
                extra_out=[vi("c2", F, [1, 6, 6, 6])])
    out, acts = run(m, "fuse_bn_into_conv")
    assert "BatchNormalization" in ops(out), ops(out)
    (s,) = of(acts, "skipped", "BatchNormalization")
    assert "more bytes" in s["reason"], s


def fuse_bn_into_conv_should_keep_a_bn_with_a_negative_variance():
    var = np.abs(rand(6)) + 0.5
    var[2] = -1
    out, acts = run(conv_bn(var=var), "fuse_bn_into_conv")
    assert "BatchNormalization" in ops(out), ops(out)
    (s,) = of(acts, "skipped", "BatchNormalization")
    assert "not positive" in s["reason"], s


def fuse_bn_into_conv_should_keep_a_bn_after_something_else():
    m = make([node("Relu", ["x"], ["r"]),
              node("BatchNormalization", ["r"] + BN_IN, ["y"], name="bn")], [X],
             [vi("y", F, [1, 4, 6, 6])], bn_params(4))
    out, acts = run(m, "fuse_bn_into_conv")
    assert ops(out) == ["Relu", "BatchNormalization"], ops(out)
    assert not acts, acts


def affine(op, k, conv_first=True, bias=True, c=6, outshape=None):
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = [f32("w", rand(c, 4, 3, 3)), f32("k", k)] + ([f32("b", rand(c))] if bias else [])
    pair = ["c", "k"] if conv_first else ["k", "c"]
    return make([node("Conv", ins, ["c"], name="conv"), node(op, pair, ["y"], name="op")], [X],
                [vi("y", F, outshape or [1, c, 4, 4])], inits)


def fuse_affine_into_conv_should_fold_mul_and_add_by_a_channel_constant():
    cases = [("Mul", rand(6, 1, 1), True), ("Mul", rand(6, 1, 1), False),
             ("Mul", np.float32(1.5), True), ("Add", rand(6, 1, 1), True),
             ("Add", rand(6, 1, 1), False)]
    for op, k, bias in cases:
        out, acts = run(affine(op, k, bias=bias), "fuse_affine_into_conv")
        assert ops(out) == ["Conv"], (op, ops(out))
        assert out.graph.node[0].output[0] == "y"
        (e,) = of(acts, "eliminated", op)
        assert e["into"] == "conv", e


def fuse_affine_into_conv_should_keep_the_forms_onnx_runtime_does_not_fuse():
    # ORT runs these unfused in the original: folded weights would round
    # differently there
    for op, k, conv_first in (("Mul", rand(1, 6, 1, 1), True), ("Add", rand(1), True),
                              ("Add", rand(6, 1, 1), False)):
        out, acts = run(affine(op, k, conv_first), "fuse_affine_into_conv")
        assert ops(out) == ["Conv", op], ops(out)
        (s,) = of(acts, "skipped", op)
        assert "ONNX Runtime" in s["reason"], s


def fuse_affine_into_conv_should_keep_a_mul_whose_weights_another_conv_shares():
    m = affine("Mul", rand(6, 1, 1))
    m.graph.node.append(node("Conv", ["x", "w"], ["c2"], name="conv2"))
    m.graph.output.append(vi("c2", F, [1, 6, 4, 4]))
    out, acts = run(m, "fuse_affine_into_conv")
    assert ops(out) == ["Conv", "Mul", "Conv"], ops(out)
    (s,) = of(acts, "skipped", "Mul")
    assert s["rule"] == "fold-limit" and s["bytes_written"] > s["bytes_freed"], s
    out, _ = run(m, "fuse_affine_into_conv", "--fold-limit", "1M")
    assert ops(out) == ["Conv", "Conv"], ops(out)


def fuse_affine_into_conv_should_keep_constants_that_vary_within_a_channel():
    for k, shape in ((rand(4), None), (rand(1, 1, 4, 4), None), (rand(2, 6, 1, 1), [2, 6, 4, 4]),
                     (rand(1, 1, 6, 1, 1), [1, 1, 6, 4, 4])):
        out, acts = run(affine("Add", k, outshape=shape), "fuse_affine_into_conv")
        assert ops(out) == ["Conv", "Add"], ops(out)
        (s,) = of(acts, "skipped", "Add")
        assert "varies" in s["reason"], s


def fuse_affine_into_conv_should_leave_a_residual_add_alone():
    m = make([node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
              node("Add", ["c", "x"], ["y"], name="add")], [X], [vi("y", F, [1, 4, 6, 6])],
             [f32("w", rand(4, 4, 3, 3))])
    out, acts = run(m, "fuse_affine_into_conv")
    assert ops(out) == ["Conv", "Add"], ops(out)
    assert not acts, acts


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

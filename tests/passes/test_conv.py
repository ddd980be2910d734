#!/usr/bin/python3
"""Model-level tests of the Conv folds (passes/conv/): BatchNormalization, Mul,
Add and Sub by a per-channel constant folded into the Conv, ConvTranspose, Gemm
or MatMul by a constant before them, and the cases left alone.

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


def fuse_bn_into_conv_should_fold_after_dilated_strided_and_auto_padded_convs():
    # the fold scales each output channel's weights, whatever the Conv does with
    # them: dilations, strides, auto_pad and groups leave it as exact
    for attrs, shape in (({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, [1, 6, 6, 6]),
                         ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, [1, 6, 3, 3]),
                         ({"group": 2, "auto_pad": "VALID"}, [1, 6, 4, 4])):
        w = f32("w", rand(6, 4 // attrs.get("group", 1), 3, 3))
        m = make([node("Conv", ["x", "w"], ["c"], name="conv", **attrs),
                  node("BatchNormalization", ["c"] + BN_IN, ["y"], name="bn", epsilon=1e-3)],
                 [X], [vi("y", F, shape)], [w] + bn_params(6))
        out, acts = run(m, "fuse_bn_into_conv")
        assert ops(out) == ["Conv"], (attrs, ops(out))


def fuse_bn_into_conv_should_fold_a_bn_with_epsilon_0_over_positive_variances():
    # epsilon only guards the square root: with every variance positive, 0 is
    # as good (a variance of 0 with it is "not positive", as a negative one is)
    m = conv_bn()
    for n in m.graph.node:
        if n.op_type == "BatchNormalization":
            n.attribute[0].f = 0.0
    out, acts = run(m, "fuse_bn_into_conv")
    assert ops(out) == ["Conv"], ops(out)


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


# ------------------------------------------- ConvTranspose, Gemm and MatMul

def bn_after(producer_nodes, inputs, out_shape, c, inits, opset=13, bn_attrs=None,
             bn_outs=("y",)):
    nodes = list(producer_nodes) + [node("BatchNormalization", ["p"] + BN_IN, list(bn_outs),
                                         name="bn", epsilon=1e-3, **(bn_attrs or {}))]
    return make(nodes, inputs, [vi("y", F, out_shape)], list(inits) + bn_params(c), opset=opset)


def conv_transpose_bn(group=1, bias=True, c=6):
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = [f32("w", rand(4, c // group, 3, 3))] + ([f32("b", rand(c))] if bias else [])
    ct = node("ConvTranspose", ins, ["p"], name="ct", group=group, strides=[2, 2])
    return bn_after([ct], [X], [1, c, 13, 13], c, inits)


def fuse_bn_into_conv_should_keep_a_batchnorm_onnx_runtime_does_not_fold():
    # ONNX Runtime runs these BNs itself: folded weights would round
    # differently from the original there
    for m in (conv_transpose_bn(1, True), conv_transpose_bn(2, False), gemm_bn()):
        out, acts = run(m, "fuse_bn_into_conv")
        assert ops(out)[-1] == "BatchNormalization", ops(out)
        (s,) = of(acts, "skipped", "BatchNormalization")
        assert "ONNX Runtime" in s["reason"], s


def gemm_bn(c_shape=(6,), trans_b=0, alpha=1.0, beta=1.0, opset=13, k=5, **kw):
    inits = [f32("B", rand(6, k) if trans_b else rand(k, 6))]
    ins = ["a", "B"]
    if c_shape is not None:
        inits.append(f32("C", rand(*c_shape)))
        ins.append("C")
    gemm = node("Gemm", ins, ["p"], name="gemm", transB=trans_b, alpha=alpha, beta=beta)
    return bn_after([gemm], [vi("a", F, [3, k])], [3, 6], 6, inits, opset=opset, **kw)


def fuse_bn_into_conv_should_keep_a_bn_after_a_gemm_whose_c_varies_along_the_rows():
    for c_shape in ((3, 6), (3, 1)):
        out, acts = run(gemm_bn(c_shape), "fuse_bn_into_conv")
        assert ops(out) == ["Gemm", "BatchNormalization"], ops(out)
        (s,) = of(acts, "skipped", "BatchNormalization")
        assert "varies along the rows" in s["reason"], s


def fuse_bn_into_conv_should_keep_a_training_bn():
    # opset 15: training_mode=1 normalizes by the batch's own statistics
    out, acts = run(gemm_bn(opset=15, bn_attrs={"training_mode": 1},
                            bn_outs=("y", "running_mean", "running_var")), "fuse_bn_into_conv")
    assert ops(out) == ["Gemm", "BatchNormalization"], ops(out)
    (s,) = of(acts, "skipped", "BatchNormalization")
    assert "training_mode" in s["reason"], s


def matmul_bn(a_shape=(3, 5), opset=13):
    out_shape = list(a_shape[:-1]) + [6]
    mm = node("MatMul", ["a", "B"], ["p"], name="mm")
    return bn_after([mm], [vi("a", F, list(a_shape))], out_shape, 6,
                    [f32("B", rand(a_shape[-1], 6))], opset=opset)


def fuse_bn_into_conv_should_make_a_matmul_and_a_batchnorm_one_gemm():
    for opset in (7, 9, 13):
        out, acts = run(matmul_bn(opset=opset), "fuse_bn_into_conv")
        assert ops(out) == ["Gemm"], (opset, ops(out))
        n = out.graph.node[0]
        assert n.output[0] == "y" and n.name == "mm" and len(n.input) == 3, n
        (e,) = of(acts, "eliminated", "BatchNormalization")
        assert e["into"] == "mm" and "made a Gemm" in e["rule"], e


def fuse_bn_into_conv_should_keep_a_bn_after_a_batched_matmul():
    # [2, 6, 5] x [5, 6]: the weight's columns are the last axis, the BN's
    # channels axis 1
    out, acts = run(matmul_bn((2, 6, 5)), "fuse_bn_into_conv")
    assert ops(out) == ["MatMul", "BatchNormalization"], ops(out)
    (s,) = of(acts, "skipped", "BatchNormalization")
    assert "batched" in s["reason"], s


def fuse_bn_into_conv_should_keep_a_bn_whose_matmul_weight_another_node_shares():
    m = matmul_bn((3, 40))
    m.graph.node.append(node("MatMul", ["a", "B"], ["m2"], name="mm2"))
    m.graph.output.append(vi("m2", F, [3, 6]))
    out, acts = run(m, "fuse_bn_into_conv")
    assert ops(out) == ["MatMul", "BatchNormalization", "MatMul"], ops(out)
    (s,) = of(acts, "skipped", "BatchNormalization")
    assert s["rule"] == "fold-limit" and s["bytes_written"] > s["bytes_freed"], s
    out, _ = run(m, "fuse_bn_into_conv", "--fold-limit", "1M")
    assert sorted(ops(out)) == ["Gemm", "MatMul"], ops(out)


def producer_op(producer, op, k, k_first=False, a_shape=(3, 5), out_shape=None, c_shape=(6,)):
    if producer == "Gemm":
        inits = [f32("B", rand(5, 6))] + ([f32("C", rand(*c_shape))] if c_shape else [])
        p = node("Gemm", ["a", "B"] + (["C"] if c_shape else []), ["p"], name="prod")
        inputs = [vi("a", F, list(a_shape))]
    elif producer == "MatMul":
        inits, p = [f32("B", rand(5, 6))], node("MatMul", ["a", "B"], ["p"], name="prod")
        inputs = [vi("a", F, list(a_shape))]
    else:
        inits = [f32("w", rand(4, 6, 3, 3))]
        p, inputs = node("ConvTranspose", ["x", "w"], ["p"], name="prod"), [X]
        out_shape = out_shape or [1, 6, 8, 8]
    inits.append(f32("k", k))
    out_shape = out_shape or list(a_shape[:-1]) + [6]
    pair = ["k", "p"] if k_first else ["p", "k"]
    return make([p, node(op, pair, ["y"], name="op")], inputs, [vi("y", F, out_shape)], inits)


POW2 = np.array([2, 0.5, -4, 1, 0.25, -0.125], np.float32)


def fuse_affine_into_conv_should_fold_exact_muls_and_adds_into_conv_transpose_gemm_and_matmul():
    # powers of two scale every sum exactly; a ConvTranspose without a bias
    # adds its new one after the sums, as the Add did
    cases = [("ConvTranspose", "Mul", POW2.reshape(6, 1, 1), False, {}),
             ("ConvTranspose", "Add", rand(6, 1, 1), True, {}),
             ("ConvTranspose", "Mul", POW2.reshape(1, 6, 1, 1), False, {}),
             ("Gemm", "Mul", POW2, False, {}), ("Gemm", "Mul", np.float32(0.5), True, {}),
             ("Gemm", "Mul", POW2.reshape(1, 6), False, {"c_shape": (1,)}),
             ("Gemm", "Mul", POW2, False, {"c_shape": None}),
             ("MatMul", "Mul", POW2, False, {}), ("MatMul", "Mul", POW2.reshape(1, 6), True, {}),
             # batched: the columns of B are still the output's last axis
             ("MatMul", "Mul", POW2, False, {"a_shape": (2, 3, 5)}),
             ("MatMul", "Mul", np.float32(0.125), False, {"a_shape": (2, 3, 5)})]
    for producer, op, k, k_first, kw in cases:
        out, acts = run(producer_op(producer, op, k, k_first, **kw), "fuse_affine_into_conv")
        assert ops(out) == [producer], (producer, op, ops(out))
        assert out.graph.node[0].output[0] == "y"
        (e,) = of(acts, "eliminated", op)
        assert e["into"] == "prod" and producer in e["rule"], e


def fuse_affine_into_conv_should_keep_the_folds_that_would_round_differently():
    for producer, op, k, kw, says in (
            ("MatMul", "Mul", rand(6), {}, "power of two"),
            ("Gemm", "Mul", np.float32(0.3), {}, "power of two"),
            ("ConvTranspose", "Mul", rand(6, 1, 1), {}, "power of two"),
            ("MatMul", "Mul", np.float32(2.0 ** -140), {}, "normal range"),
            ("Gemm", "Add", rand(6), {"c_shape": None}, "block"),
            ("Gemm", "Add", rand(6), {}, "block")):
        out, acts = run(producer_op(producer, op, k, **kw), "fuse_affine_into_conv")
        assert ops(out) == [producer, op], ops(out)
        (s,) = of(acts, "skipped", op)
        assert says in s["reason"], s
    m = producer_op("ConvTranspose", "Add", rand(6, 1, 1))
    m.graph.node[0].input.append("bias")
    m.graph.initializer.append(f32("bias", rand(6)))
    out, acts = run(m, "fuse_affine_into_conv")
    assert ops(out) == ["ConvTranspose", "Add"], ops(out)
    (s,) = of(acts, "skipped", "Add")
    assert "has a bias" in s["reason"], s


def fuse_affine_into_conv_should_keep_constants_that_vary_along_the_rows_of_a_product():
    for producer, k, kw in (("MatMul", rand(3, 1), {}), ("Gemm", rand(3, 6), {}),
                            ("MatMul", rand(2, 1, 6), {"a_shape": (2, 3, 5)}),
                            ("ConvTranspose", rand(1, 1, 8, 8), {})):
        out, acts = run(producer_op(producer, "Mul", k, **kw), "fuse_affine_into_conv")
        assert ops(out) == [producer, "Mul"], ops(out)
        (s,) = of(acts, "skipped", "Mul")
        assert "varies" in s["reason"], s
    out, acts = run(producer_op("MatMul", "Mul", rand(1, 1, 6), out_shape=[1, 3, 6]),
                    "fuse_affine_into_conv")
    assert ops(out) == ["MatMul", "Mul"], ops(out)
    (s,) = of(acts, "skipped", "Mul")
    assert "widens" in s["reason"], s


def fuse_affine_into_conv_should_leave_an_add_after_a_matmul_to_the_gemm_merge():
    # a MatMul has no bias to shift: fuse_matmul_add_into_gemm makes the pair a Gemm
    out, acts = run(producer_op("MatMul", "Add", rand(6)), "fuse_affine_into_conv")
    assert ops(out) == ["MatMul", "Add"], ops(out)
    assert not acts, acts


def fuse_affine_into_conv_should_keep_a_mul_after_an_integer_matmul():
    I32 = TensorProto.INT32
    m = make([node("MatMul", ["a", "B"], ["p"], name="mm"), node("Mul", ["p", "k"], ["y"])],
             [vi("a", I32, [3, 5])], [vi("y", I32, [3, 6])],
             [numpy_helper.from_array(np.arange(30, dtype=np.int32).reshape(5, 6) - 15, "B"),
              numpy_helper.from_array(np.arange(6, dtype=np.int32) - 2, "k")])
    out, acts = run(m, "fuse_affine_into_conv")
    assert ops(out) == ["MatMul", "Mul"], ops(out)
    (s,) = of(acts, "skipped", "Mul")
    assert "integer" in s["reason"], s


def fuse_affine_into_conv_should_keep_a_mul_whose_matmul_weight_another_node_shares():
    m = producer_op("MatMul", "Mul", POW2)
    m.graph.node.append(node("MatMul", ["a", "B"], ["m2"], name="mm2"))
    m.graph.output.append(vi("m2", F, [3, 6]))
    out, acts = run(m, "fuse_affine_into_conv")
    assert ops(out) == ["MatMul", "Mul", "MatMul"], ops(out)
    (s,) = of(acts, "skipped", "Mul")
    assert s["rule"] == "fold-limit", s


def fuse_affine_into_conv_should_say_nothing_of_a_mul_after_a_matmul_of_two_computed_values():
    m = make([node("MatMul", ["a", "b"], ["p"]), node("Mul", ["p", "k"], ["y"])],
             [vi("a", F, [3, 5]), vi("b", F, [5, 6])], [vi("y", F, [3, 6])],
             [f32("k", np.float32(0.5))])
    out, acts = run(m, "fuse_affine_into_conv")
    assert ops(out) == ["MatMul", "Mul"] and not acts, (ops(out), acts)


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

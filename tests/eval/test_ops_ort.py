#!/usr/bin/python3
"""The evaluator against ONNX Runtime on cases ONNX 1.12's node tests leave out:
Scan with axes and directions, Einsum with ellipses and implicit outputs,
Unique of floats along an axis, Det of singular and batched matrices,
MaxUnpool in 3-D, LpPool, LpNormalization, the losses on 4-D scores with
weights and ignore_index, the integer ops with per-column and per-channel
zero points and scales, and the sequence ops no node test runs (SplitToSequence
with and without split, SequenceErase, ConcatFromSequence with new_axis,
SequenceAt at negative positions, SequenceLength) between tensor inputs and
outputs. Each case is one small model run in both. Last, the new kernels'
refusals of bad input: exit 1 and one line naming the node."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402
import ort as _ort  # noqa: E402

RNG = np.random.default_rng(7)
NP2ONNX = {np.dtype(k): v for k, v in {
    np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
    np.int32: TensorProto.INT32, np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}.items()}


def check(node, feeds, inits=(), opset=13, n_out=1, rtol=1e-4, atol=1e-5, what="", extra=()):
    """Runs one node with feeds as graph inputs and inits as initializers in
    ORT and in tileopt, and compares every output."""
    vis = [helper.make_tensor_value_info(k, NP2ONNX[v.dtype], v.shape) for k, v in feeds.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
            for o in node.output[:n_out]]
    g = helper.make_graph(list(extra) + [node], "g", vis, outs,
                          [numpy_helper.from_array(v, k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m = onnx.shape_inference.infer_shapes(m)
    for o in m.graph.output:  # ORT wants output types: take them from inference
        for vi in m.graph.value_info:
            if vi.name == o.name:
                o.CopyFrom(vi)
    with h.tempdir() as d:
        p = os.path.join(d, "m.onnx")
        onnx.save(m, p)
        h.assert_close(h.run_tileopt(p, feeds), h.run_ort(p, feeds), rtol, atol,
                       what=what or node.op_type)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def scan_should_follow_axes_and_directions():
    # body: running sum of a row, plus the row scaled, as a scan output
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["s2"]),
         helper.make_node("Mul", ["x", "x"], ["y"])], "body",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("s2", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    for in_axis, in_dir, out_axis, out_dir in ((0, 0, 0, 0), (1, 1, 1, 0), (-1, 0, -1, 1),
                                               (1, 1, 0, 1)):
        x = f32(4, 3) if in_axis == 0 else f32(3, 4)
        node = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                                scan_input_axes=[in_axis], scan_input_directions=[in_dir],
                                scan_output_axes=[out_axis], scan_output_directions=[out_dir])
        check(node, {"s0": f32(3), "xs": x}, n_out=2,
              what=f"Scan axes {in_axis}/{out_axis} directions {in_dir}/{out_dir}")


def einsum_should_match_for_ellipses_and_implicit_outputs():
    cases = [("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 2)]),
             ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
             ("ij,jk", [(3, 4), (4, 2)]),
             ("ba", [(3, 4)]),
             ("ii->i", [(4, 4)]),
             ("i,i", [(5,), (5,)]),
             ("...i,i->...", [(2, 1, 3), (3,)]),
             ("ij,ij,ij->i", [(2, 3), (2, 3), (2, 3)]),
             ("Ab,bC->AC", [(2, 3), (3, 4)])]
    for eq, shapes in cases:
        feeds = {f"x{i}": f32(*s) for i, s in enumerate(shapes)}
        check(helper.make_node("Einsum", list(feeds), ["y"], equation=eq), feeds, opset=12,
              what=f"Einsum {eq}")


def unique_should_match_for_floats_and_axes():
    x = np.array([[1.5, 2, 1.5], [0, 2, 0], [1.5, 2, 1.5], [-3, 1, 2]], np.float32)
    for kw in ({}, {"sorted": 0}, {"axis": 0}, {"axis": 1, "sorted": 0}, {"axis": -2}):
        node = helper.make_node("Unique", ["x"], ["y", "i", "inv", "c"], **kw)
        check(node, {"x": x}, opset=11, n_out=4, what=f"Unique {kw}")
    ints = RNG.integers(-3, 4, size=(20,)).astype(np.int64)
    check(helper.make_node("Unique", ["x"], ["y", "i", "inv", "c"], sorted=0), {"x": ints},
          opset=11, n_out=4, what="Unique int64 unsorted")


def det_should_match_for_batches_and_singular_matrices():
    sing = np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]], np.float32)
    check(helper.make_node("Det", ["x"], ["y"]), {"x": np.stack([sing, f32(3, 3)])}, opset=11)
    check(helper.make_node("Det", ["x"], ["y"]), {"x": f32(2, 3, 5, 5)}, opset=11)


def max_unpool_should_invert_max_pool_in_3d():
    x = f32(1, 2, 4, 4, 6)
    pool = helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2, 3],
                            strides=[2, 2, 3])
    node = helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2, 3],
                            strides=[2, 2, 3])
    check(node, {"x": x}, extra=[pool], opset=11, what="MaxPool then MaxUnpool")


def max_roi_pool_should_match():
    x = f32(2, 3, 12, 10)
    rois = np.array([[0, 1, 1, 6, 8], [1, 0, 0, 9, 11], [1, 3.6, 2.2, 4.1, 2.9],
                     [0, 8, 9, 30, 40]], np.float32)
    for scale in (1.0, 0.5):
        check(helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=[3, 2],
                               spatial_scale=scale), {"x": x, "r": rois}, opset=11,
              what=f"MaxRoiPool scale {scale}")


def lp_pool_and_lp_normalization_should_match():
    x = f32(2, 3, 7, 6)
    check(helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2],
                           pads=[1, 0, 1, 1], p=3), {"x": x}, opset=11, what="LpPool p=3")
    check(helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=1), {"x": x},
          opset=11, what="LpPool p=1")
    for p, axis in ((2, -1), (1, 1), (2, 0)):
        check(helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=axis), {"x": x},
              opset=11, what=f"LpNormalization p={p} axis={axis}")


def losses_should_match_with_weights_and_ignore_index():
    scores = f32(2, 4, 3, 2)
    target = RNG.integers(0, 4, size=(2, 3, 2)).astype(np.int64)
    target[0, 1, 1] = -1
    weight = np.abs(f32(4)) + 0.1
    for red in ("none", "sum", "mean"):
        node = helper.make_node("SoftmaxCrossEntropyLoss", ["s", "t", "w"], ["l", "lp"],
                                reduction=red, ignore_index=-1)
        check(node, {"s": scores, "t": target, "w": weight}, opset=13, n_out=2,
              what=f"SoftmaxCrossEntropyLoss {red}")
        node = helper.make_node("NegativeLogLikelihoodLoss", ["s", "t"], ["l"], reduction=red,
                                ignore_index=-1)
        check(node, {"s": scores, "t": target}, opset=13, what=f"NegativeLogLikelihoodLoss {red}")


def integer_ops_should_match_with_per_column_and_per_channel_parameters():
    a = RNG.integers(0, 256, size=(4, 5)).astype(np.uint8)
    b = RNG.integers(0, 256, size=(5, 3)).astype(np.uint8)
    azp = np.uint8(17)  # ORT takes only one zero point for A
    bzp = RNG.integers(0, 256, size=(3,)).astype(np.uint8)
    check(helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"]),
          {"a": a, "b": b}, inits=[("azp", azp), ("bzp", bzp)], opset=10, what="MatMulInteger")
    x = RNG.integers(0, 256, size=(1, 3, 6, 6)).astype(np.uint8)
    # 7-bit weights: ORT's uint8 x int8 kernel on AVX2 adds pairs of products
    # in saturating 16-bit lanes, so full-range weights give it wrong sums (its
    # quantizer's reduce_range exists for this); the evaluator's sums are exact
    w = RNG.integers(-64, 64, size=(4, 3, 3, 3)).astype(np.int8)
    inits = [("xs", np.float32(0.02)), ("xz", np.uint8(128)), ("w", w),
             ("ws", (np.abs(f32(4)) * 0.01 + 0.001).astype(np.float32)),
             ("wz", np.zeros(4, np.int8)), ("ys", np.float32(0.5)), ("yz", np.uint8(100)),
             ("bias", RNG.integers(-500, 500, size=(4,)).astype(np.int32))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"],
                            ["y"], pads=[1, 1, 1, 1], strides=[2, 1])
    check(node, {"x": x}, inits=inits, opset=10, atol=1, what="QLinearConv per channel")
    node = helper.make_node("ConvInteger", ["x", "w2", "xz"], ["y"], group=3)
    check(node, {"x": x}, inits=[("w2", RNG.integers(0, 256, size=(3, 1, 2, 2)).astype(np.uint8)),
                                 ("xz", np.uint8(7))], opset=10, what="ConvInteger group 3")


def i64(v):
    return np.array(v, np.int64)


def split_erase_concat_should_match_for_each_split_form_and_new_axis():
    x = f32(3, 5, 2)
    # (SplitToSequence attributes, its split input, erase position, Concat attributes)
    cases = [({"axis": 1}, None, i64(1), {"axis": 1}),
             ({"axis": 1, "keepdims": 0}, None, i64(-2), {"axis": 1, "new_axis": 1}),
             ({"axis": 0, "keepdims": 0}, None, None, {"axis": -1, "new_axis": 1}),
             ({"axis": 0}, i64(2), None, {"axis": 0}),
             ({"axis": -2}, i64([1, 3, 1]), i64(0), {"axis": -2}),
             ({"axis": 2}, np.array([1, 1], np.int32), i64(-1), {"axis": 0, "new_axis": 1})]
    for split_kw, split, pos, cat_kw in cases:
        inits = [("split", split)] if split is not None else []
        if pos is not None:
            inits.append(("pos", pos))
        nodes = [helper.make_node("SplitToSequence", ["x"] + (["split"] if split is not None else []),
                                  ["s"], **split_kw),
                 helper.make_node("SequenceErase", ["s"] + (["pos"] if pos is not None else []),
                                  ["e"])]
        node = helper.make_node("ConcatFromSequence", ["e"], ["y"], **cat_kw)
        check(node, {"x": x}, inits=inits, extra=nodes, opset=11,
              what=f"SplitToSequence {split_kw} split={split} SequenceErase {pos} "
                   f"ConcatFromSequence {cat_kw}")


def sequence_at_should_count_negative_positions_from_the_back():
    x = f32(4, 3)
    split = helper.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0)
    for p in (-4, -1, -2, 0, 3):
        check(helper.make_node("SequenceAt", ["s", "p"], ["y"]), {"x": x}, inits=[("p", i64(p))],
              extra=[split], opset=11, what=f"SequenceAt {p}")
    check(helper.make_node("SequenceAt", ["s", "p"], ["y"]), {"x": x},
          inits=[("p", np.array(-3, np.int32))], extra=[split], opset=11,
          what="SequenceAt int32 -3")


def sequence_length_should_count_items_after_insert_and_erase():
    x = f32(5, 2)
    nodes = [helper.make_node("SplitToSequence", ["x", "two"], ["s"], axis=0),
             helper.make_node("SequenceInsert", ["s", "x", "p"], ["s2"]),
             helper.make_node("SequenceErase", ["s2"], ["s3"]),
             helper.make_node("SequenceInsert", ["s3", "x"], ["s4"])]
    check(helper.make_node("SequenceLength", ["s4"], ["n"]), {"x": x},
          inits=[("two", i64(2)), ("p", i64(-1))], extra=nodes, opset=11,
          what="SequenceLength")
    empty = helper.make_node("SequenceEmpty", [], ["e"], dtype=TensorProto.FLOAT)
    check(helper.make_node("SequenceLength", ["e"], ["n"]), {"x": x}, extra=[empty], opset=11,
          what="SequenceLength of SequenceEmpty")


def fails(node, feeds, expect, opset=13):
    """node on feeds fails in tileopt (exit 1) with expect in its one-line error,
    which names the node."""
    vis = [helper.make_tensor_value_info(k, NP2ONNX[v.dtype], None) for k, v in feeds.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output]
    m = helper.make_model(helper.make_graph([node], "g", vis, outs),
                          opset_imports=[helper.make_opsetid("", opset)])
    with h.tempdir() as d:
        p = os.path.join(d, "m.onnx")
        onnx.save(m, p)
        pbs = _ort.write_inputs(feeds, d)
        cp = h.tileopt("run", p, *pbs)
    assert cp.returncode == 1, (node.op_type, cp.returncode, cp.stderr)
    assert expect in cp.stderr and node.name in cp.stderr, (node.op_type, cp.stderr)


def new_kernels_should_refuse_bad_input_clearly():
    mk = helper.make_node
    fails(mk("Einsum", ["a", "b"], ["y"], name="e1", equation="ij,jk->ik"),
          {"a": f32(2, 3), "b": f32(4, 2)}, "label sizes", 12)
    fails(mk("Einsum", ["a"], ["y"], name="e2", equation="ab->c"), {"a": f32(2, 3)},
          "output label not in any input", 12)
    fails(mk("Unique", ["x"], ["y"], name="u", axis=5), {"x": f32(3)}, "axis outside rank", 11)
    fails(mk("Det", ["x"], ["y"], name="det"), {"x": f32(2, 3)}, "square", 11)
    fails(mk("MaxUnpool", ["x", "i"], ["y"], name="mu", kernel_shape=[2, 2], strides=[2, 2]),
          {"x": f32(1, 1, 2, 2), "i": np.full((1, 1, 2, 2), 99, np.int64)},
          "outside the 16 elements", 11)
    fails(mk("NegativeLogLikelihoodLoss", ["s", "t"], ["l"], name="nll"),
          {"s": f32(2, 3), "t": np.array([0, 5], np.int64)}, "target 5 outside [0, 3)")
    fails(mk("MaxRoiPool", ["x", "r"], ["y"], name="roi", pooled_shape=[2, 2]),
          {"x": f32(1, 1, 4, 4), "r": np.array([[7, 0, 0, 2, 2]], np.float32)},
          "names batch 7", 11)
    fails(mk("RandomUniform", [], ["y"], name="ru", shape=[2], dtype=TensorProto.INT32), {},
          "not a floating type")
    fails(mk("MatMulInteger", ["a", "b"], ["y"], name="mmi"), {"a": f32(2, 2), "b": f32(2, 2)},
          "expected int8 or uint8", 10)
    body = helper.make_graph([helper.make_node("Identity", ["s"], ["s2"])], "body",
                             [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("s2", TensorProto.FLOAT, None)])
    fails(mk("Scan", ["s0", "xs"], ["s", "ys"], name="scan", body=body, num_scan_inputs=3),
          {"s0": f32(3), "xs": f32(4, 3)}, "num_scan_inputs 3")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

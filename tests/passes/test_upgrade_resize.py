#!/usr/bin/python3
"""Resize as TensorFlow and PyTorch exporters write it at opset 11 (sizes given,
roi and scales empty; NHWC models behind Transposes), upgraded to 13 and 21
(and 18 and 19 for the forms of three public exports).

Between 11 and 21 the one change to what these forms mean is Resize-13 dropping
tf_half_pixel_for_nn (x_original = (x + 0.5) / scale). Where half_pixel with
another nearest_mode is the same sampling, the upgrade rewrites the node and ONNX
Runtime's outputs stay bit for bit what they were; where none is, the upgrade
stops naming the node. The evaluator runs each version as its schema says, so a
Resize-13 node still holding the dropped mode gets no verdict from --verify
instead of a match. Every other form keeps its attributes, and ONNX Runtime 1.30
computes each the same at 11, 13 and 21 (also through Transposes, where its
layout optimizer moves them across the Resize from 13 on)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

# (mode, coordinate_transformation_mode, nearest_mode) of tf2onnx and torch.onnx
FORMS = [
    ("nearest", "asymmetric", "floor"),                  # torch nearest, TF legacy
    ("nearest", "tf_half_pixel_for_nn", "floor"),        # TF2 nearest, half-pixel centers
    ("nearest", "tf_half_pixel_for_nn", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"),   # TF align_corners=True
    ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "asymmetric", "round_prefer_floor"),
    ("linear", "half_pixel", None),                      # TF2 bilinear
    ("linear", "pytorch_half_pixel", None),              # torch bilinear
    ("linear", "align_corners", None),
    ("linear", "asymmetric", None),
    ("cubic", "half_pixel", None),
    ("cubic", "align_corners", None),
]
SIZES = [((8, 8), (16, 16)), ((7, 5), (21, 13)), ((10, 10), (15, 15))]


def resize_model(opset, form, hw, out_hw, nhwc, channels=3):
    mode, ctm, nearest = form
    shape = [1, hw[0], hw[1], channels] if nhwc else [1, channels, hw[0], hw[1]]
    inits = [numpy_helper.from_array(np.zeros(0, np.float32), "roi"),
             numpy_helper.from_array(np.zeros(0, np.float32), "scales"),
             numpy_helper.from_array(np.array([1, channels, *out_hw], np.int64), "sizes")]
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if nearest:
        attrs["nearest_mode"] = nearest
    src = "x"
    nodes = []
    if nhwc:
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2], name="to_nchw"))
        src = "xt"
    nodes.append(helper.make_node("Resize", [src, "roi", "scales", "sizes"], ["r"], name="resize",
                                  **attrs))
    nodes.append(helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1], name="to_nhwc")
                 if nhwc else helper.make_node("Relu", ["r"], ["y"], name="relu"))
    out = [1, out_hw[0], out_hw[1], channels] if nhwc else [1, channels, *out_hw]
    g = helper.make_graph(nodes, "resize",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def resize_node(path):
    for n in onnx.load(path).graph.node:
        if n.op_type == "Resize":
            return {a.name: helper.get_attribute_value(a) for a in n.attribute}
    raise AssertionError(f"{path}: no Resize")


def upgrade_should_keep_what_exported_resize_computes():
    ok, why = h.ort_available()
    if not ok:
        raise AssertionError(f"ONNX Runtime needed: {why}")
    with h.tempdir() as d:
        for form in FORMS:
            for hw, out_hw in SIZES:
                nhwc = form[1] in ("tf_half_pixel_for_nn", "half_pixel") and hw[0] != hw[1]
                src = os.path.join(d, "m11.onnx")
                onnx.save(resize_model(11, form, hw, out_hw, nhwc), src)
                feeds = h.random_feeds(src, seed=3)
                want = h.run_ort(src, feeds)
                for target in ("13", "21"):
                    dst = os.path.join(d, f"m{target}.onnx")
                    h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--target-opset", target,
                                          "--verify=strict", "-q"))
                    if target == "13":  # the checker knows opsets up to 17
                        h.check(dst)
                    got = h.run_ort(dst, feeds)
                    if not all(np.array_equal(a, b) for a, b in zip(got, want)):
                        raise AssertionError(f"{form} {hw}->{out_hw} at {target}: ONNX Runtime's "
                                             "outputs changed")
                    attrs = resize_node(dst)
                    if attrs["coordinate_transformation_mode"] == b"tf_half_pixel_for_nn":
                        raise AssertionError(f"{form} at {target}: the mode Resize-13 dropped")
                    h.assert_close(h.run_tileopt(dst, feeds), got, rtol=1e-5, atol=1e-5,
                                   what=f"{form} {hw}->{out_hw} at {target}, evaluator vs ORT")


def upgrade_should_refuse_tf_half_pixel_for_nn_where_resize_13_has_no_equal():
    with h.tempdir() as d:
        for form in (("nearest", "tf_half_pixel_for_nn", "ceil"),
                     ("nearest", "tf_half_pixel_for_nn", "round_prefer_ceil"),
                     ("linear", "tf_half_pixel_for_nn", None),
                     ("cubic", "tf_half_pixel_for_nn", None)):
            src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
            onnx.save(resize_model(11, form, (4, 4), (8, 8), False), src)
            cp = h.tileopt("optimize", src, "-o", dst, "--target-opset", "13")
            if cp.returncode != 1 or "node resize: Resize-13 has no coordinate transformation" \
                    not in cp.stderr or os.path.exists(dst):
                raise AssertionError(f"{form}: exit {cp.returncode} {cp.stderr!r}")
            h.expect_ok(h.tileopt("optimize", src, "-o", dst, "-q", "--verify=strict"))
            os.remove(dst)


def verify_should_give_no_verdict_on_a_mode_the_opset_dropped():
    # A Resize-13 node holding tf_half_pixel_for_nn (as an upgrade that kept it
    # wrote): the evaluator runs Resize-13 as its schema says, which has no such
    # mode, so verify cannot vouch for the conversion.
    with h.tempdir() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(resize_model(13, ("nearest", "tf_half_pixel_for_nn", "floor"), (4, 4), (8, 8),
                               False), src)
        cp = h.tileopt("optimize", src, "-o", dst, "--verify", "--report", "-", "-q")
        h.expect_ok(cp)
        import json
        v = json.loads(cp.stdout)["verify"]
        if v["verdict"] != "skipped" or "tf_half_pixel_for_nn" not in v.get("reason", ""):
            raise AssertionError(f"verify: {v}")
        cp = h.tileopt("optimize", src, "-o", dst, "--verify=strict")
        if cp.returncode != 1 or "tf_half_pixel_for_nn" not in cp.stderr:
            raise AssertionError(f"strict: exit {cp.returncode} {cp.stderr!r}")


def evaluator_should_run_half_pixel_symmetric_as_resize_19_says():
    # Resize-19's mode, which differs from half_pixel where scales make a
    # fractional length: against ONNX Runtime (nearest is left out: at an exact
    # half ORT's float coordinates and the evaluator's double ones may round
    # apart), and refused as unknown before 19.
    with h.tempdir() as d:
        path = os.path.join(d, "m.onnx")
        for mode in ("linear", "cubic"):
            for hw, scales in (((7, 5), (1.7, 2.3)), ((10, 10), (0.55, 1.5)), ((4, 9), (3.0, 0.4))):
                for opset in (19, 18):
                    g = helper.make_graph(
                        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                                          coordinate_transformation_mode="half_pixel_symmetric")],
                        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, *hw])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                        [numpy_helper.from_array(np.array([1, 1, *scales], np.float32), "scales")])
                    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]),
                              path)
                    feeds = h.random_feeds(path, seed=5)
                    if opset == 18:
                        pb = os.path.join(d, "input_0.pb")
                        x = feeds[0] if isinstance(feeds, list) else feeds["x"]
                        with open(pb, "wb") as f:
                            f.write(numpy_helper.from_array(x, "x").SerializeToString())
                        cp = h.tileopt("run", path, pb)
                        if cp.returncode != 1 or "coordinate" not in cp.stderr:
                            raise AssertionError(f"opset 18: exit {cp.returncode} {cp.stderr!r}")
                        continue
                    h.assert_close(h.run_tileopt(path, feeds), h.run_ort(path, feeds),
                                   rtol=1e-4, atol=1e-5, what=f"{mode} {hw} x {scales}")


# The Resize patterns of three public exports whose upgrade to 21 was said to
# change ONNX Runtime's outputs (AGLLNet and M-LSD tiny from tf2onnx, YOLOX nano
# from torch.onnx), each as the smallest graph that keeps what ORT rewrites
# around the Resize: the Convs that take NCHWc blocks (16 channels, a whole block
# on AVX2 and AVX-512), the SiLU it fuses, sizes computed from Shape, NHWC ends.
# The models themselves gave ORT 1.30's outputs bit for bit at 11, 13, 18, 19
# and 21, with its graph optimizations and without, and without NCHWc.
def _conv(name, x, cin, cout, rng, k=3):
    w = numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) * 0.2)
                                .astype(np.float32), name + "_w")
    b = numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1, name + "_b")
    return (helper.make_node("Conv", [x, w.name, b.name], [name], name=name, pads=[k // 2] * 4,
                             kernel_shape=[k, k]), [w, b])


def export_pattern(kind, rng):
    c = 16
    nodes, inits = [], [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]

    def conv(name, x, cin, cout):
        n, i = _conv(name, x, cin, cout, rng)
        nodes.append(n)
        inits.extend(i)
        return name

    def op(op_type, ins, out, **attrs):
        nodes.append(helper.make_node(op_type, ins, [out], name=out, **attrs))
        return out

    if kind == "agll":  # tf2onnx: nearest, half_pixel, round_prefer_ceil; Concat in, Conv out
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 4, 4])]
        a = op("Relu", [conv("c1", "x", c, c)], "r1")
        cat = op("Concat", [a, "x"], "cat", axis=1)
        inits.append(numpy_helper.from_array(np.array([1, 2 * c, 8, 8], np.int64), "sizes"))
        r = op("Resize", [cat, "roi", "roi", "sizes"], "resize", mode="nearest",
               coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil",
               exclude_outside=0)
        y = op("Relu", [conv("c2", r, 2 * c, c)], "r2")
        op("Transpose", [y], "y", perm=[0, 2, 3, 1])
        out = [1, 8, 8, c]
    elif kind == "yolox":  # torch.onnx: nearest, asymmetric, floor, constant scales; SiLU in
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 6, 6]),
                  helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, c, 12, 12])]
        t = conv("c1", "x", c, c)
        silu = op("Mul", [t, op("Sigmoid", [t], "sig")], "silu")
        inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
        r = op("Resize", [silu, "roi", "scales"], "resize", mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor",
               cubic_coeff_a=-0.75)
        op("Concat", [r, "z"], "cat", axis=1)
        conv("y", "cat", 2 * c, c)
        out = [1, c, 12, 12]
    else:  # M-LSD, tf2onnx: linear, half_pixel, sizes from Shape; NHWC at both ends
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 5, c])]
        xt = op("Transpose", ["x"], "xt", perm=[0, 3, 1, 2])
        add = op("Add", [conv("c1", xt, c, c), conv("c0", xt, c, c)], "add")
        inits += [numpy_helper.from_array(np.array([0], np.int64), "zero"),
                  numpy_helper.from_array(np.array([2], np.int64), "two"),
                  numpy_helper.from_array(np.array([10, 10], np.int64), "hw")]
        nc = op("Slice", [op("Shape", [add], "shape"), "zero", "two"], "nc")
        sizes = op("Concat", [nc, "hw"], "sizes", axis=0)
        r = op("Resize", [add, "roi", "roi", sizes], "resize", mode="linear",
               coordinate_transformation_mode="half_pixel", nearest_mode="floor",
               exclude_outside=0)
        op("Transpose", [op("Relu", [conv("c2", r, c, c)], "r2")], "y", perm=[0, 2, 3, 1])
        out = [1, 10, 10, c]
    g = helper.make_graph(nodes, kind, inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def upgrade_should_keep_the_public_exports_resize_patterns_bit_for_bit():
    rng = np.random.default_rng(11)
    ort_settings = ({}, {"graph_opt": "disabled"}, {"disable_optimizers": ["NchwcTransformer"]})
    with h.tempdir() as d:
        for kind in ("agll", "yolox", "mlsd"):
            src = os.path.join(d, f"{kind}.onnx")
            onnx.save(export_pattern(kind, rng), src)
            h.check(src)
            feeds = h.random_feeds(src, seed=4)
            want = [h.run_ort(src, feeds, **s) for s in ort_settings]
            before = [n for n in onnx.load(src).graph.node if n.op_type == "Resize"]
            for target in ("13", "18", "19", "21"):
                dst = os.path.join(d, f"{kind}_{target}.onnx")
                h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade",
                                      "--target-opset", target, "--verify=strict", "-q"))
                after = [n for n in onnx.load(dst).graph.node if n.op_type == "Resize"]
                if after != before:  # no step from 11 to 21 changes these forms
                    raise AssertionError(f"{kind} at {target}: the Resize node changed: {after}")
                for s, w in zip(ort_settings, want):
                    got = h.run_ort(dst, feeds, **s)
                    if not all(np.array_equal(a, b) for a, b in zip(got, w)):
                        raise AssertionError(f"{kind} at {target} {s}: ONNX Runtime's outputs "
                                             "changed")
                h.assert_close(h.run_tileopt(dst, feeds), want[0], rtol=1e-4, atol=1e-5,
                               what=f"{kind} at {target}, evaluator vs ORT")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""Upgrade pass adapters on small legacy models, one schema change each.

Each model is migrated to opset 13 (unless a test says otherwise); the result must
pass onnx.checker (full check) and ONNX Runtime must give numpy's answer for the
legacy semantics. Also: subgraphs, the one-error-for-every-blocked-node rule, and
a target below the model's opset.
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
import validate_report  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(7)


def vi(name, shape, el=F):
    return helper.make_tensor_value_info(name, el, shape)


def model(nodes, inputs, outputs, opset, inits=(), ir=3):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    if ir < 4:  # initializers had to be graph inputs too
        have = {i.name for i in m.graph.input}
        for t in inits:
            if t.name not in have:
                m.graph.input.append(vi(t.name, list(t.dims), t.data_type))
    return m


def migrate(m, feeds, want, target=13, tag="", rtol=1e-3, atol=1e-6):
    """Migrate m; checker; ORT outputs == want. Returns the report and the model."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade",
                              "--target-opset", target, "--report", dst + ".json"))
        h.check(dst)
        out = onnx.load(dst)
        assert [o.version for o in out.opset_import if o.domain in ("", "ai.onnx")] == \
            [target], f"{tag}: opset {out.opset_import}"
        h.assert_close(h.run_ort(dst, feeds), want, rtol=rtol, atol=atol,
                       what=f"{tag} output")
        with open(dst + ".json") as f:
            rep = json.load(f)
        errs = validate_report.report_errors(rep)
        assert not errs, f"{tag}: report does not match the schema: {errs}"
        return rep, out


def actions(rep, kind="upgraded"):
    return [a for p in rep["passes"] for a in p["actions"] if a["action"] == kind]


def upgrade_should_turn_legacy_broadcast_at_axis_into_numpy_broadcast():
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    for op, fn in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                   ("Div", np.divide)):
        for src in ("init", "input", "undeclared", "dynamic"):
            nodes, inits, inputs = [], [], [vi("a", [2, 3, 4, 5])]
            bname = "b"
            if src == "init":
                inits.append(numpy_helper.from_array(b, "b"))
            else:
                inputs.append(vi("b", [3, 4]))
            if src == "undeclared":  # no declared shape: inference finds the rank
                nodes.append(helper.make_node("Identity", ["b"], ["b_any"]))
                bname = "b_any"
            if src == "dynamic":  # a rank known only at run time
                inputs.append(vi("s", ["k"], TensorProto.INT64))
                nodes.append(helper.make_node("Reshape", ["b", "s"], ["b_any"]))
                bname = "b_any"
            nodes.append(helper.make_node(op, ["a", bname], ["y"], broadcast=1, axis=1,
                                          name="bc"))
            m = model(nodes, inputs, [vi("y", [2, 3, 4, 5])], 6, inits)
            feeds = {"a": a} if src == "init" else {"a": a, "b": b}
            if src == "dynamic":
                feeds["s"] = np.array([3, 4], np.int64)
            rep, _ = migrate(m, feeds, [fn(a, b[None, :, :, None])], tag=f"{op}/{src}")
            want = "runtime" if src == "dynamic" else 1
            got = [x.get("unsqueezed") for x in actions(rep) if x["op"] == op]
            assert got == [want], f"{op}/{src}: unsqueezed {got}"


def upgrade_should_migrate_legacy_broadcast_of_comparisons_and_logic():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((3,)).astype(np.float32)
    for op, fn in (("Greater", np.greater), ("Less", np.less)):
        m = model([helper.make_node(op, ["a", "b"], ["y"], broadcast=1, axis=1)],
                  [vi("a", [2, 3, 4]), vi("b", [3])], [vi("y", [2, 3, 4], TensorProto.BOOL)],
                  6)
        migrate(m, {"a": a, "b": b}, [fn(a, b[None, :, None])], tag=op)
    p, q = RNG.integers(0, 2, (2, 3, 4)).astype(bool), RNG.integers(0, 2, (3,)).astype(bool)
    for op, fn in (("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)):
        m = model([helper.make_node(op, ["a", "b"], ["y"], broadcast=1, axis=1)],
                  [vi("a", [2, 3, 4], TensorProto.BOOL), vi("b", [3], TensorProto.BOOL)],
                  [vi("y", [2, 3, 4], TensorProto.BOOL)], 6)
        migrate(m, {"a": p, "b": q}, [fn(p, q[None, :, None])], tag=op)
    i, j = RNG.integers(0, 3, (2, 3, 4)), RNG.integers(0, 3, (3,))
    m = model([helper.make_node("Equal", ["a", "b"], ["y"], broadcast=1, axis=-2)],
              [vi("a", [2, 3, 4], TensorProto.INT64), vi("b", [3], TensorProto.INT64)],
              [vi("y", [2, 3, 4], TensorProto.BOOL)], 6)
    migrate(m, {"a": i, "b": j}, [np.equal(i, j[None, :, None])], tag="Equal axis -2")
    x = np.abs(RNG.standard_normal((2, 3))).astype(np.float32)
    e = RNG.standard_normal((2,)).astype(np.float32)
    m = model([helper.make_node("Pow", ["x", "e"], ["y"], broadcast=1, axis=0)],
              [vi("x", [2, 3]), vi("e", [2])], [vi("y", [2, 3])], 6)
    migrate(m, {"x": x, "e": e}, [np.power(x, e[:, None])], tag="Pow")


def upgrade_should_drop_consumed_inputs_is_test_and_spatial():
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    s, b, mean = (RNG.standard_normal(3).astype(np.float32) for _ in range(3))
    var = np.abs(RNG.standard_normal(3)).astype(np.float32) + 0.5
    inits = [numpy_helper.from_array(v, n) for v, n in
             ((s, "s"), (b, "b"), (mean, "m"), (var, "v"))]
    for opset, attrs in ((1, dict(consumed_inputs=[0, 0, 0, 1, 1], is_test=1, spatial=1)),
                         (6, dict(is_test=1, spatial=1, epsilon=1e-3)),
                         (8, dict(spatial=1))):
        nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"],
                                  **attrs),
                 helper.make_node("Relu", ["bn"], ["y"],
                                  **({"consumed_inputs": [0]} if opset < 6 else {}))]
        m = model(nodes, [vi("x", [2, 3, 4, 4])], [vi("y", [2, 3, 4, 4])], opset, inits)
        eps = attrs.get("epsilon", 1e-5)
        ref = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + eps) * \
            s[:, None, None] + b[:, None, None]
        rep, out = migrate(m, {"x": x}, [np.maximum(ref, 0)], tag=f"bn opset {opset}")
        for n in out.graph.node:
            assert not {a.name for a in n.attribute} & {"consumed_inputs", "is_test",
                                                        "spatial"}, n


def upgrade_should_rewrite_softmax_family_on_a_middle_axis():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)

    def softmax2d(v, axis):
        flat = v.reshape(int(np.prod(v.shape[:axis])), -1)
        e = np.exp(flat - flat.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).reshape(v.shape)

    def hardmax2d(v, axis):
        flat = v.reshape(int(np.prod(v.shape[:axis])), -1)
        o = np.zeros_like(flat)
        o[np.arange(flat.shape[0]), flat.argmax(axis=1)] = 1
        return o.reshape(v.shape)

    cases = (("Softmax", 1, softmax2d), ("LogSoftmax", 1,
                                          lambda v, a: np.log(softmax2d(v, a))),
             ("Hardmax", 1, hardmax2d), ("Softmax", 0, softmax2d),
             ("Softmax", -1, softmax2d), ("LogSoftmax", 2,
                                           lambda v, a: np.log(softmax2d(v, a))))
    for op, axis, fn in cases:
        for known in (True, False):
            nodes = [helper.make_node(op, ["x" if known else "x_any"], ["y"], axis=axis,
                                      name="sm")]
            inputs = [vi("x", [2, 3, 4])]
            feeds = {"x": x}
            if not known:  # rank known only at run time
                nodes.insert(0, helper.make_node("Reshape", ["x", "s"], ["x_any"]))
                inputs.append(vi("s", ["k"], TensorProto.INT64))
                feeds["s"] = np.array([2, 3, 4], np.int64)
            m = model(nodes, inputs, [vi("y", [2, 3, 4])], 11, ir=6)
            rep, out = migrate(m, feeds, [fn(x, axis % 3)], tag=f"{op} axis {axis}")
            rewritten = [a for a in actions(rep) if a.get("rewrite")]
            assert bool(rewritten) == (not known or axis % 3 != 2), f"{op} {axis} {known}"
            assert [o.name for o in out.graph.output] == ["y"]


def upgrade_should_move_attributes_to_inputs():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    # Slice-1 -> Slice-10
    m = model([helper.make_node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, -1],
                                axes=[0, 2])], [vi("x", [3, 4, 5])], [vi("y", [2, 4, 4])], 1)
    migrate(m, {"x": x}, [x[1:3, :, 0:-1]], tag="Slice-1")
    # TopK-1 -> TopK-10
    m = model([helper.make_node("TopK", ["x"], ["v", "i"], k=2)], [vi("x", [3, 4, 5])],
              [vi("v", [3, 4, 2]), vi("i", [3, 4, 2], TensorProto.INT64)], 1)
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :2]
    migrate(m, {"x": x}, [np.take_along_axis(x, idx, -1), idx], tag="TopK-1")
    # Reshape-1 -> Reshape-5
    m = model([helper.make_node("Reshape", ["x"], ["y"], shape=[5, -1])],
              [vi("x", [3, 4, 5])], [vi("y", [5, 12])], 1)
    migrate(m, {"x": x}, [x.reshape(5, -1)], tag="Reshape-1")
    # Squeeze/Unsqueeze/ReduceSum-11 -> 13
    m = model([helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, -1]),
               helper.make_node("ReduceSum", ["u"], ["r"], axes=[2], keepdims=1),
               helper.make_node("Squeeze", ["r"], ["y"], axes=[0, 2])],
              [vi("x", [3, 4, 5])], [vi("y", [3, 5, 1])], 11, ir=6)
    migrate(m, {"x": x}, [x.sum(axis=1)[:, :, None]], tag="axes")
    # Split-1 with a split input, Split-11 with a split attribute
    inits = [numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "sp")]
    m = model([helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=0)],
              [vi("x", [3, 4, 5])], [vi("a", [1, 4, 5]), vi("b", [2, 4, 5])], 1, inits)
    migrate(m, {"x": x}, [x[:1], x[1:]], tag="Split-1")
    m = model([helper.make_node("Split", ["x"], ["a", "b"], axis=2, split=[3, 2])],
              [vi("x", [3, 4, 5])], [vi("a", [3, 4, 3]), vi("b", [3, 4, 2])], 11, ir=6)
    migrate(m, {"x": x}, [x[:, :, :3], x[:, :, 3:]], tag="Split-11")
    # Clip-6 (float and double), Pad-2 and Pad-1, Dropout-10, Concat-3, Cast-1
    m = model([helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25)],
              [vi("x", [3, 4, 5])], [vi("y", [3, 4, 5])], 6)
    migrate(m, {"x": x}, [np.clip(x, -0.5, 0.25)], tag="Clip-6")
    xd = x.astype(np.float64)
    m = model([helper.make_node("Clip", ["x"], ["y"], max=0.25)],
              [vi("x", [3, 4, 5], TensorProto.DOUBLE)], [vi("y", [3, 4, 5], TensorProto.DOUBLE)],
              6)
    migrate(m, {"x": xd}, [np.minimum(xd, 0.25)], tag="Clip-6 double")
    for opset, attr in ((2, "pads"), (1, "paddings")):
        m = model([helper.make_node("Pad", ["x"], ["y"], value=1.5,
                                    **{attr: [0, 1, 0, 0, 2, 1]})],
                  [vi("x", [3, 4, 5])], [vi("y", [3, 7, 6])], opset)
        migrate(m, {"x": x}, [np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=1.5)],
                tag=f"Pad-{opset}")
    m = model([helper.make_node("Dropout", ["x"], ["y"], ratio=0.3)], [vi("x", [3, 4, 5])],
              [vi("y", [3, 4, 5])], 10, ir=5)
    migrate(m, {"x": x}, [x], tag="Dropout-10")
    # Dropout-7's mask has the data's type, 10's is bool: a Cast keeps the readers
    # of the mask (Mul) and the mask as a graph output at their type
    m = model([helper.make_node("Dropout", ["x"], ["y", "mask"], name="drop"),
               helper.make_node("Mul", ["y", "mask"], ["z"])], [vi("x", [3, 4, 5])],
              [vi("z", [3, 4, 5]), vi("mask", [3, 4, 5])], 7)
    rep, out = migrate(m, {"x": x}, [x, np.ones_like(x)], tag="Dropout-7 mask")
    cast = [n for n in out.graph.node if n.op_type == "Cast"]
    assert len(cast) == 1 and cast[0].output == ["mask"], cast
    assert [a.i for a in cast[0].attribute if a.name == "to"] == [F], cast
    m = model([helper.make_node("Concat", ["x", "x"], ["y"])], [vi("x", [3, 4, 5])],
              [vi("y", [3, 8, 5])], 3)
    migrate(m, {"x": x}, [np.concatenate([x, x], axis=1)], tag="Concat-3")
    m = model([helper.make_node("Cast", ["x"], ["y"], to="INT32")], [vi("x", [3, 4, 5])],
              [vi("y", [3, 4, 5], TensorProto.INT32)], 1)
    migrate(m, {"x": x * 10}, [(x * 10).astype(np.int32)], tag="Cast-1")


def upgrade_should_turn_upsample_into_resize():
    x = RNG.standard_normal((1, 2, 2, 3)).astype(np.float32)
    near = x.repeat(2, axis=2).repeat(3, axis=3)

    def linear(v, sh, sw):
        n, c, hh, ww = v.shape
        oh, ow = int(hh * sh), int(ww * sw)
        out = np.zeros((n, c, oh, ow), np.float32)
        for i in range(oh):
            for j in range(ow):
                y, xx = i / sh, j / sw
                y0, x0 = int(np.floor(y)), int(np.floor(xx))
                y1, x1 = min(y0 + 1, hh - 1), min(x0 + 1, ww - 1)
                dy, dx = y - y0, xx - x0
                out[:, :, i, j] = (v[:, :, y0, x0] * (1 - dy) * (1 - dx) +
                                   v[:, :, y1, x0] * dy * (1 - dx) +
                                   v[:, :, y0, x1] * (1 - dy) * dx +
                                   v[:, :, y1, x1] * dy * dx)
        return out

    out_shape = [1, 2, 4, 9]
    m = model([helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0])],
              [vi("x", [1, 2, 2, 3])], [vi("y", out_shape)], 7)
    migrate(m, {"x": x}, [near], tag="Upsample-7 nearest")
    m = model([helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0],
                                mode="linear")],
              [vi("x", [1, 2, 2, 3])], [vi("y", out_shape)], 7)
    migrate(m, {"x": x}, [linear(x, 2, 3)], tag="Upsample-7 linear")
    m = model([helper.make_node("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=3.0,
                                mode="bilinear")],
              [vi("x", [1, 2, 2, 3])], [vi("y", out_shape)], 1)
    migrate(m, {"x": x}, [linear(x, 2, 3)], tag="Upsample-1 bilinear")
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "sc")]
    m = model([helper.make_node("Upsample", ["x", "sc"], ["y"])],
              [vi("x", [1, 2, 2, 3])], [vi("y", out_shape)], 9, inits, ir=4)
    rep, out = migrate(m, {"x": x}, [near], tag="Upsample-9")
    assert [n.op_type for n in out.graph.node] == ["Resize"], out.graph.node
    for tgt in (10, 11):
        migrate(m, {"x": x}, [near], target=tgt, tag=f"Upsample-9 to {tgt}")


def upgrade_should_migrate_scatter_and_prelu():
    data = np.zeros((3, 3), np.float32)
    ind = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    upd = np.array([[1, 1.1, 1.2], [2, 2.1, 2.2]], np.float32)
    m = model([helper.make_node("Scatter", ["d", "i", "u"], ["y"], axis=0)],
              [vi("d", [3, 3]), vi("i", [2, 3], TensorProto.INT64), vi("u", [2, 3])],
              [vi("y", [3, 3])], 9, ir=4)
    want = data.copy()
    for r in range(2):
        for c in range(3):
            want[ind[r, c], c] = upd[r, c]
    migrate(m, {"d": data, "i": ind, "u": upd}, [want], tag="Scatter-9")
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    m = model([helper.make_node("PRelu", ["x", "s"], ["y"])], [vi("x", [2, 3, 4, 5])],
              [vi("y", [2, 3, 4, 5])], 6, [numpy_helper.from_array(slope, "s")])
    migrate(m, {"x": x}, [np.where(x > 0, x, x * slope[None, :, None, None])], tag="PRelu")


def upgrade_should_migrate_subgraphs():
    """Tile-1 inside both branches of an If reading the outer x."""
    x = RNG.standard_normal((2, 3)).astype(np.float32)

    def branch(name, tiles, axis):
        t = numpy_helper.from_array(np.array([tiles], np.float32), "t")
        a = numpy_helper.from_array(np.array([axis], np.float32), "a")
        nodes = [helper.make_node("Constant", [], ["tc"], value=t),
                 helper.make_node("Constant", [], ["ac"], value=a),
                 helper.make_node("Tile", ["x", "tc", "ac"], [name + "_y"], name=name)]
        return helper.make_graph(nodes, name, [], [vi(name + "_y", [None, None])])

    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=branch("then", 2, 0),
                              else_branch=branch("else", 3, -1), name="if")]
    m = model(nodes, [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", [None, None])],
              5)
    rep, _ = migrate(m, {"c": np.array(True), "x": x}, [np.tile(x, (2, 1))], tag="If then")
    migrate(m, {"c": np.array(False), "x": x}, [np.tile(x, (1, 3))], tag="If else")
    tiles = [a for a in actions(rep) if a["op"] == "Tile"]
    assert sorted(a["node"] for a in tiles) == ["else", "then"], tiles
    # each branch is its own graph in the report: the holding node and the attribute
    assert {a["node"]: a.get("graph") for a in tiles} == \
        {"then": "if/then_branch", "else": "if/else_branch"}, tiles


def _scan8(batch, name="scan"):
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "i"], ["s2"]), helper.make_node("Identity", ["s2"], ["o"])],
        "body", [vi("s", [2]), vi("i", [2])], [vi("s2", [2]), vi("o", [2])])
    node = helper.make_node("Scan", ["", "init", "xs"], ["fin", "ys"], body=body,
                            num_scan_inputs=1, directions=[1], name=name)
    return model([node], [vi("init", [batch, 2]), vi("xs", [batch, 3, 2])],
                 [vi("fin", [batch, 2]), vi("ys", [batch, 3, 2])], 8)


def upgrade_should_drop_the_batch_axis_of_scan8():
    # a batch of one: Squeeze/Unsqueeze around one Scan-9; larger static batches:
    # one Scan-9 per item (each with its own body), Concat of the results
    for batch in (1, 2, 3):
        init = RNG.standard_normal((batch, 2)).astype(np.float32)
        xs = RNG.standard_normal((batch, 3, 2)).astype(np.float32)
        ys = init[:, None, :] + np.cumsum(xs[:, ::-1, :], axis=1)  # directions=[1]: reversed
        for tgt in (9, 13):
            rep, out = migrate(_scan8(batch), {"init": init, "xs": xs}, [ys[:, -1, :], ys],
                               target=tgt, tag=f"Scan-8 batch {batch} to {tgt}")
            scans = [n for n in out.graph.node if n.op_type == "Scan"]
            assert len(scans) == batch, [n.op_type for n in out.graph.node]
            assert sum(n.op_type == "Concat" for n in out.graph.node) == (2 if batch > 1 else 0)
            (a,) = [a for a in actions(rep) if a["op"] == "Scan"]
            assert a["batch"] == batch, a
    with h.tempdir() as d:
        src, dst = os.path.join(d, "s.onnx"), os.path.join(d, "d.onnx")
        onnx.save(_scan8(17), src)
        cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", "--target-opset", 13)
        assert cp.returncode == 1 and "scan" in cp.stderr and "batch" in cp.stderr, cp.stderr
        assert not os.path.exists(dst)
        bodyless = _scan8(2)
        del bodyless.graph.node[0].attribute[:]
        onnx.save(bodyless, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", "--target-opset", 13)
        assert cp.returncode == 1 and "without a body" in cp.stderr, cp.stderr
        assert not os.path.exists(dst)


def upgrade_should_migrate_a_scan8_nested_in_a_scan8():
    # The inner Scan is rewritten to the Scan-9 form while the model still says
    # opset 8: checks made on the way must not refuse the half-migrated body.
    inner = helper.make_graph([helper.make_node("Add", ["is", "ie"], ["io"])], "inner",
                              [vi("is", [4]), vi("ie", [4])], [vi("io", [4])])
    outer = helper.make_graph(
        [helper.make_node("Unsqueeze", ["os"], ["os1"], axes=[0]),
         helper.make_node("Unsqueeze", ["ox"], ["ox1"], axes=[0]),
         helper.make_node("Scan", ["", "os1", "ox1"], ["is_out"], body=inner,
                          num_scan_inputs=1),
         helper.make_node("Squeeze", ["is_out"], ["oo"], axes=[0])],
        "outer", [vi("os", [4]), vi("ox", [2, 4])], [vi("oo", [4])])
    m = model([helper.make_node("Scan", ["", "s0", "X"], ["S"], body=outer, num_scan_inputs=1)],
              [vi("s0", [1, 4]), vi("X", [1, 3, 2, 4])], [vi("S", [1, 4])], opset=8)
    s0 = RNG.standard_normal((1, 4)).astype(np.float32)
    xs = RNG.standard_normal((1, 3, 2, 4)).astype(np.float32)
    migrate(m, {"s0": s0, "X": xs}, [s0 + xs.sum(axis=(1, 2))], target=9,
            tag="nested Scan-8")


def upgrade_should_migrate_a_model_from_before_opset_imports():
    # IR 2 had no opset imports: the model is at opset 1, and its Tile-1 migrates.
    m = helper.make_model(helper.make_graph(
        [helper.make_node("Tile", ["X", "t", "a"], ["Y"], name="tile1")], "g",
        [vi("X", [2, 3])], [vi("Y", [4, 3])],
        [numpy_helper.from_array(np.array([2], np.int64), "t"),
         numpy_helper.from_array(np.array([0], np.int64), "a")]))
    m.ir_version = 2
    del m.opset_import[:]
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        with open(src, "wb") as f:
            f.write(m.SerializeToString())
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "-q"))
        out = onnx.load(dst)
        assert [o.version for o in out.opset_import if o.domain in ("", "ai.onnx")] == [13], \
            out.opset_import
        h.check(dst)
        h.assert_close(h.run_ort(dst, {"X": x}), [np.tile(x, (2, 1))])


def upgrade_should_fail_once_listing_every_blocked_node():
    """Nodes no step can migrate (an op unknown to ai.onnx, an op the source opset does
    not have yet) fail the pass with one error naming all of them."""
    nodes = [helper.make_node("FancyOp", ["x"], ["a"], name="fancy"),
             helper.make_node("Range", ["s", "s", "s"], ["r"]),
             helper.make_node("Tile", ["x", "t", "t"], ["tt"], name="tile_ok")]
    m = model(nodes, [vi("x", [2]), vi("s", []), vi("t", [1])],
              [vi("a", [2]), vi("r", [None]), vi("tt", [None])], 5)
    with h.tempdir() as d:
        src, dst, rp = (os.path.join(d, n) for n in ("s.onnx", "d.onnx", "r.json"))
        onnx.save(m, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", "--report", rp)
        assert cp.returncode == 1, cp
        assert not os.path.exists(dst), "output written"
        err = [ln for ln in cp.stderr.splitlines() if "error" in ln]
        assert len(err) == 1, cp.stderr
        for needle in ("fancy", "FancyOp", "#1", "Range", "2 nodes"):
            assert needle in err[0], f"{needle!r} not in {err[0]!r}"
        assert "tile_ok" not in err[0], err[0]
        with open(rp) as f:
            rep = json.load(f)
        skipped = actions(rep, "skipped")
        assert sorted(a["node"] for a in skipped) == ["#1", "fancy"], skipped
        assert all(a["from"] == 5 and a["to"] == 13 for a in skipped), skipped
        assert all(a["reason"] for a in skipped), skipped
        assert not actions(rep), "upgraded actions despite the failure"


def upgrade_should_migrate_int64_constants_of_old_exporters():
    """Constant int64 before opset 9 (a checker failure at the source) feeding Reshape."""
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    shape = numpy_helper.from_array(np.array([3, 4], np.int64), "shape_v")
    m = model([helper.make_node("Constant", [], ["shape"], value=shape, name="c"),
               helper.make_node("Reshape", ["x", "shape"], ["y"])],
              [vi("x", [2, 6])], [vi("y", [3, 4])], 6)
    for tgt in (7, 8, 13):
        rep, out = migrate(m, {"x": x}, [x.reshape(3, 4)], target=tgt, tag=f"target {tgt}")
        assert any("Constant of INT64" in w for w in rep["warnings"]), rep["warnings"]
        consts = [n for n in out.graph.node if n.op_type == "Constant"]
        assert bool(consts) == (tgt >= 9), f"target {tgt}: {out.graph.node}"


def upgrade_should_rewrite_retired_experimental_ops():
    x = RNG.standard_normal((1, 3, 2, 2)).astype(np.float32)
    bias = [0.5, -1.0, 2.0]
    cases = (
        ("ImageScaler", dict(scale=0.25, bias=bias),
         lambda v: v * 0.25 + np.array(bias, np.float32)[None, :, None, None]),
        ("Affine", dict(alpha=2.0, beta=-0.5), lambda v: 2 * v - 0.5),
        ("Scale", dict(scale=3.0), lambda v: 3 * v),
        ("ScaledTanh", dict(alpha=1.5, beta=0.5), lambda v: 1.5 * np.tanh(0.5 * v)),
        ("ParametricSoftplus", dict(alpha=2.0, beta=3.0),
         lambda v: 2 * np.log1p(np.exp(3 * v))),
        ("ThresholdedRelu", dict(alpha=0.3), lambda v: np.where(v > 0.3, v, 0)),
    )
    for op, attrs, fn in cases:
        m = model([helper.make_node(op, ["x"], ["y"], name="old", **attrs)],
                  [vi("x", [1, 3, 2, 2])], [vi("y", [1, 3, 2, 2])], 8)
        for tgt in (8, 13):
            rep, out = migrate(m, {"x": x}, [fn(x).astype(np.float32)], target=tgt,
                               tag=f"{op} to {tgt}")
            assert [a["node"] for a in actions(rep)] == ["old"], actions(rep)
            assert any("retired" in w for w in rep["warnings"]), rep["warnings"]


def upgrade_should_go_down_only_where_each_node_fits():
    """A target below the model's opset: every node whose element types the older
    schema lacks is named in one error and nothing is written; a model whose nodes
    all fit changes its opset (and its IR with it)."""
    relu = model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Neg", ["r"], ["y"], name="neg"),
                  helper.make_node("Identity", ["y"], ["z"], name="ident")],
                 [vi("x", [2], TensorProto.INT32)], [vi("z", [2], TensorProto.INT32)], 15, ir=8)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "s.onnx"), os.path.join(d, "d.onnx")
        onnx.save(relu, src)
        cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", "--target-opset",
                       13, "--report", dst + ".json")
        # Relu-14 added the int types; Neg-13 and Identity-14 (optional types) hold
        assert cp.returncode == 1 and "relu (Relu 14->13: element type INT32 is not in " \
            "version 13)" in cp.stderr and "neg" not in cp.stderr and "ident" not in cp.stderr, \
            cp.stderr
        assert not os.path.exists(dst)
        with open(dst + ".json") as f:
            rep = json.load(f)
        assert not validate_report.report_errors(rep)
        assert sorted(a["node"] for a in actions(rep, "skipped")) == ["relu"], rep

        neg = model([helper.make_node("Neg", ["x"], ["y"], name="neg")],
                    [vi("x", [2])], [vi("y", [2])], 15, ir=8)
        onnx.save(neg, src)
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade",
                              "--target-opset", 13, "--report", dst + ".json"))
        h.check(dst)
        out = onnx.load(dst)
        assert out.opset_import[0].version == 13 and out.ir_version == 7, out
        x = np.array([1.5, -2], np.float32)
        h.assert_close(h.run_ort(dst, {"x": x}), [-x])
        with open(dst + ".json") as f:
            (p,) = json.load(f)["passes"]
        assert p["changed"] is True and p["changes"] == \
            {"opset_import": [{"domain": "", "from": 15, "to": 13}],
             "ir_version": {"from": 8, "to": 7}}, p


def upgrade_should_leave_a_model_at_the_target_alone():
    # nothing to do, so nothing is touched (the dead node stays: sweeping it is not
    # the upgrade pass's business), whether the target is asked for or implied
    m = model([helper.make_node("Relu", ["x"], ["y"]),
               helper.make_node("Neg", ["x"], ["dead"])], [vi("x", [2])], [vi("y", [2])],
              13, ir=7)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "s.onnx"), os.path.join(d, "d.onnx")
        onnx.save(m, src)
        for extra in ((), ("--target-opset", 13)):
            h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade",
                                  "--report", dst + ".json", *extra))
            assert len(onnx.load(dst).graph.node) == 2
            with open(dst + ".json") as f:
                assert json.load(f)["passes"][0]["changed"] is False


def upgrade_should_reject_a_target_outside_1_to_26():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])], 5)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "s.onnx"), os.path.join(d, "d.onnx")
        onnx.save(m, src)
        for bad in (0, 27):
            cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade",
                           "--target-opset", bad)
            assert cp.returncode != 0 and "opset" in cp.stderr, cp.stderr
            assert not os.path.exists(dst)


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

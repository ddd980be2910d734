#!/usr/bin/python3
"""Which opset and IR version a model comes out at, and what that moves.

- Without --target-opset a model at opset 7 or above keeps its opset and IR
  version, and fold and fuse still do their work in the forms that opset has
  (Unsqueeze/Squeeze/ReduceSum axes as attributes before 13, Clip bounds as
  attributes before 11, no Expand before 8); a model below 7 goes to 13.
- --target-opset N converts up; down only when no node's schema differs.
- Raising the IR version from below 4 takes the initializers out of the graph
  inputs (ONNX Runtime treats listed initializers as overridable inputs from IR 4
  on and stops folding them), unless --keep-initializer-inputs.
Every output passes onnx.checker (full check) and gives the input's outputs in
ONNX Runtime; every report is valid and names every difference (model_diff).
"""
import glob
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402
from model_diff import unreported_differences  # noqa: E402
from validate_report import report_errors  # noqa: E402

F = TensorProto.FLOAT
LEGACY = "/usr/share/libonnx-testdata/data/pytorch-converted"
# The IR version each opset first shipped with (onnx.helper.VERSION_TABLE).
IR_OF = {6: 3, 7: 3, 8: 3, 9: 4, 11: 6, 13: 7, 15: 8, 17: 8}


def vi(name, shape, el=F):
    return helper.make_tensor_value_info(name, el, shape)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def f32(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.float32), name)


def make(nodes, inputs, outputs, inits, opset, ir=None):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir if ir is not None else IR_OF[opset]
    if m.ir_version < 4:  # initializers had to be graph inputs too
        for t in inits:
            m.graph.input.append(vi(t.name, list(t.dims), t.data_type))
    return m


def axes_node(op, x, axes, out, opset, since, inits, **attrs):
    """op(x) over axes: an attribute before `since`, an int64 input from it on."""
    if opset < since:
        return helper.make_node(op, [x], [out], name=out, axes=axes, **attrs)
    inits.append(i64(out + "_axes", axes))
    return helper.make_node(op, [x, out + "_axes"], [out], name=out, **attrs)


def tile_model(opset):
    """Every fold and fuse rule, in the op forms of this opset.

    y1 = Relu(Tile(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [1])))   fold, rule 2
    y2 = Clip(Tile(x, [1, 2]), 0, 1)                                    rule 2 (Clip)
    y3 = Tile(z, [1, 32])                                               rule 5 from 8
    y4 = Add(Tile(bias, [2, 1, 4, 4]), p)                               rule 1
    y5 = Sigmoid(Tile(q, Concat(ReduceSum([1, 1]), [1])))               fold, rule 2
    y6 = Mul(Tile(a, Squeeze([[2, 2]])), 3)                             fold, rule 3
    y7 = Add(Tile(a, [2, 2]), bb)                                       rule 4 (opt-in)
    """
    inits = [i64("zero", 0), i64("one", [1]), i64("r2", [1, 2]), i64("r3", [1, 32]),
             i64("r4", [2, 1, 4, 4]), i64("ones2", [1, 1]), i64("sq", [[2, 2]]),
             i64("r7", [2, 2]), f32("three", 3.0),
             f32("bias", np.arange(3).reshape(1, 3, 1, 1))]
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["g0"], name="gather"),
        axes_node("Unsqueeze", "g0", [0], "u0", opset, 13, inits),
        helper.make_node("Concat", ["u0", "one"], ["reps1"], name="concat1", axis=0),
        helper.make_node("Tile", ["x", "reps1"], ["t1"], name="tile1"),
        helper.make_node("Relu", ["t1"], ["y1"], name="relu"),
        helper.make_node("Tile", ["x", "r2"], ["t2"], name="tile2"),
    ]
    if opset < 11:
        nodes.append(helper.make_node("Clip", ["t2"], ["y2"], name="clip", min=0.0, max=1.0))
    else:
        inits += [f32("lo", 0.0), f32("hi", 1.0)]
        nodes.append(helper.make_node("Clip", ["t2", "lo", "hi"], ["y2"], name="clip"))
    nodes += [
        helper.make_node("Tile", ["z", "r3"], ["y3"], name="tile3"),
        helper.make_node("Tile", ["bias", "r4"], ["t4"], name="tile4"),
        helper.make_node("Add", ["t4", "p"], ["y4"], name="add4"),
        axes_node("ReduceSum", "ones2", [0], "rs", opset, 13, inits, keepdims=1),
        helper.make_node("Concat", ["rs", "one"], ["reps5"], name="concat5", axis=0),
        helper.make_node("Tile", ["q", "reps5"], ["t5"], name="tile5"),
        helper.make_node("Sigmoid", ["t5"], ["y5"], name="sigmoid"),
        axes_node("Squeeze", "sq", [0], "sqz", opset, 13, inits),
        helper.make_node("Tile", ["a", "sqz"], ["t6"], name="tile6"),
        helper.make_node("Mul", ["t6", "three"], ["y6"], name="mul6"),
        helper.make_node("Tile", ["a", "r7"], ["t7"], name="tile7"),
        helper.make_node("Add", ["t7", "bb"], ["y7"], name="add7"),
    ]
    inputs = [vi("x", [2, 3]), vi("z", [64, 1]), vi("p", [2, 3, 4, 4]),
              vi("q", [3, 1]), vi("a", [2, 3]), vi("bb", [4, 6])]
    outputs = [vi("y1", [4, 3]), vi("y2", [2, 6]), vi("y3", [64, 32]), vi("y4", [2, 3, 4, 4]),
               vi("y5", [6, 1]), vi("y6", [4, 6]), vi("y7", [4, 6])]
    return make(nodes, inputs, outputs, inits, opset)


def tile_model_expected(f):
    x, z, p, q, a, bb = (f[k] for k in ("x", "z", "p", "q", "a", "bb"))
    bias = np.arange(3, dtype=np.float32).reshape(1, 3, 1, 1)
    return [np.maximum(np.tile(x, (2, 1)), 0), np.clip(np.tile(x, (1, 2)), 0, 1),
            np.tile(z, (1, 32)), np.tile(bias, (2, 1, 4, 4)) + p,
            1 / (1 + np.exp(-np.tile(q, (2, 1)))), np.tile(a, (2, 2)) * 3,
            np.tile(a, (2, 2)) + bb]


def optimize(src, dst, *extra):
    """optimize with a report; the report must be valid and name every difference."""
    rep = dst + ".json"
    cp = h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--report", rep, *extra))
    with open(rep) as f:
        r = json.load(f)
    errs = report_errors(r) + unreported_differences(src, dst, r)
    assert not errs, f"{src} {extra}: {errs}"
    return r, cp


def done(r, pass_name):
    return [a for p in r["passes"] if p["name"] == pass_name for a in p["actions"]
            if a["action"] != "skipped"]


def optimize_should_keep_the_opset_of_a_model_at_7_or_above():
    feeds = h.random_feeds(tile_model(13), seed=3)
    want = tile_model_expected(feeds)
    with h.tempdir() as d:
        for opset in (7, 9, 11, 13, 17):
            src = os.path.join(d, f"m{opset}.onnx")
            onnx.save(tile_model(opset), src)
            h.check(src)
            h.assert_close(h.run_ort(src, feeds), want, what=f"opset {opset} input")
            for extra in ((), ("--fuse-split",)):
                tag = f"opset {opset} {' '.join(extra)}"
                dst = os.path.join(d, f"o{opset}{len(extra)}.onnx")
                r, _ = optimize(src, dst, *extra)
                out = onnx.load(dst)
                assert [(o.domain, o.version) for o in out.opset_import] == [("", opset)] \
                    and out.ir_version == IR_OF[opset], f"{tag}: {out.opset_import} IR " \
                    f"{out.ir_version}"
                assert not done(r, "upgrade") and not r["passes"][0]["changed"], tag
                h.check(dst)
                h.assert_close(h.run_ort(dst, feeds), want, what=f"{tag} output")
                ops = [n.op_type for n in out.graph.node]
                # the repeats chains are folded, whatever form their axes take
                for gone in ("Shape", "Gather", "Unsqueeze", "ReduceSum", "Squeeze"):
                    assert gone not in ops, f"{tag}: {gone} left: {ops}"
                rules = sorted({a.get("rule") for a in done(r, "fuse")})
                want_rules = [1, 2, 3] + ([4] if extra else []) + ([5] if opset >= 8 else [])
                assert rules == want_rules, f"{tag}: fuse rules {rules}"
                assert ("Expand" in ops) == (opset >= 8), f"{tag}: {ops}"


def optimize_should_migrate_a_model_below_7_to_13():
    # legacy broadcast (Add with broadcast=1, axis=1) exists only before opset 7
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=1)]
    m = make(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], [f32("b", [1, 2, 3])], 6)
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(m, src)
        r, cp = optimize(src, dst)
        out = onnx.load(dst)
        assert out.opset_import[0].version == 13 and out.ir_version == 7, out.opset_import
        assert [i.name for i in out.graph.input] == ["x"], out.graph.input
        h.check(dst)
        h.assert_close(h.run_ort(dst, {"x": x}),
                       [x + np.array([1, 2, 3], np.float32).reshape(1, 3, 1)])
        assert "  opset 6 -> 13, IR 3 -> 7 (opsets below 7 go to 13 by default" in cp.stdout, \
            cp.stdout
        (up,) = [p for p in r["passes"] if p["name"] == "upgrade"]
        assert up["changes"]["opset_import"] == [{"domain": "", "from": 6, "to": 13}] and \
            up["changes"]["ir_version"] == {"from": 3, "to": 7} and \
            up["changes"]["inputs_removed"] == ["b"], up


def optimize_should_convert_to_an_asked_target():
    """--target-opset moves a model at 7 or above, both ways where it can; the
    summary and the report say so."""
    with h.tempdir() as d:
        src = os.path.join(d, "m11.onnx")
        onnx.save(tile_model(11), src)
        feeds = h.random_feeds(tile_model(11), seed=4)
        for tgt in (13, 17):
            dst = os.path.join(d, f"o{tgt}.onnx")
            r, cp = optimize(src, dst, "--target-opset", tgt)
            out = onnx.load(dst)
            assert out.opset_import[0].version == tgt and out.ir_version == IR_OF[tgt]
            h.check(dst)
            h.assert_close(h.run_ort(dst, feeds), tile_model_expected(feeds))
            assert f"  opset 11 -> {tgt}, IR 6 -> {IR_OF[tgt]} (--target-opset asks" in \
                cp.stdout, cp.stdout
        # and back down 17 -> 11: every node fits (Clip's bounds are constants)
        dst = os.path.join(d, "down.onnx")
        r, cp = optimize(os.path.join(d, "o17.onnx"), dst, "--target-opset", 11)
        out = onnx.load(dst)
        assert out.opset_import[0].version == 11 and out.ir_version == IR_OF[11], out
        h.check(dst)
        h.assert_close(h.run_ort(dst, feeds), tile_model_expected(feeds))


def upgrade_should_merge_a_default_domain_imported_three_times():
    """Some models import the default domain again and again (16, 16, 16, as
    PINTO0309's WarpAffine does): the entries are merged into one, the warning
    says so, and converting leaves one import that ONNX Runtime reads."""
    with h.tempdir() as d:
        src = os.path.join(d, "dup.onnx")
        m = tile_model(17)
        m.opset_import[0].version = 16
        m.opset_import.extend([helper.make_opsetid("", 16), helper.make_opsetid("ai.onnx", 16)])
        onnx.save(m, src)
        feeds = h.random_feeds(m, seed=4)
        for tgt in (11, 21):
            dst = os.path.join(d, f"o{tgt}.onnx")
            r, cp = optimize(src, dst, "--target-opset", tgt)
            out = onnx.load(dst)
            assert [(o.domain, o.version) for o in out.opset_import] == [("", tgt)], \
                out.opset_import
            assert any("default domain 3 times, each at version 16: merged" in w
                       for w in r["warnings"]), r["warnings"]
            assert "merged into one entry" in cp.stderr, cp.stderr
            h.assert_close(h.run_ort(dst, feeds), tile_model_expected(feeds))


def upgrade_should_refuse_to_go_down_from_past_its_newest_opset():
    """Opsets past the schema table (26, the newest ONNX Runtime 1.30 runs) keep
    their opset by default; going down from there is refused, since which
    schemas changed is unknown. From 19 (in the table) to 17 a Neg goes down:
    its schema is the same at both."""
    m = make([helper.make_node("Neg", ["x"], ["y"], name="neg")], [vi("x", [2])],
             [vi("y", [2])], [], 17, ir=9)
    x = np.array([1, -2], np.float32)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        m.opset_import[0].version = 19
        onnx.save(m, src)
        optimize(src, dst, "--target-opset", "17")
        assert onnx.load(dst).opset_import[0].version == 17
        h.assert_close(h.run_ort(dst, {"x": x}), [-x])
        m.opset_import[0].version = 27
        onnx.save(m, src)
        r, _ = optimize(src, dst)
        out = onnx.load(dst)
        assert out.opset_import[0].version == 27 and out.ir_version == 9
        assert not any(p["changed"] for p in r["passes"]), r["passes"]
        cp = h.tileopt("optimize", src, "-o", dst + "2", "--target-opset", 26)
        assert cp.returncode == 1 and "opset 27 is newer" in cp.stderr, cp.stderr
        assert not os.path.exists(dst + "2")


def _legacy_with_initializer_inputs():
    """ONNX's IR-3 models that list initializers among their graph inputs."""
    out = []
    for p in sorted(glob.glob(os.path.join(LEGACY, "*", "model.onnx"))):
        m = onnx.load(p)
        inits = {t.name for t in m.graph.initializer}
        if m.ir_version < 4 and any(i.name in inits for i in m.graph.input):
            out.append(p)
    return out


def _data_set(folder):
    ds = os.path.join(folder, "test_data_set_0")
    load = lambda pat: [numpy_helper.to_array(onnx.load_tensor(f))  # noqa: E731
                        for f in sorted(glob.glob(os.path.join(ds, pat)))]
    return load("input_*.pb"), load("output_*.pb")


def upgrade_should_take_initializers_out_of_the_inputs_when_ir_reaches_4():
    models = _legacy_with_initializer_inputs()
    assert len(models) >= 40, len(models)
    with h.tempdir() as d:
        for k, src in enumerate(models):
            name = os.path.basename(os.path.dirname(src))
            a = onnx.load(src)
            inits = {t.name for t in a.graph.initializer}
            listed = [i.name for i in a.graph.input if i.name in inits]
            dst = os.path.join(d, name + ".onnx")
            r, _ = optimize(src, dst)
            b = onnx.load(dst)
            assert b.ir_version >= 4, name
            left = [i.name for i in b.graph.input if i.name in {t.name for t in b.graph.initializer}]
            assert not left, f"{name}: initializers still listed as inputs: {left}"
            assert [i.name for i in b.graph.input] == \
                [i.name for i in a.graph.input if i.name not in inits], name
            (up,) = [p for p in r["passes"] if p["name"] == "upgrade"]
            assert up["changes"]["inputs_removed"] == listed, (name, up["changes"])
            h.check(dst)
            if k % 8 == 0:  # ONNX Runtime on a sample: the same outputs as ONNX recorded
                ins, outs = _data_set(os.path.dirname(src))
                h.assert_close(h.run_ort(dst, ins), outs, what=name)
        # kept on request: then the report lists no input taken out
        src = os.path.join(LEGACY, "test_Conv2d", "model.onnx")
        dst = os.path.join(d, "kept.onnx")
        r, _ = optimize(src, dst, "--keep-initializer-inputs")
        assert [i.name for i in onnx.load(dst).graph.input] == \
            [i.name for i in onnx.load(src).graph.input]
        assert "inputs_removed" not in r["passes"][0].get("changes", {}), r["passes"][0]
        h.check(dst)
        ins, outs = _data_set(os.path.dirname(src))
        h.assert_close(h.run_ort(dst, ins), outs)


def upgrade_should_keep_initializer_inputs_when_the_ir_stays_below_4():
    # opset 7 keeps its IR 3 by default: the initializers must stay listed
    m = tile_model(7)
    with h.tempdir() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(m, src)
        optimize(src, dst, "--passes", "upgrade")
        assert [i.name for i in onnx.load(dst).graph.input] == [i.name for i in m.graph.input]
        # and at IR 4 or more nothing is taken out of the inputs: there they are
        # defaults a caller may override
        m = tile_model(9)
        m.graph.input.append(vi("three", []))
        onnx.save(m, src)
        r, _ = optimize(src, dst, "--target-opset", 13)
        assert "three" in [i.name for i in onnx.load(dst).graph.input]
        assert "inputs_removed" not in r["passes"][0]["changes"], r["passes"][0]


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""Upgrade pass on Tile-1 models (opsets 1, 3, 5): every variant of tiles/axis.

Each generated model is migrated with `tileopt optimize --passes upgrade`; the
result must pass onnx.checker (full check), and ONNX Runtime and `tileopt run`
must both give np.tile(x, reps) with reps 1 except tiles at axis. Bad constants
(non-whole or negative tiles, axis out of range) must fail naming the node.
"""
import itertools
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

SHAPES = {1: [5], 2: [2, 3], 3: [2, 1, 3], 4: [1, 2, 3, 2], 5: [2, 1, 2, 1, 3]}


def tile1_model(opset, rank, kind, dtype, scalar, tiles, axis, known_rank=True):
    """A Tile-1 model: y = Tile(x, tiles, axis); kind says where tiles/axis come from
    (init: initializer, const: Constant node, input: graph inputs).

    known_rank False: Tile reads Identity(x), a value with no declared shape (the
    checker wants shapes on graph inputs, so that is where a model leaves a rank
    unknown); known_rank "dynamic" (opset >= 5): Reshape(x, s) with s a graph input
    of unknown length, a rank nothing can know before run time."""
    np_t = np.float32 if dtype == "float" else np.int64
    el = TensorProto.FLOAT if dtype == "float" else TensorProto.INT64
    shape_t = [] if scalar else [1]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPES[rank])]
    nodes, inits = [], []
    tin = "x"
    if known_rank is False:
        nodes.append(helper.make_node("Identity", ["x"], ["x_any"], name="ident"))
        tin = "x_any"
    elif known_rank == "dynamic":
        inputs.append(helper.make_tensor_value_info("s", TensorProto.INT64, ["k"]))
        nodes.append(helper.make_node("Reshape", ["x", "s"], ["x_any"], name="reshape"))
        tin = "x_any"
    for name, val in (("tiles", tiles), ("axis", axis)):
        arr = np.array(val, dtype=np_t).reshape(shape_t)
        if kind == "init":
            inits.append(numpy_helper.from_array(arr, name))
            # IR 3: an initializer must be a graph input as well
            inputs.append(helper.make_tensor_value_info(name, el, shape_t))
        elif kind == "const":
            nodes.append(helper.make_node("Constant", [], [name],
                                          value=numpy_helper.from_array(arr, name + "_v"),
                                          name=name + "_const"))
        else:
            inputs.append(helper.make_tensor_value_info(name, el, shape_t))
    nodes.append(helper.make_node("Tile", [tin, "tiles", "axis"], ["y"], name="tile1"))
    g = helper.make_graph(nodes, "tile1", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                         [None] * rank)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3
    return m


def expected(x, tiles, axis):
    reps = [1] * x.ndim
    reps[axis] = tiles
    return np.tile(x, reps)


def migrate(src, dst, *extra):
    return h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", *extra)


def run_variant(d, opset, rank, kind, dtype, scalar, neg, known_rank=True, tiles=3):
    axis = rank - 2 if rank > 1 else 0
    if neg:
        axis -= rank
    unk = {True: "", False: "_unk", "dynamic": "_dyn"}[known_rank]
    tag = f"op{opset}_r{rank}_{kind}_{dtype}_{'s' if scalar else 'v'}_{'n' if neg else 'p'}{unk}"
    src = os.path.join(d, tag + ".onnx")
    dst = os.path.join(d, tag + "_13.onnx")
    onnx.save(tile1_model(opset, rank, kind, dtype, scalar, tiles, axis, known_rank), src)
    h.expect_ok(migrate(src, dst, "--report", dst + ".json"))
    try:
        h.check(dst)
        m = onnx.load(dst)
        assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [13], tag
        assert m.ir_version >= 7, f"{tag}: ir_version {m.ir_version}"
        assert not any(n.op_type == "Tile" and len(n.input) != 2 for n in m.graph.node), tag
        x = np.random.default_rng(rank).standard_normal(SHAPES[rank]).astype(np.float32)
        feeds = {"x": x}
        if known_rank == "dynamic":
            feeds["s"] = np.array(SHAPES[rank], dtype=np.int64)
        if kind == "input":
            np_t = np.float32 if dtype == "float" else np.int64
            shp = () if scalar else (1,)
            feeds["tiles"] = np.array(tiles, dtype=np_t).reshape(shp)
            feeds["axis"] = np.array(axis, dtype=np_t).reshape(shp)
        want = [expected(x, tiles, axis)]
        h.assert_close(h.run_ort(dst, feeds), want, what=f"{tag}: ORT output")
        h.assert_close(h.run_tileopt(dst, feeds), want, what=f"{tag}: tileopt run output")
        with open(dst + ".json") as f:
            rep = json.load(f)
        acts = [a for p in rep["passes"] for a in p["actions"]
                if a["action"] == "upgraded" and a["op"] == "Tile"]
        assert acts and acts[0]["node"] == "tile1", f"{tag}: actions {acts}"
        r = [1] * rank
        r[axis] = tiles
        got = "runtime" if acts[0].get("runtime_repeats") else acts[0].get("repeats")
        if kind != "input" and known_rank is True:
            assert got == r, f"{tag}: repeats {got}"
        elif kind != "input" and known_rank is False:
            # shape inference ahead of the pass may know the rank after all
            assert got in ("runtime", r), f"{tag}: repeats {got}"
        else:
            assert got == "runtime", f"{tag}: repeats {got}"
        errs = validate_report.report_errors(rep)
        assert not errs, f"{tag}: report does not match the schema: {errs}"
    except AssertionError as e:
        raise AssertionError(f"{tag}: {e}") from e


def upgrade_should_migrate_every_tile1_variant():
    """opsets 1/3/5 x initializer/Constant/graph input x float/int64 x scalar/[1] x
    axis sign, the rank cycling through 1..5, every sixth one unknown to the pass."""
    combos = list(itertools.product((1, 3, 5), ("init", "const", "input"),
                                    ("float", "int64"), (True, False), (False, True)))
    failures = []
    with h.tempdir() as d:
        for i, (opset, kind, dtype, scalar, neg) in enumerate(combos):
            rank = i % 5 + 1
            known = i % 6 != 5
            try:
                run_variant(d, opset, rank, kind, dtype, scalar, neg, known)
            except AssertionError as e:
                failures.append(str(e))
    print(f"tile1 variants: {len(combos) - len(failures)} of {len(combos)} migrated and match")
    assert not failures, "\n".join(failures)


def upgrade_should_handle_every_rank_known_and_unknown():
    with h.tempdir() as d:
        for rank in range(1, 6):
            for known in (True, False, "dynamic"):
                run_variant(d, 5, rank, "init", "float", False, rank % 2 == 0, known)
                run_variant(d, 5, rank, "const", "int64", True, rank % 2 == 1, known)


def upgrade_should_handle_zero_tiles():
    with h.tempdir() as d:
        run_variant(d, 5, 3, "init", "int64", True, False, tiles=0)
        run_variant(d, 5, 3, "input", "float", True, True, tiles=0)


def upgrade_should_use_tiles_the_evaluator_can_compute():
    """tiles = Add(Constant, Constant), axis = Identity(Constant): constant repeats."""
    c = lambda n, v: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(
        np.array([v], np.float32), n + "_v"))
    nodes = [c("c1", 1.0), c("c2", 2.0), c("a0", -1.0),
             helper.make_node("Add", ["c1", "c2"], ["t"]),
             helper.make_node("Identity", ["a0"], ["a"]),
             helper.make_node("Tile", ["x", "t", "a"], ["y"], name="tile1")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 5)])
    m.ir_version = 3
    with h.tempdir() as d:
        src, dst = os.path.join(d, "s.onnx"), os.path.join(d, "d.onnx")
        onnx.save(m, src)
        h.expect_ok(migrate(src, dst, "--report", dst + ".json"))
        h.check(dst)
        with open(dst + ".json") as f:
            acts = [a for p in json.load(f)["passes"] for a in p["actions"]
                    if a["op"] == "Tile"]
        assert acts and acts[0]["repeats"] == [1, 3], acts
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        h.assert_close(h.run_ort(dst, {"x": x}), [np.tile(x, (1, 3))])
        h.assert_close(h.run_tileopt(dst, {"x": x}), [np.tile(x, (1, 3))])


def _expect_fail(d, model, *needles):
    src = os.path.join(d, "bad.onnx")
    dst = os.path.join(d, "bad_out.onnx")
    onnx.save(model, src)
    cp = migrate(src, dst)
    assert cp.returncode == 1, f"exit {cp.returncode}, stderr {cp.stderr}"
    assert not os.path.exists(dst), "output written on failure"
    for n in needles:
        assert n in cp.stderr, f"{n!r} not in {cp.stderr!r}"
    return cp


def upgrade_should_reject_non_whole_tiles_naming_the_node():
    with h.tempdir() as d:
        _expect_fail(d, tile1_model(5, 2, "init", "float", True, 1.5, 0), "tile1", "1.5")


def upgrade_should_reject_negative_tiles_naming_the_node():
    with h.tempdir() as d:
        _expect_fail(d, tile1_model(5, 2, "const", "int64", False, -2, 0), "tile1", "negative")


def upgrade_should_reject_axis_out_of_range_naming_the_node():
    with h.tempdir() as d:
        _expect_fail(d, tile1_model(5, 2, "init", "int64", True, 2, 2), "tile1", "out of range")
        _expect_fail(d, tile1_model(3, 2, "const", "float", True, 2, -3), "tile1",
                     "out of range")


def upgrade_should_reach_every_target_opset():
    """Constant repeats work for any target 6..17; run-time repeats from 7 on when
    the input's rank is known, from 11 on (Range) when it is not."""
    with h.tempdir() as d:
        src = os.path.join(d, "t.onnx")
        onnx.save(tile1_model(5, 3, "init", "float", True, 2, -1), src)
        x = np.random.default_rng(0).standard_normal(SHAPES[3]).astype(np.float32)
        for tgt in range(6, 18):
            dst = os.path.join(d, f"t_{tgt}.onnx")
            h.expect_ok(migrate(src, dst, "--target-opset", tgt))
            h.check(dst)
            m = onnx.load(dst)
            assert m.opset_import[0].version == tgt
            h.assert_close(h.run_ort(dst, {"x": x}), [expected(x, 2, -1)],
                           what=f"target {tgt}")
        # run-time tiles and axis (negative too), rank known: opset-7 ops suffice
        for axis in (1, -1):
            src = os.path.join(d, "u.onnx")
            onnx.save(tile1_model(5, 3, "input", "float", True, 2, axis), src)
            feeds = {"x": x, "tiles": np.array(2, np.float32),
                     "axis": np.array(axis, np.float32)}
            cp = migrate(src, os.path.join(d, "u_6.onnx"), "--target-opset", 6)
            assert cp.returncode == 1 and ">= 7" in cp.stderr, cp.stderr
            for tgt in (7, 8, 9, 10, 11, 13):
                dst = os.path.join(d, f"u_{tgt}.onnx")
                h.expect_ok(migrate(src, dst, "--target-opset", tgt))
                h.check(dst)
                h.assert_close(h.run_ort(dst, feeds), [expected(x, 2, axis)],
                               what=f"run-time Tile-1 at target {tgt}, axis {axis}")
        # rank known only at run time: Range, so 11 and later
        src = os.path.join(d, "v.onnx")
        onnx.save(tile1_model(5, 3, "input", "float", True, 2, 1, "dynamic"), src)
        cp = migrate(src, os.path.join(d, "v_10.onnx"), "--target-opset", 10)
        assert cp.returncode == 1 and "tile1" in cp.stderr and ">= 11" in cp.stderr, cp.stderr
        h.expect_ok(migrate(src, os.path.join(d, "v_11.onnx"), "--target-opset", 11))
        h.check(os.path.join(d, "v_11.onnx"))


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

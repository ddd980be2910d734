#!/usr/bin/python3
"""Tests of the test tools themselves: ort_run.js / ort.py decode and encode every
supported element type exactly, --test-dir catches a mismatch, assert_close and
check() fail when they should, random_feeds is deterministic."""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402
import ort  # noqa: E402

NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
TYPES = [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
         TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
         TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32,
         TensorProto.UINT64, TensorProto.BOOL, TensorProto.STRING]


def _need_ort():
    ok, why = h.ort_available()
    if not ok:
        raise AssertionError(f"ONNX Runtime needed: {why}")


def identity_model(shapes):
    """One Identity per element type; input i has shape shapes[i % len(shapes)]."""
    ins, outs, nodes = [], [], []
    for i, t in enumerate(TYPES):
        shape = shapes[i % len(shapes)]
        name = TensorProto.DataType.Name(t).lower()
        ins.append(helper.make_tensor_value_info(f"in_{name}", t, shape))
        outs.append(helper.make_tensor_value_info(f"out_{name}", t, shape))
        nodes.append(helper.make_node("Identity", [f"in_{name}"], [f"out_{name}"]))
    g = helper.make_graph(nodes, "ids", ins, outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def tools_should_round_trip_every_element_type_through_ort():
    _need_ort()
    with h.tempdir() as d:
        for shapes in ([[2, 3]], [[]], [[0, 3], [4], [1, 1, 5]]):
            p = os.path.join(d, "ids.onnx")
            onnx.save(identity_model(shapes), p)
            feeds = h.random_feeds(p, seed=3)
            # Extremes that a lossy decoder (doubles for int64) would break.
            big = {"in_int64": np.int64(-(2 ** 63) + 7), "in_uint64": np.uint64(2 ** 64 - 3)}
            for k, v in big.items():
                if feeds[k].size:
                    feeds[k].flat[0] = v
            out = h.run_ort(p, feeds)
            h.assert_close(out, list(feeds.values()), rtol=0, atol=0)


def tools_should_bind_list_feeds_in_input_order():
    _need_ort()
    p = os.path.join(h.MODELS, "tile_add.onnx")
    x = np.arange(64 * 256, dtype=np.float32).reshape(64, 256)
    y = np.ones((1024, 1024), np.float32)
    out = h.run_ort(p, [x, y])
    h.assert_close(out[0], np.tile(x, (16, 4)) + y)
    out = h.run_ort(p, {"y": y, "x": x})
    h.assert_close(out[0], np.tile(x, (16, 4)) + y)


def tools_ort_run_should_pass_and_fail_against_test_data():
    _need_ort()
    js = ort.ORT_RUN_JS
    t = os.path.join(NODE_TESTS, "test_tile")
    cp = subprocess.run(["node", js, os.path.join(t, "model.onnx"), "--test-dir",
                         os.path.join(t, "test_data_set_0")],
                        capture_output=True, text=True)
    if cp.returncode != 0:
        raise AssertionError(f"test_tile in ORT: {cp.stderr}")
    with h.tempdir() as d:
        bad = os.path.join(d, "set")
        shutil.copytree(os.path.join(t, "test_data_set_0"), bad)
        want = numpy_helper.to_array(onnx.load_tensor(os.path.join(bad, "output_0.pb")))
        want = want.copy()
        want.flat[7] += 1.0
        ort.write_tensor(want, "z", os.path.join(bad, "output_0.pb"))
        cp = subprocess.run(["node", js, os.path.join(t, "model.onnx"), "--test-dir", bad],
                            capture_output=True, text=True)
        if cp.returncode != 1 or "mismatch" not in cp.stderr or "element 7" not in cp.stderr:
            raise AssertionError(f"changed expected output: exit {cp.returncode}, "
                                 f"{cp.stderr!r}")


def tools_run_ort_should_take_the_graph_optimization_options():
    # The options that tell a difference made by ONNX Runtime's graph rewrites
    # from one in its kernels: each level runs, and a level it lacks is refused
    # rather than run at the default.
    _need_ort()
    p = os.path.join(h.MODELS, "tile_add.onnx")
    x = np.arange(64 * 256, dtype=np.float32).reshape(64, 256)
    y = np.ones((1024, 1024), np.float32)
    for kw in ({"graph_opt": "disabled"}, {"graph_opt": "basic"}, {"graph_opt": "extended"},
               {"graph_opt": "all"},
               {"disable_optimizers": ["NchwcTransformer", "ConstantFolding"]}):
        h.assert_close(h.run_ort(p, [x, y], **kw)[0], np.tile(x, (16, 4)) + y, rtol=0, atol=0)
    try:
        h.run_ort(p, [x, y], graph_opt="most")
    except h.OrtError as e:
        if "disabled, basic, extended or all" not in str(e):
            raise AssertionError(f"message does not list the levels: {e}") from e
        return
    raise AssertionError("an unknown level ran")


def tools_run_ort_should_raise_on_a_model_ort_rejects():
    _need_ort()
    try:
        h.run_ort(os.path.join(h.MODELS, "legacy_tile1.onnx"),
                  [np.zeros((2, 3, 4), np.float32)])
    except h.OrtError as e:
        if "Tile" not in str(e):
            raise AssertionError(f"message does not name Tile: {e}") from e
        return
    raise AssertionError("ORT ran Tile-1, which it does not implement")


def tools_assert_close_should_catch_dtype_shape_and_value_differences():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    h.assert_close(a, a.copy())
    h.assert_close(a, a + np.float32(1e-5))  # inside rtol 1e-3
    cases = [(a, a.astype(np.float64)), (a, a[:2]), (a, a * 1.01),
             (np.array([1, 2]), np.array([1, 3])), ([a], [a, a]),
             (np.array(["x"], object), np.array(["y"], object))]
    for got, want in cases:
        try:
            h.assert_close(got, want)
        except AssertionError:
            continue
        raise AssertionError(f"assert_close accepted {got!r} vs {want!r}")


def tools_check_should_reject_an_invalid_model():
    with h.tempdir() as d:
        g = helper.make_graph([helper.make_node("Add", ["x", "ghost"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        p = os.path.join(d, "bad.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), p)
        try:
            h.check(p)
        except AssertionError as e:
            if "ghost" not in str(e):
                raise AssertionError(f"message does not name the value: {e}") from e
        else:
            raise AssertionError("check() accepted a node reading an undefined value")
        cp = subprocess.run([sys.executable, os.path.join(h.HERE, "check_model.py"), p],
                            capture_output=True, text=True)
        if cp.returncode != 1 or not cp.stderr.startswith(f"check_model: {p}: "):
            raise AssertionError(f"check_model.py: exit {cp.returncode}, {cp.stderr!r}")
        # Valid models pass, and checking never rewrites the file (onnx 1.12's
        # check_model(path, full_check=True) does).
        for name in os.listdir(h.MODELS):
            if name.endswith(".onnx"):
                src = os.path.join(h.MODELS, name)
                p = os.path.join(d, name)
                shutil.copy(src, p)
                with open(p, "rb") as f:
                    data = f.read()
                h.check(p)
                with open(p, "rb") as f:
                    if f.read() != data:
                        raise AssertionError(f"check() rewrote {name}")


def tools_random_feeds_should_be_deterministic_and_typed():
    m = identity_model([["N", 3]])
    a, b = h.random_feeds(m, seed=9), h.random_feeds(m, seed=9)
    c = h.random_feeds(m, seed=10)
    for k in a:
        h.assert_close(a[k], b[k], rtol=0, atol=0)
        if a[k].shape != (2, 3):
            raise AssertionError(f"{k}: shape {a[k].shape}, symbolic N should be 2")
    if all(np.array_equal(a[k], c[k]) for k in a):
        raise AssertionError("different seeds gave equal feeds")
    want = {"in_float": np.float32, "in_uint64": np.uint64, "in_bool": np.bool_,
            "in_float16": np.float16, "in_string": object}
    for k, dt in want.items():
        if a[k].dtype != np.dtype(dt):
            raise AssertionError(f"{k}: dtype {a[k].dtype}, expected {dt}")


def tools_tileopt_should_raise_on_a_sanitizer_report():
    # UBSan keeps the exit code at 0, so the wrapper must read stderr.
    with h.tempdir() as d:
        fake = os.path.join(d, "tileopt")
        with open(fake, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\necho 'graph/x.c:10:5: runtime error: signed integer "
                    "overflow' >&2\nexit 0\n")
        os.chmod(fake, 0o755)
        saved = os.environ.get("TILEOPT")
        os.environ["TILEOPT"] = fake
        try:
            h.tileopt("inspect", "m.onnx")
        except AssertionError as e:
            if "runtime error" not in str(e):
                raise
        else:
            raise AssertionError("a UBSan report on stderr went unnoticed")
        finally:
            if saved is None:
                del os.environ["TILEOPT"]
            else:
                os.environ["TILEOPT"] = saved


def tools_make_models_should_be_deterministic():
    with h.tempdir() as d:
        for f in os.listdir(h.MODELS):
            if f.endswith((".py", ".onnx")):
                shutil.copy(os.path.join(h.MODELS, f), d)
        before = {f: open(os.path.join(d, f), "rb").read() for f in os.listdir(d)}
        cp = subprocess.run([sys.executable, os.path.join(d, "make_models.py")],
                            capture_output=True, text=True)
        if cp.returncode != 0:
            raise AssertionError(f"make_models.py failed: {cp.stderr}")
        for f, data in before.items():
            if f.endswith(".onnx") and open(os.path.join(d, f), "rb").read() != data:
                raise AssertionError(f"{f}: regenerated model differs from the "
                                     "committed one (run models/make_models.py)")
        names = sorted(f for f in before if f.endswith(".onnx"))
        want = ["bias_tile.onnx", "const_tile.onnx", "legacy_repeat.onnx", "legacy_tile1.onnx",
                "shape_repeats.onnx", "tile_add.onnx"]
        if not set(want) <= set(names):
            raise AssertionError(f"models/ lacks {sorted(set(want) - set(names))}")
        for f in want:
            m = onnx.load(os.path.join(d, f))
            if len(m.doc_string) < 40:
                raise AssertionError(f"{f}: doc_string does not say what it shows")
            if sum(n.op_type == "Tile" for n in m.graph.node) != 1:
                raise AssertionError(f"{f}: expected exactly one Tile")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""The sample models end to end: `tileopt optimize` with the default passes (and
each pass alone) gives a model that passes onnx.checker's full check and computes,
in ONNX Runtime, what the input computes (in ORT, or for the opset-5 legacy model
that ORT cannot run, a numpy reference and tileopt's own evaluator)."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

SAMPLES = ["legacy_tile1.onnx", "legacy_repeat.onnx", "const_tile.onnx", "shape_repeats.onnx",
           "tile_add.onnx", "bias_tile.onnx"]


def legacy_reference(feeds):
    """legacy_tile1 in numpy: Tile-1 (tiles 2 on axis 1), Add b[6] on axis 1, Relu."""
    m = onnx.load(os.path.join(h.MODELS, "legacy_tile1.onnx"))
    b = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}["b"]
    t = np.tile(feeds["x"], (1, 2, 1))
    return [np.maximum(t + b.reshape(1, 6, 1), 0).astype(np.float32)]


def legacy_repeat_reference(feeds):
    """legacy_repeat in numpy: Tile-1 (tiles 3 on axis 1), Add b[3,4], Relu."""
    m = onnx.load(os.path.join(h.MODELS, "legacy_repeat.onnx"))
    b = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}["b"]
    return [np.maximum(np.tile(feeds["x"], (1, 3, 1)) + b, 0).astype(np.float32)]


def expected(name, feeds):
    path = os.path.join(h.MODELS, name)
    if name == "legacy_tile1.onnx":
        return legacy_reference(feeds)
    if name == "legacy_repeat.onnx":
        return legacy_repeat_reference(feeds)
    return h.run_ort(path, feeds)


def pass_names():
    """The passes that exist, from the report of a default run."""
    with h.tempdir() as d:
        rep = os.path.join(d, "r.json")
        h.expect_ok(h.tileopt("optimize", os.path.join(h.MODELS, "tile_add.onnx"),
                              "-o", os.path.join(d, "o.onnx"), "--report", rep,
                              "--quiet"))
        with open(rep, encoding="utf-8") as f:
            return [p["name"] for p in json.load(f)["passes"]]


def optimized_outputs(name, feeds, passes):
    with h.tempdir() as d:
        dst = os.path.join(d, name)
        args = ["optimize", os.path.join(h.MODELS, name), "-o", dst, "--quiet"]
        if passes:
            args += ["--passes", passes]
        h.expect_ok(h.tileopt(*args))
        h.check(dst)
        m = onnx.load(dst, load_external_data=False)
        opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        if opset < 7:
            return None  # ORT does not run opsets below 7; nothing to compare
        return h.run_ort(dst, feeds)


def samples_should_compute_the_same_after_the_default_passes():
    failures = []
    for name in SAMPLES:
        feeds = h.random_feeds(os.path.join(h.MODELS, name), seed=11)
        try:
            got = optimized_outputs(name, feeds, None)
            if got is None:
                failures.append(f"{name}: default passes left opset < 7")
                continue
            h.assert_close(got, expected(name, feeds))
        except (AssertionError, h.OrtError) as e:
            failures.append(f"{name}: {e}")
    if failures:
        raise AssertionError("\n".join(failures))


def samples_should_compute_the_same_after_each_pass_alone():
    failures = []
    for p in pass_names():
        for name in SAMPLES:
            feeds = h.random_feeds(os.path.join(h.MODELS, name), seed=12)
            try:
                got = optimized_outputs(name, feeds, p)
                if got is not None:
                    h.assert_close(got, expected(name, feeds))
            except (AssertionError, h.OrtError) as e:
                failures.append(f"--passes {p} {name}: {e}")
    if failures:
        raise AssertionError("\n".join(failures))


def samples_should_run_in_the_evaluator_as_in_ort():
    failures = []
    for name in SAMPLES:
        feeds = h.random_feeds(os.path.join(h.MODELS, name), seed=13)
        try:
            h.assert_close(h.run_tileopt(os.path.join(h.MODELS, name), feeds),
                           expected(name, feeds))
        except (AssertionError, h.OrtError) as e:
            failures.append(f"{name}: {e}")
    if failures:
        raise AssertionError("\n".join(failures))


def run_script_should_show_a_tile_removed_by_default():
    """./run without a model optimizes legacy_repeat.onnx: migrated, its Tile gone."""
    srcdir = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with h.tempdir() as d:
        env = dict(os.environ, TILEOPT=h.tileopt_path())
        cp = subprocess.run([os.path.join(srcdir, "run")], cwd=d, env=env,
                            capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr
        assert "Tile 1 -> 0" in cp.stdout and "opset 5 -> 13" in cp.stdout, cp.stdout


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""`tileopt optimize` output conventions: --quiet prints nothing, the summary goes
to stdout otherwise, no progress in pipes, OUT is replaced atomically (no temporary
files left behind), the input is never touched, saving to a missing folder is
an error, and a verify mismatch names the folds that round. tests/cli/test_out_paths.py
covers the paths that are refused."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

SRC = os.path.join(h.MODELS, "legacy_tile1.onnx")


def optimize_should_print_nothing_with_quiet():
    with h.tempdir() as d:
        cp = h.expect_ok(h.tileopt("optimize", SRC, "-o", os.path.join(d, "o.onnx"),
                                   "--quiet"))
        if cp.stdout or cp.stderr:
            raise AssertionError(f"--quiet printed: {cp.stdout!r} {cp.stderr!r}")


def optimize_should_print_a_summary_and_no_progress_in_a_pipe():
    with h.tempdir() as d:
        dst = os.path.join(d, "o.onnx")
        cp = h.expect_ok(h.tileopt("optimize", SRC, "-o", dst))
        if dst not in cp.stdout or "Tile" not in cp.stdout:
            raise AssertionError(f"summary lacks the output path or Tile count: "
                                 f"{cp.stdout!r}")
        if cp.stderr:
            raise AssertionError(f"stderr in a pipe (progress?): {cp.stderr!r}")


def optimize_should_replace_an_existing_output_and_leave_no_temporary_files():
    with h.tempdir() as d:
        dst = os.path.join(d, "o.onnx")
        with open(dst, "wb") as f:
            f.write(b"old contents")
        h.expect_ok(h.tileopt("optimize", SRC, "-o", dst, "--quiet"))
        h.check(dst)
        if os.listdir(d) != ["o.onnx"]:
            raise AssertionError(f"folder holds {sorted(os.listdir(d))}")


def optimize_should_not_touch_the_input():
    with h.tempdir() as d:
        src = os.path.join(d, "in.onnx")
        with open(SRC, "rb") as f:
            data = f.read()
        with open(src, "wb") as f:
            f.write(data)
        mtime = os.stat(src).st_mtime_ns
        h.expect_ok(h.tileopt("optimize", src, "-o", os.path.join(d, "o.onnx"),
                              "--quiet"))
        with open(src, "rb") as f:
            if f.read() != data or os.stat(src).st_mtime_ns != mtime:
                raise AssertionError("input changed")


def optimize_should_fail_cleanly_when_the_output_folder_is_missing():
    with h.tempdir() as d:
        dst = os.path.join(d, "no_such_dir", "o.onnx")
        cp = h.tileopt("optimize", SRC, "-o", dst, "--quiet")
        lines = cp.stderr.splitlines()
        if (cp.returncode != 1 or len(lines) != 1
                or not lines[0].startswith("tileopt: error: ")
                or "no_such_dir" not in lines[0]):
            raise AssertionError(f"exit {cp.returncode}, stderr {cp.stderr!r}")
        if os.listdir(d):
            raise AssertionError(f"created {os.listdir(d)}")


def cancelling_bn_model(path):
    """Two Conv + BatchNormalization branches, one of negated weights, summed:
    the sum is 2 * (B - mean * s) up to rounding, near 0 where B = mean * s,
    so the fold's rounding alone shows on every output."""
    rng = np.random.default_rng(3)
    w = (10 * rng.standard_normal((4, 3, 3, 3))).astype(np.float32)
    s = rng.uniform(0.5, 2, 4).astype(np.float32)
    mean = rng.standard_normal(4).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for v, n in (
        (w, "w"), (-w, "nw"), (s, "s"), (mean * s, "b"), (mean, "m"), (np.ones(4, np.float32), "v"))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "nw"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "s", "b", "m", "v"], ["n1"]),
             helper.make_node("BatchNormalization", ["c2", "s", "b", "m", "v"], ["n2"]),
             helper.make_node("Add", ["n1", "n2"], ["y"])]
    g = helper.make_graph(nodes, "cancel", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 3, 16, 16])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [1, 4, 16, 16])], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def verify_should_name_the_fold_that_rounds_when_outputs_cancel():
    with h.tempdir() as d:
        src, dst = os.path.join(d, "in.onnx"), os.path.join(d, "o.onnx")
        cancelling_bn_model(src)
        cp = h.tileopt("optimize", src, "-o", dst, "--verify", "--quiet")
        if cp.returncode != 1 or "fuse_bn_into_conv rounds" not in cp.stderr or \
                "--skip-passes fuse_bn_into_conv" not in cp.stderr:
            raise AssertionError(f"exit {cp.returncode}, stderr {cp.stderr!r}")
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--verify", "--quiet",
                              "--skip-passes", "fuse_bn_into_conv"))


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

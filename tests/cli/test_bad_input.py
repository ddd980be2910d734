#!/usr/bin/python3
"""Bad input: every malformed model or path gives exit 1 and exactly one
stderr line `tileopt: error: ...` naming the problem, creates no output file
(nothing at all appears in the output folder) and leaves the input untouched.
Usage errors give exit 2. The malformed models are built here with onnx.helper and
never passed through the checker."""
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

# The helpers (and the rules every bad input is held to: exit code, one error line
# naming the problem, no sanitizer report, nothing written, the input untouched)
# are the hardening tests' own.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import F, model, run_bad, snapshot, vi, write  # noqa: E402


def expect_error(args, pattern, in_dir, out_dir, code=1, what=""):
    return run_bad(args, pattern, in_dir, out_dir, code, label=what)


def bad_model_case(name, data, pattern, extra_files=None, inspect=False):
    """Write data as IN in a fresh folder and run optimize (and inspect)."""
    with h.tempdir() as d:
        in_dir = os.path.join(d, "in")
        out_dir = os.path.join(d, "out")
        os.makedirs(in_dir)
        os.makedirs(out_dir)
        src = os.path.join(in_dir, "model.onnx")
        write(src, data)
        for rel, content in (extra_files or {}).items():
            write(os.path.join(d, rel), content)
        dst = os.path.join(out_dir, "out.onnx")
        expect_error(["optimize", src, "-o", dst], pattern, d, out_dir,
                     what=f"{name}: optimize")
        expect_error(["optimize", src, "-o", dst, "--passes", "none"], pattern, d,
                     out_dir, what=f"{name}: optimize --passes none")
        if inspect:
            expect_error(["inspect", src], pattern, d, None, what=f"{name}: inspect")


# ------------------------------------------------------------- file-level

def bad_input_should_reject_an_empty_file():
    bad_model_case("empty file", b"", r"empty|no graph|graph|parse", inspect=True)


def bad_input_should_reject_random_bytes():
    data = np.random.default_rng(7).bytes(4096)
    parsed = True
    try:  # the case is only meaningful if these bytes are not a ModelProto
        onnx.ModelProto().ParseFromString(data)
    except Exception:
        parsed = False
    if parsed:
        raise AssertionError("random bytes parsed as a ModelProto; change the seed")
    bad_model_case("random bytes", data,
                   r"parse|protobuf|malformed|not an? onnx|invalid|wire|corrupt",
                   inspect=True)


def bad_input_should_reject_a_truncated_model():
    with open(os.path.join(h.MODELS, "const_tile.onnx"), "rb") as f:
        data = f.read()
    cut = data[:len(data) * 2 // 3]
    bad_model_case("truncated model", cut,
                   r"truncat|parse|protobuf|malformed|invalid|end of", inspect=True)


def bad_input_should_reject_a_missing_path():
    with h.tempdir() as d:
        out_dir = os.path.join(d, "out")
        os.makedirs(out_dir)
        missing = os.path.join(d, "no_such_model.onnx")
        expect_error(["optimize", missing, "-o", os.path.join(out_dir, "o.onnx")],
                     r"no_such_model\.onnx", d, out_dir, what="missing path: optimize")
        expect_error(["inspect", missing], r"no_such_model\.onnx", d, None,
                     what="missing path: inspect")


def bad_input_should_reject_a_directory():
    with h.tempdir() as d:
        out_dir = os.path.join(d, "out")
        src = os.path.join(d, "model_dir.onnx")
        os.makedirs(out_dir)
        os.makedirs(src)
        expect_error(["optimize", src, "-o", os.path.join(out_dir, "o.onnx")],
                     r"director", d, out_dir, what="directory: optimize")
        expect_error(["inspect", src], r"director", d, None, what="directory: inspect")


def bad_input_should_refuse_a_directory_as_output():
    with h.tempdir() as d:
        src = os.path.join(d, "m.onnx")
        write(src, open(os.path.join(h.MODELS, "tile_add.onnx"), "rb").read())
        out = os.path.join(d, "out")
        os.makedirs(out)
        expect_error(["optimize", src, "-o", out, "--passes", "none"],
                     r"director|out", d, out, what="output is a directory")


# ------------------------------------------------------------ graph-level

def bad_input_should_reject_a_node_reading_an_undefined_value():
    m = model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add_ghost")],
              [vi("x")], [vi("y")])
    bad_model_case("undefined value", m, r"ghost")


def bad_input_should_reject_two_nodes_writing_one_value():
    m = model([helper.make_node("Relu", ["x"], ["t"], name="first_writer"),
               helper.make_node("Neg", ["x"], ["t"], name="second_writer"),
               helper.make_node("Identity", ["t"], ["y"], name="id")],
              [vi("x")], [vi("y")])
    bad_model_case("two writers", m, r"'?\bt\b'?.*(writer|produc|defin|twice|more than)|"
                   r"(writer|produc|defin|twice|more than).*'?\bt\b'?")


def bad_input_should_reject_a_cycle():
    m = model([helper.make_node("Add", ["x", "c"], ["a"], name="cyc_add"),
               helper.make_node("Relu", ["a"], ["c"], name="cyc_relu")],
              [vi("x")], [vi("a")])
    bad_model_case("cycle", m, r"cycl.*(cyc_add|cyc_relu|\ba\b|\bc\b)|"
                   r"(cyc_add|cyc_relu).*cycl")


def bad_input_should_reject_an_unknown_data_type():
    w = TensorProto(name="w_bad", data_type=99, dims=[2, 3], raw_data=bytes(24))
    m = model([helper.make_node("Add", ["x", "w_bad"], ["y"], name="add_w")],
              [vi("x")], [vi("y")], inits=[w])
    bad_model_case("unknown data type", m, r"w_bad|99")


def bad_input_should_reject_an_unknown_element_type_of_a_graph_input():
    m = model([helper.make_node("Relu", ["x_bad"], ["y"], name="relu")],
              [vi("x_bad", elem=99)], [vi("y")])
    bad_model_case("unknown input element type", m, r"x_bad|99")


def _external_model(location):
    w = TensorProto(name="w_ext", data_type=F, dims=[2, 3])
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value=location)
    w.external_data.add(key="length", value="24")
    return model([helper.make_node("Add", ["x", "w_ext"], ["y"], name="add_ext")],
                 [vi("x")], [vi("y")], inits=[w])


def bad_input_should_refuse_external_data_leaving_the_folder():
    # The file exists, so the only problem is where it is.
    data = np.arange(6, dtype=np.float32).tobytes()
    bad_model_case("external ../x.bin", _external_model("../x.bin"),
                   r"\.\./x\.bin", extra_files={"x.bin": data})
    bad_model_case("external sub/../../x.bin", _external_model("sub/../../x.bin"),
                   r"sub/\.\./\.\./x\.bin|\.\./x\.bin", extra_files={"x.bin": data})


def bad_input_should_refuse_an_absolute_external_data_location():
    data = np.arange(6, dtype=np.float32).tobytes()
    with h.tempdir() as d:
        target = os.path.join(d, "abs.bin")
        write(target, data)
        bad_model_case("external absolute", _external_model(target),
                       re.escape(target) + r"|absolute")


# ----------------------------------------------------------------- usage

def usage_should_exit_2_on_an_unknown_pass():
    with h.tempdir() as d:
        out_dir = os.path.join(d, "out")
        os.makedirs(out_dir)
        src = os.path.join(h.MODELS, "tile_add.onnx")
        expect_error(["optimize", src, "-o", os.path.join(out_dir, "o.onnx"),
                      "--passes", "nosuchpass"], r"nosuchpass", None, out_dir, code=2)
        cp = h.tileopt("optimize", src, "-o", os.path.join(out_dir, "o.onnx"),
                       "--passes", "nosuchpass")
        # The message names the passes that do exist ("none" at the very least).
        if not any(p in cp.stderr for p in ("none", "upgrade", "fold", "fuse")):
            raise AssertionError(f"unknown pass message lists no known pass: "
                                 f"{cp.stderr!r}")


def skip_passes_should_leave_out_the_passes_it_names():
    with h.tempdir() as d:
        src = os.path.join(h.MODELS, "tile_add.onnx")
        out, rep = os.path.join(d, "o.onnx"), os.path.join(d, "r.json")
        for args, gone, kept in ((["--skip-passes", "fuse,eliminate_dead"],
                                  {"fuse", "eliminate_dead"}, {"upgrade", "fold"}),
                                 (["--passes", "fold,fuse", "--skip-passes", "fuse"],
                                  {"fuse", "upgrade"}, {"fold"})):
            cp = h.tileopt("optimize", src, "-o", out, "--report", rep, "--quiet", *args)
            assert cp.returncode == 0, cp.stderr
            with open(rep) as f:
                ran = {p["name"] for p in json.load(f)["passes"]}
            assert not ran & gone and kept <= ran, (args, ran)
        expect_error(["optimize", src, "-o", os.path.join(d, "x.onnx"), "--skip-passes",
                      "fusee"], r"unknown pass 'fusee' in --skip-passes", None, None, code=2)


def usage_should_exit_2_without_an_output_path():
    src = os.path.join(h.MODELS, "tile_add.onnx")
    expect_error(["optimize", src], r"-o|output", None, None, code=2)


def usage_should_exit_2_on_an_unknown_option_or_command():
    src = os.path.join(h.MODELS, "tile_add.onnx")
    expect_error(["optimize", src, "-o", "/nonexistent/o.onnx", "--no-such-flag"],
                 r"no-such-flag", None, None, code=2)
    expect_error(["frobnicate", src], r"frobnicate", None, None, code=2)
    expect_error([], r"command|usage", None, None, code=2)


def usage_should_print_help_and_version_with_exit_0():
    cp = h.tileopt("--help")
    if cp.returncode != 0 or "optimize" not in cp.stdout or "inspect" not in cp.stdout:
        raise AssertionError(f"--help: exit {cp.returncode}, stdout {cp.stdout[:300]!r}")
    cp = h.tileopt("--version")
    if cp.returncode != 0 or not re.search(r"\d+\.\d+\.\d+", cp.stdout):
        raise AssertionError(f"--version: exit {cp.returncode}, stdout {cp.stdout!r}")


def bad_input_should_keep_an_existing_output_on_failure():
    # A failed run never changes OUT: an existing file stays byte-identical.
    with h.tempdir() as d:
        out_dir = os.path.join(d, "out")
        os.makedirs(out_dir)
        dst = os.path.join(out_dir, "out.onnx")
        write(dst, b"previous output")
        src = os.path.join(d, "bad.onnx")
        write(src, b"")
        before = snapshot(out_dir)
        cp = h.tileopt("optimize", src, "-o", dst)
        if cp.returncode != 1 or snapshot(out_dir) != before:
            raise AssertionError(f"exit {cp.returncode}; output folder before "
                                 f"{sorted(before)} after {sorted(snapshot(out_dir))}")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

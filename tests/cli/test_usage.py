#!/usr/bin/python3
"""The conventions users bring from other tools: optimize IN OUT
(onnx-simplifier's), --overwrite-input-shape, -V, a suggestion for a mistyped
option and a hint to the command's own --help, inspect over several models,
warnings and errors on stderr whatever -q says, a clean JSON report on stdout,
verify on real inputs with the shapes it used said, and `run` on .npy/.npz
files or random inputs. Every bad input is one error line, exit 2, nothing
written."""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

SRC = os.path.join(h.MODELS, "legacy_repeat.onnx")


def save(d, name, nodes, inputs, outputs, inits=(), opset=13, domains=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(x, 1) for x in domains]
    path = os.path.join(d, name)
    onnx.save(helper.make_model(g, opset_imports=imports), path)
    return path


def batch_repeat(d):
    """y = Tile(x, [1, 3]) + b: x [N,1] float, b [3] float; a named batch N."""
    return save(d, "rep.onnx",
                [helper.make_node("Tile", ["x", "r"], ["t"], name="tile"),
                 helper.make_node("Add", ["t", "b"], ["y"], name="add")],
                [h.vi("x", TensorProto.FLOAT, ["N", 1])], [h.vi("y", TensorProto.FLOAT, ["N", 3])],
                [h.i64("r", [1, 3]), numpy_helper.from_array(np.array([1, 2, 3], np.float32), "b")])


def expect_usage_error(cp, *words, written=()):
    """Exit 2, one error line and the command's hint, nothing written."""
    lines = cp.stderr.strip().splitlines()
    assert cp.returncode == 2, (cp.returncode, cp.stderr)
    assert len(lines) == 2 and lines[0].startswith("tileopt: error: "), cp.stderr
    assert lines[1].startswith("(tileopt ") and lines[1].endswith("--help shows the usage)"), lines
    for w in words:
        assert w in lines[0], (w, lines[0])
    for path in written:
        assert not os.path.exists(path), path
    return lines[0]


def optimize_should_take_out_as_its_second_operand():
    with h.tempdir() as d:
        out = os.path.join(d, "o.onnx")
        h.expect_ok(h.tileopt("optimize", SRC, out, "-q"))
        h.check(out)
        with_o = os.path.join(d, "o2.onnx")
        h.expect_ok(h.tileopt("optimize", SRC, "-o", with_o, "-q"))
        assert open(out, "rb").read() == open(with_o, "rb").read()
        copy = os.path.join(d, "m.onnx")
        with open(SRC, "rb") as f, open(copy, "wb") as g:
            g.write(f.read())
        before = open(copy, "rb").read()
        for same in (copy, os.path.join(d, ".", "m.onnx")):
            expect_usage_error(h.tileopt("optimize", copy, same), "is the input model")
        assert open(copy, "rb").read() == before
        line = expect_usage_error(h.tileopt("optimize", copy), "second operand")
        assert "optimize" in line


def overwrite_input_shape_should_be_input_shape():
    with h.tempdir() as d:
        src = batch_repeat(d)
        a, b = os.path.join(d, "a.onnx"), os.path.join(d, "b.onnx")
        h.expect_ok(h.tileopt("optimize", src, a, "--input-shape", "x:4,1", "-q"))
        h.expect_ok(h.tileopt("optimize", src, b, "--overwrite-input-shape=x:4,1", "-q"))
        assert open(a, "rb").read() == open(b, "rb").read()
        assert "Tile" not in [n.op_type for n in onnx.load(a).graph.node]


def version_should_answer_to_v():
    short, long = h.tileopt("-V"), h.tileopt("--version")
    h.expect_ok(short)
    assert short.stdout == long.stdout and short.stdout.startswith("tileopt "), short.stdout


def a_near_miss_should_name_the_option_meant():
    with h.tempdir() as d:
        out = os.path.join(d, "o.onnx")
        expect_usage_error(h.tileopt("optimize", SRC, out, "--fold-scop", "all"),
                           "did you mean --fold-scope?", written=[out])
        expect_usage_error(h.tileopt("optimize", SRC, out, "--verfy"), "did you mean --verify?",
                           written=[out])
        expect_usage_error(h.tileopt("run", SRC, "--rando"), "did you mean --random?")
        expect_usage_error(h.tileopt("inspect", SRC, "--jsn"), "did you mean --json?")
        line = expect_usage_error(h.tileopt("optimize", SRC, out, "--zzzzzz"), "--zzzzzz")
        assert "did you mean" not in line
        cp = h.tileopt("run", SRC, "--fold-scope", "all")
        assert "tileopt run --help" in cp.stderr, cp.stderr


def inspect_should_take_several_models():
    b = os.path.join(h.MODELS, "bias_tile.onnx")
    cp = h.tileopt("inspect", SRC, b)
    h.expect_ok(cp)
    assert f"== {SRC}\n" in cp.stdout and f"\n== {b}\n" in cp.stdout, cp.stdout
    cp = h.tileopt("inspect", "--json", SRC, b)
    h.expect_ok(cp)
    got = json.loads(cp.stdout)
    assert [m["ir_version"] for m in got] == [3, 8], got
    cp = h.tileopt("inspect", SRC, "/nonexistent.onnx", b)
    assert cp.returncode == 1 and cp.stderr.count("tileopt: error:") == 1, cp.stderr
    assert f"== {b}\n" in cp.stdout, cp.stdout


def legacy_tile_with_int_tiles(d):
    """Tile-1 whose tiles and axis are int64 while its input is float: the
    upgrade migrates it with a warning (the source fails the checker)."""
    tiles = numpy_helper.from_array(np.array([2], np.int64), "tiles")
    axis = numpy_helper.from_array(np.array([0], np.int64), "axis")
    return save(d, "warn.onnx", [helper.make_node("Tile", ["x", "tiles", "axis"], ["y"])],
                [h.vi("x", TensorProto.FLOAT, [2, 3])], [h.vi("y", TensorProto.FLOAT, [4, 3])],
                [tiles, axis], opset=5)


def warnings_should_go_to_stderr_whatever_quiet_says():
    with h.tempdir() as d:
        src, out = legacy_tile_with_int_tiles(d), os.path.join(d, "o.onnx")
        for flags in ((), ("-q",)):
            cp = h.tileopt("optimize", src, out, *flags)
            h.expect_ok(cp)
            assert "warning" not in cp.stdout, cp.stdout
            assert "tileopt: warning: node" in cp.stderr and "fails the checker" in cp.stderr, \
                cp.stderr
            assert (cp.stdout == "") == bool(flags), cp.stdout


def a_batch_should_show_its_models_warnings():
    with h.tempdir() as d:
        src, outdir = legacy_tile_with_int_tiles(d), os.path.join(d, "out")
        for flags in ((), ("-q",)):
            cp = h.tileopt("optimize", src, SRC, "-o", outdir, *flags)
            h.expect_ok(cp)
            lines = [l for l in cp.stderr.splitlines() if l.startswith("tileopt: warning:")]
            assert len(lines) == 1 and f"tileopt: warning: {src}: node" in lines[0], cp.stderr


def a_report_on_stdout_should_be_json_alone():
    with h.tempdir() as d:
        src, out = legacy_tile_with_int_tiles(d), os.path.join(d, "o.onnx")
        cp = h.tileopt("optimize", src, out, "--report", "-", "--verify")
        h.expect_ok(cp)
        report = json.loads(cp.stdout)
        assert report["verify"]["verdict"] == "match", report["verify"]
        assert f"{src} -> {out}" in cp.stderr and "tileopt: warning:" in cp.stderr, cp.stderr


def unverifiable(d):
    """A model with an op the evaluator lacks: verify has no verdict."""
    return save(d, "odd.onnx", [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                [h.vi("x", TensorProto.FLOAT, [2])], [h.vi("y", TensorProto.FLOAT, [2])],
                domains=["com.microsoft"])


def a_verify_without_verdict_should_say_so_even_quiet():
    with h.tempdir() as d:
        src, out = unverifiable(d), os.path.join(d, "o.onnx")
        cp = h.tileopt("optimize", src, out, "--verify", "-q")
        h.expect_ok(cp)
        assert cp.stdout == "", cp.stdout
        assert "tileopt: warning: verify gave no verdict" in cp.stderr and \
            "--verify=strict" in cp.stderr and "Gelu" in cp.stderr, cp.stderr
        os.remove(out)
        cp = h.tileopt("optimize", src, out, "--verify=strict", "-q")
        assert cp.returncode == 1 and cp.stderr.count("tileopt: error:") == 1, cp.stderr
        assert not os.path.exists(out)


def verify_should_run_on_the_inputs_given():
    with h.tempdir() as d:
        src, out = batch_repeat(d), os.path.join(d, "o.onnx")
        x = np.arange(5, dtype=np.float32).reshape(5, 1)
        npz = os.path.join(d, "in.npz")
        np.savez(npz, x=x)
        sets = os.path.join(d, "test_data_set_0")
        os.mkdir(sets)
        with open(os.path.join(sets, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        npys = os.path.join(d, "npys")
        os.mkdir(npys)
        np.save(os.path.join(npys, "x.npy"), x)
        for given, file in ((npz, npz + "[x]"), (sets, os.path.join(sets, "input_0.pb")),
                            (npys, os.path.join(npys, "x.npy")),
                            (os.path.join(npys, "x.npy"), os.path.join(npys, "x.npy"))):
            rep = os.path.join(d, "r.json")
            cp = h.tileopt("optimize", src, out, "--verify-inputs", given, "--report", rep)
            h.expect_ok(cp)
            v = json.load(open(rep))["verify"]
            assert v["verdict"] == "match" and v["source"] == "files", v
            assert v["inputs"] == [{"name": "x", "dtype": "FLOAT", "shape": [5, 1],
                                    "file": file}], v
            assert "verify: match" in cp.stdout and f"verify inputs: x FLOAT [5,1] ({file})" \
                in cp.stdout, cp.stdout


def verify_shape_should_size_the_open_dims():
    with h.tempdir() as d:
        src, out, rep = batch_repeat(d), os.path.join(d, "o.onnx"), os.path.join(d, "r.json")
        for flag, shape in (("7", [7, 1]), ("x:3,1", [3, 1])):
            cp = h.tileopt("optimize", src, out, "--verify", "--verify-shape", flag,
                           "--report", rep)
            h.expect_ok(cp)
            v = json.load(open(rep))["verify"]
            assert v["source"] == "random" and v["inputs"][0]["shape"] == shape, v
            assert "verify inputs: random (seed 1): x FLOAT [%d,1]" % shape[0] in cp.stdout, \
                cp.stdout
        h.expect_ok(h.tileopt("optimize", src, out, "--verify", "-q"))
        cp = h.tileopt("optimize", src, out, "--verify", "--report", "-", "-q")
        assert json.loads(cp.stdout)["verify"]["inputs"][0]["shape"] == [2, 1]


def bad_inputs_should_be_one_usage_error_and_write_nothing():
    with h.tempdir() as d:
        src, out = batch_repeat(d), os.path.join(d, "o.onnx")
        outs = os.path.join(d, "outs.npz")
        np.savez(os.path.join(d, "nokey.npz"), y=np.zeros((2, 1), np.float32))
        np.save(os.path.join(d, "x.npy"), np.zeros((2, 1), np.float64))
        np.save(os.path.join(d, "rank.npy"), np.zeros((2, 1, 1), np.float32))
        cases = [
            (["optimize", src, out, "--verify-inputs", os.path.join(d, "nokey.npz")],
             ["'y' is no input"]),
            (["optimize", src, out, "--verify-inputs", os.path.join(d, "x.npy")],
             ["DOUBLE [2,1]", "FLOAT [N,1]"]),
            (["optimize", src, out, "--input-shape", "x:-1,1"], ["dims are numbers"]),
            (["optimize", src, out, "--input-shape", "x:99999999999999,1"], ["is over"]),
            (["optimize", src, out, "--verify-shape", "-3"], ["--verify-shape"]),
            (["optimize", src, out, "--verify-shape", "x:1,1,1", "--verify"], ["rank"]),
            (["optimize", src, src], ["is the input model"]),
            (["run", src, "--random=-1", "-o", outs], ["--random takes a seed"]),
            (["run", src, "--random=99999999999999999999999", "-o", outs], ["seed"]),
            (["run", src, os.path.join(d, "nokey.npz"), "-o", outs], ["'y' is no input"]),
            (["run", src, os.path.join(d, "x.npy"), "-o", outs], ["input 'x'", "DOUBLE"]),
            (["run", src, "-o", outs], ["input 'x' (FLOAT [N,1]) is missing"]),
            (["run", src, "--random", os.path.join(d, "x.npy")], ["one of them"]),
        ]
        for args, words in cases:
            expect_usage_error(h.tileopt(*args), *words, written=[out, outs])


def run_should_take_numpy_files_and_random_inputs():
    with h.tempdir() as d:
        src = batch_repeat(d)
        x = np.arange(4, dtype=np.float32).reshape(4, 1)
        want = np.tile(x, (1, 3)) + np.array([1, 2, 3], np.float32)
        np.savez_compressed(os.path.join(d, "in.npz"), x=x)
        np.save(os.path.join(d, "x.npy"), x.astype(">f4"))
        for given in ("in.npz", "x.npy"):
            out = os.path.join(d, "out.npz")
            h.expect_ok(h.tileopt("run", src, os.path.join(d, given), "-o", out))
            got = np.load(out)
            assert list(got) == ["y"] and np.array_equal(got["y"], want), (given, dict(got))
            os.remove(out)
        a, b = os.path.join(d, "a.npz"), os.path.join(d, "b.npz")
        h.expect_ok(h.tileopt("run", src, "--random", "-o", a))
        h.expect_ok(h.tileopt("run", src, "--random=1", "-o", b))
        assert np.array_equal(np.load(a)["y"], np.load(b)["y"])
        assert np.load(a)["y"].shape == (2, 3)
        h.expect_ok(h.tileopt("run", src, "--random", "9", "--input-shape", "x:6,1", "-o", b))
        assert np.load(b)["y"].shape == (6, 3) and not np.array_equal(np.load(b)["y"][:2],
                                                                      np.load(a)["y"])
        cp = h.tileopt("run", src, "--random")
        h.expect_ok(cp)
        assert cp.stdout.startswith("y: FLOAT [2,3] = "), cp.stdout


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

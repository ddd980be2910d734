#!/usr/bin/python3
"""GNU habits of the command line: sizes with suffixes, --name=value, and a
--help per command that describes every option with its default."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402


def tile_model(d):
    """A constant 4x4 float tiled 600x600 times: a 23,040,000-byte fold."""
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t"], name="big"),
             helper.make_node("Add", ["x", "t"], ["y"])]
    g = helper.make_graph(nodes, "g", [h.vi("x", TensorProto.FLOAT, [2400, 2400])],
                          [h.vi("y", TensorProto.FLOAT, [2400, 2400])],
                          [numpy_helper.from_array(np.ones((4, 4), np.float32), "c"),
                           h.i64("reps", [600, 600])])
    p = os.path.join(d, "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), p)
    return p


def folded(d, *flags):
    src, out = tile_model(d), os.path.join(d, "o.onnx")
    h.expect_ok(h.tileopt("optimize", src, "-o", out, "--passes", "fold", "-q", *flags))
    return "Tile" not in [n.op_type for n in onnx.load(out).graph.node]


def sizes_should_take_suffixes_and_unlimited():
    with h.tempdir() as d:
        # the fold adds 23,040,000 bytes and frees the 80 of its constant inputs
        assert not folded(d, "--fold-limit", "16M")
        assert not folded(d, "--fold-limit", "23MB")
        assert folded(d, "--fold-limit", "24MB")
        assert not folded(d, "--fold-limit", "22499K")
        assert folded(d, "--fold-limit", "22500K")
        assert folded(d, "--fold-limit", "1GiB")
        assert folded(d, "--fold-limit", "unlimited")
        for bad in ("1.5M", "-1", "10X", "M", ""):
            cp = h.tileopt("optimize", tile_model(d), "-o", os.path.join(d, "o.onnx"),
                           "--fold-limit", bad)
            assert cp.returncode == 2, (bad, cp.returncode, cp.stderr)
            assert "size in bytes" in cp.stderr and "--help" in cp.stderr, cp.stderr


def long_options_should_take_an_equals_value():
    with h.tempdir() as d:
        src, out = tile_model(d), os.path.join(d, "o.onnx")
        cp = h.tileopt("optimize", src, "--output=" + out, "--passes=fold", "--report=-",
                       "--fold-limit=32M", "--max-tensor-bytes=1G", "--verify=strict", "-q")
        h.expect_ok(cp)
        report = json.loads(cp.stdout)
        assert [p["name"] for p in report["passes"]] == ["fold"], report["passes"]
        assert report["verify"]["verdict"] == "match", report["verify"]
        assert "Tile" not in [n.op_type for n in onnx.load(out).graph.node]
        cp = h.tileopt("inspect", src, "--max-rank=1")
        assert cp.returncode == 1 and "rank" in cp.stderr, cp.stderr


def help_should_describe_every_option_with_its_default():
    usage = h.tileopt("--help").stdout
    for cmd in ("optimize", "inspect"):
        cp = h.tileopt(cmd, "--help")
        h.expect_ok(cp)
        text = cp.stdout
        assert text.startswith(f"usage: tileopt {cmd}"), text
        line = next(l for l in usage.splitlines() if l.strip().startswith(f"tileopt {cmd}"))
        block = usage[usage.index(line):].split("\n  tileopt ")[0]
        for flag in set(re.findall(r"--[a-z-]+", block)) - {"--max-"}:
            assert flag in text, (cmd, flag)
        # every option entry (a line starting with two spaces and a dash) says
        # its default, or that it is required, within its description
        entries = re.split(r"\n(?=  -)", text.split("options:\n", 1)[1])
        for e in entries:
            if e.strip().startswith("-") and "help" not in e:
                assert "default" in e or "required" in e, (cmd, e)


def an_upgrade_it_cannot_do_should_say_how_to_go_on():
    with h.tempdir() as d:
        # Celu came at opset 12, and no rewrite of it in older ops is known
        src = "/usr/share/libonnx-testdata/data/node/test_celu/model.onnx"
        cp = h.tileopt("optimize", src, "-o", os.path.join(d, "o.onnx"), "--target-opset", "11")
        assert cp.returncode == 1, cp.stderr
        assert "Celu 12->11: op does not exist at the target opset" in cp.stderr and \
            "--passes fold,fuse" in cp.stderr, cp.stderr
        assert not os.path.exists(os.path.join(d, "o.onnx"))


def run_script_should_keep_outputs_of_models_that_share_a_name():
    node = "/usr/share/libonnx-testdata/data/node"
    models = [f"{node}/test_tile/model.onnx", f"{node}/test_tile_precomputed/model.onnx",
              f"{node}/test_tile/model.onnx"]
    srcdir = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with h.tempdir() as d:
        env = dict(os.environ, TILEOPT=h.tileopt_path())
        cp = subprocess.run([os.path.join(srcdir, "run"), *models, "-q"], cwd=d, env=env,
                            capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr
        got = sorted(os.listdir(os.path.join(d, "out")))
        assert got == sorted(f"{n}.{k}" for n in ("model", "test_tile_model",
                                                  "test_tile_precomputed_model")
                             for k in ("opt.onnx", "report.json", "html")), got


def optimize_in_terminal(src, out, passes, *flags):
    """What `tileopt optimize` writes to a terminal (script gives it a pty:
    progress shows only there), stdout and stderr as one text."""
    cmd = f"{h.tileopt_path()} optimize {src} -o {out} --passes {passes} {' '.join(flags)}"
    cp = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, timeout=300)
    text = cp.stdout.decode("utf-8", "replace")
    assert cp.returncode == 0, text
    return text


def progress_should_reach_100_and_be_erased_before_the_summary():
    """In a real terminal (script gives tileopt a pty): the fold and fuse
    progress of a 9,000-node model reaches 100%, and the summary starts on a
    clean line, not glued to a progress line."""
    nodes = [helper.make_node("Tile", ["c", "reps"], ["t0"], name="tile")]
    for i in range(9000):
        nodes.append(helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]))
    nodes.append(helper.make_node("Add", ["x", "t9000"], ["y"]))
    g = helper.make_graph(nodes, "g", [h.vi("x", TensorProto.FLOAT, [4, 4])],
                          [h.vi("y", TensorProto.FLOAT, [4, 4])],
                          [numpy_helper.from_array(np.ones((2, 2), np.float32), "c"),
                           h.i64("reps", [2, 2])])
    with h.tempdir() as d:
        src, out = os.path.join(d, "big.onnx"), os.path.join(d, "o.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), src)
        text = optimize_in_terminal(src, out, "fold,fuse")
        assert "fold: 9002/9002 (100%)" in text, text
        start = text.index(f"{src} -> {out}")
        before = text[:start]
        # what precedes the summary is a newline or the erase sequence
        assert before == "" or before.endswith("\n") or before.endswith("\r\x1b[K"), \
            repr(before[-80:])


def saving_external_data_should_show_progress_in_human_units():
    w = np.ones((70, 1 << 18), np.float32)  # 70 MiB, past the 64 MiB progress step
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [h.vi("x", TensorProto.FLOAT, [70, 1 << 18])],
                          [h.vi("y", TensorProto.FLOAT, [70, 1 << 18])],
                          [numpy_helper.from_array(w, "w")])
    with h.tempdir() as d:
        # another folder: the output gets a data file of its own (beside the
        # input it would share the input's)
        src, out = os.path.join(d, "ext.onnx"), os.path.join(d, "sub", "o.onnx")
        os.mkdir(os.path.join(d, "sub"))
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), src,
                  save_as_external_data=True, location="ext.data")
        text = optimize_in_terminal(src, out, "none")
        assert "saving data: 70.0 MiB/70.0 MiB (100%)" in text, text
        assert "external data 70.0 MiB -> 70.0 MiB" in text, text


def progress_lines(text, what):
    """The percentages of the progress lines of phase `what`, in order."""
    return [int(m) for m in re.findall(re.escape(what) + r": [^\r\n]*?\( *(\d+)%\)", text)]


def a_long_fold_load_and_verify_should_show_their_progress():
    """One big Tile folded: its evaluation reports the bytes written as it goes
    (not a count of nodes stuck at 0% until it ends), the 70 MiB input reports
    its loading, and --verify the nodes each model has run."""
    w = np.arange(70 << 18, dtype=np.float32).reshape(70, 1 << 18)  # 70 MiB
    nodes = [helper.make_node("Tile", ["w", "reps"], ["big"], name="tile"),
             helper.make_node("Add", ["big", "x"], ["y"])]
    g = helper.make_graph(nodes, "g", [h.vi("x", TensorProto.FLOAT, [1])],
                          [h.vi("y", TensorProto.FLOAT, [140, 1 << 18])],
                          [numpy_helper.from_array(w, "w"), h.i64("reps", [2, 1])])
    with h.tempdir() as d:
        src, out = os.path.join(d, "tile.onnx"), os.path.join(d, "o.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), src)
        text = optimize_in_terminal(src, out, "fold", "--fold-limit", "unlimited",
                                    "--verify")
        evaluating = progress_lines(text, "evaluating big")
        assert len(evaluating) >= 5 and evaluating == sorted(evaluating), evaluating
        assert evaluating[0] == 0 and evaluating[-1] == 100, evaluating
        assert "evaluating big: 140.0 MiB/140.0 MiB (100%)" in text, text[-2000:]
        loading = progress_lines(text, "loading")
        assert loading and loading[-1] == 100, loading
        assert progress_lines(text, "verify: input model")[-1] == 100, text[-2000:]
        assert progress_lines(text, "verify: output model")[-1] == 100, text[-2000:]
        assert "verify: match" in text and "Tile 1 -> 0" in text, text[-2000:]
        folded = onnx.load(out)
        got = numpy_helper.to_array(folded.graph.initializer[0])
        assert np.array_equal(got, np.tile(w, (2, 1))), "the folded Tile has other values"


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

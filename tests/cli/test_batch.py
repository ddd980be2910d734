#!/usr/bin/python3
"""`tileopt optimize` over many models: folders searched for *.onnx and files
given one by one, each written under -o OUTDIR at its relative path (models
that share a file name never overwrite each other), byte for byte what a run of
its own writes. A model that fails is a FAIL row and exit 1, and the others are
still written; --report DIR holds one valid report per model and batch.json;
--shard I/N splits the sorted list into N slices that cover it once; two inputs
that would land on one output, -j or --shard for a single model, a file
where the output folder goes and folders nested too deep are refused before
any work."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402
from validate_report import report_errors  # noqa: E402

NODE = "/usr/share/libonnx-testdata/data/node"


def _zoo(d):
    """A folder of models: three named model.onnx in their own folders, two of
    this project's samples one level down, and a file that is no model."""
    zoo = os.path.join(d, "zoo")
    for t in ("test_tile", "test_tile_precomputed", "test_expand_dim_changed"):
        os.makedirs(os.path.join(zoo, "node", t))
        shutil.copy(os.path.join(NODE, t, "model.onnx"), os.path.join(zoo, "node", t))
    os.makedirs(os.path.join(zoo, "samples"))
    for m in ("bias_tile.onnx", "legacy_tile1.onnx"):
        shutil.copy(os.path.join(h.MODELS, m), os.path.join(zoo, "samples", m))
    with open(os.path.join(zoo, "notes.txt"), "w") as f:
        f.write("not a model\n")
    return zoo


def _models(root):
    return sorted(os.path.relpath(os.path.join(dp, f), root)
                  for dp, _, fs in os.walk(root) for f in fs if f.endswith(".onnx"))


def batch_should_mirror_the_tree_and_match_single_runs():
    with h.tempdir() as d:
        zoo = _zoo(d)
        out, rep = os.path.join(d, "out"), os.path.join(d, "rep")
        cp = h.tileopt("optimize", zoo, "-o", out, "--report", rep, "-j", "2")
        assert cp.returncode == 0, cp.stderr
        want = _models(zoo)
        assert _models(out) == want, (_models(out), want)
        assert "batch: 5 models, 5 done, 0 failed" in cp.stdout, cp.stdout
        for rel in want:
            single = os.path.join(d, "single.onnx")
            one = h.tileopt("optimize", os.path.join(zoo, rel), "-o", single, "--quiet")
            assert one.returncode == 0, one.stderr
            with open(single, "rb") as a, open(os.path.join(out, rel), "rb") as b:
                assert a.read() == b.read(), rel
            with open(os.path.join(rep, rel + ".json")) as f:
                r = json.load(f)
            assert report_errors(r) == [], (rel, report_errors(r))
        with open(os.path.join(rep, "batch.json")) as f:
            s = json.load(f)
        assert s["done"] == 5 and s["failed"] == 0, s
        rows = {os.path.relpath(m["input"], zoo): m for m in s["models"]}
        assert sorted(rows) == want
        tile = rows[os.path.join("samples", "bias_tile.onnx")]
        assert tile["tiles_before"] == 1 and tile["tiles_after"] == 0, tile
        # a second run does not take the outputs for inputs, even inside the zoo
        inner = os.path.join(zoo, "out")
        cp = h.tileopt("optimize", zoo, "-o", inner, "-q")
        cp = h.tileopt("optimize", zoo, "-o", inner, "-q")
        assert cp.returncode == 0, cp.stderr
        assert _models(inner) == want


def batch_should_go_on_past_a_failed_model():
    with h.tempdir() as d:
        zoo = _zoo(d)
        # its name holds an escape byte, which the row must not pass to a terminal
        with open(os.path.join(zoo, "samples", "bro\x1bken.onnx"), "wb") as f:
            f.write(b"\x08\x07garbage")
        out, rep = os.path.join(d, "out"), os.path.join(d, "rep")
        cp = h.tileopt("optimize", zoo, "-o", out, "--report", rep)
        assert cp.returncode == 1, cp.stderr
        fail = [ln for ln in cp.stdout.splitlines() if ln.startswith("FAIL")]
        assert len(fail) == 1 and "bro\\x1bken.onnx" in fail[0] and "protobuf" in fail[0] \
            and "\x1b" not in cp.stdout, cp.stdout
        assert "6 models, 5 done, 1 failed" in cp.stdout, cp.stdout
        assert len(_models(out)) == 5
        with open(os.path.join(rep, "batch.json")) as f:
            s = json.load(f)
        bad = [m for m in s["models"] if m["status"] == "failed"]
        assert len(bad) == 1 and bad[0]["error"], bad
        # --quiet drops the table, not the error: stderr names the failed model
        cp = h.tileopt("optimize", zoo, "-o", os.path.join(d, "quiet"), "--quiet")
        assert cp.returncode == 1 and not cp.stdout, cp
        errors = cp.stderr.splitlines()
        assert len(errors) == 1 and "bro\\x1bken.onnx" in errors[0] and \
            "protobuf" in errors[0] and "\x1b" not in cp.stderr, cp.stderr


def shards_should_cover_the_list_once():
    with h.tempdir() as d:
        zoo = _zoo(d)
        seen = []
        for i in range(3):
            rep = os.path.join(d, f"rep{i}")
            cp = h.tileopt("optimize", zoo, "-o", os.path.join(d, "out"), "--report", rep,
                           "--shard", f"{i}/3", "-q")
            assert cp.returncode == 0, cp.stderr
            with open(os.path.join(rep, "batch.json")) as f:
                s = json.load(f)
            assert s["shard"] == i and s["shards"] == 3, s
            seen += [m["input"] for m in s["models"]]
        assert sorted(seen) == sorted(os.path.join(zoo, m) for m in _models(zoo)), seen
        assert len(seen) == len(set(seen)) == 5
        assert _models(os.path.join(d, "out")) == _models(zoo)


def batch_should_refuse_what_would_overwrite_or_make_no_sense():
    with h.tempdir() as d:
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        for x in (a, b):
            os.makedirs(x)
            shutil.copy(os.path.join(h.MODELS, "bias_tile.onnx"), x)
        out = os.path.join(d, "out")
        cp = h.tileopt("optimize", a, b, "-o", out)
        assert cp.returncode == 2 and "would both be written" in cp.stderr, cp.stderr
        assert not os.path.exists(out)
        one = os.path.join(a, "bias_tile.onnx")
        for extra in (["-j", "2"], ["--shard", "0/2"]):
            cp = h.tileopt("optimize", one, "-o", os.path.join(d, "o.onnx"), *extra)
            assert cp.returncode == 2 and "several models" in cp.stderr, cp.stderr
        for bad in ("2/2", "x", "1/0", "-1/3"):
            cp = h.tileopt("optimize", a, b, "-o", out, "--shard", bad)
            assert cp.returncode == 2 and "--shard" in cp.stderr, (bad, cp.stderr)
        cp = h.tileopt("optimize", a, "-o", out, "--report", "-")
        assert cp.returncode == 2, cp.stderr
        # a file where the output folder would go, and folders nested past the
        # walk's limit, are refused before any model runs
        taken = os.path.join(d, "taken")
        open(taken, "w").close()
        cp = h.tileopt("optimize", a, "-o", taken)
        assert cp.returncode == 1 and "is not a folder" in cp.stderr, cp.stderr
        deep = os.path.join(d, "deep")
        os.makedirs(os.path.join(deep, *(["n"] * 66)))
        shutil.copy(os.path.join(h.MODELS, "bias_tile.onnx"), os.path.join(deep, *(["n"] * 66)))
        cp = h.tileopt("optimize", deep, "-o", os.path.join(d, "deep_out"))
        assert cp.returncode == 1 and "nest deeper than 64" in cp.stderr, cp.stderr
        assert not os.path.exists(os.path.join(d, "deep_out"))
        # files named one by one keep their paths as written, so both fit
        cp = h.tileopt("optimize", one, os.path.join(b, "bias_tile.onnx"), "-o", out, "-q")
        assert cp.returncode == 0, cp.stderr
        assert len(_models(out)) == 2, _models(out)


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

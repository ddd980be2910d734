#!/usr/bin/python3
"""The fold pass on ONNX's own backend test models (a peer test suite).

Every model under /usr/share/libonnx-testdata/data/*/*/ is folded with
`--fold-scope all`. The run must succeed (or refuse the model with exit 1 and an
error message, never crash); where the pass changed something, the folded model
must pass onnx.checker and reproduce the expected outputs of test_data_set_0 in
ONNX Runtime (when ORT runs the original model) and in tileopt's evaluator (when
the evaluator runs the original). Prints how many models folded and were checked.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402
import ort as ort_mod  # noqa: E402

DATA = os.environ.get("ONNX_TESTDATA", "/usr/share/libonnx-testdata/data")
MIN_CHECKED = int(os.environ.get("FOLD_MIN_CHECKED", "30"))


def ort_ok(model, test_dir):
    cp = subprocess.run(["node", ort_mod.ORT_RUN_JS, model, "--test-dir", test_dir],
                        capture_output=True, text=True, timeout=300)
    return cp.returncode == 0, cp.stderr.strip()


def evaluator_ok(model, test_dir):
    cp = h.tileopt("run", model, "--test-dir", test_dir, timeout=300)
    return cp.returncode == 0, cp.stderr.strip()


def fold_should_keep_backend_test_outputs():
    models = sorted(glob.glob(os.path.join(DATA, "*", "*", "model.onnx")))
    assert models, f"no test models under {DATA}"
    have_ort = ort_mod.ort_available()[0]
    stats = dict(models=0, folded=0, ort=0, evaluator=0, refused=0)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(models):
            name = os.path.relpath(os.path.dirname(path), DATA)
            test_dir = os.path.join(os.path.dirname(path), "test_data_set_0")
            if not os.path.isdir(test_dir):
                continue
            out = os.path.join(tmp, f"{i}.onnx")
            rep = os.path.join(tmp, f"{i}.json")
            # a 1 MiB growth allowed, as before the default never grew the file:
            # more folds to check
            cp = h.tileopt("optimize", path, "-o", out, "--passes", "fold", "--fold-scope",
                           "all", "--fold-limit", "1M", "--report", rep, "--quiet",
                           timeout=300)
            stats["models"] += 1
            if cp.returncode != 0:
                if cp.returncode != 1 or "error" not in cp.stderr:
                    problems.append(f"{name}: exit {cp.returncode}: {cp.stderr.strip()}")
                stats["refused"] += 1
                continue
            with open(rep) as f:
                report = json.load(f)
            if not any(p["changed"] for p in report["passes"]):
                continue
            stats["folded"] += 1
            try:
                h.check(out)
            except AssertionError as e:
                problems.append(f"{name}: {e}")
                continue
            if have_ort and ort_ok(path, test_dir)[0]:
                ok, why = ort_ok(out, test_dir)
                stats["ort"] += 1
                if not ok:
                    problems.append(f"{name}: ORT on the folded model: {why}")
            if evaluator_ok(path, test_dir)[0]:
                ok, why = evaluator_ok(out, test_dir)
                stats["evaluator"] += 1
                if not ok:
                    problems.append(f"{name}: evaluator on the folded model: {why}")
    print("models: {models}, refused: {refused}, changed by fold: {folded}, "
          "checked in ORT: {ort}, in the evaluator: {evaluator}".format(**stats))
    for p in problems[:40]:
        print("PROBLEM", p)
    assert not problems, f"{len(problems)} problems"
    assert stats["ort"] + stats["evaluator"] >= MIN_CHECKED, stats


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""Opset conversion both ways: tileopt's upgrade pass beside
onnx.version_converter (python3-onnx 1.12), on the same models.

Upward: ONNX's legacy backend test models (below each target: pytorch-converted,
pytorch-operator, simple, node tests) and the real-model suite's models below
each target, taken to 13, 17 and 26. A model counts when the output passes
onnx.checker's full check (targets up to 17, the newest this onnx knows) and
ONNX Runtime reproduces the test data (backend models) or the original's
outputs (real models).

Downward: the opset-13 and opset-17 PyTorch exports of the real-model suite,
taken to 11 and to 9. Counted: converted and matching the original in ONNX
Runtime; refused (with the reasons, most common first); converted but wrong.

    TILEOPT=build/release/tools/tileopt /usr/bin/python3 bench/upgrade_vs_onnx.py [-v]
        [--only up|down]

The real models come from .cache/real (tests/real/fetch_models.py fills it).
"""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.setdefault("SRCDIR", os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "passes"))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "harness"))
import harness as h  # noqa: E402
import onnx  # noqa: E402
import test_upgrade_legacy as legacy  # noqa: E402
from onnx import numpy_helper, version_converter  # noqa: E402

CACHE = os.environ.get("TILEOPT_REAL_CACHE", os.path.join(SRCDIR, ".cache", "real"))
CHECKER_MAX = 17


def real_models():
    """(name, path, opset, feeds, kind) of every real model with its seeded inputs
    (kind: "torch" for the PyTorch exports)."""
    out = []
    for folder in sorted(glob.glob(os.path.join(CACHE, "*", ""))):
        path = os.path.join(folder, "model.onnx")
        if not os.path.isfile(path):
            continue
        with open(os.path.join(folder, "meta.json")) as f:
            kind = json.load(f).get("kind", "")
        m = onnx.load(path, load_external_data=False)
        opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")][0]
        files = sorted(glob.glob(os.path.join(folder, "test_data_set_0", "input_*.pb")),
                       key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
        feeds = [numpy_helper.to_array(onnx.load_tensor(f)) for f in files]
        out.append((os.path.basename(folder.rstrip("/")), path, opset, feeds, kind))
    return out


def judge(path, target, want, feeds):
    """None when path passes the checker (up to 17) and gives want in ORT."""
    if target <= CHECKER_MAX:
        try:
            h.check(path)
        except AssertionError as e:
            return "checker: " + str(e)[-200:]
    try:
        h.assert_close(h.run_ort(path, feeds), want)
    except Exception as e:  # ORT refusing the model, or other outputs
        return "ORT: " + " ".join(str(e).split())[:200]
    return None


def convert(tool, src, dst, target):
    """Run one converter; None when it wrote dst, else why not."""
    if tool == "tileopt":
        cp = h.tileopt("optimize", src, "-o", dst, "--passes", "upgrade", "--target-opset",
                       target, "--quiet")
        return None if cp.returncode == 0 else " ".join(cp.stderr.split())
    try:
        m = onnx.load(src)
        onnx.save(version_converter.convert_version(m, target), dst)
        return None
    except Exception as e:  # the converter raises plain RuntimeErrors
        return " ".join(str(e).split())


def real_counts(models, target, down, tmp, verbose):
    """{tool: Counter(outcome)} and tileopt's refusal reasons, over models."""
    counts = {t: collections.Counter() for t in ("tileopt", "onnx")}
    reasons = collections.Counter()
    for name, path, opset, feeds, _kind in models:
        want = h.run_ort(path, feeds)
        for tool in counts:
            dst = os.path.join(tmp, f"{name}.{tool}.{target}.onnx")
            why = convert(tool, path, dst, target)
            if why:
                counts[tool]["refused"] += 1
                if tool == "tileopt":
                    for item in why.split("no adapter: ")[-1].split("(to go on")[0].split("), "):
                        if ": " in item:
                            reasons[item.split(": ", 1)[1].rstrip(") ,.")[:80]] += 1
                continue
            bad = judge(dst, target, want, feeds)
            counts[tool]["wrong" if bad else "match"] += 1
            if bad and verbose:
                print(f"  {tool} {name} -> {target}: {bad}")
    return counts, reasons


def main(argv):
    verbose = "-v" in argv
    only = argv[argv.index("--only") + 1] if "--only" in argv[:-1] else ""
    ok, why = h.ort_available()
    if not ok:
        print(f"ONNX Runtime unavailable: {why}")
        return 1
    models = real_models()
    with tempfile.TemporaryDirectory(prefix="upgrade_vs_onnx_") as tmp:
        print("== up: ONNX's legacy backend test models")
        for target in (13, 17, 26) if only in ("", "up") else ():
            legacy.main(["--compare", "--target", str(target)] + (["-v"] if verbose else []))
        print("== up: real models below each target (checker up to 17, ORT vs the original)")
        for target in (13, 17, 26) if only in ("", "up") else ():
            below = [m for m in models if m[2] < target]
            counts, _ = real_counts(below, target, False, tmp, verbose)
            print(f"to {target}: {len(below)} models; tileopt {dict(counts['tileopt'])}; "
                  f"onnx.version_converter {dict(counts['onnx'])}")
        print("== down: the opset-13 and opset-17 PyTorch exports")
        exports = [m for m in models if m[2] in (13, 17) and m[4] == "torch"]
        for target in (11, 9) if only in ("", "down") else ():
            counts, reasons = real_counts(exports, target, True, tmp, verbose)
            print(f"to {target}: {len(exports)} models; tileopt {dict(counts['tileopt'])}; "
                  f"onnx.version_converter {dict(counts['onnx'])}")
            for reason, n in reasons.most_common(8):
                print(f"    {n:3d} nodes: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/python3
"""Acceptance of the upgrade pass on ONNX's own legacy backend test models.

Every model in /usr/share/libonnx-testdata/data/{pytorch-converted,pytorch-operator,
simple,node} whose ai.onnx opset is below 13 is migrated with
`tileopt optimize --passes upgrade --target-opset 13`; it passes when the result
passes onnx.checker (full check) and ONNX Runtime reproduces every
test_data_set_*'s expected outputs (rtol 1e-3, atol 1e-7).

upgrade_legacy_pass.txt (next to this script) lists the models expected to pass;
the test fails if any of them fails, and prints the count. Options:
    --write-list   rewrite the list from this run's passing models
    --compare      also run onnx.version_converter.convert_version(m, 13) on the
                   same set and print both counts (bench/upgrade_vs_onnx.py)
    --passes P     run these passes instead of just upgrade (e.g. upgrade,fold,fuse)
    --target N     migrate to opset N instead of 13 (the list applies to 13 only)
    -v             print every model's verdict
"""
import concurrent.futures
import glob
import os
import subprocess
import sys
import tempfile

import onnx
import onnx.version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("SRCDIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "harness"))
import harness as h  # noqa: E402

DATA = "/usr/share/libonnx-testdata/data"
SUITES = ("pytorch-converted", "pytorch-operator", "simple", "node")
LIST = os.path.join(HERE, "upgrade_legacy_pass.txt")
ORT_RUN = os.path.join(SRCDIR, "tests", "harness", "ort_run.js")
TARGET = 13
PASSES = "upgrade"


# the newest opset python3-onnx 1.12's checker knows; past it ORT alone judges
CHECKER_MAX = 17


def legacy_models():
    """(name, folder) of every model whose ai.onnx opset is below TARGET."""
    out = []
    for suite in SUITES:
        for d in sorted(glob.glob(os.path.join(DATA, suite, "*"))):
            p = os.path.join(d, "model.onnx")
            if not os.path.isfile(p):
                continue
            m = onnx.load(p, load_external_data=False)
            v = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
            if v and v[0] < TARGET:
                out.append((f"{suite}/{os.path.basename(d)}", d))
    return out


def verify(model_path, folder):
    """None when model_path passes the checker (targets it knows) and reproduces
    every data set, else the reason."""
    try:
        if TARGET <= CHECKER_MAX:
            h.check(model_path)
    except AssertionError as e:
        return "checker: " + str(e).split(": onnx.checker: ", 1)[-1][:300]
    sets = sorted(glob.glob(os.path.join(folder, "test_data_set_*")))
    if not sets:
        return "no test_data_set"
    for ds in sets:
        cp = subprocess.run(["node", ORT_RUN, model_path, "--test-dir", ds],
                            capture_output=True, text=True, timeout=300)
        if cp.returncode != 0:
            return f"ORT {os.path.basename(ds)}: " + " ".join(cp.stderr.split())[:300]
    return None


def ours(name, folder, tmp):
    out = os.path.join(tmp, name.replace("/", "__") + ".onnx")
    cp = h.tileopt("optimize", os.path.join(folder, "model.onnx"), "-o", out,
                   "--passes", PASSES, "--target-opset", TARGET, "--quiet")
    if cp.returncode != 0:
        return "tileopt: " + " ".join(cp.stderr.split())[:300]
    return verify(out, folder)


def onnx_converter(name, folder, tmp):
    out = os.path.join(tmp, name.replace("/", "__") + ".onnxvc.onnx")
    try:
        m = onnx.load(os.path.join(folder, "model.onnx"))
        onnx.save(onnx.version_converter.convert_version(m, TARGET), out)
    except Exception as e:  # the converter raises plain RuntimeErrors
        return "convert_version: " + " ".join(str(e).split())[:300]
    return verify(out, folder)


def run_all(fn, models, tmp):
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        futs = {name: ex.submit(fn, name, folder, tmp) for name, folder in models}
        return {name: f.result() for name, f in futs.items()}


def read_list():
    with open(LIST) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def main(argv):
    global PASSES, TARGET
    if "--passes" in argv:
        PASSES = argv[argv.index("--passes") + 1]
    if "--target" in argv:
        TARGET = int(argv[argv.index("--target") + 1])
    ok, why = h.ort_available()
    if not ok:
        print(f"ONNX Runtime unavailable: {why}")
        return 1
    verbose = "-v" in argv
    models = legacy_models()
    with tempfile.TemporaryDirectory(prefix="upgrade_legacy_") as tmp:
        res = run_all(ours, models, tmp)
        conv = run_all(onnx_converter, models, tmp) if "--compare" in argv else None
    passed = [n for n, _ in models if res[n] is None]
    if verbose:
        for n, _ in models:
            print(f"{'ok  ' if res[n] is None else 'FAIL'} {n}" +
                  (f": {res[n]}" if res[n] else ""))
    print(f"{PASSES} to opset {TARGET}: {len(passed)} of {len(models)} legacy models pass "
          f"the checker and reproduce their test data in ONNX Runtime")
    if conv is not None:
        cpass = [n for n, _ in models if conv[n] is None]
        print(f"onnx.version_converter.convert_version(m, {TARGET}): {len(cpass)} of "
              f"{len(models)} pass the same checks")
        if verbose:
            for n, _ in models:
                if conv[n] is not None:
                    print(f"  converter FAIL {n}: {conv[n]}")
    if "--write-list" in argv:
        with open(LIST, "w") as f:
            f.write("# Legacy backend test models (opset < 13) that the upgrade pass migrates\n"
                    "# to opset 13 with checker and ONNX Runtime agreement. Generated by\n"
                    "# tests/passes/test_upgrade_legacy.py --write-list; the test fails when\n"
                    "# one of these fails.\n")
            for n in passed:
                f.write(n + "\n")
        print(f"wrote {len(passed)} names to {LIST}")
        return 0
    if TARGET != 13:
        return 0
    expected = read_list()
    known = {n for n, _ in models}
    missing = [n for n in expected if n not in known]
    broken = [n for n in expected if n in known and res[n] is not None]
    for n in missing:
        print(f"FAIL listed model not found: {n}")
    for n in broken:
        print(f"FAIL {n}: {res[n]}")
    extra = [n for n in passed if n not in set(expected)]
    if extra:
        print(f"{len(extra)} passing models not in the list (add them): {', '.join(extra)}")
    failing = [n for n, _ in models if res[n] is not None and n not in set(expected)]
    if failing and not verbose:
        print(f"{len(failing)} models not expected to pass:")
        for n in failing:
            print(f"  {n}: {res[n]}")
    return 1 if (missing or broken) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

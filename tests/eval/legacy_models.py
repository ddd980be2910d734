#!/usr/bin/python3
"""Acceptance: every model of ONNX's pytorch-converted and pytorch-operator
backend test data (PyTorch 0.4-era exports at opsets 6-9: CNN layers, RNNs,
legacy PRelu and Sum) runs in the evaluator and reproduces each of its
test_data_set_* (`tileopt run --test-dir`, rtol 1e-3, atol 1e-7).

env: TILEOPT (the CLI)
"""
import concurrent.futures
import glob
import os
import subprocess
import sys

DATA = "/usr/share/libonnx-testdata/data"


def run_one(tileopt, model_dir):
    fails = []
    for ds in sorted(glob.glob(os.path.join(model_dir, "test_data_set_*"))):
        p = subprocess.run([tileopt, "run", os.path.join(model_dir, "model.onnx"),
                            "--test-dir", ds], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            fails.append(f"{os.path.relpath(ds, DATA)}: {p.stderr.strip()[:400]}")
    return fails


def main():
    tileopt = os.environ["TILEOPT"]
    models = sorted(d for s in ("pytorch-converted", "pytorch-operator")
                    for d in glob.glob(os.path.join(DATA, s, "*"))
                    if os.path.isfile(os.path.join(d, "model.onnx")))
    if not models:
        print("FAIL: no models under", DATA, "(apt-get install libonnx-testdata)")
        return 1
    fails = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for f in ex.map(lambda d: run_one(tileopt, d), models):
            fails.extend(f)
    for f in fails:
        print("FAIL:", f)
    print(f"{len(models)} legacy models, {len(fails)} data sets failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

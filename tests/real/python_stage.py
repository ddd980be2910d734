#!/usr/bin/python3
"""One real model through the Python package, for test_real.py's python stage.
It runs in an interpreter of its own, so that a sanitizer build's runtimes are
preloaded for it alone (never for ONNX Runtime's node).

    python_stage.py MODEL CLI_OUTPUT OUTDIR [TEST_DATA_SET]

Writes OUTDIR/py.onnx, the ModelProto tileopt.optimize returns for
onnx.load(MODEL), and checks that tileopt.optimize of MODEL's bytes returns the
bytes `tileopt optimize` wrote to CLI_OUTPUT. With TEST_DATA_SET, runs MODEL
through tileopt.run on its input_N.pb files and writes OUTDIR/run.npz (the
outputs in order). Exits 1 with the reason on a difference, 2 when the
evaluator lacks an op of the model (the run is then not a failure of the package).
"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import tileopt


def main(model_path, cli_output, outdir, data_set=None):
    model = onnx.load(model_path)
    optimized, report = tileopt.optimize(model)
    onnx.save(optimized, os.path.join(outdir, "py.onnx"))
    with open(model_path, "rb") as f:
        as_bytes, _ = tileopt.optimize(f.read(), base_dir=os.path.dirname(model_path))
    with open(cli_output, "rb") as f:
        if f.read() != as_bytes:
            print("tileopt.optimize(bytes) differs from what `tileopt optimize` wrote",
                  file=sys.stderr)
            return 1
    if optimized.SerializeToString() != as_bytes:
        print("tileopt.optimize(ModelProto) differs from tileopt.optimize(bytes)",
              file=sys.stderr)
        return 1
    if data_set is None:
        return 0
    names = [i["name"] for i in tileopt.inspect(model)["inputs"]]
    files = sorted(glob.glob(os.path.join(data_set, "input_*.pb")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    tensors = [onnx.load_tensor(p) for p in files]
    feeds = {t.name or name: numpy_helper.to_array(t) for name, t in zip(names, tensors)}
    try:
        outputs = tileopt.run(model, feeds)
    except tileopt.UnsupportedError as e:
        print(f"the evaluator lacks an op: {e}", file=sys.stderr)
        return 2
    np.savez(os.path.join(outdir, "run.npz"), *outputs.values())
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

"""Run a model in ONNX Runtime (onnxruntime-node) from Python.

    from ort import run_ort
    outs = run_ort("model.onnx", [x, y])          # positional: non-initializer inputs
    outs = run_ort("model.onnx", {"x": x, "y": y}) # by name
    outs = run_ort("model.onnx", [x], graph_opt="disabled")  # no graph rewrites
    outs = run_ort("model.onnx", [x], disable_optimizers=["NchwcTransformer"])

Inputs are written as serialized TensorProto files (onnx.numpy_helper), run by
tests/harness/ort_run.js, and the output_N.pb files are read back as numpy arrays,
in the order of the model's outputs. Any failure (ORT missing, model rejected,
run error) raises OrtError with ORT's message.
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_RUN_JS = os.path.join(HERE, "ort_run.js")
REPO = os.path.dirname(os.path.dirname(HERE))


class OrtError(RuntimeError):
    pass


def ort_node_path():
    """The onnxruntime-node package folder that ort_run.js will load, or None."""
    env = os.environ.get("ORT_NODE_PATH")
    cands = [env, os.path.join(env, "onnxruntime-node")] if env else []
    cands.append(os.path.join(REPO, ".cache", "node_modules", "onnxruntime-node"))
    for c in cands:
        if c and os.path.isfile(os.path.join(c, "package.json")):
            return c
    return None


def ort_available():
    """(True, "") when node and onnxruntime-node are there, else (False, why)."""
    if shutil.which("node") is None:
        return False, "node is not on PATH"
    if ort_node_path() is None:
        return False, ("onnxruntime-node not found (set ORT_NODE_PATH or "
                       "npm install --prefix .cache --ignore-scripts onnxruntime-node)")
    return True, ""


def write_tensor(arr, name, path):
    arr = np.asarray(arr)
    if arr.dtype.kind == "U":
        arr = arr.astype(object)
    t = numpy_helper.from_array(arr, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def read_outputs(outdir):
    """output_N.pb files of outdir, numerically ordered, as numpy arrays."""
    files = glob.glob(os.path.join(outdir, "output_*.pb"))
    keyed = []
    for f in files:
        m = re.fullmatch(r"output_(\d+)\.pb", os.path.basename(f))
        if m:
            keyed.append((int(m.group(1)), f))
    return [numpy_helper.to_array(onnx.load_tensor(f)) for _, f in sorted(keyed)]


def write_inputs(inputs, folder):
    """inputs: list (positional) or dict name->array. Returns the .pb paths."""
    items = (list(inputs.items()) if isinstance(inputs, dict)
             else [("", a) for a in inputs])
    paths = []
    for i, (name, arr) in enumerate(items):
        p = os.path.join(folder, f"input_{i}.pb")
        write_tensor(arr, name, p)
        paths.append(p)
    return paths


def _inline_external_data(model_path, tmp):
    """ORT (like onnx 1.12 shape inference) cannot read shape inputs such as Tile
    repeats from external data; hand it a copy with every tensor inline when the
    model has external data and fits in 2 GB. Otherwise the path unchanged."""
    m = onnx.load(model_path, load_external_data=False)
    if not any(t.data_location == onnx.TensorProto.EXTERNAL
               for t in m.graph.initializer):
        return model_path
    m = onnx.load(model_path)
    if m.ByteSize() >= 2 ** 31:
        return model_path
    inline = os.path.join(tmp, "inline_model.onnx")
    onnx.save_model(m, inline)
    return inline


def run_ort(model_path, inputs, timeout=600, graph_opt=None, disable_optimizers=()):
    """Outputs of model_path run in ONNX Runtime on inputs (list or dict).

    graph_opt: the session's optimization level (disabled, basic, extended, all;
    None is ORT's default, all); disable_optimizers: names of ORT transformers to
    leave out."""
    ok, why = ort_available()
    if not ok:
        raise OrtError(why)
    with tempfile.TemporaryDirectory(prefix="ort_") as tmp:
        model_path = _inline_external_data(str(model_path), tmp)
        pbs = write_inputs(inputs, tmp)
        outdir = os.path.join(tmp, "out")
        opts = (["--graph-opt", graph_opt] if graph_opt else []) + \
            (["--disable-optimizers", ",".join(disable_optimizers)] if disable_optimizers else [])
        cp = subprocess.run(["node", ORT_RUN_JS, str(model_path), *pbs, "-o", outdir, *opts],
                            capture_output=True, text=True, timeout=timeout)
        if cp.returncode != 0:
            raise OrtError(f"ort_run.js {model_path} failed (exit {cp.returncode}): "
                           f"{cp.stderr.strip()}")
        return read_outputs(outdir)

#!/usr/bin/python3
"""Load/save throughput: cp vs onnx.load+onnx.save (python3-onnx, C++ protobuf
underneath) vs `tileopt optimize --passes none`, and `tileopt inspect`, on
  big   ~480 MB: four 120 MB initializers and ~20k small nodes
  many  ~200k nodes with tiny initializers
measured in one run on the same files. Usage: bench/bench_io.py [TILEOPT] [WORKDIR]"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chain_model(n_nodes, big_inits):
    """Relu/Add chain of n_nodes over a [4] input, plus big_inits 120 MB initializers
    summed into the output so none is dead."""
    nodes, inits = [], []
    prev = "x"
    for i in range(n_nodes):
        if i % 2:
            inits.append(numpy_helper.from_array(np.full([4], i, np.float32), f"c{i}"))
            nodes.append(helper.make_node("Add", [prev, f"c{i}"], [f"v{i}"], name=f"n{i}"))
        else:
            nodes.append(helper.make_node("Relu", [prev], [f"v{i}"], name=f"n{i}"))
        prev = f"v{i}"
    outputs = [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4])]
    for k in range(big_inits):
        w = np.random.default_rng(k).standard_normal(30 * 1024 * 1024, dtype=np.float32)
        inits.append(numpy_helper.from_array(w, f"w{k}"))
        nodes.append(helper.make_node("Identity", [f"w{k}"], [f"big{k}"]))
        outputs.append(helper.make_tensor_value_info(f"big{k}", TensorProto.FLOAT, [w.size]))
    g = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def best_of(fn, reps=3):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main():
    tileopt = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release/tools/tileopt")
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="tileopt_bench_")
    os.makedirs(work, exist_ok=True)
    cases = {"big (4 x 120 MB, 20k nodes)": (20000, 4), "many (200k nodes)": (200000, 0)}
    print(f"{'model':30} {'MB':>7} {'cp':>8} {'onnx py':>8} {'tileopt':>8} {'inspect':>8}  tileopt/cp  onnx/tileopt")
    for label, (n, big) in cases.items():
        src = os.path.join(work, f"in_{n}_{big}.onnx")
        if not os.path.exists(src):
            onnx.save(chain_model(n, big), src)
        dst = os.path.join(work, "out.onnx")
        mb = os.path.getsize(src) / 1e6
        t_cp = best_of(lambda: shutil.copyfile(src, dst))
        t_py = best_of(lambda: onnx.save(onnx.load(src), dst), reps=2)
        t_to = best_of(lambda: run([tileopt, "optimize", src, "-o", dst, "--passes", "none", "--quiet"]))
        t_in = best_of(lambda: run([tileopt, "inspect", src]))
        print(f"{label:30} {mb:7.0f} {t_cp:8.3f} {t_py:8.3f} {t_to:8.3f} {t_in:8.3f}  "
              f"{t_to / t_cp:9.2f}x  {t_py / t_to:11.2f}x")


if __name__ == "__main__":
    main()

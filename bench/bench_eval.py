#!/usr/bin/python3
"""How fast is tileopt's evaluator? Times `tileopt run` (the built-in evaluator,
OpenBLAS held to one thread) against ONNX Runtime (its profiler's model_run, one
intra-op thread, bench/ort_time_real.js) on real models of the suite
(tests/real/, in .cache/real/): three CNNs, a transformer and the DETR-style
detector, on each model's saved inputs. The evaluator's figure is the median wall
time of the whole command (start, load, run, write) less the median of `tileopt
inspect` on the same model (start and load), so it is the run alone.

    /usr/bin/python3 bench/bench_eval.py [--tileopt PATH] [--rounds N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_real import CACHE, add_timing_args, find_tileopt, time_models, write_feeds

MODELS = ["tv_resnet18_op17_dyn", "tv_mobilenet_v2_op13_static", "tv_densenet121_op11_static",
          "nn_transformer_op13_static", "detr_r18_op13_dyn"]


def wall(cmd, rounds, env):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_timing_args(ap)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    tool = find_tileopt(args.tileopt)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    print(f"{'model':30} {'ORT ms':>9} {'tileopt ms':>11} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            folder = os.path.join(CACHE, name)
            model = os.path.join(folder, "model.onnx")
            if args.only and args.only not in name or not os.path.isfile(model):
                continue
            feeds = write_feeds(folder, tmp)
            ort = time_models([(name, model)], feeds, args, tmp)[name]["ort_median_ms"]
            inputs = sorted(os.path.join(folder, "test_data_set_0", f)
                            for f in os.listdir(os.path.join(folder, "test_data_set_0"))
                            if f.startswith("input_"))
            out = os.path.join(tmp, "out")
            run = wall([tool, "run", model, *inputs, "-o", out], args.rounds, env)
            load = wall([tool, "inspect", model], args.rounds, env)
            ours = max(run - load, 0.0)
            print(f"{name:30} {ort:9.2f} {ours:11.2f} {ours / ort if ort else 0:6.2f}x")
    print("ratio = evaluator time / ONNX Runtime time (lower is better)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

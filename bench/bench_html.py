#!/usr/bin/python3
"""The page of `optimize --html`: its size, the time to write it, and the time
headless Chromium takes to load it from disk (network off), for the demo model,
a real model (the DETR export of the real-model cache) and the block model of
bench_scale.py at --nodes (400k by default: 300k actions).

    /usr/bin/python3 bench/bench_html.py [--nodes 400000] [--tileopt PATH] [--runs 3]

Goal: a page under 20 MB that loads in under 3 s at 250k actions or more.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=400_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tileopt", default=os.path.join(ROOT, "build", "dev", "tools", "tileopt"))
    args = ap.parse_args()
    import cdp
    import bench_scale
    import onnx

    tmp = tempfile.mkdtemp(prefix="bench_html-")
    models = [("demo", os.path.join(ROOT, "models", "legacy_repeat.onnx")),
              ("DETR export", os.path.join(ROOT, ".cache", "real", "detr_r18_op13_dyn",
                                           "model.onnx"))]
    big = os.path.join(tmp, f"blocks_{args.nodes}.onnx")
    onnx.save(bench_scale.build(args.nodes), big)
    models.append((f"{args.nodes // 1000}k nodes", big))
    print(f"{'model':16} {'actions':>8} {'page':>10} {'write s':>8} {'load ms (best of %d)' % args.runs:>22}")
    with cdp.Browser() as b:
        for label, src in models:
            if not os.path.isfile(src):
                print(f"{label:16} (missing: {src})")
                continue
            out, rep, page = (os.path.join(tmp, label.replace(" ", "_") + s)
                              for s in (".onnx", ".json", ".html"))
            subprocess.run([args.tileopt, "optimize", src, out, "--report", rep, "-q"],
                           check=True)
            t0 = time.monotonic()
            subprocess.run([args.tileopt, "report", rep, src, out, "-o", page], check=True)
            write_s = time.monotonic() - t0
            with open(rep) as f:
                report = json.load(f)
            n = sum(len(p["actions"]) for p in report["passes"])
            loads = []
            for _ in range(args.runs):
                tab = b.open(page, offline=True)
                assert tab.requests == ["file://" + os.path.abspath(page)], tab.requests
                loads.append(tab.load_s)
            size = os.path.getsize(page)
            print(f"{label:16} {n:8d} {size / 1e6:9.2f}M {write_s:8.2f} {min(loads) * 1000:22.0f}")


if __name__ == "__main__":
    main()

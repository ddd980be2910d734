#!/usr/bin/python3
"""What migrating an IR-3 model costs in ONNX Runtime, with and without the
initializers among the graph inputs. For every IR-3 model of the real-model suite
(meta.json's ir_version below 4: the CNN exports of tests/real/fetch_models.py,
made as exporters wrote models before 2018), times three models:

  orig  the IR-3 model itself (opset 7 or 8; every weight is also a graph input,
        which IR 3 requires and ONNX Runtime takes as constant)
  keep  `optimize --target-opset 13 --keep-initializer-inputs`: IR 7 with the
        weights still listed among the graph inputs, the old behaviour. From IR 4
        on ONNX Runtime takes such a weight as an input the caller may override,
        so it neither folds nor prepacks it
  mig   `optimize --target-opset 13`: IR 7, the weights out of the graph inputs

and prints orig / keep and orig / mig per model (below 1: the migrated model is
slower), then the lowest and the median of each over the models. The time is
bench_real.py's: the median "model_run" of ONNX Runtime's profiler, 1 intra-op
thread, the three sessions in one node process run interleaved round by round
(bench/ort_time_real.js) on the model's saved inputs; --repeat N processes per
model, each creating the sessions in another order, and the median over them.
"(min)" is the ratio of the fastest runs, which other load disturbs less.

    /usr/bin/python3 bench/bench_ir3.py [--tileopt PATH] [--only SUBSTR]
        [--repeat N] [--min-rounds R] [--max-rounds R] [--budget-ms B] [--json FILE]

Not part of ./test: timings are no test on a shared VM.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import onnx

import bench_real as br

VARIANTS = [("keep", ["--keep-initializer-inputs"]), ("mig", [])]
TARGET_OPSET = "13"


def ir3_models(only):
    names = []
    for n in sorted(os.listdir(br.CACHE)):
        try:
            with open(os.path.join(br.CACHE, n, "meta.json")) as f:
                meta = json.load(f)
        except (OSError, ValueError):
            continue
        if meta.get("ir_version", 4) < 4 and (not only or only in n):
            names.append(n)
    return names


def migrate(tileopt, orig, out, flags):
    """optimize --target-opset 13 [flags]; returns (IR, initializers listed as inputs)."""
    cp = subprocess.run([tileopt, "optimize", orig, "-o", out, "--quiet",
                         "--target-opset", TARGET_OPSET, *flags],
                        capture_output=True, text=True)
    if cp.returncode != 0:
        raise RuntimeError(f"optimize {' '.join(flags)} failed (exit {cp.returncode}): "
                           f"{cp.stderr.strip()[-200:]}")
    m = onnx.load(out, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return m.ir_version, sum(v.name in inits for v in m.graph.input)


def time_set(models, feeds, args, tmp, rotate):
    """One node process timing every (label, path) of models interleaved, the
    order rotated so that no model is always the first session."""
    k = rotate % len(models)
    return br.time_models(models[k:] + models[:k], feeds, args, tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    br.add_timing_args(ap)
    args = ap.parse_args()
    tileopt = br.find_tileopt(args.tileopt)
    br.fetch_models(args.only, "bench_ir3")
    names = ir3_models(args.only)
    if not names:
        sys.exit("bench_ir3: no IR-3 model in the cache")
    print(f"ONNX Runtime, 1 intra-op thread, median model_run of its profiler (ms); "
          f"keep = --target-opset {TARGET_OPSET} --keep-initializer-inputs, "
          f"mig = --target-opset {TARGET_OPSET}; ratio = orig / migrated "
          f"(below 1: slower after migration)")
    print(f"{'model':28} {'orig':>8} {'keep':>8} {'mig':>8}  {'orig/keep':>9} "
          f"{'(min)':>6}  {'orig/mig':>8} {'(min)':>6}  {'rounds':>6}  per-process ratios")
    rows, failed = [], []
    with tempfile.TemporaryDirectory(prefix="bench_ir3_") as tmp:
        for n in names:
            d = os.path.join(br.CACHE, n)
            orig = os.path.join(d, "model.onnx")
            paths = [("orig", orig)]
            try:
                for label, flags in VARIANTS:
                    out = os.path.join(tmp, f"{n}.{label}.onnx")
                    ir, listed = migrate(tileopt, orig, out, flags)
                    if ir < 4 or (listed == 0) != (label == "mig"):
                        raise RuntimeError(f"{label}: IR {ir}, {listed} initializers "
                                           f"among the graph inputs")
                    paths.append((label, out))
                feeds = br.write_feeds(d, tmp)
                runs = [time_set(paths, feeds, args, tmp, k) for k in range(args.repeat)]
            except (RuntimeError, OSError) as e:
                failed.append(n)
                print(f"{n:28} failed: {e}", flush=True)
                continue
            row = {"model": n, "rounds": runs[0]["orig"]["rounds"]}
            for label, _ in [("orig", None)] + VARIANTS:
                row[f"{label}_ms"] = statistics.median(x[label]["ort_median_ms"]
                                                       for x in runs)
            for label, _ in VARIANTS:
                rs = [x["orig"]["ort_median_ms"] / x[label]["ort_median_ms"] for x in runs]
                row[f"ratio_{label}"] = statistics.median(rs)
                row[f"ratio_{label}_min"] = statistics.median(
                    x["orig"]["ort_min_ms"] / x[label]["ort_min_ms"] for x in runs)
                row[f"ratios_{label}"] = rs
            rows.append(row)
            spread = "; ".join(f"{label} {min(row[f'ratios_{label}']):.3f}-"
                               f"{max(row[f'ratios_{label}']):.3f}"
                               for label, _ in VARIANTS)
            print(f"{n:28} {row['orig_ms']:8.2f} {row['keep_ms']:8.2f} {row['mig_ms']:8.2f}"
                  f"  {row['ratio_keep']:9.3f} {row['ratio_keep_min']:6.3f}"
                  f"  {row['ratio_mig']:8.3f} {row['ratio_mig_min']:6.3f}"
                  f"  {row['rounds']:6}  {spread}", flush=True)
    if not rows:
        sys.exit("bench_ir3: nothing timed")
    print()
    for label, what in (("keep", "initializers kept as inputs (old)"),
                        ("mig", "initializers out of the inputs (now)")):
        rs = [r[f"ratio_{label}"] for r in rows]
        rm = [r[f"ratio_{label}_min"] for r in rows]
        low = min(rows, key=lambda r: r[f"ratio_{label}"])
        print(f"orig/{label:4} {what:38}: median {statistics.median(rs):.3f}, lowest "
              f"{low[f'ratio_{label}']:.3f} ({low['model']}); fastest runs: median "
              f"{statistics.median(rm):.3f}, lowest {min(rm):.3f}")
    print(f"{len(rows)} models timed, {len(failed)} failed")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "failed": failed}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Is tileopt's output ever slower than its input? Times every model of the
real-model suite (tests/real/, fetched into .cache/real/ by
tests/real/fetch_models.py) and `tileopt optimize`'s output of it (default passes)
in ONNX Runtime, and prints orig_time / opt_time per model (> 1: the output is
faster), then the lowest and the median ratio. The target: no ratio below 0.95.

The time is the median duration of the "model_run" event of ONNX Runtime's own
profiler, with 1 intra-op thread, both models of a pair in one node process,
interleaved round by round (bench/ort_time_real.js), on the model's saved seeded
inputs. Sub-millisecond models get more rounds (up to --max-rounds). An output
that is the input byte for byte runs the same by construction: it counts as 1.000
and is not timed, unless --time-identical asks (its ratio then measures only the
noise of this machine).

    /usr/bin/python3 bench/bench_real.py [--tileopt PATH] [--only SUBSTR]
        [--repeat N] [--min-rounds R] [--max-rounds R] [--budget-ms B] [--json FILE]
        [--time-identical]

--repeat N times each pair N times (separate processes, every other one with the
output's session created first) and reports the median ratio with the range.
"(min)" is the ratio of the fastest runs, which other load on the machine
disturbs less. Not part of ./test: timings are no test on a shared VM.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ORT_TIME = os.path.join(HERE, "ort_time_real.js")
FETCH = os.path.join(REPO, "tests", "real", "fetch_models.py")
CACHE = os.environ.get("TILEOPT_REAL_CACHE", os.path.join(REPO, ".cache", "real"))
TARGET = 0.95

ORT_TYPES = {np.float32: "float32", np.float64: "float64", np.float16: "float16",
             np.int8: "int8", np.uint8: "uint8", np.int16: "int16", np.uint16: "uint16",
             np.int32: "int32", np.uint32: "uint32", np.int64: "int64",
             np.uint64: "uint64", np.bool_: "bool"}


def find_tileopt(given):
    if given:
        return given
    if os.environ.get("TILEOPT"):
        return os.environ["TILEOPT"]
    p = os.path.join(REPO, "build", "release", "tools", "tileopt")
    if os.path.isfile(p):
        return p
    sys.exit("bench_real: no build/release/tools/tileopt (build it, or pass --tileopt)")


def write_feeds(model_dir, tmp):
    """The saved inputs as raw files plus their description for ort_time_real.js."""
    feeds = []
    for i, f in enumerate(sorted(glob.glob(os.path.join(model_dir, "test_data_set_0",
                                                        "input_*.pb")),
                                 key=lambda p: int(p.rsplit("_", 1)[1][:-3]))):
        t = onnx.load_tensor(f)
        a = np.ascontiguousarray(numpy_helper.to_array(t))
        typ = ORT_TYPES.get(a.dtype.type)
        if typ is None:
            raise RuntimeError(f"{f}: dtype {a.dtype} not supported")
        raw = os.path.join(tmp, f"input_{i}.bin")
        (a.view(np.uint16) if a.dtype == np.float16 else a).tofile(raw)
        feeds.append({"name": t.name, "type": typ, "dims": list(a.shape), "file": raw})
    return feeds


def time_models(models, feeds, args, tmp):
    """One node process timing every (label, path) of models, interleaved round by
    round in the order given; {label: figures} from ort_time_real.js."""
    prof = tempfile.mkdtemp(dir=tmp)
    spec = {"models": [{"label": l, "path": p} for l, p in models],
            "feeds": feeds, "threads": 1, "warmup": 5, "min_rounds": args.min_rounds,
            "max_rounds": args.max_rounds, "budget_ms": args.budget_ms,
            "profile_dir": prof}
    sp = os.path.join(tmp, "spec.json")
    with open(sp, "w") as f:
        json.dump(spec, f)
    r = subprocess.run(["node", ORT_TIME, sp], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ort_time_real: {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout)


def time_pair(orig, opt, feeds, args, tmp, swap=False):
    models = [("orig", orig), ("opt", opt)]
    return time_models(models[::-1] if swap else models, feeds, args, tmp)


def add_timing_args(ap):
    """The options every ORT benchmark over the suite's cache takes."""
    ap.add_argument("--tileopt")
    ap.add_argument("--only", help="only models whose name contains this")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-rounds", type=int, default=20)
    ap.add_argument("--max-rounds", type=int, default=400)
    ap.add_argument("--budget-ms", type=float, default=1500,
                    help="aim for this much run time per model and process")
    ap.add_argument("--json", help="write the figures to this file")


def fetch_models(only, who):
    """Fill the cache (tests/real/fetch_models.py); exit naming `who` on failure."""
    r = subprocess.run([sys.executable, FETCH] + (["--only", only] if only else []),
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-2000:], file=sys.stderr)
        sys.exit(f"{who}: fetch_models.py failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_timing_args(ap)
    ap.add_argument("--time-identical", action="store_true",
                    help="time models whose output is the input byte for byte too "
                         "(their ratio measures only the machine's noise)")
    args = ap.parse_args()
    tileopt = find_tileopt(args.tileopt)
    fetch_models(args.only, "bench_real")
    names = sorted(n for n in os.listdir(CACHE)
                   if os.path.isfile(os.path.join(CACHE, n, "meta.json"))
                   and (not args.only or args.only in n))
    print(f"ONNX Runtime, 1 intra-op thread, median model_run of its profiler; "
          f"ratio = original / optimized (target >= {TARGET})")
    print(f"{'model':36} {'orig ms':>9} {'opt ms':>9} {'ratio':>6} {'(min)':>6}  "
          f"{'rounds':>6}  note")
    rows, failed = [], []
    with tempfile.TemporaryDirectory(prefix="bench_real_") as tmp:
        for n in names:
            d = os.path.join(CACHE, n)
            orig = os.path.join(d, "model.onnx")
            opt = os.path.join(tmp, f"{n}.opt.onnx")
            rep = os.path.join(tmp, f"{n}.report.json")
            cp = subprocess.run([tileopt, "optimize", orig, "-o", opt, "--quiet",
                                 "--report", rep], capture_output=True, text=True)
            if cp.returncode != 0:
                failed.append(n)
                print(f"{n:36} optimize failed (exit {cp.returncode}): "
                      f"{cp.stderr.strip()[-200:]}", flush=True)
                continue
            with open(rep) as f:
                report = json.load(f)
            changed = [p["name"] for p in report["passes"] if p.get("changed")]
            with open(orig, "rb") as f, open(opt, "rb") as g:
                identical = f.read() == g.read()
            if identical and not args.time_identical:
                # The same bytes run the same way: a timed ratio would be noise.
                rows.append({"model": n, "ratio": 1.0, "ratio_min": 1.0, "ratios": [],
                             "changed": changed, "identical": True})
                print(f"{n:36} {'':>9} {'':>9} {1.0:6.3f} {1.0:6.3f}  {'':>6}  "
                      f"output identical to the input: not timed", flush=True)
                continue
            try:
                feeds = write_feeds(d, tmp)
                # Every other repeat creates and runs the output's session first:
                # the first session of a process may land on faster memory.
                runs = [time_pair(orig, opt, feeds, args, tmp, swap=k % 2 == 1)
                        for k in range(args.repeat)]
            except (RuntimeError, OSError) as e:
                failed.append(n)
                print(f"{n:36} timing failed: {e}", flush=True)
                continue
            ratios = [x["orig"]["ort_median_ms"] / x["opt"]["ort_median_ms"] for x in runs]
            ratio = statistics.median(ratios)
            # The ratio of the fastest runs: less of the other load of the machine.
            ratio_min = statistics.median(x["orig"]["ort_min_ms"] / x["opt"]["ort_min_ms"]
                                          for x in runs)
            o = statistics.median(x["orig"]["ort_median_ms"] for x in runs)
            p = statistics.median(x["opt"]["ort_median_ms"] for x in runs)
            note = ("changed by " + ",".join(changed)) if changed else "unchanged"
            if len(ratios) > 1:
                note += f"; ratios {min(ratios):.3f}-{max(ratios):.3f}"
            if ratio < TARGET:
                note += f"; BELOW {TARGET}"
            rows.append({"model": n, "orig_ms": o, "opt_ms": p, "ratio": ratio,
                         "ratio_min": ratio_min, "ratios": ratios, "changed": changed,
                         "identical": identical, "rounds": runs[0]["orig"]["rounds"]})
            print(f"{n:36} {o:9.3f} {p:9.3f} {ratio:6.3f} {ratio_min:6.3f}  "
                  f"{runs[0]['orig']['rounds']:6}  {note}", flush=True)
    if not rows:
        sys.exit("bench_real: nothing timed")
    rs = [r["ratio"] for r in rows]
    low = min(rows, key=lambda r: r["ratio"])
    below = [r["model"] for r in rows if r["ratio"] < TARGET]
    ch = [r["ratio"] for r in rows if r["changed"]]
    rm = [r["ratio_min"] for r in rows]
    timed = [r for r in rows if not r["identical"] or args.time_identical]
    print(f"\n{len(rows)} models, {len(timed)} timed (the rest came out byte for byte "
          f"the same), {len(failed)} failed")
    print(f"ratio lowest "
          f"{low['ratio']:.3f} ({low['model']}), median {statistics.median(rs):.3f}, "
          f"highest {max(rs):.3f}; models tileopt changed: {len(ch)}"
          f"{f', their median {statistics.median(ch):.3f}' if ch else ''}; "
          f"below {TARGET}: {', '.join(below) if below else 'none'}; ratio of the "
          f"fastest runs: lowest {min(rm):.3f}, median {statistics.median(rm):.3f}")
    if timed:
        tr = [r["ratio"] for r in timed]
        tlow = min(timed, key=lambda r: r["ratio"])
        print(f"timed models alone: lowest {tlow['ratio']:.3f} ({tlow['model']}), "
              f"median {statistics.median(tr):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "failed": failed}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

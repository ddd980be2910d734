#!/usr/bin/python3
"""Tile benchmark: the write ceiling, numpy.tile and tileopt's kernel_tile on the
six cases whose targets the kernel was built to (tile_cases.h), in one run; then Add(Tile(x), y) through the Tile view against
materialize-then-add. Prints a table with the ratios.

    /usr/bin/python3 bench/bench_tile.py BENCH_TILE_EXE [--rounds N] [--runs K]

"plain" is a plain memcpy-and-double C Tile (the baseline the targets are stated against),
plain% and ours% their shares of the ceiling. "move" is the output memset
and then the input read, in each round, and of-move ours' share of it (over 100%:
ours is faster than writing the output and then reading the input). The write
ceiling's working set is the output alone; a Tile's is the output and its input,
and where the two overflow the last-level cache together (the 4 MB inputs of
cases 2 and 3 with the 16 MB of L3 the Zen 4 host leaves the VM) "move" shows
what that costs.

BENCH_TILE_EXE is bench/bench_tile built by meson (build/bench/bench_tile; use a
release build). Times are the best of N runs, each operation in its own loop,
over K passes. The ceiling is the faster of memset and a non-temporal memset of
a non-zero byte (zero lines reach memory twice as fast on the Zen 4 host) over
the buffer the evaluator allocates for the output, which every contender but
numpy writes into. numpy runs in a child process with OPENBLAS_CORETYPE unset.

Targets: ours >= 90% of the ceiling on cases 1, 2, 3 and 5, >= 75% on 4 and 6,
ahead of numpy on all; the view Add >= 2x faster than materialize-then-add and
within 1.3x of the memcpy-bandwidth bound of the bytes it reads and writes.
"""
import argparse
import json
import os
import subprocess
import sys

NUMPY_CHILD = r"""
import json, sys, time
import numpy as np
rounds = int(sys.argv[1])
cases = [
    ("f32 [1024] x [4096]", np.float32, (1024,), (4096,)),
    ("f32 [1024,1024] x [4,1]", np.float32, (1024, 1024), (4, 1)),
    ("f32 [1024,1024] x [1,4]", np.float32, (1024, 1024), (1, 4)),
    ("f32 [64,64,3] x [16,16,1]", np.float32, (64, 64, 3), (16, 16, 1)),
    ("f32 [1,512,1,1] x [32,1,56,56]", np.float32, (1, 512, 1, 1), (32, 1, 56, 56)),
    ("i8 [4096,3] x [1,1024]", np.int8, (4096, 3), (1, 1024)),
]
rng = np.random.default_rng(7)
for name, dt, dims, reps in cases:
    x = (rng.random(dims) * 100).astype(dt)
    best = 1e30
    for _ in range(rounds):
        t0 = time.perf_counter()
        y = np.tile(x, reps)
        t1 = time.perf_counter()
        best = min(best, t1 - t0)
        del y
    print(json.dumps({"case": name, "numpy_ms": best * 1e3}), flush=True)
x = rng.random((64, 256), dtype=np.float32)
y = rng.random((1024, 1024), dtype=np.float32)
best = 1e30
for _ in range(rounds):
    t0 = time.perf_counter()
    z = np.tile(x, (16, 4)) + y
    t1 = time.perf_counter()
    best = min(best, t1 - t0)
    del z
print(json.dumps({"case": "add", "numpy_ms": best * 1e3}), flush=True)
"""

TARGET = {0: 0.90, 1: 0.90, 2: 0.90, 3: 0.75, 4: 0.90, 5: 0.75}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--rounds", type=int, default=40, help="runs per figure in a pass")
    ap.add_argument("--runs", type=int, default=3, help="passes; each figure is the best")
    args = ap.parse_args()

    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    # Whole passes, alternating numpy and ours, keeping each figure's best: a
    # busy machine slows some passes, and both sides get the same chances.
    numpy_ms, rows = {}, None
    for _ in range(args.runs):
        npy = subprocess.run([sys.executable, "-c", NUMPY_CHILD, str(args.rounds)],
                             env=env, capture_output=True, text=True, check=True)
        for line in npy.stdout.splitlines():
            d = json.loads(line)
            numpy_ms[d["case"]] = min(d["numpy_ms"], numpy_ms.get(d["case"], 1e30))
        ours = subprocess.run([args.exe, str(args.rounds)], capture_output=True, text=True,
                              check=True)
        got = [json.loads(line) for line in ours.stdout.splitlines()]
        if rows is None:
            rows = got
        else:
            for r, g in zip(rows, got):
                for k, v in g.items():
                    if k.endswith("_ms"):
                        r[k] = min(r[k], v)

    ok = True
    print("%-32s %6s %7s %7s %7s %7s %7s %7s %6s %6s %7s %8s %6s" % (
        "case", "MB", "memset", "nt-set", "move", "numpy", "plain", "ours", "plain%", "ours%",
        "of-move", "vs numpy", "target"))
    i = 0
    for r in rows:
        if "ours_ms" not in r:
            continue
        ceil = min(r["memset_ms"], r["nt_memset_ms"])
        pct = ceil / r["ours_ms"]
        nmp = numpy_ms.get(r["case"], float("nan"))
        hit = pct >= TARGET[i] and r["ours_ms"] < nmp
        ok &= hit
        print("%-32s %6.1f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %5.0f%% %5.0f%% %6.0f%% %7.1fx %6s" % (
            r["case"], r["bytes"] / 1e6, r["memset_ms"], r["nt_memset_ms"], r["move_ms"], nmp,
            r["plain_ms"], r["ours_ms"], 100 * ceil / r["plain_ms"], 100 * pct,
            100 * r["move_ms"] / r["ours_ms"], nmp / r["ours_ms"],
            ("%d%%" % (100 * TARGET[i])) + (" ok" if hit else " MISS")))
        i += 1
    for r in rows:
        if "view_ms" not in r:
            continue
        speedup = r["materialize_ms"] / r["view_ms"]
        bound = r["view_ms"] / r["bound_ms"]
        hit = speedup >= 2.0 and bound <= 1.3
        ok &= hit
        print()
        print(r["case"])
        print("  view %.3f ms, materialize-then-add %.3f ms: %.2fx faster (target >= 2x)" % (
            r["view_ms"], r["materialize_ms"], speedup))
        print("  memcpy of y %.3f ms -> bound for bytes read + written %.3f ms: view at "
              "%.2fx of it (target <= 1.3x)" % (r["memcpy_ms"], r["bound_ms"], bound))
        print("  numpy np.tile(x) + y: %.3f ms (%.1fx the view)" % (
            numpy_ms.get("add", float("nan")), numpy_ms.get("add", float("nan")) / r["view_ms"]))
    print()
    print("all targets met" if ok else "some targets missed (timings vary with machine load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

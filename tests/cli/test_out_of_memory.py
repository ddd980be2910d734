#!/usr/bin/python3
"""Out of memory at every allocation: each run of a command fails one allocation
(malloc, calloc, realloc or an anonymous mmap: the failalloc.so shim, through
LD_PRELOAD), and goes through every allocation of the run in turn. Whatever
fails, the command exits 0 with a good output or 1 with an error that says
memory ran out and no output; never a crash, never a half-written file.

The shim needs glibc's own allocator underneath: sanitizer builds replace it,
so this file runs in the release build only (meson leaves it out otherwise).
"""
import ctypes
import json
import os
import subprocess
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import harness as h  # noqa: E402
from validate_report import report_errors  # noqa: E402


def openblas_first():
    """OpenBLAS, when the machine has it, preloaded ahead of the shim. tileopt
    loads it at its first matrix product, and OpenBLAS's start-up does not
    survive a failed allocation (it prints "Memory allocation failed" and
    crashes): that is OpenBLAS's to fix, not what this test looks for, so it
    starts before the shim counts, as it did when it was linked (the last
    object preloaded is initialized first)."""
    try:
        ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return ""
    return " libopenblas.so.0"


SHIM = os.environ.get("FAILALLOC", "") + openblas_first()
MODELS = os.path.join(os.environ["SRCDIR"], "models")


def count(args, d, env=None):
    """How many allocations tileopt ARGS makes (in its first process)."""
    path = os.path.join(d, "count")
    env = dict(env or os.environ, LD_PRELOAD=SHIM, FAILALLOC_COUNT=path)
    cp = subprocess.run([h.tileopt_path(), *args], env=env, capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    with open(path) as f:
        return int(f.read())


def runs(args, out, d, more=0, env=None):
    """Run tileopt ARGS once to count its allocations, then once per allocation
    (and `more` past them: a batch's workers go on counting from where it forked
    them) with that one failing. Returns the problems found (empty: none)."""
    total = count(args, d, env)
    assert total > 10, f"{total} allocations: is the shim loaded?"
    total += more
    env = dict(env or os.environ, LD_PRELOAD=SHIM)
    problems = []
    for n in range(total):
        for p in out:
            if os.path.exists(p):
                os.unlink(p)
        cp = subprocess.run([h.tileopt_path(), *args], env=dict(env, FAILALLOC_AT=str(n)),
                            capture_output=True, text=True, timeout=120)
        where = f"allocation {n} of {total} ({' '.join(args)})"
        if cp.returncode == 0:
            for p in out:
                if p.endswith(".onnx") and not os.path.exists(p):
                    problems.append(f"{where}: exit 0, yet no {p}")
                elif p.endswith(".onnx"):
                    onnx.load(p)  # raises on a broken file
                elif p.endswith(".json") and os.path.exists(p):
                    with open(p) as f:
                        errors = report_errors(json.load(f))
                    if errors:
                        problems.append(f"{where}: exit 0, report: {errors[:3]}")
        elif cp.returncode == 1:
            # a batch lists a failed model in its table, on stdout
            if "memory" not in cp.stderr + cp.stdout:
                problems.append(f"{where}: exit 1 without saying memory ran out: "
                                f"{cp.stderr.strip()[-300:]}")
            written = [p for p in out if p.endswith(".onnx") and os.path.exists(p)]
            if written:
                problems.append(f"{where}: exit 1, yet {written} written")
        else:
            problems.append(f"{where}: exit {cp.returncode}: {cp.stderr.strip()[-300:]}")
    return problems


def optimize_should_fail_cleanly_at_every_allocation():
    # the sample models go through each pass: upgrade (legacy Tile-1), fold
    # (constant and Shape-computed repeats) and fuse, with a report and --verify
    problems = []
    for name in ("legacy_tile1", "shape_repeats", "const_tile", "tile_add", "bias_tile"):
        with h.tempdir() as d:
            out, rep = os.path.join(d, "o.onnx"), os.path.join(d, "r.json")
            problems += runs(["optimize", os.path.join(MODELS, name + ".onnx"), "-o", out,
                              "--report", rep, "--verify", "--quiet"], [out, rep], d)
    # legacy PyTorch exports through the upgrade adapters and the BLAS kernels
    # (--verify runs Conv and ConvTranspose). OpenBLAS's threaded GEMM ends
    # the process itself when its job table cannot be allocated; on one thread
    # it takes the path that does not.
    one_thread = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    for case in ("pytorch-operator/test_operator_conv", "pytorch-converted/test_ConvTranspose2d"):
        with h.tempdir() as d:
            out, rep = os.path.join(d, "o.onnx"), os.path.join(d, "r.json")
            src = os.path.join("/usr/share/libonnx-testdata/data", case, "model.onnx")
            problems += runs(["optimize", src, "-o", out, "--report", rep, "--verify",
                              "--quiet"], [out, rep], d, env=one_thread)
    # the summary on stdout, the report on stderr
    with h.tempdir() as d:
        out = os.path.join(d, "o.onnx")
        problems += runs(["optimize", os.path.join(MODELS, "shape_repeats.onnx"), "-o", out,
                          "--report", "-"], [out], d)
    assert not problems, "\n".join(problems[:20])


def page_should_fail_cleanly_at_every_allocation():
    # optimize --html (the page written before OUT), then tileopt report
    with h.tempdir() as d:
        src = os.path.join(MODELS, "legacy_repeat.onnx")
        out, rep, page = (os.path.join(d, f) for f in ("o.onnx", "r.json", "p.html"))
        problems = runs(["optimize", src, "-o", out, "--report", rep, "--html", page,
                         "--quiet"], [out, rep, page], d)
        h.expect_ok(h.tileopt("optimize", src, "-o", out, "--report", rep, "--quiet"))
        problems += runs(["report", rep, src, out, "-o", page], [page], d)
    assert not problems, "\n".join(problems[:20])


def inspect_should_fail_cleanly_at_every_allocation():
    with h.tempdir() as d:
        problems = runs(["inspect", "--json", os.path.join(MODELS, "shape_repeats.onnx")], [], d)
    assert not problems, "\n".join(problems[:20])


def run_should_fail_cleanly_at_every_allocation():
    # tensors, sequences and optionals read from .pb files, outputs compared or
    # written; ONNX's own node tests
    data = "/usr/share/libonnx-testdata/data/node"
    problems = []
    for name in ("test_tile", "test_identity_sequence", "test_optional_get_element_sequence"):
        with h.tempdir() as d:
            problems += runs(["run", "--test-dir", os.path.join(data, name)], [], d)
    with h.tempdir() as d:
        case = os.path.join(data, "test_tile")
        ins = [os.path.join(case, "test_data_set_0", f"input_{k}.pb") for k in range(2)]
        problems += runs(["run", os.path.join(case, "model.onnx"), *ins, "-o",
                          os.path.join(d, "out")], [], d)
    assert not problems, "\n".join(problems[:20])


def options_should_fail_cleanly_at_every_allocation():
    # --input-shape keeps a copy of what it is given, and its failure is no
    # usage error
    with h.tempdir() as d:
        out = os.path.join(d, "o.onnx")
        problems = runs(["optimize", os.path.join(MODELS, "shape_repeats.onnx"), "-o", out,
                         "--input-shape", "x:2,3,4", "--quiet"], [out], d)
    assert not problems, "\n".join(problems[:20])


def batch_should_fail_cleanly_at_every_allocation():
    # allocations of the batch itself (the list, the table) and of its models
    with h.tempdir() as d:
        src = os.path.join(d, "in")
        os.mkdir(src)
        for name in ("tile_add", "const_tile"):
            with open(os.path.join(MODELS, name + ".onnx"), "rb") as f, \
                    open(os.path.join(src, name + ".onnx"), "wb") as g:
                g.write(f.read())
        one = count(["optimize", os.path.join(src, "const_tile.onnx"), "-o",
                     os.path.join(d, "one.onnx"), "--quiet"], d)
        problems = runs(["optimize", src, "-o", os.path.join(d, "out"), "-j", "1", "--quiet"],
                        [], d, more=one)
    assert not problems, "\n".join(problems[:20])


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

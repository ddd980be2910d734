#!/usr/bin/python3
"""Run one libFuzzer target of tests/fuzz for a while, on seeds made now.

    run_fuzz.py BINARY NAME SECONDS [--work DIR] [--regress-only]

Seeds (nothing big is committed): every models/*.onnx and a sample of the ONNX
backend test data models for the model targets (load, passes); for the tensor
target, the sample's input_*.pb tensors behind a few control headers (see
fuzz_tensor.c); for the npy target, .npy files and .npz archives numpy writes; for the html
target, reports. The committed inputs under tests/fuzz/regress/NAME/ run first,
once each. Prints the executions and whether anything crashed; exits 1 on a
crash, hang or leak (libFuzzer's own exit codes), 0 otherwise.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("SRCDIR", os.path.dirname(os.path.dirname(HERE)))
TESTDATA = "/usr/share/libonnx-testdata/data"
# Test-data models whose ops tileopt's passes and evaluator care about, plus
# every 15th other one for breadth.
KEYWORDS = ("tile", "expand", "_if", "loop", "shape", "gather", "concat", "reshape",
            "unsqueeze", "squeeze", "add", "mul", "cast", "where", "constant", "slice",
            "identity", "sub", "range", "size", "clip", "relu")
MAX_SEED = 64 * 1024


def sample_models():
    paths = sorted(glob.glob(os.path.join(TESTDATA, "*", "*", "model.onnx")))
    picked = []
    for i, p in enumerate(paths):
        name = os.path.basename(os.path.dirname(p))
        if any(k in name for k in KEYWORDS) or i % 15 == 0:
            if os.path.getsize(p) <= MAX_SEED:
                picked.append(p)
    return picked


def model_seeds(out):
    n = 0
    for p in sorted(glob.glob(os.path.join(SRCDIR, "models", "*.onnx"))) + sample_models():
        tag = os.path.basename(os.path.dirname(p)) if p.startswith(TESTDATA) else \
            os.path.splitext(os.path.basename(p))[0]
        shutil.copyfile(p, os.path.join(out, f"{tag}.onnx"))
        n += 1
    return n


def tensor_headers(rank):
    """Control headers for fuzz_tensor: (op, count|inputs, opset, cast) + repeats."""
    r = min(rank, 15)
    heads = [
        bytes([1, r | (1 << 4), 13, 1]) + bytes([2] * r),        # Add, repeats 2
        bytes([17, r | (2 << 4), 13, 7]) + bytes([1] * r),       # Mul, repeats 1
        bytes([3, r, 13, 6]) + bytes([0] * r),                   # Cast, empty axes
        bytes([27, (r + 1) & 15, 5, 1]) + bytes([3] * (r + 1)),  # promoted Tile
    ]
    return heads


def tensor_seeds(out):
    try:
        from onnx import TensorProto
    except ImportError:
        TensorProto = None
    n = 0
    for model in sample_models():
        for pb in sorted(glob.glob(os.path.join(os.path.dirname(model), "test_data_set_0",
                                                "input_*.pb")))[:2]:
            data = open(pb, "rb").read()
            if len(data) > MAX_SEED:
                continue
            rank = 1
            if TensorProto is not None:
                t = TensorProto()
                try:
                    t.ParseFromString(data)
                    rank = len(t.dims)
                except Exception:
                    pass
            tag = os.path.basename(os.path.dirname(model))
            for k, head in enumerate(tensor_headers(rank)):
                with open(os.path.join(out, f"{tag}_{os.path.basename(pb)}_{k}"), "wb") as f:
                    f.write(head + data)
                n += 1
    return n


def npy_seeds(out):
    """numpy's own files of every dtype tileopt reads, and archives stored and
    deflated (numpy makes them now: nothing is committed)."""
    try:
        import numpy as np
    except ImportError:
        return 0
    arrays = {
        "f4": np.arange(6, dtype=np.float32).reshape(2, 3), "f8": np.linspace(0, 1, 5),
        "be": np.arange(4, dtype=">i4"), "b1": np.array([True, False]),
        "c8": np.array([1 + 2j], np.complex64), "u": np.array(["ab", "\u00e9t\u00e9"]),
        "s": np.array([b"x", b"yz"]), "scalar": np.array(3, np.int64),
        "empty": np.zeros((0, 3), np.uint8), "f2": np.ones((2, 2), np.float16),
    }
    n = 0
    for name, a in arrays.items():
        np.save(os.path.join(out, f"{name}.npy"), a)
        n += 1
    np.savez(os.path.join(out, "stored.npz"), **arrays)
    np.savez_compressed(os.path.join(out, "deflated.npz"), **arrays)
    return n + 2


def html_seeds(out):
    """Reports: the committed ones (regress/fuzz_html) and small variants."""
    n = 0
    for p in regress_files("fuzz_html"):
        shutil.copyfile(p, os.path.join(out, os.path.basename(p)))
        n += 1
    for i, text in enumerate(['{"input":{},"passes":[]}', '{"input":{},"passes":[{"name":"f",'
                              '"actions":[{"node":"tile","op":"Tile","action":"skipped",'
                              '"reason":"a: b"}]}]}']):
        with open(os.path.join(out, f"small{i}.json"), "w") as f:
            f.write(text)
        n += 1
    return n


def regress_files(name):
    d = os.path.join(HERE, "regress", name)
    return sorted(p for p in glob.glob(os.path.join(d, "*")) if os.path.isfile(p))


def main():
    args = sys.argv[1:]
    regress_only = "--regress-only" in args
    args = [a for a in args if a != "--regress-only"]
    work = None
    if "--work" in args:
        i = args.index("--work")
        work = args[i + 1]
        del args[i:i + 2]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, name, seconds = args[0], args[1], int(args[2])
    env = dict(os.environ)
    tmp = tempfile.mkdtemp(prefix=f"tileopt_fuzz_{name}_")
    env["TILEOPT_FUZZ_TMP"] = tmp  # fuzz_common.h's scratch folder goes with it
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")

    try:
        regress = regress_files(name)
        if regress:
            cp = subprocess.run([binary, *regress], env=env, capture_output=True, text=True)
            if cp.returncode != 0:
                print(cp.stderr[-6000:])
                print(f"{name}: a regression input crashes again")
                return 1
            print(f"{name}: {len(regress)} regression inputs pass")
        if regress_only:
            return 0
        base = work or tmp
        corpus = os.path.join(base, "corpus", name)
        seeds = os.path.join(tmp, "seeds")
        crashes = os.path.join(base, "crashes")
        for d in (corpus, seeds, crashes):
            os.makedirs(d, exist_ok=True)
        make = {"fuzz_tensor": tensor_seeds, "fuzz_npy": npy_seeds,
                "fuzz_html": html_seeds}.get(name, model_seeds)
        n_seeds = make(seeds)
        cmd = [binary, f"-max_total_time={seconds}", "-timeout=25", "-rss_limit_mb=2560",
               "-print_final_stats=1", f"-artifact_prefix={crashes}/{name}-", corpus, seeds]
        cp = subprocess.run(cmd, env=env, capture_output=True, text=True)
        log = cp.stderr
        m = re.search(r"stat::number_of_executed_units:\s*(\d+)", log)
        execs = int(m.group(1)) if m else None
        m = re.search(r"stat::new_units_added:\s*(\d+)", log)
        added = int(m.group(1)) if m else 0
        if cp.returncode != 0:
            print(log[-8000:])
            arts = sorted(glob.glob(os.path.join(crashes, f"{name}-*")))
            print(f"{name}: CRASH after {execs} executions ({n_seeds} seeds); "
                  f"input saved as {arts[-1] if arts else '(none)'}")
            if not work:
                for a in arts:  # keep the input: the temporary folder goes
                    keep = os.path.join(tempfile.gettempdir(), os.path.basename(a))
                    shutil.copyfile(a, keep)
                    print(f"  kept {keep}")
            return 1
        print(f"{name}: {execs} executions in {seconds} s from {n_seeds} seeds, "
              f"{added} new inputs, no crash")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

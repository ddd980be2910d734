"""Shared helpers for tileopt's Python tests (CLI, pass and differential tests).

Use from a test script registered with meson (env TILEOPT, SRCDIR, BUILDDIR set by
tests/meson.build):

    import os, sys
    sys.path.insert(0, os.path.join(os.environ["SRCDIR"], "tests", "harness"))
    import harness as h

    cp = h.tileopt("optimize", src, "-o", dst, "--passes", "fold")  # CompletedProcess
                                           # (raises on a sanitizer report)
    h.expect_ok(cp)                        # raise with stderr unless exit 0
    h.check(dst)                           # onnx.checker full_check, raises on failure
                                           # (never rewrites dst, unlike onnx 1.12's
                                           # check_model(path, full_check=True))
    feeds = h.random_feeds(src, seed=1)    # {input name: np.ndarray}
    h.assert_close(h.run_ort(dst, feeds), h.run_ort(src, feeds))
    h.assert_close(h.run_tileopt(dst, feeds), h.run_ort(src, feeds))

    with h.tempdir() as d: ...             # removed afterwards (kept if KEEP_TMP=1)

feeds may be a list (bound in order to the graph inputs that are not initializers)
or a dict name -> array (reordered to that same order). Outputs come back as a list
in the order of the model's graph outputs. assert_close compares dtype, shape and
values (floats: |a-b| <= atol + rtol*|b|, NaN == NaN; others exactly).

Every helper raises AssertionError (or ort.OrtError) with a message naming the
model and what went wrong, so a plain script with a `main()` that lets exceptions
escape fails the meson test with a useful log. run_tests(globals()) runs every
function whose name contains "_should_", prints one line per test and returns a
process exit code.
"""
import contextlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import ort as _ort  # noqa: E402  (after the sys.path fix above)
from check_model import check as _check  # noqa: E402

SRCDIR = os.environ.get("SRCDIR", os.path.dirname(os.path.dirname(HERE)))
BUILDDIR = os.environ.get("BUILDDIR", "")
MODELS = os.path.join(SRCDIR, "models")
SCHEMA = os.path.join(SRCDIR, "tests", "report.schema.json")
OrtError = _ort.OrtError
ort_available = _ort.ort_available


def tileopt_path():
    """The tileopt binary: $TILEOPT, else $BUILDDIR/tools/tileopt."""
    p = os.environ.get("TILEOPT")
    if not p and BUILDDIR:
        p = os.path.join(BUILDDIR, "tools", "tileopt")
    if not p or not os.path.isfile(p):
        raise AssertionError(f"tileopt binary not found (TILEOPT={p!r})")
    return p


SANITIZER_REPORT = re.compile(
    r"runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
    r"MemorySanitizer|ThreadSanitizer")


def tileopt(*args, input=None, timeout=600, cwd=None):
    """Run `tileopt ARGS...` (in folder cwd when given); returns the
    CompletedProcess (text stdout/stderr).

    Never raises on a non-zero exit: check cp.returncode yourself or use expect_ok.
    Does raise AssertionError when the run printed a sanitizer report (a UBSan
    `runtime error:` does not change the exit code, so it would pass unseen).
    """
    cp = subprocess.run([os.path.abspath(tileopt_path()), *[str(a) for a in args]],
                        input=input, capture_output=True, text=True, timeout=timeout,
                        cwd=cwd)
    if SANITIZER_REPORT.search(cp.stderr):
        raise AssertionError(f"{' '.join(cp.args)}: sanitizer report (exit "
                             f"{cp.returncode}):\n{cp.stderr[-4000:]}")
    return cp


def expect_ok(cp):
    """Raise AssertionError with the command and its stderr unless cp exited 0."""
    if cp.returncode != 0:
        raise AssertionError(f"{' '.join(cp.args)}: exit {cp.returncode}\n"
                             f"stderr: {cp.stderr.strip()}")
    return cp


def check(path):
    """onnx.checker.check_model(path, full_check=True); AssertionError on failure."""
    try:
        _check(path)
    except Exception as e:
        raise AssertionError(f"{path}: onnx.checker: {' '.join(str(e).split())}") from e


def optimize_checked(src, dst, passes, *extra):
    """tileopt optimize SRC -o DST --passes PASSES with a report; both models must
    pass the checker and the report its schema. Returns the report (a dict)."""
    import json
    from validate_report import report_errors
    check(src)
    rep = dst + ".report.json"
    expect_ok(tileopt("optimize", src, "-o", dst, "--passes", passes, "--report", rep,
                      *extra))
    check(dst)
    with open(rep) as f:
        report = json.load(f)
    errs = report_errors(report)
    assert not errs, f"report invalid: {errs}"
    return report


def vi(name, elem, shape):
    """A graph input/output declaration (onnx.helper.make_tensor_value_info)."""
    return helper.make_tensor_value_info(name, elem, shape)


def i64(name, v):
    """An int64 initializer."""
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def snapshot(folder):
    """{relative path: (bytes, mtime_ns)} of every file under folder: equal before
    and after a run when the run left the folder alone."""
    out = {}
    for root, _dirs, files in os.walk(folder):
        for f in files:
            p = os.path.join(root, f)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):     # the link itself, not what it points to
                out[os.path.relpath(p, folder)] = ("->" + os.readlink(p), st.st_mtime_ns)
            elif not stat.S_ISREG(st.st_mode):  # a FIFO or device: never opened
                out[os.path.relpath(p, folder)] = (stat.S_IFMT(st.st_mode), st.st_mtime_ns)
            else:
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, folder)] = (fh.read(), st.st_mtime_ns)
    return out


@contextlib.contextmanager
def tempdir(prefix="tileopt_test_"):
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        if os.environ.get("KEEP_TMP") != "1":
            shutil.rmtree(d, ignore_errors=True)


def _load(model):
    if isinstance(model, onnx.ModelProto):
        return model
    # Structure only: input types/shapes, never external tensor bytes.
    return onnx.load(str(model), load_external_data=False)


def runtime_inputs(model):
    """The graph inputs that are not initializers (ValueInfoProto list), in order."""
    m = _load(model)
    inits = {t.name for t in m.graph.initializer}
    inits.update(t.values.name for t in m.graph.sparse_initializer)
    return [v for v in m.graph.input if v.name not in inits]


def _ordered(model, feeds):
    """feeds (list or dict) as a list in runtime-input order."""
    if not isinstance(feeds, dict):
        return list(feeds)
    names = [v.name for v in runtime_inputs(model)]
    missing = [n for n in names if n not in feeds]
    extra = [n for n in feeds if n not in names]
    if missing or extra:
        raise AssertionError(f"{model}: feeds missing {missing}, unknown {extra}")
    return [feeds[n] for n in names]


def _named(model, feeds):
    """feeds as a dict keyed by runtime input name."""
    if isinstance(feeds, dict):
        return dict(feeds)
    names = [v.name for v in runtime_inputs(model)]
    if len(names) != len(feeds):
        raise AssertionError(f"{model}: {len(names)} inputs, {len(feeds)} feeds")
    return dict(zip(names, feeds))


_RANDOM_DTYPES = {
    TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
    TensorProto.FLOAT16: np.float16,
    TensorProto.INT8: np.int8, TensorProto.INT16: np.int16,
    TensorProto.INT32: np.int32, TensorProto.INT64: np.int64,
    TensorProto.UINT8: np.uint8, TensorProto.UINT16: np.uint16,
    TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64,
    TensorProto.BOOL: np.bool_, TensorProto.STRING: object,
}


def random_feeds(model, seed=1, sym_dim=2, shapes=None):
    """Seeded random inputs for every runtime input: {name: array}.

    Floats are standard normal, signed ints in [-5, 5], unsigned in [0, 10], bools
    fair coins, strings short ascii words. Symbolic or unknown dims take sym_dim;
    shapes={name: tuple} overrides a shape. Raises AssertionError for input types
    it cannot make (sequences, maps, bfloat16...).
    """
    rng = np.random.default_rng(seed)
    out = {}
    for v in runtime_inputs(model):
        if not v.type.HasField("tensor_type"):
            raise AssertionError(f"input {v.name}: not a tensor type")
        tt = v.type.tensor_type
        dt = _RANDOM_DTYPES.get(tt.elem_type)
        if dt is None:
            raise AssertionError(f"input {v.name}: element type "
                                 f"{TensorProto.DataType.Name(tt.elem_type)} not supported")
        if shapes and v.name in shapes:
            shape = tuple(shapes[v.name])
        else:
            shape = tuple(d.dim_value if d.HasField("dim_value") else sym_dim
                          for d in tt.shape.dim)
        if dt is object:
            words = np.array(["a", "tile", "onnx", "", "xyz"], dtype=object)
            arr = words[rng.integers(0, len(words), size=shape)] if shape else \
                np.array(words[rng.integers(0, len(words))], dtype=object)
        elif dt is np.bool_:
            arr = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif np.issubdtype(dt, np.floating):
            arr = rng.standard_normal(size=shape).astype(dt)
        elif np.issubdtype(dt, np.signedinteger):
            arr = rng.integers(-5, 6, size=shape).astype(dt)
        else:
            arr = rng.integers(0, 11, size=shape).astype(dt)
        out[v.name] = np.asarray(arr)
    return out


def run_ort(path, feeds, graph_opt=None, disable_optimizers=()):
    """Outputs of path in ONNX Runtime (list of arrays, graph output order);
    graph_opt and disable_optimizers as in ort.run_ort."""
    return _ort.run_ort(str(path), _named(path, feeds), graph_opt=graph_opt,
                        disable_optimizers=disable_optimizers)


def run_tileopt(path, feeds, extra_args=()):
    """Outputs of path in tileopt's evaluator via `tileopt run` (list of arrays)."""
    with tempdir("tileopt_run_") as d:
        pbs = _ort.write_inputs(_named(path, feeds), d)
        outdir = os.path.join(d, "out")
        cp = tileopt("run", str(path), *pbs, "-o", outdir, *extra_args)
        expect_ok(cp)
        return _ort.read_outputs(outdir)


def assert_close(got, want, rtol=1e-3, atol=1e-7, what="output"):
    """Compare two arrays or two lists of arrays: dtype, shape, then values."""
    if isinstance(got, (list, tuple)) or isinstance(want, (list, tuple)):
        got, want = list(got), list(want)
        if len(got) != len(want):
            raise AssertionError(f"{len(got)} {what}s, expected {len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, rtol, atol, f"{what} {i}")
        return
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype:
        raise AssertionError(f"{what}: dtype {g.dtype}, expected {w.dtype}")
    if g.shape != w.shape:
        raise AssertionError(f"{what}: shape {g.shape}, expected {w.shape}")
    if g.dtype.kind in "fc":
        gf, wf = g.astype(np.complex128 if g.dtype.kind == "c" else np.float64), \
            w.astype(np.complex128 if w.dtype.kind == "c" else np.float64)
        both_nan = np.isnan(gf) & np.isnan(wf)
        ok = both_nan | (gf == wf) | (np.abs(gf - wf) <= atol + rtol * np.abs(wf))
    else:
        ok = g == w
    ok = np.asarray(ok)
    if not ok.all():
        idx = tuple(int(i) for i in np.argwhere(~ok)[0])
        bad = int((~ok).sum())
        raise AssertionError(f"{what}: {bad} of {ok.size} elements differ; first at "
                             f"{list(idx)}: {g[idx]!r}, expected {w[idx]!r}")


def tensors_equal(a, b):
    """Element-for-element equality of two TensorProtos' values (dtype, dims, data)."""
    if a.data_type != b.data_type or list(a.dims) != list(b.dims):
        return False
    x, y = numpy_helper.to_array(a), numpy_helper.to_array(b)
    if x.dtype.kind in "fc":
        return bool(np.array_equal(x, y, equal_nan=True))
    return bool(np.array_equal(x, y))


def run_ort_tests(namespace, argv=None):
    """run_tests for a file whose tests compare with ONNX Runtime: 1 with the
    reason when it is not there."""
    ok, why = ort_available()
    if not ok:
        print(f"ONNX Runtime is needed: {why}")
        return 1
    return run_tests(namespace, argv)


def run_tests(namespace, argv=None):
    """Run every callable named *_should_* in namespace (in definition order).

    Prints 'ok NAME' / 'FAIL NAME' with the traceback; argv[1:] selects tests by
    substring. Returns 0 when all pass, 1 otherwise (pass to sys.exit).
    """
    argv = sys.argv if argv is None else argv
    wanted = argv[1:]
    tests = [(n, f) for n, f in namespace.items()
             if callable(f) and "_should_" in n and not n.startswith("_")
             and (not wanted or any(w in n for w in wanted))]
    failed = []
    for name, fn in tests:
        try:
            fn()
        except Exception:  # report every failure, keep going
            failed.append(name)
            print(f"FAIL {name}", flush=True)
            traceback.print_exc(file=sys.stdout)
        else:
            print(f"ok   {name}", flush=True)
    print(f"{len(tests) - len(failed)} of {len(tests)} passed", flush=True)
    if not tests:
        print("no tests matched", flush=True)
        return 1
    return 1 if failed else 0

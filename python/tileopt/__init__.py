"""tileopt: optimize ONNX models around the Tile operator.

    import onnx, tileopt
    model, report = tileopt.optimize(onnx.load("model.onnx"))
    onnx.save(model, "model.opt.onnx")
    print(report["input"]["tiles"], "->", report["output"]["tiles"], "Tiles")

optimize, inspect, run and verify take a model as an onnx.ModelProto, the bytes
of one, or a path (external data is found beside the file). Options the
functions do not name go to the library by the CLI flag's name, with '_' for
'-': optimize(m, max_tensor_bytes="8G", fold_max_growth=4).

Every failure raises a tileopt.Error subclass carrying the library's status,
its message and, for optimize and verify, the report so far.
"""

import collections.abc
import contextlib
import functools
import json
import os

from . import _tileopt

# numpy and onnx are imported where they are used: optimize and inspect of a
# model's bytes or path need neither (a wheel installs without them).

__version__ = _tileopt.version

__all__ = [
    "optimize", "inspect", "run", "verify", "html", "pass_names",
    "Error", "NoMemoryError", "FileError", "ParseError", "InvalidModelError",
    "UnsupportedError", "LimitError", "MismatchError", "UsageError",
]


# ------------------------------------------------------------------ errors

class Error(Exception):
    """A tileopt failure: status (the library's code), phrase (its meaning),
    message (what went wrong and where) and report (the JSON report so far, a
    dict, when the call keeps one; else None)."""

    status = _tileopt.ERROR
    phrase = "error"
    report = None

    def __str__(self):
        return self.args[0] if self.args else self.phrase


class NoMemoryError(Error, MemoryError):
    """The library ran out of memory."""


class FileError(Error, OSError):
    """A file could not be read or written."""


class ParseError(Error):
    """The bytes are not a well-formed ONNX protobuf."""


class InvalidModelError(Error):
    """Well-formed, but not a valid model or tensor."""


class UnsupportedError(Error):
    """Valid, but outside what tileopt handles (an op the evaluator lacks, an
    upgrade step with no adapter)."""


class LimitError(Error):
    """A resource limit was hit (max_tensor_bytes, max_eval_bytes, ...)."""


class MismatchError(Error):
    """The optimized model's outputs differ from the input's (optimize with
    verify=True)."""


class UsageError(Error, ValueError):
    """A bad argument: an unknown option, pass or value."""


_ERRORS = {
    _tileopt.ERROR: Error,
    _tileopt.NOMEM: NoMemoryError,
    _tileopt.IO: FileError,
    _tileopt.PARSE: ParseError,
    _tileopt.INVALID: InvalidModelError,
    _tileopt.UNSUPPORTED: UnsupportedError,
    _tileopt.LIMIT: LimitError,
    _tileopt.MISMATCH: MismatchError,
    _tileopt.MISUSE: UsageError,
}


@contextlib.contextmanager
def _library_errors():
    """Turn the extension's Failure into the Error class of its status."""
    try:
        yield
    except _tileopt.Failure as failure:
        status, phrase, message, report = failure.args
        error = _ERRORS.get(status, Error)(message or phrase)
        error.status = status
        error.phrase = phrase
        error.report = json.loads(report) if report else None
        raise error from None


# ------------------------------------------------------------------ models

def _source(model, base_dir):
    """(source, base_dir, kind) for the extension: kind is "proto", "bytes" or
    "path", which says what optimize returns."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return model, base_dir, "bytes"
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model), None, "path"
    serialize = getattr(model, "SerializeToString", None)
    if serialize is None:
        raise TypeError("a model is an onnx.ModelProto, bytes or a path, not %s"
                        % type(model).__name__)
    return serialize(), base_dir, "proto"


def _shape_pairs(option, shapes):
    """{input name: dims} as the repeated NAME:D1,D2,... of a shape option."""
    return [(option, "%s:%s" % (name, ",".join(str(int(d)) for d in dims)))
            for name, dims in shapes.items()]


def _options(named, extra):
    """The (name, value) pairs of the library's options: the named ones that are
    set, then the rest as given, '_' read as '-'; a list or tuple is the option
    repeated (verify_inputs=["a.npz"]), a dict of dims a shape per input."""
    pairs = []
    for name, value in list(named.items()) + list(extra.items()):
        if value is None:
            continue
        name = name.replace("_", "-")
        if name == "input-shapes":
            name = "input-shape"
        if isinstance(value, collections.abc.Mapping):
            pairs += _shape_pairs(name, value)
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, bool):
                item = "1" if item else "0"
            pairs.append((name, os.fspath(item) if isinstance(item, os.PathLike) else str(item)))
    return pairs


def pass_names():
    """Every pass, in the default order (what `passes=None` runs)."""
    return _tileopt.pass_names()


def _passes(passes, skip_passes=None):
    if skip_passes is not None:
        skip = skip_passes.split(",") if isinstance(skip_passes, str) else list(skip_passes)
        unknown = [p for p in skip if p not in pass_names()]
        if unknown:
            raise UsageError("unknown pass %r in skip_passes (known: %s)"
                             % (unknown[0], ", ".join(pass_names())))
        given = pass_names() if passes is None else (
            [] if passes in ("none", []) else
            passes.split(",") if isinstance(passes, str) else list(passes))
        passes = [p for p in given if p not in skip]
    if passes is None or isinstance(passes, str):
        return passes
    names = list(passes)
    return ",".join(names) if names else "none"


def _onnx():
    """onnx, or None where it is not installed."""
    try:
        import onnx
    except ImportError:
        return None
    return onnx


def _numpy():
    try:
        import numpy
    except ImportError as e:
        raise ImportError("tileopt.run takes and returns numpy arrays: install numpy "
                          "(Debian: python3-numpy)") from e
    return numpy


def optimize(model, passes=None, target_opset=None, fold_limit=None, fold_scope=None,
             fuse_split=False, input_shapes=None, verify=False, seed=1, output=None,
             base_dir=None, skip_passes=None, **options):
    """Optimize model as `tileopt optimize` does; returns (model, report).

    passes: None for the default pipeline (every pass, pass_names()), a list of pass
    names or a comma-separated string, [] or "none" for none.
    skip_passes: passes left out of that list (a list or a comma-separated
    string), as `--skip-passes`: skip_passes=["gqa"] runs every other pass.
    target_opset: the opset upgrade converts to. fold_limit: most bytes one fold
    may add (an int, or "16M", "1GiB", "unlimited"). fold_scope: "tile" or
    "all". fuse_split: fuse Tiles into binary ops with full-size operands.
    input_shapes: {input name: dims} fixing graph inputs' shapes.
    verify: True runs the input and the result on the same random inputs (seed)
    and raises MismatchError when they differ; "strict" also raises
    UnsupportedError when there is no verdict. The report's "verify" says it.
    output: a path to save the result to (with external data beside it when
    the model needs it); the returned model is then read back from it without
    its external data (onnx.load(output, load_external_data=False)).
    base_dir: where the external data of a ModelProto or bytes model lives.

    output naming the input file, a link to it or one of its external data
    files is refused with UsageError before any work, as the CLI refuses it.
    verify_inputs (a path or a list of them: .npz, .npy, .pb files or folders,
    as `--verify-inputs`) verifies on those inputs instead of random ones;
    verify_shape sets the size of random inputs' open dims (an int) or whole
    shapes ({input name: dims}).

    The result is an onnx.ModelProto, or bytes when model was bytes (or where
    onnx is not installed). The report is the dict of `tileopt optimize
    --report` (report.schema.json).
    """
    source, base_dir, kind = _source(model, base_dir)
    if verify not in (False, True, "strict"):
        raise UsageError("verify is False, True or \"strict\", not %r" % (verify,))
    if options.get("verify_inputs") and not verify:
        verify = True  # as --verify-inputs implies --verify
    opts = _options({"target_opset": target_opset, "fold_limit": fold_limit,
                     "fold_scope": fold_scope, "fuse_split": fuse_split,
                     "input_shapes": input_shapes, "seed": seed,
                     "verify_strict": verify == "strict" or None}, options)
    out = os.fspath(output) if output is not None else None
    with _library_errors():
        data, report = _tileopt.optimize(source, base_dir, opts, _passes(passes, skip_passes),
                                         bool(verify), out)
    report = json.loads(report)
    onnx = _onnx()
    if out is not None:
        if onnx is None:
            with open(out, "rb") as f:
                return f.read(), report
        return onnx.load(out, load_external_data=False), report
    if kind == "bytes" or onnx is None:
        return data, report
    result = onnx.load_model_from_string(data)
    if kind == "path":
        # tensors left in the input's external data files still name them
        # relative to its folder: read them, as onnx.load(path) would
        from onnx.external_data_helper import load_external_data_for_model
        load_external_data_for_model(result, os.path.dirname(os.path.abspath(source)))
    return result, report


def inspect(model, base_dir=None, **options):
    """The summary of `tileopt inspect --json` as a dict: IR version, opsets,
    node counts, graph inputs and outputs, an op histogram and every Tile with
    its form, shapes and repeats where known."""
    source, base_dir, _ = _source(model, base_dir)
    with _library_errors():
        return json.loads(_tileopt.inspect(source, base_dir, _options({}, options)))


def verify(before, after, seed=1, strict=False, base_dir=None, **options):
    """Run before and after in tileopt's evaluator on the same random inputs
    (seeded) and return the report's "verify" dict: "verdict" is "match",
    "mismatch" or "skipped" (with the "reason"), with the inputs used and per
    output the largest differences. strict=True raises UnsupportedError
    instead of a "skipped" verdict."""
    src_b, dir_b, _ = _source(before, base_dir)
    src_a, dir_a, _ = _source(after, base_dir)
    opts = _options({"seed": seed, "verify_strict": strict or None}, options)
    with _library_errors():
        report = json.loads(_tileopt.verify(src_b, dir_b, src_a, dir_a, opts))
    return report["verify"]


def html(report, before, after, base_dir=None, **options):
    """The report as one self-contained HTML page, as `optimize --html` writes
    it: report is the dict optimize returns (or its JSON text), before and
    after the models it describes (ModelProto, bytes or paths). Returns the
    page as a str; write it with open(path, "w", encoding="utf-8")."""
    text = report if isinstance(report, str) else json.dumps(report)
    src_b, dir_b, _ = _source(before, base_dir)
    src_a, dir_a, _ = _source(after, base_dir)
    with _library_errors():
        return _tileopt.html(text, src_b, dir_b, src_a, dir_a, _options({}, options))


# ------------------------------------------------------------------ values

# numpy dtype -> ONNX TensorProto.DataType, and back. numpy has no bfloat16 or
# 8-bit floats: their values travel as their bits, in uint16 and uint8 arrays.
@functools.lru_cache(maxsize=None)
def _dtypes():
    np = _numpy()
    to_onnx = {
        np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3,
        np.dtype(np.uint16): 4, np.dtype(np.int16): 5, np.dtype(np.int32): 6,
        np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10,
        np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13,
        np.dtype(np.complex64): 14, np.dtype(np.complex128): 15,
    }
    from_onnx = {code: dtype for dtype, code in to_onnx.items()}
    from_onnx.update({16: np.dtype(np.uint16), 17: np.dtype(np.uint8), 18: np.dtype(np.uint8),
                      19: np.dtype(np.uint8), 20: np.dtype(np.uint8)})
    return to_onnx, from_onnx


_STRING = 8


def _value_in(value):
    """A Python value as the extension takes it: an array (or anything
    numpy.asarray takes) is a tensor, a list or tuple a sequence, None an empty
    optional."""
    if value is None:
        return ("optional", None)
    if isinstance(value, (list, tuple)):
        items = [_value_in(v) for v in value]
        dtype = next((item[1] for item in items if item[0] == "tensor"), 0)
        if any(item[0] == "strings" for item in items):
            dtype = _STRING
        return ("sequence", dtype, items)
    np = _numpy()
    array = np.asarray(value)
    if array.dtype.kind in "USO":
        return ("strings", array.shape, [_string_in(s) for s in array.reshape(-1)])
    native = array.dtype.newbyteorder("=")
    code = _dtypes()[0].get(native)
    if code is None:
        raise TypeError("numpy dtype %s has no ONNX element type" % array.dtype)
    return ("tensor", code, array.shape, np.ascontiguousarray(array, dtype=native))


def _string_in(s):
    if isinstance(s, bytes):
        return s
    if isinstance(s, str):
        return s.encode("utf-8")
    raise TypeError("a string tensor holds str or bytes, not %s" % type(s).__name__)


def _string_out(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _value_out(value):
    kind = value[0]
    np = _numpy()
    if kind == "tensor":
        _, code, dims, data = value
        return np.frombuffer(data, dtype=_dtypes()[1][code]).reshape(dims)
    if kind == "strings":
        _, dims, strings = value
        out = np.empty(len(strings), dtype=object)
        out[:] = [_string_out(b) for b in strings]
        return out.reshape(dims)
    if kind == "sequence":
        return [_value_out(v) for v in value[2]]
    return None if value[1] is None else _value_out(value[1])


def run(model, inputs, base_dir=None, **options):
    """Evaluate model in tileopt's evaluator: inputs maps every graph input
    that is not an initializer to a numpy array (a list of arrays for a
    sequence, None for an empty optional); returns {output name: value}.

    Every element type is taken and returned: strings as object arrays of str
    (bytes where not UTF-8), bfloat16 as uint16 arrays and the 8-bit floats as
    uint8 arrays holding their bits (numpy has neither type).
    """
    source, base_dir, _ = _source(model, base_dir)
    if not isinstance(inputs, collections.abc.Mapping):
        raise TypeError("inputs is a dict of graph input name to value, not %s"
                        % type(inputs).__name__)
    specs = {name: _value_in(value) for name, value in inputs.items()}
    with _library_errors():
        outputs = _tileopt.run(source, base_dir, _options({}, options), specs)
    return {name: _value_out(value) for name, value in outputs}

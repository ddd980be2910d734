"""Helpers for the hardening tests: malformed models built byte by byte
or with onnx.helper (never checked), and one runner that holds every bad input to
the same rules:

  exit 1 (2 for usage), exactly one stderr line `tileopt: error: ...` matching
  the case's pattern (it names the problem and the node, tensor or field), no
  sanitizer report, no new file in the output folder, the input folder unchanged.

Used by test_catalogue.py, test_limits.py, test_bad_input.py and test_fidelity.py.
"""
import os
import re
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402
import ort as _ort  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                       r"runtime error:|stack-overflow|SEGV")
TIMEOUT = 60  # a hang is a failure too; generous for sanitizer builds


def vi(name, shape=(2, 3), elem=F):
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def model(nodes, inputs, outputs, inits=(), opset=13, ir=None):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, initializer=list(inits))
    kw = {"opset_imports": [helper.make_opsetid("", opset)]}
    if ir is not None:
        kw["ir_version"] = ir
    return helper.make_model(g, **kw)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def to_bytes(m):
    return m if isinstance(m, bytes) else m.SerializeToString()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(to_bytes(data))


snapshot = h.snapshot


def problems_of(cp, pattern, code):
    """What is wrong with a finished run of a bad input (empty list: nothing)."""
    lines = cp.stderr.splitlines()
    out = []
    if SANITIZER.search(cp.stderr):
        out.append("sanitizer report")
    if cp.returncode != code:
        out.append(f"exit {cp.returncode}, expected {code}")
    # Usage errors (exit 2) add a hint line after the error line.
    want_lines = 2 if code == 2 else 1
    if len(lines) != want_lines and not (code == 2 and len(lines) == 1):
        out.append(f"{len(lines)} stderr lines, expected {want_lines}")
    errs = [ln for ln in lines if ln.startswith("tileopt: error: ")]
    if len(errs) != 1 or not lines or lines[0] != errs[0]:
        out.append("stderr is not one 'tileopt: error: ' line")
    elif not re.search(pattern, errs[0], re.IGNORECASE):
        out.append(f"message does not name the problem (want /{pattern}/)")
    return out


def run_bad(args, pattern, in_dir=None, out_dir=None, code=1, label=""):
    """Run tileopt ARGS on a bad input; raise AssertionError listing every rule broken."""
    before_in = snapshot(in_dir) if in_dir else {}
    before_out = sorted(os.listdir(out_dir)) if out_dir and os.path.isdir(out_dir) else None
    try:
        cp = h.tileopt(*args, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{label or args}: no answer within {TIMEOUT} s (hang)")
    problems = problems_of(cp, pattern, code)
    if before_out is not None and sorted(os.listdir(out_dir)) != before_out:
        problems.append(f"output folder changed: {sorted(os.listdir(out_dir))}")
    if in_dir and snapshot(in_dir) != before_in:
        problems.append("input files changed")
    if problems:
        raise AssertionError(f"{label or ' '.join(map(str, args))}: " + "; ".join(problems) +
                             f"\n  stderr: {cp.stderr[-1500:]!r}")
    return cp


def write_inputs(m, folder):
    """Random input .pb files for m's runtime inputs (empty list when it has none
    or their shapes are unknown)."""
    try:
        feeds = h.random_feeds(m)
    except Exception:
        return []
    return _ort.write_inputs(feeds, folder) if feeds else []


def available_passes():
    """Names of the passes this build has, probed on a tiny valid model."""
    found = []
    with h.tempdir() as d:
        src = os.path.join(d, "ok.onnx")
        write(src, model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x")],
                         [vi("y")]))
        for p in ("upgrade", "fold", "fuse"):
            cp = h.tileopt("optimize", src, "-o", os.path.join(d, "o.onnx"), "--passes", p,
                           "-q")
            if cp.returncode != 2:
                found.append(p)
    return found


# ------------------------------------------------------------ wire format

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def deep_nesting(levels):
    """A model whose If nodes nest `levels` deep (then_branch only), as raw bytes:
    onnx's serializer refuses such depth. Built inside out in linear time, each
    message's nested field last so only a header goes before it."""
    inner = field(1, 2, field(4, 2, b"Identity") + field(1, 2, b"x") + field(2, 2, b"y"))
    heads = []
    size = len(inner)
    for _ in range(levels):
        # AttributeProto{name, type=GRAPH, g}, NodeProto{input, output, op_type,
        # attribute}, GraphProto{node}: headers outermost first once reversed.
        for prefix, num in ((field(1, 2, b"then_branch") + field(20, 0, varint(5)), 6),
                            (field(1, 2, b"c") + field(2, 2, b"y") + field(4, 2, b"If"), 5),
                            (b"", 1)):
            head = prefix + varint(num << 3 | 2) + varint(size)
            heads.append(head)
            size += len(head)
    body = b"".join(reversed(heads)) + inner
    return field(1, 0, varint(8)) + field(7, 2, body) + field(8, 2, field(2, 0, varint(13)))

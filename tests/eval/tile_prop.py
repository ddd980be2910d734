"""Property tests of the Tile kernel, Tile views and broadcasting binary ops
against numpy, through the tile_prop driver (tests/eval/tile_prop.c).

tile_should_match_numpy: every element type, ranks 1-6, repeats 0 and 1 among
the draws, zero-size dims, both the materializing kernel and the view.
broadcast_should_match_numpy: binary ops over random broadcast shapes whose
operands are plain tensors or Tile views (read through strides), including
views whose splits of one axis are incompatible.
"""
import random
import struct
import subprocess
import sys

import numpy as np

DRIVER = sys.argv[1]
SEED = 20261122
rng = random.Random(SEED)
nrng = np.random.default_rng(SEED)

# ONNX element type -> bytes per element (string handled apart)
ELEM_SIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4,
             13: 8, 14: 8, 15: 16, 16: 2, 17: 1, 18: 1, 19: 1, 20: 1}
STRING = 8
failures = []
count = 0


def run(args, data):
    p = subprocess.run([DRIVER] + args, input=data, capture_output=True)
    err = p.stderr.decode(errors="replace")
    if "runtime error" in err:  # UBSan reports and carries on unless told to halt
        return 99, p.stdout, err
    return p.returncode, p.stdout, err


def lst(v):
    return ",".join(str(x) for x in v) if len(v) else "-"


def encode_strings(arr):
    out = bytearray()
    for s in arr.reshape(-1):
        b = s.encode()
        out += struct.pack("<I", len(b)) + b
    return bytes(out)


def random_case(rank):
    while True:
        dims = [rng.choice([0, 1, 1, 2, 3, 4]) if rng.random() < 0.15 else rng.randint(1, 4)
                for _ in range(rank)]
        reps = [rng.choice([0, 1, 1, 2, 3, 5]) if rng.random() < 0.8 else rng.randint(1, 9)
                for _ in range(rank)]
        n = int(np.prod([d * r for d, r in zip(dims, reps)]))
        if n <= 50000:
            return dims, reps


def check_tile(elem, dims, reps, mode, axis=None, tiles=None):
    global count
    count += 1
    if elem == STRING:
        words = np.array(["".join(rng.choice("abcxyz") for _ in range(rng.randint(0, 6)))
                          for _ in range(int(np.prod(dims)))], dtype=object).reshape(dims)
        data = encode_strings(words)
        want = encode_strings(np.tile(words, reps))
    else:
        esz = ELEM_SIZE[elem]
        raw = nrng.integers(0, 256, size=int(np.prod(dims)) * esz, dtype=np.uint8).tobytes()
        a = np.frombuffer(raw, dtype="V%d" % esz).reshape(dims)
        data = raw
        want = np.tile(a, reps).tobytes()
    args = ["tile", str(elem), lst(dims), lst(reps), mode]
    if mode == "tile1":  # the driver takes tiles and axis; reps is the expectation
        args = ["tile", str(elem), lst(dims), str(tiles), mode, str(axis)]
    rc, out, err = run(args, data)
    name = "tile_should_match_numpy elem=%d dims=%s reps=%s %s" % (elem, dims, reps, mode)
    if rc != 0:
        failures.append("%s: driver failed: %s" % (name, err))
    elif out != want:
        failures.append("%s: %d bytes differ (got %d, want %d)" % (
            name, sum(1 for x, y in zip(out, want) if x != y), len(out), len(want)))


for elem in sorted(list(ELEM_SIZE) + [STRING]):
    for rank in range(1, 7):
        for _ in range(3):
            dims, reps = random_case(rank)
            check_tile(elem, dims, reps, rng.choice(["kernel", "view"]))
    # all-ones and all-zero repeats, and a zero-size dim, every type
    check_tile(elem, [2, 3], [1, 1], "kernel")
    check_tile(elem, [2, 3], [0, 0], "kernel")
    check_tile(elem, [2, 0, 3], [2, 2, 2], "kernel")
    # Tile-1: one axis, negative axis counts from the end
    dims = [rng.randint(1, 4) for _ in range(3)]
    axis = rng.randint(-3, 2)
    tiles = rng.randint(0, 4)
    reps = [1, 1, 1]
    reps[axis] = tiles
    check_tile(elem, dims, reps, "tile1", axis, tiles)

# A larger case through the fast paths (pattern doubling, merged axes).
check_tile(1, [64, 64, 3], [16, 2, 1], "kernel")
check_tile(3, [512, 3], [1, 300], "kernel")
check_tile(7, [1, 40, 1, 1], [4, 1, 30, 30], "kernel")

# ------------------------------------------------------------ broadcasting
NP_TYPES = {1: np.float32, 11: np.float64, 3: np.int8, 5: np.int16, 6: np.int32,
            7: np.int64, 2: np.uint8, 4: np.uint16, 12: np.uint32, 13: np.uint64}


def trunc_div(a, b):
    with np.errstate(all="ignore"):
        if np.issubdtype(a.dtype, np.floating):
            return a / b
        safe = np.where(b == 0, 1, b)
        if np.issubdtype(a.dtype, np.signedinteger):
            q = np.abs(a.astype(np.int64)).astype(np.uint64) // np.abs(safe.astype(np.int64)).astype(np.uint64)
            neg = (a < 0) != (safe < 0)
            q = np.where(neg, (0 - q.astype(np.int64)), q.astype(np.int64)).astype(a.dtype)
        else:
            q = a // safe
        return np.where(b == 0, 0, q).astype(a.dtype)


def py_mod(a, b):
    with np.errstate(all="ignore"):
        if np.issubdtype(a.dtype, np.floating):
            return np.mod(a, b)
        safe = np.where(b == 0, 1, b)
        return np.where(b == 0, 0, np.mod(a, safe)).astype(a.dtype)


OPS = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": trunc_div,
    "Mod": py_mod,
    "Max": np.maximum,
    "Min": np.minimum,
    "Equal": np.equal,
    "Less": np.less,
    "Greater": np.greater,
    "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal,
}


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def operand(out_dims):
    """A spec for one operand: plain with broadcast dims, or a Tile view."""
    k = rng.randint(0, len(out_dims))  # leading dims it lacks
    dims = out_dims[k:]
    if rng.random() < 0.5:
        base = [1 if rng.random() < 0.3 else d for d in dims]
        return lst(base), base, None
    base, reps = [], []
    for d in dims:
        if d == 0:
            base.append(0)
            reps.append(1)
            continue
        b = rng.choice(divisors(d)) if rng.random() < 0.8 else 1
        base.append(b)
        reps.append(d // b)
    return "%s:%s" % (lst(base), lst(reps)), base, reps


def values(dtype, n, nonzero):
    if np.issubdtype(dtype, np.floating):
        v = nrng.uniform(-8, 8, size=n).astype(dtype)
        v = np.round(v * 4) / 4  # exact in every float type, ties happen
    else:
        info = np.iinfo(dtype)
        small = nrng.integers(max(info.min, -9), min(info.max, 9) + 1, size=n)
        big = nrng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        v = np.where(nrng.random(n) < 0.7, small, big)
    v = v.astype(dtype)
    if nonzero:
        v[v == 0] = 1
    return v


for case in range(200):
    op = rng.choice(list(OPS))
    elem = rng.choice(list(NP_TYPES))
    dtype = NP_TYPES[elem]
    rank = rng.randint(1, 4)
    out_dims = [rng.choice([1, 2, 3, 4, 6, 8, 12]) if rng.random() > 0.05 else 0
                for _ in range(rank)]
    sa, base_a, rep_a = operand(out_dims)
    sb, base_b, rep_b = operand(out_dims)
    floating = np.issubdtype(dtype, np.floating)
    a = values(dtype, int(np.prod(base_a)), False).reshape(base_a)
    b = values(dtype, int(np.prod(base_b)), floating and op in ("Div", "Mod")).reshape(base_b)
    ta = np.tile(a, rep_a) if rep_a else a
    tb = np.tile(b, rep_b) if rep_b else b
    with np.errstate(all="ignore"):
        want = np.asarray(OPS[op](ta, tb))
    if want.dtype == np.bool_:
        want = want.astype(np.uint8)
    count += 1
    rc, out, err = run(["binop", op, str(elem), sa, sb], a.tobytes() + b.tobytes())
    name = "broadcast_should_match_numpy %s %s %s %s" % (op, np.dtype(dtype).name, sa, sb)
    if rc != 0:
        failures.append("%s: driver failed: %s" % (name, err))
        continue
    got = np.frombuffer(out, dtype=want.dtype)
    if got.size != want.size:
        failures.append("%s: %d values, want %d" % (name, got.size, want.size))
    elif floating and op == "Mod":
        if not np.allclose(got, want.reshape(-1), rtol=1e-6, atol=1e-6):
            failures.append("%s: values differ" % name)
    elif not np.array_equal(got, want.reshape(-1)):
        failures.append("%s: values differ:\n got %s\nwant %s" % (name, got[:12], want.reshape(-1)[:12]))

# bad input through the driver: negative repeats, wrong length, overflow
for args, what in [(["tile", "1", "2,3", "1,-1", "kernel"], "negative"),
                   (["tile", "1", "2,3", "2,2,2", "kernel"], "entries"),
                   (["tile", "1", "2,3", "4611686018427387904,4", "kernel"], "overflow")]:
    count += 1
    rc, out, err = run(args, bytes(24))
    if rc != 1 or what not in err:
        failures.append("tile_should_reject %s: rc=%d err=%r" % (what, rc, err))

for f in failures:
    print("FAIL", f)
print("%d cases, %d failures" % (count, len(failures)))
sys.exit(1 if failures else 0)

#!/usr/bin/python3
"""Big models: Llama-7B-shaped decoders (d 4096, 32 heads, 8 KV heads repeated
by Expand before the attention MatMuls, MLP 11008, vocabulary 32000, a KV cache
as inputs and outputs) of 4 and 32 layers, their weights in external data,
written streaming (never whole in memory), in each layout exporters write:

  one        one data file, tensors packed (as optimum and torch.onnx write it)
  per-tensor one file per tensor (onnx's all_tensors_to_one_file=False)
  shards     files of 2 GB (a quarter of the data for a small model), in order
  big        one file, the vocabulary 270,000: one tensor over 2 GB

For each it times `tileopt optimize` into another folder with `--passes none`,
with the default passes, with `--passes none` again over that output (a re-run:
the old data replaced, one data file left), with copy_file_range taken away (the
read/write copy; tests/cli/faultfs.c, built in the release build), and with
`--verify` on the 4-layer models, against `cp` of the data files and onnx's
Python load + save of the same model, each cold (page cache dropped, when this
runs as root) and fsync'ed (cp and onnx followed by sync of their files), the fastest of --runs.
It prints wall seconds, the ratio to cp measured in the same run, and peak RSS.

    /usr/bin/python3 bench/bench_big.py [--layers 4,32] [--dtype float16]
        [--layouts one,per-tensor,shards,big] [--runs 3] [--tileopt PATH]
        [--dir DIR] [--no-onnx] [--check]

--check (the CI smoke run: 4 layers, float16, layout one, one run each, page
cache left alone) also checks that every output is whole: one data file beside
OUT, equal to the input's tensors; without the disk room it exits 77 (skipped),
saying why. Disk: each model needs about 3.5x
its data free (input, one output at a time, the cp copy); a size that does
not fit is skipped, saying so.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
D, HEADS, KV_HEADS, MLP, VOCAB = 4096, 32, 8, 11008, 32000
HEAD = D // HEADS
DTYPES = {"float16": (TensorProto.FLOAT16, np.float16), "float32": (TensorProto.FLOAT, np.float32)}


# ------------------------------------------------------------------ model

def tensor_shapes(layers, vocab):
    """(name, shape) of every weight, in the order the data files hold them."""
    out = [("embed", (vocab, D))]
    for i in range(layers):
        p = f"l{i}."
        out += [(p + "ln1", (D,)), (p + "wq", (D, D)), (p + "wk", (D, KV_HEADS * HEAD)),
                (p + "wv", (D, KV_HEADS * HEAD)), (p + "wo", (D, D)), (p + "ln2", (D,)),
                (p + "wg", (D, MLP)), (p + "wu", (D, MLP)), (p + "wd", (MLP, D))]
    out += [("norm", (D,)), ("lm_head", (D, vocab))]
    return out


def graph_nodes(layers, dt):
    """The decoder's nodes, inputs, outputs and small constant initializers."""
    nodes, consts = [], []

    def const(name, arr):
        consts.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    eps = const("eps", np.array(1e-5, DTYPES[dt][1]))
    scale = const("scale", np.array(1 / np.sqrt(HEAD), DTYPES[dt][1]))
    two = const("two", np.array(2, DTYPES[dt][1]))
    q_shape = const("q_shape", np.array([0, 0, HEADS, HEAD], np.int64))
    kv_shape = const("kv_shape", np.array([0, 0, KV_HEADS, HEAD], np.int64))
    rep_shape = const("rep_shape", np.array([1, KV_HEADS, HEADS // KV_HEADS, 1, HEAD], np.int64))
    axes2 = const("axes2", np.array([2], np.int64))
    out_shape = const("out_shape", np.array([0, 0, D], np.int64))
    n = 0

    def node(op, ins, **attrs):
        nonlocal n
        n += 1
        out = f"t{n}"
        nodes.append(helper.make_node(op, ins, [out], name=f"{op}_{n}", **attrs))
        return out

    def rms(x, w):
        var = node("ReduceMean", [node("Pow", [x, two])], axes=[-1], keepdims=1)
        return node("Mul", [node("Div", [x, node("Sqrt", [node("Add", [var, eps])])]), w])

    def heads(x, shape):
        return node("Transpose", [node("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    def repeat(x, past_len):
        # [B, 8, T, 128] -> [B, 8, 4, T, 128] -> [B, 32, T, 128], as exporters write it
        e = node("Expand", [node("Unsqueeze", [x, axes2]), node("Concat", [
            node("Slice", [rep_shape, const(f"s0_{past_len}", np.array([0], np.int64)),
                           const(f"s3_{past_len}", np.array([3], np.int64))]),
            node("Slice", [node("Shape", [x]), const(f"s2_{past_len}", np.array([2], np.int64)),
                           const(f"s4_{past_len}", np.array([4], np.int64))])], axis=0)])
        return node("Reshape", [e, const(f"rs_{past_len}", np.array([0, HEADS, -1, HEAD], np.int64))])

    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"])]
    outputs = []
    h = node("Gather", ["embed", "input_ids"], axis=0)
    for i in range(layers):
        p = f"l{i}."
        a = rms(h, p + "ln1")
        q = heads(node("MatMul", [a, p + "wq"]), q_shape)
        k = heads(node("MatMul", [a, p + "wk"]), kv_shape)
        v = heads(node("MatMul", [a, p + "wv"]), kv_shape)
        for kind, x in (("key", k), ("value", v)):
            past = f"past_key_values.{i}.{kind}"
            inputs.append(helper.make_tensor_value_info(past, DTYPES[dt][0],
                                                        [1, KV_HEADS, "past", HEAD]))
            nodes.append(helper.make_node("Concat", [past, x], [f"present.{i}.{kind}"], axis=2,
                                          name=f"cat_{i}_{kind}"))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", DTYPES[dt][0],
                                                         [1, KV_HEADS, "total", HEAD]))
        kr = repeat(f"present.{i}.key", i * 2)
        vr = repeat(f"present.{i}.value", i * 2 + 1)
        s = node("Mul", [node("MatMul", [q, node("Transpose", [kr], perm=[0, 1, 3, 2])]), scale])
        ctx = node("MatMul", [node("Softmax", [s], axis=-1), vr])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), out_shape])
        h = node("Add", [h, node("MatMul", [ctx, p + "wo"])])
        m = rms(h, p + "ln2")
        g = node("MatMul", [m, p + "wg"])
        act = node("Mul", [node("Mul", [g, node("Sigmoid", [g])]), node("MatMul", [m, p + "wu"])])
        h = node("Add", [h, node("MatMul", [act, p + "wd"])])
    nodes.append(helper.make_node("MatMul", [rms(h, "norm"), "lm_head"], ["logits"], name="head"))
    outputs.insert(0, helper.make_tensor_value_info("logits", DTYPES[dt][0], [1, "seq", "vocab"]))
    return nodes, inputs, outputs, consts


def write_model(folder, layers, dt, layout):
    """The model and its data files in folder, written tensor by tensor from one
    16 MB block of N(0, 0.02) values read at a shifting offset (every tensor
    differs, none is ever whole in memory). Returns (model path, data bytes,
    data file paths)."""
    os.makedirs(folder, exist_ok=True)
    vocab = 270000 if layout == "big" else VOCAB
    elem, np_dt = DTYPES[dt]
    block = (np.random.default_rng(0).standard_normal(8 << 20) * 0.02).astype(np_dt).tobytes()
    block2 = block * 2
    shapes = tensor_shapes(layers, vocab)
    inits, files, handles = [], [], {}
    total = sum(int(np.prod(s)) for _, s in shapes) * np.dtype(np_dt).itemsize
    # 2 GB shards, and at least four of them for a small model
    shard_limit, shard_no, shard_fill = min(2 << 30, max(total // 4, 64 << 20)), 1, 0
    shard_count = max(1, -(-total // shard_limit))
    offsets = {}
    for k, (name, shape) in enumerate(shapes):
        nbytes = int(np.prod(shape)) * np.dtype(np_dt).itemsize
        if layout == "per-tensor":
            loc = name + ".weight"
        elif layout == "shards":
            if shard_fill and shard_fill + nbytes > shard_limit:
                shard_no, shard_fill = shard_no + 1, 0
            loc = f"model-{shard_no:05d}-of-{shard_count:05d}.data"
            shard_fill += nbytes
        else:
            loc = "model.onnx_data"
        if loc not in handles:
            path = os.path.join(folder, loc)
            handles[loc] = open(path, "wb")
            files.append(path)
            offsets[loc] = 0
        f = handles[loc]
        start = (k * 7919 * 64) % len(block)
        left = nbytes
        while left:
            chunk = min(left, len(block))
            f.write(memoryview(block2)[start:start + chunk])
            left -= chunk
        t = TensorProto(name=name, data_type=elem, dims=list(shape))
        t.data_location = TensorProto.EXTERNAL
        for key, val in (("location", loc), ("offset", str(offsets[loc])), ("length", str(nbytes))):
            t.external_data.add(key=key, value=val)
        offsets[loc] += nbytes
        if layout == "per-tensor":
            f.close()
            del handles[loc]
        inits.append(t)
    for f in handles.values():
        f.flush()
        os.fsync(f.fileno())
        f.close()
    nodes, inputs, outputs, consts = graph_nodes(layers, dt)
    g = helper.make_graph(nodes, "decoder", inputs, outputs, inits + consts)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path, total, files


# ------------------------------------------------------------------ runs

def drop_caches():
    """Empty the page cache (root only): every run starts cold. False if not."""
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def timed(cmd, env=None):
    """(wall seconds, peak RSS MB) of cmd, which must succeed; GNU time measures
    the peak of the command itself, not of this Python."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        cp = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if cp.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({cp.returncode}): {cp.stderr.strip()[-800:]}")
        kb = float(rss.read().strip().splitlines()[-1])
    return wall, kb / 1024


ONNX_SAVE = """
import os, sys, onnx
src, dst = sys.argv[1], sys.argv[2]
m = onnx.load(src)
onnx.save_model(m, dst, save_as_external_data=True, all_tensors_to_one_file=True,
                location=os.path.basename(dst) + ".data", size_threshold=1024)
for f in (dst, dst + ".data"):
    fd = os.open(f, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
"""


def mem_available():
    """MemAvailable: free memory plus the page cache the kernel can drop."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def clear(folder):
    for n in os.listdir(folder):
        os.remove(os.path.join(folder, n))


def check_output(out, src):
    """OUT beside exactly one data file, loadable, equal to the input's tensors."""
    names = sorted(os.listdir(os.path.dirname(out)))
    if names != ["o.onnx", "o.onnx.data"]:
        sys.exit(f"check: {os.path.dirname(out)} holds {names}")
    a = onnx.load(out, load_external_data=False)
    b = onnx.load(src, load_external_data=False)
    if len(a.graph.initializer) != len(b.graph.initializer):
        sys.exit("check: initializer count differs")
    want = {t.name: t for t in b.graph.initializer}
    base_a, base_b = os.path.dirname(out), os.path.dirname(src)
    for t in a.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        ea = {e.key: e.value for e in t.external_data}
        eb = {e.key: e.value for e in want[t.name].external_data}
        with open(os.path.join(base_a, ea["location"]), "rb") as fa, \
                open(os.path.join(base_b, eb["location"]), "rb") as fb:
            fa.seek(int(ea.get("offset", 0)))
            fb.seek(int(eb.get("offset", 0)))
            n = int(ea["length"])
            while n > 0:
                k = min(64 << 20, n)
                if fa.read(k) != fb.read(k):
                    sys.exit(f"check: tensor {t.name} differs")
                n -= k


def bench_one(args, work, layers, dt, layout, shim, cold):
    src_dir, out_dir = os.path.join(work, "in"), os.path.join(work, "out")
    for d in (src_dir, out_dir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    t0 = time.perf_counter()
    src, data, files = write_model(src_dir, layers, dt, layout)
    written = time.perf_counter() - t0
    out = os.path.join(out_dir, "o.onnx")
    row = {"layers": layers, "dtype": dt, "layout": layout, "data GB": data / 1e9,
           "files": len(files), "write s": written}

    def run(key, cmd, env=None, keep=False):
        best = None
        for _ in range(args.runs):
            if not keep:
                clear(out_dir)
            if cold:
                drop_caches()
            got = timed(cmd, env)
            best = got if best is None or got[0] < best[0] else best
        row[key] = best

    run("cp", ["sh", "-c", 'cp "$@" "$0" && sync "$0"/*', out_dir, *files])
    t = args.tileopt
    run("none", [t, "optimize", src, "-o", out, "--passes", "none", "-q"])
    if args.check:
        check_output(out, src)
    # a second run over the first one's output: the old data replaced
    run("rerun", [t, "optimize", src, "-o", out, "--passes", "none", "-q"], keep=True)
    if args.check:
        check_output(out, src)
    if shim:
        env = dict(os.environ, LD_PRELOAD=shim, FAULTFS_NO_COPY_RANGE="1")
        run("no cfr", [t, "optimize", src, "-o", out, "--passes", "none", "-q"], env=env)
    run("default", [t, "optimize", src, "-o", out, "-q"])
    if args.check:
        names = sorted(os.listdir(out_dir))
        if names != ["o.onnx", "o.onnx.data"]:
            sys.exit(f"check: default passes left {names}")
    if layers <= 4:
        run("verify", [t, "optimize", src, "-o", out, "-q", "--verify"])
    avail = mem_available()
    if args.no_onnx:
        row["onnx"] = "off"
    elif 2.2 * data > avail:
        row["onnx"] = (f"skipped: needs ~{2.2 * data / 1e9:.0f} GB of memory, "
                       f"{avail / 1e9:.0f} available")
    else:
        run("onnx", [sys.executable, "-c", ONNX_SAVE, src, os.path.join(out_dir, "p.onnx")])
    shutil.rmtree(src_dir)
    shutil.rmtree(out_dir)
    return row


def fmt(row, key, base):
    v = row.get(key)
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    wall, rss = v
    ratio = f" ({wall / base:.2f}x)" if base else ""
    return f"{wall:.1f} s{ratio}, {rss:.0f} MB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", default="4,32")
    ap.add_argument("--dtype", default="float16", choices=sorted(DTYPES))
    ap.add_argument("--layouts", default="one,per-tensor,shards,big")
    ap.add_argument("--tileopt", default=os.path.join(REPO, "build", "release", "tools", "tileopt"))
    ap.add_argument("--shim", default=os.path.join(REPO, "build", "release", "tests", "cli",
                                                   "faultfs.so"))
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--no-onnx", action="store_true", help="skip onnx's Python load + save")
    ap.add_argument("--runs", type=int, default=3,
                    help="runs of each command, the fastest kept (this VM's disk drifts)")
    ap.add_argument("--check", action="store_true",
                    help="CI smoke run: 4 layers, float16, one file; outputs checked")
    args = ap.parse_args()
    if args.check:
        args.layers, args.dtype, args.layouts, args.runs = "4", "float16", "one", 1
    shim = args.shim if os.path.exists(args.shim) else None
    work = tempfile.mkdtemp(prefix="tileopt_big_", dir=args.dir)
    # dropping the page cache slows every process on the machine: not in CI
    cold = not args.check and drop_caches()
    print(f"cold runs (page cache dropped before each): {'yes' if cold else 'no (not root)'}; "
          f"copy_file_range off through {shim or '(no shim: not measured)'}")
    rows = []
    try:
        for layers in (int(x) for x in args.layers.split(",")):
            for layout in args.layouts.split(","):
                vocab = 270000 if layout == "big" else VOCAB
                size = sum(int(np.prod(s)) for _, s in tensor_shapes(layers, vocab)) * \
                    np.dtype(DTYPES[args.dtype][1]).itemsize
                free = shutil.disk_usage(work).free
                if 3.5 * size > free:
                    print(f"skipped: {layers} layers {layout}: needs ~{3.5 * size / 1e9:.0f} GB "
                          f"free on {work}, {free / 1e9:.0f} GB there", flush=True)
                    if args.check:
                        return 77  # meson's "skipped"
                    continue
                row = bench_one(args, work, layers, args.dtype, layout, shim, cold)
                rows.append(row)
                base = row["cp"][0]
                print(f"{layers} layers {args.dtype} {layout}: {row['data GB']:.2f} GB in "
                      f"{row['files']} file(s), written in {row['write s']:.0f} s", flush=True)
                for key in ("cp", "none", "rerun", "no cfr", "default", "verify", "onnx"):
                    if key in row:
                        print(f"  {key:8} {fmt(row, key, None if key == 'cp' else base)}",
                              flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if rows:
        print("\n| model | data | cp | --passes none | re-run | none, no copy_file_range "
              "| default | --verify | onnx load + save |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            base = r["cp"][0]
            print(f"| {r['layers']} layers {r['dtype']} {r['layout']} | {r['data GB']:.2f} GB, "
                  f"{r['files']} file(s) | {fmt(r, 'cp', None)} | {fmt(r, 'none', base)} | "
                  f"{fmt(r, 'rerun', base)} | {fmt(r, 'no cfr', base)} | "
                  f"{fmt(r, 'default', base)} | {fmt(r, 'verify', base)} | "
                  f"{fmt(r, 'onnx', base)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Grouped-query attention in ONNX Runtime: the exported K/V head repeat against
tileopt's output of it, and against two forms a rewrite could reach.

Four models per case, timed in one node process, interleaved round by round
(bench/ort_time_real.js: the median duration of ORT's own "model_run" event):

  orig    torch.onnx's export (TorchScript, opset 17, dynamic batch and
          lengths) of the attention as Hugging Face's Llama writes it, from
          Q, K, V and the mask: repeat_kv (Unsqueeze -> Expand -> Reshape) of K
          and V, Q K^T / sqrt(d) + mask, Softmax, P V
  tileopt `tileopt optimize` of orig (default passes)
  target  the same computation with each KV head's query heads folded into the
          rows of one MatMul, nothing repeated: Q reshaped to [B, kv, n*Sq, D]
          against K^T [B, kv, D, T] and V [B, kv, T, D], the scores viewed as
          [B, kv, n, Sq, T] for the mask and the Softmax, one Reshape back to
          [B, heads, Sq, D]. Built by hand with onnx.helper, and checked with
          np.allclose against orig on the case's inputs before it is timed
  bcast   nothing repeated either: Q viewed as [B, kv, n, Sq, D] against K^T
          unsqueezed to [B, kv, 1, D, T], MatMuls that broadcast over the
          group (by hand too, checked the same way)

Cases: head shapes of Llama-3-8B (32 query heads, 8 KV heads, head size 128),
Qwen2-7B (28/4/128) and Gemma (8/1/256); decode (one query token over K and V
of 512, 4096 and 16384 tokens, the KV cache with the new token) and prefill
(512 and 2048 tokens, causal mask); 1 and 2 intra-op threads; batch 1. Then
the whole 2-layer decoder step (one new token, its cache as optimum exports it:
past K and V in, Concat with the new token's, present K and V out) of
tests/real/gqa_models.py at Llama-3-8B widths (hidden 4096, MLP 14336, the same
heads; the vocabulary cut to 1024 to keep the file under protobuf's 2 GB):
orig, tileopt, and as target and bcast the same decoder exported with those
attentions (gqa_models.py's "folded" and "grouped" forms, same weights).

Goals: decode attention >= 4x at 4096 on 1 thread, the decoder step >= 1.2x at
4096, nothing below 0.97 (prefill included). The ratio columns are orig / model
(> 1: faster than the export); the goal column judges tileopt, the last one
the target. "cpu" gives the same ratios of the median process CPU time per
run, which other load on the machine disturbs less than the wall time (with 1
thread; with 2 it also counts ORT's spinning threads). "reps" counts the K/V
head repeats of each model (tests/real/gqa_repeats.py). A tileopt output that
is the export byte for byte shows "= orig" and is not timed.

    /usr/bin/python3 bench/bench_gqa.py [--tileopt PATH] [--quick] [--no-decoder]
        [--no-attention] [--shapes llama3,qwen2,gemma] [--threads 1,2] [--json FILE]

--quick: Llama-3-8B's heads only, decode at 4096 and prefill at 512, one
thread, a decoder of hidden 1024 (MLP 3584) with the same heads, few rounds: a
smoke run of a few minutes. Not part of ./test: timings are no test on a shared
VM.
"""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ORT_TIME = os.path.join(HERE, "ort_time_real.js")
sys.path.insert(0, os.path.join(REPO, "tests", "real"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
import gqa_models  # noqa: E402
import gqa_repeats  # noqa: E402
import ort  # noqa: E402

OPSET = 17
SHAPES = {"llama3": ("Llama-3-8B", 32, 8, 128), "qwen2": ("Qwen2-7B", 28, 4, 128),
          "gemma": ("Gemma", 8, 1, 256)}
DECODE = (512, 4096, 16384)
PREFILL = (512, 2048)
DECODER_WIDTHS = dict(hidden=4096, inter=14336, vocab=1024)
QUICK_DECODER_WIDTHS = dict(hidden=1024, inter=3584, vocab=1024)
GOAL_DECODE_4096 = 4.0
GOAL_DECODER_4096 = 1.2
FLOOR = 0.97
ORT_TYPES = {np.dtype(np.float32): "float32", np.dtype(np.int64): "int64"}


def find_tileopt(given):
    if given:
        return given
    if os.environ.get("TILEOPT"):
        return os.environ["TILEOPT"]
    p = os.path.join(REPO, "build", "release", "tools", "tileopt")
    if os.path.isfile(p):
        return p
    cands = sorted(glob.glob(os.path.join(REPO, "build*", "tools", "tileopt")),
                   key=os.path.getmtime, reverse=True)
    if not cands:
        sys.exit("bench_gqa: no tileopt binary (build it, or pass --tileopt)")
    return cands[0]


# ------------------------------------------------------------- attention alone

def attention_config(heads, kv, d):
    return dict(gqa_models.FAMILIES["llama"], heads=heads, kv_heads=kv, head_dim=d,
                hidden=heads * d)


def export_attention(torch, c, path):
    """The export of gqa_models' attention (repeat_kv) alone: inputs query [B,
    heads, Sq, D], key and value [B, kv, T, D] (the whole cache, the new token's
    K and V included), the additive mask [B, 1, Sq, T]; output [B, heads, Sq, D].
    Decoding runs it with Sq = 1, the prefill with Sq = T and a causal mask."""
    attend = gqa_models.attend_fn(torch)

    class Core(torch.nn.Module):
        def forward(self, query, key, value, mask):
            return attend(query, key, value, mask, c)

    b, s, t = 2, 3, 8  # the example: other sizes than any case
    h, kv, d = c["heads"], c["kv_heads"], c["head_dim"]
    ex = (torch.randn(b, h, s, d), torch.randn(b, kv, t, d), torch.randn(b, kv, t, d),
          torch.zeros(b, 1, s, t))
    axes = {"query": {0: "batch", 2: "sequence"}, "key": {0: "batch", 2: "total"},
            "value": {0: "batch", 2: "total"},
            "mask": {0: "batch", 2: "sequence", 3: "total"},
            "attn": {0: "batch", 2: "sequence"}}
    import warnings
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Core(), ex, path, opset_version=OPSET,
                          input_names=["query", "key", "value", "mask"],
                          output_names=["attn"], dynamic_axes=axes)


def folded_attention(heads, kv, d):
    """The target by hand: the export's inputs and output, nothing repeated."""
    n = heads // kv
    inits = [numpy_helper.from_array(np.array(math.sqrt(d), dtype=np.float32), "scale")]

    def const(name, values):
        inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64),
                                             "shape_" + name))
        return "shape_" + name

    nodes = [
        # [B, heads, Sq, D] -> [B, kv, n*Sq, D]: query head g*n + j is row j*Sq + s
        # of KV head g
        helper.make_node("Reshape", ["query", const("q_rows", [0, kv, -1, d])], ["q_rows"]),
        helper.make_node("Transpose", ["key"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q_rows", "k_t"], ["qk"]),
        helper.make_node("Div", ["qk", "scale"], ["scores"]),
        # the mask [B, 1, Sq, T] is per query position: view the rows as [n, Sq]
        helper.make_node("Shape", ["key"], ["t"], start=2, end=3),
        helper.make_node("Concat", [const("lead5", [0, kv, n, -1]), "t"], ["shape5"],
                         axis=0),
        helper.make_node("Reshape", ["scores", "shape5"], ["scores5"]),
        helper.make_node("Unsqueeze", ["mask", const("axis1", [1])], ["mask5"]),
        helper.make_node("Add", ["scores5", "mask5"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p5"], axis=-1),
        helper.make_node("Concat", [const("lead4", [0, kv, -1]), "t"], ["shape4"], axis=0),
        helper.make_node("Reshape", ["p5", "shape4"], ["p"]),
        helper.make_node("MatMul", ["p", "value"], ["o_rows"]),
        helper.make_node("Reshape", ["o_rows", const("o_heads", [0, heads, -1, d])],
                         ["attn"]),
    ]
    return _attention_model(nodes, inits, heads, kv, d, "gqa_folded")


def _attention_model(nodes, inits, heads, kv, d, name):
    """A checked model of export_attention's inputs and output around nodes."""
    f32 = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        nodes, name,
        [vi("query", f32, ["batch", heads, "sequence", d]),
         vi("key", f32, ["batch", kv, "total", d]), vi("value", f32, ["batch", kv, "total", d]),
         vi("mask", f32, ["batch", 1, "sequence", "total"])],
        [vi("attn", f32, ["batch", heads, "sequence", d])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def grouped_attention(heads, kv, d):
    """bcast by hand: Q as [B, kv, n, Sq, D], K and V unsqueezed to one head per
    group, MatMuls broadcasting over it."""
    n = heads // kv
    inits = [numpy_helper.from_array(np.array(math.sqrt(d), dtype=np.float32), "scale")]

    def const(name, values):
        inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64),
                                             "shape_" + name))
        return "shape_" + name

    nodes = [
        helper.make_node("Reshape", ["query", const("q_groups", [0, kv, n, -1, d])],
                         ["q_groups"]),
        helper.make_node("Unsqueeze", ["key", const("axis2", [2])], ["k_group"]),
        helper.make_node("Transpose", ["k_group"], ["k_t"], perm=[0, 1, 2, 4, 3]),
        helper.make_node("MatMul", ["q_groups", "k_t"], ["qk"]),
        helper.make_node("Div", ["qk", "scale"], ["scores"]),
        helper.make_node("Unsqueeze", ["mask", const("axis1", [1])], ["mask5"]),
        helper.make_node("Add", ["scores", "mask5"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("Unsqueeze", ["value", "shape_axis2"], ["v_group"]),
        helper.make_node("MatMul", ["p", "v_group"], ["o_groups"]),
        helper.make_node("Reshape", ["o_groups", const("o_heads", [0, heads, -1, d])],
                         ["attn"]),
    ]
    return _attention_model(nodes, inits, heads, kv, d, "gqa_grouped")


def attention_feeds(heads, kv, d, decode, length, seed=0):
    """Decode: one query token over K and V of `length` tokens; prefill:
    `length` tokens over themselves with a causal mask."""
    rng = np.random.default_rng(seed)
    s = 1 if decode else length
    f = {"query": rng.standard_normal((1, heads, s, d), dtype=np.float32),
         "key": rng.standard_normal((1, kv, length, d), dtype=np.float32),
         "value": rng.standard_normal((1, kv, length, d), dtype=np.float32)}
    mask = np.zeros((1, 1, s, length), dtype=np.float32)
    if s > 1:
        mask[0, 0][np.triu(np.ones((s, length), dtype=bool), 1)] = np.finfo(np.float32).min
    f["mask"] = mask
    return f


# ---------------------------------------------------------------- the decoder

def export_decoder(torch, widths, form, length, path):
    """gqa_models' 2-layer Llama decoder with a cache at Llama-3-8B's heads and
    the given widths, exported to path; form: None (repeat_kv), or the
    attention of the target ("folded") or bcast ("grouped")."""
    over = dict(widths, heads=32, kv_heads=8, head_dim=128, max_positions=length + 2)
    if form:
        over["repeat"] = form
    kw = {"family": "llama", "form": "decoder", "cache": True}
    m, c = gqa_models.build(torch, kw, **over)
    gqa_models.export(kw, OPSET, path, m=m, c=c)
    return kw, c


def decoder_feeds(torch, kw, c, length):
    f = gqa_models.make_inputs(torch, kw, c, batch=1, seq=1, past=length, seed=3)
    return {k: v.numpy() for k, v in f.items()}


# -------------------------------------------------------------------- timing

def time_models(models, feeds, threads, rounds, tmp):
    """{label: (ORT median ms, CPU median ms)} for the models (label, path),
    interleaved."""
    spec_feeds = []
    for i, (name, a) in enumerate(feeds.items()):
        a = np.ascontiguousarray(a)
        raw = os.path.join(tmp, f"feed_{i}.bin")
        a.tofile(raw)
        spec_feeds.append({"name": name, "type": ORT_TYPES[a.dtype], "dims": list(a.shape),
                           "file": raw})
    prof = tempfile.mkdtemp(dir=tmp)
    spec = {"models": [{"label": k, "path": p} for k, p in models], "feeds": spec_feeds,
            "threads": threads, "warmup": rounds["warmup"],
            "min_rounds": rounds["min"], "max_rounds": rounds["max"],
            "budget_ms": rounds["budget_ms"], "profile_dir": prof}
    sp = os.path.join(tmp, "spec.json")
    with open(sp, "w") as f:
        json.dump(spec, f)
    r = subprocess.run(["node", ORT_TIME, sp], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_gqa: ort_time_real failed: {r.stderr.strip()[-2000:]}")
    out = json.loads(r.stdout)
    for f in glob.glob(os.path.join(prof, "*")):
        os.remove(f)
    return {k: (v["ort_median_ms"], v["cpu_median_ms"]) for k, v in out.items()}


def optimize(tileopt, src, dst):
    r = subprocess.run([tileopt, "optimize", src, "-o", dst, "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_gqa: tileopt optimize {src} failed: {r.stderr.strip()}")


def same_outputs(paths, feeds, what):
    """ORT's outputs of every model equal the first's (np.allclose)."""
    ref = ort.run_ort(paths[0][1], feeds)
    for label, p in paths[1:]:
        got = ort.run_ort(p, feeds)
        for i, (g, w) in enumerate(zip(got, ref)):
            if g.shape != w.shape or not np.allclose(g, w, rtol=1e-4, atol=1e-5):
                err = np.abs(g - w).max() if g.shape == w.shape else "shape"
                sys.exit(f"bench_gqa: {what}: {label}'s output {i} differs from "
                         f"{paths[0][0]}'s (largest difference {err})")


def same_file(a, b):
    with open(a, "rb") as x, open(b, "rb") as y:
        return x.read() == y.read()


def time_case(paths, feeds, threads, rounds, tmp):
    """time_models of every model; a tileopt output that is orig
    byte for byte runs the same by construction: it takes orig's time untimed
    (timing it would measure only this machine's noise)."""
    identical = same_file(paths[0][1], paths[1][1])
    t = time_models([p for p in paths if not (identical and p[0] == "tileopt")], feeds,
                    threads, rounds, tmp)
    if identical:
        t["tileopt"] = t["orig"]
    return t, identical


def repeats_of(paths, feeds):
    return [len(gqa_repeats.find_repeats(p, feeds)) for _label, p in paths]


def ratio(a, b):
    return a / b if b > 0 else float("inf")


MODELS = ("orig", "tileopt", "target", "bcast")


def row(results, case, threads, timed, reps, goal):
    t, identical = timed
    ms = {k: t[k][0] for k in MODELS}
    cpu = {k: t[k][1] for k in MODELS}
    r = {k: ratio(ms["orig"], ms[k]) for k in MODELS[1:]}
    rc = {k: ratio(cpu["orig"], cpu[k]) for k in MODELS[1:]}
    goal = max(goal, FLOOR)
    verdict = "ok" if r["tileopt"] >= goal else "MISS"
    tv = "ok" if r["target"] >= goal else "MISS"
    tileopt = "= orig" if identical else f"{ms['tileopt']:.2f}"
    print(f"{case:36} {threads:>3} {ms['orig']:9.2f} {tileopt:>9} {ms['target']:9.2f} "
          f"{ms['bcast']:9.2f} {r['tileopt']:6.2f}x {r['target']:6.2f}x {r['bcast']:6.2f}x "
          f"{'/'.join(f'{rc[k]:.2f}' for k in MODELS[1:]):>15} "
          f"{'/'.join(map(str, reps)):>7}  >={goal:<4} {verdict:4} target {tv}", flush=True)
    results.append({"case": case, "threads": threads, "ms": ms, "cpu_ms": cpu,
                    "ratio": r, "cpu_ratio": rc, "tileopt_identical": identical,
                    "repeats": reps, "goal": goal})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tileopt")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-decoder", action="store_true")
    ap.add_argument("--no-attention", action="store_true")
    ap.add_argument("--shapes", help="comma-separated subset of " + ",".join(SHAPES))
    ap.add_argument("--threads", help="comma-separated intra-op thread counts (1,2)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    tileopt = find_tileopt(args.tileopt)
    import torch
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    shapes = args.shapes.split(",") if args.shapes else (
        ["llama3"] if args.quick else list(SHAPES))
    if args.no_attention:
        shapes = []
    threads = [int(x) for x in args.threads.split(",")] if args.threads else (
        [1] if args.quick else [1, 2])
    decode = (4096,) if args.quick else DECODE
    prefill = (512,) if args.quick else PREFILL
    rounds = ({"warmup": 2, "min": 5, "max": 40, "budget_ms": 1500} if args.quick else
              {"warmup": 3, "min": 7, "max": 200, "budget_ms": 4000})
    results = []
    print("ONNX Runtime, batch 1; ms: median of ORT's own model_run (thr: intra-op "
          "threads); x: orig / model (tileopt, target, bcast);\ncpu: the same ratios of "
          "the process CPU time; reps: K/V head repeats in orig/tileopt/target/bcast "
          "(tests/real/gqa_repeats.py);\n'= orig': tileopt wrote the export's bytes "
          "(not timed).")
    print(f"{'case':36} {'thr':>3} {'orig':>9} {'tileopt':>9} {'target':>9} {'bcast':>9} "
          f"{'tileopt':>7} {'target':>7} {'bcast':>7} {'cpu':>15} {'reps':>7}  goal")
    with tempfile.TemporaryDirectory(prefix="bench_gqa_") as tmp:
        for key in shapes:
            label, heads, kv, d = SHAPES[key]
            stem = os.path.join(tmp, key)
            paths = [(k, f"{stem}.{k}.onnx") for k in MODELS]
            export_attention(torch, attention_config(heads, kv, d), paths[0][1])
            optimize(tileopt, paths[0][1], paths[1][1])
            onnx.save(folded_attention(heads, kv, d), paths[2][1])
            onnx.save(grouped_attention(heads, kv, d), paths[3][1])
            reps = repeats_of(paths, attention_feeds(heads, kv, d, True, 16))
            for decoding, lengths in ((True, decode), (False, prefill)):
                for length in lengths:
                    feeds = attention_feeds(heads, kv, d, decoding, length)
                    case = (f"{label} {heads}/{kv}/{d} "
                            f"{'decode' if decoding else 'prefill'} {length}")
                    same_outputs(paths, feeds, case)
                    for th in threads:
                        t = time_case(paths, feeds, th, rounds, tmp)
                        goal = GOAL_DECODE_4096 if (decoding and length == 4096 and
                                                    th == 1) else FLOOR
                        row(results, case, th, t, reps, goal)
        if not args.no_decoder:
            widths = QUICK_DECODER_WIDTHS if args.quick else DECODER_WIDTHS
            lengths = (4096,) if args.quick else DECODE
            top = max(lengths)
            stem = os.path.join(tmp, "decoder")
            paths = [(k, f"{stem}.{k}.onnx") for k in MODELS]
            kw, c = export_decoder(torch, widths, None, top, paths[0][1])
            optimize(tileopt, paths[0][1], paths[1][1])
            export_decoder(torch, widths, "folded", top, paths[2][1])
            export_decoder(torch, widths, "grouped", top, paths[3][1])
            reps = repeats_of(paths, decoder_feeds(torch, kw, c, 16))
            what = (f"decoder h{widths['hidden']}")
            for length in lengths:
                feeds = decoder_feeds(torch, kw, c, length)
                case = f"{what} 32/8/128 decode {length}"
                same_outputs(paths, feeds, case)
                for th in threads:
                    t = time_case(paths, feeds, th, rounds, tmp)
                    goal = GOAL_DECODER_4096 if (length == 4096 and th == 1 and
                                                 widths["hidden"] == 4096) else FLOOR
                    row(results, case, th, t, reps, goal)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Model-level tests of the gqa pass (grouped-query attention's repeated K/V heads).

Each case builds an attention the way exporters write it (Hugging Face's
repeat_kv as Unsqueeze -> Expand -> Reshape, .repeat as Tile, repeat_interleave
as Unsqueeze -> Tile -> Reshape, multi-query as an Expand of one head; K in
[B,S,kv,D] layout or transposed; masks of every broadcast shape; static or
symbolic batch and lengths, the Expand shapes built from Shape as exporters
build them), runs `tileopt optimize --passes gqa`, checks the output with
onnx.checker and the report with its schema, and runs original and output in
ONNX Runtime and in tileopt's evaluator at sizes other than any the model
declares: all must agree. Cases that must not be rewritten check that nothing
changed and that the report says why. The last test draws random attentions
(GQA_FUZZ_CASES of them, 40 by default) from all of that.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

F = TensorProto.FLOAT


class Attn:
    """An attention graph under construction: nodes, initializers, inputs."""

    def __init__(self, opset):
        self.nodes, self.inits, self.inputs, self.k = [], [], [], 0
        self.opset = opset

    def name(self, what):
        self.k += 1
        return f"{what}_{self.k}"

    def const(self, arr, what="c"):
        n = self.name(what)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def node(self, op, ins, what=None, **attrs):
        out = self.name(what or op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=out + "_node", **attrs))
        return out

    def unsqueeze(self, x, axis):
        if self.opset >= 13:
            return self.node("Unsqueeze", [x, self.const(np.array([axis], np.int64))])
        return self.node("Unsqueeze", [x], axes=[axis])

    def dim(self, x, i):
        """Axis i of x as a 1-element tensor, the way exporters compute it."""
        s = self.node("Shape", [x])
        g = self.node("Gather", [s, self.const(np.array(i, np.int64))], axis=0)
        return self.unsqueeze(g, 0)

    def shape(self, parts):
        """A 1-D shape of numbers and (value, axis) pairs read at run time."""
        if all(isinstance(p, int) for p in parts):
            return self.const(np.array(parts, np.int64))
        ins = [self.dim(*p) if isinstance(p, tuple) else self.const(np.array([p], np.int64))
               for p in parts]
        return self.node("Concat", ins, axis=0)


def repeat(a, x, form, kv, n, layout_axis, dyn):
    """x repeated n times along its head axis (layout_axis) in the given form."""
    ax = layout_axis
    if form == "tile":                               # n-major, .repeat
        reps = [1, 1, 1, 1]
        reps[ax] = n
        return a.node("Tile", [x, a.const(np.array(reps, np.int64))])
    if form == "mqa":                                # kv = 1: an Expand of the head
        parts = [(x, i) if dyn else None for i in range(4)]
        parts = [p if p is not None else DIMS[x][i] for i, p in enumerate(parts)]
        parts[ax] = kv * n
        return a.node("Expand", [x, a.shape(parts)])
    # Unsqueeze a new axis after (kv-major) or before (n-major) the head axis
    ins = ax + 1 if form in ("expand", "interleave") else ax
    u = a.unsqueeze(x, ins)
    parts = [(x, i) if dyn else DIMS[x][i] for i in range(4)]
    parts.insert(ins, n)
    if form == "interleave":
        reps = [1] * 5
        reps[ins] = n
        e = a.node("Tile", [u, a.const(np.array(reps, np.int64))])
    else:
        ones = list(parts)
        e = a.node("Expand", [u, a.shape(ones)])
    out = [(x, i) if dyn else DIMS[x][i] for i in range(4)]
    out[ax] = kv * n
    return a.node("Reshape", [e, a.shape(out)])


DIMS = {}


def build(kv=2, n=4, b=2, sq=3, s=5, d=8, form="expand", layout="bhsd", mask="b1qs",
          dyn=True, opset=17, v_form=None, v_kv=None, k_reader=False, q_heads=None,
          scale="mul", run_sq=None, cache=True, rotary=0):
    """An attention: out = softmax(q k^T * scale + mask) v, K/V repeated by form;
    without a cache the keys are as many as the queries (one named dim). With
    rotary tables, q (and k without a cache) are first multiplied by each of
    that many tables of rows named apart (a rotary embedding's sliced cos), so
    that inference cannot name their rows.

    Returns (model, feeds at other sizes than the export's; run_sq query rows
    when given)."""
    if not cache:
        s = sq
    a = Attn(opset)
    H = kv * n
    v_kv = v_kv or kv
    v_n = H // v_kv
    sym = (lambda name, v: name) if dyn else (lambda name, v: v)
    B, SQ, S = sym("batch", b), sym("seq", sq), sym("total" if cache else "seq", s)
    qh = q_heads or H
    a.inputs.append(h.vi("q", F, [B, qh, SQ, d]))
    kshape = [B, kv, S, d] if layout == "bhsd" else [B, S, kv, d]
    a.inputs.append(h.vi("k", F, kshape))
    a.inputs.append(h.vi("v", F, [B, v_kv, S, d]))
    DIMS.clear()
    DIMS["k"] = [b, kv, s, d] if layout == "bhsd" else [b, s, kv, d]
    DIMS["v"] = [b, v_kv, s, d]
    head_axis = 1 if layout == "bhsd" else 2
    q, k = "q", "k"
    for t in range(rotary):
        a.inputs.append(h.vi(f"cos{t}", F, [1, 1, f"pos{t}", d]))
        q = a.node("Mul", [q, f"cos{t}"])
        k = k if cache else a.node("Mul", [k, f"cos{t}"])
    kr = repeat(a, k, form, kv, n, head_axis, dyn)
    kt = a.node("Transpose", [kr], perm=[0, 1, 3, 2] if layout == "bhsd" else [0, 2, 3, 1])
    scores = a.node("MatMul", [q, kt])
    if scale == "mul":
        scores = a.node("Mul", [scores, a.const(np.array(1 / np.sqrt(d), np.float32))])
    elif scale == "div":
        scores = a.node("Div", [scores, a.const(np.array(np.sqrt(d), np.float32))])
    mshape = {"b1qs": [B, 1, SQ, S], "b11s": [B, 1, 1, S], "qs": [SQ, S], "1qs": [1, SQ, S],
              "per_head": [B, H, SQ, S]}.get(mask)
    if mshape:
        a.inputs.append(h.vi("mask", F, mshape))
        scores = a.node("Add", [scores, "mask"])
    probs = a.node("Softmax", [scores], axis=-1)
    if v_form == "plain":
        a.inputs[2] = h.vi("v", F, [B, H, S, d])
        vr = "v"
    else:
        DIMS["v"] = [b, v_kv, s, d]
        vr = repeat(a, "v", v_form or (form if form != "mqa" or v_kv == 1 else "expand"),
                    v_kv, v_n, 1, dyn)
    o = a.node("MatMul", [probs, vr])
    out = a.node("Transpose", [o], "out", perm=[0, 2, 1, 3])
    outputs = [h.vi(out, F, [B, SQ, qh if mask != "per_head" else H, d])]
    if q_heads:
        outputs = [h.vi(out, F, [B, SQ, H, d])]
    if k_reader:
        outputs.append(h.vi(kr, F, [B, H, S, d] if layout == "bhsd" else [B, S, H, d]))
    g = helper.make_graph(a.nodes, "gqa_test", a.inputs, outputs, initializer=a.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    # run at other sizes than the declared ones when they are symbolic
    rb, rsq, rs = (b + 1, run_sq or sq + 2, s + 3) if dyn else (b, sq, s)
    if not cache:
        rs = rsq
    shapes = {"q": (rb, qh, rsq, d), "v": (rb, v_kv if v_form != "plain" else H, rs, d),
              "k": (rb, kv, rs, d) if layout == "bhsd" else (rb, rs, kv, d)}
    for t in range(rotary):
        shapes[f"cos{t}"] = (1, 1, rsq, d)
    if mshape:
        shapes["mask"] = {"b1qs": (rb, 1, rsq, rs), "b11s": (rb, 1, 1, rs), "qs": (rsq, rs),
                          "1qs": (1, rsq, rs), "per_head": (rb, H, rsq, rs)}[mask]
    return m, h.random_feeds(m, seed=7, shapes=shapes)


def optimize(m, feeds):
    """Optimize with gqa; check, compare in ORT and the evaluator. Returns
    (model, the gqa pass's actions)."""
    with h.tempdir() as d:
        src, dst = os.path.join(d, "src.onnx"), os.path.join(d, "dst.onnx")
        onnx.save(m, src)
        report = h.optimize_checked(src, dst, "gqa")
        want = h.run_ort(src, feeds)
        h.assert_close(h.run_ort(dst, feeds), want, rtol=1e-4, atol=1e-5,
                       what="ORT optimized output")
        h.assert_close(h.run_tileopt(src, feeds), want, rtol=1e-4, atol=1e-5,
                       what="evaluator original")
        h.assert_close(h.run_tileopt(dst, feeds), want, rtol=1e-4, atol=1e-5,
                       what="evaluator optimized")
        (p,) = [p for p in report["passes"] if p["name"] == "gqa"]
        return onnx.load(dst), p["actions"]


def folds(actions):
    """The rewrites: one per MatMul of a kv-major repeat, one per attention of an
    n-major one."""
    return [a for a in actions if a["action"] == "rewritten" and "heads" in a]


def ops(m):
    return [n.op_type for n in m.graph.node]


def dispatches(m):
    """The Ifs gqa made: (folded branch, the export's branch) of each."""
    out = []
    for n in m.graph.node:
        if n.op_type == "If" and n.doc_string.startswith("tileopt gqa"):
            br = {a.name: a.g for a in n.attribute}
            out.append((br["then_branch"], br["else_branch"]))
    return out


def folded_nodes(m):
    """The nodes that run for few query rows: the main graph's and the folded
    branches'."""
    return list(m.graph.node) + [n for f, _ in dispatches(m) for n in f.node]


N_MAJOR = ("tile", "expand_before")


def assert_rewritten(m, feeds, form="expand", order=None, kv=None, five=None):
    """Every repeat gone: two MatMuls folded for a kv-major repeat, one region
    for an n-major one."""
    out, actions = optimize(m, feeds)
    done = folds(actions)
    assert len(done) == (1 if form in N_MAJOR else 2), done
    folded = [n.op_type for n in folded_nodes(out)]
    assert "Expand" not in folded and "Tile" not in folded, folded
    # a named query length: the form is picked at run time, the export's kept
    # whole in the other branch; one If for the whole attention, whose output
    # is the attention's and not the scores between its MatMuls
    dyn = any(d.dim_param for d in m.graph.input[0].type.tensor_type.shape.dim)
    assert len(dispatches(out)) == (1 if dyn else 0), ops(out)
    for folded_branch, _ in dispatches(out):
        assert [n.op_type for n in folded_branch.node].count("MatMul") == 2, folded_branch
    for _, kept in dispatches(out):
        assert "MatMul" in [n.op_type for n in kept.node], kept
    for r in done:
        if order:
            assert r["order"].startswith(order), r["order"]
        if kv is not None:
            assert r["kv_heads"] == kv, r
        if five is not None:
            assert ("n, Sq" in r["scores"]) == five, r
    return out, done


def assert_left(m, feeds, reason, folded=0):
    """A MatMul (or attention) left with reason; the others folded."""
    out, actions = optimize(m, feeds)
    assert len(folds(actions)) == folded, actions
    skips = [a["reason"] for a in actions if a["action"] == "skipped"]
    assert any(reason in s for s in skips), skips
    return out


# ---------------------------------------------------------------- rewrites

def gqa_should_fold_repeat_kv_into_rows():
    m, feeds = build(form="expand")
    assert_rewritten(m, feeds, order="kv-major", kv=2)


def gqa_should_fold_a_tile_repeat_in_n_major_order():
    m, feeds = build(form="tile")
    assert_rewritten(m, feeds, "tile", order="n-major", kv=2)


def gqa_should_fold_the_new_axis_before_the_heads_in_n_major_order():
    m, feeds = build(form="expand_before")
    assert_rewritten(m, feeds, "expand_before", order="n-major")


def gqa_should_fold_repeat_interleave_as_a_tile_of_a_new_axis():
    m, feeds = build(form="interleave")
    assert_rewritten(m, feeds, "interleave", order="kv-major")


def gqa_should_fold_multi_query_attention():
    m, feeds = build(kv=1, n=8, form="mqa")
    assert_rewritten(m, feeds, "mqa", kv=1)


def gqa_should_follow_k_in_sequence_major_layout_through_its_transpose():
    m, feeds = build(form="expand", layout="bshd")
    assert_rewritten(m, feeds)


def gqa_should_move_a_scalar_scale_before_the_regrouping():
    # ONNX Runtime fuses a scale into the MatMul right before it
    for scale in ("mul", "div"):
        m, feeds = build(scale=scale)
        out, _ = assert_rewritten(m, feeds)
        nodes = folded_nodes(out)
        (mm,) = [n for n in nodes if n.op_type == "MatMul" and "grouped" in n.name and
                 any(x.op_type in ("Mul", "Div") and n.output[0] in x.input for x in nodes)]
        assert mm is not None


def gqa_should_keep_kv_major_scores_as_the_export_computes_them():
    # the folded product reshaped back is the export's scores: a per-head mask
    # (ALiBi's bias) and the attention weights as an output read it as before
    for mask in ("per_head", "b1qs"):
        m, feeds = build(mask=mask)
        assert_rewritten(m, feeds)


def gqa_should_view_n_major_scores_in_5d_for_a_mask_varying_along_rows():
    for mask in ("b1qs", "qs", "1qs"):
        m, feeds = build(form="tile", mask=mask)
        assert_rewritten(m, feeds, "tile", five=True)


def gqa_should_keep_n_major_scores_4d_when_no_operand_varies_along_rows():
    for mask in ("b11s", None):
        m, feeds = build(form="tile", mask=mask, scale="div")
        assert_rewritten(m, feeds, "tile", five=False)


def gqa_should_rewrite_static_shapes_without_shape_subgraphs():
    m, feeds = build(dyn=False)
    out, _ = assert_rewritten(m, feeds)
    assert "Shape" not in ops(out), ops(out)


def negate_kept_branches(m):
    """m with the output of every kept export's branch negated: a run that
    takes such a branch no longer matches."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    for _, kept in dispatches(m):
        y = kept.output[0].name
        kept.output[0].name = y + "_negated"
        kept.node.append(helper.make_node("Neg", [y], [y + "_negated"]))
    return m


def gqa_should_run_the_exports_form_for_many_query_rows():
    # 4 heads a group: 300 query rows are past the folded form's 1024 rows and
    # run the export's repeat, 5 run the folded form, in ORT and the evaluator
    for form in ("expand", "tile"):
        m, many = build(form=form, run_sq=300)
        _, few = build(form=form)
        out, _ = assert_rewritten(m, many, form)
        with h.tempdir() as d:
            src, bad = os.path.join(d, "src.onnx"), os.path.join(d, "bad.onnx")
            onnx.save(m, src)
            onnx.save(negate_kept_branches(out), bad)
            for feeds, kept in ((many, True), (few, False)):
                want = h.run_ort(src, feeds)[0]
                for got in (h.run_ort(bad, feeds)[0], h.run_tileopt(bad, feeds)[0]):
                    assert np.allclose(got, want, rtol=1e-4, atol=1e-5) != kept, (form, kept)


def gqa_should_leave_many_static_query_rows():
    m, feeds = build(dyn=False, sq=300)
    assert_left(m, feeds, "many query rows")
    m, feeds = build(form="tile", dyn=False, sq=300)
    assert_left(m, feeds, "many query rows")


def gqa_should_leave_n_major_queries_without_rows():
    # the regrouping's -1 beside the copied batch would divide by no rows; a
    # kv-major fold's 0 for n*Sq copies the empty axis and folds
    m, feeds = build(form="tile", dyn=False, sq=0)
    assert_left(m, feeds, "no rows")
    m, feeds = build(dyn=False, sq=0)
    assert_rewritten(m, feeds)


def gqa_should_leave_a_named_query_length_without_a_cache():
    # keys as many as the queries: the repeat is 1/Sq of the attention, too
    # little for an If; both MatMuls are left, each with the reason
    for form in ("expand", "tile"):
        m, feeds = build(form=form, cache=False)
        out = assert_left(m, feeds, "without a KV cache")
        assert not dispatches(out) and len(out.graph.node) == len(m.graph.node), ops(out)
        skips = [a for a in optimize(m, feeds)[1] if a["action"] == "skipped"]
        assert len(skips) == 2, skips
    # known query rows need no If: folded as before
    m, feeds = build(dyn=False, cache=False)
    assert_rewritten(m, feeds)


def gqa_should_see_keys_are_queries_through_one_broadcast_of_both():
    # q and k each broadcast with one table: their rows are unknown to
    # inference, yet the same
    for form in ("expand", "tile"):
        m, feeds = build(form=form, cache=False, rotary=1)
        assert_left(m, feeds, "without a KV cache")
    # past 8 broadcast dims the proof gives up: taken to have a cache, the
    # attention gets its If, and stays exact
    m, feeds = build(cache=False, rotary=9)
    assert_rewritten(m, feeds)


def gqa_should_share_the_query_rows_with_probabilities_of_a_broadcast_mask():
    # the probabilities' rows are the queries' broadcast with the mask's: the
    # same set of dims, so their fold reads the rows made once, not its own
    m, feeds = build(rotary=1)
    out, _ = assert_rewritten(m, feeds)
    (folded, _), = dispatches(out)
    assert "Shape" not in [n.op_type for n in folded.node], folded


def gqa_should_reach_a_fixed_point():
    for form in ("tile", "expand"):
        assert_fixed_point(build(form=form)[0])


def assert_fixed_point(m):
    with h.tempdir() as d:
        src, a, b = (os.path.join(d, f) for f in ("s.onnx", "a.onnx", "b.onnx"))
        onnx.save(m, src)
        h.expect_ok(h.tileopt("optimize", src, "-o", a))
        h.expect_ok(h.tileopt("optimize", a, "-o", b))
        with open(a, "rb") as fa, open(b, "rb") as fb:
            assert fa.read() == fb.read()


# ------------------------------------------------------------- left alone

def attention_on(a, kr):
    """softmax(q kr^T) v as a model of a's nodes: kr the repeated K [2,4,S,8]."""
    kt = a.node("Transpose", [kr], perm=[0, 1, 3, 2])
    p = a.node("Softmax", [a.node("MatMul", ["q", kt])], axis=-1)
    o = a.node("MatMul", [p, "v"], "out")
    g = helper.make_graph(a.nodes, "t", a.inputs, [h.vi(o, F, [2, 4, 3, 8])],
                          initializer=a.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def gqa_should_leave_a_reshape_that_merges_the_new_axis_elsewhere():
    # the new axis merged with the sequence: K repeated along S, not along heads
    a = Attn(17)
    a.inputs = [h.vi("q", F, [2, 4, 3, 8]), h.vi("k", F, [2, 4, 5, 8]),
                h.vi("v", F, [2, 4, 10, 8])]
    u = a.unsqueeze("k", 3)
    e = a.node("Expand", [u, a.const(np.array([2, 4, 5, 2, 8], np.int64))])
    kr = a.node("Reshape", [e, a.const(np.array([2, 4, 10, 8], np.int64))])
    m = attention_on(a, kr)
    assert_left(m, h.random_feeds(m, seed=3), "head axis")


def gqa_should_leave_an_expand_that_broadcasts_another_axis():
    a = Attn(17)
    a.inputs = [h.vi("q", F, [2, 4, 3, 8]), h.vi("k", F, [1, 2, 5, 8]),
                h.vi("v", F, [2, 4, 5, 8])]
    u = a.unsqueeze("k", 2)
    # batch 1 -> 2 as well as the new axis 1 -> 2
    e = a.node("Expand", [u, a.const(np.array([2, 2, 2, 5, 8], np.int64))])
    kr = a.node("Reshape", [e, a.const(np.array([2, 4, 5, 8], np.int64))])
    m = attention_on(a, kr)
    assert_left(m, h.random_feeds(m, seed=3), "repeats another axis")


def gqa_should_leave_queries_whose_heads_are_not_kv_times_n():
    # one query head broadcast by MatMul over the repeated K's 8; the
    # probabilities have 8 heads, so V's MatMul folds
    m, feeds = build(q_heads=1, mask=None)
    assert_left(m, feeds, "first operand's heads", folded=1)


def gqa_should_fold_k_alone_when_v_is_not_repeated():
    m, feeds = build(v_form="plain")
    out, actions = optimize(m, feeds)
    assert len(folds(actions)) == 1, actions
    # an n-major repeat needs the whole attention
    m, feeds = build(form="tile", v_form="plain")
    assert_left(m, feeds, "V's are not")


def gqa_should_fold_k_and_v_repeated_differently_each_on_its_own():
    # K: 2 heads x 4, V: 4 heads x 2, both 8 heads
    m, feeds = build(kv=2, n=4, v_kv=4)
    out, actions = optimize(m, feeds)
    assert len(folds(actions)) == 2, actions
    # an n-major attention must share one grouping
    m, feeds = build(form="tile", kv=2, n=4, v_kv=4)
    assert_left(m, feeds, "repeated differently")


def gqa_should_leave_a_repeat_read_outside_the_attention():
    m, feeds = build(k_reader=True)
    assert_left(m, feeds, "read elsewhere", folded=1)
    m, feeds = build(form="tile", k_reader=True)
    assert_left(m, feeds, "read elsewhere")


def gqa_should_leave_an_n_major_mask_that_differs_per_head():
    m, feeds = build(form="tile", mask="per_head")
    assert_left(m, feeds, "differs per head")


def gqa_should_leave_n_major_attention_at_opsets_without_allowzero():
    m, feeds = build(form="tile", opset=13)
    assert_left(m, feeds, "opset below 14")


def gqa_should_fold_kv_major_repeats_at_opsets_without_allowzero():
    # a 0 in the folds' Reshape targets copies batch and columns, exact for an
    # empty batch too, so they need no allowzero
    for dyn in (True, False):
        m, feeds = build(opset=13, dyn=dyn)
        assert_rewritten(m, feeds)
    m, feeds = build(opset=13)
    assert_rewritten(m, {k: v[:0] for k, v in feeds.items()})
    # no query rows: the 0 for n*Sq copies the empty axis
    assert_rewritten(m, {k: v[:, :, :0] if k in ("q", "mask") else v for k, v in feeds.items()})


def gqa_should_guard_n_major_targets_against_an_empty_batch_or_query():
    # the regrouped queries' Reshapes take a -1 beside the copied batch: the
    # If runs the export's form when the batch or the query is empty
    for mask in ("b1qs", None):
        m, feeds = build(form="tile", mask=mask)
        assert_rewritten(m, {k: v[:0] for k, v in feeds.items()}, "tile")
        assert_rewritten(m, {k: v[:, :, :0] if k in ("q", "mask") else v
                             for k, v in feeds.items()}, "tile")


def gqa_should_leave_a_named_query_length_below_opset_12():
    m, feeds = build(opset=11)
    assert_left(m, feeds, "opset below 12")


# ------------------------------------------------------------------ random

def gqa_should_rewrite_random_attentions_exactly():
    rng = np.random.default_rng(int(os.environ.get("GQA_FUZZ_SEED", "11")))
    cases = int(os.environ.get("GQA_FUZZ_CASES", "40"))
    forms = ["expand", "expand_before", "tile", "interleave", "mqa"]
    for c in range(cases):
        form = forms[rng.integers(len(forms))]
        kv = 1 if form == "mqa" else int(rng.choice([1, 2, 3, 4]))
        n = int(rng.choice([2, 3, 4]))
        kw = dict(kv=kv, n=n, b=int(rng.integers(1, 3)), sq=int(rng.integers(1, 4)),
                  s=int(rng.integers(1, 7)), d=int(rng.choice([4, 8])), form=form,
                  layout=str(rng.choice(["bhsd", "bshd"])) if form != "mqa" else "bhsd",
                  mask=[None, "b1qs", "b11s", "qs", "1qs"][rng.integers(5)],
                  dyn=bool(rng.integers(2)), opset=int(rng.choice([14, 17, 18])),
                  scale=str(rng.choice(["mul", "div", "none"])))
        m, feeds = build(**kw)
        try:
            out, actions = optimize(m, feeds)
            # one K/V head has no order: each MatMul folds on its own
            assert len(folds(actions)) == (1 if form in N_MAJOR and kv > 1 else 2), actions
        except AssertionError as e:
            raise AssertionError(f"case {c} {kw}: {e}") from e


if __name__ == "__main__":
    sys.exit(h.run_ort_tests(globals()))

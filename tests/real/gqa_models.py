"""Grouped-query attention exports for the real-model suite (fetch_models.py
makes them; bench/bench_gqa.py builds its models from the same modules).

Small random-weight PyTorch modules written after the published modeling code
of each family (Hugging Face transformers' modeling_llama, modeling_mistral,
modeling_qwen2, modeling_gemma and modeling_falcon): the attention block alone
(projections, rotary embeddings, the K/V head repeat, eager attention, output
projection) and a 2-layer decoder (embedding, pre-norm layers, final norm, LM
head); Llama's attention block also with repeat_interleave and with .repeat.
Each is exported by torch.onnx (TorchScript, torch 1.13) with a dynamic batch
and sequence, at opsets 14 and 17, without a cache and with one in optimum's
layout: inputs `past_key_values.{i}.key` / `.value` [batch, kv_heads, past,
head_dim], outputs `present.{i}.key` / `.value`, K and V concatenated with the
past along the sequence before they are repeated, as the modeling code of
these families does. Position ids come from the attention mask as
generate() computes them, the 4-D mask as transformers' AttentionMaskConverter
builds it (so the exports carry its Expand over the batch, which is no head
repeat), with Mistral's sliding window as an additive mask.

The K/V head repeat takes the forms exporters emit:
  expand      Hugging Face's repeat_kv: k[:, :, None].expand(b, kv, n, s, d)
              .reshape(b, kv * n, s, d) (Unsqueeze -> Expand -> Reshape);
  broadcast   Falcon's split of its fused QKV projection: torch.broadcast_to(k,
              query's shape) (written as expand, the same view, which torch 1.13
              exports), a plain Expand of the one KV head;
  interleave  torch.repeat_interleave(k, n, dim=1) over the tokens flattened to
              [b * s, kv, d], as mistral-inference repeats its cache: torch
              1.13 exports a Loop over the KV heads whose body Expands each
              one, then ConcatFromSequence;
  tile        k.repeat(1, n, 1, 1), a Tile on the head axis: query head h then
              reads KV head h mod kv, not h div n.
"""
import math

# Bump when the modules, the export or the test data below change.
STAMP = "1"

# Family shapes: small widths, but the head ratios of the real models (Llama 3
# 4:1, Qwen2-7B 7:1, Gemma one KV head with head_dim > hidden / heads, Falcon
# one KV head).
FAMILIES = {
    "llama": dict(hidden=128, heads=8, kv_heads=2, head_dim=16, inter=256, vocab=512,
                  norm="rms", act="silu", repeat="expand", theta=10000.0),
    "mistral": dict(hidden=128, heads=8, kv_heads=2, head_dim=16, inter=256, vocab=512,
                    norm="rms", act="silu", repeat="expand", theta=10000.0, window=4),
    "qwen2": dict(hidden=112, heads=7, kv_heads=1, head_dim=16, inter=224, vocab=512,
                  norm="rms", act="silu", repeat="expand", theta=1000000.0,
                  qkv_bias=True),
    "gemma": dict(hidden=64, heads=4, kv_heads=1, head_dim=32, inter=192, vocab=512,
                  norm="gemma", act="gelu_tanh", repeat="expand", theta=10000.0,
                  embed_scale=True),
    "falcon": dict(hidden=128, heads=8, kv_heads=1, head_dim=16, inter=512, vocab=512,
                   norm="layer", act="gelu", repeat="broadcast", theta=10000.0,
                   fused_qkv=True, parallel=True),
    "interleave": dict(hidden=128, heads=8, kv_heads=2, head_dim=16, inter=256,
                       vocab=512, norm="rms", act="silu", repeat="interleave",
                       theta=10000.0),
    "tile": dict(hidden=96, heads=6, kv_heads=2, head_dim=16, inter=192, vocab=512,
                 norm="rms", act="silu", repeat="tile", theta=10000.0),
}
LAYERS = 2
MAX_POSITIONS = 64
SEED = 7

# Example shapes of the export, and the other ones the test data is made at, so
# that nothing the exporter could have fixed to the example passes unseen.
# Attention layers with a cache are checked on a decoding step (one new token),
# decoders on a chunk of three after a past of eight.
EXPORT = dict(batch=2, seq=5, past=4)
TEST = {("attn", False): dict(batch=3, seq=7, past=0),
        ("attn", True): dict(batch=3, seq=1, past=9),
        ("decoder", False): dict(batch=3, seq=7, past=0),
        ("decoder", True): dict(batch=3, seq=3, past=8)}
OPSETS = (14, 17)


def recipes():
    """name -> (builder, kw, shapes, opset, batch): fetch_models' recipe form;
    "gqa" builders take no example shapes (EXPORT and TEST say them)."""
    out = {}
    for family in FAMILIES:
        # the two variants of the repeat are Llama's decoder otherwise: their
        # attention block alone shows the form
        forms = ("attn",) if family in ("interleave", "tile") else ("attn", "decoder")
        for form in forms:
            for cache in (False, True):
                for opset in OPSETS:
                    name = f"gqa_{family}_{form}{'_kv' if cache else ''}_op{opset}"
                    out[name] = ("gqa", {"family": family, "form": form, "cache": cache},
                                 None, opset, "dynamic")
    return out


def expected_repeats(kw):
    """K/V head repeats in the export: K and V in each attention block."""
    return 2 * (LAYERS if kw["form"] == "decoder" else 1)


def _modules(torch):
    nn = torch.nn
    F = torch.nn.functional

    class RMSNorm(nn.Module):
        """Llama's RMSNorm; Gemma's scales by (1 + weight), its weight starting
        at zero."""

        def __init__(self, d, gemma=False, eps=1e-6):
            super().__init__()
            self.gemma, self.eps = gemma, eps
            self.weight = nn.Parameter(torch.randn(d) * 0.1 + (0.0 if gemma else 1.0))

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            x = x * torch.rsqrt(var + self.eps)
            return x * (1.0 + self.weight) if self.gemma else self.weight * x

    def norm(c, d):
        if c["norm"] == "layer":
            ln = nn.LayerNorm(d)
            with torch.no_grad():
                ln.weight.normal_(1.0, 0.1)
                ln.bias.normal_(0.0, 0.1)
            return ln
        return RMSNorm(d, gemma=c["norm"] == "gemma")

    class Rotary(nn.Module):
        """The cos/sin tables of rotate-half rotary embeddings up to
        MAX_POSITIONS, read at the position ids (a Gather in the export)."""

        def __init__(self, dim, theta, max_positions):
            super().__init__()
            inv = 1.0 / (theta ** (torch.arange(0, dim, 2).float() / dim))
            freqs = torch.outer(torch.arange(max_positions).float(), inv)
            emb = torch.cat([freqs, freqs], -1)
            self.register_buffer("cos", emb.cos(), persistent=False)
            self.register_buffer("sin", emb.sin(), persistent=False)

        def forward(self, q, k, position_ids):
            cos = self.cos[position_ids].unsqueeze(1)
            sin = self.sin[position_ids].unsqueeze(1)
            return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], -1)

    def repeat_heads(x, n, form, heads, kv_heads, head_dim):
        if n == 1:
            return x
        if form == "expand":
            b, kv, s, d = x.shape
            return x[:, :, None, :, :].expand(b, kv, n, s, d).reshape(b, kv * n, s, d)
        if form == "broadcast":
            # Falcon writes torch.broadcast_to, which torch 1.13 cannot export;
            # expand is the same view
            b, _kv, s, d = x.shape
            return x.expand(b, heads, s, d)
        if form == "interleave":
            # Over the tokens flattened to [b * s, kv, d], as mistral-inference
            # repeats its cache. torch 1.13 emits Split -> Unsqueeze -> Expand
            # -> Reshape per KV head only where it knows the input's sizes; it
            # does not behind the rotary Gather, and then exports a Loop over
            # the heads (SplitToSequence, the Expand in the loop body,
            # ConcatFromSequence). Along dim 1 of [b, kv, s, d] the Reshape's 0
            # entries copy the wrong axis, the sequence being dynamic, and the
            # export fails in ONNX Runtime at any shape.
            b, _kv, s, d = x.shape
            y = x.transpose(1, 2).reshape(-1, kv_heads, head_dim)
            y = torch.repeat_interleave(y, n, dim=1)
            return y.reshape(b, s, kv_heads * n, d).transpose(1, 2)
        if form == "tile":
            return x.repeat(1, n, 1, 1)
        raise ValueError(form)

    def attend(q, k, v, mask, c):
        """Eager attention of q [b, heads, s, d] over k, v [b, kv_heads, t, d] with
        the additive mask [b, 1, s, t], K and V repeated to every query head in
        the family's form. Two forms of no family repeat nothing (the
        benchmark's targets): "folded" makes each KV head's query heads rows of
        one MatMul, q as [b, kv, n * s, d] against K^T [b, kv, d, t]; "grouped"
        multiplies q as [b, kv, n, s, d] by K^T as [b, kv, 1, d, t], a MatMul
        that broadcasts over the group."""
        h, d, kv = c["heads"], c["head_dim"], c["kv_heads"]
        n = h // kv
        if c["repeat"] in ("folded", "grouped"):
            b, _h, s, _d = q.shape
            t = k.shape[2]
            if c["repeat"] == "folded":
                w = torch.matmul(q.reshape(b, kv, n * s, d), k.transpose(2, 3))
                w = w.view(b, kv, n, s, t)
            else:
                w = torch.matmul(q.reshape(b, kv, n, s, d), k[:, :, None].transpose(3, 4))
            w = F.softmax(w / math.sqrt(d) + mask[:, :, None], dim=-1, dtype=torch.float32)
            if c["repeat"] == "folded":
                return torch.matmul(w.view(b, kv, n * s, t), v).view(b, h, s, d)
            return torch.matmul(w, v[:, :, None]).reshape(b, h, s, d)
        k = repeat_heads(k, n, c["repeat"], h, kv, d)
        v = repeat_heads(v, n, c["repeat"], h, kv, d)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32)
        return torch.matmul(w, v)

    class Attention(nn.Module):
        def __init__(self, c, max_positions):
            super().__init__()
            self.c = c
            h, d, kv = c["heads"], c["head_dim"], c["kv_heads"]
            if c.get("fused_qkv"):
                self.qkv = nn.Linear(c["hidden"], (h + 2 * kv) * d, bias=False)
            else:
                bias = bool(c.get("qkv_bias"))
                self.q_proj = nn.Linear(c["hidden"], h * d, bias=bias)
                self.k_proj = nn.Linear(c["hidden"], kv * d, bias=bias)
                self.v_proj = nn.Linear(c["hidden"], kv * d, bias=bias)
            self.o_proj = nn.Linear(h * d, c["hidden"], bias=False)
            self.rotary = Rotary(d, c["theta"], max_positions)

        def forward(self, x, mask, position_ids, past=None):
            c = self.c
            h, d, kv = c["heads"], c["head_dim"], c["kv_heads"]
            b, s, _ = x.shape
            if c.get("fused_qkv"):
                # Falcon's multi-query split: the query heads, then one K and one V
                # head per group
                qkv = self.qkv(x).view(b, s, h + 2 * kv, d)
                q, k, v = qkv[:, :, :h], qkv[:, :, h:h + kv], qkv[:, :, h + kv:]
                q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            else:
                q = self.q_proj(x).view(b, s, h, d).transpose(1, 2)
                k = self.k_proj(x).view(b, s, kv, d).transpose(1, 2)
                v = self.v_proj(x).view(b, s, kv, d).transpose(1, 2)
            q, k = self.rotary(q, k, position_ids)
            if past is not None:
                k = torch.cat([past[0], k], dim=2)
                v = torch.cat([past[1], v], dim=2)
            o = attend(q, k, v, mask, c).transpose(1, 2).reshape(b, s, h * d)
            return self.o_proj(o), (k, v)

    class Mlp(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.act = c["act"]
            if self.act == "gelu":  # Falcon: dense_h_to_4h, GeLU, dense_4h_to_h
                self.up = nn.Linear(c["hidden"], c["inter"], bias=False)
            else:  # Llama's gated MLP (Gemma's with GeLU-tanh)
                self.gate = nn.Linear(c["hidden"], c["inter"], bias=False)
                self.up = nn.Linear(c["hidden"], c["inter"], bias=False)
            self.down = nn.Linear(c["inter"], c["hidden"], bias=False)

        def forward(self, x):
            if self.act == "gelu":
                return self.down(F.gelu(self.up(x)))
            g = self.gate(x)
            g = F.silu(g) if self.act == "silu" else F.gelu(g, approximate="tanh")
            return self.down(g * self.up(x))

    class Layer(nn.Module):
        def __init__(self, c, max_positions):
            super().__init__()
            self.parallel = bool(c.get("parallel"))
            self.in_norm = norm(c, c["hidden"])
            if not self.parallel:
                self.post_norm = norm(c, c["hidden"])
            self.attn = Attention(c, max_positions)
            self.mlp = Mlp(c)

        def forward(self, x, mask, position_ids, past=None):
            y = self.in_norm(x)
            a, present = self.attn(y, mask, position_ids, past)
            if self.parallel:  # Falcon: attention and MLP both read the same norm
                return x + a + self.mlp(y), present
            x = x + a
            return x + self.mlp(self.post_norm(x)), present

    def positions_and_mask(attention_mask, s, c):
        """generate()'s position ids from a left-padded mask, and the 4-D
        additive mask as transformers' AttentionMaskConverter makes it (causal,
        past-aware, Mistral's sliding window, padding; finfo.min where masked)."""
        b, total = attention_mask.shape
        past = total - s
        pos = attention_mask.long().cumsum(-1) - 1
        pos = pos.masked_fill(attention_mask == 0, 1)[:, past:]
        low = torch.finfo(torch.float32).min
        causal = torch.full((s, s), low)
        cond = torch.arange(s)
        causal = causal.masked_fill(cond < (cond + 1).view(s, 1), 0.0)
        causal = torch.cat([torch.zeros(s, past), causal], dim=-1)
        if c.get("window"):
            old = 1 - torch.triu(torch.ones_like(causal, dtype=torch.int64),
                                 diagonal=past - c["window"] + 1)
            causal = causal.masked_fill(old.bool(), low)
        causal = causal[None, None, :, :].expand(b, 1, s, total)
        pad = 1.0 - attention_mask[:, None, None, :].expand(b, 1, s, total).float()
        return pos, causal.masked_fill(pad.bool(), low)

    class AttentionBlock(nn.Module):
        """One attention block alone: hidden states and mask in."""

        def __init__(self, c, cache, max_positions=MAX_POSITIONS):
            super().__init__()
            self.c, self.cache = c, cache
            self.attn = Attention(c, max_positions)

        def forward(self, hidden_states, attention_mask, *past):
            pos, mask = positions_and_mask(attention_mask, hidden_states.shape[1], self.c)
            out, present = self.attn(hidden_states, mask, pos, past if self.cache else None)
            return (out, *present) if self.cache else out

    class Decoder(nn.Module):
        """Embedding, LAYERS layers, final norm, LM head: token ids in, logits out."""

        def __init__(self, c, cache, layers=LAYERS, max_positions=MAX_POSITIONS):
            super().__init__()
            self.c, self.cache = c, cache
            self.embed = nn.Embedding(c["vocab"], c["hidden"])
            self.layers = nn.ModuleList(Layer(c, max_positions) for _ in range(layers))
            self.norm = norm(c, c["hidden"])
            self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

        def forward(self, input_ids, attention_mask, *past):
            x = self.embed(input_ids)
            if self.c.get("embed_scale"):
                x = x * (self.c["hidden"] ** 0.5)
            pos, mask = positions_and_mask(attention_mask, input_ids.shape[1], self.c)
            presents = []
            for i, layer in enumerate(self.layers):
                p = (past[2 * i], past[2 * i + 1]) if self.cache else None
                x, present = layer(x, mask, pos, p)
                presents.extend(present)
            logits = self.lm_head(self.norm(x))
            return (logits, *presents) if self.cache else logits

    return AttentionBlock, Decoder, attend


def attend_fn(torch):
    """attend(q, k, v, mask, c) of the modules: the attention the benchmark's
    attention-only models export."""
    return _modules(torch)[2]


def build(torch, kw, **over):
    """The module of a recipe's kw, seeded, in eval mode; over changes the family's
    widths (the benchmark's sizes)."""
    AttentionBlock, Decoder, _attend = _modules(torch)
    max_positions = over.pop("max_positions", MAX_POSITIONS)
    c = dict(FAMILIES[kw["family"]], **over)
    torch.manual_seed(SEED)
    if kw["form"] == "attn":
        m = AttentionBlock(c, kw["cache"], max_positions)
    else:
        m = Decoder(c, kw["cache"], max_positions=max_positions)
    return m.eval(), c


def io_names(kw):
    layers = 1 if kw["form"] == "attn" else LAYERS
    first = "hidden_states" if kw["form"] == "attn" else "input_ids"
    ins = [first, "attention_mask"]
    outs = ["attn_output" if kw["form"] == "attn" else "logits"]
    if kw["cache"]:
        for i in range(layers):
            ins += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
            outs += [f"present.{i}.key", f"present.{i}.value"]
    return ins, outs


def dynamic_axes(kw):
    ins, outs = io_names(kw)
    axes = {}
    for n in ins + outs:
        if n in ("hidden_states", "input_ids", "attn_output", "logits"):
            axes[n] = {0: "batch", 1: "sequence"}
        elif n == "attention_mask":
            axes[n] = {0: "batch", 1: "total_sequence"}
        elif n.startswith("past_key_values"):
            axes[n] = {0: "batch", 2: "past_sequence"}
        else:
            axes[n] = {0: "batch", 2: "total_sequence"}
    return axes


def make_inputs(torch, kw, c, batch, seq, past, seed):
    """Inputs by name: the second sequence of the batch left-padded by two tokens
    (its mask 0 there), so padding and generate()'s position ids matter."""
    g = torch.Generator().manual_seed(seed)
    ins, _ = io_names(kw)
    past = past if kw["cache"] else 0
    total = past + seq
    mask = torch.ones(batch, total, dtype=torch.int64)
    if batch > 1:
        mask[1, :2] = 0
    feeds = {}
    for n in ins:
        if n == "hidden_states":
            feeds[n] = torch.randn(batch, seq, c["hidden"], generator=g)
        elif n == "input_ids":
            feeds[n] = torch.randint(0, c["vocab"], (batch, seq), generator=g)
        elif n == "attention_mask":
            feeds[n] = mask
        else:
            feeds[n] = torch.randn(batch, c["kv_heads"], past, c["head_dim"], generator=g)
    return feeds


def export(kw, opset, f, m=None, c=None, example=None):
    """torch.onnx.export of the recipe's module to f (a path or a file object);
    returns (module, family config)."""
    import torch
    if m is None:
        m, c = build(torch, kw)
    example = example or EXPORT
    feeds = make_inputs(torch, kw, c, seed=SEED + 1, **example)
    ins, outs = io_names(kw)
    import warnings
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, tuple(feeds[n] for n in ins), f, opset_version=opset,
                          input_names=ins, output_names=outs,
                          dynamic_axes=dynamic_axes(kw))
    return m, c


def make(kw, opset, path):
    """Export the recipe to path; returns (inputs, outputs, meta): the test
    data (name, array) in graph order at TEST's shapes, PyTorch's outputs on it,
    and what meta.json should say of the model."""
    import torch
    m, c = export(kw, opset, path)
    shape = TEST[(kw["form"], kw["cache"])]
    feeds = make_inputs(torch, kw, c, seed=SEED + 2, **shape)
    ins, outs = io_names(kw)
    with torch.no_grad():
        got = m(*(feeds[n] for n in ins))
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    inputs = [(n, feeds[n].numpy()) for n in ins]
    outputs = [(n, o.numpy()) for n, o in zip(outs, got)]
    meta = {"family": kw["family"], "form": kw["form"], "cache": kw["cache"],
            "heads": c["heads"], "kv_heads": c["kv_heads"], "head_dim": c["head_dim"],
            "repeat": c["repeat"], "kv_repeats": expected_repeats(kw),
            "test_shape": shape, "export_shape": EXPORT}
    return inputs, outputs, meta


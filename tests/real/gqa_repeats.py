#!/usr/bin/python3
"""Count the K/V head repeats of grouped-query attention in a model: the
Expand or Tile nodes (or a Loop whose body expands, as torch 1.13 exports
repeat_interleave) whose output reaches an attention MatMul, one whose operands
are both computed, through nothing but layout ops (Reshape, Transpose,
Unsqueeze, Squeeze, Flatten, Identity, Cast, ConcatFromSequence), and that
multiply the operand's leading (batch and head) dims while leaving its last two
(sequence and head size) alone. Such a repeat materializes K or V n times over
(the whole KV cache, when there is one) for the MatMul to read.

Exporters build the repeat's shape from Shape/Gather/Concat chains over a
dynamic batch and sequence, so the shapes are taken from a run: every
intermediate value becomes a graph output and ONNX Runtime runs the model on
its saved inputs. A mask expanded over the batch and added to the scores, or a
Tile over the batch before a projection, reach no attention MatMul through
layout ops and are not counted.

    /usr/bin/python3 tests/real/gqa_repeats.py [--tileopt PATH] [--cache DIR]
                                               [NAME_SUBSTRING...]

The count is of the main graph, where the saved inputs (a few query tokens)
run. Where the query length is a named dim, tileopt's gqa pass writes an If
whose other branch keeps the export's repeat for many query rows (where it is
faster); such Ifs are counted apart.

counts the repeats of every model of the real-model cache whose meta.json
names how many it holds (the GQA exports and the shared modern models), in the
model and in `tileopt optimize`'s output of it, and prints a table and the line
"N exports, M had every repeat removed". Exit 1 when the count of an original
differs from its meta.json (the counter or the export is wrong) or an output
holds more repeats than its original; how many tileopt removes is reported,
not judged. test_real.py's `repeats` stage runs the same checks.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("SRCDIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "harness"))
import ort  # noqa: E402

LAYOUT = {"Reshape", "Transpose", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Cast"}
# Outputs ORT cannot hand back as tensors (sequences, and whatever a control-flow
# node may produce): never asked for.
NOT_TENSORS = {"SplitToSequence", "SequenceEmpty", "SequenceInsert", "SequenceConstruct",
               "SequenceErase", "Loop", "If", "Scan"}


def _subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def _expands_inside(node):
    """Whether a control-flow node's body holds an Expand or a Tile."""
    for g in _subgraphs(node):
        for n in g.node:
            if n.op_type in ("Expand", "Tile") or _expands_inside(n):
                return True
    return False


def _outer_names(node):
    """Names a node's bodies read from the enclosing graph."""
    names = set()
    for g in _subgraphs(node):
        local = {i.name for i in g.input} | {t.name for t in g.initializer}
        for n in g.node:
            local.update(n.output)
        for n in g.node:
            names.update(i for i in n.input if i and i not in local)
            names.update(_outer_names(n) - local)
    return names


def value_shapes(model_path, feeds):
    """{name: shape} of every tensor the main graph computes, from one ONNX
    Runtime run of the model on feeds (dict name -> array)."""
    m = onnx.load(model_path)
    listed = {o.name for o in m.graph.output}
    for n in m.graph.node:
        if n.op_type in NOT_TENSORS:
            continue
        for o in n.output:
            if o and o not in listed:
                m.graph.output.append(onnx.ValueInfoProto(name=o))
                listed.add(o)
    with tempfile.TemporaryDirectory(prefix="gqa_repeats_") as tmp:
        p = os.path.join(tmp, "all_values.onnx")
        onnx.save(m, p)
        outs = ort.run_ort(p, feeds)
    shapes = {o.name: tuple(a.shape) for o, a in zip(m.graph.output, outs)}
    shapes.update({k: tuple(np.shape(v)) for k, v in feeds.items()})
    for t in m.graph.initializer:
        shapes[t.name] = tuple(t.dims)
    return shapes


def find_repeats(model_path, feeds):
    """The K/V head repeats of the model: a list of dicts with the repeating
    node, its op (Expand, Tile, or Loop(Expand)), the path to the MatMul, the
    factor, and the shapes before and after."""
    m = onnx.load(model_path)
    g = m.graph
    shapes = value_shapes(model_path, feeds)
    producer = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    constant = {t.name for t in g.initializer}
    constant.update(o for n in g.node if n.op_type == "Constant" for o in n.output)

    sites = []
    for n in g.node:
        if n.op_type in ("Expand", "Tile"):
            sites.append((n, n.op_type, n.input[0], n.output[0]))
        elif n.op_type == "Loop" and _expands_inside(n):
            # torch 1.13's repeat_interleave: SplitToSequence of the input read
            # by the body, the body's Expand per piece, ConcatFromSequence after
            # (the body splits the repeat counts too: the data is the piece
            # of rank 3 or more)
            split = [producer[x].input[0] for x in _outer_names(n)
                     if x in producer and producer[x].op_type == "SplitToSequence"
                     and len(shapes.get(producer[x].input[0], ())) >= 3]
            joined = [c for o in n.output for c in consumers.get(o, [])
                      if c.op_type == "ConcatFromSequence"]
            if len(split) == 1 and len(joined) == 1:
                sites.append((n, "Loop(Expand)", split[0], joined[0].output[0]))

    found = []
    for node, op, src, dst in sites:
        if src not in shapes or dst not in shapes:
            continue
        s_in, s_out = shapes[src], shapes[dst]
        n_in, n_out = int(np.prod(s_in)), int(np.prod(s_out))
        if n_in == 0 or n_out <= n_in or n_out % n_in:
            continue
        # forward through layout ops to the MatMuls this value feeds
        todo, seen = [(dst, [])], set()
        while todo:
            name, path = todo.pop()
            for c in consumers.get(name, []):
                if c.op_type in LAYOUT:
                    for o in c.output:
                        if o not in seen:
                            seen.add(o)
                            todo.append((o, path + [c.op_type]))
                elif c.op_type == "MatMul":
                    other = c.input[1] if c.input[0] == name else c.input[0]
                    s_op = shapes.get(name)
                    if other in constant or s_op is None or len(s_op) < 3:
                        continue
                    inner = s_op[-1] * s_op[-2]
                    lead_op = int(np.prod(s_op[:-2]))
                    if inner == 0 or n_in % inner or lead_op != (n_in // inner) * (
                            n_out // n_in):
                        continue
                    found.append({"node": node.name or f"#{list(g.node).index(node)}",
                                  "op": op, "path": path + ["MatMul"],
                                  "matmul": c.name, "factor": n_out // n_in,
                                  "input_shape": list(s_in), "output_shape": list(s_out),
                                  "operand_shape": list(s_op)})
                    todo = []  # one site counts once, whatever else it feeds
                    break
    return found


def feeds_of(folder):
    """The saved inputs of a real-model folder, by name."""
    d = os.path.join(folder, "test_data_set_0")
    files = sorted((f for f in os.listdir(d) if f.startswith("input_")),
                   key=lambda f: int(f[6:-3]))
    out = {}
    for f in files:
        t = onnx.load_tensor(os.path.join(d, f))
        out[t.name] = numpy_helper.to_array(t)
    return out


def kept_for_long_queries(model_path):
    """The Ifs of tileopt's gqa pass in the main graph: each keeps the export's
    repeat for many query rows."""
    g = onnx.load(model_path, load_external_data=False).graph
    return sum(n.op_type == "If" and n.doc_string.startswith("tileopt gqa") for n in g.node)


def judge(name, expected, before, after):
    """Problems with the counts of one model (empty when none): the original
    must hold what its meta says, the output no more than the original."""
    bad = []
    if len(before) != expected:
        bad.append(f"{name}: {len(before)} K/V repeats found in the original, "
                   f"{expected} expected ({', '.join(r['node'] for r in before) or 'none'})")
    if after is not None and len(after) > len(before):
        bad.append(f"{name}: tileopt's output holds {len(after)} K/V repeats, the "
                   f"original {len(before)}")
    return bad


def summary(rows):
    """rows: (name, repeats before, repeats after, those kept for long queries).
    The closing line."""
    exports = [r for r in rows if r[1] > 0]
    removed = [r for r in exports if r[2] == 0]
    return (f"K/V head repeats: {len(exports)} exports hold "
            f"{sum(r[1] for r in exports)}, tileopt's outputs "
            f"{sum(r[2] for r in exports)} (beside {sum(r[3] for r in exports)} Ifs that "
            f"keep the export's form for long queries only); {len(exports)} exports, "
            f"{len(removed)} had every repeat removed")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="only models whose name contains one")
    ap.add_argument("--tileopt", default=os.environ.get("TILEOPT"))
    ap.add_argument("--cache", default=os.environ.get(
        "TILEOPT_REAL_CACHE", os.path.join(SRCDIR, ".cache", "real")))
    ap.add_argument("--json", help="write the sites found to this file")
    args = ap.parse_args(argv)
    tileopt = args.tileopt or os.path.join(SRCDIR, "build", "release", "tools", "tileopt")
    if not os.path.isfile(tileopt):
        sys.exit(f"gqa_repeats: no tileopt at {tileopt} (build it, or pass --tileopt)")
    rows, bad, report = [], [], {}
    print(f"{'model':40} {'opset':>5} {'nodes':>11} {'repeats':>8}  forms")
    for name in sorted(os.listdir(args.cache)):
        folder = os.path.join(args.cache, name)
        try:
            with open(os.path.join(folder, "meta.json")) as f:
                meta = json.load(f)
        except (OSError, ValueError):
            continue
        if "kv_repeats" not in meta or (args.names and
                                        not any(s in name for s in args.names)):
            continue
        model = os.path.join(folder, "model.onnx")
        feeds = feeds_of(folder)
        with tempfile.TemporaryDirectory(prefix="gqa_repeats_") as tmp:
            opt = os.path.join(tmp, "opt.onnx")
            cp = subprocess.run([tileopt, "optimize", model, "-o", opt, "--quiet"],
                                capture_output=True, text=True)
            before = find_repeats(model, feeds)
            after = find_repeats(opt, feeds) if cp.returncode == 0 else None
            kept = kept_for_long_queries(opt) if after is not None else 0
            nodes = (len(onnx.load(model, load_external_data=False).graph.node),
                     len(onnx.load(opt, load_external_data=False).graph.node)
                     if after is not None else None)
        bad += judge(name, meta["kv_repeats"], before, after)
        if after is None:
            bad.append(f"{name}: tileopt optimize failed: {cp.stderr.strip()[-300:]}")
        n_after = len(after) if after is not None else len(before)
        rows.append((name, len(before), n_after, kept))
        forms = sorted({" -> ".join([r["op"]] + r["path"]) for r in before})
        print(f"{name:40} {meta.get('opset', ''):>5} {nodes[0]:>5}->{nodes[1] or '-':<5} "
              f"{len(before):>3}->{n_after:<3}  {'; '.join(forms) or '-'}")
        report[name] = {"before": before, "after": after}
    print(summary(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    for b in bad:
        print(f"FAIL: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

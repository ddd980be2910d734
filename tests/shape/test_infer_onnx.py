"""Shape inference checked against onnx.shape_inference on ONNX's backend test models.

For every model under /usr/share/libonnx-testdata/data/*/*/model.onnx, run
`tileopt optimize M -o OUT --passes none --infer-shapes` and compare each value's
type in OUT (value_info and graph outputs) with what onnx.shape_inference infers,
both starting from a copy of the model without value_info and output shapes:
whenever both know an element type, a rank or a dim, they must agree. Prints the
number of agreeing dims and values; fails on any disagreement, and when too few
dims were compared for the check to mean anything.

INFER_CMD (optional, for development): a command taking IN OUT that writes the
inferred model, used instead of the tileopt CLI.
"""
import glob
import os
import shlex
import subprocess
import sys
import tempfile

import onnx
import onnx.shape_inference

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))

DATA = os.environ.get("ONNX_TESTDATA", "/usr/share/libonnx-testdata/data")
MIN_DIMS = int(os.environ.get("INFER_MIN_DIMS", "3500"))


def run_infer(src, dst):
    cmd = os.environ.get("INFER_CMD")
    if cmd:
        argv = shlex.split(cmd) + [src, dst]
    else:
        import harness as h
        argv = [h.tileopt_path(), "optimize", src, "-o", dst, "--passes", "none",
                "--infer-shapes", "--quiet"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def tensor_types(graph, acc, prefix=""):
    """name -> (elem, dims or None) for value_info and outputs, subgraphs included."""
    for vi in list(graph.value_info) + list(graph.output):
        t = vi.type
        if t.WhichOneof("value") != "tensor_type":
            continue
        tt = t.tensor_type
        dims = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.WhichOneof("value") == "dim_value" else None
                    for d in tt.shape.dim]
        acc[prefix + vi.name] = (tt.elem_type, dims)
    for i, node in enumerate(graph.node):
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                tensor_types(a.g, acc, f"{prefix}{node.name or i}/{a.name}/")
    return acc


def strip(graph):
    """Drop what the model declares about non-input values, so both sides infer."""
    del graph.value_info[:]
    for o in graph.output:
        if o.type.WhichOneof("value") == "tensor_type":
            o.type.tensor_type.ClearField("shape")
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                strip(a.g)


def compare(name, ours, ref, stats):
    bad = []
    for v, (e1, d1) in ours.items():
        if v not in ref:
            continue
        e2, d2 = ref[v]
        if e1 and e2:
            if e1 != e2:
                bad.append(f"{v}: elem ours {e1} onnx {e2}")
                continue
            stats["elems"] += 1
        if d1 is None or d2 is None:
            if d2 is not None:
                stats["onnx_only_rank"] += 1
                if os.environ.get("INFER_VERBOSE"):
                    print(f"onnx-only rank: {name}: {v} {d2}")
            continue
        if len(d1) != len(d2):
            bad.append(f"{v}: rank ours {len(d1)} onnx {len(d2)} ({d1} vs {d2})")
            continue
        stats["ranks"] += 1
        ok = True
        for a, b in zip(d1, d2):
            if a is not None and b is not None:
                if a != b:
                    ok = False
                else:
                    stats["dims"] += 1
            elif b is not None:
                stats["onnx_only"] += 1
            elif a is not None:
                stats["ours_only"] += 1
        if not ok:
            bad.append(f"{v}: dims ours {d1} onnx {d2}")
        else:
            stats["values"] += 1
    return [f"{name}: {b}" for b in bad]


def infer_shapes_should_agree_with_onnx():
    models = sorted(glob.glob(os.path.join(DATA, "*", "*", "model.onnx")))
    assert models, f"no test models under {DATA}"
    stats = dict(models=0, elems=0, ranks=0, dims=0, values=0, onnx_only=0, ours_only=0,
                 refused=0, onnx_only_rank=0)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(models):
            name = os.path.relpath(os.path.dirname(path), DATA)
            src = os.path.join(tmp, f"{i}.in.onnx")
            try:
                m = onnx.load(path)
                strip(m.graph)
                onnx.save(m, src)
                ref = tensor_types(onnx.shape_inference.infer_shapes(m).graph, {})
            except Exception:  # onnx itself cannot infer it: nothing to compare
                continue
            out = os.path.join(tmp, f"{i}.onnx")
            cp = run_infer(src, out)
            if cp.returncode != 0:
                # a model tileopt refuses to load is not an inference disagreement,
                # but a conflict with the declared types is
                if "conflicts with the declared" in cp.stderr:
                    problems.append(f"{name}: {cp.stderr.strip()}")
                stats["refused"] += 1
                continue
            ours = tensor_types(onnx.load(out).graph, {})
            stats["models"] += 1
            problems += compare(name, ours, ref, stats)
    print("models compared: {models} (refused by tileopt: {refused})".format(**stats))
    print("agreeing: {elems} element types, {ranks} ranks, {dims} dims, "
          "{values} whole values".format(**stats))
    print("dims only onnx knows: {onnx_only}; only tileopt knows: {ours_only}; "
          "shapes only onnx knows: {onnx_only_rank}".format(**stats))
    for p in problems[:50]:
        print("DISAGREE", p)
    assert not problems, f"{len(problems)} disagreements with onnx.shape_inference"
    assert stats["dims"] >= MIN_DIMS, f"only {stats['dims']} dims compared"


if __name__ == "__main__":
    infer_shapes_should_agree_with_onnx()
    print("ok infer_shapes_should_agree_with_onnx")

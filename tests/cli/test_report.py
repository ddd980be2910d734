#!/usr/bin/python3
"""The JSON report of `tileopt optimize --report FILE|-`: valid against
tests/report.schema.json, and its input/output summaries agree with what onnx
says about the files (see the schema for how each count is defined)."""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "tools"))
import harness as h  # noqa: E402
from validate_report import report_errors  # noqa: E402

SAMPLES = ["legacy_tile1.onnx", "const_tile.onnx", "shape_repeats.onnx",
           "tile_add.onnx", "bias_tile.onnx"]


def _graphs(g):
    """g and every subgraph below it (attributes of type GRAPH and GRAPHS)."""
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    yield from _graphs(sg)


def _tensor_bytes(t):
    if t.data_type == TensorProto.STRING:
        return sum(len(s) for s in t.string_data)
    count = int(np.prod(list(t.dims), dtype=np.int64)) if len(t.dims) else 1
    size = {TensorProto.BFLOAT16: 2, TensorProto.FLOAT16: 2}.get(t.data_type)
    if size is None:
        size = helper.tensor_dtype_to_np_dtype(t.data_type).itemsize \
            if hasattr(helper, "tensor_dtype_to_np_dtype") else \
            onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type].itemsize
    return count * size


def expected_summary(path):
    """The summary object the report should give for the model file at path."""
    m = onnx.load(path, load_external_data=False)
    graphs = list(_graphs(m.graph))
    nodes = sum(len(g.node) for g in graphs)
    tiles = sum(1 for g in graphs for n in g.node
                if n.op_type == "Tile" and n.domain in ("", "ai.onnx"))
    init_bytes = sum(_tensor_bytes(t) for g in graphs for t in g.initializer)
    return {
        "path": path,
        "ir_version": m.ir_version,
        "opset_import": [{"domain": o.domain, "version": o.version}
                         for o in m.opset_import],
        "nodes": nodes,
        "tiles": tiles,
        "initializer_bytes": init_bytes,
        "file_bytes": os.path.getsize(path),
    }


def check_summary(got, path, what):
    want = expected_summary(path)
    diffs = [f"{k}: {got.get(k)!r}, expected {v!r}" for k, v in want.items()
             if got.get(k) != v]
    if diffs:
        raise AssertionError(f"{what} summary of {path}:\n  " + "\n  ".join(diffs))


def validate(report, what):
    errors = report_errors(report)
    if errors:
        raise AssertionError(f"{what}: report invalid:\n  " + "\n  ".join(errors) +
                             f"\n{json.dumps(report, indent=1)[:2000]}")


def optimize_with_report(src, dst, *extra):
    """Run optimize --report FILE; returns the parsed report."""
    rep = dst + ".report.json"
    h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--report", rep, "--quiet",
                          *extra))
    with open(rep, encoding="utf-8") as f:
        return json.load(f)


def report_should_match_onnx_for_every_sample_model():
    with h.tempdir() as d:
        for name in SAMPLES:
            src = os.path.join(h.MODELS, name)
            dst = os.path.join(d, name)
            r = optimize_with_report(src, dst)
            validate(r, name)
            if r["tool"] != "tileopt":
                raise AssertionError(f"{name}: tool {r['tool']!r}")
            check_summary(r["input"], src, f"{name}: input")
            check_summary(r["output"], dst, f"{name}: output")
            if any(p["duration_ms"] < 0 for p in r["passes"]):
                raise AssertionError(f"{name}: negative duration")


def report_should_have_no_passes_and_equal_counts_with_passes_none():
    with h.tempdir() as d:
        src = os.path.join(h.MODELS, "legacy_tile1.onnx")
        dst = os.path.join(d, "o.onnx")
        r = optimize_with_report(src, dst, "--passes", "none")
        validate(r, "--passes none")
        if r["passes"] != []:
            raise AssertionError(f"--passes none ran passes: {r['passes']}")
        check_summary(r["input"], src, "input")
        check_summary(r["output"], dst, "output")
        for k in ("ir_version", "opset_import", "nodes", "tiles", "initializer_bytes"):
            if r["input"][k] != r["output"][k]:
                raise AssertionError(f"--passes none changed {k}")


def report_should_go_to_stdout_with_dash():
    with h.tempdir() as d:
        src = os.path.join(h.MODELS, "tile_add.onnx")
        dst = os.path.join(d, "o.onnx")
        for extra in (["--quiet"], []):
            cp = h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--report", "-",
                                       *extra))
            try:
                r = json.loads(cp.stdout)
            except ValueError as e:
                raise AssertionError(f"--report - {extra}: stdout is not one JSON "
                                     f"object ({e}): {cp.stdout[:500]!r}") from e
            validate(r, f"--report - {extra}")
            check_summary(r["input"], src, "input")
            check_summary(r["output"], dst, "output")


def report_should_list_passes_in_the_order_run():
    with h.tempdir() as d:
        src = os.path.join(h.MODELS, "legacy_tile1.onnx")
        default = optimize_with_report(src, os.path.join(d, "a.onnx"))
        names = [p["name"] for p in default["passes"]]
        if len(names) < 2:
            return  # fewer than two passes exist yet: no order to check
        rev = list(reversed(names))
        r = optimize_with_report(src, os.path.join(d, "b.onnx"),
                                 "--passes", ",".join(rev))
        validate(r, "reversed passes")
        got = [p["name"] for p in r["passes"]]
        if got != rev:
            raise AssertionError(f"passes run {got}, asked for {rev}")


def _subgraph_model():
    """Tiles and initializers in the main graph and inside an If's branches."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    then_g = helper.make_graph(
        [helper.make_node("Tile", ["x", "r_then"], ["t1"], name="tile_then"),
         helper.make_node("Relu", ["t1"], ["o_then"], name="relu_then")],
        "then", [], [helper.make_tensor_value_info("o_then", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.ones(2, np.int64), "r_then")])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["o_else"], name="neg_else")],
        "else", [], [helper.make_tensor_value_info("o_else", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("Tile", ["x", "r"], ["t"], name="tile_main"),
        helper.make_node("ReduceSum", ["t"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
        helper.make_node("If", ["c"], ["y"], name="if0",
                         then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(
        nodes, "sub", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.ones(2, np.int64), "r"),
                     numpy_helper.from_array(np.array(0, np.float32), "zero"),
                     numpy_helper.from_array(np.array(["ab", "cde"], dtype=object),
                                             "unused_strings")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def report_should_count_nodes_tiles_and_bytes_inside_subgraphs():
    with h.tempdir() as d:
        src = os.path.join(d, "sub.onnx")
        onnx.save(_subgraph_model(), src)
        r = optimize_with_report(src, os.path.join(d, "o.onnx"), "--passes", "none")
        validate(r, "subgraph model")
        check_summary(r["input"], src, "input")
        # Spelled out, so a wrong expected_summary cannot hide a wrong count.
        want = {"nodes": 7, "tiles": 2, "initializer_bytes": 16 + 4 + 5 + 16}
        got = {k: r["input"][k] for k in want}
        if got != want:
            raise AssertionError(f"subgraph counts {got}, expected {want}")


def report_should_count_external_data_bytes_but_not_in_file_bytes():
    with h.tempdir() as d:
        m = onnx.load(os.path.join(h.MODELS, "bias_tile.onnx"))
        src = os.path.join(d, "ext.onnx")
        onnx.save_model(m, src, save_as_external_data=True, location="w.bin",
                        size_threshold=0)
        r = optimize_with_report(src, os.path.join(d, "o.onnx"), "--passes", "none")
        validate(r, "external data model")
        check_summary(r["input"], src, "input")
        if r["input"]["initializer_bytes"] != 16 * 4 + 4 * 8:
            raise AssertionError(f"initializer_bytes {r['input']['initializer_bytes']}")


def report_validation_should_reject_a_broken_report():
    good = {"tool": "tileopt", "version": "0.1.0",
            "input": expected_summary(os.path.join(h.MODELS, "tile_add.onnx")),
            "output": expected_summary(os.path.join(h.MODELS, "tile_add.onnx")),
            "passes": [{"name": "fuse", "duration_ms": 1.5, "changed": False,
                        "actions": [{"node": "tile", "op": "Tile",
                                     "action": "skipped", "reason": "why"}]}],
            "warnings": []}
    validate(good, "hand-made report")
    broken = [
        ("no tool", lambda r: r.pop("tool")),
        ("unknown top key", lambda r: r.update(extra=1)),
        ("skipped without reason", lambda r: r["passes"][0]["actions"][0].pop("reason")),
        ("unknown action", lambda r: r["passes"][0]["actions"][0].update(action="zapped")),
        ("negative nodes", lambda r: r["input"].update(nodes=-1)),
        ("opset as dict", lambda r: r["output"].update(opset_import={"": 13})),
    ]
    for what, mutate in broken:
        r = json.loads(json.dumps(good))
        mutate(r)
        if not report_errors(r):
            raise AssertionError(f"schema accepted a report with {what}")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

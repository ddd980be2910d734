#!/usr/bin/python3
"""The JSON report of `tileopt optimize --report FILE|-`: valid against
tests/report.schema.json, its input/output summaries agree with what onnx says
about the files (see the schema for how each count is defined), and it names
every difference between the input and the output model (model_diff)."""
import glob
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402
from model_diff import unreported_differences  # noqa: E402
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
                        "nodes_changed": 0, "nodes_skipped": 1,
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
        ("a skip not counted", lambda r: r["passes"][0].update(nodes_skipped=0)),
        ("opset as dict", lambda r: r["output"].update(opset_import={"": 13})),
        ("changes in an unchanged pass",
         lambda r: r["passes"][0].update(changes={"initializers_removed": ["w"]})),
        ("empty changes", lambda r: r["passes"][0].update(changed=True, changes={})),
        ("unknown change", lambda r: r["passes"][0].update(changed=True,
                                                           changes={"nodes_gone": 1})),
        ("subgraph name without graph",
         lambda r: r["passes"][0].update(changed=True,
                                         changes={"value_info_removed": [{"name": "t"}]})),
    ]
    for what, mutate in broken:
        r = json.loads(json.dumps(good))
        mutate(r)
        if not report_errors(r):
            raise AssertionError(f"schema accepted a report with {what}")



def _swept_model():
    """Opset 17 with what the fold pass's sweep drops: three initializers nobody
    reads, value_info of a value that does not exist, a node nobody reads; and an
    unused initializer inside an If branch."""
    F = TensorProto.FLOAT
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["o_then"], name="relu_then")], "then", [],
        [helper.make_tensor_value_info("o_then", F, [2, 3])],
        initializer=[numpy_helper.from_array(np.ones(2, np.float32), "then_unused")])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["o_else"], name="neg_else")], "else", [],
        [helper.make_tensor_value_info("o_else", F, [2, 3])])
    g = helper.make_graph(
        [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
         helper.make_node("Relu", ["t"], ["y"], name="relu"),
         helper.make_node("Neg", ["x"], ["dead"], name="dead_neg"),
         helper.make_node("If", ["c"], ["z"], name="if0", then_branch=then_g,
                          else_branch=else_g)],
        "swept", [helper.make_tensor_value_info("x", F, [2, 3]),
                  helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", F, [4, 3]),
         helper.make_tensor_value_info("z", F, [2, 3])],
        initializer=[numpy_helper.from_array(np.array([2, 1], np.int64), "reps")] +
        [numpy_helper.from_array(np.ones(3, np.float32), f"unused{i}") for i in range(3)],
        value_info=[helper.make_tensor_value_info("ghost", F, [1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def report_should_name_what_the_sweep_drops():
    with h.tempdir() as d:
        src, dst = os.path.join(d, "swept.onnx"), os.path.join(d, "o.onnx")
        onnx.save(_swept_model(), src)
        for extra in ((), ("--target-opset", "17")):
            r = optimize_with_report(src, dst, *extra)
            validate(r, "swept model")
            errs = unreported_differences(src, dst, r)
            assert not errs, errs
            fold = {p["name"]: p for p in r["passes"]}["fold"]
            assert fold["changed"] is True, fold
            assert fold["changes"]["initializers_removed"] == \
                ["unused0", "unused1", "unused2",
                 {"name": "then_unused", "graph": "if0/then_branch"}], fold["changes"]
            assert fold["changes"]["value_info_removed"] == ["ghost"], fold["changes"]
            assert [a for a in fold["actions"] if a["action"] == "eliminated"] == \
                [{"node": "dead_neg", "op": "Neg", "action": "eliminated",
                  "rule": "outputs unused"}], fold["actions"]
            cp = h.expect_ok(h.tileopt("optimize", src, "-o", dst, *extra))
            assert "fold" in cp.stdout and \
                "4 initializers removed, 1 value_info removed" in cp.stdout, cp.stdout
            assert "opset" not in cp.stdout, cp.stdout


def report_should_name_every_difference_between_input_and_output():
    """Over ONNX's test models and the samples: every initializer, graph input and
    value_info gone or added, every named node gone, every opset and IR change
    is in the report (tests/harness/model_diff.py), with the default passes and
    with --fold-scope all."""
    data = "/usr/share/libonnx-testdata/data"
    models = sorted(glob.glob(os.path.join(data, "pytorch-*", "*", "model.onnx")) +
                    glob.glob(os.path.join(data, "simple", "*", "model.onnx")))
    models += [os.path.join(h.MODELS, s) for s in SAMPLES]
    nodes = sorted(glob.glob(os.path.join(data, "node", "*", "model.onnx")))
    runs = [(m, ()) for m in models] + [(m, ("--fold-scope", "all")) for m in nodes[::4]]
    assert len(runs) > 300, len(runs)
    changed = 0
    with h.tempdir() as d:
        for k, (src, extra) in enumerate(runs):
            dst = os.path.join(d, f"{k}.onnx")
            r = optimize_with_report(src, dst, *extra)
            errs = report_errors(r) + unreported_differences(src, dst, r)
            if errs:
                raise AssertionError(f"{src} {extra}:\n  " + "\n  ".join(errs))
            changed += any(p.get("changes") for p in r["passes"])
    # the corpus must exercise the check: IR-3 models lose initializer inputs,
    # fold sweeps what it leaves unread
    assert changed > 100, changed


def report_diff_should_catch_what_a_report_leaves_out():
    with h.tempdir() as d:
        src, dst = os.path.join(d, "swept.onnx"), os.path.join(d, "o.onnx")
        onnx.save(_swept_model(), src)
        r = optimize_with_report(src, dst)
        assert not unreported_differences(src, dst, r)
        fold = {p["name"]: p for p in r["passes"]}["fold"]
        silent = json.loads(json.dumps(r))
        for p in silent["passes"]:
            p.pop("changes", None)
            p["actions"] = [a for a in p["actions"] if a["node"] != "dead_neg"]
        errs = unreported_differences(src, dst, silent)
        for what in ("unused0", "then_unused", "ghost", "dead_neg", "changed is True"):
            assert any(what in e for e in errs), (what, errs)
        # nor may a report claim what did not happen
        false = json.loads(json.dumps(r))
        {p["name"]: p for p in false["passes"]}["fold"]["changes"][
            "initializers_removed"].append("reps")
        assert any("'reps') reported removed" in e
                   for e in unreported_differences(src, dst, false)), fold
        # opset and IR steps
        m = onnx.load(src)
        m.opset_import[0].version, m.ir_version = 11, 6
        onnx.save(m, src)
        r = optimize_with_report(src, dst, "--target-opset", "13")
        assert not unreported_differences(src, dst, r)
        for p in r["passes"]:
            p.get("changes", {}).pop("opset_import", None)
            p.get("changes", {}).pop("ir_version", None)
        errs = unreported_differences(src, dst, r)
        assert any("opset '' 11 -> 13" in e for e in errs) and \
            any("IR 6 -> 7" in e for e in errs), errs


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

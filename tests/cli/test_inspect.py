#!/usr/bin/python3
"""`tileopt inspect MODEL [--json]` on the sample models: IR version, opsets,
node/initializer counts, every Tile with its form (Tile-1 / Tile-6), shapes and
repeats where known. --json output is checked against tests/inspect.schema.json
and exact expected values; the text output must mention the same facts."""
import json
import os
import re
import sys

import jsonschema
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

INSPECT_SCHEMA = os.path.join(h.SRCDIR, "tests", "inspect.schema.json")

# model -> expected top-level facts and Tiles (node, form, input, repeats, output).
# repeats None: computed at run time, so inspect may give null (or the folded value
# in ANY_REPEATS).
EXPECTED = {
    "legacy_tile1.onnx": dict(ir_version=3, opset_import=[{"domain": "", "version": 5}],
                              nodes=3, initializers=3,
                              tiles=[("tile", "Tile-1", [2, 3, 4], [1, 2, 1], [2, 6, 4])]),
    "const_tile.onnx": dict(ir_version=8, opset_import=[{"domain": "", "version": 13}],
                            nodes=3, initializers=1,
                            tiles=[("tile_const", "Tile-6", [2, 3], [3, 2], [6, 6])]),
    "shape_repeats.onnx": dict(ir_version=8, opset_import=[{"domain": "", "version": 13}],
                               nodes=5, initializers=3,
                               tiles=[("tile", "Tile-6", [2, 3, 4], None, [4, 3, 4])]),
    "tile_add.onnx": dict(ir_version=8, opset_import=[{"domain": "", "version": 13}],
                          nodes=2, initializers=1,
                          tiles=[("tile", "Tile-6", [64, 256], [16, 4], [1024, 1024])]),
    "bias_tile.onnx": dict(ir_version=8, opset_import=[{"domain": "", "version": 13}],
                           nodes=2, initializers=2,
                           tiles=[("tile_bias", "Tile-6", [1, 16, 1, 1], [2, 1, 8, 8],
                                   [2, 16, 8, 8])]),
}
ANY_REPEATS = {"shape_repeats.onnx": [2, 1, 1]}


def inspect_json(path):
    cp = h.expect_ok(h.tileopt("inspect", path, "--json"))
    try:
        j = json.loads(cp.stdout)
    except ValueError as e:
        raise AssertionError(f"inspect --json {path}: not JSON ({e}): "
                             f"{cp.stdout[:500]!r}") from e
    with open(INSPECT_SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(j)]
    if errors:
        raise AssertionError(f"inspect --json {path}: schema:\n  " + "\n  ".join(errors)
                             + f"\n{json.dumps(j, indent=1)[:1500]}")
    return j


def inspect_should_report_counts_and_tiles_of_sample_models_as_json():
    problems = []
    for name, want in EXPECTED.items():
        j = inspect_json(os.path.join(h.MODELS, name))
        for k in ("ir_version", "opset_import", "nodes", "initializers"):
            if j.get(k) != want[k]:
                problems.append(f"{name}: {k} {j.get(k)!r}, expected {want[k]!r}")
        tiles = j.get("tiles", [])
        if len(tiles) != len(want["tiles"]):
            problems.append(f"{name}: {len(tiles)} tiles, expected {len(want['tiles'])}")
            continue
        for t, (node, form, ishape, reps, oshape) in zip(tiles, want["tiles"]):
            got = (t.get("node"), t.get("form"), t.get("input_shape"),
                   t.get("repeats"), t.get("output_shape"))
            ok_reps = t.get("repeats") == reps or (
                reps is None and t.get("repeats") == ANY_REPEATS.get(name))
            if got[:3] != (node, form, ishape) or not ok_reps or got[4] != oshape:
                problems.append(f"{name}: tile {got}, expected "
                                f"{(node, form, ishape, reps, oshape)}")
    if problems:
        raise AssertionError("\n".join(problems))


def inspect_should_print_the_same_facts_as_text():
    problems = []
    for name, want in EXPECTED.items():
        cp = h.expect_ok(h.tileopt("inspect", os.path.join(h.MODELS, name)))
        out = cp.stdout
        if cp.stderr.strip():
            problems.append(f"{name}: stderr not empty: {cp.stderr!r}")
        needles = [str(want["ir_version"]), str(want["opset_import"][0]["version"])]
        for node, form, _i, reps, _o in want["tiles"]:
            needles += [node, form]
            if reps is not None and not re.search(
                    r"\D" + r",\s*".join(map(str, reps)) + r"\D", out):
                problems.append(f"{name}: repeats {reps} not in text output")
        for n in needles:
            if n not in out:
                problems.append(f"{name}: {n!r} not in text output")
    if problems:
        raise AssertionError("\n".join(problems) + f"\nlast output:\n{out}")


def _symbolic_and_subgraph_model():
    """A Tile on a symbolic-batch input in the main graph, another in an If branch."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    then_g = helper.make_graph(
        [helper.make_node("Tile", ["x", "r_then"], ["o_then"], name="tile_then")],
        "then", [], [helper.make_tensor_value_info("o_then", TensorProto.FLOAT, [None, None])],
        initializer=[numpy_helper.from_array(np.array([1, 3], np.int64), "r_then")])
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["o_else"], name="id_else")],
        "else", [], [helper.make_tensor_value_info("o_else", TensorProto.FLOAT, [None, None])])
    nodes = [
        helper.make_node("Tile", ["x", "r"], ["t"], name="tile_main"),
        helper.make_node("If", ["c"], ["y"], name="if0",
                         then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(
        nodes, "sym", [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [None, None]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])],
        initializer=[numpy_helper.from_array(np.array([2, 2], np.int64), "r")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def inspect_should_show_symbolic_dims_and_tiles_in_subgraphs():
    with h.tempdir() as d:
        p = os.path.join(d, "sym.onnx")
        onnx.save(_symbolic_and_subgraph_model(), p)
        j = inspect_json(p)
        tiles = {t["node"]: t for t in j["tiles"]}
        if set(tiles) != {"tile_main", "tile_then"}:
            raise AssertionError(f"tiles {sorted(tiles)}")
        main, sub = tiles["tile_main"], tiles["tile_then"]
        problems = []
        if main.get("input_shape") != ["N", 3]:
            problems.append(f"tile_main input_shape {main.get('input_shape')}")
        if main.get("repeats") != [2, 2]:
            problems.append(f"tile_main repeats {main.get('repeats')}")
        osh = main.get("output_shape")
        if not osh or len(osh) != 2 or osh[1] != 6 or isinstance(osh[0], int):
            problems.append(f"tile_main output_shape {osh} (want [<symbolic>, 6])")
        if "graph" in main:
            problems.append("tile_main has a graph key but is in the main graph")
        if not sub.get("graph"):
            problems.append("tile_then lacks the graph key naming its subgraph")
        if sub.get("repeats") != [1, 3] or sub.get("form") != "Tile-6":
            problems.append(f"tile_then {sub}")
        if j["nodes"] != 4 or j["initializers"] != 2:
            problems.append(f"nodes {j['nodes']} initializers {j['initializers']}")
        if problems:
            raise AssertionError("\n".join(problems))


def inspect_should_name_nested_subgraphs_as_the_report_does():
    # A Tile two Ifs deep: inspect and the passes' report name its graph the same
    # way, the holding nodes and their attributes from the outside in.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    out = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, None])
    inner_then = helper.make_graph(
        [helper.make_node("Tile", ["x", "r"], ["o_in"], name="tile_deep")],
        "inner_then", [], [out("o_in")],
        initializer=[numpy_helper.from_array(np.array([1, 2], np.int64), "r")])
    inner_else = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["o_ie"], name="id_ie")], "inner_else", [],
        [out("o_ie")])
    outer_then = helper.make_graph(
        [helper.make_node("If", ["c"], ["o_out"], name="inner_if",
                          then_branch=inner_then, else_branch=inner_else)],
        "outer_then", [], [out("o_out")])
    outer_else = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["o_oe"], name="id_oe")], "outer_else", [],
        [out("o_oe")])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="outer_if",
                          then_branch=outer_then, else_branch=outer_else)],
        "nested", [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [out("y")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with h.tempdir() as d:
        p = os.path.join(d, "nested.onnx")
        onnx.save(m, p)
        (t,) = inspect_json(p)["tiles"]
        assert t["graph"] == "outer_if/then_branch/inner_if/then_branch", t
        rep = h.optimize_checked(p, os.path.join(d, "o.onnx"), "fuse")
        acts = [a for pa in rep["passes"] for a in pa["actions"] if a["node"] == "tile_deep"]
        assert acts and all(a["graph"] == t["graph"] for a in acts), acts


def inspect_should_not_touch_the_model():
    with h.tempdir() as d:
        p = os.path.join(d, "m.onnx")
        with open(os.path.join(h.MODELS, "legacy_tile1.onnx"), "rb") as f:
            data = f.read()
        with open(p, "wb") as f:
            f.write(data)
        h.expect_ok(h.tileopt("inspect", p))
        h.expect_ok(h.tileopt("inspect", p, "--json"))
        with open(p, "rb") as f:
            if f.read() != data or os.listdir(d) != ["m.onnx"]:
                raise AssertionError("inspect changed the model or its folder")


def inspect_should_load_a_large_constant_followed_by_many_small_nodes():
    # A Constant of 100000 float32 values, then 3000 Relu nodes: the arena's first
    # chunk ends 8 bytes short of 16-byte alignment, where the loader once wrote
    # past its mapping and died with SIGSEGV (one real model in five hit it).
    for count in (100000, 100002):
        with h.tempdir() as d:
            c = numpy_helper.from_array(np.arange(count, dtype=np.float32), "c")
            nodes = [helper.make_node("Constant", [], ["c"], value=c)]
            prev = "c"
            for i in range(3000):
                nodes.append(helper.make_node("Relu", [prev], [f"r{i}"]))
                prev = f"r{i}"
            g = helper.make_graph(nodes, "g", [],
                                  [helper.make_tensor_value_info(prev, TensorProto.FLOAT,
                                                                 [count])])
            path = os.path.join(d, "m.onnx")
            onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
            h.expect_ok(h.tileopt("inspect", path))
            out = os.path.join(d, "o.onnx")
            h.expect_ok(h.tileopt("optimize", path, "-o", out, "--passes", "none", "-q"))
            if open(out, "rb").read() != open(path, "rb").read():
                raise AssertionError("--passes none changed the bytes")


def json_outputs_should_be_utf8_with_exact_integers():
    # A node name with bytes that are not UTF-8, a custom opset of 2^62 + 1 and a
    # declared dim of 2^53 + 1: inspect --json and the report parse with Python's
    # json, the bad bytes read as the text \xNN and the integers come back exact.
    with h.tempdir() as d:
        g = helper.make_graph(
            [helper.make_node("Tile", ["x", "r"], ["y"], name="tQQ")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**53 + 1, 1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.array([1, 2], np.int64), "r")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid("com.x", 2**62 + 1)])
        src = os.path.join(d, "m.onnx")
        with open(src, "wb") as f:
            f.write(m.SerializeToString().replace(b"tQQ", b"t\xff\xfe"))
        rep = os.path.join(d, "r.json")
        h.expect_ok(h.tileopt("optimize", src, "-o", os.path.join(d, "o.onnx"), "--report",
                              rep, "-q"))
        cp = h.expect_ok(h.tileopt("inspect", src, "--json"))
        for what, text in (("inspect --json", cp.stdout), ("report", open(rep, "rb").read())):
            doc = json.loads(text)
            found = {o["domain"]: o["version"] for o in doc.get("opset_import") or
                     doc["input"]["opset_import"]}
            if found.get("com.x") != 2**62 + 1:
                raise AssertionError(f"{what}: opset {found}")
            blob = json.dumps(doc)
            if "t\\\\xff\\\\xfe" not in blob:
                raise AssertionError(f"{what}: the node name is not t\\xff\\xfe: {blob[:300]}")
        tile = json.loads(cp.stdout)["tiles"][0]
        if tile["input_shape"] != [2**53 + 1, 1]:
            raise AssertionError(f"inspect: input_shape {tile['input_shape']}")


def report_should_stay_utf8_when_keys_come_from_the_model():
    # --verify names each symbolic dim in the report by its dim_param: a long
    # non-ASCII one is cut to fit, and the cut must not leave half a character.
    with h.tempdir() as d:
        sym = "\u00e9" * 200
        g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [sym])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [sym])])
        src = os.path.join(d, "m.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), src)
        rep = os.path.join(d, "r.json")
        h.expect_ok(h.tileopt("optimize", src, "-o", os.path.join(d, "o.onnx"), "--verify",
                              "--report", rep, "-q"))
        with open(rep, encoding="utf-8") as f:
            doc = json.load(f)
        if doc["verify"]["verdict"] != "match":
            raise AssertionError(f"verify: {doc['verify']}")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""Load/save fidelity: `tileopt optimize IN -o OUT --passes none` must give a model
that onnx parses equal to IN (protobuf message equality, which includes unknown
fields), on every model.onnx of ONNX's backend test data and on a synthetic model
holding every kind of content a pass leaves alone."""
import concurrent.futures
import os
import sys

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile  # noqa: E402  (wire-format helpers)

TESTDATA = "/usr/share/libonnx-testdata/data"
WORKERS = 2


def roundtrip_differs(src, dst):
    """None when tileopt round-trips src to an equal model, else why not."""
    cp = h.tileopt("optimize", src, "-o", dst, "--passes", "none", "--quiet")
    if cp.returncode != 0:
        return f"exit {cp.returncode}: {cp.stderr.strip()}"
    try:
        a = onnx.load(src, load_external_data=False)
        b = onnx.load(dst, load_external_data=False)
    except Exception as e:
        return f"output does not parse: {e}"
    if a != b:
        return "parsed output differs from input"
    return None


def all_testdata_models():
    found = []
    for root, _dirs, files in os.walk(TESTDATA):
        if "model.onnx" in files:
            found.append(os.path.join(root, "model.onnx"))
    return sorted(found)


def fidelity_should_roundtrip_every_testdata_model():
    models = all_testdata_models()
    if len(models) < 1000:
        raise AssertionError(f"only {len(models)} models under {TESTDATA}; "
                             "is libonnx-testdata installed?")
    failures = []
    with h.tempdir() as d:
        def one(i_src):
            i, src = i_src
            dst = os.path.join(d, f"{i}.onnx")
            why = roundtrip_differs(src, dst)
            if os.path.exists(dst):
                os.unlink(dst)
            return src, why

        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            for src, why in ex.map(one, enumerate(models)):
                if why:
                    failures.append(f"{os.path.relpath(src, TESTDATA)}: {why}")
    print(f"fidelity: {len(models) - len(failures)} of {len(models)} testdata "
          "models round-trip equal")
    if failures:
        raise AssertionError(f"{len(failures)} models differ:\n" +
                             "\n".join(failures[:100]))


def _unknown_varint(num, value):
    """Bytes of a varint field `num` = value, for an unknown-field splice."""
    return hostile.field(num, 0, hostile.varint(value))


def rich_model():
    """A model with doc strings, metadata, value_info, a function, training info,
    sparse initializers, an If subgraph and unknown fields at several levels."""
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    then_g = helper.make_graph(
        [helper.make_node("Tile", ["x", "reps"], ["t_then"], name="tile_then",
                          doc_string="tile in then")],
        "then", [], [helper.make_tensor_value_info("t_then", TensorProto.FLOAT, [2, 3])])
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t_else"], name="id_else")],
        "else", [], [helper.make_tensor_value_info("t_else", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("If", ["cond"], ["branch"], name="if0",
                         then_branch=then_g, else_branch=else_g),
        helper.make_node("Add", ["branch", "sp"], ["s"], name="add"),
        helper.make_node("MyRelu", ["s"], ["y"], name="custom", domain="local"),
    ]
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.5, -2.0], dtype=np.float32), "sp"),
        numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "sp_idx"),
        [2, 3])
    g = helper.make_graph(
        nodes, "rich", [cond, x], [y],
        initializer=[numpy_helper.from_array(np.array([1, 1], dtype=np.int64), "reps")],
        value_info=[helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 3])],
        doc_string="graph doc", sparse_initializer=[sparse])
    fn = helper.make_function(
        "local", "MyRelu", ["a"], ["b"],
        [helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_opsetid("", 13)])
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)],
        functions=[fn], producer_name="fidelity", doc_string="model doc")
    helper.set_model_props(m, {"author": "tileopt tests", "note": "round trip"})
    ti = m.training_info.add()
    ti.algorithm.CopyFrom(helper.make_graph(
        [helper.make_node("Identity", ["x"], ["x_copy"])], "algo", [],
        [helper.make_tensor_value_info("x_copy", TensorProto.FLOAT, [2, 3])]))
    ti.update_binding.add(key="reps", value="reps")
    # Unknown fields: appended to the model, and to the graph through a re-parse.
    g_bytes = m.graph.SerializeToString() + _unknown_varint(900, 7)
    m.graph.ParseFromString(g_bytes)
    data = m.SerializeToString() + _unknown_varint(901, 12345)
    out = onnx.ModelProto()
    out.ParseFromString(data)
    return out


def fidelity_should_keep_docs_metadata_functions_training_sparse_unknown_fields():
    with h.tempdir() as d:
        src = os.path.join(d, "rich.onnx")
        dst = os.path.join(d, "rich_out.onnx")
        m = rich_model()
        with open(src, "wb") as f:
            f.write(m.SerializeToString())
        why = roundtrip_differs(src, dst)
        if why:
            raise AssertionError(f"rich model: {why}")
        # Equality above already covers the unknown fields; say it explicitly.
        with open(dst, "rb") as f:
            out = f.read()
        if _unknown_varint(901, 12345) not in out or _unknown_varint(900, 7) not in out:
            raise AssertionError("rich model: unknown fields lost")


def fidelity_should_fail_on_a_changed_model():
    # The comparison itself must be able to fail: a model with a changed doc
    # string is not equal to the original.
    with h.tempdir() as d:
        src = os.path.join(d, "a.onnx")
        other = os.path.join(d, "b.onnx")
        m = onnx.load(os.path.join(h.MODELS, "tile_add.onnx"))
        onnx.save(m, src)
        m.doc_string += " changed"
        onnx.save(m, other)
        if onnx.load(src) == onnx.load(other):
            raise AssertionError("message equality missed a doc_string change")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

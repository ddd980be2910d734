#!/usr/bin/python3
"""`tileopt run`: positional inputs, -o, --test-dir (match and mismatch), bad
files and bad arguments, sequences and optionals in and out; and `optimize
--verify` recording its verdict."""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402


def tile_model(path, opset=13):
    g = helper.make_graph(
        [helper.make_node("Tile", ["x", "r"], ["y"], name="tile")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 9])],
        [numpy_helper.from_array(np.array([2, 3], np.int64), "r")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, path)


def save_pb(arr, path, name=""):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.tile(X, (2, 3))


def run_should_take_positional_inputs_and_print_outputs():
    with h.tempdir() as d:
        tile_model(f"{d}/m.onnx")
        save_pb(X, f"{d}/x.pb", "x")
        cp = h.expect_ok(h.tileopt("run", f"{d}/m.onnx", f"{d}/x.pb"))
        assert "y: FLOAT [4,9]" in cp.stdout, cp.stdout


def run_should_write_outputs_with_o():
    with h.tempdir() as d:
        tile_model(f"{d}/m.onnx")
        save_pb(X, f"{d}/x.pb", "x")
        h.expect_ok(h.tileopt("run", f"{d}/m.onnx", f"{d}/x.pb", "-o", f"{d}/out"))
        got = load_pb(f"{d}/out/output_0.pb")
        assert got.dtype == np.float32 and np.array_equal(got, Y), got
        assert sorted(os.listdir(f"{d}/out")) == ["output_0.pb"], os.listdir(f"{d}/out")


def run_should_pass_a_matching_test_dir():
    with h.tempdir() as d:
        tile_model(f"{d}/m.onnx")
        os.mkdir(f"{d}/t")
        save_pb(X, f"{d}/t/input_0.pb", "x")
        save_pb(Y * (1 + 1e-5), f"{d}/t/output_0.pb", "y")  # within rtol 1e-3
        cp = h.expect_ok(h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t"))
        assert "match" in cp.stdout, cp.stdout


def run_should_exit_1_on_mismatch_naming_output_and_index():
    with h.tempdir() as d:
        tile_model(f"{d}/m.onnx")
        os.mkdir(f"{d}/t")
        save_pb(X, f"{d}/t/input_0.pb", "x")
        bad = Y.copy()
        bad[1, 4] += 0.5
        save_pb(bad, f"{d}/t/output_0.pb", "y")
        cp = h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t", "-o", f"{d}/out")
        assert cp.returncode == 1, (cp.returncode, cp.stderr)
        assert cp.stderr.startswith("tileopt: error: "), cp.stderr
        assert "output 0 'y'" in cp.stderr and "index 13" in cp.stderr, cp.stderr
        assert "expected 4.5, got 4" in cp.stderr, cp.stderr
        assert not os.path.exists(f"{d}/out/output_0.pb"), "a failed run wrote outputs"


def run_should_compare_integers_and_bool_exactly():
    # An int64 off by one at 1e18 is within rtol 1e-3 of the expected value, and
    # so is a uint8 off by one at 250: only floating types may differ by rounding.
    cases = [(np.array([10**18, 5], np.int64), np.array([10**18 + 1, 5], np.int64)),
             (np.array([250, 3], np.uint8), np.array([251, 3], np.uint8)),
             (np.array([True, False]), np.array([True, True]))]
    for value, expected in cases:
        with h.tempdir() as d:
            elem = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype]
            g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id")], "g",
                                  [helper.make_tensor_value_info("x", elem, list(value.shape))],
                                  [helper.make_tensor_value_info("y", elem, list(value.shape))])
            onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
                      f"{d}/m.onnx")
            os.mkdir(f"{d}/t")
            save_pb(value, f"{d}/t/input_0.pb", "x")
            save_pb(value, f"{d}/t/output_0.pb", "y")
            h.expect_ok(h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t"))
            save_pb(expected, f"{d}/t/output_0.pb", "y")
            cp = h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t")
            assert cp.returncode == 1 and "1 of 2 values differ" in cp.stderr, \
                (value.dtype, cp.returncode, cp.stderr)


def run_should_exit_1_on_shape_or_type_mismatch():
    with h.tempdir() as d:
        tile_model(f"{d}/m.onnx")
        os.mkdir(f"{d}/t")
        save_pb(X, f"{d}/t/input_0.pb", "x")
        save_pb(Y.astype(np.float64), f"{d}/t/output_0.pb", "y")
        cp = h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t")
        assert cp.returncode == 1 and "expected DOUBLE [4,9], got FLOAT [4,9]" in cp.stderr, \
            cp.stderr


def run_should_order_test_dir_inputs_numerically():
    # 11 inputs concatenated: input_10.pb must bind last, not third.
    n = 11
    with h.tempdir() as d:
        names = [f"x{i}" for i in range(n)]
        g = helper.make_graph(
            [helper.make_node("Concat", names, ["y"], axis=0)], "g",
            [helper.make_tensor_value_info(s, TensorProto.INT64, [1]) for s in names],
            [helper.make_tensor_value_info("y", TensorProto.INT64, [n])])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
                  f"{d}/m.onnx")
        os.mkdir(f"{d}/t")
        for i in range(n):
            save_pb(np.array([i], np.int64), f"{d}/t/input_{i}.pb", names[i])
        save_pb(np.arange(n, dtype=np.int64), f"{d}/t/output_0.pb", "y")
        h.expect_ok(h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t"))


def run_should_exit_1_on_missing_or_bad_files_and_2_on_missing_inputs():
    with h.tempdir() as d:
        tile_model(f"{d}/m.onnx")
        save_pb(X, f"{d}/x.pb", "x")
        with open(f"{d}/junk.pb", "wb") as f:
            f.write(b"\xff\xff\xff\xff not a tensor")
        cases = [
            ("run", f"{d}/missing.onnx", f"{d}/x.pb"),
            ("run", f"{d}/m.onnx", f"{d}/missing.pb"),
            ("run", f"{d}/m.onnx", f"{d}/junk.pb"),
            ("run", f"{d}/m.onnx", "--test-dir", f"{d}/nope"),
        ]
        for args in cases:
            cp = h.tileopt(*args)
            assert cp.returncode == 1, (args, cp.returncode, cp.stderr)
            assert cp.stderr.startswith("tileopt: error: "), (args, cp.stderr)
        # inputs missing, or given twice, are the caller's mistake: usage
        for args in (("run", f"{d}/m.onnx"), ("run", f"{d}/m.onnx", f"{d}/x.pb", f"{d}/x.pb")):
            cp = h.tileopt(*args)
            assert cp.returncode == 2, (args, cp.returncode, cp.stderr)
            assert cp.stderr.startswith("tileopt: error: input 'x'"), (args, cp.stderr)
        os.mkdir(f"{d}/empty")
        cp = h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/empty")
        assert cp.returncode == 1 and "output_" in cp.stderr, cp.stderr


def custom_op_model(name=None):
    """One node of a custom domain: every default-domain op up to opset 17 runs
    in the evaluator, so an op it lacks lives elsewhere."""
    g = helper.make_graph(
        [helper.make_node("Frobnicate", ["x"], ["y"], name=name, domain="com.example")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid("com.example", 1)])


def run_should_name_an_unsupported_op():
    with h.tempdir() as d:
        onnx.save(custom_op_model("frob1"), f"{d}/m.onnx")
        save_pb(np.zeros((1, 1, 3, 3), np.float32), f"{d}/x.pb", "x")
        cp = h.tileopt("run", f"{d}/m.onnx", f"{d}/x.pb")
        assert cp.returncode == 1 and "com.example:Frobnicate" in cp.stderr and \
            "frob1" in cp.stderr, cp.stderr


def seq_type(elem=TensorProto.FLOAT):
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, None))


def save_seq(arrs, path, name=""):
    s = onnx.SequenceProto(name=name, elem_type=onnx.SequenceProto.TENSOR)
    s.tensor_values.extend(numpy_helper.from_array(a) for a in arrs)
    with open(path, "wb") as f:
        f.write(s.SerializeToString())


def save_opt(arrs, path, name=""):
    o = onnx.OptionalProto(name=name)
    if arrs is not None:
        o.elem_type = onnx.OptionalProto.SEQUENCE
        o.sequence_value.elem_type = onnx.SequenceProto.TENSOR
        o.sequence_value.tensor_values.extend(numpy_helper.from_array(a) for a in arrs)
    with open(path, "wb") as f:
        f.write(o.SerializeToString())


def seq_model(path, nodes, inputs, outputs):
    g = helper.make_graph(nodes, "g", [helper.make_value_info(n, t) for n, t in inputs],
                          [helper.make_value_info(n, t) for n, t in outputs])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]), path)


def run_should_read_compare_and_write_sequences_and_optionals():
    opt = helper.make_optional_type_proto(seq_type())
    with h.tempdir() as d:
        seq_model(f"{d}/m.onnx",
                  [helper.make_node("SequenceInsert", ["s", "t"], ["y"]),
                   helper.make_node("OptionalHasElement", ["o"], ["has"]),
                   helper.make_node("Optional", ["y"], ["oy"])],
                  [("s", seq_type()), ("t", helper.make_tensor_type_proto(TensorProto.FLOAT, None)),
                   ("o", opt)],
                  [("y", seq_type()), ("has", helper.make_tensor_type_proto(TensorProto.BOOL, [])),
                   ("oy", opt)])
        os.mkdir(f"{d}/t")
        save_seq([X, X[0]], f"{d}/t/input_0.pb", "s")
        save_pb(X[1], f"{d}/t/input_1.pb", "t")
        save_opt(None, f"{d}/t/input_2.pb", "o")
        h.expect_ok(h.tileopt("run", f"{d}/m.onnx", *[f"{d}/t/input_{i}.pb" for i in range(3)],
                              "-o", f"{d}/t"))
        y = onnx.SequenceProto()
        with open(f"{d}/t/output_0.pb", "rb") as f:
            y.ParseFromString(f.read())
        got = [numpy_helper.to_array(t) for t in y.tensor_values]
        assert len(got) == 3 and np.array_equal(got[2], X[1]), got
        oy = onnx.OptionalProto()
        with open(f"{d}/t/output_2.pb", "rb") as f:
            oy.ParseFromString(f.read())
        assert oy.elem_type == onnx.OptionalProto.SEQUENCE and \
            len(oy.sequence_value.tensor_values) == 3, oy
        assert load_pb(f"{d}/t/output_1.pb") == np.bool_(False)
        cp = h.expect_ok(h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t"))
        assert "3 outputs match" in cp.stdout, cp.stdout
        save_seq([X, X[0], X[1] + 1], f"{d}/t/output_0.pb")
        cp = h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t")
        assert cp.returncode == 1 and "output 0 'y': item 2: 3 of 3 values differ" in cp.stderr, \
            cp.stderr
        save_seq([X], f"{d}/t/output_0.pb")
        cp = h.tileopt("run", f"{d}/m.onnx", "--test-dir", f"{d}/t")
        assert cp.returncode == 1 and "expected a sequence of 1 FLOAT tensors, got a " \
            "sequence of 3" in cp.stderr, cp.stderr


def run_should_refuse_misused_sequences_and_optionals_clearly():
    with h.tempdir() as d:
        save_seq([X], f"{d}/s.pb")
        save_pb(X, f"{d}/x.pb")
        save_pb(np.array(3, np.int64), f"{d}/p.pb")
        save_opt(None, f"{d}/o.pb")
        cases = [  # model nodes, inputs, outputs, input files, what stderr says
            ([helper.make_node("Relu", ["s"], ["y"])], [("s", seq_type())], "x", ["s.pb"],
             "op Relu input 0 is a sequence"),
            ([helper.make_node("Identity", ["s"], ["y"])], [("s", seq_type())], "s", ["x.pb"],
             "read as a sequence, as graph input 's' declares"),
            ([helper.make_node("SequenceAt", ["s", "p"], ["y"])],
             [("s", seq_type()), ("p", helper.make_tensor_type_proto(TensorProto.INT64, []))],
             "x", ["s.pb", "p.pb"], "position 3 is outside [-1, 0]"),
            ([helper.make_node("OptionalGetElement", ["o"], ["y"])],
             [("o", helper.make_optional_type_proto(seq_type()))], "s", ["o.pb"],
             "the optional is empty"),
            ([helper.make_node("Relu", ["x"], ["y"])],
             [("x", helper.make_tensor_type_proto(TensorProto.FLOAT, None))], "x", ["s.pb"],
             "read as a tensor, as graph input 'x' declares"),
        ]
        for nodes, inputs, out, files, says in cases:
            out_type = seq_type() if out == "s" else helper.make_tensor_type_proto(
                TensorProto.FLOAT, None)
            seq_model(f"{d}/m.onnx", nodes, inputs, [("y", out_type)])
            cp = h.tileopt("run", f"{d}/m.onnx", *[f"{d}/{f}" for f in files])
            assert cp.returncode == 1 and says in cp.stderr, (says, cp.returncode, cp.stderr)
            assert cp.stderr.startswith("tileopt: error: ") and cp.stderr.count("\n") == 1, \
                cp.stderr


def run_should_exit_2_on_bad_arguments():
    with h.tempdir() as d:
        tile_model(f"{d}/m.onnx")
        save_pb(X, f"{d}/x.pb", "x")
        cases = [
            ("run",),
            ("run", f"{d}/m.onnx", "--bogus"),
            ("run", f"{d}/m.onnx", "--test-dir"),
            ("run", f"{d}/m.onnx", f"{d}/x.pb", "-o"),
            ("run", f"{d}/m.onnx", f"{d}/x.pb", "--test-dir", d),
        ]
        for args in cases:
            cp = h.tileopt(*args)
            assert cp.returncode == 2, (args, cp.returncode, cp.stderr)
            assert "tileopt: error: " in cp.stderr, (args, cp.stderr)


def run_should_take_a_backend_test_folder_and_run_every_data_set():
    src = "/usr/share/libonnx-testdata/data/node/test_tile"
    with h.tempdir() as d:
        t = os.path.join(d, "test_tile")
        shutil.copytree(src, t)
        shutil.copytree(f"{t}/test_data_set_0", f"{t}/test_data_set_1")
        # the model comes from the folder; each set's outputs go to a folder of its own
        cp = h.tileopt("run", "--test-dir", t, "-o", f"{d}/out")
        assert cp.returncode == 0, cp.stderr
        assert "2 of 2 data sets match" in cp.stdout, cp.stdout
        for k in (0, 1):
            assert os.path.isfile(f"{d}/out/test_data_set_{k}/output_0.pb"), os.listdir(d)
        # a failing set does not stop the next one, and the run fails
        shutil.copytree(f"{t}/test_data_set_0", f"{t}/test_data_set_2")
        y = onnx.load_tensor(f"{t}/test_data_set_0/output_0.pb")
        wrong = numpy_helper.to_array(y) + 1
        save_pb(wrong, f"{t}/test_data_set_0/output_0.pb", y.name)
        cp = h.tileopt("run", f"{t}/model.onnx", "--test-dir", t)
        assert cp.returncode == 1 and "test_data_set_0" in cp.stderr, cp.stderr
        assert "2 of 3 data sets match" in cp.stdout, cp.stdout


def run_should_print_its_usage_with_help():
    cp = h.expect_ok(h.tileopt("run", "--help"))
    assert "--test-dir" in cp.stdout and "output_N.pb" in cp.stdout, cp.stdout


def _verify(model_path, d):
    cp = h.tileopt("optimize", model_path, "-o", f"{d}/out.onnx", "--verify", "--report",
                   f"{d}/r.json", "--quiet")
    with open(f"{d}/r.json") as f:
        return cp, json.load(f)["verify"]


def verify_should_record_a_match_with_inputs_and_diffs():
    with h.tempdir() as d:
        g = helper.make_graph(
            [helper.make_node("Tile", ["x", "r"], ["y"], name="tile")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.array([2, 3], np.int64), "r")])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
                  f"{d}/m.onnx")
        cp, v = _verify(f"{d}/m.onnx", d)
        assert cp.returncode == 0, cp.stderr
        assert v["verdict"] == "match", v
        assert v["inputs"][0]["shape"] == [2, 3] and v["inputs"][0]["symbolic"] == {"N": 2}, v
        assert v["outputs"][0]["name"] == "y" and v["outputs"][0]["match"] is True, v
        assert v["outputs"][0]["max_abs_diff"] == 0, v


def verify_should_skip_models_with_ops_the_evaluator_lacks():
    with h.tempdir() as d:
        onnx.save(custom_op_model(), f"{d}/m.onnx")
        cp, v = _verify(f"{d}/m.onnx", d)
        assert cp.returncode == 0, cp.stderr
        assert v["verdict"] == "skipped" and v["ops"] == ["com.example:Frobnicate"], v
        # the summary gives the verdict with its reason
        cp = h.tileopt("optimize", f"{d}/m.onnx", "-o", f"{d}/out2.onnx", "--verify")
        assert "verify: skipped: the evaluator lacks com.example:Frobnicate" in cp.stdout, \
            cp.stdout
        # strict: no verdict fails the command, and no model is written
        cp = h.tileopt("optimize", f"{d}/m.onnx", "-o", f"{d}/strict.onnx", "--verify=strict")
        assert cp.returncode == 1 and "no verdict (--verify=strict)" in cp.stderr, cp.stderr
        assert "Frobnicate" in cp.stderr and not os.path.exists(f"{d}/strict.onnx"), cp.stderr


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""OUT's external data files. A save that writes external data writes one file,
OUT.data (or --data-name), and puts it in place together with OUT; a later run
to the same OUT replaces both and leaves no other file. The files an earlier save
to OUT wrote are recorded in OUT's metadata, and only those are ever removed: a
file of the user's, the input's, or another model's stays. OUT beside the input
reads the input's files as they are. The summary and the report name the files
each side reads. tests/cli/test_save_faults.py kills, fills the disk and takes
file-system features away in the middle of these saves."""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

RECORD_KEYS = ("tileopt.data_for", "tileopt.data_files", "tileopt.data_to_remove")


def weights(seed):
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((256, 256)).astype(np.float32),
            "b": rng.standard_normal((256,)).astype(np.float32)}


def make_model(path, seed, location=None, tied=False):
    """y = x @ w + b (+ x @ w2 when tied: w2 the same bytes as w), its weights
    in one external file, `location` (default: the model's name + .data)."""
    vals = weights(seed)
    inits = [numpy_helper.from_array(v, k) for k, v in vals.items()]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["y"], name="add")]
    if tied:
        inits.append(numpy_helper.from_array(vals["w"], "w2"))
        nodes += [helper.make_node("MatMul", ["x", "w2"], ["m2"], name="mm2"),
                  helper.make_node("Add", ["y", "m2"], ["z"], name="add2")]
    out = "z" if tied else "y"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 256])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location or os.path.basename(path) + ".data", size_threshold=0)
    if tied:  # w2 reads w's bytes
        m = onnx.load(path, load_external_data=False)
        ext = {t.name: {e.key: e.value for e in t.external_data} for t in m.graph.initializer}
        for t in m.graph.initializer:
            if t.name == "w2":
                for e in t.external_data:
                    e.value = ext["w"][e.key]
        onnx.save(m, path)
    return vals


def initializers(path):
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def assert_values(path, vals):
    got = initializers(path)
    for k, v in vals.items():
        if k not in got or not np.array_equal(got[k], v):
            raise AssertionError(f"{path}: initializer {k} differs")


def data_files(path):
    """The files the model at path reads, and its record."""
    m = onnx.load(path, load_external_data=False)
    files = {e.value for t in m.graph.initializer for e in t.external_data
             if e.key == "location"}
    record = {p.key: p.value for p in m.metadata_props if p.key in RECORD_KEYS}
    return files, record


def folders(d, name="m.onnx"):
    """in/ and out/ under d, the input's path in in/ and OUT's, out/o.onnx."""
    src_dir, out_dir = os.path.join(d, "in"), os.path.join(d, "out")
    os.mkdir(src_dir)
    os.mkdir(out_dir)
    return src_dir, out_dir, os.path.join(src_dir, name), os.path.join(out_dir, "o.onnx")


def listing(d):
    return sorted(os.listdir(d))


def optimize(*args, code=0):
    cp = h.tileopt("optimize", *args)
    if cp.returncode != code:
        raise AssertionError(f"optimize {args}: exit {cp.returncode}, want {code}: "
                             f"{cp.stderr!r}")
    return cp


def data_files_should_keep_one_data_file_named_out_data_across_runs():
    # Optimizing to the same OUT in another folder again and again: one data
    # file, OUT.data, always the latest weights, named by the summary and report.
    with h.tempdir() as d:
        src_dir, out_dir, src, out = folders(d, "llama.onnx")
        for seed in (1, 2, 3):
            vals = make_model(src, seed)
            report = os.path.join(d, "r.json")
            cp = optimize(src, "-o", out, "--report", report)
            if listing(out_dir) != ["o.onnx", "o.onnx.data"]:
                raise AssertionError(f"run {seed}: {listing(out_dir)}")
            assert_values(out, vals)
            h.check(out)
            files, record = data_files(out)
            if files != {"o.onnx.data"} or record != {"tileopt.data_for": "o.onnx",
                                                      "tileopt.data_files": "o.onnx.data"}:
                raise AssertionError(f"run {seed}: reads {files}, record {record}")
            if "external data the output reads: o.onnx.data\n" not in cp.stdout or \
                    "external data the input reads: llama.onnx.data\n" not in cp.stdout:
                raise AssertionError(f"summary: {cp.stdout}")
            with open(report) as f:
                rep = json.load(f)
            if rep["output"]["external_data_files"] != ["o.onnx.data"]:
                raise AssertionError(f"report: {rep['output']}")


def data_files_should_name_the_data_file_as_asked_and_remove_the_old_one():
    with h.tempdir() as d:
        src_dir, out_dir, src, out = folders(d)
        vals = make_model(src, 1)
        optimize(src, "-o", out, "-q")
        optimize(src, "-o", out, "-q", "--data-name", "weights.bin")
        if listing(out_dir) != ["o.onnx", "weights.bin"]:
            raise AssertionError(f"--data-name: {listing(out_dir)}")
        assert_values(out, vals)
        optimize(src, "-o", out, "-q")
        if listing(out_dir) != ["o.onnx", "o.onnx.data"]:
            raise AssertionError(f"back to the default: {listing(out_dir)}")
        assert_values(out, vals)
        for bad in ("a/b", "..", ""):
            optimize(src, "-o", out, "--data-name", bad, code=2)
        cp = optimize(src, "-o", out, "--data-name", "o.onnx", code=2)
        if "not OUT itself" not in cp.stderr:
            raise AssertionError(cp.stderr)
        optimize(src_dir, "-o", os.path.join(d, "batch"), "--data-name", "w.bin", code=2)


def data_files_should_refuse_a_data_file_it_did_not_write():
    # OUT.data exists, written by someone else for another model: refused, and
    # neither it nor OUT changes.
    with h.tempdir() as d:
        src_dir, out_dir, src, out = folders(d)
        make_model(src, 1)
        other = make_model(os.path.join(out_dir, "other.onnx"), 5, location="o.onnx.data")
        before = {n: open(os.path.join(out_dir, n), "rb").read() for n in listing(out_dir)}
        cp = optimize(src, "-o", out, code=1)
        if "no earlier save of 'o.onnx' wrote it" not in cp.stderr:
            raise AssertionError(cp.stderr)
        after = {n: open(os.path.join(out_dir, n), "rb").read() for n in listing(out_dir)}
        if after != before:
            raise AssertionError(f"the folder changed: {listing(out_dir)}")
        assert_values(os.path.join(out_dir, "other.onnx"), other)
        # a second link to OUT is a model reading OUT.data too
        optimize(src, "-o", out, "-q", "--data-name", "mine.data")
        os.link(out, os.path.join(out_dir, "linked.onnx"))
        cp = optimize(src, "-o", out, "--data-name", "mine.data", code=1)
        if "linked" not in cp.stderr and "link" not in cp.stderr:
            raise AssertionError(cp.stderr)
        h.check(os.path.join(out_dir, "linked.onnx"))


def data_files_should_never_remove_a_file_the_input_reads():
    # The input (beside OUT) reads OUT.data, which an earlier save to OUT wrote:
    # the new OUT shares it, and it stays.
    with h.tempdir() as d:
        src_dir, out_dir, src, out = folders(d)
        vals = make_model(src, 1)
        optimize(src, "-o", out, "-q")
        shutil.copy(out, os.path.join(out_dir, "in.onnx"))
        optimize(os.path.join(out_dir, "in.onnx"), "-o", out, "-q", "--passes", "none")
        if listing(out_dir) != ["in.onnx", "o.onnx", "o.onnx.data"]:
            raise AssertionError(listing(out_dir))
        assert_values(out, vals)
        assert_values(os.path.join(out_dir, "in.onnx"), vals)


def data_files_should_copy_rather_than_share_files_written_for_another_output():
    # o.onnx owns o.onnx.data; optimizing it to o2.onnx beside it gives o2 a data
    # file of its own, so that a later run to o.onnx cannot take o2's data away.
    with h.tempdir() as d:
        src_dir, out_dir, src, out = folders(d)
        vals = make_model(src, 1)
        optimize(src, "-o", out, "-q")
        out2 = os.path.join(out_dir, "o2.onnx")
        optimize(out, "-o", out2, "-q", "--passes", "none")
        if data_files(out2)[0] != {"o2.onnx.data"}:
            raise AssertionError(f"o2 reads {data_files(out2)}")
        make_model(src, 2)
        optimize(src, "-o", out, "-q")
        assert_values(out2, vals)
        if listing(out_dir) != ["o.onnx", "o.onnx.data", "o2.onnx", "o2.onnx.data"]:
            raise AssertionError(listing(out_dir))


def data_files_should_share_the_inputs_files_beside_it():
    # OUT beside the input reads the input's own file: nothing is copied, and the
    # summary and report say which file OUT reads.
    with h.tempdir() as d:
        src, out = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        vals = make_model(src, 1, location="weights.bin")
        report = os.path.join(d, "r.json")
        cp = optimize(src, "-o", out, "--report", report)
        if listing(d) != ["m.onnx", "o.onnx", "r.json", "weights.bin"]:
            raise AssertionError(listing(d))
        if data_files(out) != ({"weights.bin"}, {}):
            raise AssertionError(data_files(out))
        if "external data the output reads: weights.bin\n" not in cp.stdout:
            raise AssertionError(cp.stdout)
        with open(report) as f:
            if json.load(f)["output"]["external_data_files"] != ["weights.bin"]:
                raise AssertionError("report")
        assert_values(out, vals)


def data_files_should_refuse_out_or_the_report_naming_the_inputs_data():
    with h.tempdir() as d:
        src = os.path.join(d, "m.onnx")
        make_model(src, 1, location="weights.bin")
        before = open(os.path.join(d, "weights.bin"), "rb").read()
        data = os.path.join(d, "weights.bin")
        for args in (["-o", data], ["-o", os.path.join(d, "o.onnx"), "--report", data],
                     ["-o", os.path.join(d, ".", "weights.bin")]):
            cp = optimize(src, *args, code=2)
            if "external data" not in cp.stderr:
                raise AssertionError(f"{args}: {cp.stderr!r}")
        if open(data, "rb").read() != before or listing(d) != ["m.onnx", "weights.bin"]:
            raise AssertionError("the input's folder changed")


def data_files_should_store_tied_weights_once_and_refuse_overlaps():
    # Two tensors naming the same bytes keep one copy; bytes shared in part
    # (a 1 GB file claimed a thousand times at shifted offsets) are refused.
    with h.tempdir() as d:
        src_dir, out_dir, src, out = folders(d)
        vals = make_model(src, 1, tied=True)
        optimize(src, "-o", out, "-q", "--passes", "none")
        got = initializers(out)
        if not np.array_equal(got["w2"], vals["w"]):
            raise AssertionError("w2")
        size = os.path.getsize(os.path.join(out_dir, "o.onnx.data"))
        if size > vals["w"].nbytes + vals["b"].nbytes + 4096:
            raise AssertionError(f"tied weights stored twice: {size} bytes")
        m = onnx.load(src, load_external_data=False)
        for t in m.graph.initializer:
            if t.name == "w2":
                for e in t.external_data:
                    if e.key == "offset":
                        e.value = str(int(e.value) + 4)
                    if e.key == "length":
                        e.value = str(int(e.value) - 8)
                del t.dims[:]
                t.dims.extend([int(vals["w"].size - 2)])
        bad = os.path.join(src_dir, "bad.onnx")
        onnx.save(m, bad)
        cp = optimize(bad, "-o", os.path.join(out_dir, "bad.onnx"), code=1)
        if "overlap" not in cp.stderr or "'w'" not in cp.stderr or "'w2'" not in cp.stderr:
            raise AssertionError(cp.stderr)


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

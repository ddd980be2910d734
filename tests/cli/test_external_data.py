#!/usr/bin/python3
"""External data: a model saved by onnx with its tensors in w.bin.
Saving next to the input keeps the references (no new data file); saving to another
folder writes the data beside the output so the output stands alone. Either way
the output loads in onnx with tensors equal to the input's, and the input files are
untouched."""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402


snapshot = h.snapshot


def external_model(folder):
    """bias_tile plus a 64 KiB weight, every initializer stored in folder/w.bin."""
    m = onnx.load(os.path.join(h.MODELS, "bias_tile.onnx"))
    w = np.random.default_rng(3).standard_normal((2, 16, 8, 8)).astype(np.float32)
    m.graph.initializer.append(numpy_helper.from_array(w, "scale"))
    m.graph.node.append(helper.make_node("Mul", [m.graph.output[0].name, "scale"],
                                         ["y2"], name="mul"))
    m.graph.output[0].name = "y2"
    path = os.path.join(folder, "model.onnx")
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)
    return path


def initializers(path):
    """{name: array} with external data loaded (relative to path's folder)."""
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def locations(path):
    m = onnx.load(path, load_external_data=False)
    locs = {}
    for t in m.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            locs[t.name] = {e.key: e.value for e in t.external_data}["location"]
    return locs


def assert_same_tensors(got_path, want_path):
    got, want = initializers(got_path), initializers(want_path)
    if sorted(got) != sorted(want):
        raise AssertionError(f"{got_path}: initializers {sorted(got)}, "
                             f"expected {sorted(want)}")
    for k in want:
        h.assert_close(got[k], want[k], rtol=0, atol=0, what=f"initializer {k}")


def external_should_keep_references_when_saved_in_the_same_folder():
    with h.tempdir() as d:
        src = external_model(d)
        ref = dict(initializers(src))
        before = snapshot(d)
        dst = os.path.join(d, "out.onnx")
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", "none", "--quiet"))
        after = snapshot(d)
        if {k: v for k, v in after.items() if k != "out.onnx"} != before:
            raise AssertionError(f"input folder changed: {sorted(before)} -> "
                                 f"{sorted(after)}")
        if locations(dst) != locations(src):
            raise AssertionError(f"references changed: {locations(dst)} vs "
                                 f"{locations(src)}")
        assert_same_tensors(dst, src)
        h.check(dst)
        if onnx.load(dst, load_external_data=False) != onnx.load(
                src, load_external_data=False):
            raise AssertionError("--passes none output differs from the input")
        if set(ref) != set(initializers(dst)):
            raise AssertionError("initializer set changed")


def external_should_write_data_beside_an_output_in_another_folder():
    with h.tempdir() as d:
        src_dir = os.path.join(d, "src")
        out_dir = os.path.join(d, "out")
        os.makedirs(src_dir)
        os.makedirs(out_dir)
        src = external_model(src_dir)
        before = snapshot(src_dir)
        dst = os.path.join(out_dir, "out.onnx")
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", "none", "--quiet"))
        if snapshot(src_dir) != before:
            raise AssertionError("input folder changed")
        for name, loc in locations(dst).items():
            p = os.path.normpath(os.path.join(out_dir, loc))
            if os.path.isabs(loc) or not p.startswith(out_dir + os.sep):
                raise AssertionError(f"{name}: location {loc!r} is not inside {out_dir}")
            if not os.path.isfile(p):
                raise AssertionError(f"{name}: {loc!r} not written beside the output")
        # The output must stand alone: move the source away before reading it.
        shutil.move(src_dir, os.path.join(d, "moved"))
        moved = os.path.join(d, "moved", "model.onnx")
        assert_same_tensors(dst, moved)
        h.check(dst)


def external_should_give_the_same_outputs_after_the_default_passes():
    ok, why = h.ort_available()
    if not ok:
        raise AssertionError(f"ONNX Runtime needed: {why}")
    with h.tempdir() as d:
        src_dir = os.path.join(d, "src")
        out_dir = os.path.join(d, "out")
        os.makedirs(src_dir)
        os.makedirs(out_dir)
        src = external_model(src_dir)
        before = snapshot(src_dir)
        dst = os.path.join(out_dir, "out.onnx")
        h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--quiet"))
        if snapshot(src_dir) != before:
            raise AssertionError("input folder changed")
        h.check(dst)
        feeds = h.random_feeds(src, seed=5)
        h.assert_close(h.run_ort(dst, feeds), h.run_ort(src, feeds))


def _bad_extent_model(folder, offset, length):
    """x + w with w's 24 bytes claimed at offset/length in a 12-byte short.bin."""
    w = onnx.TensorProto(name="w_short", data_type=onnx.TensorProto.FLOAT, dims=[2, 3])
    w.data_location = onnx.TensorProto.EXTERNAL
    w.external_data.add(key="location", value="short.bin")
    if offset is not None:
        w.external_data.add(key="offset", value=str(offset))
    w.external_data.add(key="length", value=str(length))
    vi = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [2, 3])
          for n in ("x", "y")]
    g = helper.make_graph([helper.make_node("Add", ["x", "w_short"], ["y"], name="add")],
                          "short", [vi[0]], [vi[1]], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(folder, "short.bin"), "wb") as f:
        f.write(bytes(12))
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def external_should_refuse_to_copy_data_that_is_not_in_the_file():
    # Copying external data beside the output needs its bytes: a length or offset
    # past the end of the file is an error, not a silently broken output model.
    for offset, length in ((None, 24), (1000, 8), (8, 8)):
        with h.tempdir() as d:
            src_dir = os.path.join(d, "src")
            out_dir = os.path.join(d, "out")
            os.makedirs(src_dir)
            os.makedirs(out_dir)
            src = _bad_extent_model(src_dir, offset, length)
            cp = h.tileopt("optimize", src, "-o", os.path.join(out_dir, "o.onnx"),
                           "--passes", "none")
            lines = cp.stderr.splitlines()
            if (cp.returncode != 1 or len(lines) != 1
                    or not lines[0].startswith("tileopt: error: ")
                    or "w_short" not in lines[0] and "short.bin" not in lines[0]
                    or os.listdir(out_dir)):
                raise AssertionError(
                    f"offset {offset} length {length} in a 12-byte file: exit "
                    f"{cp.returncode}, stderr {cp.stderr!r}, output folder "
                    f"{os.listdir(out_dir)}")


def external_should_not_clobber_another_models_data_in_the_output_folder():
    # Batch jobs write many models into one folder. Two inputs whose data files
    # share a name (w.bin) must not overwrite each other's data there: after both
    # runs, each output still holds its own tensors.
    with h.tempdir() as d:
        srcs = []
        for k, seed in (("a", 1), ("b", 2)):
            folder = os.path.join(d, k)
            os.makedirs(folder)
            src = external_model(folder)
            m = onnx.load(src)
            for t in m.graph.initializer:
                if t.name == "scale":
                    w = np.random.default_rng(seed + 100).standard_normal(
                        (2, 16, 8, 8)).astype(np.float32)
                    t.CopyFrom(numpy_helper.from_array(w, "scale"))
            onnx.save_model(m, src, save_as_external_data=True,
                            all_tensors_to_one_file=True, location="w.bin",
                            size_threshold=0)
            srcs.append(src)
        out_dir = os.path.join(d, "out")
        os.makedirs(out_dir)
        outs = [os.path.join(out_dir, f"{k}.onnx") for k in ("a", "b")]
        for src, dst in zip(srcs, outs):
            h.expect_ok(h.tileopt("optimize", src, "-o", dst, "--passes", "none",
                                  "--quiet"))
        for src, dst in zip(srcs, outs):
            assert_same_tensors(dst, src)


def external_should_refuse_the_input_path_as_output_and_keep_its_data():
    # Writing over the input would leave its data file half replaced on a crash:
    # refused before anything is read, and the model and its data stay as they were.
    with h.tempdir() as d:
        src = external_model(d)
        before = snapshot(d)
        cp = h.tileopt("optimize", src, "-o", src, "--passes", "none", "--quiet")
        if cp.returncode != 2 or "is the input model" not in cp.stderr:
            raise AssertionError(f"exit {cp.returncode}: {cp.stderr!r}")
        if snapshot(d) != before:
            raise AssertionError("the refused run changed the model's folder")


def external_should_follow_a_model_linked_from_a_cache_folder():
    # Hugging Face's cache: snapshots/v/model.onnx and its data are links into one
    # folder of blobs. The data lies beside the model's own target, which counts
    # as the model's folder (ONNX Runtime accepts this layout too).
    with h.tempdir() as d:
        blobs, snap = os.path.join(d, "blobs"), os.path.join(d, "snapshots", "v")
        os.makedirs(blobs)
        os.makedirs(snap)
        src = external_model(blobs)
        os.rename(src, os.path.join(blobs, "guid1"))
        os.rename(os.path.join(blobs, "w.bin"), os.path.join(blobs, "guid2"))
        os.symlink("../../blobs/guid1", os.path.join(snap, "model.onnx"))
        os.symlink("../../blobs/guid2", os.path.join(snap, "w.bin"))
        model = os.path.join(snap, "model.onnx")
        h.expect_ok(h.tileopt("inspect", model))
        out = os.path.join(d, "o.onnx")
        h.expect_ok(h.tileopt("optimize", model, "-o", out, "--passes", "none", "-q"))
        h.check(out)


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

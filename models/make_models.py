#!/usr/bin/python3
"""Make tileopt's small sample models and write them next to this script.

Run with /usr/bin/python3 (python3-onnx). The output is deterministic: fixed seeds,
fixed producer fields, so re-running gives byte-identical files.

  legacy_tile1.onnx   opset 5 / IR 3: Tile-1 (float tiles, axis), legacy Add
                      with broadcast=1 and axis, Relu -> the upgrade pass
  legacy_repeat.onnx  opset 5 / IR 3: Tile-1 of a size-1 axis, legacy Add that
                      broadcasts -> upgrade, then fuse removes the Tile (./run)
  const_tile.onnx     Tile of a constant tensor by constant repeats -> fold
  shape_repeats.onnx  repeats computed by Shape->Gather->Unsqueeze->Concat from a
                      static-shaped input -> fold (shape subgraph) then Tile
  tile_add.onnx       Tile [64,256]x[16,4] then Add with a full-size [1024,1024]
                      operand -> fuse (read x through a strided view)
  bias_tile.onnx      a [1,C,1,1] bias tiled to [N,C,H,W] then Add -> Tile over
                      size-1 axes is a broadcast: fuse/eliminate
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
PRODUCER = "tileopt models/make_models.py"


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def finish(graph, opset, doc, ir_version=None):
    kwargs = {"opset_imports": [helper.make_opsetid("", opset)],
              "producer_name": PRODUCER, "producer_version": "1"}
    if ir_version is not None:
        kwargs["ir_version"] = ir_version
    m = helper.make_model(graph, **kwargs)
    m.doc_string = doc
    m.graph.doc_string = doc
    return m


def legacy_tile1():
    # Tile-1 types tiles/axis as T (float); the upgrade pass must read them as whole
    # numbers. IR 3 requires every initializer to be a graph input too.
    x = vi("x", TensorProto.FLOAT, [2, 3, 4])
    tiles = numpy_helper.from_array(np.array([2.0], dtype=np.float32), "tiles")
    axis = numpy_helper.from_array(np.array([1.0], dtype=np.float32), "axis")
    # B [6] lines up with A's axis 1 only (legacy axis broadcast); numpy-style
    # broadcast in Add-7+ needs it as [6, 1].
    b = numpy_helper.from_array(
        np.arange(6, dtype=np.float32) * 0.5 - 1.25, "b")
    nodes = [
        helper.make_node("Tile", ["x", "tiles", "axis"], ["t"], name="tile"),
        helper.make_node("Add", ["t", "b"], ["s"], name="add", broadcast=1, axis=1),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes, "legacy_tile1",
        [x, vi("tiles", TensorProto.FLOAT, [1]), vi("axis", TensorProto.FLOAT, [1]),
         vi("b", TensorProto.FLOAT, [6])],
        [vi("y", TensorProto.FLOAT, [2, 6, 4])],
        initializer=[tiles, axis, b])
    doc = ("Legacy opset-5 model (IR 3). Tile-1 repeats x[2,3,4] along axis 1 by "
           "tiles=2, both given as float initializers (also graph inputs, as IR 3 "
           "requires); Add-1 with broadcast=1, axis=1 adds b[6] along axis 1; then "
           "Relu-1. Shows the upgrade pass: Tile-1 -> Tile-13 with int64 repeats "
           "[1,2,1], and the legacy broadcast Add -> numpy-broadcast Add.")
    return finish(g, 5, doc, ir_version=3)


def legacy_repeat():
    # What ./run shows: a legacy model whose Tile is only a broadcast. Tile-1
    # repeats x[2,1,4] 3 times along its size-1 axis 1; the legacy Add adds
    # b[3,4] (broadcast=1: b matches A's trailing axes). Once upgraded, Add-7's
    # numpy broadcasting of x against b gives the same [2,3,4]: fuse removes
    # the Tile.
    x = vi("x", TensorProto.FLOAT, [2, 1, 4])
    tiles = numpy_helper.from_array(np.array([3.0], dtype=np.float32), "tiles")
    axis = numpy_helper.from_array(np.array([1.0], dtype=np.float32), "axis")
    b = numpy_helper.from_array(
        (np.arange(12, dtype=np.float32) * 0.25 - 1.5).reshape(3, 4), "b")
    nodes = [
        helper.make_node("Tile", ["x", "tiles", "axis"], ["t"], name="tile"),
        helper.make_node("Add", ["t", "b"], ["s"], name="add", broadcast=1),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes, "legacy_repeat",
        [x, vi("tiles", TensorProto.FLOAT, [1]), vi("axis", TensorProto.FLOAT, [1]),
         vi("b", TensorProto.FLOAT, [3, 4])],
        [vi("y", TensorProto.FLOAT, [2, 3, 4])],
        initializer=[tiles, axis, b])
    doc = ("Legacy opset-5 model (IR 3). Tile-1 repeats x[2,1,4] 3 times along its "
           "size-1 axis 1 (float tiles and axis); Add-1 with broadcast=1 adds b[3,4]; "
           "then Relu-1. Shows upgrade and fuse together: once Add broadcasts numpy-"
           "style it repeats x itself, so the Tile goes.")
    return finish(g, 5, doc, ir_version=3)


def const_tile():
    rng = np.random.default_rng(1)
    c = numpy_helper.from_array(rng.standard_normal((2, 3)).astype(np.float32), "c")
    reps = helper.make_tensor("reps_value", TensorProto.INT64, [2], [3, 2])
    nodes = [
        helper.make_node("Constant", [], ["reps"], name="reps_const", value=reps),
        helper.make_node("Tile", ["c", "reps"], ["ct"], name="tile_const"),
        helper.make_node("Add", ["x", "ct"], ["y"], name="add"),
    ]
    g = helper.make_graph(nodes, "const_tile",
                          [vi("x", TensorProto.FLOAT, [6, 6])],
                          [vi("y", TensorProto.FLOAT, [6, 6])],
                          initializer=[c])
    doc = ("Tile of constants: c[2,3] (initializer) tiled by repeats [3,2] (a "
           "Constant node) gives a constant [6,6] that is added to input x. Shows "
           "the fold pass: the Tile becomes one [6,6] initializer.")
    return finish(g, 13, doc)


def shape_repeats():
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "idx0"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "ones2"], ["reps"], name="concat", axis=0),
        helper.make_node("Tile", ["x", "reps"], ["y"], name="tile"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, dtype=np.int64), "idx0"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
        numpy_helper.from_array(np.array([1, 1], dtype=np.int64), "ones2"),
    ]
    g = helper.make_graph(nodes, "shape_repeats",
                          [vi("x", TensorProto.FLOAT, [2, 3, 4])],
                          [vi("y", TensorProto.FLOAT, [4, 3, 4])],
                          initializer=inits)
    doc = ("Repeats computed at run time from a static shape: "
           "Shape(x[2,3,4]) -> Gather(0) -> Unsqueeze([0]) -> Concat with [1,1] "
           "gives repeats [2,1,1], then Tile(x) -> [4,3,4]. Shows the fold pass with "
           "shape inference: the shape subgraph folds to the constant [2,1,1].")
    return finish(g, 13, doc)


def tile_add():
    reps = numpy_helper.from_array(np.array([16, 4], dtype=np.int64), "reps")
    nodes = [
        helper.make_node("Tile", ["x", "reps"], ["xt"], name="tile"),
        helper.make_node("Add", ["xt", "y"], ["z"], name="add"),
    ]
    g = helper.make_graph(nodes, "tile_add",
                          [vi("x", TensorProto.FLOAT, [64, 256]),
                           vi("y", TensorProto.FLOAT, [1024, 1024])],
                          [vi("z", TensorProto.FLOAT, [1024, 1024])],
                          initializer=[reps])
    doc = ("Tile then Add with a full-size operand: x[64,256] tiled by [16,4] to "
           "[1024,1024] (4 MiB materialized) plus y[1024,1024]. Shows the fuse pass: "
           "the Add reads x through a strided view instead of a tiled copy.")
    return finish(g, 13, doc)


def bias_tile():
    n, c, h, w = 2, 16, 8, 8
    rng = np.random.default_rng(2)
    bias = numpy_helper.from_array(
        rng.standard_normal((1, c, 1, 1)).astype(np.float32), "bias")
    reps = numpy_helper.from_array(np.array([n, 1, h, w], dtype=np.int64), "reps")
    nodes = [
        helper.make_node("Tile", ["bias", "reps"], ["bt"], name="tile_bias"),
        helper.make_node("Add", ["x", "bt"], ["y"], name="add_bias"),
    ]
    g = helper.make_graph(nodes, "bias_tile",
                          [vi("x", TensorProto.FLOAT, [n, c, h, w])],
                          [vi("y", TensorProto.FLOAT, [n, c, h, w])],
                          initializer=[bias, reps])
    doc = (f"A [1,{c},1,1] bias tiled by [{n},1,{h},{w}] to [{n},{c},{h},{w}] then "
           "added to x. Every tiled axis has size 1, so the Tile is a broadcast the "
           "Add does by itself: shows fuse removing the Tile (Add reads bias "
           "directly) instead of materializing it.")
    return finish(g, 13, doc)


MODELS = {
    "legacy_tile1.onnx": legacy_tile1,
    "legacy_repeat.onnx": legacy_repeat,
    "const_tile.onnx": const_tile,
    "shape_repeats.onnx": shape_repeats,
    "tile_add.onnx": tile_add,
    "bias_tile.onnx": bias_tile,
}


def main():
    for name, make in MODELS.items():
        m = make()
        onnx.checker.check_model(m, full_check=True)
        path = os.path.join(HERE, name)
        onnx.save_model(m, path)
        print(f"{path}: opset {m.opset_import[0].version}, ir {m.ir_version}, "
              f"{len(m.graph.node)} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

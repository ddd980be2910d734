#!/usr/bin/python3
"""Shape-subgraph kernels over views: chains where Tile, Expand, Reshape and
Unsqueeze (views, not copies) feed Transpose, Slice, Gather, Concat, ReduceSum
and each other, for float, int64 and string tensors, checked against numpy
through `tileopt run`."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(object): TensorProto.STRING}


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def check(nodes, x, inits, want, opset=13):
    """Run nodes (input x, output y) and compare y with want exactly."""
    g = helper.make_graph(nodes, "g",
                          [helper.make_tensor_value_info("x", ELEM[x.dtype], list(x.shape))],
                          [helper.make_tensor_value_info("y", ELEM[want.dtype], None)],
                          [const(k, v) for k, v in inits.items()])
    with h.tempdir() as d:
        path = os.path.join(d, "m.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
        got = h.run_tileopt(path, [x])[0]
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert (got == want).all(), (got, want)


def X(dtype, shape):
    n = int(np.prod(shape))
    if dtype is object:
        return np.array([f"s{i}" for i in range(n)], dtype=object).reshape(shape)
    return np.arange(n).astype(dtype).reshape(shape)


TYPES = (np.float32, np.int64, object)


def chains_should_transpose_and_slice_a_tile_view():
    for t in TYPES:
        x = X(t, (2, 3))
        nodes = [helper.make_node("Tile", ["x", "r"], ["a"]),
                 helper.make_node("Transpose", ["a"], ["b"], perm=[1, 0]),
                 helper.make_node("Slice", ["b", "s", "e", "ax", "st"], ["y"])]
        inits = {"r": np.array([2, 2], np.int64), "s": np.array([5, 0], np.int64),
                 "e": np.array([-100, 3], np.int64), "ax": np.array([0, 1], np.int64),
                 "st": np.array([-2, 2], np.int64)}
        want = np.tile(x, (2, 2)).T[5::-2, 0:3:2]
        check(nodes, x, inits, want)


def chains_should_gather_from_a_reshaped_expand_view():
    for t in TYPES:
        x = X(t, (3, 1))
        nodes = [helper.make_node("Expand", ["x", "shape"], ["a"]),
                 helper.make_node("Reshape", ["a", "s2"], ["b"]),
                 helper.make_node("Gather", ["b", "idx"], ["y"], axis=1)]
        idx = np.array([[1, -1], [5, 0]], np.int64)
        inits = {"shape": np.array([2, 3, 4], np.int64), "s2": np.array([4, -1], np.int64),
                 "idx": idx}
        want = np.take(np.broadcast_to(x, (2, 3, 4)).reshape(4, 6), idx, axis=1)
        check(nodes, x, inits, want)


def chains_should_concat_views_of_different_layouts():
    # a Tile view, a reshaped Expand view and an Unsqueeze/Squeeze round trip
    for t in TYPES:
        x = X(t, (2, 3))
        nodes = [helper.make_node("Tile", ["x", "r"], ["a"]),
                 helper.make_node("Expand", ["x", "shape"], ["b"]),
                 helper.make_node("Reshape", ["b", "s2"], ["b2"]),
                 helper.make_node("Unsqueeze", ["x", "ax"], ["c0"]),
                 helper.make_node("Squeeze", ["c0", "ax"], ["c"]),
                 helper.make_node("Concat", ["a", "b2", "c"], ["y"], axis=0)]
        inits = {"r": np.array([2, 1], np.int64), "shape": np.array([3, 2, 3], np.int64),
                 "s2": np.array([-1, 3], np.int64), "ax": np.array([0], np.int64)}
        b = np.broadcast_to(x, (3, 2, 3)).reshape(6, 3)
        want = np.concatenate([np.tile(x, (2, 1)), b, x], axis=0)
        check(nodes, x, inits, want)


def chains_should_reduce_a_tile_view():
    x = X(np.float32, (2, 3))
    nodes = [helper.make_node("Tile", ["x", "r"], ["a"]),
             helper.make_node("Unsqueeze", ["a", "u"], ["b"]),
             helper.make_node("ReduceSum", ["b", "ax"], ["y"], keepdims=0)]
    inits = {"r": np.array([3, 2], np.int64), "u": np.array([1], np.int64),
             "ax": np.array([0, -1], np.int64)}
    want = np.tile(x, (3, 2))[:, None, :].sum(axis=(0, 2)).astype(np.float32)
    check(nodes, x, inits, want)
    x = X(np.int64, (2, 3))
    want = np.tile(x, (3, 2))[:, None, :].sum(axis=(0, 2))
    check(nodes, x, inits, want)


def chains_should_fold_a_shape_subgraph_into_tile_repeats():
    # repeats = Concat(Gather(Shape(x), 1), [2]): Tile(x[2,3], [3, 2])
    x = X(np.float32, (2, 3))
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["d1"], axis=0),
             helper.make_node("Unsqueeze", ["d1", "zero"], ["d1v"]),
             helper.make_node("Concat", ["d1v", "two"], ["rep"], axis=0),
             helper.make_node("Tile", ["x", "rep"], ["y"])]
    inits = {"one": np.array(1, np.int64), "zero": np.array([0], np.int64),
             "two": np.array([2], np.int64)}
    check(nodes, x, inits, np.tile(x, (3, 2)))


def chains_should_flatten_and_slice_an_expand_view_backwards():
    for t in TYPES:
        x = X(t, (1, 4))
        nodes = [helper.make_node("Expand", ["x", "shape"], ["a"]),
                 helper.make_node("Flatten", ["a"], ["b"], axis=1),
                 helper.make_node("Slice", ["b", "s", "e", "ax", "st"], ["y"])]
        inits = {"shape": np.array([3, 4], np.int64), "s": np.array([-1], np.int64),
                 "e": np.array([-100], np.int64), "ax": np.array([1], np.int64),
                 "st": np.array([-3], np.int64)}
        want = np.broadcast_to(x, (3, 4)).reshape(3, 4)[:, ::-3]
        check(nodes, x, inits, want)


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

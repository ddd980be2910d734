#!/usr/bin/python3
"""The random generators in the evaluator: repeatable run to run (what --verify
needs), with the distribution each op promises, and a seed attribute that
decides the stream. No runtime's stream is reproduced, so no values are
compared with ONNX Runtime's."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402


def run(node, feeds=None, inputs=(), opset=15):
    g = helper.make_graph([node], "g", list(inputs),
                          [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                           for o in node.output])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    with h.tempdir() as d:
        p = os.path.join(d, "m.onnx")
        onnx.save(m, p)
        return h.run_tileopt(p, feeds or {})[0]


def random_uniform_should_be_repeatable_and_within_its_bounds():
    node = helper.make_node("RandomUniform", [], ["y"], shape=[200, 50], low=-2.0, high=3.0)
    a, b = run(node), run(node)
    assert a.dtype == np.float32 and a.shape == (200, 50), (a.dtype, a.shape)
    assert np.array_equal(a, b), "two runs differ"
    assert a.min() >= -2 and a.max() < 3, (a.min(), a.max())
    assert abs(a.mean() - 0.5) < 0.05 and abs(a.std() - 5 / np.sqrt(12)) < 0.05, a.std()
    seeded = [run(helper.make_node("RandomUniform", [], ["y"], shape=[100], seed=s))
              for s in (1.0, 1.0, 2.0)]
    assert np.array_equal(seeded[0], seeded[1]) and not np.array_equal(seeded[0], seeded[2])


def random_normal_should_have_its_mean_and_scale():
    node = helper.make_node("RandomNormal", [], ["y"], shape=[100000], mean=1.5, scale=2.0,
                            dtype=TensorProto.DOUBLE)
    y = run(node)
    assert y.dtype == np.float64 and np.isfinite(y).all()
    assert abs(y.mean() - 1.5) < 0.03 and abs(y.std() - 2.0) < 0.03, (y.mean(), y.std())


def like_forms_should_take_the_input_shape_and_type():
    x = np.zeros((3, 4, 5), np.float64)
    vi = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3, 4, 5])
    for op in ("RandomUniformLike", "RandomNormalLike"):
        y = run(helper.make_node(op, ["x"], ["y"]), {"x": x}, [vi])
        assert y.dtype == np.float64 and y.shape == (3, 4, 5), (op, y.dtype, y.shape)
        y = run(helper.make_node(op, ["x"], ["y"], dtype=TensorProto.FLOAT), {"x": x}, [vi])
        assert y.dtype == np.float32, (op, y.dtype)


def bernoulli_should_draw_ones_with_the_given_probability():
    p = np.tile(np.array([0.0, 0.2, 0.9, 1.0], np.float32), (20000, 1))
    vi = helper.make_tensor_value_info("p", TensorProto.FLOAT, list(p.shape))
    y = run(helper.make_node("Bernoulli", ["p"], ["y"], dtype=TensorProto.INT32), {"p": p}, [vi])
    assert y.dtype == np.int32 and set(np.unique(y)) <= {0, 1}
    means = y.mean(axis=0)
    assert means[0] == 0 and means[3] == 1, means
    assert abs(means[1] - 0.2) < 0.02 and abs(means[2] - 0.9) < 0.02, means


def multinomial_should_sample_classes_by_their_probabilities():
    logp = np.log(np.array([[0.1, 0.6, 0.3], [1.0, 1e-30, 1e-30]], np.float32))
    vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = run(helper.make_node("Multinomial", ["x"], ["y"], sample_size=30000,
                             dtype=TensorProto.INT64), {"x": logp}, [vi], opset=7)
    assert y.dtype == np.int64 and y.shape == (2, 30000), (y.dtype, y.shape)
    freq = np.bincount(y[0], minlength=3) / 30000
    assert np.abs(freq - [0.1, 0.6, 0.3]).max() < 0.02, freq
    assert (y[1] == 0).all()


def dropout_in_training_should_scale_what_it_keeps():
    x = np.ones((400, 100), np.float32)
    vis = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [400, 100]),
           helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
           helper.make_tensor_value_info("t", TensorProto.BOOL, [])]
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    g = helper.make_graph([node], "g", vis,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("mask", TensorProto.BOOL, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    feeds = {"x": x, "r": np.array(0.25, np.float32), "t": np.array(True)}
    with h.tempdir() as d:
        p = os.path.join(d, "m.onnx")
        onnx.save(m, p)
        y, mask = h.run_tileopt(p, feeds)
        assert np.array_equal(h.run_tileopt(p, feeds)[0], y), "two runs differ"
    assert mask.dtype == np.bool_ and abs(mask.mean() - 0.75) < 0.01, mask.mean()
    assert np.allclose(y, np.where(mask, 1 / 0.75, 0)), y


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

#!/usr/bin/python3
"""RNN, GRU and LSTM with layout=1 (batch first, opset 14) in the evaluator,
against ONNX Runtime on the same op with layout=0 and transposed inputs and
outputs: ORT refuses layout=1 itself, and ONNX 1.12's node tests give it no
initial states, so this is where batch-first initial states are checked."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

B, S, I, H = 3, 4, 5, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def model(cell, dirs, direction, layout, inits):
    ins = ["X", "W", "R", "B", "", "h0"] + (["c0"] if cell == "LSTM" else [])
    outs = ["Y", "Yh"] + (["Yc"] if cell == "LSTM" else [])
    node = helper.make_node(cell, ins, outs, hidden_size=H, layout=layout, direction=direction)
    xs, hs = ([B, S, I], [B, dirs, H]) if layout else ([S, B, I], [dirs, B, H])
    vis = [helper.make_tensor_value_info("X", TensorProto.FLOAT, xs),
           helper.make_tensor_value_info("h0", TensorProto.FLOAT, hs)]
    if cell == "LSTM":
        vis.append(helper.make_tensor_value_info("c0", TensorProto.FLOAT, hs))
    g = helper.make_graph([node], "g", vis,
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                           for o in outs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


def rnn_should_read_batch_first_inputs_and_initial_states():
    rng = np.random.default_rng(0)
    for cell, g in GATES.items():
        for dirs, direction in ((1, "forward"), (2, "bidirectional"), (1, "reverse")):
            inits = [numpy_helper.from_array(
                         rng.standard_normal((dirs, g * H, I)).astype(np.float32), "W"),
                     numpy_helper.from_array(
                         rng.standard_normal((dirs, g * H, H)).astype(np.float32), "R"),
                     numpy_helper.from_array(
                         rng.standard_normal((dirs, 2 * g * H)).astype(np.float32), "B")]
            x = rng.standard_normal((B, S, I)).astype(np.float32)
            h0 = rng.standard_normal((B, dirs, H)).astype(np.float32)
            c0 = rng.standard_normal((B, dirs, H)).astype(np.float32)
            f1 = {"X": x, "h0": h0}
            f0 = {"X": x.transpose(1, 0, 2).copy(), "h0": h0.transpose(1, 0, 2).copy()}
            if cell == "LSTM":
                f1["c0"], f0["c0"] = c0, c0.transpose(1, 0, 2).copy()
            with h.tempdir() as d:
                p1, p0 = os.path.join(d, "batch_first.onnx"), os.path.join(d, "seq_first.onnx")
                onnx.save(model(cell, dirs, direction, 1, inits), p1)
                onnx.save(model(cell, dirs, direction, 0, inits), p0)
                want = h.run_ort(p0, f0)
                want = [want[0].transpose(2, 0, 1, 3)] + [w.transpose(1, 0, 2) for w in want[1:]]
                h.assert_close(h.run_tileopt(p1, f1), want, 1e-4, 1e-5,
                               what=f"{cell} {direction}")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

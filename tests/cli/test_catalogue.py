#!/usr/bin/python3
"""Bad-input catalogue: a table of malformed inputs, each run through
the loader, every pass alone, the default pipeline, `run` and `inspect` (the
commands its row lists). For each: exit 1 (2 for usage), one `tileopt: error:`
line naming the problem and the node or field, no sanitizer report (the ASan
build's binary runs this in its stage of ./test), no output file, input
untouched (rules in hostile.py). Rows for passes this build lacks are reported
as skipped with the reason.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile as x  # noqa: E402
from hostile import F, const, h, model, vi  # noqa: E402

PASSES = ("upgrade", "fold", "fuse")
LOAD = ("none", "optimize") + PASSES + ("inspect", "run")   # fails at load
EVAL = ("run",)                    # fails once values are computed
# Invalid constants feeding a Tile make the model invalid: the fold pass (and so
# the default pipeline) fails on them, and so does fuse on invalid constant repeats.
# fuse alone does not evaluate shape subgraphs (a bad Gather feeding repeats): it
# skips that Tile with a reason, run and checked for crashes, listed as a gap.
EVAL_FOLD = EVAL + ("optimize", "fold")
EVAL_TILE = EVAL_FOLD + ("fuse",)
EVAL_GAPS = ("fuse",)
SKIPPED = []
GAPS = []


# ------------------------------------------------------------ wire format

varint, field = x.varint, x.field


def small_model():
    """Relu then Tile by a constant: small, but with nodes, initializers, value
    infos and an opset import, so its field boundaries cover each message kind."""
    return model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Tile", ["r", "reps"], ["y"], name="tile")],
                 [vi("x")], [vi("y", (4, 3))], [const("reps", np.array([2, 1], np.int64))])


def spliced(extra_graph_field=b"", extra_model_field=b""):
    """small_model() re-encoded with raw bytes appended to its GraphProto or
    ModelProto (to plant wrong wire types inside a model that is otherwise fine)."""
    m = small_model()
    out = field(1, 0, varint(m.ir_version))
    out += field(7, 2, m.graph.SerializeToString() + extra_graph_field)
    out += field(8, 2, m.opset_import[0].SerializeToString())
    return out + extra_model_field


def _read_varint(data, p):
    """The varint at data[p]: (value, position after it)."""
    v, shift = 0, 0
    while True:
        b = data[p]
        p += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, p


def field_boundaries(data, lo=0, hi=None, desc=onnx.ModelProto.DESCRIPTOR, out=None):
    """Offsets where a field (at any depth) starts or ends, descending into
    sub-messages the schema knows."""
    hi = len(data) if hi is None else hi
    out = set() if out is None else out
    p = lo
    while p < hi:
        out.add(p)
        key, p = _read_varint(data, p)
        num, wire = key >> 3, key & 7
        if wire == 0:
            while data[p] & 0x80:
                p += 1
            p += 1
        elif wire == 1:
            p += 8
        elif wire == 5:
            p += 4
        elif wire == 2:
            n, p = _read_varint(data, p)
            out.add(p)
            f = desc.fields_by_number.get(num)
            if f is not None and f.message_type is not None:
                field_boundaries(data, p, p + n, f.message_type, out)
            p += n
        out.add(p)
    return out


# ------------------------------------------------------------ model builders

def tile13(repeats_tensor, x_shape=(2, 3), x_elem=F):
    return model([helper.make_node("Tile", ["x", "reps"], ["y"], name="bad_tile")],
                 [vi("x", x_shape, x_elem)], [vi("y", None)], [repeats_tensor])


def tile1(tiles, axis, x_shape=(2, 3)):
    return model([helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="legacy_tile")],
                 [vi("x", x_shape)], [vi("y", None)],
                 [const("tiles", np.array(tiles, np.float32)),
                  const("axis", np.array(axis, np.float32))], opset=5, ir=3)


def init_model(t):
    return model([helper.make_node("Add", ["x", t.name], ["y"], name="add_w")],
                 [vi("x")], [vi("y")], [t])


def raw_tensor(name, dims, raw=None, elem=F, **typed):
    t = TensorProto(name=name, data_type=elem, dims=list(dims))
    if raw is not None:
        t.raw_data = raw
    for k, v in typed.items():
        getattr(t, k).extend(v)
    return t


def external(location, length=24, offset=None):
    t = TensorProto(name="w_ext", data_type=F, dims=[2, 3])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    if offset is not None:
        t.external_data.add(key="offset", value=str(offset))
    t.external_data.add(key="length", value=str(length))
    return init_model(t)


def external_twice(first, second):
    m = external(first)
    e = m.graph.initializer[0].external_data.add()
    e.key, e.value = "location", second
    return m


def external_in_if_branch(location):
    # The data file is read by a Constant inside an If branch.
    t = TensorProto(name="w_branch", data_type=F, dims=[2, 3])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    t.external_data.add(key="length", value="24")
    then_g = helper.make_graph([helper.make_node("Constant", [], ["t0"], name="then_c", value=t)],
                               "then", [], [vi("t0")])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e0"], name="else_relu")],
                               "else", [], [vi("e0")])
    return model([helper.make_node("If", ["c"], ["y"], name="if_ext",
                                   then_branch=then_g, else_branch=else_g)],
                 [vi("x"), vi("c", (), TensorProto.BOOL)], [vi("y")])


def if_mismatch():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t0"], name="then_relu")],
                               "then", [], [vi("t0")])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e0"], name="else_relu"),
                                helper.make_node("Neg", ["x"], ["e1"], name="else_neg")],
                               "else", [], [vi("e0"), vi("e1")])
    return model([helper.make_node("If", ["c"], ["y"], name="bad_if",
                                   then_branch=then_g, else_branch=else_g)],
                 [vi("x"), vi("c", (), TensorProto.BOOL)], [vi("y")])


def shape_chain_axis(axis):
    # repeats = Concat(Unsqueeze(Gather(Shape(x), axis))): fold evaluates it.
    return model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                  helper.make_node("Gather", ["s", "i"], ["d"], name="bad_gather", axis=0),
                  helper.make_node("Unsqueeze", ["d", "ax"], ["d1"], name="unsq"),
                  helper.make_node("Concat", ["d1", "one"], ["reps"], name="cat", axis=0),
                  helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")],
                 [vi("x")], [vi("y", None)],
                 [const("i", np.array(axis, np.int64)), const("ax", np.array([0], np.int64)),
                  const("one", np.array([1], np.int64))])


def without(m, field):
    m.ClearField(field)
    return m


def foreign_opset_only():
    m = model([helper.make_node("Relu", ["x"], ["y"], name="plain_relu")], [vi("x")], [vi("y")])
    m.opset_import[0].domain = "com.example"
    return m


def opset_imported_twice():
    m = model([helper.make_node("Relu", ["x"], ["y"], name="plain_relu")], [vi("x")], [vi("y")])
    m.opset_import.append(helper.make_opsetid("ai.onnx", 11))
    return m


def loop_body_writing_its_input():
    # The body's node writes "v_in", one of the body's own inputs.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
         helper.make_node("Relu", ["x"], ["v_in"], name="body_shadow"),
         helper.make_node("Identity", ["v_in"], ["v_out"], name="body_out")],
        "body", [vi("iter", (), TensorProto.INT64), vi("cond_in", (), TensorProto.BOOL),
                 vi("v_in")],
        [vi("cond_out", (), TensorProto.BOOL), vi("v_out")])
    return model([helper.make_node("Loop", ["n", "", "x"], ["y"], name="loop", body=body)],
                 [vi("x")], [vi("y")], [const("n", np.array(2, np.int64))])


def function_defining_twice():
    f = helper.make_function("com.example", "Twice", ["a"], ["b"],
                             [helper.make_node("Relu", ["a"], ["t"]),
                              helper.make_node("Neg", ["a"], ["t"]),
                              helper.make_node("Identity", ["t"], ["b"])],
                             [helper.make_opsetid("", 13)])
    m = model([helper.make_node("Twice", ["x"], ["y"], name="call", domain="com.example")],
              [vi("x")], [vi("y")])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    m.functions.append(f)
    return m


def tile_inputs(inputs):
    return model([helper.make_node("Tile", inputs, ["y"], name="bad_tile")],
                 [vi("x")], [vi("y", None)], [const("reps", np.array([2, 1], np.int64)),
                                              const("axis", np.array(0, np.int64))])


def if_branch_not_a_graph():
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e0"], name="else_relu")],
                               "else", [], [vi("e0")])
    return model([helper.make_node("If", ["c"], ["y"], name="bad_if", then_branch=3,
                                   else_branch=else_g)],
                 [vi("x"), vi("c", (), TensorProto.BOOL)], [vi("y")])


def loop_with_body(inputs, outputs, nodes):
    body = helper.make_graph(nodes, "body", inputs, outputs)
    return model([helper.make_node("Loop", ["n", "", "x"], ["y"], name="bad_loop", body=body)],
                 [vi("x")], [vi("y")], [const("n", np.array(2, np.int64))])


def scan(num_scan_inputs, axes=None):
    body = helper.make_graph([helper.make_node("Add", ["s", "xi"], ["s2"], name="acc"),
                              helper.make_node("Identity", ["s2"], ["o"], name="out")],
                             "body", [vi("s", (3,)), vi("xi", (3,))], [vi("s2", (3,)), vi("o", (3,))])
    attrs = {"num_scan_inputs": num_scan_inputs}
    if axes is not None:
        attrs["scan_input_axes"] = axes
    return model([helper.make_node("Scan", ["s0", "x"], ["sf", "ys"], name="bad_scan",
                                   body=body, **attrs)],
                 [vi("s0", (3,)), vi("x", (2, 3))], [vi("sf", (3,)), vi("ys", (2, 3))])


def legacy_add(a_shape, b_shape, **attrs):
    return model([helper.make_node("Add", ["a", "b"], ["y"], name="legacy_add", **attrs)],
                 [vi("a", a_shape), vi("b", b_shape)], [vi("y", None)], opset=5, ir=3)


# --------------------------------------------------------------- the table
# (name, builder, pattern, commands, extra files next to the model)

def cases():
    t = small_model()
    return [
        ("empty file", lambda: b"", r"empty", LOAD),
        ("random bytes", lambda: np.random.default_rng(11).bytes(512),
         r"malformed|truncated|protobuf", LOAD),
        ("wrong wire type: ModelProto.graph as a varint",
         lambda: field(1, 0, varint(8)) + field(7, 0, varint(1)) +
         field(8, 2, t.opset_import[0].SerializeToString()),
         r"malformed|protobuf|graph", LOAD),
        ("wrong wire type: ModelProto.ir_version as bytes",
         lambda: spliced(extra_model_field=field(1, 2, b"\x08")),
         r"malformed|protobuf", LOAD),
        ("wrong wire type: GraphProto.node as a varint",
         lambda: spliced(extra_graph_field=field(1, 0, varint(3))),
         r"malformed|protobuf", LOAD),
        ("wrong wire type: GraphProto.initializer as fixed64",
         lambda: spliced(extra_graph_field=field(5, 1, bytes(8))),
         r"malformed|protobuf", LOAD),
        ("field number 0 (found by fuzz_load)",
         lambda: spliced(extra_graph_field=b"\x80\x00\x00"),
         r"field number 0|malformed", LOAD),
        ("nesting 3000 levels deep", lambda: x.deep_nesting(3000), r"nest|deep|depth", LOAD),
        ("negative initializer dim",
         lambda: init_model(raw_tensor("w_neg", [2, -3], raw=bytes(24))),
         r"w_neg.*negative", LOAD),
        ("huge dims without data (100 GiB)",
         lambda: init_model(raw_tensor("w_huge", [100, 1024, 1024, 256])),
         r"w_huge.*(need|holds)", LOAD),
        ("dims whose product overflows",
         lambda: init_model(raw_tensor("w_ovf", [1 << 40, 1 << 40, 1 << 40], raw=bytes(4))),
         r"w_ovf.*overflow", LOAD),
        ("raw_data shorter than the shape",
         lambda: init_model(raw_tensor("w_short", [2, 3], raw=bytes(20))),
         r"w_short.*raw_data has 20 bytes", LOAD),
        ("typed data longer than the shape",
         lambda: init_model(raw_tensor("w_long", [2, 3], float_data=[1.0] * 7)),
         r"w_long.*7 values", LOAD),
        ("unknown element type of an initializer",
         lambda: init_model(raw_tensor("w_type", [2, 3], raw=bytes(24), elem=77)),
         r"w_type|77", LOAD),
        ("a node reading an undefined value",
         lambda: model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add_ghost")],
                       [vi("x")], [vi("y")]),
         r"ghost", LOAD),
        ("two nodes writing one value",
         lambda: model([helper.make_node("Relu", ["x"], ["t"], name="writer_a"),
                        helper.make_node("Neg", ["x"], ["t"], name="writer_b"),
                        helper.make_node("Identity", ["t"], ["y"], name="id")],
                       [vi("x")], [vi("y")]),
         r"writer_a|writer_b|'t'", LOAD),
        ("a node output shadowing an initializer",
         lambda: model([helper.make_node("Relu", ["x"], ["reps"], name="shadow_relu"),
                        helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")],
                       [vi("x")], [vi("y", None)], [const("reps", np.array([2, 1], np.int64))]),
         r"'reps'.*defined twice.*shadow_relu", LOAD),
        ("a node output shadowing a graph input",
         lambda: model([helper.make_node("Relu", ["x"], ["x2"], name="shadow_in"),
                        helper.make_node("Add", ["x", "x2"], ["y"], name="add")],
                       [vi("x"), vi("x2")], [vi("y")]),
         r"'x2'.*defined twice.*shadow_in", LOAD),
        ("a graph input listed twice",
         lambda: model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                       [vi("x"), vi("x")], [vi("y")]),
         r"'x'.*twice", LOAD),
        ("a Loop body node writing its own body's input", loop_body_writing_its_input,
         r"'v_in'.*defined twice.*body_shadow", LOAD),
        ("a function defining a value twice", function_defining_twice,
         r"function Twice.*'t'.*twice", LOAD),
        ("no ir_version",
         lambda: without(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                               [vi("x")], [vi("y")]), "ir_version"),
         r"ir_version", LOAD),
        ("no opset import for the default domain", foreign_opset_only,
         r"default domain.*plain_relu", LOAD),
        ("the default domain imported at two versions", opset_imported_twice,
         r"default domain versions 13 and 11.*ambiguous", LOAD),
        ("a cycle",
         lambda: model([helper.make_node("Add", ["x", "c"], ["a"], name="cyc_add"),
                        helper.make_node("Relu", ["a"], ["c"], name="cyc_relu")],
                       [vi("x")], [vi("a")]),
         r"cycl", LOAD),
        ("a graph output nothing produces",
         lambda: model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                       [vi("x")], [vi("y"), vi("nowhere")]),
         r"nowhere", LOAD),
        ("If branches with different output counts", if_mismatch,
         r"bad_if.*(branch|output)|(branch|output).*bad_if", LOAD),
        ("Tile repeats of the wrong type (float)",
         lambda: tile13(const("reps", np.array([2.0, 1.0], np.float32))),
         r"bad_tile.*repeats|repeats.*bad_tile", EVAL_TILE),
        ("Tile repeats of the wrong length",
         lambda: tile13(const("reps", np.array([2, 2, 2], np.int64))),
         r"bad_tile.*repeats|repeats.*bad_tile", EVAL_TILE),
        ("Tile repeats negative",
         lambda: tile13(const("reps", np.array([2, -1], np.int64))),
         r"bad_tile.*negative|negative.*bad_tile", EVAL_TILE),
        ("Tile repeats 2-D",
         lambda: tile13(const("reps", np.array([[2, 1]], np.int64))),
         r"bad_tile.*repeats|repeats.*bad_tile", EVAL_TILE),
        ("Tile repeats that overflow the output size",
         lambda: tile13(const("reps", np.array([1 << 62, 1 << 62], np.int64))),
         r"bad_tile.*overflow|overflow.*bad_tile|bad_tile.*limit", EVAL_TILE),
        ("Tile repeats int32 (the schema takes int64 only)",
         lambda: tile13(const("reps", np.array([2, 1], np.int32))),
         r"bad_tile.*int64|int64.*bad_tile", EVAL_TILE),
        ("Tile output whose byte size overflows 64 bits",
         lambda: tile13(const("reps", np.array([1 << 31, 1 << 31], np.int64)), (1, 1)),
         r"bad_tile.*(overflow|64 bits|limit)", EVAL_TILE),
        ("legacy Add without broadcast=1 on unequal shapes",
         lambda: legacy_add((2, 3), (3,)),
         r"legacy_add.*broadcast", ("optimize", "upgrade", "run")),
        ("Tile with its repeats input omitted", lambda: tile_inputs(["x", ""]),
         r"bad_tile.*input and repeats", LOAD),
        ("Tile with three inputs at opset 13", lambda: tile_inputs(["x", "reps", "axis"]),
         r"bad_tile.*input and repeats", LOAD),
        ("If whose branch attribute is not a graph", if_branch_not_a_graph,
         r"bad_if.*then_branch.*not a graph", LOAD),
        ("Loop whose body has no inputs",
         lambda: loop_with_body([], [vi("c", (), TensorProto.BOOL), vi("v")],
                                [helper.make_node("Constant", [], ["c"], name="cc",
                                                  value=helper.make_tensor("t", TensorProto.BOOL,
                                                                           [], [True])),
                                 helper.make_node("Relu", ["x"], ["v"], name="r")]),
         r"bad_loop.*body of 3 inputs", LOAD),
        ("Loop whose body gives too few outputs",
         lambda: loop_with_body([vi("i", (), TensorProto.INT64), vi("c", (), TensorProto.BOOL),
                                 vi("v")], [vi("c", (), TensorProto.BOOL)], []),
         r"bad_loop.*2 outputs", LOAD),
        ("Scan with a negative num_scan_inputs", lambda: scan(-1),
         r"bad_scan.*num_scan_inputs", LOAD),
        ("Scan with an input axis out of range", lambda: scan(1, [5]),
         r"bad_scan.*scan_input_axes.*out of range", LOAD),
        ("Tile-1 tiles not a whole number", lambda: tile1(2.5, 0),
         r"legacy_tile.*(whole|integ|2\.5)", ("optimize", "upgrade", "run")),
        ("Tile-1 axis out of range", lambda: tile1(2.0, 5),
         r"legacy_tile.*axis", ("optimize", "upgrade", "run")),
        ("Tile-1 tiles negative", lambda: tile1(-2.0, 0),
         r"legacy_tile.*(negative|tiles)", ("optimize", "upgrade", "run")),
        ("Gather index out of range in a shape subgraph", lambda: shape_chain_axis(7),
         r"bad_gather.*(range|index|bound)", EVAL_FOLD, None, EVAL_GAPS),
        ("external data missing", lambda: external("nothere.bin"),
         r"w_ext.*nothere\.bin", LOAD),
        ("external data short", lambda: external("short.bin"),
         r"w_ext.*short", LOAD, {"in/short.bin": bytes(10)}),
        ("external data offset past the end", lambda: external("data.bin", offset=100),
         r"w_ext.*(short|offset)", LOAD, {"in/data.bin": bytes(24)}),
        ("external data length disagreeing with dims", lambda: external("data.bin", length=8),
         r"w_ext.*length", LOAD, {"in/data.bin": bytes(24)}),
        ("external data absolute", lambda: external("/etc/passwd"),
         r"w_ext.*absolute", LOAD),
        ("external data escaping the folder", lambda: external("../secret.bin"),
         r"w_ext.*leaves", LOAD, {"secret.bin": bytes(24)}),
        ("external data through a symlink leaving the folder", lambda: external("w.bin"),
         r"w_ext.*outside", LOAD, {"secret.bin": bytes(24), "in/w.bin": Symlink("../secret.bin")}),
        ("external data through an absolute symlink", lambda: external("w.bin"),
         r"w_ext.*outside", LOAD,
         {"secret.bin": bytes(24), "in/w.bin": Symlink("{d}/secret.bin")}),
        ("external data through a symlinked folder", lambda: external("sub/w.bin"),
         r"w_ext.*outside", LOAD, {"secret/w.bin": bytes(24), "in/sub": Symlink("../secret")}),
        ("external data of an If branch's Constant through a symlink",
         lambda: external_in_if_branch("w.bin"),
         r"w_branch.*outside", LOAD, {"secret.bin": bytes(24), "in/w.bin": Symlink("../secret.bin")}),
        ("external data location with a NUL byte",
         lambda: x.to_bytes(external("w.binQ../secret.bin")).replace(b"w.binQ", b"w.bin\x00"),
         r"NUL byte", LOAD, {"in/w.bin": bytes(24), "secret.bin": bytes(24)}),
        ("a node name with a NUL byte",
         lambda: x.to_bytes(model([helper.make_node("Relu", ["x"], ["y"], name="reluQhidden")],
                                  [vi("x")], [vi("y")])).replace(b"reluQ", b"relu\x00"),
         r"NodeProto.name holds a NUL byte", LOAD),
        ("external data with two locations", lambda: external_twice("w.bin", "../secret.bin"),
         r"w_ext.*location.*twice", LOAD, {"in/w.bin": bytes(24), "secret.bin": bytes(24)}),
        ("external data that is a FIFO", lambda: external("w.bin"),
         r"w_ext.*regular file", LOAD, {"in/w.bin": FIFO}),
        ("external data that is a folder", lambda: external("w.bin"),
         r"w_ext.*regular file", LOAD, {"in/w.bin": FOLDER}),
        ("external data that is a device", lambda: external("w.bin"),
         r"w_ext.*(regular file|outside)", LOAD, {"in/w.bin": Symlink("/dev/zero")}),
        ("external data escaping through a subfolder",
         lambda: external("sub/../../secret.bin"),
         r"w_ext.*leaves", LOAD, {"secret.bin": bytes(24), "in/sub/x": b""}),
    ]


def known_gap(name, cmd, args, pattern, d, out_dir):
    """A command that should fail on this input but does not yet: it must still
    not crash, hang or touch the input; whatever it does is listed."""
    before = x.snapshot(os.path.join(d, "in"))
    try:
        x.run_bad(args, pattern, None, None, label=f"{name}: {cmd}")
        GAPS.append(f"{name}: {cmd}: now fails as it should (move it out of the gaps)")
    except AssertionError as e:
        msg = str(e)
        if "sanitizer" in msg or "hang" in msg or "exit -" in msg:
            raise
        first = msg.splitlines()[0]
        GAPS.append(f"{name}: {cmd}: " + ("exit 0 (the pass skips the node with a reason)"
                                          if "exit 0" in first else first))
    if x.snapshot(os.path.join(d, "in")) != before:
        raise AssertionError(f"{name}: {cmd}: input files changed")
    out = os.path.join(out_dir, "out.onnx")
    if os.path.exists(out):
        os.remove(out)


class Symlink(str):
    """A file of a row that is a symbolic link to this target ({d} is the row's
    folder, for absolute links)."""


FIFO, FOLDER = object(), object()


def place(root, rel, content):
    """Write one extra file of a row under root: bytes, a Symlink, FIFO or FOLDER."""
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(content, Symlink):
        os.symlink(str(content).format(d=root), path)
    elif content is FIFO:
        os.mkfifo(path)
    elif content is FOLDER:
        os.mkdir(path)
    else:
        x.write(path, content)


def run_case(name, build, pattern, cmds, files=None, available=(), gaps=()):
    """One row: write the model in a fresh folder, run each command on it."""
    with h.tempdir() as d:
        in_dir, out_dir = os.path.join(d, "in"), os.path.join(d, "out")
        os.makedirs(in_dir)
        os.makedirs(out_dir)
        src = os.path.join(in_dir, "model.onnx")
        data = build()
        x.write(src, data)
        for rel, content in (files or {}).items():
            place(d, rel, content)
        dst = os.path.join(out_dir, "out.onnx")
        feeds_dir = os.path.join(d, "feeds")
        os.makedirs(feeds_dir)
        try:
            pbs = x.write_inputs(onnx.load_from_string(x.to_bytes(data)), feeds_dir)
        except Exception:
            pbs = []
        failures = []
        for cmd in tuple(cmds) + tuple(gaps):
            if cmd in PASSES and cmd not in available:
                SKIPPED.append(f"{name}: --passes {cmd} (pass not in this build)")
                continue
            if cmd == "inspect":
                args = ["inspect", src]
            elif cmd == "run":
                args = ["run", src, *pbs, "-o", os.path.join(out_dir, "run")]
            elif cmd == "optimize":
                args = ["optimize", src, "-o", dst]
            else:
                args = ["optimize", src, "-o", dst, "--passes", cmd]
            if cmd in gaps:
                known_gap(name, cmd, args, pattern, d, out_dir)
                continue
            try:
                x.run_bad(args, pattern, d, out_dir, label=f"{name}: {cmd}")
            except AssertionError as e:
                failures.append(str(e))
        if failures:
            raise AssertionError("\n".join(failures))


def catalogue_should_reject_every_malformed_input_in_the_table():
    available = x.available_passes()
    rows = cases()
    if len(rows) < 30:
        raise AssertionError(f"the catalogue has {len(rows)} rows, fewer than 30")
    failures = []
    for row in rows:
        name, build, pattern, cmds = row[:4]
        files = row[4] if len(row) > 4 else None
        gaps = row[5] if len(row) > 5 else ()
        try:
            run_case(name, build, pattern, cmds, files, available, gaps)
            print(f"  ok   {name}")
        except AssertionError as e:
            print(f"  FAIL {name}")
            failures.append(str(e))
    for s in sorted(set(SKIPPED)):
        print(f"  skip {s}")
    for g in GAPS:
        print(f"  known gap {g}")
    if failures:
        raise AssertionError(f"{len(failures)} of {len(rows)} rows fail:\n" +
                             "\n".join(failures))


def catalogue_should_reject_a_model_truncated_at_every_field_boundary():
    data = small_model().SerializeToString()
    cuts = sorted(b for b in field_boundaries(data) if b < len(data))
    if len(cuts) < 20:
        raise AssertionError(f"only {len(cuts)} boundaries found in {len(data)} bytes")
    failures = []
    with h.tempdir() as d:
        in_dir, out_dir = os.path.join(d, "in"), os.path.join(d, "out")
        os.makedirs(in_dir)
        os.makedirs(out_dir)
        src = os.path.join(in_dir, "cut.onnx")
        for cut in cuts:
            x.write(src, data[:cut])
            for args in (["optimize", src, "-o", os.path.join(out_dir, "o.onnx")],
                         ["inspect", src]):
                try:
                    x.run_bad(args, r"empty|malformed|truncated|no graph|opset|graph",
                              in_dir, out_dir, label=f"cut at {cut} of {len(data)}: {args[0]}")
                except AssertionError as e:
                    failures.append(str(e))
    print(f"  {len(cuts)} cuts of a {len(data)}-byte model")
    if failures:
        raise AssertionError(f"{len(failures)} runs fail:\n" + "\n".join(failures[:10]))


# ------------------------------------------------------------ output paths

def _valid(d):
    src = os.path.join(d, "in", "model.onnx")
    x.write(src, small_model())
    return src


def catalogue_should_refuse_an_output_folder_that_does_not_exist():
    with h.tempdir() as d:
        src = _valid(d)
        x.run_bad(["optimize", src, "-o", os.path.join(d, "no", "such", "o.onnx")],
                  r"no/such|o\.onnx|director", os.path.join(d, "in"), None)
        if os.path.exists(os.path.join(d, "no")):
            raise AssertionError("the missing folder was created")


def catalogue_should_refuse_an_output_under_a_regular_file():
    # Tests run as root, so a chmod'ed folder would still be writable: a path
    # whose parent is a regular file cannot be written by anyone.
    with h.tempdir() as d:
        src = _valid(d)
        blocker = os.path.join(d, "out", "plain_file")
        x.write(blocker, b"not a folder")
        x.run_bad(["optimize", src, "-o", os.path.join(blocker, "o.onnx")],
                  r"plain_file|o\.onnx|director", os.path.join(d, "in"),
                  os.path.join(d, "out"))


def catalogue_should_refuse_an_output_on_a_read_only_file_system():
    # /proc refuses new files even to root: the read-only folder of this table.
    with h.tempdir() as d:
        src = _valid(d)
        x.run_bad(["optimize", src, "-o", "/proc/tileopt_catalogue_out.onnx"],
                  r"/proc|tileopt_catalogue_out", os.path.join(d, "in"), None)
        x.run_bad(["run", src, "--random", "-o", "/proc/tileopt_catalogue_run"],
                  r"/proc|tileopt_catalogue_run", os.path.join(d, "in"), None)


def catalogue_should_refuse_an_output_that_is_the_input():
    with h.tempdir() as d:
        src = _valid(d)
        before = open(src, "rb").read()
        cp = h.tileopt("optimize", src, "-o", src, "-q")
        if cp.returncode != 2 or "is the input model" not in cp.stderr:
            raise AssertionError(f"exit {cp.returncode}: {cp.stderr!r}")
        if x.SANITIZER.search(cp.stderr):
            raise AssertionError(f"sanitizer report: {cp.stderr[-1500:]}")
        if open(src, "rb").read() != before:
            raise AssertionError("a refused run changed the input")
        if sorted(os.listdir(os.path.dirname(src))) != ["model.onnx"]:
            raise AssertionError(f"left files behind: {os.listdir(os.path.dirname(src))}")


def catalogue_should_keep_errors_one_line_with_their_reason():
    # A node name with a newline, ANSI escapes and 5000 more characters, and an
    # input name with bytes that are not UTF-8: the error is one line of text,
    # with no control byte, and still ends with its reason.
    name = "evil\n\x1b[31mRED\x1b[0m" + "x" * 5000
    m = model([helper.make_node("Add", ["x", "ghQQost"], ["y"], name=name)], [vi("x")],
              [vi("y")])
    data = m.SerializeToString().replace(b"ghQQost", b"gh\xff\xfeost")
    with h.tempdir() as d:
        src = os.path.join(d, "m.onnx")
        x.write(src, data)
        for args in (["inspect", src], ["optimize", src, "-o", os.path.join(d, "o.onnx")],
                     ["run", src]):
            cp = h.tileopt(*args)
            err = cp.stderr.encode("utf-8", "surrogateescape") if isinstance(cp.stderr, str) \
                else cp.stderr
            lines = cp.stderr.splitlines()
            if cp.returncode != 1 or len(lines) != 1:
                raise AssertionError(f"{args[0]}: exit {cp.returncode}, {len(lines)} lines")
            if any(c < 0x20 and c != 0x0a for c in err) or b"\x1b" in err:
                raise AssertionError(f"{args[0]}: control bytes in {cp.stderr[:200]!r}")
            if not lines[0].endswith("reads undefined value 'gh\\xff\\xfeost'"):
                raise AssertionError(f"{args[0]}: reason lost: ...{lines[0][-200:]!r}")


# -------------------------------------------------------------- run inputs

def catalogue_should_reject_bad_run_inputs():
    m = small_model()
    with h.tempdir() as d:
        src = os.path.join(d, "in", "model.onnx")
        x.write(src, m)
        out_dir = os.path.join(d, "out")
        os.makedirs(out_dir)
        os.makedirs(os.path.join(d, "feeds"))
        good = x.write_inputs(m, os.path.join(d, "feeds"))[0]
        data = open(good, "rb").read()
        # a file that is no tensor fails (1); one that does not fit the input,
        # or none, is the caller's mistake (2)
        rows = [
            ("truncated input", data[:len(data) // 2], r"input|malformed|truncat|tensor", 1),
            ("input of the wrong element type",
             x.const("x", np.zeros((2, 3), np.int32)).SerializeToString(), r"x|type|INT32", 2),
            ("input whose data disagrees with its dims",
             raw_tensor("x", [2, 3], raw=bytes(8)).SerializeToString(), r"x|raw_data|bytes", 1),
        ]
        for label, blob, pattern, code in rows:
            p = os.path.join(d, "in", "bad_input.pb")
            x.write(p, blob)
            x.run_bad(["run", src, p, "-o", os.path.join(out_dir, "r")], pattern,
                      os.path.join(d, "in"), out_dir, code=code, label=label)
        x.run_bad(["run", src, "-o", os.path.join(out_dir, "r")], r"input|x",
                  os.path.join(d, "in"), out_dir, code=2, label="missing input")
        x.run_bad(["run", src, "--test-dir", os.path.join(d, "nodir")], r"nodir",
                  os.path.join(d, "in"), out_dir, label="missing --test-dir")


def catalogue_should_exit_2_on_bad_option_values():
    with h.tempdir() as d:
        src = _valid(d)
        o = os.path.join(d, "out", "o.onnx")
        os.makedirs(os.path.dirname(o))
        for args, pattern in ((["--max-depth", "0"], r"max-depth"),
                              (["--max-rank", "-1"], r"max-rank"),
                              (["--max-tensor-bytes", "lots"], r"max-tensor-bytes|lots"),
                              (["--max-eval-bytes", "99999999999999999999999"],
                               r"max-eval-bytes"),
                              (["--target-opset", "99"], r"target-opset|99"),
                              (["--fold-limit", "-5"], r"fold-limit|-5")):
            x.run_bad(["optimize", src, "-o", o, *args], pattern, os.path.join(d, "in"),
                      os.path.dirname(o), code=2, label=" ".join(args))


def catalogue_should_inspect_hostile_repeats_without_a_sanitizer_report():
    # Not an error: inspect only describes the Tile; its output shape is unknown.
    with h.tempdir() as d:
        src = os.path.join(d, "m.onnx")
        x.write(src, tile13(const("reps", np.array([1 << 62, -3], np.int64))))
        cp = h.tileopt("inspect", src, "--json")
        if cp.returncode != 0 or x.SANITIZER.search(cp.stderr):
            raise AssertionError(f"exit {cp.returncode}: {cp.stderr[-1500:]}")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

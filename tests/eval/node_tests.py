#!/usr/bin/python3
"""Acceptance: every ONNX backend node test whose ops the evaluator claims passes
through `tileopt run --test-dir`.

A test is claimed when every node of its model (subgraphs included) is in the
default domain and `eval_supports(op, opset)` says yes (asked through the
eval_claims helper), whatever its graph inputs and outputs are: tensors, or
sequences and optionals, which `run --test-dir` reads and compares as
SequenceProto and OptionalProto files. The claimed tests are committed in
node_tests.txt; this script recomputes the claimed set and fails when the list
is stale, so a test cannot leave the list without the evaluator dropping one of
its ops.

usage: node_tests.py EVAL_CLAIMS [--generate]
env:   TILEOPT (the CLI), SRCDIR (the source tree)
"""
import concurrent.futures
import os
import subprocess
import sys

import onnx

DATA = "/usr/share/libonnx-testdata/data/node"
HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "node_tests.txt")
MUST = ("test_tile", "test_tile_precomputed")
# Claimed tests whose expected data the evaluator knowingly departs from, with
# why. They still run: one that starts passing fails the suite until removed.
BF16_WHY = ("ONNX 1.12's expected output truncates float32 to bfloat16; the evaluator "
            "rounds to nearest even, as Cast's spec requires from opset 19 on")
DROPOUT_WHY = ("Dropout in training mode with a ratio above 0: the expected outputs come "
               "from numpy's random generator, which no runtime reproduces; the evaluator "
               "draws from its own seeded stream")
RANDOM_WHY = ("Bernoulli's expected outputs come from numpy's random generator, which no "
              "runtime reproduces; the evaluator draws from its own seeded stream")
LIKE_WHY = ("the test data gives CastLike's input 'like' as a [1] tensor where the model "
            "declares [3,4]: run refuses an input that contradicts a declared static shape, "
            "at the input, as ONNX Runtime's session does")
KNOWN = {
    "test_bernoulli": RANDOM_WHY,
    "test_bernoulli_double": RANDOM_WHY,
    "test_bernoulli_double_expanded": RANDOM_WHY,
    "test_bernoulli_expanded": RANDOM_WHY,
    "test_bernoulli_seed": RANDOM_WHY,
    "test_bernoulli_seed_expanded": RANDOM_WHY,
    "test_cast_FLOAT_to_BFLOAT16": BF16_WHY,
    "test_castlike_BFLOAT16_to_FLOAT": LIKE_WHY,
    "test_castlike_BFLOAT16_to_FLOAT_expanded": LIKE_WHY,
    "test_castlike_FLOAT_to_BFLOAT16": LIKE_WHY + "; and " + BF16_WHY,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": LIKE_WHY + "; and " + BF16_WHY,
    "test_training_dropout": DROPOUT_WHY,
    "test_training_dropout_default": DROPOUT_WHY,
    "test_training_dropout_default_mask": DROPOUT_WHY,
    "test_training_dropout_mask": DROPOUT_WHY,
}


def graph_ops(g, out):
    """(domain, op) of every node in g and its subgraphs."""
    for n in g.node:
        out.add((n.domain, n.op_type))
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                graph_ops(a.g, out)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    graph_ops(sg, out)
    return out


def default_opset(m):
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def claimed(claims_exe):
    tests = {}
    for name in sorted(os.listdir(DATA)):
        path = os.path.join(DATA, name, "model.onnx")
        if not os.path.isfile(path):
            continue
        try:
            m = onnx.load(path)
        except Exception:  # a model onnx itself cannot read is not claimed
            continue
        tests[name] = (default_opset(m), graph_ops(m.graph, set()))
    queries = sorted({(op, opset) for opset, ops in tests.values()
                      for dom, op in ops if dom in ("", "ai.onnx")})
    text = "".join(f"{op} {opset}\n" for op, opset in queries)
    out = subprocess.run([claims_exe], input=text, capture_output=True, text=True,
                         check=True).stdout
    yes = set()
    for line in out.splitlines():
        op, opset, ok = line.split()
        if ok == "1":
            yes.add((op, int(opset)))
    result = []
    for name, (opset, ops) in tests.items():
        if ops and all(dom in ("", "ai.onnx") and (op, opset) in yes for dom, op in ops):
            result.append(name)
    return result


def read_list():
    with open(LIST) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def run_one(tileopt, name):
    """Runs every data set of one test; returns a list of failure texts."""
    tdir = os.path.join(DATA, name)
    sets = sorted(d for d in os.listdir(tdir) if d.startswith("test_data_set_"))
    if not sets:
        return [f"{name}: no test_data_set_*"]
    fails = []
    for ds in sets:
        p = subprocess.run([tileopt, "run", os.path.join(tdir, "model.onnx"), "--test-dir",
                            os.path.join(tdir, ds)], capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            fails.append(f"{name}/{ds}: exit {p.returncode}: {p.stderr.strip()[:600]}")
    return fails


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    claims = claimed(sys.argv[1])
    if "--generate" in sys.argv[2:]:
        with open(LIST, "w") as f:
            f.write("# ONNX backend node tests whose ops the evaluator claims.\n")
            f.write("# Generated by tests/eval/node_tests.py --generate; "
                    f"{len(claims)} tests.\n")
            for n in claims:
                f.write(n + "\n")
        print(f"wrote {len(claims)} tests to {LIST}")
        return 0
    listed = read_list()
    status = 0
    for n in MUST:
        if n not in listed:
            print(f"FAIL: {n} is not in node_tests.txt")
            status = 1
    stale_new = sorted(set(claims) - set(listed))
    stale_old = sorted(set(listed) - set(claims))
    if stale_new or stale_old:
        print("FAIL: node_tests.txt is stale (regenerate with --generate):")
        for n in stale_new:
            print(f"  claimed but not listed: {n}")
        for n in stale_old:
            print(f"  listed but not claimed: {n}")
        status = 1
    tileopt = os.environ["TILEOPT"]
    fails = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for f in ex.map(lambda n: run_one(tileopt, n), listed):
            fails.extend(f)
    known_seen = set()
    real = []
    for f in fails:
        name = f.split("/", 1)[0]
        if name in KNOWN:
            known_seen.add(name)
            print(f"known divergence: {f}\n  why: {KNOWN[name]}")
        else:
            real.append(f)
    for name in sorted(set(KNOWN) & set(listed) - known_seen):
        print(f"FAIL: {name} passes now: remove it from KNOWN")
        status = 1
    for f in real:
        print("FAIL:", f)
    print(f"{len(listed)} node tests listed, {len(listed) - len(known_seen)} pass, "
          f"{len(known_seen)} known divergences, {len(real)} data sets failed")
    return 1 if real or status else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The page of `optimize --html` and `tileopt report` without a browser
(test_html_browser.py loads them in one): self-contained, its numbers the
report's, a card per action, hostile names escaped, refused paths, reports
that are none, a big model's groups and data, batch pages with their index,
and tileopt.html from Python."""
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402
import html_page  # noqa: E402

SAMPLES = ["legacy_repeat.onnx", "legacy_tile1.onnx", "const_tile.onnx",
           "shape_repeats.onnx", "tile_add.onnx", "bias_tile.onnx"]


def read(path, mode="r"):
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        return f.read()


def optimize_page(tmp, src, *extra):
    name = os.path.basename(src)
    out, rep, page = (os.path.join(tmp, name + s) for s in (".opt.onnx", ".json", ".html"))
    h.expect_ok(h.tileopt("optimize", src, out, "--report", rep, "--html", page, "-q", *extra))
    return out, json.loads(read(rep)), page


def samples_should_carry_the_reports_counts(tmp):
    for name in SAMPLES:
        src = os.path.join(h.MODELS, name)
        out, report, page = optimize_page(tmp, src, "--verify")
        text = read(page)
        p = html_page.check_self_contained(text)
        html_page.check_counts(p, report)
        # the page from the report file and the two models is the same page
        again = os.path.join(tmp, name + ".again.html")
        h.expect_ok(h.tileopt("report", page[:-5] + ".json", src, out, "-o", again))
        assert read(again) == text, f"{name}: report gives another page than --html"
        # the page changes nothing in OUT
        plain = os.path.join(tmp, name + ".plain.onnx")
        h.expect_ok(h.tileopt("optimize", src, plain, "-q", "--verify"))
        assert read(plain, "rb") == read(out, "rb"), f"{name}: --html changed OUT"


def fused_card_should_draw_the_region(tmp):
    _, report, page = optimize_page(tmp, os.path.join(h.MODELS, "legacy_repeat.onnx"))
    p = html_page.Page(read(page))
    texts = " ".join(p.texts)
    # the fused Add: its rule in words, the Tile removed before and gone after
    assert "redundant Tile: the op broadcasts x itself" in texts
    removed = [a for t, a in p.elements if t == "g" and "removed" in a.get("class", "")]
    assert removed, "a removed node is marked"
    assert "[2,3,4]" in texts, "edges carry shapes"


def subgraph_actions_should_draw_their_subgraph(tmp):
    """A Tile fused inside an If's branch: its card draws the branch's nodes
    and the values it reads from outside."""
    reps = numpy_helper.from_array(np.array([1, 3, 1], np.int64), "reps")
    then = helper.make_graph(
        [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile_in"),
         helper.make_node("Add", ["t", "b"], ["y1"], name="add_in")], "then", [],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [2, 3, 4])])
    other = helper.make_graph([helper.make_node("Identity", ["b2"], ["y2"], name="id")], "else",
                              [], [helper.make_tensor_value_info("y2", TensorProto.FLOAT,
                                                                 [2, 3, 4])])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="gate", then_branch=then, else_branch=other)],
        "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
              helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])],
        initializer=[reps, numpy_helper.from_array(np.ones((3, 4), np.float32), "b"),
                     numpy_helper.from_array(np.ones((2, 3, 4), np.float32), "b2")])
    src = os.path.join(tmp, "sub.onnx")
    with open(src, "wb") as f:
        f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
                .SerializeToString())
    _, report, page = optimize_page(tmp, src, "--verify")
    p = html_page.check_self_contained(read(page))
    html_page.check_counts(p, report)
    changed, _ = html_page.actions(report)
    assert any(a.get("graph") == "gate/then_branch" for a in changed), changed
    titles = [t for t in p.texts if t.startswith(("Tile tile_in", "Add add_in", "x FLOAT"))]
    assert {"Tile tile_in", "Add add_in"} <= set(titles), titles
    assert any(t.startswith("x FLOAT") for t in titles), "the outer value x is drawn"


def hostile_model(tmp):
    """Tile then Add whose names are markup, scripts, quotes, bytes that are no
    UTF-8 and one name of 1 MiB."""
    script = "<script>window.__pwned=1</script>"
    img = "\"><img src=x onerror=\"window.__pwned=2\">"
    big = "<b>" + "A" * (1 << 20) + script
    names = {"tile": "tile" + script, "add": "add" + img + "'&amp;", "x": "x" + img,
             "t": "t</script><script>window.__pwned=3</script>", "y": "y" + script}
    reps = numpy_helper.from_array(np.array([1, 3, 1], np.int64), "reps<!--")
    b = numpy_helper.from_array(np.ones((3, 4), np.float32), "b<style>*{display:none}</style>")
    nodes = [helper.make_node("Tile", [names["x"], "reps<!--"], [names["t"]], name=names["tile"]),
             helper.make_node("Add", [names["t"], b.name], [names["y"]], name=names["add"]),
             helper.make_node("Relu", [names["y"]], ["out"], name=big)]
    g = helper.make_graph(nodes, "g" + script,
                          [helper.make_tensor_value_info(names["x"], TensorProto.FLOAT,
                                                         [2, 1, 4])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3, 4])],
                          initializer=[reps, b])
    g.doc_string = script
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.doc_string = img
    data = m.SerializeToString()
    # a node name of bytes that are no UTF-8 (protobuf's Python refuses to set one)
    assert data.count(b"tile<script>") == 1
    data = data.replace(b"tile<script>", b"\xff\xfe\xc0\xaf<\xed\xa0\x80\x80\x01\x1b\x7f", 1)
    path = os.path.join(tmp, "hostile.onnx")
    with open(path, "wb") as f:
        f.write(data)
    return path


def hostile_names_should_be_escaped(tmp):
    src = hostile_model(tmp)
    out, report, page = optimize_page(tmp, src)
    raw = read(page, "rb")
    raw.decode("utf-8")  # strict: every byte from the model is valid UTF-8 now
    assert len(raw) < 300_000, f"a 1 MiB name made a page of {len(raw)} bytes"
    for needle in (b"<script>window", b"<img", b"<style>*", b"<!--", b"onerror=\"",
                   b"</script><script>"):
        assert needle not in raw, f"{needle!r} reached the page unescaped"
    p = html_page.check_self_contained(raw.decode())
    html_page.check_counts(p, report)
    texts = "".join(p.texts)
    assert "window.__pwned=1" in texts, "the hostile text shows, as text"
    assert "\ufffd" in texts, "bytes that are no UTF-8 show as U+FFFD"
    # the page's data holds the same names, escaped for JSON
    for rec in html_page.data_blocks(p):
        assert len(rec) == 8


def paths_should_be_refused(tmp):
    src = os.path.join(tmp, "m.onnx")
    with open(src, "wb") as f:
        f.write(read(os.path.join(h.MODELS, "legacy_repeat.onnx"), "rb"))
    out, rep = os.path.join(tmp, "m.opt.onnx"), os.path.join(tmp, "m.json")
    cases = [
        (["optimize", src, out, "--html", src], 2, "input"),
        (["optimize", src, out, "--html", out], 2, "output"),
        (["optimize", src, out, "--report", rep, "--html", rep], 2, "report"),
        (["optimize", src, out, "--html", tmp], 1, "not a regular file"),
        (["optimize", src, out, "--html", os.path.join(tmp, "no", "dir", "p.html")], 1, "page"),
    ]
    for args, code, words in cases:
        cp = h.tileopt(*args)
        assert cp.returncode == code, f"{args}: exit {cp.returncode}, {cp.stderr}"
        assert words in cp.stderr, f"{args}: {cp.stderr!r} lacks {words!r}"
        assert not os.path.exists(out), f"{args}: OUT written though the page failed"
    h.expect_ok(h.tileopt("optimize", src, out, "--report", rep, "-q"))
    for args, code in [(["report", rep, src, out, "-o", rep], 2),
                       (["report", rep, src, out, "-o", src], 2),
                       (["report", rep, src, "-o", os.path.join(tmp, "p.html")], 2),
                       (["report", rep, src, out], 2),
                       (["report", rep, src, out, "-o", tmp], 1)]:
        cp = h.tileopt(*args)
        assert cp.returncode == code, f"{args}: exit {cp.returncode}, {cp.stderr}"
    assert read(src, "rb") == read(os.path.join(h.MODELS, "legacy_repeat.onnx"), "rb")


def failed_run_should_still_write_its_page(tmp):
    """A pass that fails: exit 1, no OUT, and a page that says why."""
    src = os.path.join(h.MODELS, "shape_repeats.onnx")
    out, page = os.path.join(tmp, "o.onnx"), os.path.join(tmp, "p.html")
    cp = h.tileopt("optimize", src, out, "--target-opset", "1", "--html", page, "-q")
    assert cp.returncode == 1, cp.stderr
    assert not os.path.exists(out)
    p = html_page.check_self_contained(read(page))
    errors = [a for t, a in p.elements if t == "span" and a.get("class") == "err"]
    assert errors, "the page names the failed pass"


def reports_that_are_none_should_fail(tmp):
    src = os.path.join(h.MODELS, "legacy_repeat.onnx")
    out, report, _ = optimize_page(tmp, src)
    text = json.dumps(report)
    page = os.path.join(tmp, "bad.html")
    bad = {"garbage": "not json at all", "array": "[1, 2]", "truncated": text[: len(text) // 2],
           "no passes": json.dumps({"input": {}}), "deep": "[" * 10000 + "]" * 10000,
           "empty": ""}
    for label, body in bad.items():
        rep = os.path.join(tmp, "bad.json")
        with open(rep, "w") as f:
            f.write(body)
        cp = h.tileopt("report", rep, src, out, "-o", page)
        assert cp.returncode == 1, f"{label}: exit {cp.returncode} {cp.stderr}"
        assert "bad.json" in cp.stderr and "report" in cp.stderr, f"{label}: {cp.stderr}"
        assert not os.path.exists(page), f"{label}: a page was written"


def mutated_reports_should_never_crash(tmp, rounds=150):
    """Reports with bytes flipped, cut, or hostile strings spliced into their
    strings: exit 0 with a self-contained page, or exit 1 naming the report."""
    src = os.path.join(h.MODELS, "legacy_repeat.onnx")
    out, report, _ = optimize_page(tmp, src, "--verify")
    base = json.dumps(report).encode()
    rng = random.Random(34)
    splices = [b"<script>alert(1)</script>", b"\\u0000", b"\\ud800", b"\xff\xfe", b"\"", b"]]",
               b"{\"a\":", b"1e999", b"-", b"\\", b"</textarea><svg onload=alert(1)>"]
    page, rep = os.path.join(tmp, "fz.html"), os.path.join(tmp, "fz.json")
    for i in range(rounds):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(data))
            op = rng.randrange(3)
            if op == 0:
                data[k] = rng.randrange(256)
            elif op == 1:
                data[k:k] = rng.choice(splices)
            else:
                del data[k:k + rng.randint(1, 40)]
        with open(rep, "wb") as f:
            f.write(bytes(data))
        if os.path.exists(page):
            os.unlink(page)
        cp = h.tileopt("report", rep, src, out, "-o", page)
        assert cp.returncode in (0, 1), f"round {i}: exit {cp.returncode} {cp.stderr[-2000:]}"
        if cp.returncode == 0:
            html_page.check_self_contained(read(page, "rb").decode("utf-8"))


def adversarial_reports_should_stay_bounded(tmp):
    """A report written to cost: 20k skipped nodes with a reason each, 3k
    passes, nodes the models lack, 1 MiB strings. The page comes in seconds,
    bounded in size, every count still the report's."""
    src = os.path.join(h.MODELS, "legacy_repeat.onnx")
    out, report, _ = optimize_page(tmp, src)
    big = "<x>" * (1 << 18)
    report["passes"] = [{"name": f"p{i}", "duration_ms": 0.1, "changed": False,
                         "nodes_changed": 0, "nodes_skipped": 0, "actions": []}
                        for i in range(3000)]
    report["passes"][0]["actions"] = (
        [{"node": f"n{i}{big if i == 7 else ''}", "op": "Tile", "action": "skipped",
          "reason": f"reason {i}"} for i in range(20000)] +
        [{"node": f"m{i}", "op": big if i == 3 else "Add", "action": "fused",
          "rule_name": f"rule {i % 7}", "repeats": [1e300, -0.5, i]} for i in range(2000)])
    rep, page = os.path.join(tmp, "adv.json"), os.path.join(tmp, "adv.html")
    with open(rep, "w") as f:
        json.dump(report, f)
    cp = h.tileopt("report", rep, src, out, "-o", page, timeout=120)
    h.expect_ok(cp)
    raw = read(page, "rb")
    assert len(raw) < 8_000_000, f"{len(raw)} bytes"
    p = html_page.check_self_contained(raw.decode())
    html_page.check_counts(p, report)
    assert p.count("details", "skip") == 500, p.count("details", "skip")


def big_model_should_group_the_rest(tmp):
    sys.path.insert(0, os.path.join(h.SRCDIR, "bench"))
    import bench_scale
    import onnx
    src = os.path.join(tmp, "big.onnx")
    onnx.save(bench_scale.build(8000), src)
    _, report, page = optimize_page(tmp, src)
    raw = read(page, "rb")
    p = html_page.check_self_contained(raw.decode())
    changed, skipped = html_page.check_counts(p, report)
    assert changed > 1000, changed
    records = html_page.data_blocks(p)
    reasons = {}  # skipped nodes group by pass and the reason's words before ": "
    for p_ in report["passes"]:
        for a in p_["actions"]:
            if a["action"] == "skipped":
                key = (p_["name"], a["reason"].split(": ")[0])
                reasons[key] = reasons.get(key, 0) + 1
    want = changed - 300 + sum(min(100, n) for n in reasons.values())
    assert len(records) == want, (len(records), want)
    for r in records[:50]:
        node, op, action, pass_, rule, details, before, after = r
        assert node and op and pass_
        for d in (before, after):
            w, hgt, items, edges = d
            assert w > 0 and hgt > 0
    # what keeps 250k actions under 20 MB: the cards past the first 300 cost a
    # few tens of bytes each
    data = sum(len(text) for a, text in p.scripts if a.get("type") == "application/x-tileopt")
    assert data / len(records) < 60, f"{data} bytes of data for {len(records)} cards"


def batch_should_index_its_pages(tmp):
    out, pages = os.path.join(tmp, "batch_out"), os.path.join(tmp, "batch_pages")
    cp = h.tileopt("optimize", h.MODELS, "-o", out, "--html", pages, "-q", "--verify")
    h.expect_ok(cp)
    index = read(os.path.join(pages, "index.html"))
    p = html_page.check_self_contained(index)
    links = [a["href"] for t, a in p.elements if t == "a"]
    models = sorted(f for f in os.listdir(h.MODELS) if f.endswith(".onnx"))
    assert len(links) == len(models), (links, models)
    for link in links:
        target = os.path.join(pages, link[2:])
        assert os.path.isfile(target), link
        html_page.check_self_contained(read(target))
    assert p.text_of("n-models") == str(len(models))
    assert "match" in index


def python_html_should_give_the_page(tmp):
    env = dict(os.environ, PYTHONPATH=os.path.join(h.BUILDDIR, "python"))
    if os.environ.get("TILEOPT_PYTHON_PRELOAD"):
        # Python keeps memory at exit that LeakSanitizer would report
        env.update(LD_PRELOAD=os.environ["TILEOPT_PYTHON_PRELOAD"],
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
    code = (
        "import json, sys, tileopt\n"
        "src = sys.argv[1]\n"
        "model, report = tileopt.optimize(open(src, 'rb').read())\n"
        "page = tileopt.html(report, src, model)\n"
        "open(sys.argv[2], 'w', encoding='utf-8').write(page)\n"
        "json.dump(report, open(sys.argv[3], 'w'))\n"
        "try:\n"
        "    tileopt.html('{not json', src, model)\n"
        "except tileopt.ParseError as e:\n"
        "    print('refused', e.status)\n")
    page, rep = os.path.join(tmp, "py.html"), os.path.join(tmp, "py.json")
    cp = subprocess.run([sys.executable, "-c", code, os.path.join(h.MODELS, "legacy_repeat.onnx"),
                         page, rep], env=env, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert "refused" in cp.stdout, cp.stdout
    p = html_page.check_self_contained(read(page))
    html_page.check_counts(p, json.loads(read(rep)))


TESTS = [samples_should_carry_the_reports_counts, fused_card_should_draw_the_region,
         subgraph_actions_should_draw_their_subgraph,
         hostile_names_should_be_escaped, paths_should_be_refused,
         failed_run_should_still_write_its_page, reports_that_are_none_should_fail,
         mutated_reports_should_never_crash,
         adversarial_reports_should_stay_bounded,
         big_model_should_group_the_rest, batch_should_index_its_pages,
         python_html_should_give_the_page]


def main():
    failed = 0
    for t in TESTS:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                t(tmp)
                print(f"ok   page_{t.__name__}")
            except AssertionError as e:
                failed += 1
                print(f"FAIL page_{t.__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

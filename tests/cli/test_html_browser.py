#!/usr/bin/python3
"""The page in a real browser: headless Chromium (Debian's chromium), driven
over the DevTools protocol on a pipe (cdp.py), the network off.

For the three reference models (the demo, a fused Tile, a DETR export from the
real-model cache) the page loads from disk, asks for nothing but itself, throws
nothing; the DOM, dumped after load, shows the report's counts and a card with
two drawings per action; a screenshot of the first screen is not blank and
holds the first card's before and after drawings. A model with hostile names
runs no script of its own (and a script spliced into a page is refused by its
policy); a big model's page opens in under 3 s and draws a group's cards on
demand. Exit 77 (skipped, with the reason) where Chromium is missing.
"""
import io
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import cdp  # noqa: E402
import harness as h  # noqa: E402
import html_page  # noqa: E402
import test_html  # noqa: E402

SKIP = 77
DETR = os.path.join(h.SRCDIR, ".cache", "real", "detr_r18_op13_dyn", "model.onnx")
REFERENCES = [("demo", os.path.join(h.MODELS, "legacy_repeat.onnx")),
              ("fused Tile", os.path.join(h.MODELS, "bias_tile.onnx")),
              ("DETR export", DETR)]


def not_blank(png, box=None):
    """The screenshot (or the box x0, y0, x1, y1 of it) has drawn content: many
    colours and a share of pixels that are not the background."""
    from PIL import Image
    im = Image.open(io.BytesIO(png)).convert("RGB")
    if box:
        im = im.crop(tuple(int(v) for v in box))
    small = im.resize((max(1, im.width // 2), max(1, im.height // 2)))
    px = list(small.getdata())
    colours = len(set(px))
    ink = sum(1 for p in px if p != (255, 255, 255)) / max(1, len(px))
    return colours > 8 and ink > 0.01, f"{colours} colours, {ink:.1%} not white"


FIRST_CARD = """(() => {
  const c = document.querySelector('article.card');
  if (!c) return null;
  return [...c.querySelectorAll('figure svg')].map(s => {
    const r = s.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom, s.querySelectorAll('g, text.none').length];
  });
})()"""


def load(b, page):
    tab = b.open(page, offline=True)
    url = "file://" + os.path.abspath(page)
    assert tab.requests == [url], f"requests left the page: {tab.requests}"
    assert not tab.errors, f"errors: {tab.errors}"
    assert tab.eval("document.documentElement.dataset.ready") == "1", "the script ran"
    return tab


def reference_pages_should_show_the_report(b, tmp):
    for label, src in REFERENCES:
        if not os.path.isfile(src):
            print(f"skip page_{label}: {src} is not in the real-model cache "
                  "(tests/real/fetch_models.py fetches it)")
            continue
        _, report, page = test_html.optimize_page(tmp, src, "--verify")
        tab = load(b, page)
        dom = html_page.Page(tab.dom())
        changed, _ = html_page.check_counts(dom, report)
        assert changed > 0, f"{label}: no action to draw"
        svgs = tab.eval("document.querySelectorAll('article.card figure svg').length")
        assert svgs == 2 * min(changed, 300), f"{label}: {svgs} drawings"
        png = tab.screenshot()
        ok, why = not_blank(png)
        assert ok, f"{label}: blank screenshot ({why})"
        shots = os.environ.get("TILEOPT_SCREENSHOTS")
        if shots:
            with open(os.path.join(shots, label.replace(" ", "_") + ".png"), "wb") as f:
                f.write(png)
        figs = tab.eval(FIRST_CARD)
        assert figs and len(figs) == 2, f"{label}: first card {figs}"
        for side, (x0, y0, x1, y1, items) in zip(("before", "after"), figs):
            # an after side may be empty (a folded chain left nothing), and says so
            assert items > 0, f"{label}: the {side} drawing shows nothing"
            assert 0 <= y0 < b.height and x0 < b.width, \
                f"{label}: the {side} drawing starts at {x0:.0f},{y0:.0f}, off the first screen"
            ok, why = not_blank(png, (max(0, x0), y0, min(x1, b.width), min(y1, b.height)))
            assert ok, f"{label}: the {side} drawing is blank on screen ({why})"
        print(f"     {label}: {os.path.getsize(page)} bytes, loaded in {tab.load_s * 1000:.0f} ms")


def hostile_names_should_run_no_script(b, tmp):
    src = test_html.hostile_model(tmp)
    _, report, page = test_html.optimize_page(tmp, src)
    tab = load(b, page)
    # open every lazy drawing and group: the script builds them from the data
    tab.eval("""(async () => {
      for (const d of document.querySelectorAll('details')) d.open = true;
      await new Promise(r => setTimeout(r, 300));
    })()""")
    assert tab.eval("typeof window.__pwned") == "undefined", "a script from the model ran"
    scripts = tab.eval("document.scripts.length")
    dom = html_page.Page(tab.dom())
    assert scripts == len(dom.scripts), (scripts, len(dom.scripts))
    assert tab.eval("document.querySelectorAll('img, iframe, object, embed, style').length") == 1
    assert "window.__pwned=1" in tab.eval("document.body.textContent")
    assert not tab.errors, tab.errors
    # the policy refuses a script that would get in all the same
    spliced = os.path.join(tmp, "spliced.html")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    with open(spliced, "w", encoding="utf-8") as f:
        f.write(text.replace("<header>", "<header><script>window.__pwned=4</script>"
                             "<img src=x onerror=\"window.__pwned=5\">", 1))
    tab = b.open(spliced, offline=True)
    assert tab.eval("typeof window.__pwned") == "undefined", "the CSP let a spliced script run"


def big_page_should_open_fast(b, tmp):
    sys.path.insert(0, os.path.join(h.SRCDIR, "bench"))
    import bench_scale
    import onnx
    src = os.path.join(tmp, "big.onnx")
    onnx.save(bench_scale.build(100_000), src)
    _, report, page = test_html.optimize_page(tmp, src)
    changed, skipped = html_page.actions(report)
    size = os.path.getsize(page)
    tab = load(b, page)
    assert tab.load_s < 3, f"{len(changed)} actions: loaded in {tab.load_s:.2f} s"
    drawn = tab.eval("""(async () => {
      const g = document.querySelector('details.grp');
      g.open = true;
      for (let i = 0; i < 200 && g.querySelectorAll('article svg').length < 100; i++)
        await new Promise(r => setTimeout(r, 25));
      g.querySelector('button.more').click();
      for (let i = 0; i < 200 && g.querySelectorAll('article svg').length < 200; i++)
        await new Promise(r => setTimeout(r, 25));
      return g.querySelectorAll('article svg').length;
    })()""")
    assert drawn == 200, f"a group drew {drawn} drawings for 100 cards"
    assert not tab.errors, tab.errors
    print(f"     {len(changed) + len(skipped)} actions: {size} bytes, loaded in "
          f"{tab.load_s * 1000:.0f} ms")


TESTS = [reference_pages_should_show_the_report, hostile_names_should_run_no_script,
         big_page_should_open_fast]


def main():
    if not cdp.find_chromium():
        print("skipped: no chromium (apt-get install chromium)")
        return SKIP
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("skipped: no PIL to read screenshots (apt-get install python3-pil)")
        return SKIP
    failed = 0
    with cdp.Browser() as b:
        for t in TESTS:
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    t(b, tmp)
                    print(f"ok   page_{t.__name__}")
                except (AssertionError, cdp.Error) as e:
                    failed += 1
                    print(f"FAIL page_{t.__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

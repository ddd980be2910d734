"""What the page tests read from a page (optimize --html, tileopt report):
its elements through html.parser, checked for what a self-contained page must
be, and its numbers against the report."""
import base64
import hashlib
import html.parser
import json
import re

# The elements the page builder writes; anything else came from a model.
ELEMENTS = {
    "html", "head", "meta", "title", "style", "body", "svg", "defs", "marker", "path",
    "header", "h1", "h2", "h3", "div", "table", "tr", "th", "td", "p", "b", "span", "code",
    "br", "ul", "li", "details", "summary", "section", "article", "figure", "figcaption",
    "g", "rect", "text", "script", "button", "a",
}


class Page(html.parser.HTMLParser):
    """Elements with their attributes, in document order, and the text of each
    element by id."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements = []          # (tag, attrs dict, depth)
        self.by_id = {}
        self.scripts = []           # (attrs, text)
        self.texts = []
        self._stack = []
        self._script = None
        self._id_text = {}
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag == "script":
            self._script = [a, ""]
        if "id" in a:
            self.by_id[a["id"]] = a
            self._id_text[a["id"]] = ""
        if tag not in ("meta", "br"):  # the void elements the page writes
            self._stack.append((tag, a.get("id")))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag == "script" and self._script:
            self.scripts.append(tuple(self._script))
            self._script = None
        while self._stack:
            t, _ = self._stack.pop()
            if t == tag:
                break

    def handle_data(self, data):
        if self._script is not None:
            self._script[1] += data
            return
        self.texts.append(data)
        for _, i in self._stack:
            if i:
                self._id_text[i] += data

    def text_of(self, id_):
        return self._id_text.get(id_)

    def count(self, tag, cls=None):
        return sum(1 for t, a in self.elements
                   if t == tag and (cls is None or cls in a.get("class", "").split()))


def check_self_contained(text):
    """The page refers to nothing outside itself, and its CSP lets exactly its
    own script run. Returns the Page."""
    p = Page(text)
    unknown = {t for t, _ in p.elements} - ELEMENTS
    assert not unknown, f"elements the builder never writes: {sorted(unknown)}"
    for t, a in p.elements:
        for k, v in a.items():
            assert not k.startswith("on"), f"event handler attribute {k}={v!r} on <{t}>"
            if k in ("src", "srcset", "action", "formaction", "poster", "data"):
                raise AssertionError(f"<{t} {k}={v!r}>: the page loads nothing")
            if k == "href":
                assert t == "a" and v.startswith("./"), f"<{t} href={v!r}>"
    assert not re.search(r"@import|url\((?!#)", text), "a style that loads something"
    csp = [a for t, a in p.elements
           if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(csp) == 1, "one Content-Security-Policy"
    policy = csp[0]["content"]
    assert "default-src 'none'" in policy, policy
    code = [s for s in p.scripts if "type" not in s[0]]
    assert len(code) == 1, f"{len(code)} executable scripts, the page has one"
    digest = base64.b64encode(hashlib.sha256(code[0][1].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy, "the CSP names the page's script by its hash"
    for attrs, _ in p.scripts:
        assert attrs.get("type") in (None, "application/x-tileopt"), attrs
    return p


def actions(report):
    """(changed, skipped) action lists of a report."""
    changed, skipped = [], []
    for p in report["passes"]:
        for a in p["actions"]:
            (skipped if a["action"] == "skipped" else changed).append(a)
    return changed, skipped


def check_counts(p, report, inline=300):
    """The numbers the page shows equal the report's; every inline card has its
    two drawings."""
    for side, key in ((0, "input"), (1, "output")):
        for stat in ("nodes", "tiles", "ir_version"):
            got = p.by_id[f"{stat}-{side}"].get("data-v")
            assert got == str(report[key][stat]), f"{stat}-{side}: page {got}, report {report[key][stat]}"
        size = report[key]["file_bytes"] + report[key]["external_data_bytes"]
        assert p.by_id[f"bytes-{side}"]["data-v"] == str(size)
    changed, skipped = actions(report)
    assert p.by_id["n-actions"]["data-v"] == str(len(changed))
    assert p.by_id["n-skipped"]["data-v"] == str(len(skipped))
    cards = p.count("article", "card")
    assert cards == min(len(changed), inline), f"{cards} cards for {len(changed)} actions"
    figures = p.count("figure")
    svgs = sum(1 for t, a in p.elements if t == "svg" and a.get("class") == "g")
    assert figures == 2 * cards and svgs == 2 * cards, (cards, figures, svgs)
    # the rest wait in groups whose counts add up
    rest = sum(int(a["data-count"]) for t, a in p.elements
               if t == "details" and "grp" in a.get("class", ""))
    assert rest == len(changed) - cards, (rest, len(changed), cards)
    verdict = report.get("verify", {}).get("verdict")
    if verdict:
        assert verdict in p.text_of("verify"), p.text_of("verify")
    return len(changed), len(skipped)


def data_blocks(p):
    """The page's records, inflated: a list of records."""
    import zlib
    out = []
    blocks = sorted((int(a["id"][1:]), text) for a, text in p.scripts
                    if a.get("type") == "application/x-tileopt")
    for i, (k, text) in enumerate(blocks):
        assert k == i, "blocks numbered from 0"
        out += json.loads(zlib.decompress(base64.b64decode(text)))
    return out

#!/usr/bin/python3
"""The page's layered layout (api/html_draw.c) beside Graphviz's dot on the
same drawings: edge crossings, area and edge length over every drawing of the
pages of the given models (default: the sample models and the real-model
cache's DETR, nn_repeat and MultiheadAttention exports).

    /usr/bin/python3 bench/bench_layout.py [--tileopt PATH] [MODEL.onnx ...]

Each inline drawing of a page is read back from its SVG (boxes and edge
polylines), handed to `dot -Tplain` as the same graph (same box sizes, edges in
the same order), and both layouts are scored alike: a crossing is two edges
without a common end whose polylines (dot's splines by their control points)
intersect. Needs Debian's graphviz (`dot`).
"""
import argparse
import glob
import html.parser
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Svgs(html.parser.HTMLParser):
    """The drawings of a page: per <svg class="g">, its boxes and edges."""

    def __init__(self):
        super().__init__()
        self.drawings, self.cur = [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("class") == "g":
            self.cur = {"boxes": [], "edges": []}
            self.drawings.append(self.cur)
        elif self.cur is not None and tag == "rect":
            self.cur["boxes"].append(tuple(float(a[k]) for k in ("x", "y", "width", "height")))
        elif self.cur is not None and tag == "path" and a.get("class") == "e":
            pts = [tuple(map(float, p.split())) for p in re.findall(r"[ML]([-\d. ]+)", a["d"])]
            self.cur["edges"].append(pts)

    def handle_endtag(self, tag):
        if tag == "svg":
            self.cur = None


def box_at(boxes, x, y, top):
    """The box whose bottom (or top) centre is at x, y."""
    for i, (bx, by, bw, bh) in enumerate(boxes):
        if abs(bx + bw / 2 - x) <= 1 and abs((by if top else by + bh) - y) <= 1:
            return i
    return None


def cross(p, q, r, s):
    def orient(a, b, c):
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return (v > 1e-9) - (v < -1e-9)
    return (orient(p, q, r) * orient(p, q, s) < 0) and (orient(r, s, p) * orient(r, s, q) < 0)


def crossings(edges):
    """edges: (from, to, polyline); pairs that share no end and intersect."""
    n = 0
    for (a1, b1, p1), (a2, b2, p2) in itertools.combinations(edges, 2):
        if {a1, b1} & {a2, b2}:
            continue
        if any(cross(p1[i], p1[i + 1], p2[j], p2[j + 1])
               for i in range(len(p1) - 1) for j in range(len(p2) - 1)):
            n += 1
    return n


def length(pts):
    return sum(((pts[i + 1][0] - pts[i][0]) ** 2 + (pts[i + 1][1] - pts[i][1]) ** 2) ** 0.5
               for i in range(len(pts) - 1))


def dot_layout(boxes, pairs):
    """dot's layout of the same graph: (area, [(from, to, polyline)])."""
    lines = ["digraph g {", "nodesep=0.3; ranksep=0.55;",
             "node [shape=box, fixedsize=true, label=\"\"];"]
    for i, (_, _, w, h) in enumerate(boxes):
        lines.append(f"n{i} [width={w / 72:.3f}, height={h / 72:.3f}];")
    for a, b in pairs:
        lines.append(f"n{a} -> n{b};")
    lines.append("}")
    out = subprocess.run(["dot", "-Tplain"], input="\n".join(lines), capture_output=True,
                         text=True, check=True).stdout
    edges, area = [], 0
    for line in out.splitlines():
        f = line.split()
        if f[0] == "graph":
            area = float(f[2]) * float(f[3]) * 72 * 72
        elif f[0] == "edge":
            k = int(f[3])
            pts = [(float(f[4 + 2 * j]) * 72, float(f[5 + 2 * j]) * 72) for j in range(k)]
            edges.append((int(f[1][1:]), int(f[2][1:]), pts))
    return area, edges


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tileopt", default=os.path.join(ROOT, "build", "dev", "tools", "tileopt"))
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    if not shutil.which("dot"):
        sys.exit("needs Graphviz's dot: apt-get install graphviz")
    models = args.models or (
        sorted(glob.glob(os.path.join(ROOT, "models", "*.onnx"))) +
        [os.path.join(ROOT, ".cache", "real", m, "model.onnx")
         for m in ("detr_r18_op13_dyn", "detr_r18_op17_dyn", "nn_repeat_op13_dyn",
                   "nn_mha_bias_kv_op17_dyn", "nn_transformer_op13_static")])
    tmp = tempfile.mkdtemp(prefix="bench_layout-")
    total = {"drawings": 0, "edges": 0, "ours": 0, "dot": 0, "area_ours": 0.0,
             "area_dot": 0.0, "len_ours": 0.0, "len_dot": 0.0}
    for src in models:
        if not os.path.isfile(src):
            continue
        page = os.path.join(tmp, "p.html")
        subprocess.run([args.tileopt, "optimize", src, os.path.join(tmp, "o.onnx"), "--html",
                        page, "-q"], check=True)
        p = Svgs()
        with open(page, encoding="utf-8") as f:
            p.feed(f.read())
        mine = theirs = 0
        for d in p.drawings:
            boxes, edges = d["boxes"], []
            for pts in d["edges"]:
                a = box_at(boxes, *pts[0], top=False)
                b = box_at(boxes, *pts[-1], top=True)
                if a is not None and b is not None:
                    edges.append((a, b, pts))
            if len(edges) < 2:
                continue
            area, dot_edges = dot_layout(boxes, [(a, b) for a, b, _ in edges])
            c1, c2 = crossings(edges), crossings(dot_edges)
            w = max(x + bw for x, _, bw, _ in boxes) + 10
            h = max(y + bh for _, y, _, bh in boxes) + 10
            total["drawings"] += 1
            total["edges"] += len(edges)
            total["ours"] += c1
            total["dot"] += c2
            total["area_ours"] += w * h
            total["area_dot"] += area
            total["len_ours"] += sum(length(e[2]) for e in edges)
            total["len_dot"] += sum(length(e[2]) for e in dot_edges)
            mine += c1
            theirs += c2
        print(f"{os.path.relpath(src, ROOT):52} {len(p.drawings):4d} drawings  crossings "
              f"ours {mine:3d}  dot {theirs:3d}")
    t = total
    print(f"all: {t['drawings']} drawings with 2+ edges, {t['edges']} edges; crossings ours "
          f"{t['ours']}, dot {t['dot']}; area ours/dot {t['area_ours'] / max(1, t['area_dot']):.2f}; "
          f"edge length ours/dot {t['len_ours'] / max(1, t['len_dot']):.2f}")


if __name__ == "__main__":
    main()

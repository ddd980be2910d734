#!/usr/bin/python3
"""No two source files of the library or the CLI may call each other, directly or
through others: the files of each folder keep a one-way order (written in the
folder's main header), so each can be read knowing only the files below it.

    file_cycles.py SRCDIR BUILDDIR [--graph]

Reads BUILDDIR/compile_commands.json for the object of every .c file under
graph/, eval/, shape/, passes/, api/ and tools/, and takes from `nm` the global
symbols each object defines and the ones it leaves undefined. File A depends on
file B when A uses a symbol B defines. Prints every cycle among the files (the
edges of each strongly connected component with the symbols behind them) and
exits 1 if there is one that file_cycles_known.txt does not list, or if a cycle
listed there is gone (so the list only shrinks); --graph prints every edge too.
"""
import json
import os
import subprocess
import sys

FOLDERS = ("graph", "eval", "shape", "passes", "api", "tools")


def objects(builddir):
    """{absolute source path: [object paths]} from the compile database."""
    with open(os.path.join(builddir, "compile_commands.json")) as f:
        entries = json.load(f)
    found = {}
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        obj = os.path.normpath(os.path.join(e["directory"], e["output"]))
        found.setdefault(src, []).append(obj)
    return found


def symbols(obj):
    """(defined, used): the global symbols obj defines and the ones it needs."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, used


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative: the components with more than one file."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return comps


def file_graph(srcdir, builddir):
    """{file: {file it uses: [symbols]}} over the library's and the CLI's sources."""
    root = os.path.abspath(srcdir)
    files = {}
    for src, objs in objects(builddir).items():
        rel = os.path.relpath(src, root)
        if rel.split(os.sep)[0] not in FOLDERS or not rel.endswith(".c"):
            continue
        # A source compiled for several targets has the same symbols in each.
        built = [o for o in objs if os.path.exists(o)]
        if not built:
            raise SystemExit(f"file_cycles: {rel} is not built in {builddir}")
        files[rel] = symbols(built[0])
    owner = {}
    for f, (defined, _) in files.items():
        for s in defined:
            owner.setdefault(s, f)
    edges = {}
    for f, (_, used) in files.items():
        for s in used:
            g = owner.get(s)
            if g is not None and g != f:
                edges.setdefault(f, {}).setdefault(g, []).append(s)
    return files, edges


def known_cycles():
    """{frozenset of files: reason} from file_cycles_known.txt."""
    known = {}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_cycles_known.txt")
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            files, _, reason = line.partition(":")
            known[frozenset(files.split())] = reason.strip()
    return known


def main(argv):
    args = [a for a in argv if not a.startswith("-")]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    srcdir, builddir = args
    files, edges = file_graph(srcdir, builddir)
    if len(files) < len(FOLDERS):
        print(f"file_cycles: only {len(files)} sources found in {builddir}", file=sys.stderr)
        return 1
    if "--graph" in argv:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}: {', '.join(sorted(edges[a][b]))}")
    comps = strongly_connected(files, edges)
    known = known_cycles()
    failed = False
    for comp in comps:
        reason = known.pop(frozenset(comp), None)
        if reason is None:
            failed = True
            print("cycle among " + " ".join(comp) + ":")
        else:
            print("known cycle among " + " ".join(comp) + f" ({reason}):")
        for a in comp:
            for b in comp:
                if b in edges.get(a, {}):
                    print(f"  {a} -> {b}: {', '.join(sorted(edges[a][b]))}")
    for comp in sorted(" ".join(sorted(c)) for c in known):
        failed = True
        print(f"no cycle among {comp} any more: remove it from file_cycles_known.txt")
    print(f"{len(files)} files, {sum(len(v) for v in edges.values())} dependencies, "
          f"{len(comps)} cycles")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

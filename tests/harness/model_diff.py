#!/usr/bin/python3
"""Compare an input and an output model structurally and check that the report of
the run names every difference.

unreported_differences(src, dst, report) -> list of strings (empty: all named).
Compared per graph (the main graph and every subgraph, found by the path of node
names and attributes that hold it, as the report's `graph` spells it): initializer names, graph
input names, value_info names, named nodes; per model: opsets and IR version.
A difference is named when a pass's `changes` lists it (initializers, inputs and
value_info removed or added; opset and IR steps) or, for a node, when an action
that is not `skipped` names it (`node`, or `tile` for the Tile a fused consumer
stopped reading). value_info may appear only for values the input did not have.
The report must not claim more either: what it lists as removed is gone, what it
lists as added is there, and a pass says `changed` exactly when it lists anything.
"""
import onnx


def _graphs(g, path=None):
    """(path, graph) for g and every subgraph below it; path None for the main graph."""
    yield path, g
    for i, n in enumerate(g.node):
        nid = n.name or f"#{i}"
        up = "" if path is None else f"{path}/"
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g, f"{up}{nid}/{a.name}")
            elif a.type == onnx.AttributeProto.GRAPHS:
                for j, sg in enumerate(a.graphs):
                    yield from _graphs(sg, f"{up}{nid}/{a.name}[{j}]")


def _sets(model):
    """{kind: set of (path, name)} and {path: set of value names defined there}."""
    out = {"init": set(), "input": set(), "vi": set(), "node": set()}
    values = {}
    for path, g in _graphs(model.graph):
        out["init"].update((path, t.name) for t in g.initializer)
        out["input"].update((path, v.name) for v in g.input)
        out["vi"].update((path, v.name) for v in g.value_info)
        out["node"].update((path, n.name) for n in g.node if n.name)
        vals = values.setdefault(path, set())
        vals.update(t.name for t in g.initializer)
        vals.update(v.name for v in g.input)
        vals.update(o for n in g.node for o in n.output)
    return out, values


def _ref(r):
    return (None, r) if isinstance(r, str) else (r["graph"], r["name"])


def _default_opset(model):
    # "ai.onnx" is the default domain spelled out; an entry listed again at the
    # same version is the one entry (loading merges them, with a warning)
    return {"" if o.domain == "ai.onnx" else o.domain or "": o.version
            for o in model.opset_import}


def unreported_differences(src, dst, report):
    a = onnx.load(src, load_external_data=False)
    b = onnx.load(dst, load_external_data=False)
    before, values_before = _sets(a)
    after, _ = _sets(b)
    paths_before = {p for p, _ in _graphs(a.graph)}
    paths_after = {p for p, _ in _graphs(b.graph)}
    common = paths_before & paths_after
    errors = []

    reported = {(k, d): set() for k in ("init", "input", "vi") for d in ("removed", "added")}
    keys = {("init", "removed"): "initializers_removed", ("init", "added"): "initializers_added",
            ("input", "removed"): "inputs_removed", ("input", "added"): "inputs_added",
            ("vi", "removed"): "value_info_removed"}
    named_nodes = set()
    opset_steps, ir_steps = [], []
    for p in report["passes"]:
        ch = p.get("changes", {})
        for (kind, d), key in keys.items():
            reported[(kind, d)].update(_ref(r) for r in ch.get(key, []))
        opset_steps += [(o["domain"], o["from"], o["to"]) for o in ch.get("opset_import", [])]
        if "ir_version" in ch:
            ir_steps.append((ch["ir_version"]["from"], ch["ir_version"]["to"]))
        done = [x for x in p["actions"] if x["action"] != "skipped"]
        for x in done:
            for k in ("node", "tile"):
                if k in x:
                    named_nodes.add((x.get("graph"), x[k]))
        if p["changed"] != bool(done or ch):
            errors.append(f"pass {p['name']}: changed is {p['changed']} with "
                          f"{len(done)} actions done and changes {sorted(ch)}")

    for kind in ("init", "input", "vi"):
        gone = {x for x in before[kind] - after[kind] if x[0] in common}
        new = {x for x in after[kind] - before[kind] if x[0] in common}
        for x in sorted(gone - reported[(kind, "removed")], key=str):
            errors.append(f"{kind} {x} removed without a word")
        if kind == "vi":
            for path, name in sorted(new, key=str):
                if name in values_before.get(path, set()):
                    errors.append(f"value_info {name!r} (graph {path}) added for a value the "
                                  "input already had")
        else:
            for x in sorted(new - reported[(kind, "added")], key=str):
                errors.append(f"{kind} {x} added without a word")
        # no false claims: the net effect of the lists is what the files show
        net_removed = reported[(kind, "removed")] - reported.get((kind, "added"), set())
        for x in sorted(net_removed & after[kind], key=str):
            errors.append(f"{kind} {x} reported removed but still there")
        for x in sorted((reported.get((kind, "added"), set()) - reported[(kind, "removed")])
                        - after[kind], key=str):
            errors.append(f"{kind} {x} reported added but not there")

    for x in sorted({x for x in before["node"] - after["node"] if x[0] in common}, key=str):
        if x not in named_nodes:
            errors.append(f"node {x} removed without an action naming it")
    if len(a.graph.node) != len(b.graph.node) and not named_nodes:
        errors.append(f"{len(a.graph.node)} -> {len(b.graph.node)} nodes with no action")

    oa, ob = _default_opset(a), _default_opset(b)
    for dom in sorted(set(oa) | set(ob)):
        want = (oa.get(dom), ob.get(dom))
        steps = [(f, t) for d, f, t in opset_steps if d == dom]
        if want[0] != want[1]:
            if not steps or steps[0][0] != want[0] or steps[-1][1] != want[1]:
                errors.append(f"opset {dom!r} {want[0]} -> {want[1]}, reported {steps}")
        elif steps and steps[0][0] != steps[-1][1]:
            errors.append(f"opset {dom!r} unchanged, reported {steps}")
    if a.ir_version != b.ir_version:
        if not ir_steps or ir_steps[0][0] != a.ir_version or ir_steps[-1][1] != b.ir_version:
            errors.append(f"IR {a.ir_version} -> {b.ir_version}, reported {ir_steps}")
    elif ir_steps:
        errors.append(f"IR unchanged, reported {ir_steps}")
    return errors

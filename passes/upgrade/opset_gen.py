#!/usr/bin/python3
"""Generate passes/upgrade/opset_table.c: every ai.onnx operator's schema version history.

The upgrade pass walks a node from the model's opset to the target one schema
change at a time; this table says where those changes are. Debian's python3-onnx
(1.12) knows opsets up to 17 only, so the history comes from onnx's own
operator changelog (docs/Changelog.md of the onnx repository), which lists every
version of every operator, cut at the newest opset ONNX Runtime runs (1.30 says
"official support for domain ai.onnx is till opset 26"):

    /usr/bin/python3 passes/upgrade/opset_gen.py CHANGELOG.md "onnx@COMMIT" \\
        > passes/upgrade/opset_table.c

A heading "### <a name="Op-N"></a>**Op-N**" under "## Version N of the default
ONNX operator set" is one schema version; "(deprecated)" after it marks the op
deprecated from that version. Below it, the schema's attribute names, its input
count and the element types of its inputs, outputs and type constraints say
what a node may use at that version (what going down checks).
"""
import re
import sys

# The newest opset ONNX Runtime 1.30 runs, and so the newest target.
MAX_OPSET = 26

SECTION = re.compile(r"## Version (\d+) of the (default ONNX|'[^']*') operator set")
HEADING = re.compile(r'### <a name="([A-Za-z0-9_]+)-(\d+)"></a>\*\*[^*]+\*\*( \(deprecated\))?')
SUBSECTION = re.compile(r"#### (Attributes|Inputs|Outputs|Type Constraints)(?: \((\d+) - (\d+|&#8734;)\))?")
NAME = re.compile(r"<dt><tt>([A-Za-z0-9_]+)</tt>")
ATTR_DEFAULT = re.compile(r"<dt><tt>([A-Za-z0-9_]+)</tt> : (int|string) \(default is '?([^')]*)'?\)")
INPUT = re.compile(r"<dt><tt>([A-Za-z0-9_]+)</tt>( \([^)]*\))?")
SLOT_TYPE = re.compile(r"<dt><tt>[A-Za-z0-9_]+</tt>(?: \([^)]*\))? : ([^<]+)</dt>")
CONSTRAINT = re.compile(r"<dt><tt>([A-Za-z0-9_]+)</tt> : (.+)</dt>")
TENSOR = re.compile(r"tensor\(([a-z0-9]+)\)")
# TensorProto.DataType codes, for the element types a schema version takes.
DTYPES = {"float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6,
          "int64": 7, "string": 8, "bool": 9, "float16": 10, "double": 11, "uint32": 12,
          "uint64": 13, "complex64": 14, "complex128": 15, "bfloat16": 16,
          "float8e4m3fn": 17, "float8e4m3fnuz": 18, "float8e5m2": 19, "float8e5m2fnuz": 20,
          "uint4": 21, "int4": 22, "float4e2m1": 23, "float8e8m0": 24, "uint2": 25, "int2": 26}
VARIADIC = 255


def new_schema():
    return {"attrs": [], "defaults": {}, "inputs": 0, "required": 0, "slots": 0, "types": 0,
            "in_slots": [], "out_slots": [], "constraints": {}}


def types_mask(text, path):
    mask = 0
    for t in TENSOR.findall(text):
        if t not in DTYPES:
            sys.exit(f"{path}: element type {t} has no DataType code here")
        mask |= 1 << DTYPES[t]
    return mask


def slot_masks(schema, slots):
    """The element types each slot takes: its constraint's, or its own literal."""
    return [schema["constraints"].get(t.strip(), 0) or types_mask(t, "") for t in slots]


def history(path):
    """{op: {"versions": {version: schema}, "deprecated": first deprecated version
    or 0}}; a schema lists its attribute names, its most inputs and the element
    types its inputs and outputs take (a bit per DataType code)."""
    hist = {}
    default = False
    cur, part = None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = SECTION.match(line)
            if m:
                default = m.group(2) == "default ONNX" and int(m.group(1)) <= MAX_OPSET
                cur = None
                continue
            m = HEADING.match(line)
            if m:
                cur, part = None, None
                if not default:
                    continue
                op, version = m.group(1), int(m.group(2))
                e = hist.setdefault(op, {"versions": {}, "deprecated": 0})
                cur = e["versions"].setdefault(version, new_schema())
                if m.group(3):
                    dep = e["deprecated"]
                    e["deprecated"] = version if not dep else min(dep, version)
                continue
            if cur is None:
                continue
            m = SUBSECTION.match(line)
            if m or line.startswith("#### "):
                part = m.group(1) if m else None
                if not m:
                    continue
                if part == "Inputs" and m.group(3):
                    hi = m.group(3)
                    cur["inputs"] = VARIADIC if hi == "&#8734;" else int(hi)
                    cur["counted"] = True
                continue
            if part == "Attributes":
                cur["attrs"] += NAME.findall(line)
                for name, _kind, value in ATTR_DEFAULT.findall(line):
                    cur["defaults"][name] = value
            if part in ("Inputs", "Outputs"):
                for t in SLOT_TYPE.findall(line):
                    cur["in_slots" if part == "Inputs" else "out_slots"].append(t)
            if part == "Type Constraints":
                for name, text in CONSTRAINT.findall(line):
                    cur["constraints"][name] = types_mask(text, path)
            if part == "Inputs":
                for _name, note in INPUT.findall(line):
                    # a required input: not optional, not variadic (heterogeneous
                    # variadic inputs need at least one, which the count says)
                    if "optional" not in note and "variadic" not in note and cur["slots"] < 32:
                        cur["required"] |= 1 << cur["slots"]
                    cur["slots"] += 1
                    if not cur.get("counted"):
                        cur["inputs"] += 1
            if part in ("Inputs", "Outputs", "Type Constraints"):
                cur["types"] |= types_mask(line, path)
    return hist


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: opset_gen.py CHANGELOG.md SOURCE_NOTE > opset_table.c")
    hist = history(argv[1])
    if not hist.get("Tile") or max(hist["Tile"]["versions"]) < 13:
        sys.exit(f"{argv[1]}: no operator versions found (not onnx's docs/Changelog.md?)")
    # bsearch in C compares with strcmp: sort by bytes, not by locale.
    names = sorted(hist, key=lambda n: n.encode())
    out = sys.stdout
    out.write("/* GENERATED by passes/upgrade/opset_gen.py from the operator changelog of "
              "%s\n** (opsets up to %d). Do not edit; regenerate with:\n"
              "**     /usr/bin/python3 passes/upgrade/opset_gen.py CHANGELOG.md NOTE "
              "> passes/upgrade/opset_table.c */\n" % (argv[2], MAX_OPSET))
    out.write('#include "graph/graph.h"\n#include "passes/upgrade/opset_table.h"\n\n')
    out.write("const int32_t opset_table_max_opset = %d;\n\n" % MAX_OPSET)
    for i, n in enumerate(names):
        vers = hist[n]["versions"]
        v = sorted(vers)
        out.write("/* %s */\n" % n)
        out.write("static const int32_t v%d[] = {%s};\n" % (i, ", ".join(str(x) for x in v)))
        for x in v:
            attrs = sorted(set(vers[x]["attrs"]))
            if attrs:
                out.write("static const char *const a%d_%d[] = {%s};\n"
                          % (i, x, ", ".join('"%s"' % a for a in attrs)))
                dflt = vers[x]["defaults"]
                out.write("static const char *const d%d_%d[] = {%s};\n"
                          % (i, x, ", ".join('"%s"' % dflt[a] if a in dflt else "NULL"
                                             for a in attrs)))
        for x in v:
            for kind in ("in", "out"):
                masks = slot_masks(vers[x], vers[x][kind + "_slots"])
                if masks:
                    out.write("static const uint32_t %s%d_%d[] = {%s};\n"
                              % (kind, i, x, ", ".join("0x%xu" % k for k in masks)))
        out.write("static const opset_schema s%d[] = {\n" % i)
        for x in v:
            attrs = sorted(set(vers[x]["attrs"]))
            name = "%d_%d" % (i, x)
            ins, outs = vers[x]["in_slots"], vers[x]["out_slots"]
            out.write("    {%d, %d, 0x%xu, 0x%xu, %s, %s, %d, %s, %d, %s, %d},\n"
                      % (x, vers[x]["inputs"], vers[x]["required"], vers[x]["types"],
                         "a" + name if attrs else "NULL", "d" + name if attrs else "NULL",
                         len(attrs), "in" + name if ins else "NULL", len(ins),
                         "out" + name if outs else "NULL", len(outs)))
        out.write("};\n")
    out.write("\nconst opset_entry opset_table[] = {\n")
    for i, n in enumerate(names):
        out.write('    {"%s", v%d, s%d, countof(v%d), %d},\n'
                  % (n, i, i, i, hist[n]["deprecated"]))
    out.write("};\n")
    out.write("const size_t opset_table_count = countof(opset_table);\n")


if __name__ == "__main__":
    main(sys.argv)

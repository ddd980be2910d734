#!/usr/bin/python3
"""The op table (graph/ops.h) against ONNX's own operator schemas.

ops_dump prints the table; every op the installed onnx package knows must have
the input counts of its schemas (min over all versions; max at least the schemas'
maximum, more only for inputs added after the newest opset this onnx knows), and
every op the table says broadcasts numpy-style must start doing so at the version
whose documentation first says "multidirectional" broadcasting.
"""
import subprocess
import sys

from onnx import defs

# Inputs added after opset 17, where onnx 1.12 stops (onnx's operator changelog
# lists them): the axes of the reductions and of Pad (18; Split's num_outputs is
# an attribute), DFT's axis (20).
NEWER_INPUTS = {"ReduceL1": 2, "ReduceL2": 2, "ReduceLogSum": 2, "ReduceLogSumExp": 2,
                "ReduceMax": 2, "ReduceMean": 2, "ReduceMin": 2, "ReduceProd": 2,
                "ReduceSumSquare": 2, "Pad": 4, "DFT": 3}
OP_ANY = 2**31 - 1


def rows(dump):
    out = subprocess.run([dump], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        name, lo, hi, kind, res, bcast, since = line.split("\t")
        yield name, int(lo), int(hi), kind, res, bcast, int(since)


def main():
    schemas = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain == "":
            schemas.setdefault(s.name, []).append(s)
    errors, checked = [], 0
    for name, lo, hi, kind, res, bcast, since in rows(sys.argv[1]):
        versions = sorted(schemas.get(name, []), key=lambda s: s.since_version)
        if not versions:
            continue
        checked += 1
        want_lo = min(s.min_input for s in versions)
        want_hi = max(max(s.max_input for s in versions), NEWER_INPUTS.get(name, 0))
        if lo != want_lo or hi != want_hi:
            errors.append(f"{name}: inputs {lo}..{hi}, schemas say {want_lo}..{want_hi}")
        multi = [s.since_version for s in versions
                 if "multidirectional" in (s.doc or "").lower()]
        if bcast == "multi" and (not multi or multi[0] != since):
            errors.append(f"{name}: broadcasts from opset {since}, schemas say {multi[:1]}")
        if bcast != "multi" and multi and kind != "other":
            errors.append(f"{name}: elementwise and broadcasting from {multi[0]}, table "
                          f"says {bcast}")
    print(f"{checked} ops checked against onnx {defs.onnx_opset_version()} schemas")
    for e in errors:
        print("FAIL", e)
    return 1 if errors or checked < 100 else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Validate a tileopt JSON report against tests/report.schema.json.

usage: validate_report.py FILE|-   (exit 0 valid, 1 invalid with every error listed,
2 usage or unreadable file)
"""
import json
import os
import sys

import jsonschema

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                           "report.schema.json")


def load_schema():
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    return schema


def count_errors(report):
    """Each pass's nodes_changed and nodes_skipped against its actions: the
    distinct (graph, node) pairs that actions which are no skips name, and that
    skips name."""
    out = []
    for i, p in enumerate(report.get("passes", []) if isinstance(report, dict) else []):
        actions = p.get("actions") if isinstance(p, dict) else None
        if not isinstance(actions, list):
            continue
        done, skipped = set(), set()
        for a in actions:
            if isinstance(a, dict) and a.get("node"):
                key = (a.get("graph"), a["node"])
                (skipped if a.get("action") == "skipped" else done).add(key)
        for key, want in (("nodes_changed", len(done)), ("nodes_skipped", len(skipped))):
            if key in p and p[key] != want:
                out.append(f"passes/{i}/{key}: {p[key]}, but the actions name {want}")
    return out


def report_errors(report):
    """Every schema violation in report, and counts that disagree with the
    actions, as 'path: message' strings (empty when valid)."""
    validator = jsonschema.Draft7Validator(load_schema())
    out = []
    for e in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        out.append(f"{where}: {e.message}")
    return out + count_errors(report)


def main(argv):
    if len(argv) != 2:
        print("usage: validate_report.py FILE|-", file=sys.stderr)
        return 2
    try:
        if argv[1] == "-":
            report = json.load(sys.stdin)
        else:
            with open(argv[1], encoding="utf-8") as f:
                report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"validate_report: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2
    errors = report_errors(report)
    for e in errors:
        print(f"validate_report: {argv[1]}: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

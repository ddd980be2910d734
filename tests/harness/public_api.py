#!/usr/bin/python3
"""Two rules of the layout that a reader can check by eye and this script by grep:

  - include/tileopt.h names no third-party type or header (cJSON, protobuf-c):
    callers read the report through typed accessors and as JSON text, so a
    library they never chose stays internal;
  - api/ only wraps the driver: the pass pipeline (running a pass, its
    snapshot and log, rounds of reruns) lives in passes/driver.c, so api/ calls
    pass_run_one and pass_pipeline and nothing below them.

    public_api.py SRCDIR

Exits 1 naming each line that breaks a rule.
"""
import os
import re
import sys

HEADER_FORBIDDEN = re.compile(r"cJSON|cjson/|ProtobufC|protobuf-c/|Onnx__")
# What running a pass takes apart from the driver's two entry points.
PIPELINE = re.compile(r"\b(pass_snapshot_\w+|pass_log_\w+|PASS_ROUNDS)\b"
                      r"|->run\s*\(|\.run\s*\(")


def scan(path, pattern, why):
    found = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = pattern.search(line)
            if m:
                found.append(f"{path}:{no}: {why}: {m.group(0)}")
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    found = scan(os.path.join(src, "include", "tileopt.h"), HEADER_FORBIDDEN,
                 "the public header names a third-party type")
    api = os.path.join(src, "api")
    files = sorted(f for f in os.listdir(api) if f.endswith((".c", ".h")))
    for name in files:
        found += scan(os.path.join(api, name), PIPELINE,
                      "api/ runs passes itself instead of through passes/driver.c")
    for v in found:
        print(v)
    print(f"include/tileopt.h and {len(files)} files of api/ checked")
    return 1 if found or not files else 0


if __name__ == "__main__":
    sys.exit(main())

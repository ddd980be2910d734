#!/usr/bin/python3
"""Side by side: tileopt's upgrade pass vs onnx.version_converter on ONNX's legacy
backend test models (opset < 13), both migrating to opset 13.

Counts the models whose converted output passes onnx.checker (full check) and
whose test_data_set_* outputs ONNX Runtime reproduces, and prints both counts.

    TILEOPT=build/tools/tileopt /usr/bin/python3 bench/upgrade_vs_onnx.py [-v]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("SRCDIR", os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.environ["SRCDIR"], "tests", "passes"))
import test_upgrade_legacy  # noqa: E402

if __name__ == "__main__":
    args = ["--compare"] + [a for a in sys.argv[1:] if a == "-v"]
    test_upgrade_legacy.main(args)
    sys.exit(0)

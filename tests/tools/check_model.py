#!/usr/bin/python3
"""usage: check_model.py MODEL.onnx [...]

Runs onnx.checker.check_model(full_check=True) on each model (by path, so external
data and models past 2 GB work). Exit 0 when all pass; 1 with
'check_model: PATH: message' on stderr for the first that fails; 2 on usage.
"""
import sys

import onnx


def check(path):
    """Raise onnx.checker.ValidationError (or another exception) when path is invalid."""
    onnx.checker.check_model(str(path), full_check=True)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    for p in argv[1:]:
        try:
            check(p)
        except Exception as e:  # checker raises several exception types
            msg = " ".join(str(e).split())
            print(f"check_model: {p}: {msg}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

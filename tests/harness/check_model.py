#!/usr/bin/python3
"""usage: check_model.py MODEL.onnx [...]

Runs the equivalent of onnx.checker.check_model(full_check=True) on each model,
without modifying the file (see check()); external data and models past 2 GB work. Exit 0 when all pass; 1 with
'check_model: PATH: message' on stderr for the first that fails; 2 on usage.
"""
import os
import sys
import tempfile

import onnx


TWO_GB = 2 ** 31


def check(path):
    """Raise onnx.checker.ValidationError (or another exception) when path is invalid.

    Equivalent to onnx.checker.check_model(path, full_check=True) without its side
    effect: in onnx 1.12 that call runs infer_shapes_path() with no output path,
    which REWRITES the model file in place with inferred value_info. Here the
    structural check runs on the path (so external-data files are checked too) and
    strict shape inference on the model loaded with its external data (1.12's
    inference cannot read shape inputs such as Tile repeats from external data).
    Models past 2 GB are inferred path-to-temporary-file.
    """
    path = str(path)
    onnx.checker.check_model(path)
    if os.path.getsize(path) < TWO_GB:
        m = onnx.load(path)
        if m.ByteSize() < TWO_GB:
            onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
            return
    with tempfile.TemporaryDirectory(prefix="check_model_") as tmp:
        onnx.shape_inference.infer_shapes_path(path, os.path.join(tmp, "inferred.onnx"),
                                               check_type=True, strict_mode=True)


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

#!/usr/bin/python3
"""`tileopt optimize` output conventions: --quiet prints nothing, the summary goes
to stdout otherwise, no progress in pipes, OUT is replaced atomically (no temporary
files left behind), the input is never touched, and saving to a missing folder is
an error. tests/cli/test_out_paths.py covers the paths that are refused."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

SRC = os.path.join(h.MODELS, "legacy_tile1.onnx")


def optimize_should_print_nothing_with_quiet():
    with h.tempdir() as d:
        cp = h.expect_ok(h.tileopt("optimize", SRC, "-o", os.path.join(d, "o.onnx"),
                                   "--quiet"))
        if cp.stdout or cp.stderr:
            raise AssertionError(f"--quiet printed: {cp.stdout!r} {cp.stderr!r}")


def optimize_should_print_a_summary_and_no_progress_in_a_pipe():
    with h.tempdir() as d:
        dst = os.path.join(d, "o.onnx")
        cp = h.expect_ok(h.tileopt("optimize", SRC, "-o", dst))
        if dst not in cp.stdout or "Tile" not in cp.stdout:
            raise AssertionError(f"summary lacks the output path or Tile count: "
                                 f"{cp.stdout!r}")
        if cp.stderr:
            raise AssertionError(f"stderr in a pipe (progress?): {cp.stderr!r}")


def optimize_should_replace_an_existing_output_and_leave_no_temporary_files():
    with h.tempdir() as d:
        dst = os.path.join(d, "o.onnx")
        with open(dst, "wb") as f:
            f.write(b"old contents")
        h.expect_ok(h.tileopt("optimize", SRC, "-o", dst, "--quiet"))
        h.check(dst)
        if os.listdir(d) != ["o.onnx"]:
            raise AssertionError(f"folder holds {sorted(os.listdir(d))}")


def optimize_should_not_touch_the_input():
    with h.tempdir() as d:
        src = os.path.join(d, "in.onnx")
        with open(SRC, "rb") as f:
            data = f.read()
        with open(src, "wb") as f:
            f.write(data)
        mtime = os.stat(src).st_mtime_ns
        h.expect_ok(h.tileopt("optimize", src, "-o", os.path.join(d, "o.onnx"),
                              "--quiet"))
        with open(src, "rb") as f:
            if f.read() != data or os.stat(src).st_mtime_ns != mtime:
                raise AssertionError("input changed")


def optimize_should_fail_cleanly_when_the_output_folder_is_missing():
    with h.tempdir() as d:
        dst = os.path.join(d, "no_such_dir", "o.onnx")
        cp = h.tileopt("optimize", SRC, "-o", dst, "--quiet")
        lines = cp.stderr.splitlines()
        if (cp.returncode != 1 or len(lines) != 1
                or not lines[0].startswith("tileopt: error: ")
                or "no_such_dir" not in lines[0]):
            raise AssertionError(f"exit {cp.returncode}, stderr {cp.stderr!r}")
        if os.listdir(d):
            raise AssertionError(f"created {os.listdir(d)}")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

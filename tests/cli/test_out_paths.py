#!/usr/bin/python3
"""Where `tileopt optimize` may write. OUT naming the input, however spelled
(./m.onnx, a symlink, a hard link), is refused with exit 2 before anything is
read, and so is a --report naming the input or OUT; a destination that exists but
is no regular file fails with exit 1, also before anything is read. A run that
fails after its passes never creates or changes OUT: the report is written
first, verify runs before the save, and a file has no name until it is whole.
tests/cli/test_data_files.py covers OUT's external data files."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
import harness as h  # noqa: E402

SRC = os.path.join(h.MODELS, "legacy_tile1.onnx")


def _copy_model(d, name="m.onnx"):
    path = os.path.join(d, name)
    with open(SRC, "rb") as f, open(path, "wb") as g:
        g.write(f.read())
    return path


def _snapshot(d):
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        st = os.lstat(p)
        data = open(p, "rb").read() if os.path.isfile(p) and not os.path.islink(p) else None
        out[name] = (st.st_mode, st.st_ino, st.st_mtime_ns, data)
    return out


def _expect_refused(cp, code, words):
    lines = cp.stderr.splitlines()
    if cp.returncode != code or not lines or not lines[0].startswith("tileopt: error: ") \
            or words not in lines[0]:
        raise AssertionError(f"expected exit {code} with '{words}', got exit "
                             f"{cp.returncode}: {cp.stderr!r}")


def optimize_should_refuse_an_output_that_is_the_input_however_spelled():
    with h.tempdir() as d:
        src = _copy_model(d)
        os.symlink(src, os.path.join(d, "link.onnx"))
        os.link(src, os.path.join(d, "hard.onnx"))
        os.mkdir(os.path.join(d, "sub"))
        before = _snapshot(d)
        for out in (src, os.path.join(d, ".", "m.onnx"), os.path.join(d, "sub", "..", "m.onnx"),
                    os.path.join(d, "link.onnx"), os.path.join(d, "hard.onnx")):
            cp = h.tileopt("optimize", src, "-o", out, "--quiet")
            _expect_refused(cp, 2, "is the input model")
        # the same, relative to the working folder
        cp = h.tileopt("optimize", "m.onnx", "-o", "./m.onnx", "--quiet", cwd=d)
        _expect_refused(cp, 2, "is the input model")
        if _snapshot(d) != before:
            raise AssertionError("a refused run changed the folder")


def optimize_should_refuse_a_report_that_names_the_input_or_the_output():
    with h.tempdir() as d:
        src = _copy_model(d)
        out = os.path.join(d, "o.onnx")
        before = _snapshot(d)
        _expect_refused(h.tileopt("optimize", src, "-o", out, "--report", src), 2,
                        "is the input model")
        _expect_refused(h.tileopt("optimize", src, "-o", out, "--report", out), 2,
                        "is the output model")
        _expect_refused(h.tileopt("optimize", src, "-o", out, "--report",
                                  os.path.join(d, ".", "o.onnx")), 2, "is the output model")
        if _snapshot(d) != before:
            raise AssertionError("a refused run changed the folder")


def optimize_should_refuse_a_destination_that_is_not_a_regular_file():
    with h.tempdir() as d:
        src = _copy_model(d)
        os.mkdir(os.path.join(d, "folder"))
        os.mkfifo(os.path.join(d, "fifo"))
        for out in (os.path.join(d, "folder"), os.path.join(d, "fifo"), "/dev/null"):
            _expect_refused(h.tileopt("optimize", src, "-o", out, "--quiet"), 1,
                            "not a regular file")
            _expect_refused(h.tileopt("optimize", src, "-o", os.path.join(d, "o.onnx"),
                                      "--report", out), 1, "not a regular file")
        if not os.path.exists("/dev/null") or os.path.isfile("/dev/null"):
            raise AssertionError("/dev/null was replaced")
        if os.path.exists(os.path.join(d, "o.onnx")):
            raise AssertionError("a refused run wrote OUT")


def optimize_should_leave_out_alone_when_the_report_cannot_be_written():
    with h.tempdir() as d:
        src = _copy_model(d)
        for existing in (False, True):
            out = os.path.join(d, "o.onnx")
            if existing:
                with open(out, "wb") as f:
                    f.write(b"previous contents")
            before = _snapshot(d)
            cp = h.tileopt("optimize", src, "-o", out, "--quiet",
                           "--report", os.path.join(d, "missing", "r.json"))
            if cp.returncode != 1 or "missing" not in cp.stderr:
                raise AssertionError(f"exit {cp.returncode}: {cp.stderr!r}")
            if _snapshot(d) != before:
                raise AssertionError(f"OUT {'changed' if existing else 'created'} by a run "
                                     f"whose report failed")


def _writing_unnamed(pid, folder):
    """Does process pid hold a file open in folder that has no name yet?"""
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith(folder + "/") and target.endswith(" (deleted)"):
            return True
    return False


def optimize_should_leave_nothing_when_killed_while_writing():
    # SIGINT, SIGTERM or SIGKILL (no handler runs: the OOM killer's) while a 256
    # MB model is being written: the file has no name until it is complete, so
    # nothing is left beside OUT, and OUT is its old self.
    import signal
    import subprocess
    import time
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    with h.tempdir() as d:
        src = os.path.join(d, "big.onnx")
        w = numpy_helper.from_array(np.ones((64, 1 << 20), np.float32), "w")
        g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 1 << 20])],
                              [w])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), src)
        out_dir = os.path.join(d, "out")
        os.mkdir(out_dir)
        out = os.path.join(out_dir, "o.onnx")
        _copy_model(out_dir, "o.onnx")
        before = _snapshot(out_dir)
        caught = 0
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            p = subprocess.Popen([os.path.abspath(h.tileopt_path()), "optimize", src, "-o", out,
                                  "--passes", "none", "-q"], stderr=subprocess.PIPE)
            deadline = time.monotonic() + 120
            while p.poll() is None and time.monotonic() < deadline:
                if _writing_unnamed(p.pid, out_dir):
                    p.send_signal(sig)
                    caught += 1
                    break
                time.sleep(0.002)
            p.wait(timeout=120)
            if p.returncode == 0:      # finished before the signal: then it is whole
                h.check(out)
                _copy_model(out_dir, "o.onnx")
            elif _snapshot(out_dir) != before:
                raise AssertionError(f"{sig.name}: the folder changed: {os.listdir(out_dir)}")
        if not caught:
            raise AssertionError("the save never held an unnamed file to interrupt")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

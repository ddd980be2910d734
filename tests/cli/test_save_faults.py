#!/usr/bin/python3
"""A save meeting what this machine's disk does not show, through the LD_PRELOAD
shim tests/cli/faultfs.c (release builds: the sanitizers' runtime must come first):

  - SIGKILL at every step of a save (each write, copy, fsync, link, rename,
    unlink and lock), for a first save, a save over an earlier one, a change of
    data file name, and a save beside the input that writes no data: OUT is
    always the old model with its old data or the new one with its new data;
    while data is being written nothing else is in the folder, and between the
    final renames only names the next save recognizes and removes, which it
    does;
  - a full disk half way: exit 1, OUT and its data as they were, nothing left;
  - file systems without O_TMPFILE or copy_file_range: the same output;
  - a data file that shrinks while it is copied: a clear error, nothing left;
  - a real full tmpfs, when this runs as root and may mount one.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", "."), "tests", "harness"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from test_data_files import data_files, initializers, listing, make_model  # noqa: E402

SHIM = os.environ.get("FAULTFS")
STAGE = re.compile(r"(\.tileopt-[01]|^tileopt-[0-9a-f]{16}\.[01]\.data|^\.tileopt-[0-9a-f]{16}\.onnx)$")
NAMED_TEMP = re.compile(r"^\.tileopt-[0-9a-z]{8}$")
COMMIT_STEPS = ("linkat", "renameat", "renameat2", "unlinkat")


def run(args, **faults):
    env = dict(os.environ, LD_PRELOAD=SHIM)
    env.update({f"FAULTFS_{k.upper()}": str(v) for k, v in faults.items()})
    return subprocess.run([os.path.abspath(h.tileopt_path()), *args], env=env,
                          capture_output=True, text=True, timeout=120)


def state(out_dir, out):
    """Which model OUT holds ('none' when absent), as initializer values."""
    if not os.path.exists(out):
        return None
    return initializers(out)


def same_values(a, b):
    return a is not None and b is not None and a.keys() == b.keys() and \
        all(np.array_equal(a[k], b[k]) for k in a)


class Scenario:
    """A folder state before the run, the run, and the models before and after."""

    def __init__(self, root, name, data_name=None, beside=False):
        self.root = os.path.join(root, name)
        self.src_dir = os.path.join(self.root, "in")
        self.out_dir = os.path.join(self.root, "out")
        self.template = os.path.join(root, name + ".template")
        os.makedirs(self.template)
        tin, tout = os.path.join(self.template, "in"), os.path.join(self.template, "out")
        os.makedirs(tin)
        os.makedirs(tout)
        self.out = os.path.join(self.out_dir, "o.onnx")
        self.keep = set()
        if name != "first":
            old = make_model(os.path.join(tin, "old.onnx"), 1)
            cp = h.tileopt("optimize", os.path.join(tin, "old.onnx"), "-o",
                           os.path.join(tout, "o.onnx"), "-q")
            h.expect_ok(cp)
            self.old = {k: v for k, v in initializers(os.path.join(tout, "o.onnx")).items()}
            del old
        else:
            self.old = None
        if beside:   # the input in OUT's folder, reading weights.bin
            make_model(os.path.join(tout, "m.onnx"), 2, location="weights.bin")
            src = os.path.join(self.out_dir, "m.onnx")
            self.keep = {"m.onnx", "weights.bin"}
        else:
            make_model(os.path.join(tin, "m.onnx"), 2)
            src = os.path.join(self.src_dir, "m.onnx")
        self.new = initializers(os.path.join(tout if beside else tin, "m.onnx"))
        self.args = ["optimize", src, "-o", self.out, "--passes", "none", "-q"]
        if data_name:
            self.args += ["--data-name", data_name]
        self.final = sorted({"o.onnx", data_name or ("o.onnx.data" if not beside else None)}
                            - {None} | self.keep)
        self.name = name

    def reset(self):
        if os.path.exists(self.root):
            shutil.rmtree(self.root)
        shutil.copytree(self.template, self.root)

    def extras(self):
        """Names beside OUT that are neither OUT, a file it reads, nor the input's."""
        names = set(listing(self.out_dir)) - self.keep - {"o.onnx"}
        if os.path.exists(self.out):
            reads, record = data_files(self.out)
            names -= reads
            marked = set(filter(None, record.get("tileopt.data_to_remove", "").split("/")))
        else:
            marked = set()
        stages = {n for n in names if STAGE.search(n)}
        inodes = {os.stat(os.path.join(self.out_dir, n)).st_ino for n in listing(self.out_dir)
                  if STAGE.search(n)}
        unknown = {n for n in names - stages - marked
                   if os.stat(os.path.join(self.out_dir, n)).st_ino not in inodes}
        return names, unknown


def save_should_leave_the_old_or_the_new_pair_when_killed_at_any_step():
    with tempfile.TemporaryDirectory(prefix="tileopt_kill_") as d:
        for sc in (Scenario(d, "first"), Scenario(d, "rerun"),
                   Scenario(d, "rename", data_name="w.bin"),
                   Scenario(d, "beside", beside=True)):
            sc.reset()
            log = os.path.join(d, "steps.log")
            cp = run(sc.args, log=log)
            h.expect_ok(cp)
            with open(log) as f:
                steps = [line.split()[1] for line in f]
            os.remove(log)
            if listing(sc.out_dir) != sc.final:
                raise AssertionError(f"{sc.name}: {listing(sc.out_dir)}")
            first_commit = min((i for i, s in enumerate(steps) if s in COMMIT_STEPS),
                               default=len(steps))
            for k in range(1, len(steps) + 1):
                sc.reset()
                cp = run(sc.args, kill_at=k)
                where = f"{sc.name}, killed at step {k} ({steps[k - 1]})"
                if cp.returncode != -9:
                    raise AssertionError(f"{where}: exit {cp.returncode} {cp.stderr!r}")
                got = state(sc.out_dir, sc.out)
                if not (same_values(got, sc.new) or
                        (sc.old is None and got is None) or same_values(got, sc.old)):
                    raise AssertionError(f"{where}: OUT is neither the old nor the new model")
                names, unknown = sc.extras()
                if unknown or (k - 1 < first_commit and names):
                    raise AssertionError(f"{where}: left {sorted(names)} ({sorted(unknown)} "
                                         f"unknown) beside {listing(sc.out_dir)}")
                h.expect_ok(h.tileopt(*sc.args))
                if listing(sc.out_dir) != sc.final or not same_values(state(sc.out_dir, sc.out),
                                                                       sc.new):
                    raise AssertionError(f"{where}: the next save left {listing(sc.out_dir)}")
            print(f"{sc.name}: {len(steps)} steps, each killed")


def save_should_leave_everything_as_it_was_on_a_full_disk():
    with tempfile.TemporaryDirectory(prefix="tileopt_full_") as d:
        sc = Scenario(d, "rerun")
        data = 256 * 256 * 4
        for extra in ({}, {"no_tmpfile": 1}, {"no_copy_range": 1}):
            for after in (0, 1000, data // 2, data + 100):
                sc.reset()
                before = {n: open(os.path.join(sc.out_dir, n), "rb").read()
                          for n in listing(sc.out_dir)}
                cp = run(sc.args, enospc_after=after, **extra)
                if cp.returncode != 1 or "No space left on device" not in cp.stderr:
                    raise AssertionError(f"{extra} ENOSPC after {after}: exit {cp.returncode} "
                                         f"{cp.stderr!r}")
                now = {n: open(os.path.join(sc.out_dir, n), "rb").read()
                       for n in listing(sc.out_dir)}
                if now != before:
                    raise AssertionError(f"{extra} ENOSPC after {after}: the folder changed: "
                                         f"{listing(sc.out_dir)}")


def save_should_write_the_same_without_o_tmpfile_or_copy_file_range():
    with tempfile.TemporaryDirectory(prefix="tileopt_fs_") as d:
        sc = Scenario(d, "rerun")
        sc.reset()
        h.expect_ok(h.tileopt(*sc.args))
        want = {n: open(os.path.join(sc.out_dir, n), "rb").read() for n in listing(sc.out_dir)}
        for extra in ({"no_tmpfile": 1}, {"no_copy_range": 1},
                      {"no_tmpfile": 1, "no_copy_range": 1}):
            sc.reset()
            h.expect_ok(run(sc.args, **extra))
            got = {n: open(os.path.join(sc.out_dir, n), "rb").read() for n in listing(sc.out_dir)}
            if got != want:
                raise AssertionError(f"{extra}: {sorted(got)} differ from {sorted(want)}")


def save_should_fail_cleanly_when_the_data_file_shrinks_while_copied():
    with tempfile.TemporaryDirectory(prefix="tileopt_shrink_") as d:
        sc = Scenario(d, "rerun")
        for extra in ({}, {"no_copy_range": 1}):
            sc.reset()
            before = {n: open(os.path.join(sc.out_dir, n), "rb").read()
                      for n in listing(sc.out_dir)}
            cp = run(sc.args, shrink=os.path.join(sc.src_dir, "m.onnx.data"), **extra)
            if cp.returncode != 1 or "shrank" not in cp.stderr:
                raise AssertionError(f"{extra}: exit {cp.returncode} {cp.stderr!r}")
            now = {n: open(os.path.join(sc.out_dir, n), "rb").read()
                   for n in listing(sc.out_dir)}
            if now != before:
                raise AssertionError(f"{extra}: the folder changed: {listing(sc.out_dir)}")


def save_should_leave_everything_as_it_was_on_a_full_tmpfs():
    if os.geteuid() != 0:
        print("skipped: mounting a small tmpfs needs root")
        return
    with tempfile.TemporaryDirectory(prefix="tileopt_tmpfs_") as d:
        mnt = os.path.join(d, "mnt")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                          capture_output=True).returncode != 0:
            print("skipped: this machine does not let root mount a tmpfs")
            return
        try:
            small, big = os.path.join(d, "small.onnx"), os.path.join(d, "big.onnx")
            make_model(small, 1)                      # 257 KiB of data
            out = os.path.join(mnt, "o.onnx")
            h.expect_ok(h.tileopt("optimize", small, "-o", out, "-q"))
            before = {n: open(os.path.join(mnt, n), "rb").read() for n in listing(mnt)}
            import numpy as np_  # noqa: F401
            from onnx import helper, numpy_helper, TensorProto
            w = numpy_helper.from_array(np.ones((768, 1024), np.float32), "w")
            g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 768])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1024])],
                                  [w])
            onnx.save_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
                            big, save_as_external_data=True, location="big.onnx.data",
                            size_threshold=0)
            cp = h.tileopt("optimize", big, "-o", out, "-q")
            if cp.returncode != 1 or "No space left on device" not in cp.stderr:
                raise AssertionError(f"exit {cp.returncode} {cp.stderr!r}")
            now = {n: open(os.path.join(mnt, n), "rb").read() for n in listing(mnt)}
            if now != before:
                raise AssertionError(f"the tmpfs changed: {listing(mnt)}")
        finally:
            subprocess.run(["umount", mnt], check=False)


if __name__ == "__main__":
    if not SHIM:
        sys.exit("FAULTFS (the shim's path) is not set: meson sets it in release builds")
    sys.exit(h.run_tests(globals()))

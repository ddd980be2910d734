#!/usr/bin/python3
"""pip as a user runs it, offline, with Debian's meson-python: the wheel built
once, installed into a staging folder (--target) and used from a fresh
interpreter that sees nothing of the build tree (import, a model optimized and
run, the tileopt command and python -m tileopt); then installed into a virtual
environment of another interpreter of the same version, without Debian's site
packages, where it needs nothing but the C library."""
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

CLIENT = textwrap.dedent("""
    import sys
    import numpy as np
    import onnx
    import tileopt
    assert tileopt.__file__.startswith(sys.argv[1]), tileopt.__file__
    model, report = tileopt.optimize(onnx.load(sys.argv[2]))
    onnx.checker.check_model(model, full_check=True)
    x = np.ones((2, 3, 4), np.float32)
    y = tileopt.run(model, {"x": x})
    print(report["input"]["tiles"], report["output"]["tiles"], sorted(y))
""")


def run(cmd, env=None, cwd=None):
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=540, env=env, cwd=cwd)
    assert cp.returncode == 0, f"{' '.join(cmd)}: exit {cp.returncode}\n{cp.stdout[-3000:]}" \
                               f"\n{cp.stderr[-3000:]}"
    return cp


@functools.lru_cache(maxsize=None)
def wheel():
    """The wheel of the source tree, built once (removed at exit)."""
    d = tempfile.mkdtemp(prefix="tileopt-wheel-")
    # --no-build-isolation: offline, meson-python comes from Debian, not PyPI
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--no-index", "--quiet", "-w", d, h.SRCDIR], cwd=d)
    return glob.glob(os.path.join(d, "tileopt-*.whl"))[0]


def pip_install_should_give_a_working_package_and_cli():
    with h.tempdir() as d:
        target = os.path.join(d, "site")
        run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
             "--target", target, wheel()], cwd=d)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
        env["PYTHONPATH"] = target
        model = os.path.join(h.MODELS, "legacy_tile1.onnx")
        out = run([sys.executable, "-c", CLIENT, target, model], env=env, cwd=d).stdout
        assert out.split()[:2] == ["1", "1"] and "'y'" in out, out
        opt = os.path.join(d, "o.onnx")
        for cli in ([sys.executable, "-m", "tileopt"], [os.path.join(target, "bin", "tileopt")]):
            cp = run(cli + ["--version"], env=env, cwd=d)
            assert cp.stdout.startswith("tileopt "), cp.stdout
            run(cli + ["optimize", model, "-o", opt, "--quiet"], env=env, cwd=d)
            h.check(opt)
            os.remove(opt)


def another_interpreter():
    """A CPython of this interpreter's version that is not this one (pyenv's
    here), or None."""
    version = "%d.%d" % sys.version_info[:2]
    found = glob.glob(os.path.expanduser("~/.pyenv/versions/%s.*/bin/python%s" % (version, version)))
    found += [p for p in (shutil.which("python" + version), shutil.which("python3")) if p]
    mine = os.path.realpath(sys.executable)
    for p in found:
        if os.path.realpath(p) == mine or not os.access(p, os.X_OK):
            continue
        cp = subprocess.run([p, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                            capture_output=True, text=True)
        if cp.returncode == 0 and cp.stdout.strip() == version:
            return p
    return None


# What a manylinux-style wheel may need from the system: the C library's own.
LIBC_CLASS = re.compile(r"^(linux-vdso|libc|libm|libdl|libpthread|librt|ld-linux[-\w]*)\.so")

FOREIGN_CLIENT = textwrap.dedent("""
    import sys
    import tileopt
    assert tileopt.__file__.startswith(sys.argv[1]), tileopt.__file__
    for name in ("onnx", "numpy"):
        try:
            __import__(name)
            raise SystemExit(name + " is importable: the venv sees Debian's packages")
        except ImportError:
            pass
    data, report = tileopt.optimize(sys.argv[2], verify=True)
    assert isinstance(data, bytes), type(data)
    assert report["verify"]["verdict"] == "match", report["verify"]
    print(report["input"]["tiles"], report["output"]["tiles"])
""")


def wheel_should_work_in_another_interpreter_with_libc_alone():
    python = another_interpreter()
    if python is None:
        print("skipped: no other CPython %d.%d on this machine" % sys.version_info[:2])
        return
    with h.tempdir() as d:
        venv = os.path.join(d, "venv")
        run([python, "-m", "venv", venv])  # no --system-site-packages
        pip = os.path.join(venv, "bin", "pip")
        # offline and without dependencies: onnx and numpy are optional
        run([pip, "install", "--no-index", "--no-deps", "--quiet", wheel()])
        site = run([os.path.join(venv, "bin", "python"), "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
        ext = glob.glob(os.path.join(site, "tileopt", "_tileopt*.so"))
        cli = os.path.join(site, "tileopt", "tileopt")
        assert ext and os.access(cli, os.X_OK), os.listdir(os.path.join(site, "tileopt"))
        for binary in ext + [cli]:
            libs = [line.split()[0] for line in run(["ldd", binary]).stdout.splitlines()]
            extra = [lib for lib in libs if not LIBC_CLASS.match(os.path.basename(lib))]
            assert not extra, f"{binary} needs {extra}"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
        model = os.path.join(h.MODELS, "legacy_repeat.onnx")
        out = run([os.path.join(venv, "bin", "python"), "-c", FOREIGN_CLIENT, site, model],
                  env=env, cwd=d).stdout
        assert out.split() == ["1", "0"], out
        opt = os.path.join(d, "o.onnx")
        run([os.path.join(venv, "bin", "tileopt"), "optimize", model, opt, "-q"], env=env, cwd=d)
        h.check(opt)


if __name__ == "__main__":
    try:
        sys.exit(h.run_tests(globals()))
    finally:
        if wheel.cache_info().currsize:
            shutil.rmtree(os.path.dirname(wheel()), ignore_errors=True)

#!/usr/bin/python3
"""pip install . as a user runs it, offline, with Debian's meson-python: into a
staging folder (--target), then the installed package in a fresh interpreter
that sees nothing of the build tree: import, a model optimized and run, the
tileopt command and python -m tileopt."""
import os
import subprocess
import sys
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


def pip_install_should_give_a_working_package_and_cli():
    with h.tempdir() as d:
        target = os.path.join(d, "site")
        # --no-build-isolation: offline, meson-python comes from Debian, not PyPI
        run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
             "--no-index", "--quiet", "--target", target, h.SRCDIR], cwd=d)
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


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

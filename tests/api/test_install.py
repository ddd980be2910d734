#!/usr/bin/python3
"""The installed library as a client sees it: `meson install --destdir` into a
staging folder, then a small C program built with `pkg-config --cflags --libs
tileopt` (the .pc file is relocatable: its folders are relative to itself, so
a staged install under a multiarch libdir works as it is) runs an optimize
through the public API. The shared library must carry the SONAME
libtileopt.so.0."""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

PROGRAM = r"""
#include <stdio.h>
#include <tileopt.h>

int main(int argc, char **argv) {
    tileopt_ctx *ctx = NULL;
    tileopt_model *m = NULL;
    if (argc != 3 || tileopt_ctx_new(&ctx) != TILEOPT_OK) return 2;
    if (tileopt_model_load(ctx, argv[1], &m) != TILEOPT_OK ||
        tileopt_optimize(ctx, m, NULL) != TILEOPT_OK ||
        tileopt_model_save(ctx, m, argv[2]) != TILEOPT_OK) {
        fprintf(stderr, "%s\n", tileopt_ctx_errmsg(ctx));
        return 1;
    }
    printf("tileopt %s\n", tileopt_version());
    tileopt_model_free(m);
    tileopt_ctx_free(ctx);
    return 0;
}
"""


def run(cmd, **kw):
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=240, **kw)
    assert cp.returncode == 0, f"{' '.join(cmd)}: exit {cp.returncode}\n{cp.stdout}\n{cp.stderr}"
    return cp


def installed_library_should_build_a_client_through_pkg_config():
    build = os.environ["BUILDDIR"]
    with h.tempdir() as d:
        stage = os.path.join(d, "stage")
        run(["meson", "install", "-C", build, "--destdir", stage, "--no-rebuild", "--quiet"])
        pcs = glob.glob(os.path.join(stage, "**", "pkgconfig", "tileopt.pc"), recursive=True)
        assert len(pcs) == 1, pcs
        # the man page and the completions go where man, bash-completion and zsh look
        for tail in ("share/man/man1/tileopt.1", "share/bash-completion/completions/tileopt",
                     "share/zsh/site-functions/_tileopt"):
            assert glob.glob(os.path.join(stage, "**", tail), recursive=True), tail
        libdir = os.path.dirname(os.path.dirname(pcs[0]))
        sonames = [os.path.basename(p) for p in glob.glob(os.path.join(libdir, "libtileopt.so*"))]
        assert "libtileopt.so.0" in sonames, sonames
        dyn = run(["readelf", "-d", os.path.join(libdir, "libtileopt.so")]).stdout
        assert "Library soname: [libtileopt.so.0]" in dyn, dyn
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
        flags = run(["pkg-config", "--cflags", "--libs", "tileopt"], env=env).stdout.split()
        assert libdir in [os.path.normpath(f[2:]) for f in flags if f.startswith("-L")], flags
        src, exe = os.path.join(d, "client.c"), os.path.join(d, "client")
        with open(src, "w") as f:
            f.write(PROGRAM)
        # a sanitized library needs its runtime in the program too
        san = os.environ.get("SANITIZE", "none")
        extra = [f"-fsanitize={san}"] if san not in ("", "none") else []
        run(["cc", "-std=c11", "-Wall", "-Werror", *extra, src, "-o", exe, *flags])
        model = os.path.join(os.environ["SRCDIR"], "models", "legacy_tile1.onnx")
        out = os.path.join(d, "out.onnx")
        cp = run([exe, model, out], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        assert cp.stdout.startswith("tileopt "), cp.stdout
        h.check(out)


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))

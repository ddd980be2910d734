#!/usr/bin/python3
"""Record what tileopt writes for a set of models, so that a refactoring can show
it changed nothing: run it before and after, then `diff -r` the two folders.

For every model (the real-model cache, models/, ../shared/models/modern/ and the
files or folders given) it records, each in a file of its own:
  - `optimize` with the default passes, with `--fold-scope all`, with
    `--target-opset 17` and with `--verify`: the exit code, stdout and stderr,
    the sha256 of the output model and the report (times taken out: they are
    the only thing allowed to differ);
  - `inspect` and `inspect --json`.

    /usr/bin/python3 tests/harness/golden.py TILEOPT OUTDIR [MODEL|DIR ...] [-j N]
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

RUNS = {
    "default": [],
    "scope_all": ["--fold-scope", "all"],
    "opset17": ["--target-opset", "17"],
    "verify": ["--verify"],
}


def models(extra):
    found = {}
    cache = os.path.join(REPO, ".cache", "real")
    if os.path.isdir(cache):
        for name in sorted(os.listdir(cache)):
            p = os.path.join(cache, name, "model.onnx")
            if os.path.isfile(p):
                found["real_" + name] = p
    for folder, prefix in ((os.path.join(REPO, "models"), "sample_"),
                           (os.path.join(REPO, "..", "shared", "models", "modern"), "modern_")):
        if os.path.isdir(folder):
            for f in sorted(os.listdir(folder)):
                if f.endswith(".onnx"):
                    found[prefix + f[:-5]] = os.path.join(folder, f)
    for e in extra:
        if os.path.isdir(e):
            for root, _, files in os.walk(e):
                for f in sorted(files):
                    if f.endswith(".onnx"):
                        p = os.path.join(root, f)
                        found["extra_" + os.path.relpath(p, e).replace("/", "_")] = p
        else:
            found["extra_" + os.path.basename(e)] = e
    return found


def strip_times(text):
    return re.sub(r"\d+\.\d+ ms", "T ms", text)


def strip_report(path):
    if not os.path.exists(path):
        return "(no report)\n"
    with open(path) as f:
        r = json.load(f)
    for p in r.get("passes", []):
        p.pop("duration_ms", None)
    for key in ("input", "output"):
        if key in r and "path" in r[key]:
            r[key]["path"] = os.path.basename(r[key]["path"])
    return json.dumps(r, indent=1, sort_keys=True) + "\n"


def record(tileopt, name, path, outdir):
    dest = os.path.join(outdir, name)
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for run, args in RUNS.items():
            out = os.path.join(tmp, run + ".onnx")
            rep = os.path.join(tmp, run + ".json")
            cp = subprocess.run([tileopt, "optimize", path, "-o", out, "--report", rep] + args,
                                capture_output=True, text=True, errors="replace", timeout=1800)
            digest = "(none)"
            if os.path.exists(out):
                with open(out, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            text = "exit %d\nsha256 %s\n--- stdout\n%s--- stderr\n%s" % (
                cp.returncode, digest, strip_times(cp.stdout.replace(tmp, "TMP")),
                cp.stderr.replace(tmp, "TMP"))
            with open(os.path.join(dest, run + ".txt"), "w") as f:
                f.write(text)
            with open(os.path.join(dest, run + ".report.json"), "w") as f:
                f.write(strip_report(rep))
        for run, args in (("inspect", []), ("inspect_json", ["--json"])):
            cp = subprocess.run([tileopt, "inspect", path] + args, capture_output=True,
                                text=True, errors="replace", timeout=600)
            with open(os.path.join(dest, run + ".txt"), "w") as f:
                f.write("exit %d\n%s--- stderr\n%s" % (cp.returncode, cp.stdout, cp.stderr))
    return name


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("tileopt")
    ap.add_argument("outdir")
    ap.add_argument("extra", nargs="*")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    found = models(a.extra)
    os.makedirs(a.outdir, exist_ok=True)
    tileopt = os.path.abspath(a.tileopt)
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        for done in ex.map(lambda kv: record(tileopt, kv[0], kv[1], a.outdir), found.items()):
            print(done, flush=True)
    print("%d models recorded in %s" % (len(found), a.outdir))


if __name__ == "__main__":
    main(sys.argv[1:])

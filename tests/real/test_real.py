#!/usr/bin/python3
"""The real-model suite: tileopt over models that other projects ship or that
PyTorch exports (tests/real/fetch_models.py puts them in .cache/real/).

Every model goes through these stages, each judged on its own:

  load       `tileopt inspect` and `inspect --json` exit 0 (the JSON matches
             tests/inspect.schema.json)
  roundtrip  `optimize --passes none` exits 0 and writes the input's bytes exactly
  optimize   `optimize` with the default passes and `--report` exits 0; the report
             matches tests/report.schema.json
  idempotent `optimize` of the output writes the output's bytes exactly: one run
             reaches the fixed point
  checker    onnx.checker full check of the output (skipped when the original
             model fails it too: onnx 1.12 does not know opset 18, for one)
  ort        ONNX Runtime gives the same outputs for the original and the output
             on the model's seeded inputs (rtol 1e-3, atol 1e-7: the contract's
             tolerance; skipped when the original does not run in ONNX Runtime)
  verify     `optimize --verify` on random inputs and `--verify-inputs` on the
             model's test_data_set_0: no mismatch either way, and a match on its
             own inputs (skipped, with the reason, when they give no verdict)
  torch      PyTorch exports only: ONNX Runtime's outputs of the original and of
             the output both equal PyTorch's own saved outputs, with rtol 1e-3 and
             an atol of 1e-4 times the output's largest magnitude. ORT and PyTorch
             add in different orders, so their float32 results differ by a few
             ulps of the largest terms of each sum, not of the result: after a
             few dozen layers that is up to 3e-5 of the output's scale here, and
             an element that nearly cancels to zero can differ by 50% of itself
  eval       tileopt's evaluator (`tileopt run`) gives ONNX Runtime's outputs of the
             original (the torch stage's tolerance), on the original and, when
             tileopt changed it, on the output; for PyTorch exports both give
             PyTorch's own outputs too
  python     the Python package (tileopt.optimize of onnx.load(model)), in an
             interpreter of its own (tests/real/python_stage.py): the ModelProto
             it returns passes the checker and gives the original's outputs in
             ONNX Runtime (the ort stage's checks), tileopt.optimize of the
             file's bytes returns what the CLI wrote, and tileopt.run gives
             ONNX Runtime's outputs (the eval stage's tolerance); skipped when
             the build has no Python package
  repeats    models whose meta.json gives kv_repeats (grouped-query attention):
             tests/real/gqa_repeats.py finds that many K/V head repeats in the
             original, and no more in the output; how many the output still
             holds is reported (a summary line after the table), not judged
  migrate    IR-3 models only (meta.json's ir_version below 4): `optimize
             --target-opset 13`, which raises the IR past 3, exits 0 with a
             report that matches the schema; the output is at opset 13 and IR 4 or
             more, passes the checker, lists none of its initializers among the
             graph inputs (the report's inputs_removed names them all), and gives
             the original's outputs in ONNX Runtime (the ort stage's tolerance)
             and PyTorch's (the torch stage's). The same again with
             `--keep-initializer-inputs`, whose output still lists the original's
             initializers among the graph inputs and whose report removes none;
             its outputs are compared with the original's with the torch stage's
             tolerance, since ORT runs it with other kernels (listed initializers
             may be overridden, so their weights are not prepacked)

A table (model, source, one column per stage) and a summary line with the count
of models passing each stage are printed. The test fails when a stage fails for a
model, unless tests/real/known_failures.txt lists that model and stage with the
reason; an entry whose stage now passes fails the test too, so the list cannot go
stale.

Environment (set by tests/real/meson.build): TILEOPT, SRCDIR; REAL_SUBSET=sanitize
in a sanitizer build runs only the tileopt stages (load, roundtrip, optimize, and
of migrate the tileopt runs and the checks of their reports and outputs),
which is what the sanitizers judge (about 10 s for every model; the other stages
take a minute and do not depend on the build); TILEOPT_REAL_CACHE overrides the
cache folder; REAL_JOBS the number of models run at once (default: one per core).

    /usr/bin/python3 tests/real/test_real.py [NAME_SUBSTRING...]
"""
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("SRCDIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "harness"))
import harness as h  # noqa: E402
from validate_report import report_errors  # noqa: E402
import gqa_repeats  # noqa: E402

CACHE = os.environ.get("TILEOPT_REAL_CACHE", os.path.join(SRCDIR, ".cache", "real"))
KNOWN = os.path.join(HERE, "known_failures.txt")
STAGES = ["load", "roundtrip", "optimize", "idempotent", "checker", "ort", "torch",
          "eval", "verify", "python", "repeats", "migrate"]
TOOL_STAGES = ["load", "roundtrip", "optimize", "idempotent", "python", "migrate"]
MIGRATE_OPSET = 13
ORT_RTOL, ORT_ATOL = 1e-3, 1e-7
TORCH_RTOL, TORCH_ATOL_SCALE = 1e-3, 1e-4

PASS, FAIL, KNOWN_FAIL, SKIP, NOT_RUN = "ok", "FAIL", "known", "skip", "-"


class StageFailure(Exception):
    pass


def assert_close_at_scale(got, want):
    """got against want output by output with the torch stage's tolerance: rtol
    1e-3 and an atol of 1e-4 times each output's largest magnitude (runtimes
    that add in different orders); AssertionError naming the output."""
    for i, (g, w) in enumerate(zip(got, want)):
        scale = float(np.abs(w).max()) if w.dtype.kind == "f" and w.size else 0.0
        h.assert_close(g, w, TORCH_RTOL, TORCH_ATOL_SCALE * scale, f"output {i}")
    if len(got) != len(want):
        raise AssertionError(f"{len(got)} outputs, expected {len(want)}")


def one_line(s, limit=600):
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[:limit] + "..."


def describe_exit(cp):
    """'exit N' or 'signal SIGSEGV' and the end of stderr: what a C engineer needs."""
    rc = cp.returncode
    if rc < 0:
        try:
            what = f"signal {signal.Signals(-rc).name}"
        except ValueError:
            what = f"signal {-rc}"
    else:
        what = f"exit {rc}"
    err = cp.stderr.strip().splitlines()
    return f"{what}: {' | '.join(err[-3:]) if err else '(no stderr)'}"


def run_tool(*args):
    cmd = "tileopt " + " ".join(os.path.basename(str(a)) for a in args)
    try:
        cp = h.tileopt(*args)
    except subprocess.TimeoutExpired:
        raise StageFailure(f"`{cmd}`: timed out")
    except AssertionError as e:  # a sanitizer report
        raise StageFailure(f"`{cmd}`: {one_line(e, 1500)}")
    if cp.returncode != 0:
        raise StageFailure(f"`{cmd}`: {describe_exit(cp)}")
    return cp


def read_known():
    """{(model, stage): reason} from known_failures.txt ('MODEL STAGE REASON...')."""
    known = {}
    if not os.path.isfile(KNOWN):
        return known
    with open(KNOWN) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[1] not in STAGES + ["fetch"]:
                raise SystemExit(f"{KNOWN}:{n}: expected 'MODEL STAGE REASON' with STAGE "
                                 f"one of {STAGES + ['fetch']}: {line!r}")
            known[(parts[0], parts[1])] = parts[2]
    return known


def load_tensors(folder, prefix):
    files = sorted((f for f in os.listdir(folder)
                    if f.startswith(prefix + "_") and f.endswith(".pb")),
                   key=lambda f: int(f[len(prefix) + 1:-3]))
    out = []
    for f in files:
        t = onnx.load_tensor(os.path.join(folder, f))
        out.append((t.name, numpy_helper.to_array(t)))
    return out


class ModelRun:
    """The stages of one model; results[stage] = (status, message)."""

    def __init__(self, name, meta, subset):
        self.name, self.meta, self.subset = name, meta, subset
        self.folder = os.path.join(CACHE, name)
        self.model = os.path.join(self.folder, "model.onnx")
        self.results = {}
        self.seconds = 0.0
        # (in the original, in the output, kept for long queries) when counted
        self.kv_repeats = None

    def stage(self, name, fn):
        try:
            r = fn()
            self.results[name] = (SKIP, r) if isinstance(r, str) else (PASS, "")
        except StageFailure as e:
            self.results[name] = (FAIL, str(e))
        except Exception as e:  # any other error is this stage's failure, not a crash
            self.results[name] = (FAIL, f"{type(e).__name__}: {one_line(e)}")
        return self.results[name][0] == PASS

    def run(self, tmp):
        t0 = time.time()
        opt = os.path.join(tmp, "opt.onnx")
        self.stage("load", self.load)
        self.stage("roundtrip", lambda: self.roundtrip(tmp))
        optimized = self.stage("optimize", lambda: self.optimize(opt))
        if optimized:
            self.stage("idempotent", lambda: self.idempotent(opt, tmp))
        if optimized:
            self.stage("python", lambda: self.python(opt, tmp))
        if self.subset != "sanitize":
            if optimized:
                self.stage("checker", lambda: self.checker(opt))
                self.stage("ort", lambda: self.ort(opt))
            self.stage("eval", lambda: self.evaluate(opt if optimized else None))
            if optimized:
                self.stage("verify", lambda: self.verify(tmp))
            if optimized and "kv_repeats" in self.meta:
                self.stage("repeats", lambda: self.repeats(opt))
            if self.meta.get("expected_outputs"):
                if optimized:
                    self.stage("torch", self.torch)
                else:
                    # The original's agreement with PyTorch still says whether the
                    # export itself is sound.
                    self.stage("torch", lambda: self.torch(only_original=True))
        if self.migrates():
            self.stage("migrate", lambda: self.migrate(tmp))
        self.seconds = time.time() - t0
        return self

    def load(self):
        run_tool("inspect", self.model)
        cp = run_tool("inspect", self.model, "--json")
        try:
            doc = json.loads(cp.stdout)
        except ValueError as e:
            raise StageFailure(f"`tileopt inspect --json`: not JSON: {e}")
        import jsonschema
        with open(os.path.join(SRCDIR, "tests", "inspect.schema.json")) as f:
            schema = json.load(f)
        errs = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
        if errs:
            raise StageFailure(f"`tileopt inspect --json`: schema: {'; '.join(errs[:3])}")

    def roundtrip(self, tmp):
        out = os.path.join(tmp, "roundtrip.onnx")
        run_tool("optimize", self.model, "-o", out, "--passes", "none", "--quiet")
        with open(self.model, "rb") as a, open(out, "rb") as b:
            x, y = a.read(), b.read()
        if x != y:
            first = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q),
                         min(len(x), len(y)))
            raise StageFailure(f"`optimize --passes none`: output differs from the input "
                               f"({len(y)} bytes vs {len(x)}, first difference at byte "
                               f"{first})")

    def optimize(self, opt):
        rep = opt + ".report.json"
        run_tool("optimize", self.model, "-o", opt, "--report", rep, "--quiet")
        with open(rep) as f:
            report = json.load(f)
        errs = report_errors(report)
        if errs:
            raise StageFailure(f"report does not match the schema: {'; '.join(errs[:3])}")
        self.report = report

    def idempotent(self, opt, tmp):
        again = os.path.join(tmp, "again.onnx")
        rep = again + ".report.json"
        run_tool("optimize", opt, "-o", again, "--report", rep, "--quiet")
        with open(opt, "rb") as a, open(again, "rb") as b:
            if a.read() != b.read():
                with open(rep) as f:
                    report = json.load(f)
                did = [f"{p['name']}: {a['action']} {a['node']}" for p in report["passes"]
                       for a in p["actions"] if a["action"] != "skipped"]
                changes = [f"{p['name']}: {p['changes']}" for p in report["passes"]
                           if p.get("changes")]
                raise StageFailure("a second optimize changes the output: "
                                   f"{'; '.join((did + changes)[:4]) or 'bytes differ'}")

    def original_fails_checker(self):
        """Why the original fails the checker (once per model), or None."""
        if not hasattr(self, "_checker"):
            try:
                h.check(self.model)
                self._checker = None
            except AssertionError as e:
                self._checker = f"the original fails the checker too: {one_line(e, 200)}"
        return self._checker

    def checker(self, opt):
        if self.original_fails_checker():
            return self.original_fails_checker()
        try:
            h.check(opt)
        except AssertionError as e:
            raise StageFailure(one_line(e))

    def feeds(self):
        return {n: a for n, a in load_tensors(os.path.join(self.folder, "test_data_set_0"),
                                              "input")}

    def ort_outputs(self, path):
        if not hasattr(self, "_ort"):
            self._ort = {}
        if path not in self._ort:
            try:
                self._ort[path] = (h.run_ort(path, self.feeds()), None)
            except h.OrtError as e:
                self._ort[path] = (None, one_line(e))
        return self._ort[path]

    def ort(self, opt, what="the output"):
        want, err = self.ort_outputs(self.model)
        if err:
            return f"the original does not run in ONNX Runtime: {err}"
        got, err = self.ort_outputs(opt)
        if err:
            raise StageFailure(f"{what} does not run in ONNX Runtime: {err}")
        try:
            h.assert_close(got, want, ORT_RTOL, ORT_ATOL)
        except AssertionError as e:
            raise StageFailure(f"{what} vs original in ONNX Runtime: {one_line(e)}")

    @staticmethod
    def match_evaluator(got, want, what):
        """The evaluator's outputs against ONNX Runtime's, with the torch stage's
        tolerance: the two add in different orders."""
        try:
            assert_close_at_scale(got, want)
        except AssertionError as err:
            raise StageFailure(f"{what} vs ONNX Runtime: {one_line(err)}")

    def evaluate(self, opt):
        """tileopt's evaluator on the original, and on the output opt when given
        and not the original's bytes, gives ONNX Runtime's outputs of the
        original, and PyTorch's saved outputs when there are some (the torch
        stage's tolerance: they add in different orders)."""
        want, err = self.ort_outputs(self.model)
        if err:
            return f"the original does not run in ONNX Runtime: {err}"
        runs = [("evaluator", "`tileopt run`", self.model)]
        if opt is not None:
            with open(self.model, "rb") as a, open(opt, "rb") as b:
                if a.read() != b.read():
                    runs.append(("evaluator on the output", "`tileopt run` of the output",
                                 opt))
        expected = self.expected_outputs() if self.meta.get("expected_outputs") else None
        for what, cmd, path in runs:
            try:
                got = h.run_tileopt(path, self.feeds())
            except AssertionError as e:
                if "not supported by the evaluator" in str(e):
                    return (f"the evaluator lacks an op: "
                            f"{one_line(str(e).split('error: ')[-1], 200)}")
                raise StageFailure(f"{cmd}: {one_line(e, 300)}")
            self.match_evaluator(got, want, what)
            if expected is not None:
                try:
                    assert_close_at_scale(got, expected)
                except AssertionError as err:
                    raise StageFailure(f"{what} vs PyTorch: {one_line(err)}")

    def repeats(self, opt):
        """gqa_repeats.py's count of K/V head repeats: in the original as many as
        meta.json says (else the counter or the export is wrong), in the output
        no more. How many the output still holds is reported, not judged."""
        feeds = self.feeds()
        before = gqa_repeats.find_repeats(self.model, feeds)
        after = gqa_repeats.find_repeats(opt, feeds)
        self.kv_repeats = (len(before), len(after), gqa_repeats.kept_for_long_queries(opt))
        bad = gqa_repeats.judge(self.name, self.meta["kv_repeats"], before, after)
        if bad:
            raise StageFailure("; ".join(bad))

    def verify(self, tmp):
        """`optimize --verify` on random inputs and on the model's own
        (`--verify-inputs` test_data_set_0): a mismatch either way fails; the
        stage is skipped, with why, when its own inputs give no verdict (random
        ones may not suit a model: Silero's sample rate must be 8000 or 16000)."""
        out = os.path.join(tmp, "verified.onnx")
        rep = out + ".report.json"
        data = os.path.join(os.path.dirname(self.model), "test_data_set_0")
        skipped = None
        for how, flags in (("random inputs", ["--verify"]), ("its inputs", ["--verify-inputs", data])):
            run_tool("optimize", self.model, "-o", out, *flags, "--report", rep, "--quiet")
            with open(rep) as f:
                v = json.load(f).get("verify", {})
            if v.get("verdict") == "skipped":
                skipped = f"{how}: {v.get('reason') or ', '.join(v.get('ops', []))}"
            elif v.get("verdict") != "match":
                raise StageFailure(f"verify on {how}: {v.get('verdict')}: "
                                   f"{one_line(json.dumps(v), 300)}")
            elif how == "its inputs":
                skipped = None
        return skipped

    def python(self, opt, tmp):
        """The Python package on this model; under the sanitizers its own checks
        only (optimize through the package gives the CLI's output)."""
        if not os.environ.get("TILEOPT_PYTHONPATH"):
            return "the build has no Python package (Python.h missing)"
        env = dict(os.environ, PYTHONPATH=os.environ["TILEOPT_PYTHONPATH"])
        if os.environ.get("TILEOPT_PYTHON_PRELOAD"):
            env.update(LD_PRELOAD=os.environ["TILEOPT_PYTHON_PRELOAD"],
                       ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
        data_set = os.path.join(self.folder, "test_data_set_0")
        run = self.subset != "sanitize"
        cmd = [sys.executable, os.path.join(HERE, "python_stage.py"), self.model, opt, tmp]
        cp = subprocess.run(cmd + ([data_set] if run else []), capture_output=True,
                            text=True, env=env, timeout=1200)
        if h.SANITIZER_REPORT.search(cp.stderr) or cp.returncode not in (0, 2):
            raise StageFailure(f"python_stage.py: {describe_exit(cp)}")
        if not run:
            return
        py_model = os.path.join(tmp, "py.onnx")
        if not self.original_fails_checker():
            try:
                h.check(py_model)
            except AssertionError as e:
                raise StageFailure(f"the package's ModelProto: {one_line(e)}")
        skipped = self.ort(py_model, "the package's ModelProto")
        if skipped:
            return skipped
        if cp.returncode == 2:
            return f"tileopt.run: {one_line(cp.stderr, 200)}"
        with np.load(os.path.join(tmp, "run.npz"), allow_pickle=True) as z:
            ran = [z[f"arr_{i}"] for i in range(len(z.files))]
        self.match_evaluator(ran, self.ort_outputs(self.model)[0], "tileopt.run")

    def torch(self, only_original=False):
        paths = [("original", self.model)]
        if not only_original:
            paths.append(("output", os.path.join(self.tmp, "opt.onnx")))
        for what, p in paths:
            self.match_torch(what, p)
        if only_original:
            raise StageFailure("the output was not made (optimize failed)")

    def expected_outputs(self):
        return [a for _n, a in load_tensors(os.path.join(self.folder, "test_data_set_0"),
                                            "output")]

    def match_torch(self, what, path):
        """ONNX Runtime's outputs of path equal PyTorch's saved outputs."""
        expected = self.expected_outputs()
        got, err = self.ort_outputs(path)
        if err:
            raise StageFailure(f"{what} does not run in ONNX Runtime: {err}")
        try:
            assert_close_at_scale(got, expected)
        except AssertionError as err:
            raise StageFailure(f"{what} in ONNX Runtime vs PyTorch: {one_line(err)}")

    def migrates(self):
        return self.meta.get("ir_version", 4) < 4

    def migrate(self, tmp):
        orig = onnx.load(self.model, load_external_data=False)
        inits = [t.name for t in orig.graph.initializer]
        for keep in (False, True):
            flag = ["--keep-initializer-inputs"] if keep else []
            what = "`" + " ".join(["optimize --target-opset", str(MIGRATE_OPSET)] +
                                  flag) + "`"
            out = os.path.join(tmp, f"migrated{'_keep' if keep else ''}.onnx")
            rep = out + ".report.json"
            run_tool("optimize", self.model, "-o", out, "--target-opset", MIGRATE_OPSET,
                     "--report", rep, "--quiet", *flag)
            with open(rep) as f:
                report = json.load(f)
            errs = report_errors(report)
            if errs:
                raise StageFailure(f"{what}: report does not match the schema: "
                                   f"{'; '.join(errs[:3])}")
            m = onnx.load(out, load_external_data=False)
            opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
            if opset != [MIGRATE_OPSET] or m.ir_version < 4:
                raise StageFailure(f"{what}: output at opset {opset}, IR {m.ir_version}")
            out_inits = {t.name for t in m.graph.initializer}
            listed = sorted(out_inits & {v.name for v in m.graph.input})
            removed = [n for p in report["passes"]
                       for n in p.get("changes", {}).get("inputs_removed", [])]
            if keep:
                # The original's initializers stay listed; those the upgrade adds
                # (Clip-11's min and max, say) need not be.
                kept = [n for n in inits if n in out_inits]
                unlisted = [n for n in kept if n not in set(listed)]
                if unlisted or removed:
                    raise StageFailure(f"{what}: {len(unlisted)} of the original's "
                                       f"{len(kept)} initializers left the graph "
                                       f"inputs ({unlisted[:3]}), {len(removed)} "
                                       f"reported removed")
            else:
                if listed:
                    raise StageFailure(f"{what}: initializers still among the graph "
                                       f"inputs: {listed[:5]}")
                if sorted(removed) != sorted(inits):
                    raise StageFailure(f"{what}: the report removes {len(removed)} "
                                       f"inputs, the model listed {len(inits)} "
                                       f"initializers")
            if self.subset == "sanitize":
                continue
            try:
                h.check(out)
            except AssertionError as e:
                raise StageFailure(f"{what}: {one_line(e)}")
            want, err = self.ort_outputs(self.model)
            if err:
                raise StageFailure(f"the original does not run in ONNX Runtime: {err}")
            got, err = self.ort_outputs(out)
            if err:
                raise StageFailure(f"{what}: the output does not run in ONNX Runtime: "
                                   f"{err}")
            try:
                if keep:
                    # Initializers that are graph inputs may be overridden, so ORT
                    # runs this output with other kernels than the original (no
                    # prepacked weights, no NCHWc layout): its results differ by
                    # rounding, as ORT's and PyTorch's do, hence the torch stage's
                    # tolerance.
                    assert_close_at_scale(got, want)
                else:
                    h.assert_close(got, want, ORT_RTOL, ORT_ATOL)
            except AssertionError as e:
                raise StageFailure(f"{what}: output vs original in ONNX Runtime: "
                                   f"{one_line(e)}")
            if self.meta.get("expected_outputs"):
                self.match_torch(f"{what}'s output", out)


def run_model(name, meta, subset):
    m = ModelRun(name, meta, subset)
    tmp = tempfile.mkdtemp(prefix=f"real_{name}_")
    m.tmp = tmp
    try:
        return m.run(tmp)
    finally:
        if os.environ.get("KEEP_TMP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)


def fetch(names_wanted):
    """Run fetch_models.py (fast when the cache is complete); the expected names."""
    script = os.path.join(HERE, "fetch_models.py")
    t0 = time.time()
    cp = subprocess.run([sys.executable, script], capture_output=True, text=True)
    made = [ln for ln in cp.stdout.splitlines() if not ln.rstrip().endswith(" cached")]
    if made:
        print("\n".join(made), flush=True)
    if cp.returncode != 0 and cp.stderr.strip():
        print(cp.stderr.strip()[-3000:], flush=True)
    print(f"(fetch_models.py: {time.time() - t0:.0f}s)", flush=True)
    listed = subprocess.run([sys.executable, script, "--list"], capture_output=True,
                            text=True, check=True).stdout.split()
    return [n for n in listed if not names_wanted or any(w in n for w in names_wanted)]


def main(argv):
    ok, why = h.ort_available()
    subset = os.environ.get("REAL_SUBSET", "")
    if not ok and subset != "sanitize":
        print(f"test_real: ONNX Runtime is needed: {why}")
        return 1
    known = read_known()
    names = fetch(argv[1:])
    runs, missing = [], []
    for n in names:
        try:
            with open(os.path.join(CACHE, n, "meta.json")) as f:
                meta = json.load(f)
        except (OSError, ValueError):
            missing.append(n)
            continue
        runs.append((n, meta))
    jobs = int(os.environ.get("REAL_JOBS", os.cpu_count() or 1))
    t0 = time.time()
    done = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(run_model, n, meta, subset): n for n, meta in runs}
        for fut in concurrent.futures.as_completed(futs):
            m = fut.result()
            done[m.name] = m
            bad = [s for s in STAGES if m.results.get(s, (PASS,))[0] == FAIL]
            print(f"  {m.name}: {'FAIL ' + ','.join(bad) if bad else 'ok'} "
                  f"({m.seconds:.1f}s)", flush=True)
    models = [done[n] for n, _meta in runs]

    # Judge every stage against known_failures.txt.
    unexpected, stale, details = [], [], []
    shown_stages = TOOL_STAGES if subset == "sanitize" else STAGES
    for m in models:
        for s in shown_stages:
            status, msg = m.results.get(s, (NOT_RUN, ""))
            key = (m.name, s)
            if status == FAIL:
                if key in known:
                    m.results[s] = (KNOWN_FAIL, msg)
                else:
                    unexpected.append(key)
                details.append(f"{m.name} [{s}]{' (known)' if key in known else ''}: "
                               f"{msg}")
            elif status == PASS and key in known and subset != "sanitize":
                # the sanitize subset runs a stage's tileopt part alone, not the
                # comparisons a known failure is about
                stale.append(key)
            elif status == SKIP:
                details.append(f"{m.name} [{s}] skipped: {msg}")
    for n in missing:
        if (n, "fetch") not in known:
            unexpected.append((n, "fetch"))
        details.append(f"{n} [fetch]: not in {CACHE} (fetch_models.py failed for it)")

    w = max([len(m.name) for m in models] + [5])
    ws = max([len(m.meta["source"]) for m in models] + [6])
    print()
    print(f"{'model':{w}}  {'source':{ws}}  " + "  ".join(f"{s:9}" for s in shown_stages))
    for m in models:
        print(f"{m.name:{w}}  {m.meta['source']:{ws}}  " +
              "  ".join(f"{m.results.get(s, (NOT_RUN,))[0]:9}" for s in shown_stages))
    if details:
        print("\nfailures and skips:")
        for d in details:
            print(f"  {d}")
    sources = sorted({m.meta["source"] for m in models})
    counts = {s: sum(m.results.get(s, (NOT_RUN,))[0] == PASS for m in models)
              for s in STAGES}
    of = {s: len(models) for s in STAGES}
    of["torch"] = sum(bool(m.meta.get("expected_outputs")) for m in models)
    of["repeats"] = sum("kv_repeats" in m.meta for m in models)
    of["migrate"] = sum(m.migrates() for m in models)
    label = {"load": "load", "roundtrip": "round trip", "optimize": "optimize",
             "idempotent": "idempotent",
             "checker": "checker", "ort": "ORT match", "torch": "PyTorch match",
             "eval": "evaluator = ORT", "verify": "verify match",
             "python": "Python package", "repeats": "K/V repeats counted",
             "migrate": f"IR-3 migration to {MIGRATE_OPSET}"}
    parts = [f"{label[s]} {counts[s]}/{of[s]}" for s in shown_stages]
    skips = {s: sum(m.results.get(s, (NOT_RUN,))[0] == SKIP for m in models)
             for s in shown_stages}
    skip_txt = ", ".join(f"{label[s]} {k}" for s, k in skips.items() if k)
    print(f"\nreal models{' (sanitize subset)' if subset == 'sanitize' else ''}: "
          f"{len(models)} models from {len(sources)} sources ({', '.join(sources)}), "
          f"{len(missing)} missing; passed: {', '.join(parts)}"
          f"{'; skipped: ' + skip_txt if skip_txt else ''}; {time.time() - t0:.0f}s")
    counted = [(m.name, *m.kv_repeats) for m in models if m.kv_repeats]
    if counted:
        print(gqa_repeats.summary(counted) + " (tests/real/gqa_repeats.py lists them)")
    for n, s in unexpected:
        print(f"UNEXPECTED FAILURE: {n} {s}")
    for n, s in stale:
        print(f"PASSES NOW, remove from known_failures.txt: {n} {s}")
    n_bad = len(unexpected) + len(stale)
    print(f"{len(models) + len(missing) - len({n for n, _ in unexpected + stale})} passed, "
          f"{len({n for n, _ in unexpected + stale})} failed")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

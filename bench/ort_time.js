#!/usr/bin/env node
/*
 * Time ONNX Runtime (onnxruntime-node) sessions of several models on the same
 * random float32 inputs, interleaved round by round so that drift in the machine
 * (frequency, other load) hits every model alike.
 *
 *   node ort_time.js SPEC.json
 *
 * SPEC: {"models": [{"label", "path"}...], "inputs": {"name": [dims]...},
 *        "threads": N (0 = ORT default), "warmup": K, "rounds": R,
 *        "prealloc": true|false, "profile_dir": DIR (optional)}
 * prealloc: outputs go into tensors allocated once (ORT's pre-allocated fetches)
 * instead of fresh JS tensors on every run.
 * Every model must take the same inputs (by name). stdout: one JSON object
 * {"label": {"median_ms", "min_ms", "cpu_median_ms"[, "ort_median_ms",
 * "ort_min_ms"]}...}. cpu_* is the process's user+system CPU time per run: on a
 * loaded machine it stays close to the work done while wall time absorbs the
 * waits for a core (with ORT's own thread pool it also counts spinning threads,
 * so it means most with 1 intra-op thread).
 *
 * Wall time includes the node binding's work around the session: it copies every
 * output into a JS buffer, prealloc or not (about 2 ms for 16 MB here), a cost
 * equal for two models with the same outputs that hides the difference between
 * their graphs. With profile_dir, ORT's own profiler also runs, and ort_* is the
 * duration of its "model_run" event: the time spent inside ONNX Runtime.
 */
'use strict';

const fs = require('fs');
const path = require('path');

const { loadOrt, median, profiledRuns } = require('./ort_common.js');

async function main() {
    if (process.argv.length !== 3) {
        process.stderr.write('usage: node ort_time.js SPEC.json\n');
        process.exit(2);
    }
    const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
    const ort = loadOrt();
    const opts = { logSeverityLevel: 3 };
    if (spec.threads > 0) {
        opts.intraOpNumThreads = spec.threads;
        opts.interOpNumThreads = 1;
    }
    // A fixed linear congruential sequence: same inputs on every run.
    let seed = 12345;
    const rnd = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648 - 0.5;
    };
    const feeds = {};
    for (const [name, dims] of Object.entries(spec.inputs)) {
        const n = dims.reduce((a, b) => a * b, 1);
        const data = new Float32Array(n);
        for (let i = 0; i < n; i++) data[i] = rnd();
        feeds[name] = new ort.Tensor('float32', data, dims);
    }
    const sessions = [];
    for (const m of spec.models) {
        const o = Object.assign({}, opts);
        if (spec.profile_dir) {
            o.enableProfiling = true;
            o.profileFilePrefix = path.join(spec.profile_dir, `ort_time_${sessions.length}`);
        }
        const s = await ort.InferenceSession.create(m.path, o);
        const f = {};
        for (const n of s.inputNames) f[n] = feeds[n];
        sessions.push({ label: m.label, s, f, times: [], cpu: [], fetches: undefined });
    }
    if (spec.prealloc) {
        for (const x of sessions) {
            const r = await x.s.run(x.f);
            x.fetches = {};
            for (const n of x.s.outputNames) {
                const t = r[n];
                x.fetches[n] = new ort.Tensor(t.type, new t.data.constructor(t.data.length),
                                              t.dims);
            }
        }
    }
    const run = (x) => (x.fetches ? x.s.run(x.f, x.fetches) : x.s.run(x.f));
    for (let k = 0; k < (spec.warmup || 3); k++) {
        for (const x of sessions) await run(x);
    }
    for (let k = 0; k < (spec.rounds || 20); k++) {
        for (const x of sessions) {
            const c0 = process.cpuUsage();
            const t0 = process.hrtime.bigint();
            await run(x);
            x.times.push(Number(process.hrtime.bigint() - t0) / 1e6);
            const c = process.cpuUsage(c0);
            x.cpu.push((c.user + c.system) / 1e3);
        }
    }
    const out = {};
    for (const [i, x] of sessions.entries()) {
        out[x.label] = { median_ms: median(x.times), min_ms: Math.min(...x.times),
                         cpu_median_ms: median(x.cpu) };
        if (spec.profile_dir) {
            const runs = profiledRuns(x.s, spec.profile_dir, `ort_time_${i}`)
                .slice(-x.times.length);
            out[x.label].ort_median_ms = median(runs);
            out[x.label].ort_min_ms = Math.min(...runs);
        }
    }
    process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
    process.stderr.write(`ort_time: ${e.message}\n`);
    process.exit(1);
});

#!/usr/bin/env node
/*
 * ort_time.js's timing, with inputs read from files: the real-model benchmark's
 * models take int64, float16 or bool inputs whose values matter (a sample rate
 * that selects a branch, a zero recurrent state), which ort_time.js's random
 * float32 inputs cannot give. Sessions of several models run interleaved round by
 * round, with ORT's profiler on; the figure is the median duration of its
 * "model_run" event, the time spent inside ONNX Runtime.
 *
 *   node ort_time_real.js SPEC.json
 *
 * SPEC: {"models": [{"label", "path"}...],
 *        "feeds": [{"name", "type" (ORT type name), "dims", "file" (raw
 *                   little-endian data)}...],
 *        "threads": N (0 = ORT default), "warmup": K,
 *        "min_rounds": R0, "max_rounds": R1, "budget_ms": B,
 *        "profile_dir": DIR}
 * Rounds: as many as fit in B ms at the slowest model's last warm-up time, between R0
 * and R1, so that sub-millisecond models get enough samples to give a stable
 * median. Each session is fed the feeds whose names it takes.
 * stdout: {"label": {"ort_median_ms", "ort_min_ms", "median_ms", "cpu_median_ms",
 * "rounds"}...}. cpu_median_ms is the process's user+system CPU time per run:
 * with 1 intra-op thread it stays close to the work done when other load on the
 * machine makes the run wait for a core (the wall time and ORT's own time then
 * count the waits).
 */
'use strict';

const fs = require('fs');
const path = require('path');

const { loadOrt, median, profiledRuns } = require('./ort_common.js');

const ARRAYS = {
    float32: Float32Array, float64: Float64Array, float16: Uint16Array,
    int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array,
    int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array,
    uint64: BigUint64Array, bool: Uint8Array,
};

async function main() {
    if (process.argv.length !== 3) {
        process.stderr.write('usage: node ort_time_real.js SPEC.json\n');
        process.exit(2);
    }
    const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
    const ort = loadOrt();
    const feeds = {};
    for (const f of spec.feeds) {
        const Arr = ARRAYS[f.type];
        if (!Arr) throw new Error(`input ${f.name}: type ${f.type} not supported`);
        const raw = fs.readFileSync(f.file);
        const copy = new Uint8Array(raw); /* aligned */
        feeds[f.name] = new ort.Tensor(f.type, new Arr(copy.buffer, 0,
                                                       copy.byteLength / Arr.BYTES_PER_ELEMENT),
                                       f.dims);
    }
    const sessions = [];
    for (const m of spec.models) {
        const o = { logSeverityLevel: 3, enableProfiling: true,
                    profileFilePrefix: path.join(spec.profile_dir, `real_${sessions.length}`) };
        if (spec.threads > 0) {
            o.intraOpNumThreads = spec.threads;
            o.interOpNumThreads = 1;
        }
        const s = await ort.InferenceSession.create(m.path, o);
        const f = {};
        for (const n of s.inputNames) {
            if (!feeds[n]) throw new Error(`${m.label}: no feed for input ${n}`);
            f[n] = feeds[n];
        }
        sessions.push({ label: m.label, s, f, times: [], cpu: [] });
    }
    // The slowest model's time in the last warm-up round (the first rounds pay
    // for allocations) sets the number of rounds.
    let slowest = 0;
    for (let k = 0; k < (spec.warmup || 3); k++) {
        slowest = 0;
        for (const x of sessions) {
            const t0 = process.hrtime.bigint();
            await x.s.run(x.f);
            slowest = Math.max(slowest, Number(process.hrtime.bigint() - t0) / 1e6);
        }
    }
    const rounds = Math.max(spec.min_rounds || 20,
                            Math.min(spec.max_rounds || 200,
                                     Math.ceil((spec.budget_ms || 2000) / Math.max(slowest, 1e-3))));
    for (let k = 0; k < rounds; k++) {
        for (const x of sessions) {
            const c0 = process.cpuUsage();
            const t0 = process.hrtime.bigint();
            await x.s.run(x.f);
            x.times.push(Number(process.hrtime.bigint() - t0) / 1e6);
            const c = process.cpuUsage(c0);
            x.cpu.push((c.user + c.system) / 1e3);
        }
    }
    const out = {};
    for (const [i, x] of sessions.entries()) {
        const runs = profiledRuns(x.s, spec.profile_dir, `real_${i}`).slice(-rounds);
        out[x.label] = { ort_median_ms: median(runs), ort_min_ms: Math.min(...runs),
                         median_ms: median(x.times), cpu_median_ms: median(x.cpu), rounds };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
    process.stderr.write(`ort_time_real: ${e.message}\n`);
    process.exit(1);
});

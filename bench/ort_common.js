/*
 * What the ORT timing scripts (ort_time.js, ort_time_real.js) share: loading
 * onnxruntime-node from the project's cache, a median, and reading the durations
 * of the "model_run" events out of ORT's profile of a session.
 */
'use strict';

const fs = require('fs');
const path = require('path');

function loadOrt() {
    const tries = [];
    if (process.env.ORT_NODE_PATH) {
        tries.push(process.env.ORT_NODE_PATH,
                   path.join(process.env.ORT_NODE_PATH, 'onnxruntime-node'));
    }
    tries.push(path.join(__dirname, '..', '.cache', 'node_modules', 'onnxruntime-node'));
    tries.push('onnxruntime-node');
    for (const t of tries) {
        try {
            return require(t);
        } catch (e) { /* next */ }
    }
    process.stderr.write(`${path.basename(process.argv[1])}: cannot load onnxruntime-node\n`);
    process.exit(1);
    return null;
}

function median(a) {
    const s = a.slice().sort((x, y) => x - y);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/* The durations (ms) of the session's runs, in order, from the trace ORT's
 * profiler writes when profiling ends (PREFIX_<date>.json in DIR). */
function profiledRuns(session, dir, prefix) {
    session.endProfiling();
    const file = fs.readdirSync(dir).find((f) => f.startsWith(prefix + '_') && f.endsWith('.json'));
    if (!file) throw new Error(`no ORT profile ${prefix}_*.json in ${dir}`);
    const events = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    return events.filter((e) => e.cat === 'Session' && e.name === 'model_run')
        .map((e) => e.dur / 1e3);
}

module.exports = { loadOrt, median, profiledRuns };

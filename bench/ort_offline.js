/*
 * node bench/ort_offline.js IN.onnx OUT.onnx LEVEL: let ONNX Runtime optimize IN
 * offline at LEVEL (basic, extended or all) and save what it made to OUT
 * (optimizedModelFilePath), for comparing its graph rewrites with tileopt's.
 */
'use strict';

const { loadOrt } = require('./ort_common.js');

async function main() {
    const [input, output, level] = process.argv.slice(2);
    if (!input || !output || !['basic', 'extended', 'all'].includes(level)) {
        process.stderr.write('usage: node ort_offline.js IN.onnx OUT.onnx basic|extended|all\n');
        process.exit(2);
    }
    const ort = loadOrt();
    await ort.InferenceSession.create(input, {
        graphOptimizationLevel: level,
        optimizedModelFilePath: output,
        executionProviders: ['cpu'],
        intraOpNumThreads: 1,
    });
}

main().catch((e) => {
    process.stderr.write(`ort_offline.js: ${e.message}\n`);
    process.exit(1);
});

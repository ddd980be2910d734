#!/usr/bin/env node
/*
 * Run an ONNX model in ONNX Runtime (onnxruntime-node) on serialized TensorProto
 * inputs, the independent executor of tileopt's differential tests.
 *
 *   node ort_run.js MODEL.onnx [INPUT.pb ...] [--test-dir DIR] [-o OUTDIR]
 *                   [--rtol R] [--atol A] [--graph-opt LEVEL] [--disable-optimizers LIST]
 *
 * Inputs bind by the TensorProto's name when every input file names a model input,
 * otherwise by position to session.inputNames (graph inputs that are not
 * initializers). --test-dir DIR reads DIR/input_*.pb and compares the outputs with
 * DIR/output_*.pb (floats: |a-b| <= atol + rtol*|b|, default rtol 1e-3, atol 1e-7;
 * NaN equals NaN; other types exactly). -o OUTDIR writes output_N.pb.
 * --graph-opt disabled|basic|extended|all sets the session's graph optimization
 * level (default all, ORT's own default); --disable-optimizers LIST turns off the
 * named transformers (comma-separated, e.g. NchwcTransformer), so a difference that
 * comes from one of ONNX Runtime's rewrites can be told from one in its kernels.
 * stdout: one JSON line {"outputs":[{"name","dtype","dims"}...]}.
 * Exit: 0 ok, 1 model/run failure or mismatch (message on stderr), 2 usage.
 *
 * onnxruntime-node is found through $ORT_NODE_PATH (the package folder or a
 * node_modules folder holding it), else <repo>/.cache/node_modules, else the normal
 * require() search.
 *
 * TensorProto is decoded and encoded here (a small protobuf wire-format reader), so
 * no protobuf package is needed in node.
 */
'use strict';

const fs = require('fs');
const path = require('path');

function die(code, msg) {
    process.stderr.write(`ort_run: ${msg}\n`);
    process.exit(code);
}

function loadOrt() {
    const tries = [];
    const env = process.env.ORT_NODE_PATH;
    if (env) {
        tries.push(env, path.join(env, 'onnxruntime-node'));
    }
    tries.push(path.join(__dirname, '..', '..', '.cache', 'node_modules', 'onnxruntime-node'));
    tries.push('onnxruntime-node');
    const errors = [];
    for (const t of tries) {
        try {
            return require(t);
        } catch (e) {
            errors.push(`${t}: ${e.code || e.message}`);
        }
    }
    die(1, `cannot load onnxruntime-node (${errors.join('; ')}); ` +
        'install with: npm install --prefix .cache --ignore-scripts onnxruntime-node');
    return null;
}

/* ------------------------------------------------------------ wire format */

class Reader {
    constructor(buf) { this.buf = buf; this.pos = 0; }
    eof() { return this.pos >= this.buf.length; }
    varint() {
        let result = 0n;
        let shift = 0n;
        for (;;) {
            if (this.pos >= this.buf.length) throw new Error('truncated varint');
            const b = this.buf[this.pos++];
            result |= BigInt(b & 0x7f) << shift;
            if (!(b & 0x80)) break;
            shift += 7n;
            if (shift > 63n) throw new Error('varint too long');
        }
        return result;
    }
    bytes() {
        const n = Number(this.varint());
        if (n < 0 || this.pos + n > this.buf.length) throw new Error('truncated field');
        const out = this.buf.subarray(this.pos, this.pos + n);
        this.pos += n;
        return out;
    }
    skip(wt) {
        if (wt === 0) this.varint();
        else if (wt === 1) this.fixed(8);
        else if (wt === 2) this.bytes();
        else if (wt === 5) this.fixed(4);
        else throw new Error(`unsupported wire type ${wt}`);
    }
    fixed(n) {
        if (this.pos + n > this.buf.length) throw new Error('truncated fixed field');
        const out = this.buf.subarray(this.pos, this.pos + n);
        this.pos += n;
        return out;
    }
}

const toInt64 = (u) => BigInt.asIntN(64, u);

/* ONNX TensorProto.DataType -> ORT type name and typed array. */
const DTYPES = {
    1: { ort: 'float32', size: 4, arr: Float32Array, field: 'float' },
    2: { ort: 'uint8', size: 1, arr: Uint8Array, field: 'int32' },
    3: { ort: 'int8', size: 1, arr: Int8Array, field: 'int32' },
    4: { ort: 'uint16', size: 2, arr: Uint16Array, field: 'int32' },
    5: { ort: 'int16', size: 2, arr: Int16Array, field: 'int32' },
    6: { ort: 'int32', size: 4, arr: Int32Array, field: 'int32' },
    7: { ort: 'int64', size: 8, arr: BigInt64Array, field: 'int64' },
    8: { ort: 'string', size: 0, arr: null, field: 'string' },
    9: { ort: 'bool', size: 1, arr: Uint8Array, field: 'int32' },
    10: { ort: 'float16', size: 2, arr: Uint16Array, field: 'int32' },
    11: { ort: 'float64', size: 8, arr: Float64Array, field: 'double' },
    12: { ort: 'uint32', size: 4, arr: Uint32Array, field: 'uint64' },
    13: { ort: 'uint64', size: 8, arr: BigUint64Array, field: 'uint64' },
};
const ORT_TO_ONNX = {};
for (const [k, v] of Object.entries(DTYPES)) ORT_TO_ONNX[v.ort] = Number(k);

function decodeTensor(buf) {
    const r = new Reader(buf);
    const t = { dims: [], dataType: 0, name: '', raw: null, floats: [], ints32: [],
                ints64: [], uints64: [], doubles: [], strings: [], external: false };
    const packed = (wt, one, sink) => {
        if (wt === 2) {
            const sub = new Reader(r.bytes());
            while (!sub.eof()) sink.push(one(sub));
        } else {
            sink.push(one(r));
        }
    };
    while (!r.eof()) {
        const key = Number(r.varint());
        const field = key >>> 3;
        const wt = key & 7;
        switch (field) {
        case 1: packed(wt, (s) => toInt64(s.varint()), t.dims); break;
        case 2: t.dataType = Number(toInt64(r.varint())); break;
        case 4: packed(wt, (s) => Buffer.from(s.fixed(4)).readFloatLE(0), t.floats); break;
        case 5: packed(wt, (s) => Number(BigInt.asIntN(32, s.varint())), t.ints32); break;
        case 6: t.strings.push(Buffer.from(r.bytes())); break;
        case 7: packed(wt, (s) => toInt64(s.varint()), t.ints64); break;
        case 8: t.name = Buffer.from(r.bytes()).toString('utf8'); break;
        case 9: t.raw = Buffer.from(r.bytes()); break;
        case 10: packed(wt, (s) => Buffer.from(s.fixed(8)).readDoubleLE(0), t.doubles); break;
        case 11: packed(wt, (s) => s.varint(), t.uints64); break;
        case 14: t.external = Number(r.varint()) === 1; break;
        default: r.skip(wt);
        }
    }
    return t;
}

function tensorToOrt(ort, t, where) {
    const d = DTYPES[t.dataType];
    if (!d) throw new Error(`${where}: data type ${t.dataType} not supported`);
    if (t.external) throw new Error(`${where}: external data not supported`);
    const dims = t.dims.map((v) => {
        if (v < 0n) throw new Error(`${where}: negative dim`);
        return Number(v);
    });
    const count = dims.reduce((a, b) => a * b, 1);
    if (d.ort === 'string') {
        if (t.strings.length !== count) throw new Error(`${where}: ${t.strings.length} strings for ${count} elements`);
        return new ort.Tensor('string', t.strings.map((b) => b.toString('utf8')), dims);
    }
    let data;
    if (t.raw !== null) {
        if (t.raw.length !== count * d.size) {
            throw new Error(`${where}: raw_data has ${t.raw.length} bytes, expected ${count * d.size}`);
        }
        const copy = new Uint8Array(t.raw); /* aligned copy */
        data = new d.arr(copy.buffer, 0, count);
    } else {
        const src = { float: t.floats, int32: t.ints32, int64: t.ints64,
                      uint64: t.uints64, double: t.doubles }[d.field];
        if (src.length !== count) throw new Error(`${where}: ${src.length} values for ${count} elements`);
        data = new d.arr(count);
        for (let i = 0; i < count; i++) {
            const v = src[i];
            if (d.arr === BigInt64Array) data[i] = BigInt.asIntN(64, BigInt(v));
            else if (d.arr === BigUint64Array) data[i] = BigInt.asUintN(64, BigInt(v));
            else data[i] = Number(v);
        }
    }
    if (d.ort === 'bool') {
        const b = new Uint8Array(count);
        for (let i = 0; i < count; i++) b[i] = data[i] ? 1 : 0;
        data = b;
    }
    return new ort.Tensor(d.ort, data, dims);
}

/* ------------------------------------------------------------- encoding */

function varintBytes(v) {
    let u = BigInt.asUintN(64, BigInt(v));
    const out = [];
    do {
        let b = Number(u & 0x7fn);
        u >>= 7n;
        if (u !== 0n) b |= 0x80;
        out.push(b);
    } while (u !== 0n);
    return Buffer.from(out);
}
const keyBytes = (field, wt) => varintBytes((field << 3) | wt);
const lenField = (field, payload) =>
    Buffer.concat([keyBytes(field, 2), varintBytes(payload.length), payload]);

function encodeTensor(name, ortTensor) {
    const onnxType = ORT_TO_ONNX[ortTensor.type];
    if (!onnxType) throw new Error(`output ${name}: ORT type ${ortTensor.type} not supported`);
    const parts = [];
    if (ortTensor.dims.length) {
        parts.push(lenField(1, Buffer.concat(ortTensor.dims.map((x) => varintBytes(x)))));
    }
    parts.push(keyBytes(2, 0), varintBytes(onnxType));
    if (ortTensor.type === 'string') {
        for (const s of ortTensor.data) parts.push(lenField(6, Buffer.from(s, 'utf8')));
    }
    parts.push(lenField(8, Buffer.from(name, 'utf8')));
    if (ortTensor.type !== 'string') {
        const a = ortTensor.data;
        let raw = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
        if (ortTensor.type === 'bool') raw = Buffer.from(Array.from(a, (v) => (v ? 1 : 0)));
        parts.push(lenField(9, raw));
    }
    return Buffer.concat(parts);
}

/* ------------------------------------------------------------ comparing */

function halfToFloat(h) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const f = h & 0x3ff;
    if (e === 0) return s * f * 2 ** -24;
    if (e === 31) return f ? NaN : s * Infinity;
    return s * (1 + f / 1024) * 2 ** (e - 15);
}

function compare(name, got, want, rtol, atol) {
    if (got.type !== want.type) return `${name}: type ${got.type}, expected ${want.type}`;
    if (got.dims.join(',') !== want.dims.join(',')) {
        return `${name}: shape [${got.dims}], expected [${want.dims}]`;
    }
    const isFloat = ['float32', 'float64', 'float16'].includes(got.type);
    const conv = got.type === 'float16' ? halfToFloat : (v) => v;
    const g = got.data;
    const w = want.data;
    for (let i = 0; i < w.length; i++) {
        if (isFloat) {
            const a = conv(g[i]);
            const b = conv(w[i]);
            if (Number.isNaN(a) && Number.isNaN(b)) continue;
            if (a === b) continue;
            if (!(Math.abs(a - b) <= atol + rtol * Math.abs(b))) {
                return `${name}: element ${i}: ${a}, expected ${b}`;
            }
        } else if (g[i] !== w[i] && !(got.type === 'bool' && !g[i] === !w[i])) {
            return `${name}: element ${i}: ${g[i]}, expected ${w[i]}`;
        }
    }
    return null;
}

/* ----------------------------------------------------------------- main */

function parseArgs(argv) {
    const a = { model: null, inputs: [], testDir: null, outDir: null, rtol: 1e-3, atol: 1e-7,
                graphOpt: null, disable: null };
    for (let i = 0; i < argv.length; i++) {
        const s = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) die(2, `${s} needs a value`);
            return argv[++i];
        };
        if (s === '--test-dir') a.testDir = next();
        else if (s === '-o') a.outDir = next();
        else if (s === '--rtol') a.rtol = Number(next());
        else if (s === '--atol') a.atol = Number(next());
        else if (s === '--graph-opt') {
            a.graphOpt = next();
            if (!['disabled', 'basic', 'extended', 'all'].includes(a.graphOpt)) {
                die(2, `--graph-opt: ${a.graphOpt} is not disabled, basic, extended or all`);
            }
        } else if (s === '--disable-optimizers') a.disable = next();
        else if (s === '-h' || s === '--help') {
            process.stdout.write('usage: ort_run.js MODEL.onnx [INPUT.pb ...] [--test-dir DIR] [-o OUTDIR] ' +
                                 '[--rtol R] [--atol A] [--graph-opt LEVEL] [--disable-optimizers LIST]\n');
            process.exit(0);
        } else if (s.startsWith('-')) die(2, `unknown option ${s}`);
        else if (a.model === null) a.model = s;
        else a.inputs.push(s);
    }
    if (a.model === null) die(2, 'usage: ort_run.js MODEL.onnx [INPUT.pb ...] [--test-dir DIR] [-o OUTDIR]');
    return a;
}

function numbered(dir, prefix) {
    return fs.readdirSync(dir)
        .map((f) => /^(\w+)_(\d+)\.pb$/.exec(f))
        .filter((m) => m && m[1] === prefix)
        .sort((x, y) => Number(x[2]) - Number(y[2]))
        .map((m) => path.join(dir, m[0]));
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const ort = loadOrt();
    let inputFiles = args.inputs;
    if (args.testDir) inputFiles = inputFiles.concat(numbered(args.testDir, 'input'));

    const options = { logSeverityLevel: 3 };
    if (args.graphOpt) options.graphOptimizationLevel = args.graphOpt;
    if (args.disable) options.extra = { optimization: { disable_specified_optimizers: args.disable } };
    let session;
    try {
        session = await ort.InferenceSession.create(args.model, options);
    } catch (e) {
        die(1, `${args.model}: ${e.message}`);
    }

    const decoded = inputFiles.map((f) => {
        try {
            return { file: f, t: decodeTensor(fs.readFileSync(f)) };
        } catch (e) {
            return die(1, `${f}: ${e.message}`);
        }
    });
    const byName = decoded.length > 0 &&
        decoded.every((d) => session.inputNames.includes(d.t.name));
    if (!byName && decoded.length !== session.inputNames.length) {
        die(1, `${args.model}: model takes ${session.inputNames.length} inputs ` +
            `(${session.inputNames.join(', ')}), got ${decoded.length}`);
    }
    const feeds = {};
    decoded.forEach((d, i) => {
        const name = byName ? d.t.name : session.inputNames[i];
        try {
            feeds[name] = tensorToOrt(ort, d.t, d.file);
        } catch (e) {
            die(1, e.message);
        }
    });

    let results;
    try {
        results = await session.run(feeds);
    } catch (e) {
        die(1, `${args.model}: run failed: ${e.message}`);
    }

    const summary = [];
    const names = session.outputNames;
    if (args.outDir) fs.mkdirSync(args.outDir, { recursive: true });
    names.forEach((n, i) => {
        const t = results[n];
        summary.push({ name: n, dtype: t.type, dims: t.dims.map(Number) });
        if (args.outDir) {
            fs.writeFileSync(path.join(args.outDir, `output_${i}.pb`), encodeTensor(n, t));
        }
    });

    if (args.testDir) {
        const expected = numbered(args.testDir, 'output');
        if (expected.length !== names.length) {
            die(1, `${args.testDir}: ${expected.length} expected outputs, model has ${names.length}`);
        }
        for (let i = 0; i < names.length; i++) {
            let want;
            try {
                want = tensorToOrt(ort, decodeTensor(fs.readFileSync(expected[i])), expected[i]);
            } catch (e) {
                die(1, e.message);
            }
            const msg = compare(`output ${i} (${names[i]})`, results[names[i]], want, args.rtol, args.atol);
            if (msg) die(1, `mismatch: ${msg}`);
        }
    }
    process.stdout.write(JSON.stringify({ outputs: summary }) + '\n');
}

main().catch((e) => die(1, e.stack || String(e)));

/*
** tileopt._tileopt: the CPython extension under the Python package. It is a
** thin layer over the public API (tileopt.h) that trades in plain Python
** objects; tileopt/__init__.py turns them into numpy arrays, onnx ModelProtos
** and the tileopt.Error classes.
**
** A model source is a path (str or os.PathLike) or a bytes-like object holding
** a serialized ModelProto. Options are (name, value) string pairs for
** tileopt_ctx_set, applied in order. A value is a tuple:
**   ("tensor", dtype, dims, data)      data: bytes-like, row-major
**   ("strings", dims, [bytes, ...])
**   ("sequence", dtype, [value, ...])
**   ("optional", value or None)
** Every call gets a context of its own and lets other threads run while the
** library works. A failure raises _tileopt.Failure(status, phrase, message,
** report), report being the JSON report so far or None.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "tileopt.h"

static PyObject *Failure;

/* Raise Failure for status st on ctx, with the report when one was begun. */
static PyObject *fail(tileopt_ctx *ctx, tileopt_status st, int with_report) {
    char *report = NULL;
    if (with_report && tileopt_report_string(ctx, &report) != TILEOPT_OK) report = NULL;
    PyObject *args = Py_BuildValue("(issz)", (int)st, tileopt_status_str(st),
                                   ctx ? tileopt_ctx_errmsg(ctx) : "", report);
    tileopt_free(report);
    if (args) {
        PyErr_SetObject(Failure, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* A context with options applied: a sequence of (name, value) string pairs.
** Sequences from the caller are read as tuples here and below: Python code that
** runs while their items are read (an __index__) cannot change their length. */
static tileopt_ctx *ctx_open(PyObject *options) {
    tileopt_ctx *ctx = NULL;
    tileopt_status st = tileopt_ctx_new(&ctx);
    if (st) {
        fail(NULL, st, 0);
        return NULL;
    }
    PyObject *seq = PySequence_Tuple(options);
    if (!seq) goto bad;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        const char *name, *value;
        PyObject *pair = PySequence_Tuple(PyTuple_GET_ITEM(seq, i));
        int ok = pair && PyArg_ParseTuple(pair, "ss;an option is (name, value)", &name, &value);
        if (ok && (st = tileopt_ctx_set(ctx, name, value))) {
            fail(ctx, st, 0);
            ok = 0;
        }
        Py_XDECREF(pair);
        if (!ok) goto bad;
    }
    Py_DECREF(seq);
    return ctx;
bad:
    Py_XDECREF(seq);
    tileopt_ctx_free(ctx);
    return NULL;
}

/* A model source: a path, or a buffer (base_dir resolves its external data). *path
** gets the path's bytes (a new reference, for the report) or None. */
static tileopt_model *model_open(tileopt_ctx *ctx, PyObject *source, PyObject *base_dir,
                                 PyObject **path) {
    tileopt_model *model = NULL;
    tileopt_status st;
    *path = NULL;
    if (PyObject_CheckBuffer(source)) {
        Py_buffer view;
        PyObject *dir = NULL;
        if (PyObject_GetBuffer(source, &view, PyBUF_SIMPLE) != 0) return NULL;
        if (base_dir != Py_None && !PyUnicode_FSConverter(base_dir, &dir)) {
            PyBuffer_Release(&view);
            return NULL;
        }
        const char *d = dir ? PyBytes_AS_STRING(dir) : NULL;
        Py_BEGIN_ALLOW_THREADS
        st = tileopt_model_load_buffer(ctx, view.buf, (size_t)view.len, d, &model);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&view);
        Py_XDECREF(dir);
        Py_INCREF(Py_None);
        *path = Py_None;
    } else {
        PyObject *p = NULL;
        if (!PyUnicode_FSConverter(source, &p)) return NULL;
        const char *cp = PyBytes_AS_STRING(p);
        Py_BEGIN_ALLOW_THREADS
        st = tileopt_model_load(ctx, cp, &model);
        Py_END_ALLOW_THREADS
        *path = p;
    }
    if (st) {
        Py_CLEAR(*path);
        fail(ctx, st, 0);
        return NULL;
    }
    return model;
}

static const char *path_str(PyObject *path) {
    return path && path != Py_None ? PyBytes_AS_STRING(path) : NULL;
}

/* ------------------------------------------------------------------ values */

/* dims: a sequence of ints, at most 64 of them. */
static int read_dims(PyObject *obj, int64_t *dims, size_t *rank) {
    PyObject *seq = PySequence_Tuple(obj);
    if (!seq) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > 64) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "rank %zd is over the limit 64", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (d == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        dims[i] = (int64_t)d;
    }
    *rank = (size_t)n;
    Py_DECREF(seq);
    return 0;
}

static tileopt_tensor *value_in(tileopt_ctx *ctx, PyObject *spec, int depth);

static tileopt_tensor *tensor_in(tileopt_ctx *ctx, PyObject *spec) {
    int dtype;
    PyObject *dims_obj;
    Py_buffer data;
    if (!PyArg_ParseTuple(spec, "siOy*;a tensor is (\"tensor\", dtype, dims, data)",
                          &(const char *){NULL}, &dtype, &dims_obj, &data))
        return NULL;
    int64_t dims[64];
    size_t rank;
    tileopt_tensor *t = NULL;
    if (read_dims(dims_obj, dims, &rank) == 0) {
        tileopt_status st =
            tileopt_tensor_new(ctx, dtype, dims, rank, data.buf, (size_t)data.len, &t);
        if (st) fail(ctx, st, 0);
    }
    PyBuffer_Release(&data);
    return t;
}

static tileopt_tensor *strings_in(tileopt_ctx *ctx, PyObject *spec) {
    PyObject *dims_obj, *list;
    if (!PyArg_ParseTuple(spec, "sOO;strings are (\"strings\", dims, [bytes, ...])",
                          &(const char *){NULL}, &dims_obj, &list))
        return NULL;
    int64_t dims[64];
    size_t rank;
    if (read_dims(dims_obj, dims, &rank)) return NULL;
    PyObject *seq = PySequence_Tuple(list);
    if (!seq) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    const char **strs = PyMem_Calloc((size_t)n + 1, sizeof *strs);
    size_t *lens = PyMem_Calloc((size_t)n + 1, sizeof *lens);
    tileopt_tensor *t = NULL;
    if (!strs || !lens) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyTuple_GET_ITEM(seq, i);
        if (!PyBytes_Check(b)) {
            PyErr_Format(PyExc_TypeError, "string %zd is %s, not bytes", i, Py_TYPE(b)->tp_name);
            goto done;
        }
        strs[i] = PyBytes_AS_STRING(b);
        lens[i] = (size_t)PyBytes_GET_SIZE(b);
    }
    /* The library reads one string per element: the list must hold as many. A
    ** shape it refuses (negative, overflowing) fails there before any is read. */
    uint64_t want = 1;
    int sized = 1;
    for (size_t i = 0; i < rank && sized; i++)
        sized = dims[i] >= 0 && !__builtin_mul_overflow(want, (uint64_t)dims[i], &want);
    if (sized && want != (uint64_t)n) {
        PyErr_Format(PyExc_ValueError, "%zd strings for a shape of %llu elements", n,
                     (unsigned long long)want);
        goto done;
    }
    tileopt_status st = tileopt_tensor_new_strings(ctx, dims, rank, strs, lens, &t);
    if (st) fail(ctx, st, 0);
done:
    PyMem_Free(strs);
    PyMem_Free(lens);
    Py_DECREF(seq);
    return t;
}

/* Sequences and optionals nest; deeper than this is not a value ONNX has. */
#define MAX_VALUE_DEPTH 8

static tileopt_tensor *sequence_in(tileopt_ctx *ctx, PyObject *spec, int depth) {
    int dtype;
    PyObject *list;
    if (!PyArg_ParseTuple(spec, "siO;a sequence is (\"sequence\", dtype, [value, ...])",
                          &(const char *){NULL}, &dtype, &list))
        return NULL;
    PyObject *seq = PySequence_Tuple(list);
    if (!seq) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    tileopt_tensor **items = PyMem_Calloc((size_t)n + 1, sizeof *items);
    tileopt_tensor *t = NULL;
    Py_ssize_t made = 0;
    if (!items) PyErr_NoMemory();
    for (; items && made < n; made++)
        if (!(items[made] = value_in(ctx, PyTuple_GET_ITEM(seq, made), depth + 1)))
            break;
    if (items && made == n) {
        tileopt_status st = tileopt_tensor_new_sequence(
            ctx, dtype, (const tileopt_tensor *const *)items, (size_t)n, &t);
        if (st) fail(ctx, st, 0);
    }
    for (Py_ssize_t i = 0; items && i < made; i++) tileopt_tensor_free(items[i]);
    PyMem_Free(items);
    Py_DECREF(seq);
    return t;
}

static tileopt_tensor *optional_in(tileopt_ctx *ctx, PyObject *spec, int depth) {
    PyObject *inner;
    if (!PyArg_ParseTuple(spec, "sO;an optional is (\"optional\", value or None)",
                          &(const char *){NULL}, &inner))
        return NULL;
    tileopt_tensor *item = NULL, *t = NULL;
    if (inner != Py_None && !(item = value_in(ctx, inner, depth + 1))) return NULL;
    tileopt_status st = tileopt_tensor_new_optional(ctx, item, &t);
    if (st) fail(ctx, st, 0);
    tileopt_tensor_free(item);
    return t;
}

/* One row per value kind, as the spec's first item names it. */
static const struct {
    const char *tag;
    tileopt_tensor *(*make)(tileopt_ctx *, PyObject *, int);
} value_kinds[] = {
    {"sequence", sequence_in},
    {"optional", optional_in},
};

static tileopt_tensor *value_in(tileopt_ctx *ctx, PyObject *spec, int depth) {
    if (depth > MAX_VALUE_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "values nest deeper than 8 levels");
        return NULL;
    }
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) {
        PyErr_Format(PyExc_TypeError, "a value is a tuple naming its kind, not %s",
                     Py_TYPE(spec)->tp_name);
        return NULL;
    }
    const char *tag = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0));
    if (!tag) return NULL;
    if (strcmp(tag, "tensor") == 0) return tensor_in(ctx, spec);
    if (strcmp(tag, "strings") == 0) return strings_in(ctx, spec);
    for (size_t i = 0; i < sizeof value_kinds / sizeof *value_kinds; i++)
        if (strcmp(tag, value_kinds[i].tag) == 0) return value_kinds[i].make(ctx, spec, depth);
    PyErr_Format(PyExc_ValueError, "unknown value kind '%s'", tag);
    return NULL;
}

static PyObject *dims_out(const tileopt_tensor *t) {
    size_t rank = tileopt_tensor_rank(t);
    const int64_t *dims = tileopt_tensor_dims(t);
    PyObject *tup = PyTuple_New((Py_ssize_t)rank);
    for (size_t i = 0; tup && i < rank; i++) {
        PyObject *d = PyLong_FromLongLong((long long)dims[i]);
        if (!d) {
            Py_CLEAR(tup);
            break;
        }
        PyTuple_SET_ITEM(tup, (Py_ssize_t)i, d);
    }
    return tup;
}

static PyObject *value_out(tileopt_ctx *ctx, tileopt_tensor *t);

static PyObject *items_out(tileopt_ctx *ctx, tileopt_tensor *t) {
    size_t n = tileopt_tensor_items(t);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        tileopt_tensor *item = NULL;
        tileopt_status st = tileopt_tensor_item(ctx, t, i, &item);
        PyObject *v = st ? fail(ctx, st, 0) : value_out(ctx, item);
        tileopt_tensor_free(item);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

static PyObject *value_out(tileopt_ctx *ctx, tileopt_tensor *t) {
    int dtype = tileopt_tensor_dtype(t);
    switch (tileopt_tensor_kind(t)) {
    case TILEOPT_VALUE_SEQUENCE: {
        PyObject *items = items_out(ctx, t);
        return items ? Py_BuildValue("(siN)", "sequence", dtype, items) : NULL;
    }
    case TILEOPT_VALUE_OPTIONAL: {
        if (!tileopt_tensor_items(t)) return Py_BuildValue("(sO)", "optional", Py_None);
        PyObject *items = items_out(ctx, t);
        PyObject *r = items ? Py_BuildValue("(sO)", "optional", PyList_GET_ITEM(items, 0))
                            : NULL;
        Py_XDECREF(items);
        return r;
    }
    default:
        break;
    }
    PyObject *dims = dims_out(t);
    if (!dims) return NULL;
    if (dtype == 8) { /* STRING */
        size_t n = 1;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dims); i++)
            n *= (size_t)PyLong_AsLongLong(PyTuple_GET_ITEM(dims, i));
        PyObject *list = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; list && i < n; i++) {
            const char *s;
            size_t len;
            tileopt_status st = tileopt_tensor_string(ctx, t, i, &s, &len);
            PyObject *b = st ? fail(ctx, st, 0) : PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
            if (!b) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, b);
        }
        if (!list) {
            Py_DECREF(dims);
            return NULL;
        }
        return Py_BuildValue("(sNN)", "strings", dims, list);
    }
    const void *data;
    size_t nbytes;
    tileopt_status st = tileopt_tensor_data(ctx, t, &data, &nbytes);
    if (st) {
        Py_DECREF(dims);
        return fail(ctx, st, 0);
    }
    /* a bytearray: numpy makes a writable array over it without a copy */
    PyObject *buf = PyByteArray_FromStringAndSize(data, (Py_ssize_t)nbytes);
    if (!buf) {
        Py_DECREF(dims);
        return NULL;
    }
    return Py_BuildValue("(siNN)", "tensor", dtype, dims, buf);
}

/* ------------------------------------------------------------------ calls */

PyDoc_STRVAR(optimize_doc,
"optimize(source, base_dir, options, passes, verify, output) -> (bytes or None, report)\n"
"Load, run the passes (a comma-separated list, \"none\", or None for the default\n"
"pipeline), verify against the input when asked, then save to output (a path)\n"
"or return the model's bytes. report is the JSON report text.");

static PyObject *py_optimize(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *source, *base_dir, *options, *output_obj, *path = NULL, *out_path = NULL;
    const char *passes;
    int verify;
    if (!PyArg_ParseTuple(args, "OOOzpO", &source, &base_dir, &options, &passes, &verify,
                          &output_obj))
        return NULL;
    if (output_obj != Py_None && !PyUnicode_FSConverter(output_obj, &out_path)) return NULL;
    tileopt_ctx *ctx = ctx_open(options);
    tileopt_model *model = NULL, *before = NULL;
    PyObject *result = NULL;
    if (!ctx) goto done;
    if (!(model = model_open(ctx, source, base_dir, &path))) goto done;
    /* as the CLI does: an output that is the input, or its external data, is
    ** refused before any work */
    tileopt_status checked = out_path ? tileopt_model_check_output(ctx, model,
                                                                   path_str(out_path))
                                      : TILEOPT_OK;
    if (checked) {
        fail(ctx, checked, 0);
        goto done;
    }
    if (verify) {
        PyObject *again = NULL;
        before = model_open(ctx, source, base_dir, &again);
        Py_XDECREF(again);
        if (!before) goto done;
    }
    const char *out = path_str(out_path);
    tileopt_status st = tileopt_report_begin(ctx, model, path_str(path));
    int began = st == TILEOPT_OK;
    void *bytes = NULL;
    size_t size = 0;
    Py_BEGIN_ALLOW_THREADS
    if (!st) st = tileopt_optimize(ctx, model, passes);
    if (!st && verify) st = tileopt_model_verify(ctx, before, model);
    if (!st) st = out ? tileopt_model_save(ctx, model, out)
                      : tileopt_model_save_buffer(ctx, model, &bytes, &size);
    Py_END_ALLOW_THREADS
    if (st && !began) {
        fail(ctx, st, 0);
        goto done;
    }
    /* the output summary states what was written (its size, external data) */
    tileopt_status end = tileopt_report_end(ctx, model, out);
    if (!st) st = end;
    if (st) {
        tileopt_free(bytes);
        fail(ctx, st, 1);
        goto done;
    }
    char *report = NULL;
    if ((st = tileopt_report_string(ctx, &report))) {
        tileopt_free(bytes);
        fail(ctx, st, 0);
        goto done;
    }
    PyObject *model_bytes = bytes ? PyBytes_FromStringAndSize(bytes, (Py_ssize_t)size)
                                  : (Py_INCREF(Py_None), Py_None);
    tileopt_free(bytes);
    if (model_bytes) result = Py_BuildValue("(Ns)", model_bytes, report);
    tileopt_free(report);
done:
    tileopt_model_free(model);
    tileopt_model_free(before);
    tileopt_ctx_free(ctx);
    Py_XDECREF(path);
    Py_XDECREF(out_path);
    return result;
}

PyDoc_STRVAR(inspect_doc,
"inspect(source, base_dir, options) -> str\n"
"The JSON summary of tileopt inspect --json.");

static PyObject *py_inspect(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *source, *base_dir, *options, *path = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOO", &source, &base_dir, &options)) return NULL;
    tileopt_ctx *ctx = ctx_open(options);
    tileopt_model *model = ctx ? model_open(ctx, source, base_dir, &path) : NULL;
    if (model) {
        char *json = NULL;
        tileopt_status st;
        Py_BEGIN_ALLOW_THREADS
        st = tileopt_model_inspect(ctx, model, &json);
        Py_END_ALLOW_THREADS
        result = st ? fail(ctx, st, 0) : PyUnicode_FromString(json);
        tileopt_free(json);
    }
    tileopt_model_free(model);
    tileopt_ctx_free(ctx);
    Py_XDECREF(path);
    return result;
}

/* A name from the model as str: bytes that are not UTF-8 become surrogates, as
** os.fsdecode does, so every name has one str and back. */
static PyObject *name_str(const char *name) {
    return PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "surrogateescape");
}

/* Prefix the message of the exception being raised with the input it is about
** (a Failure's message is its third argument, any other's its first). */
static void name_the_input(const char *name) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *args = value ? PyObject_GetAttrString(value, "args") : NULL;
    Py_ssize_t at = PyErr_GivenExceptionMatches(type, Failure) ? 2 : 0;
    if (args && PyTuple_Check(args) && at < PyTuple_GET_SIZE(args)) {
        Py_ssize_t n = PyTuple_GET_SIZE(args);
        PyObject *named = PyTuple_New(n);
        for (Py_ssize_t i = 0; named && i < n; i++) {
            PyObject *item = i == at ? PyUnicode_FromFormat("input '%s': %S", name,
                                                            PyTuple_GET_ITEM(args, i))
                                     : Py_NewRef(PyTuple_GET_ITEM(args, i));
            if (!item) Py_CLEAR(named);
            else PyTuple_SET_ITEM(named, i, item);
        }
        if (named) PyObject_SetAttrString(value, "args", named);
        Py_XDECREF(named);
    }
    Py_XDECREF(args);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* The model's inputs in binding order, each taken from the dict inputs by name. */
static int bind_inputs(tileopt_ctx *ctx, tileopt_model *model, PyObject *inputs,
                       tileopt_tensor ***out, size_t *n_out) {
    size_t n = tileopt_model_input_count(model);
    tileopt_tensor **in = PyMem_Calloc(n + 1, sizeof *in);
    if (!in) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t used = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = tileopt_model_input_name(model, i);
        if (!name) name = "";
        PyObject *key = name_str(name);
        PyObject *spec = key ? PyDict_GetItemWithError(inputs, key) : NULL;
        Py_XDECREF(key);
        if (!spec) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_KeyError, "graph input '%s' is not given", name);
            goto bad;
        }
        used++;
        if (!(in[i] = value_in(ctx, spec, 0))) {
            name_the_input(name);
            goto bad;
        }
    }
    if (PyDict_Size(inputs) != used) {
        /* some key names no input: find it through a set of the input names,
        ** not a scan of them per key */
        PyObject *names = PySet_New(NULL);
        for (size_t i = 0; names && i < n; i++) {
            const char *name = tileopt_model_input_name(model, i);
            PyObject *k = name_str(name ? name : "");
            if (!k || PySet_Add(names, k) < 0) Py_CLEAR(names);
            Py_XDECREF(k);
        }
        if (!names) goto bad;
        PyObject *key;
        Py_ssize_t pos = 0;
        int known = 1;
        while (known > 0 && PyDict_Next(inputs, &pos, &key, NULL)) {
            known = PySet_Contains(names, key);
            if (!known)
                PyErr_Format(PyExc_KeyError, "'%S' is not a graph input of the model "
                             "(initializers are not inputs one binds)", key);
        }
        Py_DECREF(names);
        if (known <= 0) goto bad;
    }
    *out = in;
    *n_out = n;
    return 0;
bad:
    for (size_t i = 0; i < n; i++) tileopt_tensor_free(in[i]);
    PyMem_Free(in);
    return -1;
}

PyDoc_STRVAR(run_doc,
"run(source, base_dir, options, inputs) -> [(name, value), ...]\n"
"Evaluate the model in the built-in evaluator; inputs maps every graph input\n"
"that is not an initializer to a value.");

static PyObject *py_run(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *source, *base_dir, *options, *inputs, *path = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOO!", &source, &base_dir, &options, &PyDict_Type, &inputs))
        return NULL;
    tileopt_ctx *ctx = ctx_open(options);
    tileopt_model *model = ctx ? model_open(ctx, source, base_dir, &path) : NULL;
    tileopt_tensor **in = NULL, **outs = NULL;
    size_t n_in = 0, n_out = 0;
    if (!model || bind_inputs(ctx, model, inputs, &in, &n_in)) goto done;
    tileopt_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tileopt_model_run(ctx, model, in, n_in, &outs, &n_out);
    Py_END_ALLOW_THREADS
    if (st) {
        fail(ctx, st, 0);
        goto done;
    }
    result = PyList_New((Py_ssize_t)n_out);
    for (size_t i = 0; result && i < n_out; i++) {
        const char *name = tileopt_model_output_name(model, i);
        PyObject *v = value_out(ctx, outs[i]);
        PyObject *key = v ? name_str(name ? name : "") : NULL;
        PyObject *pair = key ? Py_BuildValue("(NN)", key, v) : NULL;
        if (!key) Py_XDECREF(v);
        if (!pair) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, (Py_ssize_t)i, pair);
    }
done:
    for (size_t i = 0; i < n_in; i++) tileopt_tensor_free(in[i]);
    PyMem_Free(in);
    for (size_t i = 0; i < n_out; i++) tileopt_tensor_free(outs[i]);
    tileopt_free(outs);
    tileopt_model_free(model);
    tileopt_ctx_free(ctx);
    Py_XDECREF(path);
    return result;
}

/* A context and two models, before and after, as verify and html take them. */
typedef struct model_pair {
    tileopt_ctx *ctx;
    tileopt_model *before, *after;
    PyObject *path_b, *path_a;
} model_pair;

/* Open both (a Python error is set when one cannot be); close with
** pair_close either way. */
static int pair_open(model_pair *m, PyObject *options, PyObject *src_b, PyObject *dir_b,
                     PyObject *src_a, PyObject *dir_a) {
    *m = (model_pair){0};
    m->ctx = ctx_open(options);
    m->before = m->ctx ? model_open(m->ctx, src_b, dir_b, &m->path_b) : NULL;
    m->after = m->before ? model_open(m->ctx, src_a, dir_a, &m->path_a) : NULL;
    return m->after != NULL;
}

static void pair_close(model_pair *m) {
    tileopt_model_free(m->before);
    tileopt_model_free(m->after);
    tileopt_ctx_free(m->ctx);
    Py_XDECREF(m->path_b);
    Py_XDECREF(m->path_a);
}

PyDoc_STRVAR(verify_doc,
"verify(before, before_base_dir, after, after_base_dir, options) -> str\n"
"Run both models on the same seeded random inputs; the JSON report, whose\n"
"\"verify\" object holds the verdict.");

static PyObject *py_verify(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src_b, *dir_b, *src_a, *dir_a, *options, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOO", &src_b, &dir_b, &src_a, &dir_a, &options)) return NULL;
    model_pair m;
    if (pair_open(&m, options, src_b, dir_b, src_a, dir_a)) {
        tileopt_ctx *ctx = m.ctx;
        tileopt_status st = tileopt_report_begin(ctx, m.before, path_str(m.path_b));
        int began = st == TILEOPT_OK;
        Py_BEGIN_ALLOW_THREADS
        if (!st) st = tileopt_model_verify(ctx, m.before, m.after);
        Py_END_ALLOW_THREADS
        if (began && tileopt_report_end(ctx, m.after, path_str(m.path_a)) && !st)
            st = TILEOPT_NOMEM;
        char *report = NULL;
        /* a mismatch is a verdict, not a failure: the report says it */
        if (st && st != TILEOPT_MISMATCH) fail(ctx, st, began);
        else if ((st = tileopt_report_string(ctx, &report))) fail(ctx, st, 0);
        else result = PyUnicode_FromString(report);
        tileopt_free(report);
    }
    pair_close(&m);
    return result;
}

PyDoc_STRVAR(html_doc,
"html(report, before, before_base_dir, after, after_base_dir, options) -> str\n"
"The page of optimize --html: report is the JSON report's text, before and after\n"
"the two models (path or bytes) it describes.");

static PyObject *py_html(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src_b, *dir_b, *src_a, *dir_a, *options, *result = NULL;
    const char *report;
    Py_ssize_t report_len;
    if (!PyArg_ParseTuple(args, "s#OOOOO", &report, &report_len, &src_b, &dir_b, &src_a,
                          &dir_a, &options))
        return NULL;
    model_pair m;
    if (pair_open(&m, options, src_b, dir_b, src_a, dir_a)) {
        char *page = NULL;
        size_t size = 0;
        tileopt_status st;
        Py_BEGIN_ALLOW_THREADS
        st = tileopt_html(m.ctx, report, (size_t)report_len, m.before, m.after, &page, &size);
        Py_END_ALLOW_THREADS
        if (st) fail(m.ctx, st, 0);
        else result = PyUnicode_DecodeUTF8(page, (Py_ssize_t)size, "strict");
        tileopt_free(page);
    }
    pair_close(&m);
    return result;
}

PyDoc_STRVAR(pass_names_doc, "pass_names() -> list of str\n"
"Every pass the library has, in default order.");

static PyObject *py_pass_names(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && tileopt_pass_name(i); i++) {
        PyObject *name = PyUnicode_FromString(tileopt_pass_name(i));
        if (!name || PyList_Append(list, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(name);
    }
    return list;
}

static PyMethodDef methods[] = {
    {"optimize", py_optimize, METH_VARARGS, optimize_doc},
    {"pass_names", py_pass_names, METH_NOARGS, pass_names_doc},
    {"inspect", py_inspect, METH_VARARGS, inspect_doc},
    {"run", py_run, METH_VARARGS, run_doc},
    {"verify", py_verify, METH_VARARGS, verify_doc},
    {"html", py_html, METH_VARARGS, html_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tileopt",
    "The C layer of the tileopt package (see tileopt/__init__.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tileopt(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Failure = PyErr_NewExceptionWithDoc(
        "tileopt._tileopt.Failure",
        "A library call failed: args are (status, phrase, message, report).", NULL, NULL);
    if (!Failure || PyModule_AddObjectRef(m, "Failure", Failure) < 0 ||
        PyModule_AddStringConstant(m, "version", tileopt_version()) < 0)
        goto bad;
    /* The status codes, by their names in tileopt.h less the prefix */
    static const struct {
        const char *name;
        tileopt_status code;
    } statuses[TILEOPT_STATUS_COUNT_] = {
        {"OK", TILEOPT_OK},           {"ERROR", TILEOPT_ERROR},
        {"NOMEM", TILEOPT_NOMEM},     {"IO", TILEOPT_IO},
        {"PARSE", TILEOPT_PARSE},     {"INVALID", TILEOPT_INVALID},
        {"UNSUPPORTED", TILEOPT_UNSUPPORTED}, {"LIMIT", TILEOPT_LIMIT},
        {"MISMATCH", TILEOPT_MISMATCH}, {"MISUSE", TILEOPT_MISUSE},
    };
    for (size_t i = 0; i < TILEOPT_STATUS_COUNT_; i++) {
        if (!statuses[i].name) {
            PyErr_SetString(PyExc_SystemError, "_tileopt: a status has no name");
            goto bad;
        }
        if (PyModule_AddIntConstant(m, statuses[i].name, (long)statuses[i].code) < 0) goto bad;
    }
    return m;
bad:
    Py_DECREF(m);
    return NULL;
}

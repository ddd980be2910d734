/*
** Public API: running a model in the built-in evaluator, tileopt_tile, and
** verifying an optimized model against its input.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/eval.h"
#include "api/ctx.h"

/* The value a symbolic or unknown dim takes in generated inputs: the leading
** axis (the batch, for every exporter) is VERIFY_DIM; the other axes take the
** sizes below in turn until the input model runs, since sequences and images
** shorter than a model's kernels and strides make it fail (an audio model's
** framing convolution, an OCR model's width). */
#define VERIFY_DIM 2
static const int64_t verify_sizes[] = {VERIFY_DIM, 64, 512};

/* ------------------------------------------------------------------ run */

tileopt_status tileopt_model_run(tileopt_ctx *ctx, tileopt_model *model,
                                 tileopt_tensor *const *inputs, size_t n_inputs,
                                 tileopt_tensor ***outputs, size_t *n_outputs) {
    *outputs = NULL;
    *n_outputs = 0;
    tensor **in = calloc(n_inputs ? n_inputs : 1, sizeof *in);
    if (!in) return ctx_fail(ctx, &(errbuf){TILEOPT_NOMEM, "out of memory"});
    int rc = TILEOPT_OK;
    graph *g = model->g->main;
    size_t k = 0;
    eval_env env = api_eval_env(ctx, "running");
    for (size_t i = 0; i < g->pb->n_input && k < n_inputs && !rc; i++) {
        graph_value *v = graph_find(g, g->pb->input[i]->name);
        if (v && v->initializer >= 0) continue;
        tensor *t = inputs[k] ? inputs[k]->t : NULL;
        in[k] = t ? tensor_ref(t) : NULL;
        if (t && !in[k]) rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
        else if (t && v && api_bits_for(v->type.elem, t)) in[k]->elem = v->type.elem;
        k++;
    }
    for (; k < n_inputs && !rc; k++) {
        in[k] = inputs[k] && inputs[k]->t ? tensor_ref(inputs[k]->t) : NULL;
        if (inputs[k] && inputs[k]->t && !in[k])
            rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    tensor **outs = NULL;
    size_t no = 0;
    if (!rc)
        rc = eval_graph(model->g, in, n_inputs, &outs, &no, &env, &ctx->err);
    for (size_t i = 0; i < n_inputs; i++) tensor_free(in[i]);
    free(in);
    if (rc) return ctx_fail(ctx, &ctx->err);
    tileopt_tensor **res = calloc(no ? no : 1, sizeof *res);
    if (!res) rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    Onnx__GraphProto *pb = model->g->main->pb;
    for (size_t i = 0; i < no && !rc; i++) {
        /* The caller may free the model first: no output may point into it. */
        tensor *d = NULL;
        rc = tensor_detach(outs[i], &env, &d, &ctx->err);
        if (!rc) rc = api_wrap_tensor(ctx, d, pb->output[i]->name, &res[i]);
    }
    for (size_t i = 0; i < no; i++) tensor_free(outs[i]);
    free(outs);
    if (rc) {
        if (res)
            for (size_t i = 0; i < no; i++) tileopt_tensor_free(res[i]);
        free(res);
        return ctx_fail(ctx, &ctx->err);
    }
    *outputs = res;
    *n_outputs = no;
    return TILEOPT_OK;
}

tileopt_status tileopt_tile(tileopt_ctx *ctx, const tileopt_tensor *input,
                            const int64_t *repeats, size_t n_repeats, tileopt_tensor **out) {
    *out = NULL;
    tensor *t = NULL;
    if (!input || (!repeats && n_repeats))
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_tile: NULL argument"});
    eval_env env = api_eval_env(ctx, NULL);
    if (kernel_tile_promoted(input->t, repeats, n_repeats, &env, &t, &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    return api_wrap_tensor(ctx, t, input->name, out);
}

/* ------------------------------------------------------------------ verify */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static double rng_unit(uint64_t *s) {
    return (double)(rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/*
** Random values by element type. Floats lie in [-1, 1); integers in [0, 4], so
** inputs that end up as indices, repeats or shapes stay valid for small dims;
** 16-bit floats are built from bits (magnitudes 1/16 .. 1); 8-bit floats are
** small positive finite codes in every variant.
*/
static void fill_random(tensor *t, uint64_t *s) {
    uint64_t n = tensor_numel(t);
    uint8_t *p = t->data;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(s);
        switch (t->elem) {
        case DT_FLOAT: { float f = (float)rng_unit(s); memcpy(p + 4 * i, &f, 4); break; }
        case DT_DOUBLE: { double d = rng_unit(s); memcpy(p + 8 * i, &d, 8); break; }
        case DT_COMPLEX64: {
            float f[2] = {(float)rng_unit(s), (float)rng_unit(s)};
            memcpy(p + 8 * i, f, 8);
            break;
        }
        case DT_COMPLEX128: {
            double d[2] = {rng_unit(s), rng_unit(s)};
            memcpy(p + 16 * i, d, 16);
            break;
        }
        case DT_FLOAT16: {
            uint16_t h = (uint16_t)(((r & 1) << 15) | ((11 + (r >> 1) % 4) << 10) |
                                    ((r >> 8) & 0x3ff));
            memcpy(p + 2 * i, &h, 2);
            break;
        }
        case DT_BFLOAT16: {
            uint16_t h = (uint16_t)(((r & 1) << 15) | ((123 + (r >> 1) % 4) << 7) |
                                    ((r >> 8) & 0x7f));
            memcpy(p + 2 * i, &h, 2);
            break;
        }
        case DT_FLOAT8E4M3FN: case DT_FLOAT8E4M3FNUZ: case DT_FLOAT8E5M2:
        case DT_FLOAT8E5M2FNUZ:
            p[i] = (uint8_t)(r & 0x3f);
            break;
        case DT_BOOL: p[i] = (uint8_t)(r & 1); break;
        case DT_INT8: case DT_UINT8: p[i] = (uint8_t)(r % 5); break;
        case DT_INT16: case DT_UINT16: { uint16_t v = (uint16_t)(r % 5); memcpy(p + 2 * i, &v, 2); break; }
        case DT_INT32: case DT_UINT32: { uint32_t v = (uint32_t)(r % 5); memcpy(p + 4 * i, &v, 4); break; }
        case DT_INT64: case DT_UINT64: { uint64_t v = r % 5; memcpy(p + 8 * i, &v, 8); break; }
        default: break;
        }
    }
}

/* A random string tensor: values drawn from a fixed set of static strings, so
** the elements can point at them for as long as the program runs. */
static int random_strings(const int64_t *dims, int32_t rank, uint64_t *s,
                          const eval_env *env, tensor **out, errbuf *err) {
    /* numbers, so a Cast from string has something to parse */
    static const char *const words[] = {"0", "1", "-2.5", "0.125", "3"};
    int rc = tensor_new(DT_STRING, dims, rank, env, out, err);
    if (rc) return rc;
    graph_bytes *v = (graph_bytes *)(void *)(*out)->data;
    for (uint64_t i = 0; i < tensor_numel(*out); i++) {
        const char *w = words[rng_next(s) % 5];
        v[i].data = (const uint8_t *)w;
        v[i].len = strlen(w);
    }
    return TILEOPT_OK;
}

typedef struct verify_run {
    tensor **inputs;
    size_t n_inputs;
    tensor **out_before, **out_after;
    size_t n_before, n_after;
} verify_run;

/* The size each named dim took: a named dim takes one size in every input, the
** first place it occurs deciding. */
typedef struct named_dims {
    const char **name;
    int64_t *size;
    size_t n, cap;
} named_dims;

static const int64_t *named_find(const named_dims *nd, const char *name) {
    for (size_t i = 0; i < nd->n; i++)
        if (strcmp(nd->name[i], name) == 0) return &nd->size[i];
    return NULL;
}

static bool named_add(named_dims *nd, const char *name, int64_t size) {
    if (nd->n == nd->cap) {
        size_t cap = nd->cap ? nd->cap * 2 : 16;
        const char **nv = realloc(nd->name, cap * sizeof *nv);
        if (!nv) return false;
        nd->name = nv;
        int64_t *sv = realloc(nd->size, cap * sizeof *sv);
        if (!sv) return false;
        nd->size = sv;
        nd->cap = cap;
    }
    nd->name[nd->n] = name;
    nd->size[nd->n++] = size;
    return true;
}

/* Inputs for the graph inputs of m, symbolic dims past the leading axis at
** size `inner`; written under "inputs". *why set (and TILEOPT_OK returned) when
** an input's type or rank is unknown. *sized tells whether some dim took
** `inner`. */
static int inputs_sized(tileopt_ctx *ctx, graph_model *m, json_w *w, verify_run *vr,
                        int64_t inner, bool *sized, named_dims *named, char *why,
                        size_t why_cap) {
    graph *g = m->main;
    uint64_t seed = ctx->verify.seed;
    json_key(w, "inputs");
    json_array(w);
    vr->inputs = calloc(g->pb->n_input ? g->pb->n_input : 1, sizeof *vr->inputs);
    if (!vr->inputs) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < g->pb->n_input; i++) {
        const char *name = g->pb->input[i]->name;
        graph_value *v = graph_find(g, name);
        if (!v || v->initializer >= 0) continue;
        const graph_type *ty = &v->type;
        graph_kind kind = graph_type_kind(g->pb->input[i]->type, NULL);
        if (kind != GRAPH_KIND_TENSOR && kind != GRAPH_KIND_NONE) {
            snprintf(why, why_cap, "input '%s' is %s; verify generates tensors only", name,
                     value_kind_name(kind));
            break;
        }
        if (!dtype_valid(ty->elem)) {
            snprintf(why, why_cap, "input '%s' has no known element type", name);
            break;
        }
        if (ty->rank < 0 || ty->rank > TENSOR_MAX_RANK) {
            snprintf(why, why_cap, "input '%s' has no known rank", name);
            break;
        }
        int64_t dims[TENSOR_MAX_RANK];
        /* the dims this input leaves open, each once: its own name or name[axis] */
        char keys[TENSOR_MAX_RANK][256];
        int64_t key_size[TENSOR_MAX_RANK];
        int n_keys = 0;
        for (int32_t k = 0; k < ty->rank; k++) {
            const char *dn = ty->dims[k] < 0 && ty->syms ? ty->syms[k] : NULL;
            const int64_t *seen = dn ? named_find(named, dn) : NULL;
            dims[k] = ty->dims[k] >= 0 ? ty->dims[k]
                      : seen           ? *seen
                      : k == 0         ? VERIFY_DIM
                                       : inner;
            if (dn && !seen && !named_add(named, dn, dims[k]))
                return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
            if (ty->dims[k] < 0 && !seen && k > 0) *sized = true;
            if (ty->dims[k] >= 0) continue;
            char key[256];
            if (ty->syms && ty->syms[k]) snprintf(key, sizeof key, "%s", ty->syms[k]);
            else snprintf(key, sizeof key, "%s[%d]", name, (int)k);
            bool dup = false;
            for (int j = 0; j < n_keys && !dup; j++) dup = strcmp(keys[j], key) == 0;
            if (dup) continue;
            memcpy(keys[n_keys], key, sizeof key);
            key_size[n_keys++] = dims[k];
        }
        json_object(w);
        json_put_str(w, "name", name);
        json_put_str(w, "dtype", dtype_name(ty->elem));
        json_key(w, "shape");
        json_array(w);
        for (int32_t k = 0; k < ty->rank; k++) json_num(w, (double)dims[k]);
        json_end(w);
        if (n_keys) {
            json_key(w, "symbolic");
            json_object(w);
            for (int j = 0; j < n_keys; j++) json_put_num(w, keys[j], (double)key_size[j]);
            json_end(w);
        }
        json_end(w);
        tensor *t = NULL;
        int rc;
        if (ty->elem == DT_STRING) {
            eval_env env = api_eval_env(ctx, NULL);
            rc = random_strings(dims, ty->rank, &seed, &env, &t, &ctx->err);
        } else {
            eval_env env = api_eval_env(ctx, NULL);
            rc = tensor_new(ty->elem, dims, ty->rank, &env, &t, &ctx->err);
            if (!rc) fill_random(t, &seed);
        }
        if (rc) return err_prefix(&ctx->err, "input '%s': ", name);
        vr->inputs[vr->n_inputs++] = t;
    }
    json_end(w);
    return TILEOPT_OK;
}

static int make_inputs(tileopt_ctx *ctx, graph_model *m, json_w *w, verify_run *vr,
                       int64_t inner, bool *sized, char *why, size_t why_cap) {
    named_dims named = {0};
    int rc = inputs_sized(ctx, m, w, vr, inner, sized, &named, why, why_cap);
    free(named.name);
    free(named.size);
    return rc;
}

static void verify_free(verify_run *vr) {
    for (size_t i = 0; i < vr->n_inputs; i++) tensor_free(vr->inputs[i]);
    for (size_t i = 0; i < vr->n_before; i++) tensor_free(vr->out_before[i]);
    for (size_t i = 0; i < vr->n_after; i++) tensor_free(vr->out_after[i]);
    free(vr->inputs);
    free(vr->out_before);
    free(vr->out_after);
}

/* The ops of the comma-separated lists of eval_missing_ops, each once, into
** ops (a comma-separated list too). */
static void add_ops(char *ops, size_t cap, const char *list) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        bool dup = false;
        char seen[2048];
        snprintf(seen, sizeof seen, "%s", ops);
        for (char *s2 = NULL, *o = strtok_r(seen, ",", &s2); o && !dup; o = strtok_r(NULL, ",", &s2))
            dup = strcmp(o, tok) == 0;
        size_t len = strlen(ops);
        if (!dup) snprintf(ops + len, cap - len, "%s%s", len ? "," : "", tok);
    }
}

/* Where the verify section sits in the report: a member of its top object. */
#define VERIFY_DEPTH 1

static const char *const verdict_names[] = {
    [TILEOPT_VERDICT_NONE] = "none",
    [TILEOPT_VERDICT_MATCH] = "match",
    [TILEOPT_VERDICT_MISMATCH] = "mismatch",
    [TILEOPT_VERDICT_SKIPPED] = "skipped",
};
_Static_assert(countof(verdict_names) == TILEOPT_VERDICT_SKIPPED + 1, "one name per verdict");

const char *tileopt_verdict_str(tileopt_verdict verdict) {
    return (unsigned)verdict < countof(verdict_names) ? verdict_names[verdict] : "none";
}

tileopt_status tileopt_model_verify(tileopt_ctx *ctx, tileopt_model *before,
                                    tileopt_model *after) {
    if (!before || !after)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_model_verify: NULL model"});
    api_verify_clear(&ctx->report.verify);
    pass_text t = {0};
    json_w w;
    json_init(&w, &t, true, VERIFY_DEPTH);
    json_object(&w);
    json_put_num(&w, "seed", (double)ctx->verify.seed);
    verify_run vr = {0};
    int rc = TILEOPT_OK;
    char why[4096] = "";
    tileopt_verdict verdict = TILEOPT_VERDICT_MATCH;

    char m1[1024], m2[1024];
    size_t n1 = eval_missing_ops(before->g, m1, sizeof m1);
    size_t n2 = eval_missing_ops(after->g, m2, sizeof m2);
    if (n1 + n2) {
        char ops[2048] = "";
        add_ops(ops, sizeof ops, m1);
        add_ops(ops, sizeof ops, m2);
        json_key(&w, "ops");
        json_array(&w);
        char list[2048];
        snprintf(list, sizeof list, "%s", ops);
        for (char *save = NULL, *o = strtok_r(list, ",", &save); o; o = strtok_r(NULL, ",", &save))
            json_str(&w, o);
        json_end(&w);
        verdict = TILEOPT_VERDICT_SKIPPED;
        /* each op named once, whether the input or the output holds it */
        size_t k = (size_t)snprintf(why, sizeof why, "the evaluator lacks ");
        snprintf(list, sizeof list, "%s", ops);
        bool first = true;
        for (char *save = NULL, *o = strtok_r(list, ",", &save); o && k < sizeof why;
             o = strtok_r(NULL, ",", &save), first = false)
            k += (size_t)snprintf(why + k, sizeof why - k, "%s%s", first ? "" : ", ", o);
        goto done;
    }
    errbuf e;
    /* each attempt writes "inputs" anew, from here */
    size_t inputs_at = t.len;
    json_w before_inputs = w;
    for (size_t attempt = 0;; attempt++) {
        bool sized = false;
        if (!t.failed) t.len = inputs_at;
        w = before_inputs;
        verify_free(&vr);
        memset(&vr, 0, sizeof vr);
        rc = make_inputs(ctx, before->g, &w, &vr, verify_sizes[attempt], &sized, why,
                         sizeof why);
        if (rc) goto done;
        if (why[0]) {
            verdict = TILEOPT_VERDICT_SKIPPED;
            goto done;
        }
        err_clear(&e);
        eval_env env = api_eval_env(ctx, "verify: input model");
        if (!eval_graph(before->g, vr.inputs, vr.n_inputs, &vr.out_before, &vr.n_before, &env,
                        &e))
            break;
        if (!sized || attempt + 1 == countof(verify_sizes)) {
            /* Random inputs need not be valid for every model (data-dependent
            ** shapes, indices): no verdict either way. */
            verdict = TILEOPT_VERDICT_SKIPPED;
            snprintf(why, sizeof why, "the input model does not run on generated inputs "
                     "(--input-shape fixes their dims): %s", e.msg);
            goto done;
        }
    }
    eval_env env = api_eval_env(ctx, "verify: output model");
    if (eval_graph(after->g, vr.inputs, vr.n_inputs, &vr.out_after, &vr.n_after, &env, &e)) {
        verdict = TILEOPT_VERDICT_MISMATCH;
        snprintf(why, sizeof why, "the output model fails where the input model runs: %s",
                 e.msg);
        rc = err_set(&ctx->err, TILEOPT_MISMATCH, "%s", why);
        goto done;
    }
    if (vr.n_before != vr.n_after) {
        verdict = TILEOPT_VERDICT_MISMATCH;
        snprintf(why, sizeof why, "the input model has %zu outputs, the output model %zu",
                 vr.n_before, vr.n_after);
        rc = err_set(&ctx->err, TILEOPT_MISMATCH, "%s", why);
        goto done;
    }
    json_key(&w, "outputs");
    json_array(&w);
    Onnx__GraphProto *pb = after->g->main->pb;
    for (size_t i = 0; i < vr.n_after; i++) {
        tensor_diff d;
        if (tensor_compare(vr.out_before[i], vr.out_after[i], COMPARE_RTOL, COMPARE_ATOL, &d,
                           &ctx->err)) {
            rc = ctx->err.code;
            goto done;
        }
        bool ok = d.same_shape && d.n_bad == 0;
        json_object(&w);
        json_put_str(&w, "name", pb->output[i]->name);
        json_key(&w, "max_abs_diff");
        if (d.same_shape) json_num(&w, d.max_abs);
        else json_null(&w);
        json_key(&w, "max_rel_diff");
        if (d.same_shape) json_num(&w, d.max_rel);
        else json_null(&w);
        json_put_bool(&w, "match", ok);
        if (ok) {
            json_end(&w);
            continue;
        }
        char msg[768], where[48] = "";
        const tensor *tb = vr.out_before[i], *ta = vr.out_after[i];
        if (d.bad_item >= 0) snprintf(where, sizeof where, " in item %" PRId64, d.bad_item);
        if (!d.same_shape && (tb->kind != EVAL_TENSOR || ta->kind != EVAL_TENSOR)) {
            char sb[256], sa[256];
            api_shape_text(tb, sb, sizeof sb);
            api_shape_text(ta, sa, sizeof sa);
            snprintf(msg, sizeof msg, "output '%s': %s vs %s%s", pb->output[i]->name, sb, sa,
                     where);
        } else if (!d.same_shape)
            snprintf(msg, sizeof msg, "output '%s': type or shape differs (%s rank %d vs %s rank %d)",
                     pb->output[i]->name, dtype_name(vr.out_before[i]->elem),
                     (int)vr.out_before[i]->rank, dtype_name(vr.out_after[i]->elem),
                     (int)vr.out_after[i]->rank);
        else
            snprintf(msg, sizeof msg,
                     "output '%s': %" PRIu64 " elements differ, first%s at index %" PRIu64
                     ": expected %s, got %s",
                     pb->output[i]->name, d.n_bad, where, d.first_bad, d.expected, d.actual);
        json_put_str(&w, "reason", msg);
        json_end(&w);
        if (verdict != TILEOPT_VERDICT_MISMATCH) {
            verdict = TILEOPT_VERDICT_MISMATCH;
            snprintf(why, sizeof why, "%s", msg);
            rc = err_set(&ctx->err, TILEOPT_MISMATCH, "%s", msg);
        }
    }
    json_end(&w);
done:;
    bool has_verdict = rc == TILEOPT_OK || rc == TILEOPT_MISMATCH;
    if (has_verdict) {
        json_put_str(&w, "verdict", tileopt_verdict_str(verdict));
        if (why[0]) json_put_str(&w, "reason", why);
    }
    /* the section as far as it got, closed */
    while (w.depth) json_end(&w);
    if (rc == TILEOPT_OK && ctx->verify.strict && verdict == TILEOPT_VERDICT_SKIPPED)
        rc = err_set(&ctx->err, TILEOPT_UNSUPPORTED, "no verdict (--verify=strict): %s", why);
    api_verify *v = &ctx->report.verify;
    v->json = api_text_finish(&t);
    v->verdict = has_verdict ? verdict : TILEOPT_VERDICT_NONE;
    v->reason = has_verdict && why[0] ? strdup(why) : NULL;
    if (!v->json || (has_verdict && why[0] && !v->reason)) {
        api_verify_clear(v);
        if (rc == TILEOPT_OK || rc == TILEOPT_MISMATCH)
            rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    verify_free(&vr);
    return rc ? ctx_fail(ctx, &ctx->err) : TILEOPT_OK;
}

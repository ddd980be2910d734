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
** axis (the batch, for every exporter) is API_RANDOM_DIM; the other axes take
** the sizes below in turn until the input model runs, since sequences and
** images shorter than a model's kernels and strides make it fail (an audio
** model's framing convolution, an OCR model's width). --verify-shape N gives
** them all one size instead. */
static const int64_t verify_sizes[] = {API_RANDOM_DIM, 64, 512};

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
    /* a missing or mis-shaped input is reported at the input, with what the
    ** model declares, not deep inside the graph */
    if (n_inputs != tileopt_model_input_count(model))
        rc = api_inputs_missing(g, n_inputs, &ctx->err);
    for (size_t i = 0; i < g->pb->n_input && k < n_inputs && !rc; i++) {
        graph_value *v = graph_find(g, g->pb->input[i]->name);
        if (v && v->initializer >= 0) continue;
        tensor *t = inputs[k] ? inputs[k]->t : NULL;
        if (t && v) rc = api_check_input(v, g->pb->input[i], t, &ctx->err);
        in[k] = t && !rc ? tensor_ref(t) : NULL;
        if (t && !rc && !in[k]) rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
        else if (t && !rc && v && api_bits_for(v->type.elem, t)) in[k]->elem = v->type.elem;
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

typedef struct verify_run {
    tensor **inputs;
    size_t n_inputs;
    tensor **out_before, **out_after;
    size_t n_before, n_after;
} verify_run;

static void verify_free(verify_run *vr) {
    for (size_t i = 0; i < vr->n_inputs; i++) tensor_free(vr->inputs[i]);
    for (size_t i = 0; i < vr->n_before; i++) tensor_free(vr->out_before[i]);
    for (size_t i = 0; i < vr->n_after; i++) tensor_free(vr->out_after[i]);
    free(vr->inputs);
    free(vr->out_before);
    free(vr->out_after);
}

/* The name of the i-th input a run binds (no initializer). */
static const char *bound_name(graph *g, size_t i) {
    for (size_t k = 0, j = 0; k < g->pb->n_input; k++) {
        graph_value *v = graph_find(g, g->pb->input[k]->name);
        if (v && v->initializer >= 0) continue;
        if (j++ == i) return g->pb->input[k]->name;
    }
    return "";
}

/* Each input file's tensor under "inputs": name, element type, shape, file. */
static void inputs_json(json_w *w, graph *g, const verify_run *vr, char *const *from) {
    json_key(w, "inputs");
    json_array(w);
    for (size_t i = 0; i < vr->n_inputs; i++) {
        const tensor *t = vr->inputs[i];
        json_object(w);
        json_put_str(w, "name", bound_name(g, i));
        if (t->kind == EVAL_TENSOR) {
            json_put_str(w, "dtype", dtype_name(t->elem));
            json_put_ints(w, "shape", t->dims, (size_t)t->rank);
        }
        json_put_str(w, "file", from[i]);
        json_end(w);
    }
    json_end(w);
}

/* What the summary says of the inputs: "x FLOAT [1,3,64,64] (x.npy), ...", or
** "random (seed 1): ...". */
static int inputs_text(tileopt_ctx *ctx, graph *g, const verify_run *vr, char *const *from) {
    api_verify *v = &ctx->report.verify;
    free(v->inputs);
    v->inputs = NULL;
    char buf[4096];
    size_t k = from ? 0 : (size_t)snprintf(buf, sizeof buf, "random (seed %" PRIu64 "): ",
                                           ctx->verify.seed);
    buf[k] = '\0';
    for (size_t i = 0; i < vr->n_inputs && k < sizeof buf; i++) {
        char shape[256];
        api_shape_text(vr->inputs[i], shape, sizeof shape);
        const char *name = bound_name(g, i);
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s %s%s%s%s", i ? ", " : "", name,
                              shape, from ? " (" : "", from ? from[i] : "", from ? ")" : "");
    }
    if (!vr->n_inputs) snprintf(buf + k, sizeof buf - k, "no inputs");
    v->inputs = strdup(buf);
    return v->inputs ? TILEOPT_OK : err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
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

/*
** The passes that changed the model and round otherwise than the original
** (pass_def.rounds), as a hint for a mismatch: where an output cancels to near
** zero, a fold's rounding alone can pass the tolerance. "" when none acted.
*/
static void rounding_hint(const tileopt_ctx *ctx, char *buf, size_t cap) {
    char names[128] = "";
    size_t n = 0, used = 0;
    for (size_t i = 0; i < ctx->results.n; i++) {
        const pass_entry *e = &ctx->results.v[i];
        const pass_def *p = pass_find(e->name);
        if (!p || !p->rounds || !e->stat[TILEOPT_PASS_NODES_CHANGED] || strstr(names, e->name))
            continue;
        int k = snprintf(names + used, sizeof names - used, "%s%s", n ? "," : "", e->name);
        if (k < 0 || (size_t)k >= sizeof names - used) break;
        used += (size_t)k;
        n++;
    }
    buf[0] = '\0';
    if (n)
        snprintf(buf, cap, "; %s %s otherwise than the original, which ONNX Runtime fuses "
                 "the same way (--skip-passes %s keeps the original's sums)", names,
                 n == 1 ? "rounds" : "round", names);
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
    err_clear(&e);
    char **from = NULL;
    if (ctx->verify.n_files) {
        rc = api_inputs_from_files(ctx, before->g->main, (const char *const *)ctx->verify.files,
                                   ctx->verify.n_files, &vr.inputs, &from, &vr.n_inputs);
        if (rc) {
            err_prefix(&ctx->err, "--verify-inputs: ");
            goto done;
        }
        json_put_str(&w, "source", "files");
        inputs_json(&w, before->g->main, &vr, from);
        rc = inputs_text(ctx, before->g->main, &vr, from);
        for (size_t i = 0; i < vr.n_inputs; i++) free(from[i]);
        free(from);
        if (rc) goto done;
        eval_env env = api_eval_env(ctx, "verify: input model");
        if (eval_graph(before->g, vr.inputs, vr.n_inputs, &vr.out_before, &vr.n_before, &env,
                       &e)) {
            verdict = TILEOPT_VERDICT_SKIPPED;
            snprintf(why, sizeof why, "the input model fails on the given inputs: %s", e.msg);
            goto done;
        }
    } else {
        json_put_str(&w, "source", "random");
        /* each attempt writes "inputs" anew, from here */
        size_t inputs_at = t.len;
        json_w before_inputs = w;
        size_t attempts = ctx->verify.dim_given ? 1 : countof(verify_sizes);
        for (size_t attempt = 0;; attempt++) {
            bool sized = false;
            if (!t.failed) t.len = inputs_at;
            w = before_inputs;
            verify_free(&vr);
            memset(&vr, 0, sizeof vr);
            int64_t lead = ctx->verify.dim_given ? ctx->verify.dim : API_RANDOM_DIM;
            int64_t inner = ctx->verify.dim_given ? ctx->verify.dim : verify_sizes[attempt];
            rc = api_random_inputs(ctx, before->g->main, lead, inner, &w, &vr.inputs,
                                   &vr.n_inputs, &sized, why, sizeof why);
            if (!rc) rc = inputs_text(ctx, before->g->main, &vr, NULL);
            if (rc) goto done;
            if (why[0]) {
                verdict = TILEOPT_VERDICT_SKIPPED;
                goto done;
            }
            err_clear(&e);
            eval_env env = api_eval_env(ctx, "verify: input model");
            if (!eval_graph(before->g, vr.inputs, vr.n_inputs, &vr.out_before, &vr.n_before,
                            &env, &e))
                break;
            if (!sized || attempt + 1 == attempts) {
                /* Random inputs need not be valid for every model (data-dependent
                ** shapes, indices, a sample rate): no verdict either way. */
                verdict = TILEOPT_VERDICT_SKIPPED;
                snprintf(why, sizeof why, "the input model does not run on generated inputs "
                         "(--verify-inputs gives real ones; --input-shape or --verify-shape "
                         "their dims): %s", e.msg);
                goto done;
            }
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
        char msg[1280], where[48] = "";
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
        else {
            char hint[512];
            rounding_hint(ctx, hint, sizeof hint);
            snprintf(msg, sizeof msg,
                     "output '%s': %" PRIu64 " elements differ, first%s at index %" PRIu64
                     ": expected %s, got %s%s",
                     pb->output[i]->name, d.n_bad, where, d.first_bad, d.expected, d.actual,
                     hint);
        }
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
    if (!has_verdict) {
        free(v->inputs);
        v->inputs = NULL;
    }
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

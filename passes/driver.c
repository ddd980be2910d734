/*
** The driver: runs passes on a model and says what each run did, as plain data
** (pass_results) that the API turns into the report. Every run is bracketed
** by a snapshot of the model, so whatever a pass changed without an action
** naming it still reaches its entry.
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/pass.h"

void pass_results_clear(pass_results *r) {
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].actions);
        free(r->v[i].changes);
        free(r->v[i].error);
    }
    free(r->v);
    pass_strings_clear(&r->warnings);
    *r = (pass_results){0};
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Run p as the given round. *woke tells whether the passes its row wakes have
** work now. */
static int run_pass(graph_model *m, const pass_run_env *env, const pass_def *p, int round,
                    pass_results *out, bool *woke, errbuf *err) {
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 8;
        pass_entry *v = realloc(out->v, cap * sizeof *v);
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        out->v = v;
        out->cap = cap;
    }
    pass_log *log = pass_log_new();
    if (!log) return err_set(err, TILEOPT_NOMEM, "out of memory");
    pass_entry *e = &out->v[out->n++];
    *e = (pass_entry){.name = p->name};
    e->stat[TILEOPT_PASS_ROUND] = (uint64_t)round;
    bool warn_failed = out->warnings.failed; /* a warning dropped before is not this run's */
    pass_ctx pc = {
        .model = m,
        .opt = env->opt,
        .log = log,
        .warnings = &out->warnings,
        .err = err,
        .eval = eval_env_of(&env->opt->lim, env->progress, NULL),
    };
    err_clear(err);
    double t0 = now_ms();
    /* a model without the pass's ops gives it nothing to do or change */
    bool idle = p->n_ops && !op_model_has(m, p->ops, p->n_ops);
    pass_snapshot *snap = NULL;
    int rc = idle ? TILEOPT_OK : pass_snapshot_take(m, &snap);
    if (rc) {
        err_set(err, rc, "out of memory");
    } else if (!idle) {
        rc = p->run(&pc);
        tbuf_cache_drop();
        if (!rc && (rc = pass_snapshot_report(snap, &pc, &e->changes, e->stat)))
            err_set(err, rc, "out of memory");
        pass_snapshot_free(snap);
    }
    if (pc.changed || e->changes) m->shapes_current = m->op_present_current = false;
    size_t n_changed = 0, n_skipped = 0;
    int lrc = pass_log_finish(log, &e->actions, &n_changed, &n_skipped);
    pass_log_free(log);
    /* the entry and the warnings are whole, or the run fails */
    if (!rc && (lrc || (out->warnings.failed && !warn_failed)))
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    e->duration_ms = now_ms() - t0;
    e->stat[TILEOPT_PASS_CHANGED] = pc.changed;
    e->stat[TILEOPT_PASS_NODES_CHANGED] = n_changed;
    e->stat[TILEOPT_PASS_NODES_SKIPPED] = n_skipped;
    if (rc) {
        e->error = strdup(err->msg);
        return rc;
    }
    *woke = p->wakes && (p->wake_on_change ? pc.changed : pc.wake);
    return TILEOPT_OK;
}

/* Is name one of the comma-separated names of list? */
static bool wakes(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *s = list; s && *s;) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == len && memcmp(s, name, n) == 0) return true;
        s = end ? end + 1 : NULL;
    }
    return false;
}

int pass_run_one(graph_model *m, const pass_run_env *env, const pass_def *p, pass_results *out,
                 errbuf *err) {
    bool woke;
    return run_pass(m, env, p, 1, out, &woke, err);
}

int pass_pipeline(graph_model *m, const pass_run_env *env, const pass_def *const *list,
                  size_t n, pass_results *out, errbuf *err) {
    /* pending[i]: list[i] has work a run after it made; a pass woken by one
    ** that comes before it in the list runs in the same round anyway */
    bool *pending = calloc(n ? n : 1, sizeof *pending);
    if (!pending) return err_set(err, TILEOPT_NOMEM, "out of memory");
    bool again = true;
    int rc = TILEOPT_OK;
    for (int round = 1; !rc && again && round <= PASS_ROUNDS; round++) {
        again = false;
        for (size_t i = 0; !rc && i < n; i++) {
            if (round > 1 && !pending[i]) continue;
            pending[i] = false;
            bool woke = false;
            rc = run_pass(m, env, list[i], round, out, &woke, err);
            if (rc) {
                err_prefix(err, "pass %s: ", list[i]->name);
                break;
            }
            for (size_t k = 0; woke && k < n; k++) {
                if (!wakes(list[i]->wakes, list[k]->name)) continue;
                pending[k] = true;
                again |= k <= i;
            }
        }
    }
    free(pending);
    return rc;
}

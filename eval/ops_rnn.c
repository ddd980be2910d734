/*
** Recurrent layers: RNN, GRU and LSTM, every direction, sequence lengths,
** initial states, peepholes, clip, input_forget, linear_before_reset, the
** activation functions the schemas name with their alpha/beta, and layout=1
** (batch first). Computed in double: the input projections of every step at
** once through BLAS, then one step at a time.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

typedef enum { CELL_RNN, CELL_GRU, CELL_LSTM } cell_kind;

/* ------------------------------------------------------------- activations */

typedef enum {
    ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKY, ACT_THRESH, ACT_SCALED_TANH,
    ACT_HARD_SIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS, ACT_COUNT
} act_id;

static const struct {
    const char *name;
    int params;              /* alpha/beta values it takes from the lists */
    float alpha, beta;       /* defaults when the lists run short */
} act_table[ACT_COUNT] = {
    [ACT_RELU] = {"Relu", 0, 0, 0},          [ACT_TANH] = {"Tanh", 0, 0, 0},
    [ACT_SIGMOID] = {"Sigmoid", 0, 0, 0},    [ACT_AFFINE] = {"Affine", 2, 1, 0},
    [ACT_LEAKY] = {"LeakyRelu", 1, 0.01f, 0}, [ACT_THRESH] = {"ThresholdedRelu", 1, 1, 0},
    [ACT_SCALED_TANH] = {"ScaledTanh", 2, 1, 1}, [ACT_HARD_SIGMOID] = {"HardSigmoid", 2, 0.2f, 0.5f},
    [ACT_ELU] = {"Elu", 1, 1, 0},            [ACT_SOFTSIGN] = {"Softsign", 0, 0, 0},
    [ACT_SOFTPLUS] = {"Softplus", 0, 0, 0},
};

typedef struct act {
    act_id id;
    double alpha, beta;
} act;

static double act_apply(const act *a, double x) {
    switch (a->id) {
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_TANH: return tanh(x);
    case ACT_SIGMOID: return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_LEAKY: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESH: return x > a->alpha ? x : 0;
    case ACT_SCALED_TANH: return a->alpha * tanh(a->beta * x);
    case ACT_HARD_SIGMOID: {
        double y = a->alpha * x + a->beta;
        return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case ACT_ELU: return x >= 0 ? x : a->alpha * expm1(x);
    case ACT_SOFTSIGN: return x / (1 + fabs(x));
    default: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    }
}

/* The nf activations of each direction: the attribute's, else the defaults. */
static int read_acts(const Onnx__NodeProto *n, cell_kind kind, int dirs, act *acts,
                     errbuf *err) {
    static const act_id defaults[3][3] = {
        [CELL_RNN] = {ACT_TANH}, [CELL_GRU] = {ACT_SIGMOID, ACT_TANH},
        [CELL_LSTM] = {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
    int nf = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 2 : 3;
    const Onnx__AttributeProto *names = graph_attr(n, "activations");
    const Onnx__AttributeProto *al = graph_attr(n, "activation_alpha");
    const Onnx__AttributeProto *be = graph_attr(n, "activation_beta");
    size_t ia = 0, ib = 0;
    if (names && names->n_strings && names->n_strings != (size_t)(nf * dirs) &&
        names->n_strings != (size_t)nf)
        return err_set(err, TILEOPT_INVALID, "%zu activations for %d", names->n_strings,
                       nf * dirs);
    for (int i = 0; i < nf * dirs; i++) {
        act *a = &acts[i];
        a->id = defaults[kind][i % nf];
        if (names && names->n_strings) {
            const ProtobufCBinaryData *s = &names->strings[(size_t)i % names->n_strings];
            int id = ACT_COUNT;
            for (int k = 0; k < ACT_COUNT; k++)
                if (strlen(act_table[k].name) == s->len &&
                    !strncasecmp((const char *)s->data, act_table[k].name, s->len))
                    id = k;
            if (id == ACT_COUNT)
                return err_set(err, TILEOPT_UNSUPPORTED, "activation '%.*s'", (int)s->len,
                               (const char *)s->data);
            a->id = (act_id)id;
        }
        a->alpha = act_table[a->id].alpha;
        a->beta = act_table[a->id].beta;
        if (act_table[a->id].params >= 1 && al && ia < al->n_floats) a->alpha = al->floats[ia++];
        if (act_table[a->id].params >= 2 && be && ib < be->n_floats) a->beta = be->floats[ib++];
    }
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------ the op */

typedef struct rnn_io {
    int64_t seq, batch, in_size, hidden;
    int dirs, gates;
    const double *x, *w, *r, *b, *p, *h0, *c0; /* b, p, h0, c0 may be NULL */
    const int64_t *lens;                         /* NULL: every sequence is full */
    double *y, *yh, *yc;                         /* y, yc may be NULL */
} rnn_io;

static double clipped(double v, double clip) {
    return clip > 0 ? (v > clip ? clip : v < -clip ? -clip : v) : v;
}

/* Direction d (its slot in the weights and in Y) over the whole sequence,
** backwards when reverse. xw: X W^T + Wb for every step, [seq*batch,
** gates*hidden]; h and c: the state, updated in place. */
static void run_direction(const rnn_io *io, cell_kind kind, int d, bool reverse,
                          const act *acts, double clip, bool input_forget, bool lbr,
                          const double *xw, double *h, double *c, double *hr, double *tmp) {
    int64_t H = io->hidden, B = io->batch, G = io->gates;
    const double *r = io->r + (size_t)d * (size_t)(G * H * H);
    const double *rb = io->b ? io->b + (size_t)d * (size_t)(2 * G * H) + G * H : NULL;
    const double *p = io->p ? io->p + (size_t)d * (size_t)(3 * H) : NULL;
    const act *f = &acts[0], *g = &acts[1], *hh = &acts[2];
    for (int64_t step = 0; step < io->seq; step++) {
        /* hr = H R^T (for GRU without linear_before_reset, the h gate waits for r) */
        nn_gemm(DT_DOUBLE, false, true, B, G * H, H, 1.0, h, H, r, H, 0.0, hr, G * H);
        for (int64_t bi = 0; bi < B; bi++) {
            int64_t len = io->lens ? io->lens[bi] : io->seq;
            if (step >= len) continue;
            int64_t t = reverse ? len - 1 - step : step;
            const double *xg = xw + (size_t)(t * B + bi) * (size_t)(G * H);
            double *hg = hr + (size_t)bi * (size_t)(G * H), *hb = h + bi * H;
            double *cb = c ? c + bi * H : NULL;
            for (int64_t j = 0; j < H; j++) {
#define RB(k) (rb ? rb[(k) * H + j] : 0)
                if (kind == CELL_RNN) {
                    tmp[j] = act_apply(f, clipped(xg[j] + hg[j] + RB(0), clip));
                } else if (kind == CELL_LSTM) {
                    double ci = cb[j];
                    double gi = xg[j] + hg[j] + RB(0) + (p ? p[j] * ci : 0);
                    double gf = xg[2 * H + j] + hg[2 * H + j] + RB(2) + (p ? p[2 * H + j] * ci : 0);
                    double gc = xg[3 * H + j] + hg[3 * H + j] + RB(3);
                    double it = act_apply(f, clipped(gi, clip));
                    double ft = input_forget ? 1 - it : act_apply(f, clipped(gf, clip));
                    double ct = ft * ci + it * act_apply(g, clipped(gc, clip));
                    double go = xg[H + j] + hg[H + j] + RB(1) + (p ? p[H + j] * ct : 0);
                    tmp[j] = act_apply(f, clipped(go, clip)) * act_apply(hh, ct);
                    tmp[H + j] = ct;
                } else {
                    double z = act_apply(f, clipped(xg[j] + hg[j] + RB(0), clip));
                    double rr = act_apply(f, clipped(xg[H + j] + hg[H + j] + RB(1), clip));
                    tmp[j] = z;
                    tmp[H + j] = rr;
                }
            }
            if (kind == CELL_GRU) {
                /* h gate: (r . H) R_h^T before the reset, or r . (H R_h^T + Rb_h) */
                const double *rh = r + (size_t)(2 * H * H);
                for (int64_t j = 0; j < H; j++) {
                    double acc;
                    if (lbr) {
                        acc = tmp[H + j] * (hg[2 * H + j] + RB(2));
                    } else {
                        acc = RB(2);
                        for (int64_t q = 0; q < H; q++) acc += tmp[H + q] * hb[q] * rh[j * H + q];
                    }
                    double ht = act_apply(g, clipped(xg[2 * H + j] + acc, clip));
                    tmp[2 * H + j] = (1 - tmp[j]) * ht + tmp[j] * hb[j];
                }
                for (int64_t j = 0; j < H; j++) hb[j] = tmp[2 * H + j];
            } else {
                for (int64_t j = 0; j < H; j++) hb[j] = tmp[j];
                if (cb)
                    for (int64_t j = 0; j < H; j++) cb[j] = tmp[H + j];
            }
#undef RB
            if (io->y) {
                /* Y [seq, dirs, batch, hidden] */
                double *yt = io->y + (size_t)(((t * io->dirs + d) * B + bi) * H);
                memcpy(yt, hb, (size_t)H * sizeof *hb);
            }
        }
    }
}

static int rnn(const Onnx__NodeProto *n, int64_t opset, cell_kind kind, tensor *const *in,
               size_t n_in, tensor **out, size_t n_out, const eval_env *env, errbuf *err) {
    const char *nm = eval_node_name(n);
    if (n_in < 3 || !in[0] || !in[1] || !in[2])
        return err_set(err, TILEOPT_INVALID, "%s %s: needs X, W and R", n->op_type, nm);
    tensor *X = in[0];
    int32_t elem = X->elem;
    bool batch_first = opset >= 14 && graph_attr_int(n, "layout", 0);
    int64_t hidden = graph_attr_int(n, "hidden_size", 0);
    const Onnx__AttributeProto *da = graph_attr(n, "direction");
    int dirs = 1;
    bool reverse = false;
    if (da && da->s.len) {
        if (da->s.len == 13 && !memcmp(da->s.data, "bidirectional", 13)) dirs = 2;
        else if (da->s.len == 7 && !memcmp(da->s.data, "reverse", 7)) reverse = true;
        else if (!(da->s.len == 7 && !memcmp(da->s.data, "forward", 7)))
            return err_set(err, TILEOPT_INVALID, "%s %s: direction '%.*s'", n->op_type, nm,
                           (int)da->s.len, (const char *)da->s.data);
    }
    int gates = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 3 : 4;
    if (X->rank != 3 || in[1]->rank != 3 || in[2]->rank != 3)
        return err_set(err, TILEOPT_INVALID, "%s %s: X, W and R must be 3-D, not of ranks "
                       "%d, %d, %d", n->op_type, nm, (int)X->rank, (int)in[1]->rank,
                       (int)in[2]->rank);
    /* hidden_size is optional: R is [directions, gates*hidden, hidden] */
    if (!graph_attr(n, "hidden_size")) hidden = in[2]->dims[2];
    if (hidden < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: hidden size %lld", n->op_type, nm,
                       (long long)hidden);
    rnn_io io = {.seq = X->dims[batch_first ? 1 : 0], .batch = X->dims[batch_first ? 0 : 1],
                 .in_size = X->dims[2], .hidden = hidden, .dirs = dirs, .gates = gates};
    int64_t GH = gates * hidden;
    if (in[1]->dims[0] != dirs || in[1]->dims[1] != GH || in[1]->dims[2] != io.in_size ||
        in[2]->dims[0] != dirs || in[2]->dims[1] != GH || in[2]->dims[2] != hidden)
        return err_set(err, TILEOPT_INVALID, "%s %s: W or R does not fit X and hidden_size",
                       n->op_type, nm);
    act acts[6];
    int nf = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 2 : 3;
    int rc = read_acts(n, kind, dirs, acts, err);
    if (rc) return err_prefix(err, "%s %s: ", n->op_type, nm);
    double clip = graph_attr(n, "clip") ? graph_attr_float(n, "clip", 0) : 0;
    bool input_forget = kind == CELL_LSTM && graph_attr_int(n, "input_forget", 0);
    bool lbr = kind == CELL_GRU && graph_attr_int(n, "linear_before_reset", 0);
    /* the optional inputs: B, sequence_lens, initial_h, initial_c, P */
    tensor *t[8] = {NULL}, *y = NULL, *yh = NULL, *yc = NULL;
    double *xw = NULL, *hr = NULL, *tmp = NULL, *state_h = NULL, *state_c = NULL;
    int64_t *lv = NULL;
    int idx_b = 3, idx_len = 4, idx_h0 = 5, idx_c0 = 6, idx_p = 7;
    for (int i = 0; i < 8 && !rc; i++) {
        if ((size_t)i >= n_in || !in[i] || i == idx_len) continue;
        if ((i == idx_c0 || i == idx_p) && kind != CELL_LSTM) continue;
        rc = eval_cast(in[i], DT_DOUBLE, env, &t[i], err);
    }
    for (int i = idx_h0; !rc && batch_first && i <= idx_c0; i++) {
        /* batch first: initial states are [batch, directions, hidden] */
        if (!t[i] || t[i]->rank != 3) continue;
        tensor *st;
        int64_t d[3] = {t[i]->dims[1], t[i]->dims[0], t[i]->dims[2]};
        rc = tensor_alloc(DT_DOUBLE, d, 3, env, &st, err);
        for (int64_t bi = 0; !rc && bi < d[1]; bi++)
            for (int64_t di = 0; di < d[0]; di++)
                memcpy((double *)(void *)st->data + (di * d[1] + bi) * d[2],
                       (double *)(void *)t[i]->data + (bi * d[0] + di) * d[2],
                       (size_t)d[2] * sizeof(double));
        if (!rc) {
            tensor_free(t[i]);
            t[i] = st;
        }
    }
    if (!rc && batch_first) {
        /* X [batch, seq, in] -> [seq, batch, in] by a copy */
        tensor *xt;
        int64_t d[3] = {io.seq, io.batch, io.in_size};
        rc = tensor_alloc(DT_DOUBLE, d, 3, env, &xt, err);
        for (int64_t s = 0; !rc && s < io.seq; s++)
            for (int64_t bi = 0; bi < io.batch; bi++)
                memcpy((double *)(void *)xt->data + (s * io.batch + bi) * io.in_size,
                       (double *)(void *)t[0]->data + (bi * io.seq + s) * io.in_size,
                       (size_t)io.in_size * sizeof(double));
        if (!rc) {
            tensor_free(t[0]);
            t[0] = xt;
        }
    }
    if (rc) goto done;
    if (t[idx_b] && (int64_t)tensor_numel(t[idx_b]) != dirs * 2 * GH) {
        rc = err_set(err, TILEOPT_INVALID, "B needs %lld values", (long long)(dirs * 2 * GH));
        goto done;
    }
    if (t[idx_p] && (int64_t)tensor_numel(t[idx_p]) != dirs * 3 * hidden) {
        rc = err_set(err, TILEOPT_INVALID, "P needs %lld values", (long long)(dirs * 3 * hidden));
        goto done;
    }
    for (int i = idx_h0; i <= idx_c0; i++)
        if (t[i] && (int64_t)tensor_numel(t[i]) != dirs * io.batch * hidden) {
            rc = err_set(err, TILEOPT_INVALID, "the initial state needs [%d, %lld, %lld]", dirs,
                         (long long)io.batch, (long long)hidden);
            goto done;
        }
    if ((size_t)idx_len < n_in && in[idx_len]) {
        lv = malloc((size_t)(io.batch ? io.batch : 1) * sizeof *lv);
        size_t cnt = 0;
        if (!lv) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            goto done;
        }
        if (!tensor_to_i64(in[idx_len], lv, (size_t)io.batch, &cnt) || cnt != (size_t)io.batch) {
            rc = err_set(err, TILEOPT_INVALID, "sequence_lens needs %lld values", (long long)io.batch);
            goto done;
        }
        for (int64_t bi = 0; bi < io.batch; bi++)
            if (lv[bi] < 0 || lv[bi] > io.seq) {
                rc = err_set(err, TILEOPT_INVALID, "sequence length %lld outside [0, %lld]",
                             (long long)lv[bi], (long long)io.seq);
                goto done;
            }
        io.lens = lv;
    }
    int64_t yd[4] = {io.seq, dirs, io.batch, hidden}, hd[3] = {dirs, io.batch, hidden};
    if ((rc = tensor_new(DT_DOUBLE, yd, 4, env, &y, err)) ||
        (rc = tensor_new(DT_DOUBLE, hd, 3, env, &yh, err)) ||
        (kind == CELL_LSTM && (rc = tensor_new(DT_DOUBLE, hd, 3, env, &yc, err))))
        goto done;
    size_t sb = (size_t)(io.seq * io.batch), bh = (size_t)(io.batch * hidden);
    xw = malloc((sb ? sb : 1) * (size_t)GH * sizeof *xw);
    hr = malloc(((size_t)io.batch ? (size_t)io.batch : 1) * (size_t)GH * sizeof *hr);
    tmp = malloc((size_t)(3 * hidden) * sizeof *tmp);
    state_h = malloc((bh ? bh : 1) * sizeof *state_h);
    state_c = malloc((bh ? bh : 1) * sizeof *state_c);
    if (!xw || !hr || !tmp || !state_h || !state_c) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    io.x = (const double *)(const void *)t[0]->data;
    io.y = (double *)(void *)y->data;
    for (int d = 0; d < dirs; d++) {
        const double *w = (const double *)(const void *)t[1]->data + (size_t)d * (size_t)(GH * io.in_size);
        const double *r = (const double *)(const void *)t[2]->data;
        io.r = r;
        io.b = t[idx_b] ? (const double *)(const void *)t[idx_b]->data : NULL;
        io.p = t[idx_p] ? (const double *)(const void *)t[idx_p]->data : NULL;
        /* X W^T + Wb for every step */
        nn_gemm(DT_DOUBLE, false, true, (int64_t)sb, GH, io.in_size, 1.0, io.x, io.in_size, w,
                io.in_size, 0.0, xw, GH);
        if (io.b)
            for (size_t i = 0; i < sb; i++)
                for (int64_t j = 0; j < GH; j++) xw[i * (size_t)GH + (size_t)j] += io.b[(size_t)d * (size_t)(2 * GH) + (size_t)j];
        for (size_t i = 0; i < bh; i++) {
            state_h[i] = t[idx_h0] ? ((const double *)(const void *)t[idx_h0]->data)[(size_t)d * bh + i] : 0;
            state_c[i] = t[idx_c0] ? ((const double *)(const void *)t[idx_c0]->data)[(size_t)d * bh + i] : 0;
        }
        run_direction(&io, kind, d, d == 1 || reverse, acts + d * nf, clip, input_forget, lbr,
                      xw, state_h, kind == CELL_LSTM ? state_c : NULL, hr, tmp);
        memcpy((double *)(void *)yh->data + (size_t)d * bh, state_h, bh * sizeof *state_h);
        if (yc) memcpy((double *)(void *)yc->data + (size_t)d * bh, state_c, bh * sizeof *state_c);
    }
    if (batch_first) {
        /* Y to [batch, seq, dirs, hidden], Y_h and Y_c to [batch, dirs, hidden] */
        tensor *yt = NULL, *ht = NULL, *ct = NULL;
        int64_t yd2[4] = {io.batch, io.seq, dirs, hidden}, hd2[3] = {io.batch, dirs, hidden};
        if ((rc = tensor_alloc(DT_DOUBLE, yd2, 4, env, &yt, err)) ||
            (rc = tensor_alloc(DT_DOUBLE, hd2, 3, env, &ht, err)) ||
            (yc && (rc = tensor_alloc(DT_DOUBLE, hd2, 3, env, &ct, err)))) {
            tensor_free(yt);
            tensor_free(ht);
            goto done;
        }
        const double *ys = (const double *)(const void *)y->data;
        for (int64_t s = 0; s < io.seq; s++)
            for (int d = 0; d < dirs; d++)
                for (int64_t bi = 0; bi < io.batch; bi++)
                    memcpy((double *)(void *)yt->data + ((bi * io.seq + s) * dirs + d) * hidden,
                           ys + ((s * dirs + d) * io.batch + bi) * hidden, (size_t)hidden * 8);
        for (int d = 0; d < dirs; d++)
            for (int64_t bi = 0; bi < io.batch; bi++) {
                memcpy((double *)(void *)ht->data + (bi * dirs + d) * hidden,
                       (const double *)(const void *)yh->data + (d * io.batch + bi) * hidden,
                       (size_t)hidden * 8);
                if (ct)
                    memcpy((double *)(void *)ct->data + (bi * dirs + d) * hidden,
                           (const double *)(const void *)yc->data + (d * io.batch + bi) * hidden,
                           (size_t)hidden * 8);
            }
        tensor_free(y);
        tensor_free(yh);
        tensor_free(yc);
        y = yt;
        yh = ht;
        yc = ct;
    }
    if ((rc = nn_output(&y, elem, env, err)) || (rc = nn_output(&yh, elem, env, err)) ||
        (yc && (rc = nn_output(&yc, elem, env, err))))
        goto done;
    tensor *res[3] = {y, yh, yc};
    for (size_t i = 0; i < 3; i++) {
        if (i < n_out && n->output[i] && n->output[i][0]) {
            out[i] = res[i];
            res[i] = NULL;
        }
        tensor_free(res[i]);
    }
    y = yh = yc = NULL;
done:
    for (int i = 0; i < 8; i++) tensor_free(t[i]);
    tensor_free(y);
    tensor_free(yh);
    tensor_free(yc);
    free(xw);
    free(hr);
    free(tmp);
    free(state_h);
    free(state_c);
    free(lv);
    if (rc && rc != TILEOPT_NOMEM) return (int)err_prefix(err, "%s %s: ", n->op_type, nm);
    return rc;
}

static int k_rnn(KERNEL_PARAMS) { return rnn(n, opset, CELL_RNN, in, n_in, out, n_out, env, err); }
static int k_gru(KERNEL_PARAMS) { return rnn(n, opset, CELL_GRU, in, n_in, out, n_out, env, err); }
static int k_lstm(KERNEL_PARAMS) { return rnn(n, opset, CELL_LSTM, in, n_in, out, n_out, env, err); }

const kernel_def kernel_table_rnn[] = {
    {OP_RNN, 1, k_rnn},
    {OP_GRU, 1, k_gru},
    {OP_LSTM, 1, k_lstm},
};
const size_t kernel_table_rnn_count = countof(kernel_table_rnn);

/*
** Folding a per-channel affine map into the Conv before it: finding the Conv,
** reading its constants, weighing the bytes, writing the new weights.
*/
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "passes/conv/conv_impl.h"

void cv_free(cv_conv *c) {
    free(c->w);
    free(c->b);
    c->w = c->b = NULL;
}

/* A float or double constant as doubles (malloc'd in *out), its dims in t. */
static bool read_doubles(pass_ctx *pc, graph *g, const char *name, int32_t elem, double **out,
                         int64_t *dims, int32_t *rank, uint64_t *numel) {
    tensor *t = NULL;
    *out = NULL;
    if (rw_const_tensor(pc, g, name, &t) || !t) return false;
    bool ok = t->kind == EVAL_TENSOR && t->elem == elem && tensor_is_contiguous(t) &&
              t->rank <= 8;
    uint64_t n = ok ? tensor_numel(t) : 0;
    double *v = ok ? malloc((n ? n : 1) * sizeof *v) : NULL;
    if (v) {
        for (uint64_t i = 0; i < n; i++) {
            if (elem == DT_FLOAT) {
                float x;
                memcpy(&x, t->data + 4 * i, 4);
                v[i] = x;
            } else {
                memcpy(&v[i], t->data + 8 * i, 8);
            }
        }
        *rank = t->rank;
        memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
        *numel = n;
    }
    tensor_free(t);
    *out = v;
    return v != NULL;
}

/* Is op one whose weights a per-channel map can be folded into? */
static bool weighted(op_id op) {
    return op == OP_Conv || op == OP_ConvTranspose || op == OP_Gemm || op == OP_MatMul;
}

/*
** Where the channels of c's weight lie (inner, mid, rows, m; see cv_conv) and
** of its output (out_rank, axis), from the weight's dims and the node's
** attributes; NULL, or why they cannot be known.
*/
static const char *layout(graph *g, const Onnx__NodeProto *n, cv_conv *c, uint64_t nw) {
    int64_t *d = c->wdims;
    c->rows = 1;
    c->inner = 1;
    switch (c->op) {
    case OP_Conv:
        if (c->rank < 3 || d[0] <= 0) return "the weight has no output channels";
        c->m = c->mid = d[0];
        c->inner = (int64_t)(nw / (uint64_t)c->m);
        c->out_rank = c->rank;
        c->axis = 1;
        return NULL;
    case OP_ConvTranspose: {
        int64_t group = graph_attr_int(n, "group", 1);
        if (c->rank < 3 || d[1] <= 0) return "the weight has no output channels";
        if (group < 1 || d[0] % group != 0)
            return "its group does not divide the weight's input channels";
        c->mid = d[1];
        c->m = d[1] * group;
        c->rows = d[0] / group;
        for (int32_t i = 2; i < c->rank; i++) c->inner *= d[i];
        c->out_rank = c->rank;
        c->axis = 1;
        return NULL;
    }
    case OP_Gemm: {
        bool tb = graph_attr_int(n, "transB", 0) != 0;
        if (c->rank != 2 || d[0] <= 0 || d[1] <= 0) return "its B is no 2-D constant";
        c->m = c->mid = tb ? d[0] : d[1];
        if (tb) c->inner = d[1];
        else c->rows = d[0];
        c->out_rank = 2;
        c->axis = 1;
        return NULL;
    }
    default: /* MatMul */
        if (c->rank != 2 || d[0] <= 0 || d[1] <= 0)
            return "its second operand is no 2-D constant (a batch of weights)";
        c->m = c->mid = d[1];
        c->rows = d[0];
        c->out_rank = rw_rank(g, n->output[0]);
        c->axis = c->out_rank - 1;
        return NULL;
    }
}

/* A Gemm's C as beta * C, one value per output column, into c->b; *why
** says why it is not that. */
static int gemm_bias(pass_ctx *pc, graph *g, const Onnx__NodeProto *n, cv_conv *c,
                     const char *name, const char **why) {
    double *v;
    int64_t dims[8];
    int32_t rank;
    uint64_t nv;
    if (!read_doubles(pc, g, name, c->elem, &v, dims, &rank, &nv)) {
        *why = "its C is no constant of its type";
        return TILEOPT_OK;
    }
    bool column = rank <= 2 && (nv == 1 || nv == (uint64_t)c->m) &&
                  (rank < 2 || dims[0] == 1);
    c->b = column ? malloc((size_t)c->m * sizeof *c->b) : NULL;
    if (column && !c->b) {
        free(v);
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    }
    float beta = graph_attr_float(n, "beta", 1.0f);
    for (int64_t i = 0; c->b && i < c->m; i++) {
        double x = v[nv == 1 ? 0 : i];
        c->b[i] = beta == 1.0f          ? x
                  : c->elem == DT_FLOAT ? (double)(beta * (float)x)
                                        : (double)beta * x;
    }
    free(v);
    if (!column) *why = "its C varies along the rows of the product, not only its columns";
    return TILEOPT_OK;
}

int cv_find(pass_ctx *pc, graph *g, int32_t reader, size_t slot, cv_conv *c, bool *found,
            const char **why) {
    memset(c, 0, sizeof *c);
    *found = false;
    *why = NULL;
    const char *y = graph_node_input(graph_node(g, reader), slot);
    int32_t p;
    const Onnx__NodeProto *conv = y ? rw_producer(g, y, &p) : NULL;
    if (!conv || !weighted(op_of(conv))) return TILEOPT_OK;
    /* a MatMul of two computed values (attention's scores) has no weights:
    ** no match, and nothing to say */
    graph_const k;
    if (op_of(conv) == OP_MatMul && !graph_const_find(g, graph_node_input(conv, 1), &k))
        return TILEOPT_OK;
    *found = true;
    c->node = p;
    c->op = op_of(conv);
    c->out_rank = -1;
    int32_t sole;
    if (!rw_sole_consumer(g, y, &sole) || sole != reader) {
        *why = c->op == OP_Conv ? "the Conv's output is read elsewhere too"
                                : "its output is read elsewhere too";
        return TILEOPT_OK;
    }
    const char *w = graph_node_input(conv, 1), *b = graph_node_input(conv, 2);
    const graph_type *wt = w ? rw_type(g, w) : NULL;
    c->elem = wt ? wt->elem : 0;
    if (c->elem == DT_FLOAT16 || c->elem == DT_BFLOAT16) {
        *why = "16-bit weights: rounding the scaled weights to 16 bits would move the results";
        return TILEOPT_OK;
    }
    if (c->elem != DT_FLOAT && c->elem != DT_DOUBLE) {
        *why = c->elem ? "weights of an integer type: scaled, they would not stay whole numbers"
                       : "the weight's element type is unknown";
        return TILEOPT_OK;
    }
    uint64_t nw = 0, nb = 0;
    int64_t bdims[8];
    int32_t brank;
    if (!read_doubles(pc, g, w, c->elem, &c->w, c->wdims, &c->rank, &nw)) {
        *why = c->op == OP_Conv ? "the Conv's weight is no constant (or the caller may override it)"
                                : "its weight is no constant (or the caller may override it)";
        return TILEOPT_OK;
    }
    if ((*why = layout(g, conv, c, nw))) {
        cv_free(c);
        return TILEOPT_OK;
    }
    c->per_channel = (int64_t)(nw / (uint64_t)c->m);
    if (c->op == OP_Gemm && b) {
        int rc = gemm_bias(pc, g, conv, c, b, why);
        if (rc || *why) cv_free(c);
        if (rc || *why) return rc;
    }
    if (c->op != OP_Gemm && b &&
        (!read_doubles(pc, g, b, c->elem, &c->b, bdims, &brank, &nb) ||
         nb != (uint64_t)c->m)) {
        *why = c->op == OP_Conv ? "the Conv's bias is no constant of one value per output channel"
                                : "its bias is no constant of one value per output channel";
        cv_free(c);
        return TILEOPT_OK;
    }
    return TILEOPT_OK;
}

bool cv_channel_values(pass_ctx *pc, graph *g, const cv_conv *c, const char *name, double *out) {
    double *v;
    int64_t dims[8];
    int32_t rank;
    uint64_t n;
    if (!read_doubles(pc, g, name, c->elem, &v, dims, &rank, &n)) return false;
    bool ok = n == (uint64_t)c->m || n == 1;
    for (int64_t i = 0; ok && i < c->m; i++) out[i] = v[n == 1 ? 0 : i];
    free(v);
    return ok;
}

bool cv_exact_scale(const cv_conv *c, const double *scale) {
    for (int64_t i = 0; i < c->m; i++) {
        int e;
        if (!isfinite(scale[i]) || fabs(frexp(scale[i], &e)) != 0.5) return false;
    }
    uint64_t nw = (uint64_t)c->m * (uint64_t)c->per_channel;
    for (uint64_t i = 0; i < nw + (c->b ? (uint64_t)c->m : 0); i++) {
        uint64_t row = i / (uint64_t)c->inner, mid = (uint64_t)c->mid;
        double w = i < nw ? c->w[i] : c->b[i - nw];
        double s = i < nw ? scale[row / (mid * (uint64_t)c->rows) * mid + row % mid]
                          : scale[i - nw];
        double p = c->elem == DT_FLOAT ? (double)(float)(w * s) : w * s;
        /* a product that leaves the normal range (overflow, or subnormal
        ** bits lost) does not scale back */
        if (p / s != w || (p != 0 && fabs(p) < (c->elem == DT_FLOAT ? FLT_MIN : DBL_MIN)))
            return false;
    }
    return true;
}

/* Bytes of the file that go with value name when node no longer reads it: an
** initializer of g no one else reads. */
static uint64_t freed_with(graph *g, const char *name, int32_t node) {
    graph_value *v = name && name[0] ? graph_find(g, name) : NULL;
    if (!v || v->initializer < 0 || v->input >= 0 || !rw_sole_reader(g, name, node)) return 0;
    return graph_initializer_bytes(g->pb->initializer[v->initializer]);
}

/* Bytes a new initializer of n elements (dims) of c's type takes. */
static uint64_t new_bytes(const cv_conv *c, const char *hint, const int64_t *dims,
                          size_t rank, uint64_t n) {
    return graph_new_initializer_bytes(strlen(hint) + 4, c->elem, dims, rank,
                                       n * (c->elem == DT_FLOAT ? 4 : 8));
}

/* values as c's element type, a new initializer named from hint. */
static int add_values(pass_ctx *pc, graph *g, const cv_conv *c, const char *hint,
                      const double *v, const int64_t *dims, size_t rank, uint64_t n,
                      const char **name) {
    size_t es = c->elem == DT_FLOAT ? 4 : 8;
    uint8_t *buf = malloc((n ? n : 1) * es);
    if (!buf) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        if (c->elem == DT_FLOAT) {
            float x = (float)v[i];
            memcpy(buf + 4 * i, &x, 4);
        } else {
            memcpy(buf + 8 * i, &v[i], 8);
        }
    }
    int rc = graph_add_initializer(g, hint, c->elem, dims, rank, buf, (size_t)(n * es), name,
                                   pc->err);
    free(buf);
    return rc;
}

/* MatMul c reads weight w (NULL: its own) and gets bias b as Gemm(A, w, b),
** the Gemm writing its output under its name (c->node then names it). */
static int matmul_to_gemm(pass_ctx *pc, graph *g, cv_conv *c, const char *w, const char *b) {
    const Onnx__NodeProto *mm = graph_node(g, c->node);
    const char *ins[3] = {mm->input[0], w ? w : mm->input[1], b};
    const char *name = mm->name && mm->name[0] ? mm->name : NULL;
    return rw_replace(pc, g, c->node, "Gemm", name, ins, 3, NULL, &c->node);
}

int cv_fold(pass_ctx *pc, graph *g, cv_conv *c, int32_t reader, const double *scale,
            const double *bias, bool *done, const char **why) {
    *done = false;
    *why = NULL;
    const Onnx__NodeProto *conv = graph_node(g, c->node), *r = graph_node(g, reader);
    const char *w = graph_node_input(conv, 1), *b = graph_node_input(conv, 2);
    bool new_b = bias || (c->b && scale);
    uint64_t nw = (uint64_t)c->m * (uint64_t)c->per_channel;
    /* what goes: the reader, its constants no one else reads, and the weight
    ** and bias the new ones replace when the Conv alone reads them */
    uint64_t freed = graph_node_bytes(r);
    for (size_t i = 0; i < r->n_input; i++)
        if (graph_node_input(r, i) && strcmp(r->input[i], conv->output[0]) != 0)
            freed += freed_with(g, r->input[i], reader);
    uint64_t written = 0;
    if (scale) written += new_bytes(c, w, c->wdims, (size_t)c->rank, nw);
    if (scale) freed += freed_with(g, w, c->node);
    if (new_b) written += new_bytes(c, b ? b : w, &c->m, 1, (uint64_t)c->m);
    if (new_b && b) freed += freed_with(g, b, c->node);
    if (graph_value_is_output(g, r->output[0]) && r->n_output > 1) {
        *why = "its output is a graph output and the node has other outputs";
        return TILEOPT_OK;
    }
    /* a bias for a Gemm's C, or a MatMul made a Gemm to hold one: before
    ** opset 7 a C of one value per column broadcasts only with Gemm's
    ** broadcast attribute */
    if (new_b && (c->op == OP_Gemm || c->op == OP_MatMul) && graph_opset(pc->model, "") < 7) {
        *why = "before opset 7 a Gemm's C broadcasts only with its broadcast attribute";
        return TILEOPT_OK;
    }
    if (new_b && c->op == OP_MatMul && c->out_rank != 2) {
        *why = "a bias needs a Gemm, and the MatMul's output is not 2-D";
        return TILEOPT_OK;
    }
    c->bytes_written = written;
    c->bytes_freed = freed;
    if (written > freed && written - freed > pc->opt->fold_limit) {
        *why = "the new weights would take more bytes than the constants that go, over "
               "--fold-limit (a weight another node reads stays beside its scaled copy)";
        return TILEOPT_OK;
    }
    double *nb = new_b ? malloc((size_t)c->m * sizeof *nb) : NULL;
    if (new_b && !nb) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    for (uint64_t i = 0; scale && i < nw; i++) {
        uint64_t row = i / (uint64_t)c->inner, mid = (uint64_t)c->mid;
        c->w[i] *= scale[row / (mid * (uint64_t)c->rows) * mid + row % mid];
    }
    /* a product of two floats is exact in a double: rounded once, it is the
    ** float product */
    for (int64_t i = 0; new_b && i < c->m; i++) nb[i] = bias ? bias[i] : c->b[i] * scale[i];
    const char *wname = NULL, *bname = NULL;
    int rc = TILEOPT_OK;
    if (scale) rc = add_values(pc, g, c, w, c->w, c->wdims, (size_t)c->rank, nw, &wname);
    if (!rc && new_b) rc = add_values(pc, g, c, b ? b : w, nb, &c->m, 1, (uint64_t)c->m, &bname);
    free(nb);
    if (rc) return rc;
    /* the reader's output moves onto the Conv first: should it have to stay,
    ** the Conv is still as it was */
    const char *y = graph_strdup(g, conv->output[0]);
    if (!y) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    rc = rw_forward(pc, g, reader, 0, y, done, why);
    if (rc || !*done) return rc;
    pc->changed = true;
    if (c->op == OP_MatMul && bname) return matmul_to_gemm(pc, g, c, wname, bname);
    if (wname) rc = graph_node_set_input(g, c->node, 1, wname);
    if (!rc && bname) rc = graph_node_set_input(g, c->node, 2, bname);
    Onnx__NodeProto *n = graph_node(g, c->node);
    if (!rc && bname && c->op == OP_Gemm && graph_attr_float(n, "beta", 1.0f) != 1.0f)
        rc = graph_node_set_attr_float(g, n, "beta", 1.0f); /* the new C holds beta * C */
    if (rc) return err_set(pc->err, rc, "out of memory");
    return TILEOPT_OK;
}

void cv_skip(pass_ctx *pc, graph *g, int32_t node, const cv_conv *c, const char *why) {
    json_w *a = pass_skip(pc, g, node, "not folded into the %s before it: %s",
                          op_table[c->op].name, why);
    if (!a || c->bytes_written <= c->bytes_freed) return;
    json_put_num(a, "bytes_written", (double)c->bytes_written);
    json_put_num(a, "bytes_freed", (double)c->bytes_freed);
    json_put_str(a, "rule", "fold-limit");
}

/*
** What the files of passes/conv/ share: folding a per-channel affine map that
** follows a node with constant weights (y = x * scale[c] + shift[c] over its
** output channels) into those weights and its bias: a Conv, a ConvTranspose, a
** Gemm or a MatMul by a constant. bn.c (BatchNormalization) and affine.c (Mul,
** Add by a constant) each run one pass over helpers.c. And a zero Pad before a
** Conv or an average pool made its own padding: pad.c and pad_pool.c, each
** one pass over pad_read.c.
*/
#ifndef TILEOPT_CONV_IMPL_H
#define TILEOPT_CONV_IMPL_H

#include "passes/passes.h"
#include "passes/rewrite.h"

/*
** The node whose output node `reader` reads in slot `slot` (the "Conv" of the
** names below, whichever of the four it is), with its constant weights and
** bias as doubles. Its m output channels lie along axis `axis` of its output:
** 1 for a Conv or a ConvTranspose ([N, M, ...]), the last for a Gemm or a
** MatMul (its columns). Where the weight's elements go: element i scales
** channel ((i / inner) / (mid * rows)) * mid + (i / inner) % mid, one formula
** for the four layouts (Conv [M, C/g, k...]: mid M, inner C/g * k; ConvTranspose
** [C, M/g, k...]: mid M/g, inner k, rows C/g, a group of rows per group of
** channels; Gemm's B [K, N]: mid N, inner 1, rows K; its B [N, K] with transB:
** mid N, inner K).
*/
typedef struct cv_conv {
    int32_t node;            /* the Conv, ConvTranspose, Gemm or MatMul */
    op_id op;
    int32_t elem;            /* FLOAT or DOUBLE */
    int64_t m, per_channel;  /* output channels, weights per channel */
    int32_t rank;            /* of the weight */
    int32_t out_rank, axis;  /* of the output (-1 unknown), and its channel axis */
    int64_t wdims[8];
    int64_t inner, mid, rows;
    double *w, *b;           /* b: NULL when there is no bias (a Gemm's: beta * C) */
    /* set by cv_fold: what the fold writes and removes (for a skip's report) */
    uint64_t bytes_written, bytes_freed;
} cv_conv;

/*
** Find the Conv, ConvTranspose, Gemm or MatMul that writes input slot `slot`
** of node `reader`: *found false when there is none; otherwise, when it cannot
** be folded into, *why says why (its output read elsewhere, weights not
** constant, a type other than float or double, a ConvTranspose's channels
** unknown, a Gemm's C that varies along its rows...). Free with cv_free.
*/
int cv_find(pass_ctx *pc, graph *g, int32_t reader, size_t slot, cv_conv *c, bool *found,
            const char **why);
void cv_free(cv_conv *c);

/* A skip of node for why, with the bytes when the size policy said no. */
void cv_skip(pass_ctx *pc, graph *g, int32_t node, const cv_conv *c, const char *why);

/* Per-channel values of constant name as doubles into out[m]: a tensor of m
** values, or of one (broadcast). False when it is no float/double constant of
** c's element type, or of another count. */
bool cv_channel_values(pass_ctx *pc, graph *g, const cv_conv *c, const char *name, double *out);

/* Is scaling c's weights and bias by scale[m] exact, the sums after it too:
** every scale a power of two (scaling by one commutes with rounding), no
** scaled weight or bias leaving the normal range. */
bool cv_exact_scale(const cv_conv *c, const double *scale);

/*
** Rewrite the Conv so it computes reader's output 0: weights times scale[m]
** (scale NULL: unchanged) and bias[m] as the bias (bias NULL: the old bias
** times scale, or none when there was none). A Gemm given a bias gets beta 1
** (its C holds beta * C already); a MatMul given one becomes Gemm(A, B, bias). Callers compute both in the
** weights' own precision, in the order ONNX Runtime's fusions do, so the
** model gives what ONNX Runtime gives when it fuses the original itself. The
** reader goes, its output written by the Conv. Skipped, with *why, when the
** new constants would take more bytes than the ones that go, by more than
** --fold-limit (weights shared with another node stay, and the copy grows the
** file; a bias made from a scalar takes a value per channel), or when the
** output name cannot move. *done tells whether it happened.
*/
int cv_fold(pass_ctx *pc, graph *g, cv_conv *c, int32_t reader, const double *scale,
            const double *bias, bool *done, const char **why);

/*
** The Pad before a Conv or a pool (pad_read.c): what it pads (x), its rank,
** and its pads, begins then ends for every axis.
*/
#define CV_PAD_RANK 8
typedef struct cv_pad {
    int32_t node;            /* the Pad */
    const char *x;
    int32_t rank;
    int64_t pads[2 * CV_PAD_RANK];
} cv_pad;

/*
** Find the Pad that writes input 0 of node `reader`: *found false when there
** is none; otherwise, when it is not a zero padding of the spatial axes that
** reader could do itself, *why says why (its output read elsewhere, a mode
** other than constant, a value other than 0, pads not constant, a negative
** pad, the batch or channel axis padded, an unknown rank).
*/
int cv_pad_find(pass_ctx *pc, graph *g, int32_t reader, cv_pad *p, bool *found,
                const char **why);
/* reader reads the Pad's input, its pads attribute grown by the Pad's
** spatial pads (the caller checked auto_pad). */
int cv_pad_merge(pass_ctx *pc, graph *g, int32_t reader, const cv_pad *p);
/* The zero Pad before reader merged into its pads, recorded as rule, unless
** the Pad's checks or the reader's (guard: why reader cannot take it, or
** NULL) say why not, which is then recorded as a skip. */
int cv_pad_fold(pass_ctx *pc, graph *g, int32_t reader,
                const char *(*guard)(pass_ctx *pc, const Onnx__NodeProto *n),
                const char *rule, const char *into);

#endif

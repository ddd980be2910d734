/* Entry points of the passes in the registry (passes/registry.c). */
#ifndef TILEOPT_PASSES_H
#define TILEOPT_PASSES_H

#include "passes/pass.h"

/* fuse: Tile into the elementwise ops that follow it (passes/fuse/). */
int pass_fuse(pass_ctx *pc);

/* upgrade: migrate default-domain nodes to opt->target_opset (passes/upgrade/). */
int pass_upgrade(pass_ctx *pc);
/* The IR version a model importing this ai.onnx opset needs at least. */
int64_t upgrade_ir_for_opset(int64_t opset);
/* The adapter table, for tests: row i's op, schema versions and whether it has
** an adapter function (rows without one are known changes nobody migrates). */
size_t upgrade_adapter_count(void);
void upgrade_adapter_at(size_t i, const char **op, int32_t *from, int32_t *to, bool *has_fn);
/* The downgrade adapter table, for the same checks: from is the newer version. */
size_t downgrade_adapter_count(void);
void downgrade_adapter_at(size_t i, const char **op, int32_t *from, int32_t *to);
/* The ops rewritten as older ones below their first version, for the same checks. */
size_t downgrade_expansion_count(void);
const char *downgrade_expansion_op(size_t i);

/* fold: constant-fold Tile and the shape subgraphs feeding it (passes/fold/). */
int pass_fold(pass_ctx *pc);

/* gqa: grouped-query attention's repeated K/V heads left unmaterialized
** (passes/gqa.c). */
int pass_gqa(pass_ctx *pc);

/* The simplification passes (passes/eliminate/): each removes one kind of node
** that computes nothing new, with its rule in the report. */
int pass_eliminate_if(pass_ctx *pc);
int pass_eliminate_identity(pass_ctx *pc);
int pass_eliminate_dropout(pass_ctx *pc);
int pass_eliminate_nop(pass_ctx *pc);
int pass_eliminate_idempotent(pass_ctx *pc);
int pass_eliminate_nop_monotone_argmax(pass_ctx *pc);
int pass_eliminate_duplicate_initializers(pass_ctx *pc);
int pass_eliminate_common_subexpression(pass_ctx *pc);
int pass_eliminate_dead(pass_ctx *pc);

/* Per-channel maps after a Conv folded into its weights (passes/conv/):
** BatchNormalization at inference; Mul and Add by a constant. */
int pass_fuse_bn_into_conv(pass_ctx *pc);
int pass_fuse_affine_into_conv(pass_ctx *pc);
/* A zero Pad of the spatial axes made the pads of the Conv, or of the
** AveragePool counting its pads, after it (passes/conv/). */
int pass_fuse_pad_into_conv(pass_ctx *pc);
int pass_fuse_pad_into_pool(pass_ctx *pc);
/* Two layout or conversion ops in a row made one, or none (passes/merge/):
** Transposes, reshaping ops before a Reshape, a Squeeze and an Unsqueeze that
** cancel, an exact Cast before another. */
int pass_fuse_consecutive_transposes(pass_ctx *pc);
/* A Transpose moved down past layout-agnostic ops until it meets another
** Transpose, the ops undo it, or a Concat of Transposes
** (passes/merge/transpose_sink.c). */
int pass_sink_transposes(pass_ctx *pc);
int pass_fuse_consecutive_reshapes(pass_ctx *pc);
int pass_fold_reshape_target(pass_ctx *pc);
int pass_fuse_squeeze_unsqueeze(pass_ctx *pc);
int pass_fuse_consecutive_casts(pass_ctx *pc);
/* Two of one op in a row made one (passes/merge/): Squeezes or Unsqueezes,
** Slices of other axes, Concats on one axis; a Log of a Softmax made a
** LogSoftmax, a reduction whose dims an Unsqueeze puts back made keepdims=1. */
int pass_fuse_consecutive_squeezes(pass_ctx *pc);
int pass_fuse_consecutive_slices(pass_ctx *pc);
int pass_fuse_consecutive_concats(pass_ctx *pc);
int pass_fuse_consecutive_log_softmax(pass_ctx *pc);
int pass_fuse_consecutive_reduce_unsqueeze(pass_ctx *pc);
/* MatMul + Add, and Transposes of its operands, into Gemm (passes/merge/). */
int pass_fuse_matmul_add_into_gemm(pass_ctx *pc);
int pass_fuse_transpose_into_gemm(pass_ctx *pc);

#endif

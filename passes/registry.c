/* The pass registry: the one file that knows every pass, so the passes and the
** helpers they share in driver.c never call each other both ways. */
#include <string.h>

#include "passes/pass.h"
#include "passes/passes.h"

/* Default order: migrate first so later passes see current op semantics, fold
** before fuse so fuse sees constant repeats. A fold can leave a Tile fuse can
** now take; a fuse that moves an op onto constant inputs (it says when) leaves
** fold work: the pipeline runs them again until neither has any. The
** simplification passes come last: each can leave work for the others (an
** Identity gone makes two nodes equal for CSE, an inlined If brings new
** constants to fold), so any change of one runs fold, fuse and all of them
** again, in rounds, until none changes anything. eliminate_dead ends the list:
** whatever the others left unread goes. */
#define SIMPLIFY                                                                        \
    "eliminate_if,eliminate_dropout,eliminate_identity,eliminate_nop,"                  \
    "eliminate_idempotent,eliminate_nop_monotone_argmax,"                               \
    "eliminate_duplicate_initializers,"                                                 \
    "eliminate_common_subexpression,fuse_bn_into_conv,fuse_affine_into_conv,"          \
    "sink_transposes,fuse_consecutive_transposes,fold_reshape_target,"                  \
    "fuse_consecutive_reshapes,fuse_squeeze_unsqueeze,fuse_consecutive_casts,"          \
    "fuse_consecutive_squeezes,fuse_consecutive_slices,fuse_consecutive_concats,"       \
    "fuse_consecutive_log_softmax,fuse_consecutive_reduce_unsqueeze,"                   \
    "fuse_matmul_add_into_gemm,fuse_transpose_into_gemm,fuse_pad_into_conv,"           \
    "fuse_pad_into_pool,eliminate_dead"
#define AFTER_SIMPLIFY "fold,fuse," SIMPLIFY
/* A row's rounds field: EXACT, or ROUNDS for a pass whose rewrites round
** otherwise than the original (see pass_def). */
#define EXACT false
#define ROUNDS true

const pass_def pass_registry[] = {
    {"upgrade", pass_upgrade, "migrate default-domain nodes to the target opset (Tile-1 included)",
     NULL, false, EXACT, ANY_OPS},
    {"fold", pass_fold,
     "constant-fold every constant subgraph (Tile first) that does not grow the file",
     "fuse," SIMPLIFY, true, EXACT, ANY_OPS},
    {"fuse", pass_fuse, "fuse Tile into the elementwise ops that read it", "fold", false, EXACT,
     ANY_OPS},
    {"gqa", pass_gqa,
     "grouped-query attention: query heads grouped on their K/V head instead of K and V "
     "repeated", NULL, false, EXACT, ANY_OPS},
    {"eliminate_if", pass_eliminate_if,
     "an If whose condition is a constant replaced by the branch it runs", AFTER_SIMPLIFY,
     true, EXACT, OPS(OP_If)},
    {"eliminate_dropout", pass_eliminate_dropout, "Dropout at inference removed",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Dropout)},
    {"eliminate_identity", pass_eliminate_identity, "Identity removed", AFTER_SIMPLIFY, true, EXACT,
     OPS(OP_Identity)},
    {"eliminate_nop", pass_eliminate_nop,
     "no-op Slice, Pad, Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Cast, Expand, "
     "Concat and Split removed, and Add, Sub, Mul, Div or Pow by a neutral constant",
     AFTER_SIMPLIFY, true, EXACT, ANY_OPS},
    {"eliminate_idempotent", pass_eliminate_idempotent,
     "the second of two Relu, Abs, Ceil, Floor, Round or Sign removed", AFTER_SIMPLIFY, true, EXACT,
     ANY_OPS},
    {"eliminate_nop_monotone_argmax", pass_eliminate_nop_monotone_argmax,
     "ArgMax or ArgMin of Exp, Log, Sqrt or a Softmax over its axis reads that op's input",
     AFTER_SIMPLIFY, true, ROUNDS, OPS(OP_ArgMax, OP_ArgMin)},
    /* two constants made one only make their readers alike */
    {"eliminate_duplicate_initializers", pass_eliminate_duplicate_initializers,
     "initializers of equal type, shape and bytes merged",
     "eliminate_common_subexpression,eliminate_dead", true, EXACT, ANY_OPS},
    {"eliminate_common_subexpression", pass_eliminate_common_subexpression,
     "nodes computing what an earlier node computes removed", AFTER_SIMPLIFY, true, EXACT, ANY_OPS},
    {"fuse_bn_into_conv", pass_fuse_bn_into_conv,
     "BatchNormalization at inference folded into the Conv before it, or with the MatMul "
     "before it made a Gemm", AFTER_SIMPLIFY, true, ROUNDS, OPS(OP_BatchNormalization)},
    {"fuse_affine_into_conv", pass_fuse_affine_into_conv,
     "Mul or Add by a per-channel constant folded into the Conv, ConvTranspose, Gemm or "
     "MatMul before it",
     AFTER_SIMPLIFY, true, ROUNDS, OPS(OP_Conv, OP_ConvTranspose, OP_Gemm, OP_MatMul)},
    {"sink_transposes", pass_sink_transposes,
     "a Transpose moved down past elementwise ops, Unsqueeze, Squeeze, Slice, Gather and "
     "splitting Reshapes until a Transpose or the ops undo it, and the Transposes of a "
     "Concat's inputs made one after it",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Transpose)},
    {"fuse_consecutive_transposes", pass_fuse_consecutive_transposes,
     "two Transposes in a row made one, or none when the second undoes the first",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Transpose)},
    {"fold_reshape_target", pass_fold_reshape_target,
     "a Reshape target computed from shapes, known but for one entry, made a constant with "
     "-1 there, or an Unsqueeze or Squeeze where it only puts in or takes out 1s",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Reshape)},
    {"fuse_consecutive_reshapes", pass_fuse_consecutive_reshapes,
     "a Reshape, Flatten, Squeeze or Unsqueeze before a Reshape merged into it",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Reshape)},
    {"fuse_squeeze_unsqueeze", pass_fuse_squeeze_unsqueeze,
     "a Squeeze and an Unsqueeze in a row on the same axes removed", AFTER_SIMPLIFY, true, EXACT,
     OPS(OP_Squeeze)},
    {"fuse_consecutive_casts", pass_fuse_consecutive_casts,
     "a Cast after an exact Cast reads its input, or both go when it converts back",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Cast)},
    {"fuse_consecutive_squeezes", pass_fuse_consecutive_squeezes,
     "two Squeezes, or two Unsqueezes, in a row made one over the axes of both",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Squeeze, OP_Unsqueeze)},
    {"fuse_consecutive_slices", pass_fuse_consecutive_slices,
     "two Slices in a row of other axes made one", AFTER_SIMPLIFY, true, EXACT, OPS(OP_Slice)},
    {"fuse_consecutive_concats", pass_fuse_consecutive_concats,
     "a Concat read by a Concat on the same axis spliced into it", AFTER_SIMPLIFY, true, EXACT,
     OPS(OP_Concat)},
    {"fuse_consecutive_log_softmax", pass_fuse_consecutive_log_softmax,
     "Log of a Softmax made a LogSoftmax", AFTER_SIMPLIFY, true, ROUNDS, OPS(OP_Softmax)},
    {"fuse_consecutive_reduce_unsqueeze", pass_fuse_consecutive_reduce_unsqueeze,
     "a reduction with keepdims=0 and an Unsqueeze of its axes made keepdims=1",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_Unsqueeze)},
    {"fuse_matmul_add_into_gemm", pass_fuse_matmul_add_into_gemm,
     "Add of a 2-D MatMul by a constant right operand and a bias made one Gemm",
     AFTER_SIMPLIFY, true, EXACT, OPS(OP_MatMul)},
    {"fuse_transpose_into_gemm", pass_fuse_transpose_into_gemm,
     "a Transpose of a Gemm operand folded into transA or transB, of its output into the "
     "operands swapped", AFTER_SIMPLIFY, true, EXACT, OPS(OP_Gemm)},
    {"fuse_pad_into_conv", pass_fuse_pad_into_conv,
     "a zero Pad of the spatial axes made the pads of the Conv after it", AFTER_SIMPLIFY,
     true, EXACT, OPS(OP_Pad)},
    {"fuse_pad_into_pool", pass_fuse_pad_into_pool,
     "a zero Pad made the pads of the AveragePool after it, where it counts its pads or has "
     "none", AFTER_SIMPLIFY, true, EXACT, OPS(OP_Pad)},
    {"eliminate_dead", pass_eliminate_dead, "unread nodes and initializers removed", NULL,
     false, EXACT, ANY_OPS},
    {NULL, NULL, NULL, NULL, false, EXACT, ANY_OPS},
};
const size_t pass_count = countof(pass_registry) - 1; /* the NULL row ends it */

const pass_def *pass_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < pass_count; i++)
        if (strcmp(pass_registry[i].name, name) == 0) return &pass_registry[i];
    return NULL;
}

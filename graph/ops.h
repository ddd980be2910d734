/*
** The op table: what tileopt knows about each ONNX op, in one place. Shape
** inference, the evaluator, fold and fuse all read it; each keeps its own hooks
** (infer functions, kernels) indexed by op_id, because a lower layer cannot name
** a higher layer's functions. An op missing here is an op no layer knows.
**
** Columns of TILEOPT_OPS, one row per op, sorted by name (tests/graph checks the
** order and checks arity and broadcasting against ONNX's own schemas):
**   name       the op_type, in the default domain (ai.onnx)
**   min, max   the input count over all of the op's versions (OP_ANY: variadic)
**   kind       elementwise or not, and how the inputs combine
**   out        the output element type
**   bcast      the broadcasting its inputs get, and
**   since      the first opset with that broadcasting (before it, the legacy
**              broadcast=1/axis attributes or equal shapes)
**   shape_in   the inputs whose values, not just shapes, decide the output
**              shape (Reshape's shape, Pad's pads, Tile's repeats): folding
**              what computes them lets shape inference know the output
*/
#ifndef TILEOPT_OPS_H
#define TILEOPT_OPS_H

#include <stdint.h>

#include "graph/graph.h"

#define OP_ANY INT32_MAX
/* Input slot k in an op's shape_in mask. */
#define OP_IN(k) (1u << (k))

typedef enum op_kind {
    OPK_OTHER,     /* not elementwise */
    OPK_UNARY,     /* elementwise on input 0; later inputs are parameters (Clip) */
    OPK_BINARY,    /* elementwise on inputs 0 and 1, broadcast together */
    OPK_VARIADIC,  /* elementwise on all inputs, broadcast together (Sum, Max) */
    OPK_SELECT,    /* Where: condition, X, Y broadcast together */
} op_kind;

typedef enum op_out {
    OUT_RULE,      /* the op's own rule (its shape-inference hook) */
    OUT_LIKE_IN0,  /* input 0's element type */
    OUT_LIKE_IN1,  /* input 1's element type (Where's X) */
    OUT_BOOL,
    OUT_ATTR_TO,   /* the "to" attribute (Cast) */
} op_out;

typedef enum op_bcast {
    BC_NONE,
    BC_MULTI,      /* multidirectional, numpy style */
    BC_UNI,        /* unidirectional: input 1 broadcasts to input 0 (PRelu) */
} op_bcast;

#define TILEOPT_OPS(X) \
    X(Abs,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Acos,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Acosh,                      1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Add,                        2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  7, 0) \
    X(And,                        2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  7, 0) \
    X(ArgMax,                     1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ArgMin,                     1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Asin,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Asinh,                      1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Atan,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Atanh,                      1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(AveragePool,                1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(BatchNormalization,         5,  5,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Bernoulli,                  1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(BitShift,                   2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  11, 0) \
    X(BitwiseAnd,                 2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  18, 0) \
    X(BitwiseNot,                 1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(BitwiseOr,                  2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  18, 0) \
    X(BitwiseXor,                 2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  18, 0) \
    X(BlackmanWindow,             1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Cast,                       1,  1,       OPK_UNARY,     OUT_ATTR_TO,   BC_NONE,   0, 0) \
    X(CastLike,                   2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Ceil,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Celu,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Clip,                       1,  3,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Compress,                   2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Concat,                     1,  OP_ANY,  OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ConcatFromSequence,         1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Constant,                   0,  0,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ConstantOfShape,            1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(0)) \
    X(Conv,                       2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ConvInteger,                2,  4,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ConvTranspose,              2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Cos,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Cosh,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(CumSum,                     2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(DFT,                        1,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(DepthToSpace,               1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(DequantizeLinear,           2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Det,                        1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Div,                        2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  7, 0) \
    X(Dropout,                    1,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(DynamicQuantizeLinear,      1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Einsum,                     1,  OP_ANY,  OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Elu,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Equal,                      2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  7, 0) \
    X(Erf,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Exp,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Expand,                     2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(EyeLike,                    1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Flatten,                    1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Floor,                      1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(GRU,                        3,  6,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Gather,                     2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(GatherElements,             2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(GatherND,                   2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Gelu,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Gemm,                       2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(GlobalAveragePool,          1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(GlobalLpPool,               1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(GlobalMaxPool,              1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Greater,                    2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  7, 0) \
    X(GreaterOrEqual,             2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  12, 0) \
    X(GridSample,                 2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(HammingWindow,              1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(HannWindow,                 1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(HardSigmoid,                1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(HardSwish,                  1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Hardmax,                    1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Identity,                   1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(If,                         1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(InstanceNormalization,      3,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(IsInf,                      1,  1,       OPK_UNARY,     OUT_BOOL,      BC_NONE,   0, 0) \
    X(IsNaN,                      1,  1,       OPK_UNARY,     OUT_BOOL,      BC_NONE,   0, 0) \
    X(LRN,                        1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(LSTM,                       3,  8,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(LayerNormalization,         2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(LeakyRelu,                  1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Less,                       2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  7, 0) \
    X(LessOrEqual,                2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  12, 0) \
    X(Log,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(LogSoftmax,                 1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Loop,                       2,  OP_ANY,  OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(LpNormalization,            1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(LpPool,                     1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(MatMul,                     2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(MatMulInteger,              2,  4,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Max,                        1,  OP_ANY,  OPK_VARIADIC,  OUT_LIKE_IN0,  BC_MULTI,  8, 0) \
    X(MaxPool,                    1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(MaxRoiPool,                 2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(MaxUnpool,                  2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(2)) \
    X(Mean,                       1,  OP_ANY,  OPK_VARIADIC,  OUT_LIKE_IN0,  BC_MULTI,  8, 0) \
    X(MeanVarianceNormalization,  1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(MelWeightMatrix,            5,  5,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Min,                        1,  OP_ANY,  OPK_VARIADIC,  OUT_LIKE_IN0,  BC_MULTI,  8, 0) \
    X(Mish,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Mod,                        2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  10, 0) \
    X(Mul,                        2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  7, 0) \
    X(Multinomial,                1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Neg,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(NegativeLogLikelihoodLoss,  2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(NonMaxSuppression,          2,  5,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(NonZero,                    1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Not,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(OneHot,                     3,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Optional,                   0,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(OptionalGetElement,         1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(OptionalHasElement,         1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Or,                         2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  7, 0) \
    X(PRelu,                      2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_UNI,    7, 0) \
    X(Pad,                        1,  4,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1) | OP_IN(3)) \
    X(Pow,                        2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  7, 0) \
    X(QLinearConv,                8,  9,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(QLinearMatMul,              8,  8,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(QuantizeLinear,             2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(RNN,                        3,  6,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(RandomNormal,               0,  0,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(RandomNormalLike,           1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(RandomUniform,              0,  0,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(RandomUniformLike,          1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Range,                      3,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(0) | OP_IN(1) | OP_IN(2)) \
    X(Reciprocal,                 1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(ReduceL1,                   1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceL2,                   1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceLogSum,               1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceLogSumExp,            1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceMax,                  1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceMean,                 1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceMin,                  1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceProd,                 1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceSum,                  1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(ReduceSumSquare,            1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(Relu,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Reshape,                    1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(Resize,                     1,  4,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(2) | OP_IN(3)) \
    X(ReverseSequence,            2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(RoiAlign,                   3,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Round,                      1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(STFT,                       2,  4,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Scan,                       1,  OP_ANY,  OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Scatter,                    3,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ScatterElements,            3,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ScatterND,                  3,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Selu,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(SequenceAt,                 2,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(SequenceConstruct,          1,  OP_ANY,  OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(SequenceEmpty,              0,  0,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(SequenceErase,              1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(SequenceInsert,             2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(SequenceLength,             1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(SequenceMap,                1,  OP_ANY,  OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Shape,                      1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Shrink,                     1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Sigmoid,                    1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Sign,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Sin,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Sinh,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Size,                       1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Slice,                      1,  5,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1) | OP_IN(2) | OP_IN(3) | OP_IN(4)) \
    X(Softmax,                    1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(SoftmaxCrossEntropyLoss,    2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Softplus,                   1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Softsign,                   1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(SpaceToDepth,               1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Split,                      1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(SplitToSequence,            1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Sqrt,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Squeeze,                    1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(StringNormalizer,           1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Sub,                        2,  2,       OPK_BINARY,    OUT_LIKE_IN0,  BC_MULTI,  7, 0) \
    X(Sum,                        1,  OP_ANY,  OPK_VARIADIC,  OUT_LIKE_IN0,  BC_MULTI,  8, 0) \
    X(Tan,                        1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Tanh,                       1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(TfIdfVectorizer,            1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(ThresholdedRelu,            1,  1,       OPK_UNARY,     OUT_LIKE_IN0,  BC_NONE,   0, 0) \
    X(Tile,                       2,  3,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1) | OP_IN(2)) \
    X(TopK,                       1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(Transpose,                  1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Trilu,                      1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Unique,                     1,  1,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, 0) \
    X(Unsqueeze,                  1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(Upsample,                   1,  2,       OPK_OTHER,     OUT_RULE,      BC_NONE,   0, OP_IN(1)) \
    X(Where,                      3,  3,       OPK_SELECT,    OUT_LIKE_IN1,  BC_MULTI,  9, 0) \
    X(Xor,                        2,  2,       OPK_BINARY,    OUT_BOOL,      BC_MULTI,  7, 0)

typedef enum op_id {
    OP_NONE = -1,  /* not in the table, or not in the default domain */
#define X(name, ...) OP_##name,
    TILEOPT_OPS(X)
#undef X
    OP_COUNT
} op_id;

typedef struct op_info {
    const char *name;
    int32_t min_in, max_in;
    op_kind kind;
    op_out out;
    op_bcast bcast;
    int32_t bcast_since;
    uint32_t shape_in;       /* OP_IN(k) for each input that decides the output shape */
} op_info;

extern const op_info op_table[OP_COUNT];

/* The op of a node: OP_NONE for ops outside the table and other domains. */
op_id op_of(const Onnx__NodeProto *n);
/* Does some live node of m, in any graph, run one of the n ops? A pass whose
** ops the model lacks has nothing to do: the pipeline asks this before every
** pass, so the answer is kept on m until the model changes (one walk over the
** model per change, not one per pass). True when out of memory: the pass
** runs, and finds out. */
bool op_model_has(graph_model *m, const op_id *ops, size_t n);
/* The op called name in the default domain, or OP_NONE. */
op_id op_find(const char *name);

/* Ops whose outputs differ from run to run (the random generators): never
** computed ahead of time, never taken for another node's twin. */
bool op_random(op_id op);

/* Elementwise ops whose inputs broadcast against each other (numpy style) at this
** opset: a Tile feeding them over size-1 axes may be a broadcast they do anyway. */
bool op_broadcasts(op_id op, int64_t opset);

/*
** Tile-6/13's repeats against the schema: int64, 1-D, one non-negative entry per
** input axis (when the input rank is known), an output whose element count and
** byte size fit (when the input shape is static). input may be NULL (unknown).
** A violation is TILEOPT_INVALID with the reason; callers name the node.
*/
int op_tile_check_repeats(int32_t elem, int32_t rank, const int64_t *rep, size_t n,
                          const graph_type *input, errbuf *err);

#endif

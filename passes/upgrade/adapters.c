/*
** The adapter table: one row per schema step whose meaning or form changed, with
** the function that migrates it (or none), and its lookup.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/upgrade/upgrade_impl.h"

/* Sorted by op, then version (tests check the order and that from/to match the
** generated table). */
static const adapter adapters[] = {
    {"Abs", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Add", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Add", 6, 7, up_adapt_broadcast, NULL},
    {"And", 1, 7, up_adapt_broadcast, NULL},
    {"BatchNormalization", 1, 6, up_adapt_consumed_inputs, NULL},
    {"BatchNormalization", 6, 7, up_adapt_is_test, NULL},
    {"BatchNormalization", 7, 9, up_adapt_bn_spatial, NULL},
    {"BatchNormalization", 9, 14, up_adapt_bn_14, NULL},
    {"Cast", 1, 6, up_adapt_cast_5_6, NULL},
    {"Ceil", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Clip", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Clip", 6, 11, up_adapt_clip_6_11, NULL},
    {"Concat", 1, 4, up_adapt_concat_3_4, NULL},
    {"DFT", 17, 20, up_adapt_dft_17_20, NULL},
    {"Div", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Div", 6, 7, up_adapt_broadcast, NULL},
    {"Dropout", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Dropout", 6, 7, up_adapt_is_test, NULL},
    {"Dropout", 7, 10, up_adapt_dropout_7_10, NULL},
    {"Dropout", 10, 12, up_adapt_dropout_10_12, NULL},
    {"Elu", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Equal", 1, 7, up_adapt_broadcast, NULL},
    {"Exp", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Floor", 1, 6, up_adapt_consumed_inputs, NULL},
    {"GRU", 3, 7, up_adapt_rnn_7, NULL},
    {"Gemm", 6, 7, up_adapt_drop_broadcast, NULL},
    {"GlobalLpPool", 1, 2, up_adapt_lppool_1_2, NULL},
    {"Greater", 1, 7, up_adapt_broadcast, NULL},
    {"GridSample", 16, 20, up_adapt_gridsample_16_20, NULL},
    {"GroupNormalization", 18, 21, up_adapt_groupnorm_18_21, NULL},
    {"HardSigmoid", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Hardmax", 11, 13, up_adapt_softmax_11_13, NULL},
    {"InstanceNormalization", 1, 6, up_adapt_consumed_inputs, NULL},
    {"LSTM", 1, 7, up_adapt_rnn_7, NULL},
    {"LeakyRelu", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Less", 1, 7, up_adapt_broadcast, NULL},
    {"Log", 1, 6, up_adapt_consumed_inputs, NULL},
    {"LogSoftmax", 11, 13, up_adapt_softmax_11_13, NULL},
    {"LpPool", 1, 2, up_adapt_lppool_1_2, NULL},
    {"Max", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Mean", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Min", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Mul", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Mul", 6, 7, up_adapt_broadcast, NULL},
    {"Neg", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Or", 1, 7, up_adapt_broadcast, NULL},
    {"PRelu", 1, 6, up_adapt_consumed_inputs, NULL},
    {"PRelu", 6, 7, up_adapt_prelu_6_7, NULL},
    {"Pad", 1, 2, up_adapt_pad_1_2, NULL},
    {"Pad", 2, 11, up_adapt_pad_2_11, NULL},
    {"Pow", 1, 7, up_adapt_broadcast, NULL},
    {"RNN", 1, 7, up_adapt_rnn_7, NULL},
    {"Reciprocal", 1, 6, up_adapt_consumed_inputs, NULL},
    {"ReduceL1", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceL2", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceLogSum", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceLogSumExp", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceMax", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceMean", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceMin", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceProd", 13, 18, up_adapt_axes_to_input, NULL},
    {"ReduceSum", 11, 13, up_adapt_axes_to_input, NULL},
    {"ReduceSumSquare", 13, 18, up_adapt_axes_to_input, NULL},
    {"Relu", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Reshape", 1, 5, up_adapt_reshape_4_5, NULL},
    {"Resize", 10, 11, up_adapt_resize_10_11, NULL},
    {"Resize", 11, 13, up_adapt_resize_11_13, NULL},
    {"RoiAlign", 10, 16, up_adapt_roialign_10_16, NULL},
    {"Scan", 8, 9, up_adapt_scan_8_9, NULL},
    {"Scatter", 9, 11, up_adapt_scatter_9_11, "ScatterElements"},
    {"Selu", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Sigmoid", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Slice", 1, 10, up_adapt_slice_1_10, NULL},
    {"Softmax", 11, 13, up_adapt_softmax_11_13, NULL},
    {"Split", 1, 2, up_adapt_split_1_2, NULL},
    {"Split", 11, 13, up_adapt_split_12_13, NULL},
    {"Split", 13, 18, up_adapt_split_13_18, NULL},
    {"Sqrt", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Squeeze", 11, 13, up_adapt_axes_to_input, NULL},
    {"Sub", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Sub", 6, 7, up_adapt_broadcast, NULL},
    {"Sum", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Tanh", 1, 6, up_adapt_consumed_inputs, NULL},
    {"Tile", 1, 6, up_adapt_tile_1_6, NULL},
    {"TopK", 1, 10, up_adapt_topk_1_10, NULL},
    {"Unsqueeze", 11, 13, up_adapt_axes_to_input, NULL},
    {"Upsample", 1, 7, up_adapt_upsample_1_7, NULL},
    {"Upsample", 7, 9, up_adapt_upsample_7_9, NULL},
    {"Upsample", 9, 10, up_adapt_upsample_9_10, "Resize"},
    {"Xor", 1, 7, up_adapt_broadcast, NULL},
};
#define N_ADAPTERS countof(adapters)

typedef struct adapter_key {
    const char *op;
    int32_t to;
} adapter_key;

static int adapter_cmp(const void *key, const void *elem) {
    const adapter_key *k = key;
    const adapter *a = elem;
    int c = strcmp(k->op, a->op);
    if (c) return c;
    return (k->to > a->to) - (k->to < a->to);
}

const adapter *up_adapter_find(const char *op, int32_t to) {
    adapter_key k = {op, to};
    return bsearch(&k, adapters, N_ADAPTERS, sizeof adapters[0], adapter_cmp);
}

/* For the tests: the table, so they can check its order and versions. */
size_t upgrade_adapter_count(void) { return N_ADAPTERS; }
void upgrade_adapter_at(size_t i, const char **op, int32_t *from, int32_t *to, bool *has_fn) {
    *op = adapters[i].op;
    *from = adapters[i].from;
    *to = adapters[i].to;
    *has_fn = adapters[i].fn != NULL;
}

/*
** Fuzz target (b): load a model, run every registered pass on it in default
** order, infer shapes, compare before and after in the evaluator (verify), save
** and load the result. Limits are small (fuzz_common.h) so nothing allocates
** much. The input's length picks a few options, so the seeds (plain models)
** also cover --fold-scope all, --fuse-split and other target opsets.
*/
#include <stdint.h>

#include "fuzz_common.h"
#include "api/ctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tileopt_ctx *ctx = fuzz_ctx();
    static const char *const opsets[] = {"13", "6", "17", "11"};
    tileopt_ctx_set(ctx, "fold-scope", size & 1 ? "all" : "tile");
    tileopt_ctx_set(ctx, "fuse-split", size & 2 ? "1" : "0");
    tileopt_ctx_set(ctx, "target-opset", opsets[(size >> 2) & 3]);

    const char *dir = fuzz_scratch_dir();
    tileopt_model *m = NULL, *before = NULL, *again = NULL;
    tileopt_status st = tileopt_model_load_buffer(ctx, data, size, dir, &m);
    if (st != TILEOPT_OK) {
        fuzz_failed(ctx, st, "load");
        goto done;
    }
    st = tileopt_model_load_buffer(ctx, data, size, dir, &before);
    FUZZ_CHECK(st == TILEOPT_OK, "the second load of the same bytes failed: %s",
               tileopt_ctx_errmsg(ctx));
    tileopt_report_begin(ctx, m, "fuzz.onnx");
    for (size_t i = 0; tileopt_pass_name(i); i++) {
        st = tileopt_pass_run(ctx, m, tileopt_pass_name(i));
        if (st != TILEOPT_OK) {
            fuzz_failed(ctx, st, tileopt_pass_name(i));
            goto done;
        }
    }
    st = tileopt_model_infer_shapes(ctx, m);
    if (st != TILEOPT_OK) {
        fuzz_failed(ctx, st, "infer shapes");
        goto done;
    }
    /* Loops included: the step budget (fuzz_ctx) bounds every evaluation. */
    st = tileopt_model_verify(ctx, before, m);
    if (st != TILEOPT_OK && st != TILEOPT_MISMATCH) fuzz_failed(ctx, st, "verify");

    void *saved = NULL;
    size_t n_saved = 0;
    st = tileopt_model_save_buffer(ctx, m, &saved, &n_saved);
    FUZZ_CHECK(st == TILEOPT_OK, "the optimized model does not save: %s",
               tileopt_ctx_errmsg(ctx));
    st = tileopt_model_load_buffer(ctx, saved, n_saved, dir, &again);
    FUZZ_CHECK(st == TILEOPT_OK, "the optimized model does not load: %s",
               tileopt_ctx_errmsg(ctx));
    tileopt_free(saved);
    tileopt_report_end(ctx, m, "fuzz_out.onnx");
    char *report = NULL;
    FUZZ_CHECK(tileopt_report_string(ctx, &report) == TILEOPT_OK, "no report");
    tileopt_free(report);
done:
    tileopt_model_free(again);
    tileopt_model_free(before);
    tileopt_model_free(m);
    tileopt_ctx_free(ctx);
    return 0;
}

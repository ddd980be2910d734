/*
** Fuzz target (a): load a model from memory, save it to a buffer, and load the
** saved bytes again. Whatever the loader accepts it must be able to save, and
** what it saves it must accept; saving the reloaded model gives the same bytes.
** inspect runs on the loaded model too (it reads every Tile's repeats).
*/
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tileopt_ctx *ctx = fuzz_ctx();
    tileopt_model *m = NULL, *again = NULL;
    tileopt_status st = tileopt_model_load_buffer(ctx, data, size, fuzz_scratch_dir(), &m);
    if (st != TILEOPT_OK) {
        fuzz_failed(ctx, st, "load");
        FUZZ_CHECK(m == NULL, "a failed load returned a model");
        tileopt_ctx_free(ctx);
        return 0;
    }
    char *json = NULL;
    st = tileopt_model_inspect(ctx, m, &json);
    if (st != TILEOPT_OK) fuzz_failed(ctx, st, "inspect");
    tileopt_free(json);

    void *saved = NULL, *resaved = NULL;
    size_t n_saved = 0, n_resaved = 0;
    st = tileopt_model_save_buffer(ctx, m, &saved, &n_saved);
    FUZZ_CHECK(st == TILEOPT_OK, "a loaded model does not save: %s", tileopt_ctx_errmsg(ctx));
    st = tileopt_model_load_buffer(ctx, saved, n_saved, fuzz_scratch_dir(), &again);
    FUZZ_CHECK(st == TILEOPT_OK, "the saved model does not load: %s", tileopt_ctx_errmsg(ctx));
    st = tileopt_model_save_buffer(ctx, again, &resaved, &n_resaved);
    FUZZ_CHECK(st == TILEOPT_OK, "the reloaded model does not save: %s",
               tileopt_ctx_errmsg(ctx));
    FUZZ_CHECK(n_saved == n_resaved && memcmp(saved, resaved, n_saved) == 0,
               "save(load(save(x))) differs from save(x): %zu vs %zu bytes", n_saved,
               n_resaved);
    tileopt_free(saved);
    tileopt_free(resaved);
    tileopt_model_free(again);
    tileopt_model_free(m);
    tileopt_ctx_free(ctx);
    return 0;
}

/*
** Fuzz target (d): numpy's files. The bytes are read as a .npy file and as an
** .npz archive (stored and deflated members, zip64 fields).
**
** Properties beyond "no crash": what decodes encodes again and decodes to the
** same element type, shape and bytes (strings by content), and an archive of
** the arrays an .npz held reads back with the same names.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const eval_env fuzz_lim = {.lim = {.max_tensor_bytes = 262144,
                                          .max_eval_bytes = 2097152,
                                          .max_eval_steps = 1 << 20, .max_depth = 16}};

static void same(const tensor *a, const tensor *b) {
    int32_t want = a->elem == DT_BFLOAT16 ? DT_UINT16 : a->elem;
    if (b->elem != want || b->rank != a->rank) abort();
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) abort();
    uint64_t n = tensor_numel(a);
    if (a->elem != DT_STRING) {
        if (memcmp(a->data, b->data, (size_t)tensor_nbytes(a)) != 0) abort();
        return;
    }
    const graph_bytes *x = (const graph_bytes *)(const void *)a->data;
    const graph_bytes *y = (const graph_bytes *)(const void *)b->data;
    for (uint64_t i = 0; i < n; i++) {
        /* trailing NULs are numpy's padding, which it cuts too */
        size_t lx = x[i].len;
        while (lx && !x[i].data[lx - 1]) lx--;
        if (lx != y[i].len || (lx && memcmp(x[i].data, y[i].data, lx) != 0)) abort();
    }
}

static void round_trip(const tensor *t) {
    void *bytes;
    size_t len;
    errbuf err;
    if (npy_encode(t, &bytes, &len, &err)) return; /* out of memory only */
    tensor *back = NULL;
    if (npy_decode(bytes, len, &fuzz_lim, &back, &err)) abort();
    same(t, back);
    tensor_free(back);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    errbuf err;
    tensor *t = NULL;
    if (npy_decode(data, size, &fuzz_lim, &t, &err) == TILEOPT_OK) {
        round_trip(t);
        tensor_free(t);
    }
    npz_arrays a;
    if (npz_decode(data, size, &fuzz_lim, &a, &err) == TILEOPT_OK) {
        for (size_t i = 0; i < a.n; i++) round_trip(a.values[i]);
        void *bytes;
        size_t len;
        if (npz_encode((const tensor *const *)a.values, (const char *const *)a.names, a.n, &bytes,
                       &len, &err) == TILEOPT_OK) {
            npz_arrays b;
            if (npz_decode(bytes, len, &fuzz_lim, &b, &err) || b.n != a.n) abort();
            for (size_t i = 0; i < a.n; i++)
                if (strcmp(a.names[i], b.names[i]) != 0) abort();
            npz_free(&b);
            free(bytes);
        }
        npz_free(&a);
    }
    return 0;
}

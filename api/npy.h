/*
** numpy's files: .npy (one array) and .npz (a zip archive of .npy members, as
** numpy.savez writes them stored and numpy.savez_compressed deflated). Every
** length and size read from a file is checked against the bytes that are there
** and against the evaluator's limits before anything is allocated.
*/
#ifndef TILEOPT_API_NPY_H
#define TILEOPT_API_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/eval.h"

/* The first bytes of every .npy file and of a zip archive's local header. */
bool npy_is_npy(const void *bytes, size_t size);
bool npy_is_zip(const void *bytes, size_t size);

/* One .npy file's bytes as a tensor: bool, the integer and floating types,
** complex, and strings ('U' and 'S' arrays), either byte order, C order. */
int npy_decode(const void *bytes, size_t size, const eval_env *env, tensor **out,
               errbuf *err);
/* A tensor as .npy bytes (malloc'd): bfloat16 as uint16 and the 8-bit floats as
** uint8 (their bits, as numpy callers pass them), strings as 'U' arrays. */
int npy_encode(const tensor *t, void **bytes, size_t *size, errbuf *err);

/* The arrays of an .npz archive: names[i] (the member's name without ".npy",
** malloc'd) and values[i], n of them; free with npz_free. */
typedef struct npz_arrays {
    char **names;
    tensor **values;
    size_t n;
} npz_arrays;
int npz_decode(const void *bytes, size_t size, const eval_env *env, npz_arrays *out,
               errbuf *err);
void npz_free(npz_arrays *a);
/* An archive of stored members NAME.npy (malloc'd bytes). */
int npz_encode(const tensor *const *values, const char *const *names, size_t n, void **bytes,
               size_t *size, errbuf *err);

#endif

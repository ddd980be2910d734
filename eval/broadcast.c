/*
** The strided loop driver of elementwise ops: numpy broadcasting over views.
**
** Each output axis is split into "fine" axes on which every input is affine: a
** plain input axis is one (d, s); a Tile view's axis is (r, 0)(d, s), which needs
** a split at d. The splits of all inputs on an axis must divide one another
** (otherwise the offending views are materialized first). Adjacent fine axes
** that every operand walks contiguously are then coalesced, so the inner loop is
** as long as possible and has unit or zero strides, which gcc vectorizes.
*/
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"
#include "shape/dim.h"

#define MAX_FINE (TENSOR_MAX_RANK * (EW_MAX_IN + 1))
_Static_assert(TENSOR_MAX_RANK <= DIM_MAX_RANK, "a tensor's shape fits the dim type's");

/* numpy broadcasting of static shapes, through the shape layer's one
** (dim_bcast): any clash is an invalid model. */
int ew_broadcast_shape(tensor *const *in, size_t n_in, int64_t *dims, int32_t *rank,
                       errbuf *err) {
    dim_bcast b;
    dim d[TENSOR_MAX_RANK];
    dim_bcast_start(&b);
    for (size_t k = 0; k < n_in; k++) {
        for (int32_t i = 0; i < in[k]->rank; i++) d[i] = dim_num(in[k]->dims[i]);
        dim_bcast_add(&b, d, in[k]->rank);
    }
    if (!b.proven)
        return err_set(err, TILEOPT_INVALID,
                       "shapes do not broadcast: input %zu has %lld at axis %d "
                       "where another has %lld",
                       b.clash.input, (long long)b.clash.have.n, b.clash.axis,
                       (long long)b.clash.other.n);
    dim_bcast_result(&b, d);
    for (int32_t j = 0; j < b.rank; j++) dims[j] = d[j].n;
    *rank = b.rank;
    return TILEOPT_OK;
}

typedef struct fine {
    int n;
    int64_t size[MAX_FINE];
    int64_t st[EW_MAX_IN + 1][MAX_FINE]; /* bytes; row 0 is the output */
} fine;

/* Build the fine axes; false when two inputs split one axis incompatibly. */
static bool build_fine(const tensor *out, tensor *const *in, size_t n_in, fine *f) {
    tile_axis ax[EW_MAX_IN][TENSOR_MAX_RANK];
    for (size_t k = 0; k < n_in; k++)
        if (!tensor_tile_axes(in[k], ax[k])) return false;
    f->n = 0;
    int32_t R = out->rank;
    for (int32_t j = 0; j < R; j++) {
        int64_t L = out->dims[j];
        if (L == 1) continue;
        tile_axis a[EW_MAX_IN];
        int64_t bnd[EW_MAX_IN];
        int nb = 0;
        for (size_t k = 0; k < n_in; k++) {
            int32_t i = j - (R - in[k]->rank);
            if (i < 0 || in[k]->dims[i] == 1) {
                a[k] = (tile_axis){1, 0, L};
            } else {
                a[k] = ax[k][i];
                if (a[k].d == 1) a[k] = (tile_axis){1, 0, L};
            }
            if (a[k].r > 1 && a[k].d > 1) {
                int b = 0;
                while (b < nb && bnd[b] < a[k].d) b++;
                if (b == nb || bnd[b] != a[k].d) {
                    memmove(bnd + b + 1, bnd + b, (size_t)(nb - b) * sizeof *bnd);
                    bnd[b] = a[k].d;
                    nb++;
                }
            }
        }
        for (int b = 0; b + 1 < nb; b++)
            if (bnd[b + 1] % bnd[b]) return false;
        /* fine axes of this axis, outer first: units L/.. down to 1 */
        int64_t hi = L;
        for (int b = nb; b >= 0; b--) {
            int64_t unit = b > 0 ? bnd[b - 1] : 1;
            int64_t size = hi / unit;
            hi = unit;
            if (size == 1) continue;
            int x = f->n++;
            f->size[x] = size;
            for (size_t k = 0; k < n_in; k++)
                f->st[k + 1][x] = unit < a[k].d ? a[k].s * unit : 0;
        }
    }
    /* output: contiguous */
    int64_t st = (int64_t)tensor_elem_size(out);
    for (int x = f->n - 1; x >= 0; x--) {
        f->st[0][x] = st;
        st *= f->size[x];
    }
    /* coalesce neighbours every operand walks as one run */
    int m = 0;
    for (int x = 0; x < f->n; x++) {
        if (m > 0) {
            bool ok = true;
            for (size_t k = 0; k <= n_in && ok; k++)
                ok = f->st[k][m - 1] == f->size[x] * f->st[k][x];
            if (ok) {
                f->size[m - 1] *= f->size[x];
                for (size_t k = 0; k <= n_in; k++) f->st[k][m - 1] = f->st[k][x];
                continue;
            }
        }
        f->size[m] = f->size[x];
        for (size_t k = 0; k <= n_in; k++) f->st[k][m] = f->st[k][x];
        m++;
    }
    f->n = m;
    return true;
}

static void drive(const fine *f, uint8_t *po, const uint8_t **pi, size_t n_in,
                  const size_t *esz, ew_inner fn, const void *param) {
    ptrdiff_t inner_st[EW_MAX_IN];
    size_t inner = 1;
    int outer = f->n - 1;
    for (size_t k = 0; k < n_in; k++) inner_st[k] = 0;
    if (f->n > 0) {
        inner = (size_t)f->size[f->n - 1];
        for (size_t k = 0; k < n_in; k++)
            inner_st[k] = (ptrdiff_t)(f->st[k + 1][f->n - 1] / (int64_t)esz[k]);
    } else {
        outer = 0;
    }
    int64_t idx[MAX_FINE] = {0};
    for (;;) {
        fn(po, pi, inner_st, inner, param);
        int a = outer - 1;
        for (; a >= 0; a--) {
            idx[a]++;
            po += f->st[0][a];
            for (size_t k = 0; k < n_in; k++) pi[k] += f->st[k + 1][a];
            if (idx[a] < f->size[a]) break;
            po -= f->st[0][a] * f->size[a];
            for (size_t k = 0; k < n_in; k++) pi[k] -= f->st[k + 1][a] * f->size[a];
            idx[a] = 0;
        }
        if (a < 0) break;
    }
}

int ew_run(tensor *out, tensor *const *in, size_t n_in, ew_inner fn, const void *param,
           const eval_env *env, errbuf *err) {
    if (n_in > EW_MAX_IN) return err_set(err, TILEOPT_ERROR, "too many operands");
    if (tensor_numel(out) == 0) return TILEOPT_OK;
    fine *f = malloc(sizeof *f);
    if (!f) return err_set(err, TILEOPT_NOMEM, "out of memory");
    tensor *flat[EW_MAX_IN] = {NULL};
    tensor *use[EW_MAX_IN] = {NULL};
    for (size_t k = 0; k < n_in; k++) use[k] = in[k];
    int rc = TILEOPT_OK;
    if (!build_fine(out, use, n_in, f)) {
        /* Incompatible Tile splits: read the views from materialized copies. */
        for (size_t k = 0; k < n_in && !rc; k++) {
            if (tensor_is_paired(in[k])) {
                rc = tensor_contiguous(in[k], env, &flat[k], err);
                if (!rc) use[k] = flat[k];
            }
        }
        if (!rc && !build_fine(out, use, n_in, f))
            rc = err_set(err, TILEOPT_ERROR, "unsupported operand layout");
    }
    if (!rc) {
        const uint8_t *pi[EW_MAX_IN];
        size_t esz[EW_MAX_IN];
        for (size_t k = 0; k < n_in; k++) {
            pi[k] = use[k]->data;
            esz[k] = tensor_elem_size(use[k]);
        }
        drive(f, out->data, pi, n_in, esz, fn, param);
    }
    for (size_t k = 0; k < n_in; k++) tensor_free(flat[k]);
    free(f);
    return rc;
}

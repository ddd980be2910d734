/* Views: Tile, Expand and Reshape as new layouts over the same storage; and the
** materializing Tile kernels, which check their repeats with the view's plan and
** copy with the engine in tile.c. */
#include <string.h>

#include "eval/eval_impl.h"

/* Writes ax[0..rank) as the paired layout of t (axis i = (r_i, d_i), strides (0, s_i)). */
static void set_paired(tensor *t, const tile_axis *ax) {
    t->vrank = 2 * t->rank;
    for (int32_t i = 0; i < t->rank; i++) {
        t->vdims[2 * i] = ax[i].r;
        t->vstrides[2 * i] = 0;
        t->vdims[2 * i + 1] = ax[i].d;
        t->vstrides[2 * i + 1] = ax[i].s;
        t->dims[i] = ax[i].r * ax[i].d;
    }
}

/* Plain layout when no axis repeats: readers then see an ordinary strided tensor. */
static void set_layout(tensor *t, const tile_axis *ax) {
    bool rep = false;
    for (int32_t i = 0; i < t->rank; i++) rep |= ax[i].r != 1 && ax[i].d != 1;
    if (rep) {
        set_paired(t, ax);
        return;
    }
    t->vrank = t->rank;
    for (int32_t i = 0; i < t->rank; i++) {
        t->dims[i] = ax[i].r * ax[i].d;
        t->vdims[i] = t->dims[i];
        t->vstrides[i] = ax[i].d == 1 ? 0 : ax[i].s; /* a size-1 axis repeated: broadcast */
    }
}

int tile_plan(const tensor *x, const int64_t *repeats, size_t n, tile_axis *ax,
              int64_t *dims, errbuf *err) {
    if (n != (size_t)x->rank)
        return err_set(err, TILEOPT_INVALID,
                       "Tile: repeats has %zu entries for an input of rank %d", n, x->rank);
    if (!tensor_tile_axes(x, ax))
        return err_set(err, TILEOPT_ERROR, "Tile: unsupported view layout");
    uint64_t numel = 1;
    for (size_t i = 0; i < n; i++) {
        if (repeats[i] < 0)
            return err_set(err, TILEOPT_INVALID, "Tile: negative repeat %lld at axis %zu",
                           (long long)repeats[i], i);
        /* Tile of a Tile view: repeats multiply (both outer strides are 0). */
        if (!eval_mul_i64(ax[i].r, repeats[i], &ax[i].r) ||
            !eval_mul_i64(ax[i].r, ax[i].d, &dims[i]) ||
            !eval_mul_u64(numel, (uint64_t)dims[i], &numel) || numel > (uint64_t)INT64_MAX)
            return err_set(err, TILEOPT_LIMIT, "Tile: output size overflows at axis %zu", i);
    }
    if (!eval_mul_u64(numel, tensor_elem_size(x), &numel) || numel > SIZE_MAX / 2)
        return err_set(err, TILEOPT_LIMIT, "Tile: output size overflows");
    return TILEOPT_OK;
}

int view_tile(tensor *x, const int64_t *repeats, size_t n, const eval_env *env,
              tensor **out, errbuf *err) {
    (void)env; /* a view allocates nothing */
    *out = NULL;
    tile_axis ax[TENSOR_MAX_RANK];
    int64_t dims[TENSOR_MAX_RANK];
    int rc = tile_plan(x, repeats, n, ax, dims, err);
    if (rc) return rc;
    tensor *t = tensor_share(x);
    if (!t) return err_set(err, TILEOPT_NOMEM, "out of memory");
    set_layout(t, ax);
    *out = t;
    return TILEOPT_OK;
}

int view_expand(tensor *x, const int64_t *shape, size_t n, tensor **out, errbuf *err) {
    *out = NULL;
    size_t rank = n > (size_t)x->rank ? n : (size_t)x->rank;
    if (rank > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "Expand: rank %zu over %d", rank, TENSOR_MAX_RANK);
    tile_axis xa[TENSOR_MAX_RANK], ax[TENSOR_MAX_RANK];
    if (!tensor_tile_axes(x, xa))
        return err_set(err, TILEOPT_ERROR, "Expand: unsupported view layout");
    uint64_t numel = 1;
    for (size_t j = 0; j < rank; j++) {
        ptrdiff_t xi = (ptrdiff_t)j - (ptrdiff_t)(rank - (size_t)x->rank);
        ptrdiff_t si = (ptrdiff_t)j - (ptrdiff_t)(rank - n);
        int64_t want = si >= 0 ? shape[si] : 1;
        if (want < 0)
            return err_set(err, TILEOPT_INVALID, "Expand: negative dim %lld",
                           (long long)want);
        tile_axis a = xi >= 0 ? xa[xi] : (tile_axis){1, 0, 1};
        int64_t have = a.d * a.r;
        if (have == want || want == 1) {
            ax[j] = a;
        } else if (have == 1) {
            ax[j] = (tile_axis){1, 0, want};
        } else {
            return err_set(err, TILEOPT_INVALID,
                           "Expand: dim %lld cannot broadcast to %lld at axis %zu",
                           (long long)have, (long long)want, j);
        }
        if (!eval_mul_u64(numel, (uint64_t)(ax[j].d * ax[j].r), &numel) ||
            numel > (uint64_t)INT64_MAX)
            return err_set(err, TILEOPT_LIMIT, "Expand: output size overflows");
    }
    tensor *t = tensor_share(x);
    if (!t) return err_set(err, TILEOPT_NOMEM, "out of memory");
    t->rank = (int32_t)rank;
    set_layout(t, ax);
    *out = t;
    return TILEOPT_OK;
}

int view_reshape(tensor *x, const int64_t *shape, size_t n, const eval_env *env,
                 tensor **out, errbuf *err) {
    *out = NULL;
    if (n > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "Reshape: rank %zu over %d", n, TENSOR_MAX_RANK);
    uint64_t numel = 1;
    for (size_t i = 0; i < n; i++) {
        if (shape[i] < 0)
            return err_set(err, TILEOPT_INVALID, "Reshape: unresolved dim %lld at axis %zu",
                           (long long)shape[i], i);
        if (!eval_mul_u64(numel, (uint64_t)shape[i], &numel))
            return err_set(err, TILEOPT_LIMIT, "Reshape: size overflows");
    }
    if (numel != tensor_numel(x))
        return err_set(err, TILEOPT_INVALID,
                       "Reshape: %llu elements cannot take a shape of %llu",
                       (unsigned long long)tensor_numel(x), (unsigned long long)numel);
    tensor *c;
    int rc = tensor_contiguous(x, env, &c, err); /* a reference when x is contiguous */
    if (rc) return rc;
    c->rank = (int32_t)n;
    c->vrank = (int32_t)n;
    int64_t st = (int64_t)tensor_elem_size(c);
    for (size_t i = n; i-- > 0;) {
        c->dims[i] = c->vdims[i] = shape[i];
        c->vstrides[i] = st;
        st *= shape[i] ? shape[i] : 1;
    }
    *out = c;
    return TILEOPT_OK;
}

/* ---------------------------------------------------------------- kernels */

int kernel_tile(const tensor *x, const int64_t *repeats, size_t n, const eval_env *env,
                tensor **out, errbuf *err) {
    *out = NULL;
    tile_axis ax[TENSOR_MAX_RANK];
    int64_t dims[TENSOR_MAX_RANK];
    int rc = tile_plan(x, repeats, n, ax, dims, err);
    if (rc) return rc;
    tensor *t;
    rc = tensor_alloc(x->elem, dims, x->rank, env, &t, err);
    if (rc) return err_prefix(err, "Tile: ");
    tile_fill(t->data, x->data, tensor_elem_size(x), ax, x->rank, env, x->name);
    if (!tensor_keep(t, x)) {
        tensor_free(t);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    *out = t;
    return TILEOPT_OK;
}

int kernel_tile1(const tensor *x, int64_t tiles, int64_t axis, const eval_env *env,
                 tensor **out, errbuf *err) {
    *out = NULL;
    if (x->rank == 0)
        return err_set(err, TILEOPT_INVALID, "Tile-1: input is a scalar, it has no axis");
    if (axis < -(int64_t)x->rank || axis >= x->rank)
        return err_set(err, TILEOPT_INVALID, "Tile-1: axis %lld outside [-%d, %d)",
                       (long long)axis, x->rank, x->rank);
    if (axis < 0) axis += x->rank;
    if (tiles < 0)
        return err_set(err, TILEOPT_INVALID, "Tile-1: negative tiles %lld", (long long)tiles);
    int64_t rep[TENSOR_MAX_RANK];
    for (int32_t i = 0; i < x->rank; i++) rep[i] = 1;
    rep[axis] = tiles;
    return kernel_tile(x, rep, (size_t)x->rank, env, out, err);
}

int kernel_tile_promoted(const tensor *x, const int64_t *repeats, size_t n,
                         const eval_env *env, tensor **out, errbuf *err) {
    *out = NULL;
    if (n > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "Tile: %zu repeats, over the rank limit %d", n,
                       TENSOR_MAX_RANK);
    if (n >= (size_t)x->rank) {
        /* data gets leading 1-dims: a view with stride-0 size-1 axes in front */
        tensor *v = tensor_share(x);
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        tile_axis ax[TENSOR_MAX_RANK];
        if (!tensor_tile_axes(x, ax)) {
            tensor_free(v);
            return err_set(err, TILEOPT_ERROR, "Tile: unsupported view layout");
        }
        size_t lead = n - (size_t)x->rank;
        v->rank = (int32_t)n;
        v->vrank = (int32_t)(2 * n);
        for (size_t i = 0; i < n; i++) {
            tile_axis a = i < lead ? (tile_axis){1, 0, 1} : ax[i - lead];
            v->dims[i] = a.d * a.r;
            v->vdims[2 * i] = a.r;
            v->vstrides[2 * i] = 0;
            v->vdims[2 * i + 1] = a.d;
            v->vstrides[2 * i + 1] = a.s;
        }
        if (n == 0) v->vrank = 0;
        int rc = kernel_tile(v, repeats, n, env, out, err);
        tensor_free(v);
        return rc;
    }
    int64_t rep[TENSOR_MAX_RANK];
    size_t lead = (size_t)x->rank - n;
    for (size_t i = 0; i < (size_t)x->rank; i++) rep[i] = i < lead ? 1 : repeats[i - lead];
    return kernel_tile(x, rep, (size_t)x->rank, env, out, err);
}

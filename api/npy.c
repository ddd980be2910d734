/*
** api/npy.h: .npy files and .npz archives. A file from anywhere is read as
** hostile: the header is parsed from a bounded copy, every size read from it is
** checked for overflow and against the bytes present before an allocation, and
** a deflated member is inflated into a buffer of the size its directory states
** (which the limits bound), its CRC-32 checked.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "api/npy.h"

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* A header longer than this is no numpy header (numpy itself pads to 64 bytes
** and refuses more than 10,000 since 1.24). */
#define NPY_MAX_HEADER (1u << 20)
/* Members of one archive, at most: far more inputs than any model has. */
#define NPZ_MAX_MEMBERS 65535u

bool npy_is_npy(const void *bytes, size_t size) {
    return size >= sizeof npy_magic && memcmp(bytes, npy_magic, sizeof npy_magic) == 0;
}

bool npy_is_zip(const void *bytes, size_t size) {
    return size >= 4 && memcmp(bytes, "PK\x03\x04", 4) == 0;
}

/* ------------------------------------------------------------ element types */

/* numpy's kind letter and item size for each ONNX element type a .npy holds. */
static const struct {
    char kind;
    uint32_t size;
    int32_t elem;
} npy_types[] = {
    {'b', 1, DT_BOOL},      {'i', 1, DT_INT8},       {'u', 1, DT_UINT8},
    {'i', 2, DT_INT16},     {'u', 2, DT_UINT16},     {'i', 4, DT_INT32},
    {'u', 4, DT_UINT32},    {'i', 8, DT_INT64},      {'u', 8, DT_UINT64},
    {'f', 2, DT_FLOAT16},   {'f', 4, DT_FLOAT},      {'f', 8, DT_DOUBLE},
    {'c', 8, DT_COMPLEX64}, {'c', 16, DT_COMPLEX128},
};

/* The types numpy lacks travel as their bits (api_bits_for reads them back). */
static const struct {
    int32_t elem, as;
} npy_bits[] = {
    {DT_BFLOAT16, DT_UINT16},       {DT_FLOAT8E4M3FN, DT_UINT8}, {DT_FLOAT8E4M3FNUZ, DT_UINT8},
    {DT_FLOAT8E5M2, DT_UINT8},      {DT_FLOAT8E5M2FNUZ, DT_UINT8},
};

/* What a descr such as '<f4', '>i8', '|b1', '<U12' or '|S5' says. */
typedef struct npy_descr {
    bool swap;               /* big-endian data */
    int32_t elem;            /* DT_STRING for 'U' and 'S' */
    char kind;
    uint64_t item;           /* bytes per element */
} npy_descr;

static int parse_descr(const char *d, npy_descr *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    if (!*d || !strchr("<>|=", d[0]) || !d[1])
        return err_set(err, TILEOPT_UNSUPPORTED, "dtype '%s' is no plain numpy dtype", d);
    out->swap = d[0] == '>';
    out->kind = d[1];
    char *end;
    unsigned long long n = d[2] >= '0' && d[2] <= '9' ? strtoull(d + 2, &end, 10) : 0;
    if (!n || *end || n > UINT32_MAX)
        return err_set(err, TILEOPT_UNSUPPORTED, "dtype '%s' is no plain numpy dtype", d);
    if (out->kind == 'U' || out->kind == 'S') {
        out->elem = DT_STRING;
        out->item = out->kind == 'U' ? 4 * (uint64_t)n : n;
        return TILEOPT_OK;
    }
    for (size_t i = 0; i < countof(npy_types); i++)
        if (npy_types[i].kind == out->kind && npy_types[i].size == n) {
            out->elem = npy_types[i].elem;
            out->item = n;
            return TILEOPT_OK;
        }
    return err_set(err, TILEOPT_UNSUPPORTED, "dtype '%s' has no ONNX element type%s", d,
                   out->kind == 'O' ? " (an object array: save strings as str)" : "");
}

/* ----------------------------------------------------------------- header */

/* The value after 'key': in a header dict, or NULL. */
static const char *dict_value(const char *h, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

typedef struct npy_header {
    npy_descr descr;
    int32_t rank;
    int64_t dims[TENSOR_MAX_RANK];
    size_t data_at;          /* offset of the data in the file */
} npy_header;

static int parse_shape(const char *p, npy_header *h, errbuf *err) {
    if (!p || *p != '(') return err_set(err, TILEOPT_INVALID, "the header has no shape");
    p++;
    h->rank = 0;
    for (;;) {
        while (*p == ' ') p++;
        if (*p == ')') return TILEOPT_OK;
        if (*p < '0' || *p > '9')
            return err_set(err, TILEOPT_INVALID, "the shape holds something else than sizes");
        char *end;
        unsigned long long d = strtoull(p, &end, 10);
        if (d > INT64_MAX)
            return err_set(err, TILEOPT_INVALID, "a dim of the shape is too big (%.20s)", p);
        if (h->rank == TENSOR_MAX_RANK)
            return err_set(err, TILEOPT_LIMIT, "the shape has more than %d dims",
                           TENSOR_MAX_RANK);
        h->dims[h->rank++] = (int64_t)d;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        else if (*p != ')') return err_set(err, TILEOPT_INVALID, "the shape is malformed");
    }
}

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static int parse_header(const uint8_t *b, size_t size, npy_header *h, errbuf *err) {
    memset(h, 0, sizeof *h);
    if (!npy_is_npy(b, size) || size < 10)
        return err_set(err, TILEOPT_PARSE, "not a .npy file (no \\x93NUMPY magic)");
    uint8_t major = b[6];
    if (major < 1 || major > 3)
        return err_set(err, TILEOPT_UNSUPPORTED, ".npy format version %u is unknown", major);
    size_t fixed = major == 1 ? 10 : 12;
    if (size < fixed) return err_set(err, TILEOPT_PARSE, "the .npy header is cut short");
    uint64_t hlen = major == 1 ? le16(b + 8) : le32(b + 8);
    if (hlen > NPY_MAX_HEADER)
        return err_set(err, TILEOPT_INVALID, "the .npy header claims %" PRIu64 " bytes", hlen);
    if (hlen > size - fixed)
        return err_set(err, TILEOPT_PARSE, "the .npy header is cut short (%" PRIu64
                       " bytes announced, %zu there)", hlen, size - fixed);
    char *text = malloc(hlen + 1);
    if (!text) return err_set(err, TILEOPT_NOMEM, "out of memory");
    memcpy(text, b + fixed, hlen);
    text[hlen] = '\0';
    if (strlen(text) != hlen) {
        free(text);
        return err_set(err, TILEOPT_INVALID, "the .npy header holds a NUL byte");
    }
    int rc = TILEOPT_OK;
    const char *d = dict_value(text, "descr"), *f = dict_value(text, "fortran_order");
    char descr[32];
    size_t dl = d && *d == '\'' ? strcspn(d + 1, "'") : 0;
    if (!dl || dl >= sizeof descr || d[1 + dl] != '\'')
        rc = err_set(err, TILEOPT_UNSUPPORTED, "the header has no plain 'descr' (a structured "
                     "array?)");
    if (!rc) {
        memcpy(descr, d + 1, dl);
        descr[dl] = '\0';
        rc = parse_descr(descr, &h->descr, err);
    }
    if (!rc && (!f || (strncmp(f, "False", 5) && strncmp(f, "True", 4))))
        rc = err_set(err, TILEOPT_INVALID, "the header has no fortran_order");
    if (!rc && strncmp(f, "True", 4) == 0)
        rc = err_set(err, TILEOPT_UNSUPPORTED, "a Fortran-order array: save "
                     "numpy.ascontiguousarray(a)");
    if (!rc) rc = parse_shape(dict_value(text, "shape"), h, err);
    free(text);
    h->data_at = fixed + (size_t)hlen;
    return rc;
}

/* ------------------------------------------------------------------ decode */

static void swap_bytes(uint8_t *p, uint64_t n, uint64_t width) {
    for (uint64_t i = 0; i < n; i++, p += width)
        for (uint64_t a = 0, z = width - 1; a < z; a++, z--) {
            uint8_t t = p[a];
            p[a] = p[z];
            p[z] = t;
        }
}

/* One UTF-32 code point as UTF-8 into o (4 bytes at most); 0 when invalid. */
static size_t utf8_put(uint32_t c, uint8_t *o) {
    if (c < 0x80) { o[0] = (uint8_t)c; return 1; }
    if (c < 0x800) { o[0] = (uint8_t)(0xc0 | c >> 6); o[1] = (uint8_t)(0x80 | (c & 0x3f)); return 2; }
    if (c >= 0xd800 && c < 0xe000) return 0;
    if (c < 0x10000) {
        o[0] = (uint8_t)(0xe0 | c >> 12);
        o[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
        o[2] = (uint8_t)(0x80 | (c & 0x3f));
        return 3;
    }
    if (c > 0x10ffff) return 0;
    o[0] = (uint8_t)(0xf0 | c >> 18);
    o[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
    o[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
    o[3] = (uint8_t)(0x80 | (c & 0x3f));
    return 4;
}

/* The strings of a 'U' or 'S' array, each with its trailing NULs cut. */
static int decode_strings(const npy_header *h, const uint8_t *data, uint64_t n, tensor *t,
                          errbuf *err) {
    uint64_t item = h->descr.item;
    bool wide = h->descr.kind == 'U';
    uint8_t *buf = malloc(item ? item : 1); /* UTF-8 of n code points: at most 4n bytes */
    if (!buf) return err_set(err, TILEOPT_NOMEM, "out of memory");
    int rc = TILEOPT_OK;
    for (uint64_t i = 0; i < n && !rc; i++) {
        const uint8_t *e = data + i * item;
        size_t len = 0;
        if (!wide) {
            len = (size_t)item;
            while (len && !e[len - 1]) len--;
            memcpy(buf, e, len);
        } else {
            size_t chars = (size_t)(item / 4);
            while (chars && !le32(e + 4 * (chars - 1))) chars--;
            for (size_t c = 0; c < chars && !rc; c++) {
                const uint8_t *q = e + 4 * c;
                uint32_t cp = h->descr.swap ? (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
                                                  (uint32_t)q[2] << 8 | q[3]
                                            : le32(q);
                size_t k = utf8_put(cp, buf + len);
                if (!k)
                    rc = err_set(err, TILEOPT_INVALID, "string %" PRIu64 " holds U+%X, no "
                                 "Unicode character", i, cp);
                len += k;
            }
        }
        if (!rc) rc = tensor_set_string(t, i, buf, len, err);
    }
    free(buf);
    return rc;
}

int npy_decode(const void *bytes, size_t size, const eval_env *env, tensor **out,
               errbuf *err) {
    *out = NULL;
    npy_header h;
    int rc = parse_header(bytes, size, &h, err);
    if (rc) return rc;
    uint64_t n = 1, need;
    for (int32_t i = 0; i < h.rank; i++)
        if (__builtin_mul_overflow(n, (uint64_t)h.dims[i], &n))
            return err_set(err, TILEOPT_INVALID, "the shape's element count overflows");
    if (__builtin_mul_overflow(n, h.descr.item, &need))
        return err_set(err, TILEOPT_INVALID, "the array's byte size overflows");
    size_t have = size - h.data_at;
    if (need != have)
        return err_set(err, need > have ? TILEOPT_PARSE : TILEOPT_INVALID,
                       "the shape needs %" PRIu64 " bytes of data, the file holds %zu%s", need,
                       have, need > have ? " (cut short?)" : "");
    tensor *t;
    rc = tensor_new(h.descr.elem, h.dims, h.rank, env, &t, err);
    if (rc) return rc;
    const uint8_t *data = (const uint8_t *)bytes + h.data_at;
    if (h.descr.elem == DT_STRING) {
        rc = decode_strings(&h, data, n, t, err);
    } else {
        memcpy(t->data, data, (size_t)need);
        bool complex = h.descr.kind == 'c';
        if (h.descr.swap)
            swap_bytes(t->data, complex ? 2 * n : n, complex ? h.descr.item / 2 : h.descr.item);
        /* kernels read a bool as 0 or 1 */
        if (h.descr.elem == DT_BOOL)
            for (uint64_t i = 0; i < n; i++) t->data[i] = t->data[i] != 0;
    }
    if (rc) {
        tensor_free(t);
        return rc;
    }
    *out = t;
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------ encode */

/* Append to a growing buffer; false when memory ran out. */
typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    bool failed;
} buf;

static void put(buf *b, const void *data, size_t n) {
    if (b->failed) return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return;
            }
            cap *= 2;
        }
        uint8_t *g = realloc(b->p, cap);
        if (!g) {
            b->failed = true;
            return;
        }
        b->p = g;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_le(buf *b, uint64_t v, size_t n) {
    uint8_t x[8];
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, n);
}

/* The code point at s (UTF-8) and its length; 0 length when invalid. */
static size_t utf8_get(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || len > n) return 0;
    uint32_t v = len == 1 ? c : len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[k] & 0x3fu);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) return 0;
    *cp = v;
    return len;
}

/* Code points of a UTF-8 string, or SIZE_MAX when it is not UTF-8. */
static size_t utf8_count(const graph_bytes *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->len; n++) {
        uint32_t cp;
        size_t k = utf8_get(s->data + i, s->len - i, &cp);
        if (!k) return SIZE_MAX;
        i += k;
    }
    return n;
}

static void encode_strings(buf *b, const tensor *t, uint64_t n, bool wide, uint64_t width) {
    const graph_bytes *v = (const graph_bytes *)(const void *)t->data;
    for (uint64_t i = 0; i < n; i++) {
        size_t used = 0;
        if (!wide) {
            put(b, v[i].data, v[i].len);
            used = v[i].len;
        }
        for (size_t k = 0; wide && k < v[i].len; used++) {
            uint32_t cp = 0;
            k += utf8_get(v[i].data + k, v[i].len - k, &cp);
            put_le(b, cp, 4);
        }
        for (; used < width; used++) put_le(b, 0, wide ? 4 : 1);
    }
}

int npy_encode(const tensor *t_in, void **bytes, size_t *size, errbuf *err) {
    *bytes = NULL;
    *size = 0;
    if (t_in->kind != EVAL_TENSOR)
        return err_set(err, TILEOPT_UNSUPPORTED, "a %s has no .npy form",
                       value_kind_name(t_in->kind));
    tensor *t;
    int rc = tensor_contiguous((tensor *)t_in, NULL, &t, err);
    if (rc) return rc;
    int32_t elem = t->elem;
    for (size_t i = 0; i < countof(npy_bits); i++)
        if (npy_bits[i].elem == elem) elem = npy_bits[i].as;
    uint64_t n = tensor_numel(t), width = 0;
    char descr[32] = "";
    bool wide = true;
    if (elem == DT_STRING) {
        const graph_bytes *v = (const graph_bytes *)(const void *)t->data;
        for (uint64_t i = 0; i < n && wide; i++) wide = utf8_count(&v[i]) != SIZE_MAX;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t w = wide ? utf8_count(&v[i]) : v[i].len;
            if (w > width) width = w;
        }
        snprintf(descr, sizeof descr, "%s%" PRIu64, wide ? "<U" : "|S", width ? width : 1);
        if (!width) width = 1;
    }
    for (size_t i = 0; i < countof(npy_types) && !descr[0]; i++)
        if (npy_types[i].elem == elem)
            snprintf(descr, sizeof descr, "%c%c%u", npy_types[i].size == 1 ? '|' : '<',
                     npy_types[i].kind, npy_types[i].size);
    if (!descr[0]) {
        tensor_free(t);
        return err_set(err, TILEOPT_UNSUPPORTED, "element type %s has no numpy dtype",
                       dtype_name(t_in->elem));
    }
    char head[64 + 24 * TENSOR_MAX_RANK];
    int k = snprintf(head, sizeof head, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int32_t i = 0; i < t->rank; i++)
        k += snprintf(head + k, sizeof head - (size_t)k, "%s%" PRId64, i ? ", " : "", t->dims[i]);
    k += snprintf(head + k, sizeof head - (size_t)k, "%s), }", t->rank == 1 ? "," : "");
    /* numpy pads the header with spaces so the data starts on 64 bytes */
    size_t total = 10 + (size_t)k + 1, pad = (64 - total % 64) % 64;
    buf b = {0};
    put(&b, npy_magic, sizeof npy_magic);
    put(&b, "\x01\x00", 2);
    put_le(&b, (uint64_t)k + pad + 1, 2);
    put(&b, head, (size_t)k);
    for (size_t i = 0; i < pad; i++) put(&b, " ", 1);
    put(&b, "\n", 1);
    if (elem == DT_STRING) encode_strings(&b, t, n, wide, width);
    else put(&b, t->data, (size_t)tensor_nbytes(t));
    tensor_free(t);
    if (b.failed) {
        free(b.p);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    *bytes = b.p;
    *size = b.len;
    return TILEOPT_OK;
}

/* -------------------------------------------------------------------- npz */

/* One member as the central directory states it. */
typedef struct zip_entry {
    uint16_t flags, method;
    uint32_t crc;
    uint64_t csize, usize, local;
    const uint8_t *name;
    size_t name_len;
} zip_entry;

/* The zip64 extra field (id 1) fills in the sizes and offset stored as ~0. */
static int zip64_extra(const uint8_t *x, size_t n, zip_entry *e, errbuf *err) {
    while (n >= 4) {
        uint32_t id = le16(x), len = le16(x + 2);
        if (len > n - 4) break;
        if (id == 1) {
            const uint8_t *p = x + 4;
            size_t left = len;
            uint64_t *fields[3] = {&e->usize, &e->csize, &e->local};
            for (size_t i = 0; i < 3; i++) {
                if (*fields[i] != UINT32_MAX) continue;
                if (left < 8) return err_set(err, TILEOPT_PARSE, "a zip64 field is cut short");
                *fields[i] = le64(p);
                p += 8;
                left -= 8;
            }
            return TILEOPT_OK;
        }
        x += 4 + len;
        n -= 4 + len;
    }
    if (e->usize == UINT32_MAX || e->csize == UINT32_MAX || e->local == UINT32_MAX)
        return err_set(err, TILEOPT_PARSE, "a zip64 member without its zip64 field");
    return TILEOPT_OK;
}

/* The central directory: where it starts and how many members it lists. */
static int zip_directory(const uint8_t *b, size_t size, uint64_t *at, uint64_t *count,
                         errbuf *err) {
    if (size < 22) return err_set(err, TILEOPT_PARSE, "no zip archive (too short)");
    size_t lo = size - 22 > 65535 ? size - 22 - 65535 : 0;
    size_t e = size - 22 + 1;
    do {
        e--;
        if (le32(b + e) == 0x06054b50 && e + 22 + le16(b + e + 20) == size) break;
    } while (e > lo);
    if (le32(b + e) != 0x06054b50)
        return err_set(err, TILEOPT_PARSE, "no end of the zip directory (cut short?)");
    *count = le16(b + e + 10);
    uint64_t cd_size = le32(b + e + 12);
    *at = le32(b + e + 16);
    if (*count == 0xffff || *at == UINT32_MAX || cd_size == UINT32_MAX) {
        if (e < 20 || le32(b + e - 20) != 0x07064b50)
            return err_set(err, TILEOPT_PARSE, "a zip64 archive without its locator");
        uint64_t z = le64(b + e - 20 + 8);
        if (z > size || size - z < 56 || le32(b + z) != 0x06064b50)
            return err_set(err, TILEOPT_PARSE, "the zip64 directory end is out of the file");
        *count = le64(b + z + 32);
        cd_size = le64(b + z + 40);
        *at = le64(b + z + 48);
    }
    if (*at > size || cd_size > size - *at)
        return err_set(err, TILEOPT_PARSE, "the zip directory lies outside the file");
    if (*count > NPZ_MAX_MEMBERS || *count > cd_size / 46)
        return err_set(err, TILEOPT_PARSE, "the zip directory claims %" PRIu64 " members",
                       *count);
    return TILEOPT_OK;
}

static int zip_entry_at(const uint8_t *b, size_t size, uint64_t *at, zip_entry *e,
                        errbuf *err) {
    if (*at > size || size - *at < 46 || le32(b + *at) != 0x02014b50)
        return err_set(err, TILEOPT_PARSE, "a zip directory entry is malformed");
    const uint8_t *p = b + *at;
    memset(e, 0, sizeof *e);
    e->flags = (uint16_t)le16(p + 8);
    e->method = (uint16_t)le16(p + 10);
    e->crc = le32(p + 16);
    e->csize = le32(p + 20);
    e->usize = le32(p + 24);
    e->local = le32(p + 42);
    size_t nl = le16(p + 28), xl = le16(p + 30), cl = le16(p + 32);
    if (size - *at - 46 < nl + xl + cl)
        return err_set(err, TILEOPT_PARSE, "a zip directory entry is cut short");
    e->name = p + 46;
    e->name_len = nl;
    *at += 46 + nl + xl + cl;
    return zip64_extra(p + 46 + nl, xl, e, err);
}

/* The member's bytes, inflated when deflated, its CRC checked: *data is either
** into b (stored) or a new buffer (*owned). */
static int zip_member(const uint8_t *b, size_t size, const zip_entry *e, const char *name,
                      const eval_env *env, const uint8_t **data, uint8_t **owned,
                      errbuf *err) {
    *data = NULL;
    *owned = NULL;
    if (e->flags & 1) return err_set(err, TILEOPT_UNSUPPORTED, "'%s' is encrypted", name);
    if (e->local > size || size - e->local < 30 || le32(b + e->local) != 0x04034b50)
        return err_set(err, TILEOPT_PARSE, "'%s': its local header is not where the "
                       "directory says", name);
    uint64_t start = e->local + 30 + le16(b + e->local + 26) + le16(b + e->local + 28);
    if (start > size || e->csize > size - start)
        return err_set(err, TILEOPT_PARSE, "'%s' is cut short", name);
    uint64_t max = env->lim.max_tensor_bytes;
    if (max < UINT64_MAX - NPY_MAX_HEADER) max += NPY_MAX_HEADER;
    if (e->usize > max || e->usize > SIZE_MAX)
        return err_set(err, TILEOPT_LIMIT, "'%s' unpacks to %" PRIu64 " bytes, over the limit "
                       "of one tensor (--max-tensor-bytes)", name, e->usize);
    const uint8_t *src = b + start;
    if (e->method == 0) {
        if (e->csize != e->usize)
            return err_set(err, TILEOPT_PARSE, "'%s' is stored with two sizes", name);
        *data = src;
    } else if (e->method == 8) {
        uint8_t *o = malloc(e->usize ? (size_t)e->usize : 1);
        if (!o) return err_set(err, TILEOPT_NOMEM, "out of memory");
        z_stream z;
        memset(&z, 0, sizeof z);
        int zr = inflateInit2(&z, -MAX_WBITS);
        if (zr != Z_OK) {
            free(o);
            return err_set(err, TILEOPT_NOMEM, "out of memory (zlib)");
        }
        /* zlib counts in uInt: feed and drain in pieces */
        uint64_t in_left = e->csize;
        z.next_out = o;
        z.avail_out = 0;
        uint64_t out_left = e->usize;
        z.next_in = (Bytef *)(uintptr_t)src;
        do {
            if (!z.avail_in && in_left) {
                z.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
                in_left -= z.avail_in;
            }
            if (!z.avail_out && out_left) {
                z.avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
                out_left -= z.avail_out;
            }
            zr = inflate(&z, Z_NO_FLUSH);
        } while (zr == Z_OK && (z.avail_in || in_left) && (z.avail_out || out_left));
        bool whole = zr == Z_STREAM_END && z.total_out == e->usize;
        inflateEnd(&z);
        if (!whole) {
            free(o);
            return err_set(err, TILEOPT_PARSE, "'%s' does not inflate to the %" PRIu64
                           " bytes the directory states", name, e->usize);
        }
        *data = *owned = o;
    } else {
        return err_set(err, TILEOPT_UNSUPPORTED, "'%s' is compressed with zip method %u "
                       "(numpy writes stored or deflated members)", name, e->method);
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t done = 0; done < e->usize;) {
        uInt step = e->usize - done > UINT32_MAX ? UINT32_MAX : (uInt)(e->usize - done);
        crc = crc32(crc, *data + done, step);
        done += step;
    }
    if ((uint32_t)crc != e->crc) {
        free(*owned);
        *owned = NULL;
        *data = NULL;
        return err_set(err, TILEOPT_PARSE, "'%s' fails its CRC-32 check", name);
    }
    return TILEOPT_OK;
}

void npz_free(npz_arrays *a) {
    for (size_t i = 0; i < a->n; i++) {
        free(a->names[i]);
        tensor_free(a->values[i]);
    }
    free(a->names);
    free(a->values);
    memset(a, 0, sizeof *a);
}

int npz_decode(const void *bytes, size_t size, const eval_env *env, npz_arrays *out,
               errbuf *err) {
    memset(out, 0, sizeof *out);
    const uint8_t *b = bytes;
    uint64_t at = 0, count = 0;
    int rc = zip_directory(b, size, &at, &count, err);
    if (rc) return rc;
    out->names = calloc(count ? count : 1, sizeof *out->names);
    out->values = calloc(count ? count : 1, sizeof *out->values);
    if (!out->names || !out->values) {
        npz_free(out);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < count && !rc; i++) {
        zip_entry e;
        rc = zip_entry_at(b, size, &at, &e, err);
        if (rc) break;
        if (e.name_len < 5 || memcmp(e.name + e.name_len - 4, ".npy", 4) != 0) {
            rc = err_set(err, TILEOPT_UNSUPPORTED, "member '%.*s' is no .npy file",
                         (int)(e.name_len > 200 ? 200 : e.name_len), (const char *)e.name);
            break;
        }
        char *name = malloc(e.name_len - 3);
        if (!name) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        memcpy(name, e.name, e.name_len - 4);
        name[e.name_len - 4] = '\0';
        /* counted at once: npz_free releases it whatever fails next */
        size_t at_n = out->n++;
        out->names[at_n] = name;
        if (strlen(name) != e.name_len - 4) {
            rc = err_set(err, TILEOPT_INVALID, "a member's name holds a NUL byte");
            break;
        }
        for (size_t k = 0; k < at_n && !rc; k++)
            if (strcmp(out->names[k], name) == 0)
                rc = err_set(err, TILEOPT_INVALID, "'%s' is in the archive twice", name);
        const uint8_t *data = NULL;
        uint8_t *owned = NULL;
        if (!rc) rc = zip_member(b, size, &e, name, env, &data, &owned, err);
        if (!rc) {
            rc = npy_decode(data, (size_t)e.usize, env, &out->values[at_n], err);
            if (rc) err_prefix(err, "'%s': ", name);
        }
        free(owned);
    }
    if (rc) npz_free(out);
    return rc;
}

int npz_encode(const tensor *const *values, const char *const *names, size_t n, void **bytes,
               size_t *size, errbuf *err) {
    *bytes = NULL;
    *size = 0;
    if (n > 0xfffe) return err_set(err, TILEOPT_LIMIT, "more than 65534 arrays for one .npz");
    buf b = {0}, dir = {0};
    int rc = TILEOPT_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        void *npy;
        size_t len;
        rc = npy_encode(values[i], &npy, &len, err);
        if (rc) {
            err_prefix(err, "'%s': ", names[i]);
            break;
        }
        size_t nl = strlen(names[i]) + 4;
        if (len >= UINT32_MAX || b.len >= UINT32_MAX - len || nl > 0xffff) {
            free(npy);
            rc = err_set(err, TILEOPT_LIMIT, "'%s' does not fit a .npz without zip64 (4 GiB)",
                         names[i]);
            break;
        }
        uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), npy, (uInt)len);
        /* no time stamp (1980-01-01): the same outputs give the same bytes */
        for (int pass = 0; pass < 2; pass++) {
            buf *t = pass ? &dir : &b;
            uint64_t local = b.len - (pass ? 30 + nl + len : 0);
            put_le(t, pass ? 0x02014b50 : 0x04034b50, 4);
            if (pass) put_le(t, 20, 2);         /* made by */
            put_le(t, 20, 2);                   /* needed */
            put_le(t, 0, 2);                    /* flags */
            put_le(t, 0, 2);                    /* stored */
            put_le(t, 0, 2);                    /* time */
            put_le(t, 0x21, 2);                 /* date */
            put_le(t, crc, 4);
            put_le(t, len, 4);
            put_le(t, len, 4);
            put_le(t, nl, 2);
            put_le(t, 0, 2);                    /* extra */
            if (pass) {
                put_le(t, 0, 2);                /* comment */
                put_le(t, 0, 2);                /* disk */
                put_le(t, 0, 2);                /* internal attributes */
                put_le(t, 0, 4);                /* external attributes */
                put_le(t, local, 4);
            }
            put(t, names[i], nl - 4);
            put(t, ".npy", 4);
            if (!pass) put(t, npy, len);
        }
        free(npy);
    }
    if (!rc && (b.len >= UINT32_MAX || dir.len >= UINT32_MAX - b.len))
        rc = err_set(err, TILEOPT_LIMIT, "the .npz passes 4 GiB, which needs zip64");
    if (!rc) {
        uint64_t dir_at = b.len, dir_len = dir.len;
        put(&b, dir.p, dir.len);
        put_le(&b, 0x06054b50, 4);
        put_le(&b, 0, 4);
        put_le(&b, n, 2);
        put_le(&b, n, 2);
        put_le(&b, dir_len, 4);
        put_le(&b, dir_at, 4);
        put_le(&b, 0, 2);
        if (b.failed || dir.failed) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    free(dir.p);
    if (rc) {
        free(b.p);
        return rc;
    }
    *bytes = b.p;
    *size = b.len;
    return TILEOPT_OK;
}

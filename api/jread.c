/* The JSON reader of api/jread.h: recursive descent over the text, nodes and
** decoded strings in an arena. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/jread.h"

/* Deeper than any report nests; past it the text is refused, so a hostile file
** cannot exhaust the stack. */
#define JR_MAX_DEPTH 64

typedef struct reader {
    arena *a;                /* NULL: only skip (find where a value ends) */
    const char *p, *start, *end;
    const char *lazy_key;
    errbuf *err;
} reader;

static int fail(reader *r, const char *what) {
    return err_set(r->err, TILEOPT_PARSE, "report: %s at byte %zu", what,
                   (size_t)(r->p - r->start));
}

static void ws(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int hex4(const char *p, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16) return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string at r->p (the opening quote), decoded into the arena when there is
** one. Decoding never lengthens: every escape is at least as long as its bytes. */
static int string(reader *r, const char **s, size_t *len) {
    const char *q = ++r->p;
    while (q < r->end && *q != '"') {
        if (*q == '\\') q++;
        q++;
    }
    if (q >= r->end) return fail(r, "unterminated string");
    size_t raw = (size_t)(q - r->p);
    char *o = NULL;
    if (r->a && !(o = arena_alloc(r->a, raw + 1))) return err_set(r->err, TILEOPT_NOMEM, "report: out of memory");
    size_t n = 0;
    for (const char *c = r->p; c < q; c++) {
        if ((unsigned char)*c < 0x20) {
            r->p = c;
            return fail(r, "control character in a string");
        }
        if (*c != '\\') {
            if (o) o[n] = *c;
            n++;
            continue;
        }
        c++;
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = strchr(from, *c);
        if (*c && k) {
            if (o) o[n] = to[k - from];
            n++;
            continue;
        }
        unsigned cp;
        if (*c != 'u' || q - c < 5 || hex4(c + 1, &cp)) {
            r->p = c;
            return fail(r, "bad escape in a string");
        }
        c += 4;
        unsigned lo;
        /* a surrogate pair is one code point; a lone surrogate becomes U+FFFD */
        if (cp >= 0xD800 && cp < 0xDC00 && q - c >= 7 && c[1] == '\\' && c[2] == 'u' &&
            !hex4(c + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            c += 6;
        } else if (cp >= 0xD800 && cp < 0xE000) {
            cp = 0xFFFD;
        }
        char tmp[4];
        size_t k2 = put_utf8(o ? o + n : tmp, cp);
        n += k2;
    }
    if (o) o[n] = '\0';
    *s = o;
    *len = n;
    r->p = q + 1;
    return 0;
}

static int value(reader *r, jr *out, int depth, bool lazy);

/* Items of an array or members of an object, gathered in a growing buffer and
** copied into the arena once their count is known. */
static int container(reader *r, jr *out, int depth, bool object) {
    char close = object ? '}' : ']';
    r->p++;
    size_t n = 0, cap = 0;
    jr *items = NULL;
    const char **keys = NULL;
    int rc = 0;
    ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        goto done;
    }
    for (;;) {
        ws(r);
        const char *key = NULL;
        size_t klen;
        if (object) {
            if (r->p >= r->end || *r->p != '"') { rc = fail(r, "expected a key"); goto out; }
            if ((rc = string(r, &key, &klen))) goto out;
            ws(r);
            if (r->p >= r->end || *r->p != ':') { rc = fail(r, "expected ':'"); goto out; }
            r->p++;
        }
        if (r->a && n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            if (nc > SIZE_MAX / sizeof *items) { rc = err_set(r->err, TILEOPT_NOMEM, "report: out of memory"); goto out; }
            jr *ni = realloc(items, nc * sizeof *ni);
            if (!ni) { rc = err_set(r->err, TILEOPT_NOMEM, "report: out of memory"); goto out; }
            items = ni;
            const char **nk = realloc(keys, nc * sizeof *nk);
            if (!nk) { rc = err_set(r->err, TILEOPT_NOMEM, "report: out of memory"); goto out; }
            keys = nk;
            cap = nc;
        }
        jr item = {0};
        bool lazy = object && r->lazy_key && key && strcmp(key, r->lazy_key) == 0;
        if ((rc = value(r, &item, depth + 1, lazy))) goto out;
        if (r->a) {
            items[n] = item;
            keys[n] = key;
        }
        n++;
        ws(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        if (r->p < r->end && *r->p == close) { r->p++; break; }
        rc = fail(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
        goto out;
    }
done:
    out->type = object ? JR_OBJ : JR_ARR;
    out->n = n;
    if (r->a && n) {
        if (n > SIZE_MAX / sizeof *items ||
            !(out->items = arena_alloc(r->a, n * sizeof *items)) ||
            (object && !(out->keys = arena_alloc(r->a, n * sizeof *keys)))) {
            rc = err_set(r->err, TILEOPT_NOMEM, "report: out of memory");
            goto out;
        }
        memcpy(out->items, items, n * sizeof *items);
        if (object) memcpy(out->keys, keys, n * sizeof *keys);
    }
out:
    free(items);
    free(keys);
    return rc;
}

static int value(reader *r, jr *out, int depth, bool lazy) {
    if (depth > JR_MAX_DEPTH) return fail(r, "nested too deep");
    ws(r);
    if (r->p >= r->end) return fail(r, "unexpected end");
    char c = *r->p;
    if (c == '[' && lazy) {
        /* find the end without building anything */
        arena *keep = r->a;
        const char *from = r->p;
        r->a = NULL;
        int rc = container(r, out, depth, false);
        r->a = keep;
        if (rc) return rc;
        out->type = JR_LAZY;
        out->str = from;
        out->len = (size_t)(r->p - from);
        return 0;
    }
    if (c == '{' || c == '[') return container(r, out, depth, c == '{');
    if (c == '"') {
        out->type = JR_STR;
        return string(r, &out->str, &out->len);
    }
    static const struct { const char *word; jr_type type; bool b; } words[] = {
        {"true", JR_BOOL, true}, {"false", JR_BOOL, false}, {"null", JR_NULL, false}};
    for (size_t i = 0; i < countof(words); i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(r->end - r->p) >= n && memcmp(r->p, words[i].word, n) == 0) {
            out->type = words[i].type;
            out->b = words[i].b;
            r->p += n;
            return 0;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t n = 0;
        while (r->p + n < r->end && n + 1 < sizeof buf) {
            char d = r->p[n];
            if (!((d >= '0' && d <= '9') || d == '-' || d == '+' || d == '.' || d == 'e' ||
                  d == 'E'))
                break;
            n++;
        }
        memcpy(buf, r->p, n);
        buf[n] = '\0';
        char *e;
        out->type = JR_NUM;
        out->num = strtod(buf, &e);
        if (e != buf + n || !isfinite(out->num)) return fail(r, "bad number");
        r->p += n;
        return 0;
    }
    return fail(r, "unexpected character");
}

int jr_parse(arena *a, const char *text, size_t len, const char *lazy_key, jr *out,
             errbuf *err) {
    reader r = {a, text, text, text + len, lazy_key, err};
    memset(out, 0, sizeof *out);
    int rc = value(&r, out, 0, false);
    if (rc) return rc;
    ws(&r);
    if (r.p != r.end && !(r.p + 1 == r.end && *r.p == '\0')) return fail(&r, "text after the value");
    return 0;
}

int jr_lazy_next(arena *a, const jr *lazy, size_t *pos, jr *out, errbuf *err) {
    reader r = {a, lazy->str + *pos, lazy->str, lazy->str + lazy->len, NULL, err};
    if (*pos == 0) r.p++; /* the '[' */
    ws(&r);
    if (r.p < r.end && *r.p == ',') r.p++;
    ws(&r);
    if (r.p >= r.end || *r.p == ']') return 0;
    memset(out, 0, sizeof *out);
    int rc = value(&r, out, 1, false);
    if (rc) return -rc;
    *pos = (size_t)(r.p - lazy->str);
    return 1;
}

const jr *jr_get(const jr *o, const char *key) {
    if (!o || o->type != JR_OBJ) return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (o->keys[i] && strcmp(o->keys[i], key) == 0) return &o->items[i];
    return NULL;
}

const char *jr_str(const jr *o, const char *key) {
    const jr *v = jr_get(o, key);
    return v && v->type == JR_STR ? v->str : NULL;
}

double jr_num(const jr *o, const char *key, double dflt) {
    const jr *v = jr_get(o, key);
    return v && v->type == JR_NUM ? v->num : dflt;
}

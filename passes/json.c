/* The JSON writer (passes/json.h says the layout). */
#include "passes/json.h"

#include <math.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "graph/err.h"

/* ------------------------------------------------------------------- text */

void pass_text_put(pass_text *t, const char *s, size_t n) {
    if (t->failed || !n) return; /* nothing to copy, maybe into no buffer yet */
    if (n > t->cap - t->len) {
        size_t cap = t->cap ? t->cap : 4096;
        while (n > cap - t->len) {
            if (cap > SIZE_MAX / 2) {
                t->failed = true;
                return;
            }
            cap *= 2;
        }
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
}

void pass_text_vprintf(pass_text *t, const char *fmt, va_list ap) {
    char buf[1024];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n >= 0 && (size_t)n < sizeof buf) {
        pass_text_put(t, buf, (size_t)n);
    } else if (n >= 0) {
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, again);
            pass_text_put(t, big, (size_t)n);
            free(big);
        } else {
            t->failed = true;
        }
    }
    va_end(again);
}

void pass_text_printf(pass_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pass_text_vprintf(t, fmt, ap);
    va_end(ap);
}

void pass_text_str(pass_text *t, const char *s) { pass_text_put(t, s, strlen(s)); }

void pass_text_indent(pass_text *t, int depth) {
    static const char tabs[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    for (; depth > 0; depth -= 16) pass_text_put(t, tabs, depth < 16 ? (size_t)depth : 16);
}

/* Bytes a JSON string takes as they are: printable ASCII but the quote and the
** backslash. Names are almost always all of them, so runs go out in one copy. */
static bool plain_byte(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

void pass_text_quoted(pass_text *t, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0; /* measured at the first byte past ASCII */
    pass_text_put(t, "\"", 1);
    for (size_t i = 0;;) {
        size_t run = i;
        while (plain_byte(u[run])) run++;
        pass_text_put(t, s + i, run - i);
        i = run;
        unsigned char c = u[i];
        if (!c) break;
        if (c >= 0x80 && !n) n = i + strlen(s + i);
        size_t len = c >= 0x80 ? graph_utf8_len(u + i, n - i) : 0;
        if (len) { /* a whole UTF-8 sequence goes as it is */
            pass_text_put(t, s + i, len);
            i += len;
            continue;
        }
        char buf[8];
        const char *esc = buf;
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\t') esc = "\\t";
        else if (c == '\r') esc = "\\r";
        else if (c < 0x20) snprintf(buf, sizeof buf, "\\u%04x", c);
        else snprintf(buf, sizeof buf, "\\\\x%02x", c);
        pass_text_str(t, esc);
        i++;
    }
    pass_text_put(t, "\"", 1);
}

/* By hand: every dim, repeat and byte count of every action comes here. */
static void put_int(pass_text *t, int64_t x) {
    char buf[24];
    uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    char *p = buf + sizeof buf;
    *--p = '\0';
    do *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (x < 0) *--p = '-';
    pass_text_str(t, p);
}

static void put_double(pass_text *t, double v) {
    if (!isfinite(v)) {
        pass_text_str(t, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 9.2e18) {
        put_int(t, (int64_t)v);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    pass_text_str(t, buf);
}

/* ----------------------------------------------------------------- writer */

void json_init(json_w *w, pass_text *t, bool pretty, int base) {
    memset(w, 0, sizeof *w);
    w->t = t;
    w->pretty = pretty;
    w->base = base;
}

/* Before a value: the separator an array item needs. */
static bool value_at(json_w *w) {
    if (!w || w->t->failed) return false;
    int d = w->depth - 1;
    if (d >= 0 && w->is_array[d] && w->count[d]++)
        pass_text_put(w->t, w->pretty ? ", " : ",", w->pretty ? 2 : 1);
    return true;
}

static void open_container(json_w *w, bool array) {
    if (!w || w->depth == JSON_MAX_DEPTH) {
        if (w) w->t->failed = true;
        return;
    }
    value_at(w);
    w->is_array[w->depth] = array;
    w->count[w->depth] = 0;
    w->depth++;
    w->objects += !array;
    pass_text_put(w->t, array ? "[" : "{", 1);
}

void json_object(json_w *w) { open_container(w, false); }
void json_array(json_w *w) { open_container(w, true); }

/* The stack moves on a failed text too, so a caller closing what it opened
** always gets back to depth 0. */
void json_end(json_w *w) {
    if (!w || !w->depth) return;
    bool array = w->is_array[--w->depth];
    if (!array) {
        w->objects--;
        if (w->pretty && w->count[w->depth]) {
            pass_text_put(w->t, "\n", 1);
            pass_text_indent(w->t, w->base + w->objects);
        }
    }
    pass_text_put(w->t, array ? "]" : "}", 1);
}

void json_key(json_w *w, const char *key) {
    if (!w || w->t->failed || !w->depth || w->is_array[w->depth - 1]) return;
    if (w->count[w->depth - 1]++) pass_text_put(w->t, ",", 1);
    if (w->pretty) {
        pass_text_put(w->t, "\n", 1);
        pass_text_indent(w->t, w->base + w->objects);
    }
    pass_text_quoted(w->t, key);
    pass_text_put(w->t, w->pretty ? ":\t" : ":", w->pretty ? 2 : 1);
}

void json_str(json_w *w, const char *s) {
    if (value_at(w)) pass_text_quoted(w->t, s ? s : "");
}

void json_num(json_w *w, double v) {
    if (value_at(w)) put_double(w->t, v);
}

void json_int(json_w *w, int64_t v) {
    if (value_at(w)) put_int(w->t, v);
}

void json_bool(json_w *w, bool v) {
    if (value_at(w)) pass_text_str(w->t, v ? "true" : "false");
}

void json_null(json_w *w) {
    if (value_at(w)) pass_text_str(w->t, "null");
}

void json_raw(json_w *w, const char *text) {
    if (value_at(w)) pass_text_str(w->t, text);
}

void json_ints(json_w *w, const int64_t *v, size_t n) {
    json_array(w);
    for (size_t i = 0; i < n; i++) json_int(w, v[i]);
    json_end(w);
}

void json_floats(json_w *w, const float *v, size_t n) {
    json_array(w);
    for (size_t i = 0; i < n; i++) json_num(w, (double)v[i]);
    json_end(w);
}

void json_put_str(json_w *w, const char *key, const char *s) {
    json_key(w, key);
    json_str(w, s);
}

void json_put_num(json_w *w, const char *key, double v) {
    json_key(w, key);
    json_num(w, v);
}

void json_put_int(json_w *w, const char *key, int64_t v) {
    json_key(w, key);
    json_int(w, v);
}

void json_put_bool(json_w *w, const char *key, bool v) {
    json_key(w, key);
    json_bool(w, v);
}

void json_put_ints(json_w *w, const char *key, const int64_t *v, size_t n) {
    json_key(w, key);
    json_ints(w, v, n);
}

void json_put_floats(json_w *w, const char *key, const float *v, size_t n) {
    json_key(w, key);
    json_floats(w, v, n);
}

void json_members(json_w *w, const json_w *from) {
    if (!w || !from || w->t->failed || !w->depth || w->is_array[w->depth - 1]) return;
    if (from->t->failed) {
        w->t->failed = true;
        return;
    }
    if (from->depth < 1 || !from->count[0]) return;
    if (w->count[w->depth - 1]) pass_text_put(w->t, ",", 1);
    w->count[w->depth - 1] += from->count[0];
    /* past the brace that opened from's object */
    pass_text_put(w->t, from->t->p + 1, from->t->len - 1);
}

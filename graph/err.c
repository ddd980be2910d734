#include "graph/err.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t graph_utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || len > n) return 0;
    uint32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

/*
** Messages carry names from the model, which may hold anything. Control bytes
** and bytes that are not UTF-8 are written as \xNN, so an error stays one line
** that cannot paint the terminal, and stays valid text in JSON. Escaped text has
** neither, so escaping twice changes nothing. When the result is too long its
** middle gives way, not its end: the reason comes last in most messages.
*/
static void store(errbuf *err, const char *text) {
    size_t n = strlen(text), cap = sizeof err->msg;
    char *esc = malloc(4 * n + 1);
    if (!esc) {
        snprintf(err->msg, cap, "%s", text);
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char *s = (const unsigned char *)text + i;
        size_t len = graph_utf8_len(s, n - i);
        if (len && (len > 1 || (s[0] >= 0x20 && s[0] != 0x7f))) {
            memcpy(esc + k, s, len);
            k += len;
            i += len;
        } else {
            k += (size_t)sprintf(esc + k, "\\x%02x", s[0]);
            i++;
        }
    }
    esc[k] = '\0';
    if (k < cap) {
        memcpy(err->msg, esc, k + 1);
    } else {
        /* Cut at UTF-8 boundaries: keep the head and the tail around " ... ". */
        size_t head = cap / 2 - 3, tail = cap - 1 - head - 5;
        while (head && ((unsigned char)esc[head] & 0xc0) == 0x80) head--;
        size_t from = k - tail;
        while (from < k && ((unsigned char)esc[from] & 0xc0) == 0x80) from++;
        memcpy(err->msg, esc, head);
        memcpy(err->msg + head, " ... ", 5);
        memcpy(err->msg + head + 5, esc + from, k - from + 1);
    }
    free(esc);
}

static char *vformat(const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

tileopt_status err_set(errbuf *err, tileopt_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        char *text = vformat(fmt, ap);
        va_end(ap);
        if (text) {
            store(err, text);
            free(text);
        } else {
            snprintf(err->msg, sizeof err->msg, "out of memory while describing an error");
        }
        err->code = code;
    }
    return code;
}

tileopt_status err_prefix(errbuf *err, const char *fmt, ...) {
    if (!err) return TILEOPT_ERROR;
    va_list ap;
    va_start(ap, fmt);
    char *head = vformat(fmt, ap);
    va_end(ap);
    size_t h = head ? strlen(head) : 0, old = strnlen(err->msg, sizeof err->msg);
    char *text = head ? malloc(h + old + 1) : NULL;
    if (text) {
        memcpy(text, head, h);
        memcpy(text + h, err->msg, old);
        text[h + old] = '\0';
        store(err, text);
    }
    free(text);
    free(head);
    return err->code;
}

void err_clear(errbuf *err) {
    if (err) {
        err->code = TILEOPT_OK;
        err->msg[0] = '\0';
    }
}

#include "graph/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

tileopt_status err_set(errbuf *err, tileopt_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

tileopt_status err_prefix(errbuf *err, const char *fmt, ...) {
    if (!err) return TILEOPT_ERROR;
    char head[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    size_t h = n < 0 ? 0 : (size_t)n < sizeof head ? (size_t)n : sizeof head - 1;
    size_t old = strnlen(err->msg, sizeof err->msg - 1);
    if (h + old >= sizeof err->msg) old = sizeof err->msg - 1 - h;
    memmove(err->msg + h, err->msg, old);
    memcpy(err->msg, head, h);
    err->msg[h + old] = '\0';
    return err->code;
}

void err_clear(errbuf *err) {
    if (err) {
        err->code = TILEOPT_OK;
        err->msg[0] = '\0';
    }
}

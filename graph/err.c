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
    char head[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s%s", head, old);
    return err->code;
}

void err_clear(errbuf *err) {
    if (err) {
        err->code = TILEOPT_OK;
        err->msg[0] = '\0';
    }
}

/* An error code plus a message buffer, filled by the layer that knows what and
** where; the public API copies it into the context (tileopt_ctx_errmsg). */
#ifndef TILEOPT_ERR_H
#define TILEOPT_ERR_H

#include <stddef.h>

#include "tileopt.h"

typedef struct errbuf {
    tileopt_status code;
    char msg[1024];
} errbuf;

/* Record a failure (printf-style) and return its code, so callers can write
** `return err_set(err, TILEOPT_INVALID, "...")`. err may be NULL. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
tileopt_status err_set(errbuf *err, tileopt_status code, const char *fmt, ...);
/* Prefix the existing message with more context ("node X: " + msg). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
tileopt_status err_prefix(errbuf *err, const char *fmt, ...);
void err_clear(errbuf *err);
/* Length of the valid UTF-8 sequence at s (at most n bytes, n > 0), 0 when it is
** invalid: overlong forms, surrogates and code points past U+10FFFF included.
** Messages and JSON output escape the bytes it refuses as \xNN. */
size_t graph_utf8_len(const unsigned char *s, size_t n);

#endif

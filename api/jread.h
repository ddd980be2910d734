/*
** A small JSON reader for the page builder (api/html.c), which draws a report
** that may come from a file: `tileopt report REPORT.json IN OUT`. The library
** writes JSON with its own writer and the tests read it with cJSON, which the
** library does not link (a wheel needs only libc), hence this.
**
** A report of a 400k-node model holds a million members: the arrays under a
** "lazy" key (the passes' actions) are kept as their text and read item by item
** into a scratch arena, so no tree of the whole report is ever built.
*/
#ifndef TILEOPT_JREAD_H
#define TILEOPT_JREAD_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/graph.h"

typedef enum jr_type { JR_NULL, JR_BOOL, JR_NUM, JR_STR, JR_ARR, JR_OBJ, JR_LAZY } jr_type;

typedef struct jr {
    jr_type type;
    bool b;
    double num;
    const char *str;         /* JR_STR: decoded, NUL-terminated; JR_LAZY: the text */
    size_t len;              /* of str */
    struct jr *items;        /* JR_ARR, JR_OBJ: n values */
    const char **keys;       /* JR_OBJ: n keys */
    size_t n;
} jr;

/* Parse text[0..len) into *out, every node in a. Arrays that are the value of
** a member named lazy_key (NULL: none) become JR_LAZY. TILEOPT_PARSE with the
** byte offset on malformed text, TILEOPT_NOMEM. */
int jr_parse(arena *a, const char *text, size_t len, const char *lazy_key, jr *out,
             errbuf *err);

/* The items of a JR_LAZY array, one at a time: *pos starts at 0; each call
** parses the next item into *out (nodes in a) and returns 1; 0 at the end;
** minus the status (TILEOPT_PARSE, TILEOPT_NOMEM) on error. */
int jr_lazy_next(arena *a, const jr *lazy, size_t *pos, jr *out, errbuf *err);

/* Member key of an object, or NULL (also when o is NULL or no object). */
const jr *jr_get(const jr *o, const char *key);
/* The string of member key, or NULL when absent or not a string. */
const char *jr_str(const jr *o, const char *key);
/* The number of member key, or dflt. */
double jr_num(const jr *o, const char *key, double dflt);

#endif

/*
** JSON text, written as it goes (passes/json.c): the report, its actions,
** inspect and verify all come out through one writer, so they share one layout
** and one way to fail.
**
** A report of a 400k-node model holds a million members: a tree of them would
** cost several times their text, so nothing is built and then printed.
**
** Layout: pretty objects put each member on a line of its own, indented with
** one tab per enclosing object, and a tab after the colon; arrays stay on one
** line (", " between items); a compact writer puts nothing between tokens but
** the commas and colons. Integers print exactly (never 1e+18), other numbers
** as the shortest %g that reads back the same double, non-finite ones as null.
** Bytes that are not UTF-8 become the text \xNN, so any parser reads the text.
**
** A failed allocation sets the text's `failed` and drops everything after it:
** whoever finishes the text checks it once. Every function takes a NULL
** writer and does nothing, so a caller holding no record need not check.
*/
#ifndef TILEOPT_JSON_H
#define TILEOPT_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing text buffer. */
typedef struct pass_text {
    char *p;
    size_t len, cap;
    bool failed;
} pass_text;
void pass_text_put(pass_text *t, const char *s, size_t n);
void pass_text_str(pass_text *t, const char *s);
/* printf onto the text, however long the result. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void pass_text_printf(pass_text *t, const char *fmt, ...);
void pass_text_vprintf(pass_text *t, const char *fmt, va_list ap);
/* Tabs for depth levels of indentation. */
void pass_text_indent(pass_text *t, int depth);
/* s as a JSON string, quotes included. */
void pass_text_quoted(pass_text *t, const char *s);

/* Deeper than any report or record nests; past it the text fails. */
#define JSON_MAX_DEPTH 16

typedef struct json_w {
    pass_text *t;
    bool pretty;
    int depth;               /* open containers */
    int objects;             /* open objects among them: the indentation */
    int base;                /* indentation of the text the writer continues */
    bool is_array[JSON_MAX_DEPTH];
    uint32_t count[JSON_MAX_DEPTH]; /* members or items written so far */
} json_w;

/* A writer appending to t; base is the indentation (in objects) around it. */
void json_init(json_w *w, pass_text *t, bool pretty, int base);

void json_object(json_w *w);
void json_array(json_w *w);
void json_end(json_w *w);    /* closes the innermost object or array */
/* The key of the next member of the open object. */
void json_key(json_w *w, const char *key);

void json_str(json_w *w, const char *s);
void json_num(json_w *w, double v);
void json_int(json_w *w, int64_t v);
void json_bool(json_w *w, bool v);
void json_null(json_w *w);
/* Text that is JSON already, as it is. */
void json_raw(json_w *w, const char *text);
/* Arrays of numbers: int64s exactly, floats as the doubles they are. */
void json_ints(json_w *w, const int64_t *v, size_t n);
void json_floats(json_w *w, const float *v, size_t n);

/* A member in one call: key, then the value. */
void json_put_str(json_w *w, const char *key, const char *s);
void json_put_num(json_w *w, const char *key, double v);
void json_put_int(json_w *w, const char *key, int64_t v);
void json_put_bool(json_w *w, const char *key, bool v);
void json_put_ints(json_w *w, const char *key, const int64_t *v, size_t n);
void json_put_floats(json_w *w, const char *key, const float *v, size_t n);

/* The members written so far into the object `from` opened first, appended to
** w's open object: details a caller wrote before it knew whether they would be
** recorded. Both writers compact. */
void json_members(json_w *w, const json_w *from);

#endif

/*
** The report as a page (api/html.c) and the drawings on it (api/html_draw.c):
** what the two share.
**
** A drawing is one side (before or after) of a region a pass rewrote: the
** nodes the action names, every node that produces or consumes a value they
** touch (one hop), the constants, graph inputs and outputs among those values.
** It is laid out here, in C, as a layered graph (top to bottom), and written
** either as inline SVG or as a compact JSON record that the page's small script
** turns into the same SVG on demand: the layout is computed once, in one place.
*/
#ifndef TILEOPT_HTML_H
#define TILEOPT_HTML_H

#include "api/ctx.h"
#include "api/jread.h"

/* Labels in drawings and names in headings are cut to these many bytes, so a
** 1 MiB node name costs the page a few hundred bytes wherever it shows. */
#define HTML_LABEL_BYTES 40
#define HTML_NAME_BYTES 200

/* One model's main graph, its nodes found again by name (or, unnamed, by
** their first output). g NULL: no model given; nothing is drawn from it. */
typedef struct html_side {
    graph *g;
    uint32_t *slots;         /* node index + 1; a power of two, at most half full */
    uint32_t n_slots;
    /* the subgraphs, by the path reports name them with, listed on first need;
    ** and the side of the last one asked for */
    char **paths;
    graph **graphs;
    size_t n_graphs;
    bool listed;
    struct html_side *sub;
    size_t sub_at;
} html_side;
int html_side_init(html_side *s, tileopt_model *m);
void html_side_free(html_side *s);
/* The side of s's subgraph at path ("loop/body/gate/then_branch"), or NULL
** when s has none there (or no memory to find it). */
const html_side *html_side_sub(html_side *s, const char *path);

/* What a card says of its action, besides the drawings. */
typedef struct html_action {
    const char *node, *op, *action, *pass, *rule, *graph;
    const jr *obj;           /* the whole action, for its details */
} html_action;

/* The before and after drawings of one action, laid out. */
typedef struct html_pair html_pair;
html_pair *html_pair_new(void);
void html_pair_free(html_pair *p);
/* Lay out the region of action a between the two models. */
void html_pair_build(html_pair *p, const html_side *before, const html_side *after,
                     const html_action *a);
/* Side 0 (before) or 1 (after) as an inline <svg>. */
void html_pair_svg(pass_text *t, const html_pair *p, int side);
/* Both sides as JSON arrays [W,H,[items],[edges]], comma-separated. */
void html_pair_record(pass_text *t, const html_pair *p);

/* s escaped for HTML text and attribute values: & < > " ' as entities, bytes
** that are not UTF-8 and control characters as U+FFFD, cut after max bytes
** with an ellipsis. */
void html_esc(pass_text *t, const char *s, size_t max);
/* s as a JSON string for the page's data (the same cut and replacement; < >
** & as \u escapes, so the text can sit anywhere in a page). */
void html_jstr(pass_text *t, const char *s, size_t max);
/* printf into t. */

#endif

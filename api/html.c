/* The report as one self-contained HTML page (tileopt_html): the summary a
** reader asks for first, the op and pass tables, a card per action with the
** before and after drawings of its region, and the nodes the passes left alone
** grouped by reason. No network, no external script, style or font.
**
** Big models: the first HTML_INLINE_CARDS cards are inline SVG; the rest are
** grouped by rule and kept as laid-out records (api/html_draw.c), deflated in
** blocks that the page's script inflates and draws when a group is opened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "api/html.h"
#include "api/html_page_js.h"
#include "shape/infer.h"

/* Reasons for skipping shown as groups of their own; a report that gives
** every node a reason of its own gets the rest counted, not listed. */
#define HTML_SKIP_GROUPS 500
/* Cards drawn inline before the rest go to groups drawn on demand. */
#define HTML_INLINE_CARDS 300
/* Per skipping reason: nodes with a drawing on demand, and nodes listed. */
#define HTML_SKIP_DRAWN 100
#define HTML_SKIP_LISTED 1000
/* Records per deflated block: the page inflates one block per 256 cards. */
#define HTML_BLOCK 256

/* ----------------------------------------------------------------- SHA-256 */

/* The page's Content-Security-Policy lets exactly its own script run, named by
** its SHA-256: whatever a model's strings hold, no other script can. */
static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) +
                      sha_k[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

static void sha256(const void *data, size_t n, unsigned char out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) sha_block(h, p + i);
    unsigned char last[128] = {0};
    size_t r = n - i;
    memcpy(last, p + i, r);
    last[r] = 0x80;
    size_t blocks = r + 9 > 64 ? 2 : 1;
    uint64_t bits = (uint64_t)n * 8;
    for (int b = 0; b < 8; b++) last[blocks * 64 - 1 - b] = (unsigned char)(bits >> (8 * b));
    for (size_t b = 0; b < blocks; b++) sha_block(h, last + 64 * b);
    for (int j = 0; j < 8; j++)
        for (int b = 0; b < 4; b++) out[4 * j + b] = (unsigned char)(h[j] >> (24 - 8 * b));
}

static void base64(pass_text *t, const unsigned char *p, size_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        q[0] = abc[v >> 18];
        q[1] = abc[(v >> 12) & 63];
        q[2] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
        q[3] = i + 2 < n ? abc[v & 63] : '=';
        pass_text_put(t, q, 4);
    }
}

/* ------------------------------------------------------------------ report */

typedef struct act_ref {
    uint32_t pass;           /* index in the report's passes */
    uint32_t group;          /* in groups */
    size_t off, len;         /* the action's text within its pass's actions */
    bool skipped;
    uint32_t record;         /* UINT32_MAX: inline, or no drawing */
    uint32_t next;           /* the next action of its group; UINT32_MAX: none */
} act_ref;

typedef struct page {
    tileopt_ctx *ctx;
    pass_text *t;
    jr root;
    const jr *passes;        /* array */
    html_side side[2];
    html_pair *pair;
    act_ref *acts;
    size_t n_acts, n_changed, n_skipped;
    api_names groups;        /* "pass\x1faction\x1frule" with counts */
    uint32_t *group_rec;     /* first record of each group */
    uint32_t *group_first;   /* first action of each group, then along act_ref.next */
    size_t n_records;
    arena *scratch;
} page;

static const jr *pass_at(const page *pg, size_t i) { return &pg->passes->items[i]; }

/* Skipped nodes are grouped by the general part of their reason, before the
** first ": " ("repeats are known only symbolically: [N,1]" groups with
** "...: [M,2]"); *len is its length. */
static size_t reason_head(const char *reason) {
    const char *c = strstr(reason, ": ");
    return c ? (size_t)(c - reason) : strlen(reason);
}

static const char *rule_text(const jr *a) {
    const char *s = jr_str(a, "rule_name");
    if (!s) s = jr_str(a, "rule");
    if (!s) s = jr_str(a, "reason");
    return s ? s : "";
}

/* The action at r, parsed into the scratch arena. */
static int act_parse(page *pg, const act_ref *r, jr *out) {
    const jr *lazy = jr_get(pass_at(pg, r->pass), "actions");
    return jr_parse(pg->scratch, lazy->str + r->off, r->len, NULL, out, &pg->ctx->err);
}

static void human_bytes(pass_text *t, double b) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (b >= 1024 && u + 1 < countof(unit)) {
        b /= 1024;
        u++;
    }
    pass_text_printf(t, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

/* A value of an action's details as short text: numbers, strings, arrays and
** objects of them. */
static void value_text(pass_text *t, const jr *v, int depth) {
    switch (v->type) {
    case JR_NULL: pass_text_str(t, "null"); break;
    case JR_BOOL: pass_text_str(t, v->b ? "true" : "false"); break;
    case JR_NUM:
        /* whole numbers exactly (byte counts, dims); the range check first, as
        ** a double past long long's has no conversion */
        if (v->num > -9e18 && v->num < 9e18 && v->num == (double)(long long)v->num)
            pass_text_printf(t, "%lld", (long long)v->num);
        else pass_text_printf(t, "%.4g", v->num);
        break;
    case JR_STR: pass_text_str(t, v->str); break;
    case JR_ARR:
    case JR_OBJ:
        pass_text_str(t, v->type == JR_ARR ? "[" : "{");
        for (size_t i = 0; i < v->n && depth < 4; i++) {
            if (i == 16) {
                pass_text_str(t, ", ...");
                break;
            }
            if (i) pass_text_str(t, ",");
            if (v->type == JR_OBJ) pass_text_printf(t, "%s: ", v->keys[i]);
            value_text(t, &v->items[i], depth + 1);
        }
        pass_text_str(t, v->type == JR_ARR ? "]" : "}");
        break;
    case JR_LAZY: break;
    }
}

/* The action's other members, "tile: t · repeats: [1,3,1] ...", as plain
** text (NUL-terminated in t). */
static void details_text(pass_text *t, const jr *a) {
    static const char *const shown_elsewhere[] = {"node", "op", "action", "rule", "rule_name",
                                                  "reason", "graph"};
    bool first = true;
    for (size_t i = 0; i < a->n; i++) {
        bool skip = false;
        for (size_t k = 0; k < countof(shown_elsewhere); k++)
            skip |= strcmp(a->keys[i], shown_elsewhere[k]) == 0;
        if (skip) continue;
        pass_text_printf(t, "%s%s: ", first ? "" : " \xc2\xb7 ", a->keys[i]);
        value_text(t, &a->items[i], 0);
        first = false;
    }
    const char *g = jr_str(a, "graph");
    if (g) pass_text_printf(t, "%sin subgraph %s", first ? "" : " \xc2\xb7 ", g);
    pass_text_put(t, "", 1);
}

static html_action action_of(const page *pg, const act_ref *r, const jr *a) {
    return (html_action){jr_str(a, "node"), jr_str(a, "op"),   jr_str(a, "action"),
                         jr_str(pass_at(pg, r->pass), "name"), rule_text(a),
                         jr_str(a, "graph"), a};
}

/* ------------------------------------------------------------------- parts */

static const char page_style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:0 16px;"
    "color:#222;background:#fff}"
    "h1{font-size:18px;margin:10px 0 4px}.top{display:flex;flex-wrap:wrap;gap:6px 28px;"
    "align-items:flex-start}.facts{max-width:420px}.facts p{margin:2px 0}"
    ".scroll{max-height:190px;overflow-y:auto}"
    "h1{font-size:18px;margin:10px 0 4px}h2{font-size:17px;margin:22px 0 6px;"
    "border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;margin:4px 0;font-size:13px}td,th{padding:1px 8px;text-align:right;"
    "border-bottom:1px solid #eee}th:first-child,td:first-child{text-align:left}"
    "tr.chg td{font-weight:600}#passes td:last-child{text-align:left}"
    "code,.g text{font-family:ui-monospace,Menlo,Consolas,monospace}"
    ".verdict-match{color:#176b1d}.verdict-mismatch{color:#b00020}.verdict-skipped{color:#8a5a00}"
    ".card{border:1px solid #ccc;border-radius:6px;padding:6px 10px;margin:8px 0}"
    ".card h3{font-size:14px;margin:2px 0}.act{font-weight:700;text-transform:uppercase;"
    "font-size:11px;padding:1px 5px;border-radius:3px;background:#e8e8e8}"
    ".op{font-weight:600}.pass{color:#666;font-size:12px}.rule{margin:2px 0}"
    ".det{margin:2px 0;color:#555;font-size:12px;word-break:break-all}"
    ".pair{display:flex;gap:12px;align-items:flex-start;overflow-x:auto}"
    "figure{margin:0;border:1px solid #eee;border-radius:4px;padding:2px 4px;min-width:120px}"
    "figcaption{font-size:11px;color:#666;text-transform:uppercase}"
    ".g{display:block;max-width:none}"
    ".g text{font-size:11px;text-anchor:middle;fill:#222}.g .l2{fill:#555;font-size:10px}"
    ".g text.el,.g text.none{text-anchor:start;fill:#666;font-size:10px}"
    ".g path.e{fill:none;stroke:#888;stroke-width:1.2;marker-end:url(#arrow)}"
    ".g rect{fill:#f6f6f6;stroke:#999}"
    ".g .const rect{fill:#fffbe6;stroke:#b59f3b;stroke-dasharray:3 2}"
    ".g .input rect,.g .output rect{fill:#eef4ff;stroke:#6b8cc7}"
    ".g .removed rect{fill:#fde2e2;stroke:#c62828}.g .added rect{fill:#e3f6e3;stroke:#2e7d32}"
    ".g .changed rect{fill:#fff1d6;stroke:#d08a00}.g .focus rect{stroke-width:2.5}"
    ".legend span{display:inline-block;padding:0 6px;margin-right:6px;border:1px solid}"
    ".legend .removed{background:#fde2e2;border-color:#c62828}"
    ".legend .added{background:#e3f6e3;border-color:#2e7d32}"
    ".legend .changed{background:#fff1d6;border-color:#d08a00}"
    ".legend .const{background:#fffbe6;border-color:#b59f3b}"
    "details{margin:4px 0}summary{cursor:pointer}ul.sk{list-style:none;padding-left:16px}"
    ".err{color:#b00020}button.more{margin:4px 0}";

static void head(page *pg, const char *title) {
    pass_text *t = pg->t;
    unsigned char hash[32];
    sha256(html_page_js, strlen(html_page_js), hash);
    pass_text_str(t, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                     "style-src 'unsafe-inline'; img-src data:; script-src 'sha256-");
    base64(t, hash, sizeof hash);
    pass_text_str(t, "'\"><meta name=\"viewport\" content=\"width=device-width\">"
                     "<meta name=\"generator\" content=\"tileopt " TILEOPT_VERSION "\"><title>");
    html_esc(t, title, HTML_NAME_BYTES);
    pass_text_str(t, "</title><style>");
    pass_text_str(t, page_style);
    pass_text_str(t, "</style></head><body>"
                     "<svg width=\"0\" height=\"0\" style=\"position:absolute\"><defs>"
                     "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
                     "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">"
                     "<path d=\"M0 0L10 5L0 10z\" fill=\"#888\"/></marker></defs></svg>\n");
}

static double stat_of(const jr *model, const char *key) { return jr_num(model, key, 0); }

static void opsets_text(pass_text *t, const jr *model) {
    const jr *o = jr_get(model, "opset_import");
    for (size_t i = 0; o && o->type == JR_ARR && i < o->n && i < 32; i++) {
        const char *d = jr_str(&o->items[i], "domain");
        if (i) pass_text_str(t, ", ");
        html_esc(t, d && d[0] ? d : "ai.onnx", HTML_LABEL_BYTES);
        pass_text_printf(t, " %.0f", jr_num(&o->items[i], "version", 0));
    }
}

static void summary(page *pg) {
    pass_text *t = pg->t;
    const jr *in = jr_get(&pg->root, "input"), *out = jr_get(&pg->root, "output");
    pass_text_str(t, "<header><h1>tileopt: <code>");
    html_esc(t, jr_str(in, "path"), HTML_NAME_BYTES);
    pass_text_str(t, "</code> \xe2\x86\x92 <code>");
    html_esc(t, jr_str(out, "path"), HTML_NAME_BYTES);
    pass_text_str(t, "</code></h1><div class=\"top\">");
    const jr *sides[2] = {in, out};
    pass_text_str(t, "<table id=\"summary\"><tr><th></th><th>before</th><th>after</th></tr>"
                     "<tr><th>model size</th>");
    for (int s = 0; s < 2; s++) {
        double b = stat_of(sides[s], "file_bytes") + stat_of(sides[s], "external_data_bytes");
        pass_text_printf(t, "<td id=\"bytes-%d\" data-v=\"%.0f\">", s, b);
        human_bytes(t, b);
        pass_text_str(t, "</td>");
    }
    static const struct { const char *key, *words; } rows[] = {
        {"nodes", "nodes"}, {"tiles", "Tile nodes"}, {"initializer_bytes", "initializer bytes"},
        {"ir_version", "IR version"}};
    for (size_t r = 0; r < countof(rows); r++) {
        pass_text_printf(t, "</tr><tr><th>%s</th>", rows[r].words);
        for (int s = 0; s < 2; s++) {
            const jr *v = jr_get(sides[s], rows[r].key);
            if (v && v->type == JR_NUM)
                pass_text_printf(t, "<td id=\"%s-%d\" data-v=\"%.0f\">%.0f</td>", rows[r].key, s, v->num,
                            v->num);
            else pass_text_printf(t, "<td id=\"%s-%d\">-</td>", rows[r].key, s);
        }
    }
    pass_text_str(t, "</tr><tr><th>opsets</th>");
    for (int s = 0; s < 2; s++) {
        pass_text_str(t, "<td>");
        opsets_text(t, sides[s]);
        pass_text_str(t, "</td>");
    }
    pass_text_str(t, "</tr></table><div class=\"facts\">");
    /* verify: the verdict, its reason, the inputs it ran on */
    const jr *v = jr_get(&pg->root, "verify");
    const char *verdict = jr_str(v, "verdict");
    if (verdict) {
        pass_text_str(t, "<p id=\"verify\">verify: <b class=\"verdict-");
        html_esc(t, verdict, 16);
        pass_text_str(t, "\">");
        html_esc(t, verdict, 32);
        pass_text_str(t, "</b>");
        const char *why = jr_str(v, "reason");
        if (why) {
            pass_text_str(t, ": ");
            html_esc(t, why, 400);
        }
        const jr *ins = jr_get(v, "inputs");
        const char *src = jr_str(v, "source");
        if (ins && ins->type == JR_ARR && ins->n) {
            pass_text_str(t, "<br>inputs");
            if (src) {
                pass_text_str(t, " (");
                html_esc(t, src, 32);
                if (src && strcmp(src, "random") == 0)
                    pass_text_printf(t, ", seed %.0f", jr_num(v, "seed", 0));
                pass_text_str(t, ")");
            }
            pass_text_str(t, ":");
            for (size_t i = 0; i < ins->n && i < 64; i++) {
                const jr *x = &ins->items[i];
                pass_text_str(t, i ? ", <code>" : " <code>");
                html_esc(t, jr_str(x, "name"), HTML_LABEL_BYTES);
                pass_text_str(t, "</code> ");
                html_esc(t, jr_str(x, "dtype"), 16);
                const jr *shape = jr_get(x, "shape");
                if (shape) {
                    pass_text_str(t, " ");
                    pass_text sub = {0};
                    value_text(&sub, shape, 0);
                    pass_text_put(&sub, "", 1);
                    if (sub.failed) t->failed = true;
                    else html_esc(t, sub.p, 200);
                    free(sub.p);
                }
                const char *file = jr_str(x, "file");
                if (file) {
                    pass_text_str(t, " from ");
                    html_esc(t, file, HTML_NAME_BYTES);
                }
            }
        }
        pass_text_str(t, "</p>");
    } else {
        pass_text_str(t, "<p id=\"verify\">verify: not run (optimize --verify runs it)</p>");
    }
    double ms = 0;
    for (size_t i = 0; i < pg->passes->n; i++) ms += jr_num(pass_at(pg, i), "duration_ms", 0);
    pass_text_printf(t, "<p>time in the passes: <span id=\"time\">%.1f ms</span>; "
                   "<span id=\"n-actions\" data-v=\"%zu\">%zu</span> actions changed the "
                   "model, <span id=\"n-skipped\" data-v=\"%zu\">%zu</span> nodes were left "
                   "with a reason. ",
                ms, pg->n_changed, pg->n_changed, pg->n_skipped, pg->n_skipped);
    const char *tool = jr_str(&pg->root, "version");
    pass_text_str(t, "tileopt ");
    html_esc(t, tool ? tool : "?", 32);
    pass_text_str(t, ".</p>");
    const jr *w = jr_get(&pg->root, "warnings");
    if (w && w->type == JR_ARR && w->n) {
        pass_text_str(t, "<ul id=\"warnings\">");
        for (size_t i = 0; i < w->n && i < 100; i++) {
            pass_text_str(t, "<li>warning: ");
            if (w->items[i].type == JR_STR) html_esc(t, w->items[i].str, 2000);
            pass_text_str(t, "</li>");
        }
        pass_text_str(t, "</ul>");
    }
    pass_text_str(t, "</div>");
}

/* After the tables at the top: what the colours of the drawings say. */
static void legend(page *pg) {
    pass_text *t = pg->t;
    pass_text_str(t, "</div><p class=\"legend\">Drawings: the input model (before) and the output "
                     "(after) around each rewritten node, one hop out. "
                     "<span class=\"removed\">removed</span><span class=\"added\">added</span>"
                     "<span class=\"changed\">changed</span><span class=\"const\">constant"
                     "</span> edges carry their shapes; a thick border marks the node the "
                     "action names.</p></header>\n");
}

static double op_count(const jr *ops, const char *op) {
    const jr *v = jr_get(ops, op);
    return v && v->type == JR_NUM ? v->num : 0;
}

static void ops_section(page *pg) {
    pass_text *t = pg->t;
    const jr *ob = jr_get(jr_get(&pg->root, "input"), "ops");
    const jr *oa = jr_get(jr_get(&pg->root, "output"), "ops");
    pass_text_str(t, "<div class=\"scroll\"><table id=\"ops\"><tr><th>op</th><th>before</th>"
                     "<th>after</th></tr>");
    /* changed rows first, then the rest, each in the report's order */
    for (int changed = 1; changed >= 0; changed--)
        for (int s = 0; s < 2; s++) {
            const jr *ops = s ? oa : ob;
            for (size_t i = 0; ops && ops->type == JR_OBJ && i < ops->n; i++) {
                const char *op = ops->keys[i];
                if (s && jr_get(ob, op)) continue; /* listed with the input's */
                double b = op_count(ob, op), a = op_count(oa, op);
                if ((b != a) != changed) continue;
                pass_text_str(t, changed ? "<tr class=\"chg\"><td>" : "<tr><td>");
                html_esc(t, op, HTML_LABEL_BYTES);
                pass_text_printf(t, "</td><td>%.0f</td><td>%.0f</td></tr>", b, a);
            }
        }
    pass_text_str(t, "</table></div>\n");
}

static void pass_table(page *pg) {
    pass_text *t = pg->t;
    size_t *acts_of = calloc(pg->passes->n + 1, sizeof *acts_of);
    if (!acts_of) {
        t->failed = true;
        return;
    }
    for (size_t k = 0; k < pg->n_acts; k++) acts_of[pg->acts[k].pass]++;
    pass_text_str(t, "<div class=\"scroll\"><table id=\"passes\"><tr><th>pass</th><th>nodes "
                     "changed</th><th>skipped</th><th>actions</th><th>ms</th><th>other "
                     "changes</th></tr>");
    for (size_t i = 0; i < pg->passes->n; i++) {
        const jr *p = pass_at(pg, i);
        size_t acts = acts_of[i];
        pass_text_str(t, "<tr><td>");
        html_esc(t, jr_str(p, "name"), HTML_LABEL_BYTES);
        double round = jr_num(p, "round", 1);
        if (round > 1) pass_text_printf(t, " (round %.0f)", round);
        pass_text_printf(t, "</td><td>%.0f</td><td>%.0f</td><td>%zu</td><td>%.1f</td><td>",
                    jr_num(p, "nodes_changed", 0), jr_num(p, "nodes_skipped", 0), acts,
                    jr_num(p, "duration_ms", 0));
        const jr *ch = jr_get(p, "changes");
        for (size_t k = 0; ch && ch->type == JR_OBJ && k < ch->n; k++) {
            const jr *v = &ch->items[k];
            if (k) pass_text_str(t, "; ");
            html_esc(t, ch->keys[k], HTML_LABEL_BYTES);
            if (v->type == JR_ARR) {
                pass_text_printf(t, " %zu", v->n);
            } else {
                pass_text sub = {0};
                value_text(&sub, v, 0);
                pass_text_put(&sub, "", 1);
                pass_text_str(t, " ");
                if (!sub.failed) html_esc(t, sub.p, 200);
                free(sub.p);
            }
        }
        const char *err = jr_str(p, "error");
        if (err) {
            pass_text_str(t, "<span class=\"err\">failed: ");
            html_esc(t, err, 2000);
            pass_text_str(t, "</span>");
        }
        pass_text_str(t, "</td></tr>");
    }
    pass_text_str(t, "</table></div>\n");
    free(acts_of);
}

/* "pass · action · rule" of group g (its key's separators shown). */
static void group_title(pass_text *t, const char *key) {
    const char *a = strchr(key, '\x1f'), *b = a ? strchr(a + 1, '\x1f') : NULL;
    if (!a || !b) return;
    pass_text_str(t, "<b>");
    html_esc(t, b + 1, 2000);
    pass_text_str(t, "</b> <span class=\"pass\">");
    char head[64];
    snprintf(head, sizeof head, "%.*s \xc2\xb7 %.*s", (int)(a - key) > 24 ? 24 : (int)(a - key),
             key, (int)(b - a - 1) > 24 ? 24 : (int)(b - a - 1), a + 1);
    html_esc(t, head, sizeof head);
    pass_text_str(t, "</span>");
}

static void rule_table(page *pg) {
    pass_text *t = pg->t;
    pass_text_printf(t, "<details><summary>Actions by rule: %zu rule%s</summary><table id=\"rules\">"
                   "<tr><th>rule</th><th>nodes</th></tr>", pg->groups.n, pg->groups.n == 1 ? "" : "s");
    for (size_t g = 0; g < pg->groups.n; g++) {
        if (g == HTML_SKIP_GROUPS) {
            pass_text_printf(t, "<tr><td>and %zu more</td><td></td></tr>", pg->groups.n - g);
            break;
        }
        pass_text_str(t, "<tr><td>");
        group_title(t, pg->groups.name[g]);
        pass_text_printf(t, "</td><td class=\"n\">%llu</td></tr>",
                    (unsigned long long)pg->groups.count[g]);
    }
    pass_text_str(t, "</table></details>\n");
}

/* The drawings of an action, in the graph it names: the main graph, or the
** subgraph at its "graph" path on each side (a side without it draws empty). */
static void build_pair(page *pg, const html_action *ha) {
    static const html_side none;
    const html_side *b = &pg->side[0], *a = &pg->side[1];
    if (ha->graph) {
        b = html_side_sub(&pg->side[0], ha->graph);
        a = html_side_sub(&pg->side[1], ha->graph);
    }
    html_pair_build(pg->pair, b ? b : &none, a ? a : &none, ha);
}

static int card_html(page *pg, const act_ref *r) {
    pass_text *t = pg->t;
    jr a;
    int rc = act_parse(pg, r, &a);
    if (rc) return rc;
    html_action ha = action_of(pg, r, &a);
    build_pair(pg, &ha);
    pass_text_str(t, "<article class=\"card A-");
    html_esc(t, ha.action, 16);
    pass_text_str(t, "\"><h3><span class=\"act\">");
    html_esc(t, ha.action, 32);
    pass_text_str(t, "</span> <span class=\"op\">");
    html_esc(t, ha.op, HTML_LABEL_BYTES);
    pass_text_str(t, "</span> <code>");
    html_esc(t, ha.node, HTML_NAME_BYTES);
    pass_text_str(t, "</code> <span class=\"pass\">");
    html_esc(t, ha.pass, HTML_LABEL_BYTES);
    pass_text_str(t, "</span></h3>");
    if (ha.rule[0]) {
        pass_text_str(t, "<p class=\"rule\">");
        html_esc(t, ha.rule, 2000);
        pass_text_str(t, "</p>");
    }
    pass_text det = {0};
    details_text(&det, &a);
    if (det.failed) t->failed = true;
    else if (det.p[0]) {
        pass_text_str(t, "<p class=\"det\">");
        html_esc(t, det.p, 4000);
        pass_text_str(t, "</p>");
    }
    free(det.p);
    pass_text_str(t, "<div class=\"pair\"><figure><figcaption>before</figcaption>");
    html_pair_svg(t, pg->pair, 0);
    pass_text_str(t, "</figure><figure><figcaption>after</figcaption>");
    html_pair_svg(t, pg->pair, 1);
    pass_text_str(t, "</figure></div></article>\n");
    return 0;
}

static int record_json(page *pg, pass_text *t, const act_ref *r) {
    jr a;
    int rc = act_parse(pg, r, &a);
    if (rc) return rc;
    html_action ha = action_of(pg, r, &a);
    build_pair(pg, &ha);
    const char *head[5] = {ha.node, ha.op, ha.action, ha.pass, ha.rule};
    pass_text_put(t, "[", 1);
    for (int k = 0; k < 5; k++) {
        html_jstr(t, head[k] ? head[k] : "", k == 4 ? 2000 : HTML_NAME_BYTES);
        pass_text_put(t, ",", 1);
    }
    pass_text det = {0};
    details_text(&det, &a);
    html_jstr(t, det.failed ? "" : det.p, 4000);
    if (det.failed) t->failed = true;
    free(det.p);
    pass_text_put(t, ",", 1);
    html_pair_record(t, pg->pair);
    pass_text_put(t, "]", 1);
    return 0;
}

/* ------------------------------------------------------------ the actions */

/* Every action of every pass, its group, and whether it is drawn inline or
** kept as a record (and which). */
static int collect(page *pg) {
    size_t cap = 0;
    for (size_t i = 0; i < pg->passes->n; i++) {
        const jr *lazy = jr_get(pass_at(pg, i), "actions");
        if (!lazy || lazy->type != JR_LAZY) continue;
        size_t pos = 0;
        for (;;) {
            jr a;
            size_t start = pos;
            int got = jr_lazy_next(pg->scratch, lazy, &pos, &a, &pg->ctx->err);
            if (got < 0) return -got;
            if (!got) break;
            if (pg->n_acts == cap) {
                size_t nc = cap ? cap * 2 : 256;
                if (nc > SIZE_MAX / sizeof *pg->acts) return err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
                act_ref *na = realloc(pg->acts, nc * sizeof *na);
                if (!na) return err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
                pg->acts = na;
                cap = nc;
            }
            /* the item's own text: past the '[' or ',' and blanks before it */
            const char *s = lazy->str + start + (start == 0);
            while (*s == ',' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
            const char *action = jr_str(&a, "action");
            bool skipped = action && strcmp(action, "skipped") == 0;
            pass_text key = {0};
            const char *pass = jr_str(pass_at(pg, i), "name"), *rule = rule_text(&a);
            pass_text_printf(&key, "%s\x1f%s\x1f%.*s", pass ? pass : "", action ? action : "",
                        (int)(skipped ? reason_head(rule) : strlen(rule)), rule);
            pass_text_put(&key, "", 1);
            if (key.failed || !api_names_bump(&pg->groups, key.p, 1)) {
                free(key.p);
                return err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
            }
            size_t g = api_names_find(&pg->groups, key.p);
            free(key.p);
            if (g >= UINT32_MAX - 1 || pg->n_acts >= UINT32_MAX - 1)
                return err_set(&pg->ctx->err, TILEOPT_LIMIT, "page: too many actions");
            pg->acts[pg->n_acts++] = (act_ref){(uint32_t)i, (uint32_t)g,
                                                (size_t)(s - lazy->str),
                                                (size_t)(lazy->str + pos - s), skipped,
                                                UINT32_MAX, UINT32_MAX};
            if (skipped) pg->n_skipped++;
            else pg->n_changed++;
            /* the scratch arena holds one action at a time */
            if (pg->n_acts % 4096 == 0) {
                arena_free(pg->scratch);
                if (!(pg->scratch = arena_new())) return err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
            }
        }
    }
    /* records: changed actions past the inline ones, and the first skipped
    ** nodes of each reason, contiguous per group */
    size_t ng = pg->groups.n;
    pg->group_rec = calloc(ng + 1, sizeof *pg->group_rec);
    pg->group_first = malloc((ng + 1) * sizeof *pg->group_first);
    uint32_t *group_n = calloc(ng + 1, sizeof *group_n);
    uint32_t *last = malloc((ng + 1) * sizeof *last);
    bool *shown = calloc(ng + 1, sizeof *shown);
    if (!pg->group_rec || !pg->group_first || !group_n || !last || !shown) {
        free(group_n);
        free(last);
        free(shown);
        return err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    for (size_t g = 0; g < ng; g++) pg->group_first[g] = last[g] = UINT32_MAX;
    size_t inline_n = 0, skip_groups = 0;
    for (size_t k = 0; k < pg->n_acts; k++) {
        act_ref *r = &pg->acts[k];
        if (last[r->group] == UINT32_MAX) pg->group_first[r->group] = (uint32_t)k;
        else pg->acts[last[r->group]].next = (uint32_t)k;
        last[r->group] = (uint32_t)k;
        if (r->skipped && pg->group_first[r->group] == k)
            shown[r->group] = skip_groups++ < HTML_SKIP_GROUPS;
        if (!r->skipped && inline_n < HTML_INLINE_CARDS) {
            inline_n++;
            continue;
        }
        if (r->skipped && (!shown[r->group] || group_n[r->group] >= HTML_SKIP_DRAWN)) continue;
        r->record = group_n[r->group]++; /* rank within the group for now */
    }
    free(last);
    free(shown);
    uint32_t next = 0;
    for (size_t g = 0; g < ng; g++) {
        pg->group_rec[g] = next;
        next += group_n[g];
    }
    pg->n_records = next;
    free(group_n);
    for (size_t k = 0; k < pg->n_acts; k++)
        if (pg->acts[k].record != UINT32_MAX) pg->acts[k].record += pg->group_rec[pg->acts[k].group];
    return 0;
}

static int cards(page *pg) {
    pass_text *t = pg->t;
    pass_text_printf(t, "<h2>Rewritten regions</h2><section id=\"cards\">");
    if (!pg->n_changed) pass_text_str(t, "<p>No pass changed a node.</p>");
    for (size_t k = 0; k < pg->n_acts; k++) {
        const act_ref *r = &pg->acts[k];
        if (r->skipped || r->record != UINT32_MAX) continue;
        int rc = card_html(pg, r);
        if (rc) return rc;
        if (k % 64 == 63) {
            arena_free(pg->scratch);
            if (!(pg->scratch = arena_new())) return TILEOPT_NOMEM;
        }
    }
    pass_text_str(t, "</section>\n");
    /* the rest, by group, drawn when opened */
    bool any = false;
    for (size_t g = 0; g < pg->groups.n; g++) {
        size_t n = 0;
        uint32_t first = UINT32_MAX;
        for (uint32_t k = pg->group_first[g]; k != UINT32_MAX; k = pg->acts[k].next) {
            const act_ref *r = &pg->acts[k];
            if (r->skipped || r->record == UINT32_MAX) continue;
            if (!n) first = r->record;
            n++;
        }
        if (!n) continue;
        if (!any)
            pass_text_printf(t, "<h2>More rewritten regions</h2><p>The first %d actions are drawn "
                           "above; the others, by rule, are drawn when opened.</p>"
                           "<section id=\"more\">", HTML_INLINE_CARDS);
        any = true;
        pass_text_printf(t, "<details class=\"grp\" data-first=\"%u\" data-count=\"%zu\"><summary>", first, n);
        group_title(t, pg->groups.name[g]);
        pass_text_printf(t, " \xe2\x80\x94 <span class=\"n\">%zu</span> more</summary><div "
                       "class=\"slot\"></div>%s</details>",
                    n, n > 50 ? "<button class=\"more\" type=\"button\">show 50 more</button>" : "");
    }
    if (any) pass_text_str(t, "</section>\n");
    return 0;
}

static int skipped(page *pg) {
    pass_text *t = pg->t;
    pass_text_str(t, "<h2>Nodes left alone</h2><section id=\"skipped\">");
    if (!pg->n_skipped) pass_text_str(t, "<p>No pass left a node with a reason.</p>");
    size_t groups = 0, unlisted = 0, unlisted_nodes = 0;
    for (size_t g = 0; g < pg->groups.n; g++) {
        size_t listed = 0, n = 0;
        uint32_t first = pg->group_first[g];
        if (first == UINT32_MAX || !pg->acts[first].skipped) continue;
        if (groups++ == HTML_SKIP_GROUPS || groups > HTML_SKIP_GROUPS) {
            unlisted++;
            unlisted_nodes += pg->groups.count[g];
            continue;
        }
        for (uint32_t k = first; k != UINT32_MAX; k = pg->acts[k].next) {
            const act_ref *r = &pg->acts[k];
            if (!n++) {
                pass_text_str(t, "<details class=\"skip\"><summary>");
                group_title(t, pg->groups.name[g]);
                pass_text_printf(t, " \xe2\x80\x94 <span class=\"n\">%llu</span> node%s</summary><ul "
                               "class=\"sk\">",
                            (unsigned long long)pg->groups.count[g],
                            pg->groups.count[g] == 1 ? "" : "s");
            }
            if (listed == HTML_SKIP_LISTED) {
                pass_text_printf(t, "<li>and %llu more</li>",
                            (unsigned long long)(pg->groups.count[g] - listed));
                listed++;
            }
            if (listed > HTML_SKIP_LISTED) continue;
            listed++;
            jr a;
            int rc = act_parse(pg, r, &a);
            if (rc) return rc;
            if (r->record != UINT32_MAX)
                pass_text_printf(t, "<li><details class=\"lazy\" data-r=\"%u\"><summary>", r->record);
            else pass_text_str(t, "<li>");
            pass_text_str(t, "<code>");
            html_esc(t, jr_str(&a, "node"), HTML_NAME_BYTES);
            pass_text_str(t, "</code> ");
            html_esc(t, jr_str(&a, "op"), HTML_LABEL_BYTES);
            /* what the reason says of this node, past the group's words */
            const char *why = jr_str(&a, "reason");
            if (why && why[reason_head(why)]) {
                pass_text_str(t, " <span class=\"pass\">");
                html_esc(t, why + reason_head(why) + 2, 400);
                pass_text_str(t, "</span>");
            }
            pass_text_str(t, r->record != UINT32_MAX ? "</summary><div class=\"slot\"></div></details></li>"
                                                     : "</li>");
            if (listed % 64 == 0) {
                arena_free(pg->scratch);
                if (!(pg->scratch = arena_new())) return TILEOPT_NOMEM;
            }
        }
        if (n) pass_text_str(t, "</ul></details>");
    }
    if (unlisted)
        pass_text_printf(t, "<p>and %zu more reasons, for %zu nodes (the report lists them)</p>",
                    unlisted, unlisted_nodes);
    pass_text_str(t, "</section>\n");
    return 0;
}

/* The records, in blocks of HTML_BLOCK, deflated and base64'd. */
static int records(page *pg) {
    if (!pg->n_records) return 0;
    uint32_t *by_record = pg->n_records <= SIZE_MAX / sizeof *by_record
                              ? malloc(pg->n_records * sizeof *by_record)
                              : NULL;
    if (!by_record) return err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
    for (size_t k = 0; k < pg->n_acts; k++)
        if (pg->acts[k].record != UINT32_MAX) by_record[pg->acts[k].record] = (uint32_t)k;
    int rc = 0;
    pass_text block = {0};
    unsigned char *z = NULL;
    for (size_t first = 0; first < pg->n_records && !rc; first += HTML_BLOCK) {
        block.len = 0;
        pass_text_put(&block, "[", 1);
        for (size_t i = first; i < pg->n_records && i < first + HTML_BLOCK && !rc; i++) {
            if (i > first) pass_text_put(&block, ",", 1);
            rc = record_json(pg, &block, &pg->acts[by_record[i]]);
        }
        pass_text_put(&block, "]", 1);
        arena_free(pg->scratch);
        if (!(pg->scratch = arena_new()) || block.failed) {
            rc = err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        if (rc) break;
        uLongf zn = compressBound((uLong)block.len);
        unsigned char *nz = realloc(z, zn);
        if (!nz) {
            rc = err_set(&pg->ctx->err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        z = nz;
        if (compress2(z, &zn, (const Bytef *)block.p, (uLong)block.len, 6) != Z_OK) {
            rc = err_set(&pg->ctx->err, TILEOPT_NOMEM, "page: cannot deflate its data");
            break;
        }
        pass_text_printf(pg->t, "<script type=\"application/x-tileopt\" id=\"z%zu\">",
                    first / HTML_BLOCK);
        base64(pg->t, z, zn);
        pass_text_str(pg->t, "</script>\n");
    }
    free(block.p);
    free(z);
    free(by_record);
    return rc;
}

/* ------------------------------------------------------------------ public */

/* Shapes for the edge labels: a model inference cannot follow is drawn
** without them; running out of memory fails the page. */
static int shapes_for_drawing(tileopt_model *m) {
    if (!m || m->g->shapes_current) return 0;
    errbuf err = {0};
    return infer_shapes(m->g, &err) == TILEOPT_NOMEM ? TILEOPT_NOMEM : 0;
}

static int build(tileopt_ctx *ctx, const char *json, size_t len, tileopt_model *before,
                 tileopt_model *after, pass_text *out) {
    page pg = {.ctx = ctx, .t = out};
    arena *a = arena_new();
    pg.scratch = arena_new();
    pg.pair = html_pair_new();
    int rc = 0;
    if (!a || !pg.scratch || !pg.pair) {
        rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = jr_parse(a, json, len, "actions", &pg.root, &ctx->err))) goto done;
    pg.passes = jr_get(&pg.root, "passes");
    if (pg.root.type != JR_OBJ || !pg.passes || pg.passes->type != JR_ARR ||
        !jr_get(&pg.root, "input")) {
        rc = err_set(&ctx->err, TILEOPT_INVALID,
                     "report: not a tileopt report (an object with input and passes)");
        goto done;
    }
    if (shapes_for_drawing(before) || shapes_for_drawing(after)) {
        rc = err_set(&ctx->err, TILEOPT_NOMEM, "page: out of memory inferring shapes");
        goto done;
    }
    if ((rc = html_side_init(&pg.side[0], before)) || (rc = html_side_init(&pg.side[1], after))) {
        rc = err_set(&ctx->err, rc, "out of memory");
        goto done;
    }
    if ((rc = collect(&pg))) goto done;
    char title[300];
    const char *in_path = jr_str(jr_get(&pg.root, "input"), "path");
    snprintf(title, sizeof title, "tileopt: %.280s", in_path ? in_path : "");
    head(&pg, title);
    summary(&pg);
    ops_section(&pg);
    pass_table(&pg);
    legend(&pg);
    rule_table(&pg);
    if ((rc = cards(&pg)) || (rc = skipped(&pg)) || (rc = records(&pg))) goto done;
    pass_text_str(out, "<script>");
    pass_text_str(out, html_page_js);
    pass_text_str(out, "</script></body></html>\n");
    if (out->failed) rc = err_set(&ctx->err, TILEOPT_NOMEM, "page: out of memory");
done:
    if (rc && !ctx->err.msg[0]) err_set(&ctx->err, rc, "page: %s", tileopt_status_str(rc));
    html_side_free(&pg.side[0]);
    html_side_free(&pg.side[1]);
    html_pair_free(pg.pair);
    free(pg.acts);
    free(pg.group_rec);
    free(pg.group_first);
    api_names_free(&pg.groups);
    if (pg.scratch) arena_free(pg.scratch);
    if (a) arena_free(a);
    return rc;
}

tileopt_status tileopt_html(tileopt_ctx *ctx, const char *report_json, size_t len,
                            tileopt_model *before, tileopt_model *after, char **html_out,
                            size_t *html_size) {
    if (html_out) *html_out = NULL;
    if (html_size) *html_size = 0;
    if (!ctx) return TILEOPT_MISUSE;
    err_clear(&ctx->err);
    if (!report_json || !html_out) return err_set(&ctx->err, TILEOPT_MISUSE, "html: no report or no output");
    pass_text t = {0};
    int rc = build(ctx, report_json, len, before, after, &t);
    if (rc) {
        free(t.p);
        return (tileopt_status)rc;
    }
    pass_text_put(&t, "", 1);
    if (t.failed) {
        free(t.p);
        return err_set(&ctx->err, TILEOPT_NOMEM, "page: out of memory");
    }
    *html_out = t.p;
    if (html_size) *html_size = t.len - 1;
    return TILEOPT_OK;
}

tileopt_status tileopt_html_save(tileopt_ctx *ctx, const char *report_json, size_t len,
                                 tileopt_model *before, tileopt_model *after, const char *path) {
    char *page;
    size_t n;
    tileopt_status st = tileopt_html(ctx, report_json, len, before, after, &page, &n);
    if (st) return st;
    int rc = graph_write_atomic(path, page, n, ctx->temp_hook, ctx->temp_user, &ctx->err);
    free(page);
    return rc ? err_prefix(&ctx->err, "page: ") : TILEOPT_OK;
}

/* ------------------------------------------------------------------- index */

/* A relative link to a file named from the disk: "./" first, so no name reads
** as a scheme ("javascript:..."), and every byte but the unreserved ones and
** '/' percent-encoded. */
static void href(pass_text *t, const char *path) {
    pass_text_str(t, "./");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            strchr("-._~/", *c))
            pass_text_put(t, (const char *)c, 1);
        else pass_text_printf(t, "%%%02X", *c);
    }
}

tileopt_status tileopt_html_index(tileopt_ctx *ctx, const tileopt_html_row *rows, size_t n,
                                  const char *path) {
    if (!ctx) return TILEOPT_MISUSE;
    err_clear(&ctx->err);
    if ((!rows && n) || !path) return err_set(&ctx->err, TILEOPT_MISUSE, "html index: no rows or no path");
    pass_text t = {0};
    page pg = {.ctx = ctx, .t = &t};
    head(&pg, "tileopt: batch");
    size_t failed = 0;
    double bb = 0, ba = 0, tb = 0, ta = 0;
    for (size_t i = 0; i < n; i++) {
        failed += rows[i].error != NULL;
        bb += (double)rows[i].bytes_before;
        ba += (double)(rows[i].error ? rows[i].bytes_before : rows[i].bytes_after);
        tb += (double)rows[i].tiles_before;
        ta += (double)(rows[i].error ? rows[i].tiles_before : rows[i].tiles_after);
    }
    pass_text_printf(&t, "<header><h1>tileopt: batch of <span id=\"n-models\">%zu</span> models, "
                    "<span id=\"n-failed\">%zu</span> failed</h1><p>bytes ", n, failed);
    human_bytes(&t, bb);
    pass_text_str(&t, " \xe2\x86\x92 ");
    human_bytes(&t, ba);
    pass_text_printf(&t, ", Tile nodes %.0f \xe2\x86\x92 %.0f</p></header>", tb, ta);
    pass_text_str(&t, "<table id=\"models\"><tr><th>model</th><th>size before</th><th>after</th>"
                      "<th>nodes before</th><th>after</th><th>Tile before</th><th>after</th>"
                      "<th>verify</th><th>s</th></tr>");
    for (size_t i = 0; i < n; i++) {
        const tileopt_html_row *r = &rows[i];
        pass_text_str(&t, r->error ? "<tr class=\"failed\"><td>" : "<tr><td>");
        if (r->page) {
            pass_text_str(&t, "<a href=\"");
            href(&t, r->page);
            pass_text_str(&t, "\">");
        }
        html_esc(&t, r->model, HTML_NAME_BYTES);
        pass_text_str(&t, r->page ? "</a></td>" : "</td>");
        if (r->error) {
            pass_text_str(&t, "<td colspan=\"7\" class=\"err\">failed: ");
            html_esc(&t, r->error, 2000);
            pass_text_str(&t, "</td>");
        } else {
            pass_text_str(&t, "<td>");
            human_bytes(&t, (double)r->bytes_before);
            pass_text_str(&t, "</td><td>");
            human_bytes(&t, (double)r->bytes_after);
            pass_text_printf(&t, "</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td><td>",
                        (long long)r->nodes_before, (long long)r->nodes_after,
                        (long long)r->tiles_before, (long long)r->tiles_after);
            if (r->verdict) {
                pass_text_str(&t, "<span class=\"verdict-");
                html_esc(&t, r->verdict, 16);
                pass_text_str(&t, "\">");
                html_esc(&t, r->verdict, 16);
                pass_text_str(&t, "</span>");
            } else {
                pass_text_str(&t, "-");
            }
            pass_text_str(&t, "</td>");
        }
        pass_text_printf(&t, "<td>%.2f</td></tr>", r->seconds);
    }
    pass_text_str(&t, "</table><script>");
    pass_text_str(&t, html_page_js);
    pass_text_str(&t, "</script></body></html>\n");
    if (t.failed) {
        free(t.p);
        return err_set(&ctx->err, TILEOPT_NOMEM, "html index: out of memory");
    }
    int rc = graph_write_atomic(path, t.p, t.len, ctx->temp_hook, ctx->temp_user, &ctx->err);
    free(t.p);
    return rc ? err_prefix(&ctx->err, "html index: ") : TILEOPT_OK;
}

/*
** Driver for the property tests against numpy (tile_prop.py). One case per run:
**
**   tile_prop tile ELEM DIMS REPEATS MODE     MODE: kernel | view | tile1 AXIS
**   tile_prop binop OP ELEM SPEC_A SPEC_B
**
** DIMS/REPEATS are comma lists ("-" for rank 0); SPEC is DIMS or DIMS:REPEATS,
** the latter read as a Tile view of DIMS (never materialized) so the op reads
** through strides. Input data comes on stdin, raw little-endian, operands in
** order; for STRING each element is a 4-byte length and its bytes. The result
** goes to stdout in the same encoding; errors to stderr with exit status 1.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

static int parse_list(const char *s, int64_t *v) {
    int n = 0;
    if (!strcmp(s, "-")) return 0;
    while (*s) {
        char *end;
        v[n++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) break;
    }
    return n;
}

static void die(const char *what, const errbuf *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static void read_exact(void *p, size_t n) {
    if (n && fread(p, 1, n, stdin) != n) die("short input", NULL);
}

static tensor *read_tensor(int32_t elem, const int64_t *dims, int rank) {
    tensor *t;
    errbuf err;
    if (tensor_new(elem, dims, rank, NULL, &t, &err)) die("tensor_new", &err);
    uint64_t n = tensor_numel(t);
    if (elem == DT_STRING) {
        graph_bytes *s = (graph_bytes *)(void *)t->data;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t len;
            read_exact(&len, 4);
            uint8_t *p = tbuf_bytes(t->buf, len ? len : 1);
            read_exact(p, len);
            s[i].data = p;
            s[i].len = len;
        }
    } else {
        read_exact(t->data, (size_t)tensor_nbytes(t));
    }
    return t;
}

static void write_tensor(tensor *t) {
    tensor *c;
    errbuf err;
    if (tensor_contiguous(t, NULL, &c, &err)) die("contiguous", &err);
    uint64_t n = tensor_numel(c);
    if (c->elem == DT_STRING) {
        const graph_bytes *s = (const graph_bytes *)(const void *)c->data;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t len = (uint32_t)s[i].len;
            fwrite(&len, 4, 1, stdout);
            fwrite(s[i].data, 1, len, stdout);
        }
    } else {
        fwrite(c->data, 1, (size_t)tensor_nbytes(c), stdout);
    }
    tensor_free(c);
}

/* DIMS or DIMS:REPEATS -> tensor read from stdin, viewed through Tile */
static tensor *read_spec(int32_t elem, const char *spec) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *colon = strchr(buf, ':');
    if (colon) *colon = '\0';
    int64_t dims[TENSOR_MAX_RANK], rep[TENSOR_MAX_RANK];
    int rank = parse_list(buf, dims);
    tensor *t = read_tensor(elem, dims, rank);
    if (!colon) return t;
    int nr = parse_list(colon + 1, rep);
    tensor *v;
    errbuf err;
    if (view_tile(t, rep, (size_t)nr, NULL, &v, &err)) die("view_tile", &err);
    tensor_free(t);
    return v;
}

int main(int argc, char **argv) {
    errbuf err;
    err_clear(&err);
    if (argc >= 6 && !strcmp(argv[1], "tile")) {
        int32_t elem = atoi(argv[2]);
        int64_t dims[TENSOR_MAX_RANK], rep[TENSOR_MAX_RANK];
        int rank = parse_list(argv[3], dims);
        int nr = parse_list(argv[4], rep);
        tensor *x = read_tensor(elem, dims, rank), *y;
        int rc;
        if (!strcmp(argv[5], "view"))
            rc = view_tile(x, rep, (size_t)nr, NULL, &y, &err);
        else if (!strcmp(argv[5], "tile1") && argc >= 7)
            rc = kernel_tile1(x, rep[0], atoll(argv[6]), NULL, &y, &err);
        else
            rc = kernel_tile(x, rep, (size_t)nr, NULL, &y, &err);
        if (rc) die("tile", &err);
        tensor_free(x); /* y must not depend on the handle */
        write_tensor(y);
        tensor_free(y);
        return 0;
    }
    if (argc >= 6 && !strcmp(argv[1], "binop")) {
        const char *op = argv[2];
        int32_t elem = atoi(argv[3]);
        tensor *in[2] = {read_spec(elem, argv[4]), read_spec(elem, argv[5])}, *y = NULL;
        const kernel_def *k = NULL;
        for (size_t i = 0; i < kernel_table_elementwise_count; i++)
            if (!strcmp(op_table[kernel_table_elementwise[i].op].name, op)) k = &kernel_table_elementwise[i];
        if (!k) die("unknown op", NULL);
        Onnx__NodeProto n = ONNX__NODE_PROTO__INIT;
        n.op_type = (char *)op;
        n.name = (char *)"prop";
        if (k->fn(&n, 13, in, 2, &y, 1, NULL, &err)) die(op, &err);
        write_tensor(y);
        tensor_free(y);
        tensor_free(in[0]);
        tensor_free(in[1]);
        return 0;
    }
    fprintf(stderr, "usage: tile_prop tile ELEM DIMS REPEATS kernel|view|tile1 AXIS\n"
                    "       tile_prop binop OP ELEM SPEC_A SPEC_B\n");
    return 2;
}

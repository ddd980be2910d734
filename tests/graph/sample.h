/* The cmocka tests of graph/ load their fixtures, the sample models in models/,
** through this (SRCDIR points at the source tree). Include after cmocka.h. */
#ifndef TILEOPT_TESTS_GRAPH_SAMPLE_H
#define TILEOPT_TESTS_GRAPH_SAMPLE_H

#include <stdio.h>
#include <stdlib.h>

#include "graph/graph.h"

static graph_model *load_sample(const char *name) {
    char path[1024];
    const char *src = getenv("SRCDIR");
    snprintf(path, sizeof path, "%s/models/%s", src ? src : ".", name);
    graph_model *m = NULL;
    errbuf err = {0};
    int rc = graph_model_load_path(path, NULL, NULL, &m, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, TILEOPT_OK);
    return m;
}

/* tile_add.onnx with a 16 KiB initializer "w" (0, 1, 2, ...) and an inline
** limit of 4 KiB: a save puts w in external data. */
static graph_model *load_sample_with_data(void) {
    graph_model *m = load_sample("tile_add.onnx");
    static float w[4096];
    for (size_t i = 0; i < 4096; i++) w[i] = (float)i;
    const int64_t dims[] = {4096};
    const char *name;
    errbuf err = {0};
    assert_int_equal(graph_add_initializer(m->main, "w", DT_FLOAT, dims, 1, w, sizeof w, &name,
                                           &err), TILEOPT_OK);
    m->limits.max_inline_bytes = 4096;
    return m;
}

#endif

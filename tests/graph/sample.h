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

#endif

/* The pass registry: the one file that knows every pass, so the passes and the
** helpers they share in driver.c never call each other both ways. */
#include <string.h>

#include "passes/pass.h"
#include "passes/passes.h"

/* Default order: migrate first so later passes see current op semantics, fold
** before fuse so fuse sees constant repeats. A fold can leave a Tile fuse can
** now take; a fuse that moves an op onto constant inputs (it says when) leaves
** fold work: the pipeline runs them again until neither has any. */
const pass_def pass_registry[] = {
    {"upgrade", pass_upgrade, "migrate default-domain nodes to the target opset (Tile-1 included)",
     NULL, false},
    {"fold", pass_fold, "constant-fold Tile and the shape subgraphs that feed it", "fuse", true},
    {"fuse", pass_fuse, "fuse Tile into the elementwise ops that read it", "fold", false},
    {"gqa", pass_gqa,
     "grouped-query attention: query heads grouped on their K/V head instead of K and V "
     "repeated", NULL, false},
    {NULL, NULL, NULL, NULL, false},
};
const size_t pass_count = countof(pass_registry) - 1; /* the NULL row ends it */

const pass_def *pass_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < pass_count; i++)
        if (strcmp(pass_registry[i].name, name) == 0) return &pass_registry[i];
    return NULL;
}

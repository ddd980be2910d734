/* Entry points of the passes in the registry (passes/driver.c). */
#ifndef TILEOPT_PASSES_H
#define TILEOPT_PASSES_H

#include "passes/pass.h"

/* fuse: Tile into the elementwise ops that follow it (passes/fuse.c). */
int pass_fuse(pass_ctx *pc);

/* fold: constant-fold Tile and the shape subgraphs feeding it (passes/fold.c). */
int pass_fold(pass_ctx *pc);

#endif

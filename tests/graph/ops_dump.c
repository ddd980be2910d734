/* Prints the op table as tab-separated rows (name, min and max inputs, kind,
** output type, broadcasting, its first opset) for test_ops_schema.py, which checks
** it against ONNX's own operator schemas. */
#include <stdio.h>

#include "graph/ops.h"

int main(void) {
    static const char *const kinds[] = {"other", "unary", "binary", "variadic", "select"};
    static const char *const outs[] = {"rule", "like_in0", "like_in1", "bool", "attr_to"};
    static const char *const bcasts[] = {"none", "multi", "uni"};
    _Static_assert(countof(kinds) == OPK_SELECT + 1, "one name per kind");
    _Static_assert(countof(outs) == OUT_ATTR_TO + 1, "one name per output rule");
    _Static_assert(countof(bcasts) == BC_UNI + 1, "one name per broadcasting");
    for (int i = 0; i < OP_COUNT; i++) {
        const op_info *r = &op_table[i];
        printf("%s\t%d\t%d\t%s\t%s\t%s\t%d\n", r->name, (int)r->min_in, (int)r->max_in,
               kinds[r->kind], outs[r->out], bcasts[r->bcast], (int)r->bcast_since);
    }
    return 0;
}

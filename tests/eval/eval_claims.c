/*
** Test helper: reads "OP OPSET" lines on stdin and prints "OP OPSET 1" when the
** evaluator claims the op at that opset (eval_supports), "... 0" otherwise.
** node_tests.py uses it to pick the ONNX backend node tests it must pass.
*/
#include <stdio.h>

#include "eval/eval.h"

int main(void) {
    char op[256];
    long long opset;
    while (scanf("%255s %lld", op, &opset) == 2)
        printf("%s %lld %d\n", op, opset, eval_supports(op, (int64_t)opset) ? 1 : 0);
    return 0;
}

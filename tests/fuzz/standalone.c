/*
** main() for the fuzz targets outside libFuzzer (gcc builds): runs the target
** once on each file named on the command line, so the committed regression
** inputs under regress/ are replayed by every build's test suite.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "cannot open %s\n", argv[i]);
            return 1;
        }
        uint8_t *buf = NULL;
        size_t size = 0, cap = 0;
        for (;;) {
            if (size == cap) {
                cap = cap ? 2 * cap : 4096;
                uint8_t *nb = realloc(buf, cap);
                if (!nb) {
                    fclose(f);
                    free(buf);
                    return 1;
                }
                buf = nb;
            }
            size_t got = fread(buf + size, 1, cap - size, f);
            if (got == 0) break;
            size += got;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, size);
        free(buf);
        printf("ok %s\n", argv[i]);
    }
    return 0;
}

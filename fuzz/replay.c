/* replay.c — runs a fuzz target's inputs once each, without libFuzzer: `fuzz_X_replay FILE|DIR...`.
 * Ordinary builds (gcc, and the ASan/UBSan build) use it to run the committed seed corpus and
 * every input that once crashed a parser, so those stay tests in `ctest`. Prints how many
 * inputs ran; a crash or sanitizer report fails the test. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "%s: cannot read\n", path);
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int ran = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb)) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            bad += run_file(argv[i]), ran++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            char p[8192];
            snprintf(p, sizeof p, "%s/%s", argv[i], names[k]->d_name);
            if (!stat(p, &sb) && S_ISREG(sb.st_mode))
                bad += run_file(p), ran++;
            free(names[k]);
        }
        free(names);
    }
    printf("%d inputs replayed\n", ran);
    return bad || ran == 0;
}

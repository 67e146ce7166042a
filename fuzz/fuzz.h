/* fuzz.h — what the fuzz targets share: libFuzzer's entry points (also driven by replay.c in
 * ordinary builds, so every committed input runs in the test suite) and a scratch directory
 * where a target writes its input as the file the parser under test reads. */
#ifndef ZEROC_FUZZ_H
#define ZEROC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A directory private to this process, created on first use (under $TMPDIR or /tmp) and
 * removed at exit with whatever is in it. */
const char *fuzz_dir(void);

/* Writes size bytes to fuzz_dir()/name (replacing it); the full path goes to path. Aborts on a
 * write error: that is the harness failing, not the parser. */
void fuzz_write(const char *name, const void *data, size_t size, char *path, size_t cap);

#endif

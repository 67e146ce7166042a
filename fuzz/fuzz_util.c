/* fuzz_util.c — the fuzz targets' scratch directory and file writer (see fuzz.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/fuzz.h"

static char dir[4096];

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        char p[8192];
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                if (unlink(p)) { /* a directory the target made: one level is all they make */
                    DIR *s = opendir(p);
                    struct dirent *e2;
                    char q[12288];
                    while (s && (e2 = readdir(s)))
                        if (strcmp(e2->d_name, ".") && strcmp(e2->d_name, "..")) {
                            snprintf(q, sizeof q, "%s/%s", p, e2->d_name);
                            unlink(q);
                        }
                    if (s)
                        closedir(s);
                    rmdir(p);
                }
            }
        closedir(d);
    }
    rmdir(dir);
}

const char *fuzz_dir(void)
{
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/zeroc-fuzz-XXXXXX", t && t[0] ? t : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    return dir;
}

void fuzz_write(const char *name, const void *data, size_t size, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(path);
        abort();
    }
}

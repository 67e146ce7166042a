/* fuzz_manifest.c — fuzz target: a checkpoint's manifest.json, with a manifest.sha256 that
 * matches it (so the input reaches the cross-checks behind the checksum), read the three ways
 * the commands read it: `ckpt inspect`, `ckpt verify` (then the shards, absent here) and the
 * export's reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/manifest.h"
#include "fuzz/fuzz.h"
#include "zeroc/checkpoint.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[4200], path[4300], line[96];
    snprintf(dir, sizeof dir, "%s/step-000007", fuzz_dir());
    mkdir(dir, 0700);
    fuzz_write("step-000007/manifest.json", data, size, path, sizeof path);
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    zc_manifest_sha256_line(text, line);
    free(text);
    fuzz_write("step-000007/manifest.sha256", line, strlen(line), path, sizeof path);
    zc_err err;
    char *summary = NULL;
    if (!zc_ckpt_inspect(dir, &summary, &err))
        free(summary);
    summary = NULL;
    if (!zc_ckpt_verify(dir, &summary, &err))
        free(summary);
    zc_ckpt_reader *r;
    if (!zc_ckpt_reader_open(dir, &r, &err)) {
        int64_t v;
        zc_ckpt_reader_client_int(r, "steps_planned", &v);
        for (int p = 0; p < zc_ckpt_reader_num_params(r); p++)
            (void)zc_ckpt_reader_param(r, p)->numel;
        zc_ckpt_reader_close(r);
    }
    return 0;
}

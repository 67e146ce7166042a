/* fuzz_shard.c — fuzz target: a checkpoint shard (rank-00000.bin) under a valid manifest whose
 * CRC and size match it, so the input reaches the shard's own header checks and the reads of
 * `ckpt verify` and the export's reader. The input is cut or zero-padded to the layout's size
 * (272 bytes: a 32-byte header, then one MLP unit of 20 fp32 parameters with Adam's two
 * moments); the manifest is the one zeroc writes for that run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/manifest.h"
#include "fuzz/fuzz.h"
#include "util/crc32c.h"
#include "zeroc/checkpoint.h"

#define SHARD_BYTES 272

static const char MANIFEST[] =
    "{\"format_version\":2,\"producer\":\"zeroc\",\"world_size\":1,\"stage\":0,\"dtype\":\"fp32\","
    "\"optimizer\":{\"type\":\"Adam\",\"moments\":2},\"step\":1,\"optimizer_steps\":1,"
    "\"loss_scaler\":{\"scale\":1,\"hysteresis_left\":2,\"iter\":1,\"last_overflow_iter\":-1,"
    "\"skipped\":0,\"dynamic\":false},\"units\":[{\"name\":\"fc0\",\"numel\":20,\"shard\":20}],"
    "\"params\":[{\"name\":\"fc0.weight\",\"shape\":[4,4],\"unit\":0,\"offset\":0},"
    "{\"name\":\"fc0.bias\",\"shape\":[4],\"unit\":0,\"offset\":16}],"
    "\"files\":[{\"name\":\"rank-00000.bin\",\"bytes\":272,\"crc32c\":\"%08x\"}],"
    "\"config\":{},\"client\":{\"model\":\"mlp\"}}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t shard[SHARD_BYTES] = {0};
    memcpy(shard, data, size < SHARD_BYTES ? size : SHARD_BYTES);
    char dir[4200], path[4300], text[sizeof MANIFEST + 16], line[96];
    snprintf(dir, sizeof dir, "%s/step-000001", fuzz_dir());
    mkdir(dir, 0700);
    fuzz_write("step-000001/rank-00000.bin", shard, sizeof shard, path, sizeof path);
    snprintf(text, sizeof text, MANIFEST, (unsigned)zc_crc32c(0, shard, sizeof shard));
    fuzz_write("step-000001/manifest.json", text, strlen(text), path, sizeof path);
    zc_manifest_sha256_line(text, line);
    fuzz_write("step-000001/manifest.sha256", line, strlen(line), path, sizeof path);
    zc_err err;
    char *summary = NULL;
    if (!zc_ckpt_verify(dir, &summary, &err))
        free(summary);
    zc_ckpt_reader *r;
    if (!zc_ckpt_reader_open(dir, &r, &err)) {
        float v[16];
        for (int p = 0; p < zc_ckpt_reader_num_params(r); p++)
            zc_ckpt_reader_read(r, p, 0, zc_ckpt_reader_param(r, p)->numel, v, &err);
        zc_ckpt_reader_close(r);
    }
    return 0;
}

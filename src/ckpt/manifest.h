/* manifest.h — internal: a checkpoint's manifest.json read, checked against its SHA-256
 * (manifest.sha256) and cross-checked field by field, and the shard layout both the writer and
 * the readers compute from it (formats in zeroc/checkpoint.h). */
#ifndef ZEROC_CKPT_MANIFEST_H
#define ZEROC_CKPT_MANIFEST_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "zeroc/engine.h"

/* The manifest format this zeroc writes, 3 (4 for a checkpoint without its frozen units), and the
 * oldest it reads, 2. Format 2 has manifest.sha256 beside it (format 1, without, is refused);
 * format 3 adds producer_version and marks what the trainer's saved state means
 * (zeroc/checkpoint.h): an older zeroc, reading format 2 only, refuses it by name instead of
 * continuing it otherwise. Format 4 adds units not stored (a LoRA run's frozen base) and the
 * base's digest: a zeroc reading format 3 at most refuses it by name. The shard files' own header
 * version is separate and still 1. */
enum {
    ZC_MANIFEST_VERSION = 4,
    ZC_MANIFEST_FULL = 3, /* the format of a checkpoint that stores every unit */
    ZC_MANIFEST_OLDEST = 2,
    ZC_SHARD_VERSION = 1,
    ZC_SHARD_HEADER_BYTES = 32
};
/* Longest producer_version a manifest may hold (bytes, printable ASCII). */
#define ZC_PRODUCER_VERSION_MAX 128

/* Everything a reader uses, validated: no field of it can make a reader read outside a file,
 * mix up tensors, or assert. */
typedef struct {
    cJSON *root;                  /* the whole manifest (config and client are objects) */
    int format;                   /* format_version: ZC_MANIFEST_OLDEST..ZC_MANIFEST_VERSION */
    const char *producer_version; /* in root; NULL when not recorded (format 2) */
    const char *optim;            /* optimizer.type, in root: AdamW/Adam, SGD+momentum, SGD */
    int world, stage, K, nunits, nparams;
    bool q8; /* optimizer.moments_format "q8": AdamW8bit's codes and scales as they are */
    int64_t step, optimizer_steps;
    size_t *numel, *shard; /* per unit */
    size_t *stored;        /* per unit: numel, or 0 for a unit not stored (its layout's size) */
    bool has_base;         /* some unit is not stored: base_digest (engine_state.h) is its check */
    uint64_t base_digest[2];
    zc_param_info *params; /* per parameter, contiguous within their unit */
    uint32_t *crc;         /* per file: rank-RRRRR.bin's CRC32C */
    zc_loss_scaler scaler; /* as saved (dynamic tells whether it may continue) */
} zc_manifest;

/* Reads DIR/manifest.json. Every failure is ZC_EINVAL/ZC_EIO with a message naming the file and
 * the field, its value and what was expected. On error *m is freed already. */
zc_status zc_manifest_read(const char *ckdir, zc_manifest *m, zc_err *err);
void zc_manifest_free(zc_manifest *m);

/* The line manifest.sha256 holds for manifest text `text` ("<hex>  manifest.json\n"). */
void zc_manifest_sha256_line(const char *text, char line[96]);

/* ---- layout: rank r owns [r·S, min((r+1)·S, numel)) of a unit ---- */
static inline size_t zc_ckpt_owned(size_t numel, size_t shard, int rank)
{
    size_t lo = (size_t)rank * shard, hi = lo + shard < numel ? lo + shard : numel;
    return hi > lo ? hi - lo : 0;
}

/* Scales of n owned elements in a q8 section: one per ZC_Q8_BLOCK (256) from the shard's start. */
static inline size_t zc_ckpt_q8_scales(size_t n)
{
    return (n + 255) / 256;
}

/* Bytes of a section of n owned elements: (1 + K) × n floats; with q8 (K = 2: AdamW8bit's
 * moments as they are) n floats, m's n codes, v's n codes, m's scales, v's scales (fp32). */
static inline size_t zc_ckpt_section_bytes(size_t n, int K, bool q8)
{
    return q8 ? n * sizeof(float) + 2 * (n + zc_ckpt_q8_scales(n) * sizeof(float))
              : (1 + (size_t)K) * n * sizeof(float);
}

/* Byte offset of unit u's section in rank r's file. */
static inline off_t zc_ckpt_section_offset(const size_t *numel, const size_t *shard, int u,
                                           int rank, int K, bool q8)
{
    off_t off = ZC_SHARD_HEADER_BYTES;
    for (int v = 0; v < u; v++)
        off += (off_t)zc_ckpt_section_bytes(zc_ckpt_owned(numel[v], shard[v], rank), K, q8);
    return off;
}

static inline size_t zc_ckpt_file_bytes(const size_t *numel, const size_t *shard, int nunits,
                                        int rank, int K, bool q8)
{
    return (size_t)zc_ckpt_section_offset(numel, shard, nunits, rank, K, q8);
}

static inline const char *zc_ckpt_optim_name(int K)
{
    return K == 2 ? "Adam" : K == 1 ? "SGD+momentum" : "SGD";
}
#endif

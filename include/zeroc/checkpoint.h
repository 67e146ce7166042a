/* zeroc/checkpoint.h — sharded, crash-safe checkpoints that load on any number of ranks and any
 * stage.
 *
 * A checkpoint is a directory DIR/step-NNNNNN holding manifest.json (rank 0) and one shard file
 * per rank with only what that rank owns: its slice of every unit's fp32 parameters and
 * optimizer moments, in the unpadded logical layout. DIR/latest names the newest complete one.
 *
 * Shard file (rank-RRRRR.bin), little-endian:
 *   OFFSET  SIZE  DESCRIPTION
 *   0       8     magic "ZCSHARD\0"
 *   8       4     shard format version (1)
 *   12      4     rank
 *   16      4     world size
 *   20      4     number of units
 *   24      8     step (the manifest's step)
 *   32      ...   for each unit u in registration order that is stored (every unit but a frozen
 *                 one, format 4), n_u = the rank's owned element count
 *                 (min((r+1)·S_u, Ψ_u) − r·S_u, or 0): n_u float32 parameters, then n_u floats
 *                 of each optimizer moment (m, then v for Adam); with optimizer.moments_format
 *                 "q8" (AdamW8bit) instead n_u uint8 codes of m, n_u of v, then ceil(n_u / 256)
 *                 float32 scales of m, of v (blocks from the shard's first element)
 *
 * manifest.json (rank 0), a JSON object; every reader checks every field (src/ckpt/manifest.c):
 *   KEY                 TYPE     DESCRIPTION
 *   format_version      int      3, or 4 when a unit is not stored; format 2 is read too
 *                                (format 1, without manifest.sha256, and any newer format are
 *                                refused by name)
 *   producer            string   "zeroc"
 *   producer_version    string   the version of the zeroc that wrote it (zc_version; format 3,
 *                                1 to 127 printable ASCII characters)
 *   world_size          int      N, ranks that wrote it, 1..2^20; one shard file per rank
 *   stage               int      ZeRO stage of the writer, 0..3 (informational: any stage loads)
 *   dtype               string   fp32, bf16 or fp16 (the shards are fp32 in every case)
 *   optimizer           object   type ("AdamW" or "Adam" as configured, "SGD+momentum", "SGD";
 *                                earlier zerocs wrote "Adam" for AdamW too; "AdamW8bit") and
 *                                moments K (2, 1, 0); moments_format "q8" (AdamW8bit only: its
 *                                codes and scales as they are) or "fp32" (absent: fp32)
 *   step                int      trainer steps done; equal to N of a directory named step-N and
 *                                to every shard header's step
 *   optimizer_steps     int      updates applied (≤ step: fp16 overflows skip steps)
 *   loss_scaler         object   scale (positive float32), hysteresis_left, iter,
 *                                last_overflow_iter (−1: none), skipped, dynamic (bool)
 *   units               array    per unit: name, numel Ψ_u (≥ 1), shard S_u = ⌈Ψ_u / N⌉; format 4:
 *                                stored false for a frozen unit (zc_engine_freeze_unit: a LoRA
 *                                run's base) that the shards do not hold
 *   base_digest         string   format 4, exactly when a unit is not stored: 32 lowercase hex
 *                                digits, zc_engine_base_digest of the frozen units (a load
 *                                compares the engine's; a reader's base source is checked by it)
 *   params              array    per tensor: name, shape (1..4 positive sizes), unit, offset;
 *                                within a unit the tensors follow each other from offset 0, with
 *                                no gap or overlap, and fill it exactly
 *   files               array    per rank r: name "rank-RRRRR.bin", bytes (the layout's size),
 *                                crc32c (8 lowercase hex digits, the whole file)
 *   config              object   the effective DeepSpeed-style configuration
 *   client              object   the trainer's own state (GPT-2: its shape, for exports);
 *                                `zeroc train`'s is range-checked by the command (verify, inspect,
 *                                --resume): optimizer_steps = step − loss_scaler.skipped,
 *                                steps_planned ≥ step, a finite next_lr ≥ 0, integer counters,
 *                                seq_len ≥ 1 for a model of sequences, the seed's decimal text
 * Sizes are at most 2^49 elements per tensor, unit and model (ZC_MAX_NUMEL, zeroc/estimate.h: the
 * largest model the engine registers, so that whatever trains can be read back).
 *
 * Format 3 has the fields of format 2 plus producer_version; it was raised because what `zeroc
 * train` keeps in `client` changed meaning (the --shuffle window order, the data position in
 * tokens, the learning-rate schedule's position counting only applied steps, fp16 gradients
 * carrying scale / gradient_accumulation_steps): a zeroc reading format 2 only refuses it by
 * name rather than continuing it otherwise. zeroc train reads a format-2 client record as the
 * earlier zeroc wrote it (cli/train_ckpt.c).
 *
 * manifest.sha256: "<SHA-256 of manifest.json's bytes, 64 hex digits>  manifest.json\n" (the
 * format of sha256sum, so `sha256sum -c manifest.sha256` checks it too). An edited or corrupt
 * manifest fails it; one edited and re-hashed still meets the cross-checks above.
 *
 * Crash safety: everything is written into a temporary directory unique to the job
 * (DIR/.tmp-step-NNNNNN-PID-HOST, rank 0's pid and host), every file and the directory fsync'd;
 * each rank reads its shard back and checks its CRC, rank 0 reads the manifest back, and only
 * then is it renamed into place; DIR/latest is replaced by an atomic rename. A crash at any
 * moment leaves the previous checkpoint intact and `latest` pointing at it.
 *
 * One job per save directory: zc_ckpt_lock_dir takes an exclusive flock on DIR/.lock (which
 * holds "pid P on host H") for the job's life; a second job is refused naming the holder. The
 * kernel releases the lock when the holder dies, so a crash never leaves DIR locked.
 *
 *     // every rank: config_json = zc_config_to_json(&cfg), client_json your own object
 *     zc_ckpt_save(engine, comm, "ckpt", step, config_json, client_json, keep, &err);
 *     char dir[4096];
 *     zc_ckpt_resolve("ckpt", dir, sizeof dir, &err);              // → ckpt/step-NNNNNN
 *     zc_ckpt_load(engine, comm, dir, &step, &client_json, &err);  // every rank
 */
#ifndef ZEROC_CHECKPOINT_H
#define ZEROC_CHECKPOINT_H

#include "zeroc/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/comm.h"
#include "zeroc/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective, on a finalized engine. step: optimizer steps done (0 to 2^31 − 1); config_json /
 * client_json: the text of one JSON object each (nothing after it but whitespace), stored in the
 * manifest; client_json may be NULL (an empty object). keep > 0: afterwards delete the oldest
 * complete checkpoints beyond the newest `keep` (the one just written is never deleted), by
 * lineage: when the engine was loaded (zc_ckpt_load) from step R of this same directory — a
 * rollback — the checkpoints past R it did not write itself, the abandoned run's future, are
 * deleted first, all of them, and `keep` counts R, the steps before it and the engine's own. The
 * arguments are checked on every rank before anything is written (ZC_EINVAL naming the argument
 * — "config_json", "client_json", "step", "dir" — or ZC_ESTATE for an engine not finalized). On
 * error no checkpoint is half-written and the previous ones are untouched; every rank gets an
 * error. */
ZC_API zc_status zc_ckpt_save(zc_engine *e, zc_comm *comm, const char *dir, int64_t step,
                              const char *config_json, const char *client_json, int keep,
                              zc_err *err);

/* Collective. Creates dir if needed and makes this job its only writer: rank 0 takes an
 * exclusive flock on dir/.lock (writing its pid and host into it) and removes the temporary
 * files crashed saves left; *lock is rank 0's handle (NULL on other ranks). If another process
 * holds the lock, every rank gets ZC_EINVAL naming dir and the holder. Call before the first
 * step; zc_ckpt_save itself does not lock (a program calling it must own the directory). */
typedef struct zc_ckpt_lock zc_ckpt_lock;
ZC_API zc_status zc_ckpt_lock_dir(zc_comm *comm, const char *dir, zc_ckpt_lock **lock, zc_err *err);
/* Releases the lock and removes dir/.lock (NULL: nothing). Not collective. */
ZC_API void zc_ckpt_unlock_dir(zc_ckpt_lock *lock);

/* path is a checkpoint directory (DIR/step-N, has manifest.json) or a save directory (uses
 * DIR/latest; without latest — a first save killed or out of space before writing it — its
 * newest step-N holding a manifest). Writes the checkpoint directory into out. Not collective. */
ZC_API zc_status zc_ckpt_resolve(const char *path, char *out, size_t outlen, zc_err *err);

/* Collective. Loads the checkpoint in `ckdir` into a finalized engine of any world size and any
 * stage (an engine not finalized: ZC_ESTATE on every rank; zc_engine_skip_init before finalize
 * saves drawing initial values the load replaces): each rank reads only the byte ranges it
 * needs, after checking the CRC of each file it reads. The model must have the same parameters
 * (names, shapes) in the same units. *step gets the optimizer steps done; *client_json
 * (malloc'd; client_json may be NULL) the trainer's state, NULL on failure. */
ZC_API zc_status zc_ckpt_load(zc_engine *e, zc_comm *comm, const char *ckdir, int64_t *step,
                              char **client_json, zc_err *err);

/* Checks a checkpoint without loading it: manifest, every file's size and CRC. On success,
 * summary (malloc'd) describes it: step, world size, stage, parameters, sizes. Not collective. */
ZC_API zc_status zc_ckpt_verify(const char *ckdir, char **summary, zc_err *err);

/* The manifest's summary without reading the shards. Not collective. */
ZC_API zc_status zc_ckpt_inspect(const char *ckdir, char **summary, zc_err *err);

/* The checkpoint's manifest.json, checked as every reader checks it (its SHA-256 and every
 * field), as JSON text in *json (malloc'd; NULL on failure): for a program that reads what the
 * manifest records beyond the loaded state (format_version, producer_version, config, client).
 * Not collective. */
ZC_API zc_status zc_ckpt_manifest_json(const char *ckdir, char **json, zc_err *err);

/* The version of this zeroc: the project's version, plus "+g<commit>" when it was built from a
 * git checkout (".dirty" when the tree differed from that commit); what checkpoints record as
 * producer_version and `zeroc --version` prints. A static string. */
ZC_API const char *zc_version(void);

/* Writes the checkpoint's weights as safetensors (tensor names = parameter names; F32, or BF16
 * rounded to nearest even), streamed in chunks (memory: a few MiB whatever the model's size),
 * each shard's CRC checked before use, through a temporary file and a rename. */
ZC_API zc_status zc_ckpt_export_safetensors(const char *ckdir, const char *out, bool bf16,
                                            zc_err *err);

/* Reading a checkpoint's parameters without an engine (exports, conversions). *r is NULL on
 * failure; zc_ckpt_reader_close accepts NULL. */
typedef struct zc_ckpt_reader zc_ckpt_reader;
ZC_API zc_status zc_ckpt_reader_open(const char *ckdir, zc_ckpt_reader **r, zc_err *err);
ZC_API int zc_ckpt_reader_num_params(const zc_ckpt_reader *r);
/* A number the trainer stored in the manifest's client object (0, or −1 if absent). */
ZC_API int zc_ckpt_reader_client_int(const zc_ckpt_reader *r, const char *key, int64_t *out);
/* A finite number, or a string of fewer than cap bytes, of the client object (0, or −1 if absent
 * or of another type). */
ZC_API int zc_ckpt_reader_client_number(const zc_ckpt_reader *r, const char *key, double *out);
ZC_API int zc_ckpt_reader_client_string(const zc_ckpt_reader *r, const char *key, char *out,
                                        size_t cap);
/* name, shape, numel of parameter p (unit and offset as the writer registered them) */
ZC_API const zc_param_info *zc_ckpt_reader_param(const zc_ckpt_reader *r, int p);
/* elements [first, first + n) of parameter p, fp32 (the shard's CRC is checked first); a
 * parameter of a unit the checkpoint does not hold (a LoRA run's frozen base) comes from the base
 * given to zc_ckpt_reader_set_base, or is refused (ZC_EINVAL naming it) without one */
ZC_API zc_status zc_ckpt_reader_read(zc_ckpt_reader *r, int p, size_t first, size_t n, float *dst,
                                     zc_err *err);
/* Parameters of units the checkpoint does not hold (units[].stored false: a LoRA run's frozen
 * base, recorded by base_digest); 0 when it holds every unit. */
ZC_API int zc_ckpt_reader_base_params(const zc_ckpt_reader *r);
/* Where those parameters come from: read(ctx, p, first, n, dst, err) gives elements
 * [first, first + n) of the checkpoint's parameter p (zc_ckpt_reader_param: zeroc's layout, fp32).
 * Reads the whole base once through it and checks it against the manifest's base_digest
 * (zc_engine_base_digest's definition: the values rounded to bf16): ZC_EINVAL naming both digests
 * when it is another base, and then the reader keeps no base. */
typedef zc_status (*zc_ckpt_base_read)(void *ctx, int p, size_t first, size_t n, float *dst,
                                       zc_err *err);
ZC_API zc_status zc_ckpt_reader_set_base(zc_ckpt_reader *r, zc_ckpt_base_read read, void *ctx,
                                         const char *what, zc_err *err);
ZC_API void zc_ckpt_reader_close(zc_ckpt_reader *r);

#ifdef __cplusplus
}
#endif

#endif

/* checkpoint.c — sharded, crash-safe checkpoints and resharding (format in zeroc/checkpoint.h).
 *
 * Why it is shaped this way:
 * - Each rank writes only its owned slice of each unit, in the unpadded logical layout, so a
 *   checkpoint does not depend on the stage or the padding and any world size can read it: a
 *   loading rank computes, from the manifest's world size and unit sizes, which old files hold
 *   the logical ranges it needs and preads just those bytes.
 * - Crash safety comes from rename: nothing is visible under its final name until every byte
 *   is fsync'd; `latest` moves by an atomic rename after that.
 * - Every rank reports its own outcome into one gather, so a failure anywhere fails everywhere
 *   (no rank left waiting, no checkpoint half-published).
 * The manifest is JSON (cJSON): this module and src/config are the library's JSON readers.
 * It also holds zc_version, the build's version that every manifest records as its producer. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ckpt/manifest.h"
#include "ckpt/safetensors_header.h"
#include "util/base_digest.h"
#include "util/crc32c.h"
#include "zeroc/durable.h"
#include "engine/engine_state.h"
#include "offload/direct_file.h"
#include "zeroc/checkpoint.h"
#include "zeroc/optim.h"
#include "zeroc_version.h" /* generated at build time (cmake/zeroc_version.cmake) */

enum { HEADER_BYTES = ZC_SHARD_HEADER_BYTES };
static const char MAGIC[8] = "ZCSHARD";

const char *zc_version(void)
{
    return ZEROC_VERSION;
}

/* ---------- small file helpers ---------- */

/* snprintf for paths: a path longer than the buffer is cut, and then fails to open with a
 * message naming the cut path; lengths are user input, not a programming error. */
static int pathf(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return r;
}

static int read_at(int fd, void *buf, size_t n, off_t off)
{
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r, n -= (size_t)r, off += r;
    }
    return 0;
}

static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void rm_rf(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes text to path durably (zeroc/durable.h); -1 on failure (errno set). */
static int write_file_atomic(const char *path, const char *text)
{
    zc_err scratch;
    return zc_durable_write_file(path, text, strlen(text), &scratch) ? -1 : 0;
}

static char *read_text(const char *path, size_t max)
{
    FILE *f = zc_fopen_regular(path, NULL); /* a regular file only: a FIFO would block */
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = 0;
    return buf;
}

/* ---------- save ---------- */

/* Test hook: ZEROC_FAULT_KILL_IN_SAVE=shard:R@S makes rank R kill itself (SIGKILL) right after
 * writing its shard of the step-S save; =publish@S makes rank 0 do so after writing the
 * manifest, before the rename; =swap@S when step S is saved again, once the old copy is out of
 * step-S's name (exchanged, or moved aside) and before `latest` is rewritten; =prune@S once a
 * checkpoint --keep drops is renamed for removal — the moments a crash must not be able to
 * damage anything. ZEROC_FAULT_NO_RENAME_EXCHANGE=1 takes the path of a file system without
 * RENAME_EXCHANGE. */
static void fault_point(const char *where, int rank, int64_t step)
{
    const char *f = getenv("ZEROC_FAULT_KILL_IN_SAVE");
    if (!f)
        return;
    char a[64], b[64];
    pathf(a, sizeof a, "%s:%d@%lld", where, rank, (long long)step);
    pathf(b, sizeof b, "%s@%lld", where, (long long)step);
    if (!strcmp(f, a) || (!strcmp(f, b) && rank == 0))
        raise(SIGKILL);
}

/* Test hook: ZEROC_FAULT_FLIP_IN_SAVE=shard:R@S flips one byte of rank R's shard of the step-S
 * save once it has landed on the disk, before it is read back — what another writer or a
 * failing disk does; the read-back must catch it before anything is published. */
static void fault_flip(zc_direct_file *f, int rank, int64_t step)
{
    const char *v = getenv("ZEROC_FAULT_FLIP_IN_SAVE");
    char a[64];
    pathf(a, sizeof a, "shard:%d@%lld", rank, (long long)step);
    if (v && !strcmp(v, a))
        zc_direct_file_flip_after_landing(f, HEADER_BYTES);
}

/* CRC32C of the first `bytes` bytes of path, read through a 4 MiB buffer. */
static zc_status file_crc(const char *path, size_t bytes, uint32_t *crc, zc_err *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return zc_err_set(err, ZC_EIO, "cannot open %s: %m", path);
    enum { CHUNK = 1 << 22 };
    char *buf = malloc(CHUNK);
    uint32_t c = 0;
    zc_status st = buf ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (size_t at = 0; !st && at < bytes; at += CHUNK) {
        size_t k = bytes - at < CHUNK ? bytes - at : CHUNK;
        if (read_at(fd, buf, k, (off_t)at))
            st = zc_err_set(err, ZC_EIO, "cannot read %s: %m", path);
        else
            c = zc_crc32c(c, buf, k);
    }
    close(fd);
    free(buf);
    *crc = c;
    return st;
}

/* The shard, read back and CRC-checked as it was written, must still be there at its size. */
static zc_status check_size(const char *path, int64_t bytes, zc_err *err)
{
    struct stat sb;
    if (stat(path, &sb))
        return zc_err_set(err, ZC_EIO, "%s: gone after it was written: %m", path);
    if (sb.st_size != bytes)
        return zc_err_set(err, ZC_EIO,
                          "%s: %lld bytes after it was written, %lld written (the file "
                          "changed after it was written); not saved",
                          path, (long long)sb.st_size, (long long)bytes);
    return ZC_OK;
}

typedef struct {
    int32_t status; /* 0 ok */
    uint32_t crc;
    int64_t bytes;
} rank_result;

static zc_status write_shard(zc_engine *e, const char *path, int64_t step, uint32_t *crc,
                             int64_t *bytes, zc_err *err)
{
    const int K = zc_engine_moments(e), nunits = zc_engine_num_units(e);
    zc_direct_file *f;
    zc_status st = zc_direct_file_open(&f, path, err);
    if (st)
        return st;
    fault_flip(f, zc_engine_rank(e), step);
    unsigned char hdr[HEADER_BYTES] = {0};
    int32_t v[4] = {ZC_SHARD_VERSION, zc_engine_rank(e), zc_engine_world_size(e), nunits};
    memcpy(hdr, MAGIC, 8);
    memcpy(hdr + 8, v, sizeof v);
    memcpy(hdr + 24, &step, 8);
    st = zc_direct_file_append(f, hdr, sizeof hdr, err);
    int64_t total = HEADER_BYTES;
    /* through one 8 MiB buffer: a fresh buffer per unit cost a page fault per 4 KiB */
    enum { CHUNK = 2 << 20 };
    float *buf = malloc((size_t)CHUNK * sizeof(float));
    if (!st && !buf)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory writing '%s'", path);
    const bool q8 = zc_engine_optim(e) == ZC_OPTIM_ADAMW8BIT;
    for (int u = 0; u < nunits && !st; u++) {
        size_t first, n;
        zc_engine_owned_range(e, u, &first, &n);
        if (zc_engine_unit_info(e, u)->frozen) /* not stored: the manifest's base_digest */
            continue;
        if (q8) { /* the weights, then the moments as they are: codes m, v; scales m, v */
            const size_t nbk = zc_ckpt_q8_scales(n), r = (size_t)zc_engine_rank(e);
            for (size_t at = 0; at < n && !st; at += CHUNK) {
                size_t k = n - at < CHUNK ? n - at : CHUNK;
                if (!(st = zc_engine_export_owned(e, u, ZC_STATE_WEIGHTS, at, k, buf, err)))
                    st = zc_direct_file_append(f, buf, k * sizeof(float), err);
            }
            for (int x = 0; x < 4 && !st; x++) { /* the codes 4 floats' worth at a time */
                const bool sgn = !(x & 1), codes = x < 2;
                const size_t total_x = codes ? n : nbk, step_x = codes ? 4 * (size_t)CHUNK : CHUNK;
                for (size_t at = 0; at < total_x && !st; at += step_x) {
                    size_t k = total_x - at < step_x ? total_x - at : step_x;
                    st = codes ? zc_engine_q8_codes(e, u, sgn, first + at, k, (uint8_t *)buf, false,
                                                    err)
                               : zc_engine_q8_scales(e, u, sgn, r, at, k, buf, false, err);
                    if (!st)
                        st = zc_direct_file_append(f, buf, codes ? k : k * sizeof(float), err);
                }
            }
            total += (int64_t)zc_ckpt_section_bytes(n, K, true);
            continue;
        }
        for (int kind = 0; kind <= K && !st; kind++)
            for (size_t at = 0; at < n && !st; at += CHUNK) {
                size_t k = n - at < CHUNK ? n - at : CHUNK;
                if ((st = zc_engine_export_owned(e, u, (zc_state_kind)kind, at, k, buf, err)))
                    break;
                st = zc_direct_file_append(f, buf, k * sizeof(float), err);
                total += (int64_t)(k * sizeof(float));
            }
    }
    free(buf);
    if (st) {
        zc_direct_file_abort(f);
        return st;
    }
    if ((st = zc_direct_file_close(f, crc, err)))
        return st;
    *bytes = total;
    return ZC_OK;
}

/* base: the frozen units' digest (zc_engine_base_digest), NULL when no unit is frozen. */
static char *manifest_text(zc_engine *e, int64_t step, const char *config_json,
                           const char *client_json, const rank_result *res, const uint64_t *base)
{
    const int n = zc_engine_world_size(e), K = zc_engine_moments(e);
    cJSON *m = cJSON_CreateObject();
    /* format 4 only when it has units not stored: every other checkpoint stays readable by a
     * zeroc that reads format 3 */
    cJSON_AddNumberToObject(m, "format_version", base ? ZC_MANIFEST_VERSION : ZC_MANIFEST_FULL);
    cJSON_AddStringToObject(m, "producer", "zeroc");
    cJSON_AddStringToObject(m, "producer_version", zc_version());
    cJSON_AddNumberToObject(m, "world_size", n);
    cJSON_AddNumberToObject(m, "stage", zc_engine_stage(e));
    /* the shards hold fp32 (the master copy in mixed precision): any dtype can resume them */
    cJSON_AddStringToObject(m, "dtype", zc_dtype_name(zc_engine_dtype(e)));
    cJSON *opt = cJSON_AddObjectToObject(m, "optimizer");
    /* as configured (AdamW or Adam: the same two moments); SGD by its moments */
    cJSON_AddStringToObject(opt, "type",
                            K == 2 ? zc_optim_name(zc_engine_optim(e)) : zc_ckpt_optim_name(K));
    cJSON_AddNumberToObject(opt, "moments", K);
    if (zc_engine_optim(e) == ZC_OPTIM_ADAMW8BIT) /* its codes and scales, as they are */
        cJSON_AddStringToObject(opt, "moments_format", "q8");
    cJSON_AddNumberToObject(m, "step", (double)step);
    cJSON_AddNumberToObject(m, "optimizer_steps", (double)zc_engine_steps_done(e));
    const zc_loss_scaler *ls = zc_engine_loss_scaler(e);
    cJSON *scaler = cJSON_AddObjectToObject(m, "loss_scaler");
    cJSON_AddNumberToObject(scaler, "scale", ls->scale);
    cJSON_AddNumberToObject(scaler, "hysteresis_left", ls->hysteresis_left);
    cJSON_AddNumberToObject(scaler, "iter", (double)ls->iter);
    cJSON_AddNumberToObject(scaler, "last_overflow_iter", (double)ls->last_overflow_iter);
    cJSON_AddNumberToObject(scaler, "skipped", (double)ls->skipped);
    cJSON_AddBoolToObject(scaler, "dynamic", ls->dynamic);
    cJSON *units = cJSON_AddArrayToObject(m, "units");
    for (int u = 0; u < zc_engine_num_units(e); u++) {
        const zc_unit_info *ui = zc_engine_unit_info(e, u);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", ui->name);
        cJSON_AddNumberToObject(o, "numel", (double)ui->numel);
        cJSON_AddNumberToObject(o, "shard", (double)ui->shard);
        if (ui->frozen) /* a frozen unit (a LoRA run's base): checked by base_digest, not held */
            cJSON_AddBoolToObject(o, "stored", false);
        cJSON_AddItemToArray(units, o);
    }
    if (base) {
        char hex[40];
        pathf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, base[0], base[1]);
        cJSON_AddStringToObject(m, "base_digest", hex);
    }
    cJSON *params = cJSON_AddArrayToObject(m, "params");
    for (int p = 0; p < zc_engine_num_params(e); p++) {
        const zc_param_info *pi = zc_engine_param_info(e, p);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", pi->name);
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < pi->ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)pi->shape[d]));
        cJSON_AddNumberToObject(o, "unit", pi->unit);
        cJSON_AddNumberToObject(o, "offset", (double)pi->offset);
        cJSON_AddItemToArray(params, o);
    }
    cJSON *files = cJSON_AddArrayToObject(m, "files");
    for (int r = 0; r < n; r++) {
        char name[32], crc[16];
        pathf(name, sizeof name, "rank-%05d.bin", r);
        pathf(crc, sizeof crc, "%08" PRIx32, res[r].crc);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddNumberToObject(o, "bytes", (double)res[r].bytes);
        cJSON_AddStringToObject(o, "crc32c", crc);
        cJSON_AddItemToArray(files, o);
    }
    /* both checked by check_save_args: objects (client_json may be NULL) */
    cJSON_AddItemToObject(m, "config", cJSON_Parse(config_json));
    cJSON *client = client_json ? cJSON_Parse(client_json) : NULL;
    cJSON_AddItemToObject(m, "client", client ? client : cJSON_CreateObject());
    char *text = cJSON_Print(m);
    cJSON_Delete(m);
    return text;
}

/* Steps of the complete checkpoints in dir (step-N with a manifest), ascending. */
static int list_steps(const char *dir, long long **out)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0, cap = 0;
    long long *v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long s;
        char tail;
        if (sscanf(de->d_name, "step-%lld%c", &s, &tail) != 1)
            continue;
        char man[4200];
        pathf(man, sizeof man, "%s/%s/manifest.json", dir, de->d_name);
        if (access(man, F_OK))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            long long *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = s;
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: few entries */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            long long t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *out = v;
    return n;
}

/* Rank 0's part after every shard is safely written: manifest, publish, latest, retention. */
static zc_status publish(zc_engine *e, const char *dir, const char *tmp, int64_t step,
                         const char *config_json, const char *client_json, int keep,
                         const rank_result *res, const uint64_t *base, zc_err *err)
{
    char path[4200], final[4200], old[4200];
    char *text = manifest_text(e, step, config_json, client_json, res, base);
    if (!text)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing the manifest");
    char sha[96], shapath[4200];
    zc_manifest_sha256_line(text, sha);
    pathf(path, sizeof path, "%s/manifest.json", tmp);
    pathf(shapath, sizeof shapath, "%s/manifest.sha256", tmp);
    int bad = write_file_atomic(path, text);
    free(text);
    if (bad || write_file_atomic(shapath, sha) || fsync_dir(tmp))
        return zc_err_set(err, ZC_EIO, "cannot write '%s': %m", bad ? path : shapath);
    /* read back as any reader will: its checksum, every field, and the CRCs just gathered */
    zc_manifest m;
    zc_status st = zc_manifest_read(tmp, &m, err);
    for (int r = 0; !st && r < zc_engine_world_size(e); r++)
        if (m.crc[r] != res[r].crc || m.step != step)
            st = zc_err_set(err, ZC_EIO,
                            "%s: read back, it differs from what was written (the "
                            "file changed after it was written); not saved",
                            path);
    if (!st)
        zc_manifest_free(&m);
    if (st)
        return st;
    fault_point("publish", 0, step);
    pathf(final, sizeof final, "%s/step-%06lld", dir, (long long)step);
    pathf(old, sizeof old, "%s/.old-step-%06lld", dir, (long long)step);
    /* The same step saved again (a resume from an earlier step into the same directory):
     * `latest` may already name step-N, so there must be no moment without a complete step-N.
     * RENAME_EXCHANGE swaps the two directories in one step; the old one, now under tmp's
     * name, is removed below (or, after a crash, by the next lock's sweep). A file system
     * without it (EINVAL) moves the old one aside first; a crash between the two renames
     * leaves .old-step-N, which the next lock's sweep puts back (zc_ckpt_lock_dir). */
    const char *gone = NULL; /* where the replaced checkpoint now lies, to remove */
    if (!access(final, F_OK)) {
        const bool exchange = !getenv("ZEROC_FAULT_NO_RENAME_EXCHANGE");
        if (exchange && !renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE)) {
            gone = tmp;
        } else if (!exchange || errno == EINVAL || errno == ENOSYS) {
            rm_rf(old);
            if (rename(final, old))
                return zc_err_set(err, ZC_EIO, "cannot replace '%s': %m", final);
            gone = old;
        } else {
            return zc_err_set(err, ZC_EIO, "cannot replace '%s': %m", final);
        }
        fault_point("swap", 0, step);
    }
    if ((gone != tmp && rename(tmp, final)) || fsync_dir(dir)) {
        if (gone == old)
            rename(old, final);
        return zc_err_set(err, ZC_EIO, "cannot publish '%s': %m", final);
    }
    char latest[4200], name[64];
    pathf(latest, sizeof latest, "%s/latest", dir);
    pathf(name, sizeof name, "step-%06lld\n", (long long)step);
    if (write_file_atomic(latest, name) || fsync_dir(dir))
        return zc_err_set(err, ZC_EIO, "cannot update '%s': %m", latest);
    if (gone)
        rm_rf(gone);
    if (keep > 0) {
        long long *steps = NULL;
        int n = list_steps(dir, &steps);
        /* By lineage: after a rollback into this directory (the engine was loaded from its
         * step R), the checkpoints past R that this run did not write are the abandoned
         * future, pruned first (all of them, at the run's first save); the `keep` newest of
         * the rest — R and its ancestors, and this run's own saves — stay. Without a rollback
         * nothing is abandoned and this is the oldest-first rule. */
        zc_ckpt_lineage *lin = zc_engine_lineage(e);
        struct stat ds;
        const bool here = lin->has && !stat(dir, &ds) && (uint64_t)ds.st_dev == lin->dev &&
                          (uint64_t)ds.st_ino == lin->ino;
        if (here && lin->first_save < 0)
            lin->first_save = step;
        int live = 0; /* steps[0..live): the lineage, ascending; abandoned ones marked -1 */
        for (int i = 0; i < n; i++) {
            const bool own = here && steps[i] >= lin->first_save && steps[i] <= step;
            if (here && steps[i] > lin->step && !own)
                steps[i] = -1 - steps[i];
            else
                live++;
        }
        int drop = live > keep ? live - keep : 0; /* the oldest of the lineage */
        for (int i = 0; i < n; i++) {
            const bool abandoned = steps[i] < 0;
            if (abandoned)
                steps[i] = -1 - steps[i];
            else if (drop > 0)
                drop--;
            else
                continue;
            if (steps[i] == step)
                continue;
            /* renamed out of the step-* names first: a crash while it is being removed (its
             * manifest may go first) leaves .del-step-N, which the next lock's sweep removes,
             * not a step-N that no listing counts and nothing ever deletes */
            char victim[4200], doomed[4200];
            pathf(victim, sizeof victim, "%s/step-%06lld", dir, steps[i]);
            pathf(doomed, sizeof doomed, "%s/.del-step-%06lld", dir, steps[i]);
            rm_rf(doomed);
            if (!rename(victim, doomed)) {
                fault_point("prune", 0, step);
                rm_rf(doomed);
            }
        }
        free(steps);
    }
    return ZC_OK;
}

/* A JSON text given to zc_ckpt_save (`arg` names the argument): one JSON object and nothing
 * after it (whitespace aside). */
static zc_status check_object_text(const char *arg, const char *text, zc_err *err)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithOpts(text, &end, true);
    if (!v) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        return zc_err_set(err, ZC_EINVAL,
                          "zc_ckpt_save: %s is not valid JSON (at byte %zu: '%.24s'); expected "
                          "one JSON object",
                          arg, at, text + (at <= strlen(text) ? at : 0));
    }
    const char *kind = cJSON_IsObject(v)   ? NULL
                       : cJSON_IsArray(v)  ? "an array"
                       : cJSON_IsString(v) ? "a string"
                       : cJSON_IsNumber(v) ? "a number"
                       : cJSON_IsBool(v)   ? "a boolean"
                                           : "null";
    cJSON_Delete(v);
    if (kind)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_save: %s is %s; expected a JSON object", arg,
                          kind);
    return ZC_OK;
}

/* zc_ckpt_save's arguments, before anything is written: a finalized engine, a directory, a step
 * the manifest can hold, and JSON objects. */
static zc_status check_save_args(zc_engine *e, const char *dir, int64_t step,
                                 const char *config_json, const char *client_json, zc_err *err)
{
    if (!dir)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_save: dir is NULL");
    if (!zc_engine_finalized(e))
        return zc_err_set(err, e ? ZC_ESTATE : ZC_EINVAL, "zc_ckpt_save: the engine is %s",
                          e ? "not finalized (call zc_engine_finalize first)" : "NULL");
    if (step < 0 || step > INT32_MAX)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_save: step %lld; expected 0 to %d",
                          (long long)step, INT32_MAX);
    if (!config_json)
        return zc_err_set(err, ZC_EINVAL,
                          "zc_ckpt_save: config_json is NULL; expected the effective "
                          "configuration as a JSON object (zc_config_to_json)");
    zc_status st = check_object_text("config_json", config_json, err);
    if (!st && client_json)
        st = check_object_text("client_json", client_json, err);
    return st;
}

zc_status zc_ckpt_save(zc_engine *e, zc_comm *comm, const char *dir, int64_t step,
                       const char *config_json, const char *client_json, int keep, zc_err *err)
{
    if (!comm)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_save: comm is NULL");
    const int rank = zc_comm_rank(comm), n = zc_comm_size(comm);
    char tmp[4200], path[4300];
    /* the temporary directory is this job's alone: rank 0's pid and host in its name */
    typedef struct {
        char s[80];
    } token;
    token me = {{0}}, *tokens = calloc((size_t)n, sizeof *tokens);
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    host[strcspn(host, "/")] = 0;
    pathf(me.s, sizeof me.s, "%d-%s", (int)getpid(), host);
    /* every rank checks its arguments: a rank refusing them fails every rank, before a write */
    zc_status st = check_save_args(e, dir, step, config_json, client_json, err);
    if (!st && !tokens)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    uint64_t base[2];
    bool frozen = false;
    if ((st = zc_comm_agree(comm, st, "starting the checkpoint", err)) ||
        /* collective: the last step's update, if the next forward was to finish it */
        (st = zc_engine_finish_update(e, err)) ||
        /* collective: the frozen units' digest, recorded in place of their values */
        (st = zc_engine_base_digest(e, base, &frozen, err)) ||
        (st = zc_comm_control_gather(comm, &me, tokens, sizeof me, "checkpoint name", err))) {
        free(tokens);
        return st;
    }
    pathf(tmp, sizeof tmp, "%s/.tmp-step-%06lld-%s", dir, (long long)step, tokens[0].s);
    free(tokens);
    if (rank == 0) { /* 0777 less the umask: a group-writable umask lets the group continue */
        if (mkdir(dir, 0777) && errno != EEXIST)
            st = zc_err_set(err, ZC_EIO, "cannot create save directory '%s': %m", dir);
        else if (mkdir(tmp, 0777))
            st = zc_err_set(err, ZC_EIO, "cannot create '%s': %m", tmp);
    }
    if ((st = zc_comm_agree(comm, st, "creating the checkpoint directory", err)))
        return st;
    rank_result mine = {0, 0, 0}, *all = calloc((size_t)n, sizeof *all);
    pathf(path, sizeof path, "%s/rank-%05d.bin", tmp, rank);
    st = all ? write_shard(e, path, step, &mine.crc, &mine.bytes, err)
             : zc_err_set(err, ZC_ENOMEM, "out of memory");
    fault_point("shard", rank, step);
    if (!st)
        st = check_size(path, mine.bytes, err);
    mine.status = st;
    if ((st = zc_comm_agree(comm, st, "writing the checkpoint shards", err))) {
        if (rank == 0)
            rm_rf(tmp);
        free(all);
        return st; /* every rank's message: the failing rank's own; nothing was published */
    }
    zc_err scratch;
    if ((st = zc_comm_control_gather(comm, &mine, all, sizeof mine, "checkpoint", &scratch))) {
        free(all);
        *err = scratch;
        return st;
    }
    if (rank == 0)
        st = publish(e, dir, tmp, step, config_json, client_json, keep, all, frozen ? base : NULL,
                     err);
    if (st && rank == 0)
        rm_rf(tmp);
    free(all);
    return zc_comm_agree(comm, st, "publishing the checkpoint", err);
}

/* ---------- reading ---------- */

/* Checks one shard file: its size against the layout, its CRC against the manifest, and its
 * header (CRC-protected) against the manifest's rank, world size, units and step. */
static zc_status check_file(const char *ckdir, const zc_manifest *m, int r, zc_err *err)
{
    char path[4300];
    pathf(path, sizeof path, "%s/rank-%05d.bin", ckdir, r);
    size_t want = zc_ckpt_file_bytes(m->stored, m->shard, m->nunits, r, m->K, m->q8);
    struct stat sb;
    if (stat(path, &sb))
        return zc_err_set(err, ZC_EIO, "%s: missing shard: %m", path);
    if ((size_t)sb.st_size != want)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %lld bytes, but the manifest's layout needs %zu "
                          "(a truncated or foreign shard)",
                          path, (long long)sb.st_size, want);
    uint32_t c = 0;
    zc_status st = file_crc(path, want, &c, err);
    if (st)
        return st;
    if (c != m->crc[r])
        return zc_err_set(err, ZC_EINVAL,
                          "%s: CRC32C %08" PRIx32 " does not match the "
                          "manifest's %08" PRIx32 " (the file is corrupt)",
                          path, c, m->crc[r]);
    unsigned char hdr[HEADER_BYTES];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return zc_err_set(err, ZC_EIO, "cannot open %s: %m", path);
    int bad = read_at(fd, hdr, sizeof hdr, 0);
    close(fd);
    if (bad || memcmp(hdr, MAGIC, 8))
        return zc_err_set(err, ZC_EINVAL, "%s: not a zeroc shard (bad magic)", path);
    int32_t v[4];
    int64_t step;
    memcpy(v, hdr + 8, sizeof v);
    memcpy(&step, hdr + 24, 8);
    if (v[0] != ZC_SHARD_VERSION || v[1] != r || v[2] != m->world || v[3] != m->nunits ||
        step != m->step)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: its header says version %d, rank %d of %d, %d "
                          "units, step %lld; the manifest says version %d, rank %d of %d, %d "
                          "units, step %lld (an edited manifest or a foreign shard)",
                          path, v[0], v[1], v[2], v[3], (long long)step, ZC_SHARD_VERSION, r,
                          m->world, m->nunits, (long long)m->step);
    return ZC_OK;
}

/* A save directory without `latest`: its newest published step-N (a save publishes the
 * directory whole, by rename, then writes `latest`; a first save killed, or out of space,
 * between the two leaves a complete step-N and no `latest`). False when it holds none. */
static bool newest_step(const char *dir, char *out, size_t outlen)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    long long best = -1;
    char probe[4400];
    for (struct dirent *de; (de = readdir(d));) {
        long long s;
        char tail;
        if (sscanf(de->d_name, "step-%lld%c", &s, &tail) != 1 || s <= best)
            continue;
        pathf(probe, sizeof probe, "%s/%s/manifest.json", dir, de->d_name);
        if (!access(probe, F_OK)) {
            best = s;
            pathf(out, outlen, "%s/%s", dir, de->d_name);
        }
    }
    closedir(d);
    return best >= 0;
}

zc_status zc_ckpt_resolve(const char *path, char *out, size_t outlen, zc_err *err)
{
    char probe[4200];
    pathf(probe, sizeof probe, "%s/manifest.json", path);
    if (!access(probe, F_OK)) {
        pathf(out, outlen, "%s", path);
        return ZC_OK;
    }
    pathf(probe, sizeof probe, "%s/latest", path);
    if (access(probe, F_OK) && errno == ENOENT && newest_step(path, out, outlen))
        return ZC_OK; /* a first save that failed or was killed before `latest` */
    char *name = read_text(probe, 256);
    struct stat sb;
    if (!name && !stat(probe, &sb)) /* there, but not readable as a file: say what it is */
        return zc_err_set(err, ZC_EINVAL, "%s: %s", probe,
                          S_ISREG(sb.st_mode) ? "cannot be read"
                          : S_ISFIFO(sb.st_mode)
                              ? "it is a FIFO (named pipe), not a regular file naming the newest "
                                "checkpoint"
                              : "it is not a regular file naming the newest checkpoint");
    if (!name)
        return zc_err_set(err, ZC_EINVAL,
                          "'%s' is not a checkpoint (no manifest.json) nor a "
                          "save directory (no latest)",
                          path);
    name[strcspn(name, "\n")] = 0;
    long long s;
    char tail;
    int ok = sscanf(name, "step-%lld%c", &s, &tail) == 1;
    if (ok)
        pathf(out, outlen, "%s/%s", path, name);
    free(name);
    if (!ok)
        return zc_err_set(err, ZC_EINVAL, "%s: does not name a checkpoint (step-N)", probe);
    pathf(probe, sizeof probe, "%s/manifest.json", out);
    if (access(probe, F_OK))
        return zc_err_set(err, ZC_EINVAL, "%s names '%s', which is not a complete checkpoint", path,
                          out);
    return ZC_OK;
}

/* ---------- load ---------- */

/* base: the engine's frozen units' digest (zc_engine_base_digest). */
static zc_status check_model(zc_engine *e, const zc_manifest *m, const char *ckdir,
                             const uint64_t base[2], zc_err *err)
{
    if (m->nunits != zc_engine_num_units(e) || m->nparams != zc_engine_num_params(e))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: the checkpoint has %d units and %d parameters, "
                          "the model %d and %d",
                          ckdir, m->nunits, m->nparams, zc_engine_num_units(e),
                          zc_engine_num_params(e));
    for (int u = 0; u < m->nunits; u++)
        if (m->numel[u] != zc_engine_unit_info(e, u)->numel)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: unit %d ('%s') has %zu elements in the "
                              "checkpoint, %zu in the model",
                              ckdir, u, zc_engine_unit_info(e, u)->name, m->numel[u],
                              zc_engine_unit_info(e, u)->numel);
    for (int p = 0; p < m->nparams; p++) {
        const zc_param_info *have = &m->params[p], *pi = zc_engine_param_info(e, p);
        if (strcmp(have->name, pi->name))
            return zc_err_set(err, ZC_EINVAL,
                              "%s: parameter %d is '%s' in the checkpoint, '%s' "
                              "in the model",
                              ckdir, p, have->name, pi->name);
        bool same = have->unit == pi->unit && have->offset == pi->offset && have->ndim == pi->ndim;
        for (int d = 0; same && d < pi->ndim; d++)
            same = have->shape[d] == pi->shape[d];
        if (!same)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: parameter '%s' has another shape or place "
                              "(unit, offset) in the checkpoint than in the model",
                              ckdir, pi->name);
    }
    if (m->K != zc_engine_moments(e))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: optimizer state with %d moments (%s) cannot "
                          "continue an optimizer with %d",
                          ckdir, m->K, zc_ckpt_optim_name(m->K), zc_engine_moments(e));
    /* units the checkpoint does not hold come from the engine as it was built (a LoRA run's
     * base from --init, or drawn from the seed): frozen ones, and the same values */
    size_t absent = 0;
    for (int u = 0; u < m->nunits; u++) {
        if (m->stored[u])
            continue;
        if (!zc_engine_unit_info(e, u)->frozen)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: unit %d ('%s') is not in the checkpoint (it was frozen, a "
                              "LoRA run's base), but this run trains it",
                              ckdir, u, zc_engine_unit_info(e, u)->name);
        absent += m->numel[u];
    }
    if (m->has_base && (base[0] != m->base_digest[0] || base[1] != m->base_digest[1]))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: the checkpoint holds what was trained, not its frozen base (%zu "
                          "parameters), recorded by digest %016" PRIx64 "%016" PRIx64
                          "; this run's base has digest %016" PRIx64 "%016" PRIx64
                          ": another base. Resume on the base the run was trained on (the same "
                          "--init, or the same seed and shape)",
                          ckdir, absent, m->base_digest[0], m->base_digest[1], base[0], base[1]);
    return ZC_OK;
}

/* Opens (once, after checking it) rank r's shard file. */
static zc_status shard_fd(const char *ckdir, const zc_manifest *m, int *fds, char *checked, int r,
                          zc_err *err)
{
    if (checked[r])
        return ZC_OK;
    zc_status st = check_file(ckdir, m, r, err);
    if (st)
        return st;
    char path[4300];
    pathf(path, sizeof path, "%s/rank-%05d.bin", ckdir, r);
    if ((fds[r] = open(path, O_RDONLY)) < 0)
        return zc_err_set(err, ZC_EIO, "cannot open %s: %m", path);
    checked[r] = 1;
    return ZC_OK;
}

/* Byte offsets in rank r's file of unit u's q8 codes and scales of m (k 1) or v (k 2). */
static void q8_offsets(const zc_manifest *m, int u, int r, int k, off_t *codes, off_t *scales)
{
    size_t cnt = zc_ckpt_owned(m->numel[u], m->shard[u], r);
    off_t sec = zc_ckpt_section_offset(m->stored, m->shard, u, r, m->K, true);
    *codes = sec + (off_t)(cnt * sizeof(float) + (size_t)(k - 1) * cnt);
    *scales = sec + (off_t)(cnt * sizeof(float) + 2 * cnt +
                            (size_t)(k - 1) * zc_ckpt_q8_scales(cnt) * sizeof(float));
}

/* q8 moment k of rank r's owned elements [in, in + n), dequantized into dst. */
static zc_status read_q8(int fd, const zc_manifest *m, int u, int r, int k, size_t in, size_t n,
                         float *dst)
{
    enum { NB = 256 };
    static _Thread_local uint8_t q[NB * 256];
    float sc[NB];
    off_t codes, scales;
    q8_offsets(m, u, r, k, &codes, &scales);
    for (size_t a = 0; a < n;) {
        size_t i = in + a, b = i / 256, b0 = b * 256;
        size_t c = b0 + NB * 256 - i < n - a ? b0 + NB * 256 - i : n - a;
        size_t nb = (i + c - 1) / 256 - b + 1;
        if (read_at(fd, q + (i - b0), c, codes + (off_t)i) ||
            read_at(fd, sc, nb * sizeof(float), scales + (off_t)(b * sizeof(float))))
            return ZC_EIO;
        zc_q8_dequantize(q, sc, k == 1, i - b0, c, dst + a);
        a += c;
    }
    return ZC_OK;
}

/* Reads logical range [first, first + n) of unit u, kind k (0 params, 1 m, 2 v) from the old
 * shards into dst (q8 moments dequantized). */
static zc_status read_range(const char *ckdir, const zc_manifest *m, int *fds, char *checked, int u,
                            int k, size_t first, size_t n, float *dst, zc_err *err)
{
    size_t S = m->shard[u];
    for (size_t x = first; x < first + n;) {
        int r = (int)(x / S);
        size_t lo = (size_t)r * S, cnt = zc_ckpt_owned(m->numel[u], S, r);
        size_t take = lo + cnt - x < first + n - x ? lo + cnt - x : first + n - x;
        zc_status st = shard_fd(ckdir, m, fds, checked, r, err);
        if (st)
            return st;
        off_t off = zc_ckpt_section_offset(m->stored, m->shard, u, r, m->K, m->q8) +
                    (off_t)(((size_t)k * cnt + (x - lo)) * sizeof(float));
        if (k && m->q8 ? read_q8(fds[r], m, u, r, k, x - lo, take, dst + (x - first)) != ZC_OK
                       : read_at(fds[r], dst + (x - first), take * sizeof(float), off))
            return zc_err_set(err, ZC_EIO, "%s: cannot read shard rank %d: %m", ckdir, r);
        x += take;
    }
    return ZC_OK;
}

static zc_status load_local(zc_engine *e, const char *ckdir, zc_manifest *m, const uint64_t base[2],
                            zc_err *err)
{
    zc_status st = zc_manifest_read(ckdir, m, err);
    if (!st)
        st = check_model(e, m, ckdir, base, err);
    if (st)
        return st;
    int *fds = malloc((size_t)m->world * sizeof(int));
    char *checked = calloc((size_t)m->world, 1);
    if (!fds || !checked) {
        free(fds);
        free(checked);
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    }
    enum { CHUNK = 1 << 22 };
    float *buf = malloc(3 * (size_t)CHUNK * sizeof(float));
    if (!buf)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int u = 0; u < m->nunits && !st; u++) {
        size_t pf, pn, mf, mn;
        zc_engine_needed_ranges(e, u, &pf, &pn, &mf, &mn);
        if (!m->stored[u]) /* a frozen unit kept as the engine has it (checked by its digest) */
            continue;
        for (size_t at = pf; !st && at < pf + pn; at += CHUNK) {
            size_t k = pf + pn - at < CHUNK ? pf + pn - at : CHUNK;
            if (!(st = read_range(ckdir, m, fds, checked, u, 0, at, k, buf, err)))
                st = zc_engine_import(e, u, at, k, buf, NULL, NULL, err);
        }
        /* AdamW8bit's codes and scales into AdamW8bit on as many ranks: as they are (a shard's
         * blocks are the same blocks); otherwise dequantized by read_range, and an AdamW8bit
         * engine quantizes them afresh (zc_engine_import) */
        const size_t S = m->shard[u];
        if (m->q8 && zc_engine_optim(e) == ZC_OPTIM_ADAMW8BIT &&
            m->world == zc_engine_world_size(e) && S == zc_engine_unit_info(e, u)->shard) {
            for (size_t s = mf / S; !st && mn && s <= (mf + mn - 1) / S; s++) {
                size_t cnt = zc_ckpt_owned(m->numel[u], S, (int)s), nbk = zc_ckpt_q8_scales(cnt);
                if (!cnt || (st = shard_fd(ckdir, m, fds, checked, (int)s, err)))
                    continue;
                for (int k = 1; !st && k <= 2; k++) {
                    off_t codes, scales;
                    q8_offsets(m, u, (int)s, k, &codes, &scales);
                    for (size_t at = 0; !st && at < cnt; at += 4 * (size_t)CHUNK) {
                        size_t c = cnt - at < 4 * (size_t)CHUNK ? cnt - at : 4 * (size_t)CHUNK;
                        st = read_at(fds[s], buf, c, codes + (off_t)at)
                                 ? zc_err_set(err, ZC_EIO, "%s: cannot read shard rank %zu: %m",
                                              ckdir, s)
                                 : zc_engine_q8_codes(e, u, k == 1, s * S + at, c, (uint8_t *)buf,
                                                      true, err);
                    }
                    for (size_t at = 0; !st && at < nbk; at += CHUNK) {
                        size_t c = nbk - at < CHUNK ? nbk - at : CHUNK;
                        st = read_at(fds[s], buf, c * sizeof(float),
                                     scales + (off_t)(at * sizeof(float)))
                                 ? zc_err_set(err, ZC_EIO, "%s: cannot read shard rank %zu: %m",
                                              ckdir, s)
                                 : zc_engine_q8_scales(e, u, k == 1, s, at, c, buf, true, err);
                    }
                }
            }
            continue;
        }
        for (size_t at = mf; !st && m->K && at < mf + mn; at += CHUNK) {
            size_t k = mf + mn - at < CHUNK ? mf + mn - at : CHUNK;
            float *mb = buf + CHUNK, *vb = m->K >= 2 ? buf + 2 * (size_t)CHUNK : NULL;
            st = read_range(ckdir, m, fds, checked, u, 1, at, k, mb, err);
            if (!st && vb)
                st = read_range(ckdir, m, fds, checked, u, 2, at, k, vb, err);
            if (!st)
                st = zc_engine_import(e, u, at, k, NULL, mb, vb, err);
        }
    }
    for (int r = 0; r < m->world; r++)
        if (checked[r])
            close(fds[r]);
    free(fds);
    free(checked);
    free(buf);
    return st;
}

zc_status zc_ckpt_load(zc_engine *e, zc_comm *comm, const char *ckdir, int64_t *step,
                       char **client_json, zc_err *err)
{
    zc_manifest m;
    memset(&m, 0, sizeof m);
    if (client_json)
        *client_json = NULL;
    if (!comm)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_load: comm is NULL");
    /* refused on a rank, the load fails on every rank (no rank waits in the agreement) */
    uint64_t base[2] = {0, 0};
    bool frozen;
    zc_status st =
        !ckdir || !step
            ? zc_err_set(err, ZC_EINVAL, "zc_ckpt_load: %s is NULL", !ckdir ? "ckdir" : "step")
        : !zc_engine_finalized(e)
            ? zc_err_set(err, e ? ZC_ESTATE : ZC_EINVAL, "zc_ckpt_load: the engine is %s",
                         e ? "not finalized (register the model, call "
                             "zc_engine_skip_init and zc_engine_finalize, then load)"
                           : "NULL")
            /* collective (every rank got here alike): the base a checkpoint may not hold */
            : zc_engine_base_digest(e, base, &frozen, err);
    if (!st)
        st = load_local(e, ckdir, &m, base, err);
    st = zc_comm_agree(comm, st, "loading the checkpoint", err);
    if (!st) {
        *step = m.step;
        /* the save directory around it, for --keep's lineage (checkpoint.c's publish) */
        char parent[4200];
        struct stat ds = {0};
        pathf(parent, sizeof parent, "%s/..", ckdir);
        zc_ckpt_lineage *lin = zc_engine_lineage(e);
        *lin = (zc_ckpt_lineage){.has = !stat(parent, &ds),
                                 .dev = (uint64_t)ds.st_dev,
                                 .ino = (uint64_t)ds.st_ino,
                                 .step = m.step,
                                 .first_save = -1};
        zc_engine_set_steps_done(e, m.optimizer_steps);
        /* The scaler continues only where it means the same thing: a dynamic fp16 run resumed
         * as one (its scale was tuned to these weights); any other run starts its own (a static
         * fp16.loss_scale is the configuration's, whatever the checkpoint used). */
        if (zc_engine_loss_scaler(e)->dynamic && m.scaler.dynamic) {
            zc_engine_set_loss_scaler(e, &m.scaler);
        } else { /* the steps it skipped still count: the trainer's steps, the lr schedule */
            zc_loss_scaler s = *zc_engine_loss_scaler(e);
            s.skipped = m.scaler.skipped;
            zc_engine_set_loss_scaler(e, &s);
        }
        if (client_json) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(m.root, "client");
            *client_json = c ? cJSON_PrintUnformatted(c) : NULL;
        }
    }
    zc_manifest_free(&m);
    return st;
}

/* "; its frozen base (N parameters) is not stored, recorded by digest D" for a LoRA run's
 * checkpoint; "" for any other. */
static void base_note(const zc_manifest *m, char *out, size_t cap)
{
    size_t absent = 0;
    for (int u = 0; u < m->nunits; u++)
        absent += m->stored[u] ? 0 : m->numel[u];
    out[0] = 0;
    if (m->has_base)
        pathf(out, cap,
              "; its frozen base (%zu parameters) is not stored, recorded by digest %016" PRIx64
              "%016" PRIx64,
              absent, m->base_digest[0], m->base_digest[1]);
}

zc_status zc_ckpt_verify(const char *ckdir, char **summary, zc_err *err)
{
    zc_manifest m;
    zc_status st = zc_manifest_read(ckdir, &m, err);
    int64_t total = 0;
    for (int r = 0; !st && r < m.world; r++) {
        st = check_file(ckdir, &m, r, err);
        total += (int64_t)zc_ckpt_file_bytes(m.stored, m.shard, m.nunits, r, m.K, m.q8);
    }
    if (!st && summary) {
        size_t psi = 0;
        for (int u = 0; u < m.nunits; u++)
            psi += m.numel[u];
        char note[160];
        base_note(&m, note, sizeof note);
        const size_t n = strlen(ckdir) + 800;
        char *s = malloc(n);
        if (s)
            pathf(s, n,
                  "%s: step %lld, written by %d ranks at ZeRO stage %d, %zu "
                  "parameters in %d units (%d tensors), optimizer %s, %lld bytes in %d "
                  "shards, every size and CRC32C correct, the manifest's SHA-256 and fields "
                  "too%s",
                  ckdir, (long long)m.step, m.world, m.stage, psi, m.nunits, m.nparams,
                  m.q8 ? "AdamW8bit (moments as 8-bit codes and scales)" : m.optim,
                  (long long)total, m.world, note);
        *summary = s;
    }
    zc_manifest_free(&m);
    return st;
}

zc_status zc_ckpt_inspect(const char *ckdir, char **summary, zc_err *err)
{
    zc_manifest m;
    zc_status st = zc_manifest_read(ckdir, &m, err);
    if (!st) {
        size_t psi = 0;
        int64_t total = 0;
        for (int u = 0; u < m.nunits; u++)
            psi += m.numel[u];
        for (int r = 0; r < m.world; r++)
            total += (int64_t)zc_ckpt_file_bytes(m.stored, m.shard, m.nunits, r, m.K, m.q8);
        char producer[ZC_PRODUCER_VERSION_MAX + 64];
        if (m.producer_version)
            pathf(producer, sizeof producer, "zeroc %s", m.producer_version);
        else /* format 2 recorded no version */
            pathf(producer, sizeof producer, "an earlier zeroc (which recorded no version)");
        char note[160];
        base_note(&m, note, sizeof note);
        const size_t n = strlen(ckdir) + sizeof producer + sizeof note + 512;
        char *s = malloc(n);
        if (s)
            pathf(s, n,
                  "%s: step %lld, written by %d ranks at ZeRO stage %d, %zu parameters "
                  "in %d units (%d tensors), optimizer %s, %lld bytes in %d shards; manifest "
                  "format %d, written by %s%s",
                  ckdir, (long long)m.step, m.world, m.stage, psi, m.nunits, m.nparams,
                  m.q8 ? "AdamW8bit (moments as 8-bit codes and scales)" : m.optim,
                  (long long)total, m.world, m.format, producer, note);
        *summary = s;
    }
    zc_manifest_free(&m);
    return st;
}

zc_status zc_ckpt_manifest_json(const char *ckdir, char **json, zc_err *err)
{
    if (!json)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_manifest_json: json is NULL");
    *json = NULL;
    if (!ckdir)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_manifest_json: ckdir is NULL");
    zc_manifest m;
    zc_status st = zc_manifest_read(ckdir, &m, err); /* on error, m is freed already */
    if (st)
        return st;
    if (!(*json = cJSON_PrintUnformatted(m.root)))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory reading %s/manifest.json", ckdir);
    zc_manifest_free(&m);
    return st;
}

/* ---------- reading parameters without an engine ---------- */

struct zc_ckpt_reader {
    char dir[4096];
    zc_manifest m;
    zc_ckpt_base_read base; /* the units not stored, checked against base_digest (or NULL) */
    void *base_ctx;
    zc_param_info *params;
    int *fds;
    char *checked;
};

void zc_ckpt_reader_close(zc_ckpt_reader *r)
{
    if (!r)
        return;
    for (int i = 0; r->checked && i < r->m.world; i++)
        if (r->checked[i])
            close(r->fds[i]);
    free(r->fds);
    free(r->checked);
    zc_manifest_free(&r->m);
    free(r);
}

zc_status zc_ckpt_reader_open(const char *ckdir, zc_ckpt_reader **out, zc_err *err)
{
    if (out)
        *out = NULL;
    if (!ckdir || !out)
        return zc_err_set(err, ZC_EINVAL, "zc_ckpt_reader_open: %s is NULL",
                          !ckdir ? "ckdir" : "out");
    zc_ckpt_reader *r = calloc(1, sizeof *r);
    if (!r)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    pathf(r->dir, sizeof r->dir, "%s", ckdir);
    zc_status st = zc_manifest_read(ckdir, &r->m, err);
    zc_manifest *m = &r->m;
    if (!st) {
        r->params = m->params; /* validated by zc_manifest_read */
        r->fds = calloc((size_t)m->world + 1, sizeof(int));
        r->checked = calloc((size_t)m->world + 1, 1);
        if (!r->fds || !r->checked)
            st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    }
    if (st) {
        zc_ckpt_reader_close(r);
        return st;
    }
    *out = r;
    return ZC_OK;
}

int zc_ckpt_reader_num_params(const zc_ckpt_reader *r)
{
    return r->m.nparams;
}

int zc_ckpt_reader_client_int(const zc_ckpt_reader *r, const char *key, int64_t *out)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(r->m.root, "client");
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, key);
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!(fabs(v) <= 9007199254740992.0 && v == floor(v))) /* ±2^53: exact in a double */
        return -1;
    *out = (int64_t)v;
    return 0;
}
int zc_ckpt_reader_client_number(const zc_ckpt_reader *r, const char *key, double *out)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(r->m.root, "client");
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
        return -1;
    *out = it->valuedouble;
    return 0;
}

int zc_ckpt_reader_client_string(const zc_ckpt_reader *r, const char *key, char *out, size_t cap)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(r->m.root, "client");
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!cJSON_IsString(it) || strlen(it->valuestring) >= cap)
        return -1;
    memcpy(out, it->valuestring, strlen(it->valuestring) + 1);
    return 0;
}

const zc_param_info *zc_ckpt_reader_param(const zc_ckpt_reader *r, int p)
{
    ZC_ASSERT(p >= 0 && p < r->m.nparams);
    return &r->params[p];
}

zc_status zc_ckpt_reader_read(zc_ckpt_reader *r, int p, size_t first, size_t n, float *dst,
                              zc_err *err)
{
    const zc_param_info *pi = zc_ckpt_reader_param(r, p);
    ZC_ASSERT(first + n <= pi->numel);
    if (!r->m.stored[pi->unit] && r->base)
        return r->base(r->base_ctx, p, first, n, dst, err);
    if (!r->m.stored[pi->unit])
        return zc_err_set(err, ZC_EINVAL,
                          "%s: '%s' is not in the checkpoint: it is part of the frozen base of a "
                          "LoRA run, which the checkpoint records by digest only (give the base "
                          "model it was trained on, or export the adapters alone)",
                          r->dir, pi->name);
    return read_range(r->dir, &r->m, r->fds, r->checked, pi->unit, 0, pi->offset + first, n, dst,
                      err);
}

int zc_ckpt_reader_base_params(const zc_ckpt_reader *r)
{
    int n = 0;
    for (int p = 0; p < r->m.nparams; p++)
        n += !r->m.stored[r->params[p].unit];
    return n;
}

zc_status zc_ckpt_reader_set_base(zc_ckpt_reader *r, zc_ckpt_base_read read, void *ctx,
                                  const char *what, zc_err *err)
{
    enum { CHUNK = 1 << 20 };
    const zc_manifest *m = &r->m;
    uint64_t d[2] = {0, 0};
    float *buf = malloc(CHUNK * sizeof(float));
    uint16_t *b16 = malloc(CHUNK * sizeof(uint16_t));
    zc_status st = buf && b16 ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    const cJSON *units = cJSON_GetObjectItemCaseSensitive(m->root, "units");
    size_t absent = 0;
    for (int p = 0; !st && p < m->nparams; p++) {
        const zc_param_info *pi = &r->params[p];
        if (m->stored[pi->unit])
            continue;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(units, pi->unit), "name"); /* checked by zc_manifest_read */
        const uint64_t key = zc_digest_unit_key(name->valuestring);
        for (size_t at = 0; !st && at < pi->numel; at += CHUNK) {
            size_t k = pi->numel - at < CHUNK ? pi->numel - at : CHUNK;
            if (!(st = read(ctx, p, at, k, buf, err))) {
                zc_f32_to_bf16(buf, b16, k);
                zc_digest_add(key, pi->offset + at, b16, k, d);
            }
        }
        absent += pi->numel;
    }
    free(buf);
    free(b16);
    if (!st && (d[0] != m->base_digest[0] || d[1] != m->base_digest[1]))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: its frozen base (%zu parameters, not stored) has digest %016" PRIx64
                        "%016" PRIx64 "; %s gives %016" PRIx64 "%016" PRIx64
                        ": another base than the one it was trained on",
                        r->dir, absent, m->base_digest[0], m->base_digest[1], what, d[0], d[1]);
    if (!st)
        r->base = read, r->base_ctx = ctx;
    return st;
}

/* round to nearest even, NaN kept quiet */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

zc_status zc_ckpt_export_safetensors(const char *ckdir, const char *out, bool bf16, zc_err *err)
{
    zc_ckpt_reader *r;
    zc_status st = zc_ckpt_reader_open(ckdir, &r, err);
    if (st)
        return st;
    const int np = r->m.nparams;
    size_t hlen = 0;
    char *header = zc_safetensors_header(r->params, np, bf16 ? 2 : 4, &hlen);
    if (!header)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    zc_durable *f = NULL;
    if (!st)
        st = zc_durable_open(&f, out, err);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    if (!st && !(st = zc_durable_write(f, le, 8, err)))
        st = zc_durable_write(f, header, hlen, err);
    /* tensor by tensor, in chunks: memory stays at one chunk, whatever the model's size */
    enum { CHUNK = 1 << 22 };
    float *buf = malloc((size_t)CHUNK * sizeof(float));
    if (!st && !buf)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int p = 0; !st && p < np; p++)
        for (size_t at = 0; !st && at < r->params[p].numel; at += CHUNK) {
            size_t k = r->params[p].numel - at < CHUNK ? r->params[p].numel - at : CHUNK;
            if ((st = zc_ckpt_reader_read(r, p, at, k, buf, err)))
                break;
            if (bf16) {
                uint16_t *h = (uint16_t *)buf; /* in place: element i only reads i ≥ written */
                for (size_t i = 0; i < k; i++)
                    h[i] = to_bf16(buf[i]);
            }
            st = zc_durable_write(f, buf, k * (bf16 ? 2 : 4), err);
        }
    if (f && st)
        zc_durable_abort(f);
    else if (f)
        st = zc_durable_commit(f, err);
    free(buf);
    free(header);
    zc_ckpt_reader_close(r);
    return st;
}

/* train_agree.c — the ranks of a job are given the same trainer flags, --init and --resume (see
 * train_agree.h).
 *
 * Why it is shaped this way:
 * - The config (lr, seed, stage, dtype, …) is compared by the engine; the trainer's own flags
 *   were not, so an MPMD launch (`mpirun -np 1 zeroc train A : -np 1 zeroc train B`) or a
 *   per-host wrapper script with --warmup on one rank only trained each shard under its own
 *   schedule and exited 0 with weights of neither run; others (--steps, --save-every) failed
 *   after training with MPI_ERR_TRUNCATE. Each flag's value is hashed (FNV-1a), the hashes are
 *   gathered, and each rank compares its own with rank 0's: the rank that differs names the
 *   flag and its value.
 * - Paths that only rank 0 uses (--report, --save-weights, --save-final) are compared by
 *   whether they are given; paths every rank uses (--save-dir) by their text; --config by
 *   nothing here (its keys are the engine's). --init is compared by content, but not all of it:
 *   at stage 3 each rank reads only its shard, and reading the whole file on every rank would
 *   multiply a large model's load by the ranks; its size, its first 64 KiB (a safetensors or
 *   llm.c header) and 256 blocks of 4 KiB spread over it tell two trainings apart. --resume is
 *   compared by the SHA-256 of the manifest it resolves to, which records every shard's CRC. */
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/train_agree.h"
#include "zeroc/checkpoint.h"
#include "zeroc/durable.h"

enum { HEAD = 64 << 10, BLOCK = 4096, BLOCKS = 256 };

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static const uint64_t FNV0 = 0xcbf29ce484222325ULL;

/* Size, header and BLOCKS blocks of one file, added to h; a file that cannot be opened as a
 * regular file adds a fixed mark (the load names it later). */
static uint64_t sample_file(uint64_t h, const char *path)
{
    int fd = -1;
    int64_t size = 0;
    zc_err e = {0};
    if (zc_open_regular(path, &fd, &size, &e)) /* not a FIFO's wait: the load names it */
        return fnv(h, "unreadable", 10);
    char *buf = malloc(HEAD);
    h = fnv(h, &size, sizeof size);
    if (buf) {
        ssize_t n = pread(fd, buf, HEAD, 0);
        h = fnv(h, buf, n > 0 ? (size_t)n : 0);
        for (int64_t i = 0; size > BLOCK && i < BLOCKS; i++) {
            n = pread(fd, buf, BLOCK, (size - BLOCK) / (BLOCKS - 1) * i);
            h = fnv(h, buf, n > 0 ? (size_t)n : 0);
        }
    }
    free(buf);
    close(fd);
    return h;
}

/* --init: a file, or a Hugging Face directory (its model.safetensors and config.json). */
static uint64_t init_digest(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode))
        return sample_file(FNV0, path);
    char p[4200];
    snprintf(p, sizeof p, "%s/model.safetensors", path);
    uint64_t h = sample_file(FNV0, p);
    snprintf(p, sizeof p, "%s/config.json", path);
    return sample_file(h, p);
}

/* --resume: the checkpoint it resolves to, by its manifest's SHA-256 — the 64 hex digits,
 * case-folded, whatever else the line holds (sha256sum's forms are all accepted). */
static uint64_t resume_digest(const char *path)
{
    char dir[4096], p[4200], sha[64] = "";
    zc_err e = {0};
    if (zc_ckpt_resolve(path, dir, sizeof dir, &e))
        return fnv(FNV0, "unresolved", 10); /* the resume names why, on every rank */
    snprintf(p, sizeof p, "%s/manifest.sha256", dir);
    FILE *f = zc_fopen_regular(p, NULL); /* a FIFO would block; the load names it */
    size_t n = f ? fread(sha, 1, sizeof sha, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i < n; i++)
        sha[i] = (char)tolower((unsigned char)sha[i]);
    return fnv(FNV0, sha, n);
}

typedef struct {
    const char *flag;
    char value[4200]; /* as the message shows it */
    uint64_t hash;
} field;

static void set(field *f, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set(field *f, const char *flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->value, sizeof f->value, fmt, ap);
    va_end(ap);
    f->flag = flag;
    f->hash = fnv(FNV0, f->value, strlen(f->value));
}

static const char *given(const char *s)
{
    return s ? "given" : "not given";
}

static const char *text(const char *s)
{
    return s ? s : "(not given)";
}

/* A flag shown by its text and compared by digest(value) when given. */
static void by_content(field *f, const char *flag, const char *value,
                       uint64_t (*digest)(const char *))
{
    set(f, flag, "%s", text(value));
    if (value)
        f->hash = digest(value);
}

static int fields_of(const train_opts *o, field *f)
{
    int n = 0;
    set(&f[n++], "--model", "%s", text(o->model));
    set(&f[n++], "--steps", "%d", o->steps);
    set(&f[n++], "--hidden", "%d", o->hidden);
    set(&f[n++], "--layers", "%d", o->layers);
    set(&f[n++], "--channels", "%d", o->channels);
    set(&f[n++], "--heads", "%d", o->heads);
    set(&f[n++], "--seq-len", "%d", o->seq_len);
    set(&f[n++], "--vocab", "%d", o->vocab);
    set(&f[n++], "--max-seq-len", "%d", o->max_seq_len);
    set(&f[n++], "the GPT-2 shape flags", "%s%s%s%s%s given", o->given.layers ? "--layers " : "",
        o->given.channels ? "--channels " : "", o->given.heads ? "--heads " : "",
        o->given.vocab ? "--vocab " : "", o->given.max_seq_len ? "--max-seq-len " : "");
    set(&f[n++], "--dtype", "%s", text(o->dtype));
    /* --data's contents, and --shuffle: train_model_agree_data, which names the data */
    set(&f[n++], "--data", "%s", given(o->data));
    set(&f[n++], "--val-data", "%s", given(o->val_data));
    set(&f[n++], "--report", "%s", given(o->report));
    set(&f[n++], "--save-weights", "%s", given(o->save_weights));
    set(&f[n++], "--save-final", "%s", given(o->save_final));
    set(&f[n++], "--save-dir", "%s", text(o->save_dir));
    set(&f[n++], "--save-every", "%d", o->save_every);
    set(&f[n++], "--keep", "%d", o->keep);
    set(&f[n++], "--lr-schedule", "%s", text(o->lr_schedule));
    set(&f[n++], "--warmup", "%d", o->warmup);
    set(&f[n++], "--val-every", "%d", o->val_every);
    set(&f[n++], "--val-windows", "%d", o->val_windows);
    set(&f[n++], "--sample-every", "%d", o->sample_every);
    set(&f[n++], "--sample-length", "%d", o->sample_length);
    set(&f[n++], "--activation-checkpointing", "%s", o->activation_checkpointing ? "on" : "off");
    set(&f[n++], "--tile-params", "%lld", (long long)o->tile_params);
    by_content(&f[n++], "--lora-init", o->lora_init, init_digest);
    set(&f[n++], "--no-memory-check", "%s", o->no_memory_check ? "on" : "off");
    /* by content: the same file may lie at another path on another host */
    by_content(&f[n++], "--init", o->init, init_digest);
    by_content(&f[n++], "--resume", o->resume, resume_digest);
    return n;
}

enum { NFIELDS = 33 };

zc_status train_agree_opts(zc_comm *comm, const train_opts *o, zc_err *err)
{
    const int rank = zc_comm_rank(comm), nranks = zc_comm_size(comm);
    if (nranks == 1)
        return ZC_OK;
    field *f = calloc(NFIELDS, sizeof *f);
    uint64_t *all = malloc(sizeof(uint64_t) * NFIELDS * (size_t)nranks);
    if (!f || !all) { /* a few KB at start: the other ranks then meet a failed gather */
        free(f);
        free(all);
        return zc_err_set(err, ZC_ENOMEM, "out of memory comparing the ranks' flags");
    }
    uint64_t mine[NFIELDS] = {0};
    const int n = fields_of(o, f);
    ZC_ASSERT(n <= NFIELDS);
    for (int k = 0; k < n; k++)
        mine[k] = f[k].hash;
    zc_status st = zc_comm_control_gather(comm, mine, all, sizeof mine, "the ranks' flags", err);
    for (int k = 0; !st && k < n; k++) {
        if (all[k] == mine[k])
            continue;
        if (!strcmp(f[k].flag, "--init") || !strcmp(f[k].flag, "--resume"))
            st = zc_err_set(err, ZC_EINVAL,
                            "rank %d's %s %s %s than rank 0's: every rank of a job must start "
                            "from the same %s",
                            rank, f[k].flag, f[k].value,
                            f[k].flag[2] == 'i' ? "is another file (by content)"
                                                : "resolves to another checkpoint (another copy, "
                                                  "or a save in between)",
                            f[k].flag[2] == 'i' ? "weights" : "checkpoint");
        else
            st = zc_err_set(err, ZC_EINVAL,
                            "rank %d was given %s %s, rank 0 another value: every rank of a job "
                            "must be given the same flags",
                            rank, f[k].flag, f[k].value);
    }
    free(f);
    free(all);
    return zc_comm_agree(comm, st, "comparing the ranks' flags", err);
}

/* prepare.c — `zeroc prepare`: turns text files into llm.c token files for GPT-2 training.
 *
 *     zeroc prepare --text a.txt b.txt --out data/tiny [--val-fraction 0.1]
 *
 * The files' bytes are concatenated (a newline between consecutive files) and tokenized at the
 * byte level: token = byte value, vocabulary 256. The last val-fraction of the tokens goes to
 * PREFIX_val.bin, the rest to PREFIX_train.bin, both in llm.c's token format
 * (models/gpt2/llmc_files.h), each written to a temporary file and renamed into place. Only rank
 * 0 works; every rank parses the flags, so a flag error is reported once and all ranks stop. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "models/gpt2/llmc_files.h"

#define SYNOPSIS "zeroc prepare --text FILE... --out PREFIX [--val-fraction F]"

typedef struct {
    uint16_t *tok;
    size_t n, cap;
} tok_vec;

static zc_status tok_reserve(tok_vec *v, size_t more, zc_err *err)
{
    if (more <= v->cap - v->n)
        return ZC_OK;
    size_t cap = v->cap ? v->cap : (size_t)1 << 20;
    while (cap - v->n < more) {
        if (cap > SIZE_MAX / 2 / sizeof *v->tok)
            return zc_err_set(err, ZC_ENOMEM, "out of memory after %zu bytes of text", v->n);
        cap *= 2;
    }
    uint16_t *t = realloc(v->tok, cap * sizeof *t);
    if (!t)
        return zc_err_set(err, ZC_ENOMEM, "out of memory after %zu bytes of text", v->n);
    v->tok = t;
    v->cap = cap;
    return ZC_OK;
}

/* Appends the bytes of `path` as tokens; *bytes += the file's size. */
static zc_status append_file(tok_vec *v, const char *path, size_t *bytes, zc_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return zc_err_set(err, ZC_EIO, "--text %s: cannot open: %s", path, strerror(errno));
    static unsigned char buf[1 << 16];
    zc_status st = ZC_OK;
    size_t got;
    while (!st && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        st = tok_reserve(v, got, err);
        for (size_t i = 0; i < got && !st; i++)
            v->tok[v->n++] = buf[i];
        *bytes += got;
    }
    if (!st && ferror(f))
        st = zc_err_set(err, ZC_EIO, "--text %s: read error: %s", path, strerror(errno));
    fclose(f);
    return st;
}

/* Takes the --text occurrences out of argv[2..argc): "--text F1 F2 ..." takes every following
 * argument up to the next one starting with "--"; "--text=F" takes one. The other arguments go
 * to rest (for args_parse), the files to files. */
static zc_status split_text_args(int argc, char **argv, const char **files, int *nfiles,
                                 char **rest, int *nrest, zc_err *err)
{
    *nfiles = *nrest = 0;
    for (int i = 2; i < argc; i++) {
        if (!strncmp(argv[i], "--text=", 7)) {
            if (!argv[i][7])
                return zc_err_set(err, ZC_EINVAL, "--text= needs a file name");
            files[(*nfiles)++] = argv[i] + 7;
        } else if (!strcmp(argv[i], "--text")) {
            int before = *nfiles;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                files[(*nfiles)++] = argv[++i];
            if (*nfiles == before)
                return zc_err_set(err, ZC_EINVAL, "--text needs at least one file");
        } else {
            rest[(*nrest)++] = argv[i];
        }
    }
    return ZC_OK;
}

static zc_status prepare(const char **files, int nfiles, const char *prefix, double frac,
                         zc_err *err)
{
    char train_path[4096], val_path[4096];
    if (snprintf(train_path, sizeof train_path, "%s_train.bin", prefix) >=
            (int)sizeof train_path ||
        snprintf(val_path, sizeof val_path, "%s_val.bin", prefix) >= (int)sizeof val_path)
        return zc_err_set(err, ZC_EINVAL, "--out: prefix too long");

    tok_vec v = {0};
    size_t bytes = 0;
    zc_status st = ZC_OK;
    for (int i = 0; i < nfiles && !st; i++) {
        if (i > 0 && !(st = tok_reserve(&v, 1, err)))
            v.tok[v.n++] = '\n';
        if (!st)
            st = append_file(&v, files[i], &bytes, err);
    }
    if (!st && bytes == 0)
        st = zc_err_set(err, ZC_EINVAL, "empty input: the --text file%s contain%s no bytes",
                        nfiles > 1 ? "s" : "", nfiles > 1 ? "" : "s");
    size_t nval = 0, ntrain = 0;
    if (!st) {
        nval = (size_t)floor(frac * (double)v.n + 0.5);
        ntrain = v.n - (nval < v.n ? nval : v.n);
        if (nval < 1 || ntrain < 1)
            st = zc_err_set(err, ZC_EINVAL,
                            "--val-fraction %g of %zu tokens leaves the %s split empty (each "
                            "split needs at least 1 token: give more text or change the "
                            "fraction)",
                            frac, v.n, nval < 1 ? "validation" : "training");
    }
    if (!st)
        st = llmc_tokens_write(train_path, v.tok, ntrain, err);
    if (!st)
        st = llmc_tokens_write(val_path, v.tok + ntrain, nval, err);
    if (!st)
        printf("prepared %d file%s, %zu bytes: %s %zu tokens, %s %zu tokens (byte-level, "
               "vocabulary 256)\n",
               nfiles, nfiles > 1 ? "s" : "", bytes, train_path, ntrain, val_path, nval);
    free(v.tok);
    return st;
}

int cmd_prepare(zc_comm *comm, int argc, char **argv)
{
    const int rank = zc_comm_rank(comm);
    const char *out = NULL, *text_unused = NULL;
    double frac = 0.1;
    bool help = false;
    arg_spec specs[] = {
        {"--text", ARG_STR, &text_unused, NULL, "input text file(s), see below", NULL},
        {"--out", ARG_STR, &out, NULL, "output prefix: writes PREFIX_train.bin and PREFIX_val.bin",
         NULL},
        {"--val-fraction", ARG_DOUBLE, &frac, NULL,
         "fraction of the tokens, from the end, that go to PREFIX_val.bin (default 0.1)", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    const char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    char **rest = calloc((size_t)(argc > 0 ? argc : 1), sizeof *rest);
    int nfiles = 0, nrest = 0;
    zc_status st = files && rest ? ZC_OK : zc_err_set(&err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = split_text_args(argc, argv, files, &nfiles, rest, &nrest, &err);
    for (int i = 0; !st && i < nrest; i++) /* args_usage lists --help itself */
        help = help || !strcmp(rest[i], "--help") || !strcmp(rest[i], "-h");
    if (!st && !help)
        st = args_parse(specs, nspecs, nrest, rest, 0, &err);
    if (!st && help) {
        if (rank == 0) {
            args_usage(SYNOPSIS, specs, nspecs);
            printf("\n--text takes every following argument up to the next --flag "
                   "(--text a.txt b.txt), and may be\ngiven several times; --text=FILE takes one "
                   "file. The files' bytes are joined with a newline\nbetween files and "
                   "tokenized byte-level (token = byte value, vocabulary 256); the outputs are\n"
                   "llm.c token files (magic 20240520, version 1, uint16 tokens).\n");
        }
        free(files);
        free(rest);
        return 0;
    }
    if (!st && nfiles == 0)
        st = zc_err_set(&err, ZC_EINVAL, "--text: give at least one input file (see --help)");
    if (!st && !out)
        st = zc_err_set(&err, ZC_EINVAL, "--out PREFIX is required (see --help)");
    if (!st && !out[0])
        st = zc_err_set(&err, ZC_EINVAL, "--out: the prefix is empty");
    if (!st && !(frac > 0.0 && frac < 1.0))
        st = zc_err_set(&err, ZC_EINVAL, "--val-fraction must be between 0 and 1 (exclusive), "
                                         "got %g", frac);
    if (!st && rank == 0)
        st = prepare(files, nfiles, out, frac, &err);
    free(files);
    free(rest);
    if (st)
        return cli_fail(comm, &err, true);
    return 0;
}

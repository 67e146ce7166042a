/* prepare.c — `zeroc prepare`: turns text files into llm.c token files for GPT-2 training.
 *
 *     zeroc prepare --text a.txt b.txt --out data/tiny [--val-fraction 0.1]
 *     zeroc prepare --tokenizer gpt2 --vocab DIR --text a.txt b.txt --out data/tiny [--threads N]
 *     zeroc prepare --tokenizer Llama-3.2-1B/ --text a.txt b.txt --out data/tiny [--threads N]
 *
 * Byte-level (the default): the files' bytes are concatenated (a newline between consecutive
 * files), token = byte value, vocabulary 256. GPT-2: each file is a document, encoded with
 * GPT-2's BPE (models/gpt2/bpe_encode.h) on --threads threads, with <|endoftext|> before each
 * document as llm.c's data scripts do. --tokenizer DIR: the same with a Hugging Face
 * tokenizer.json (models/gpt2/hf_tokenizer.h), its BOS before and/or EOS after each document as
 * its tokenizer_config.json says; a vocabulary past 65,536 tokens writes uint32 token files.
 * The last val-fraction of the tokens goes to PREFIX_val.bin, the rest to PREFIX_train.bin, both
 * in llm.c's token format
 * (models/gpt2/llmc_files.h), each written to a temporary file and renamed into place. A --text
 * directory stands for its regular files, recursively, sorted by path, hidden ones skipped.
 * Input and output are held in memory. A split of more than a token file's int32 count is
 * refused, saying to prepare the corpus in parts and train on a glob of them; byte-level
 * refuses it from the files' sizes, before reading anything, and a stream (a pipe, a device)
 * as it is read, once it passes the limit. A buffer never grows past what the host (or the
 * memory cgroup) can still give (memory_check_grow): an endless input ends with an error.
 *
 * --jsonl FILE...: instruction data (prepare_jsonl.c): each line one example, rendered with the
 * chat template of the --tokenizer DIR's family, with a loss mask beside each token file.
 *
 * One process does it all, without MPI (main() runs it before MPI starts: a singleton MPI_Init
 * forks a helper whose argument list, thousands of file names, the kernel refused). Started by
 * mpirun on several ranks, only the launcher's rank 0 prepares; the others say so and exit 0, so
 * no two processes write the same files. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/bpe_text.h"
#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/memory_check.h"
#include "cli/output_paths.h"
#include "cli/relaunch.h"
#include "models/gpt2/hf_tokenizer.h"
#include "models/gpt2/llmc_files.h"
#include "models/gpt2/tokenizer_files.h"

#define SYNOPSIS                                                                                   \
    "zeroc prepare --text FILE|DIR... --out PREFIX [--val-fraction F] [--tokenizer gpt2 --vocab "  \
    "DIR | --tokenizer DIR]\n       zeroc prepare --jsonl FILE... --tokenizer DIR --out PREFIX "   \
    "[--chat-format llama3|llama3.1|chatml] [--chat-date D] [--val-fraction F]"

typedef struct {
    uint16_t *tok;
    size_t n, cap;
} tok_vec;

/* Room for `more` tokens; path: the file being read (for the memory check's message, which
 * refuses a growth the host cannot give: an endless stream ends with an error). */
static zc_status tok_reserve(tok_vec *v, size_t more, const char *path, zc_err *err)
{
    if (more <= v->cap - v->n)
        return ZC_OK;
    size_t cap = v->cap ? v->cap : (size_t)1 << 20;
    while (cap - v->n < more) {
        if (cap > SIZE_MAX / 2 / sizeof *v->tok)
            return zc_err_set(err, ZC_ENOMEM, "out of memory after %zu bytes of text", v->n);
        cap *= 2;
    }
    zc_status st = memory_check_grow("--text", path, v->n, (cap - v->cap) * sizeof *v->tok, err);
    if (st)
        return st;
    uint16_t *t = realloc(v->tok, cap * sizeof *t);
    if (!t)
        return zc_err_set(err, ZC_ENOMEM, "out of memory after %zu bytes of text", v->n);
    v->tok = t;
    v->cap = cap;
    return ZC_OK;
}

static void split_sizes(uint64_t n, double frac, uint64_t *ntrain, uint64_t *nval);
static zc_status too_many_tokens(const char *what, uint64_t ntrain, uint64_t nval, zc_err *err);

/* Appends the bytes of `path` as tokens; *bytes += the file's size. Counted as they are read:
 * once the tokens so far split (by frac) into more than a token file holds — a stream, whose
 * size no stat gave — it is refused as a regular file that large is, and reading stops. */
static zc_status append_file(tok_vec *v, const char *path, double frac, size_t *bytes, zc_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return zc_err_set(err, ZC_EIO, "--text %s: cannot open: %s", path, strerror(errno));
    static unsigned char buf[1 << 16];
    zc_status st = ZC_OK;
    size_t got;
    while (!st && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        uint64_t ntrain, nval;
        split_sizes((uint64_t)v->n + got, frac, &ntrain, &nval);
        if (ntrain > INT32_MAX || nval > INT32_MAX) {
            char what[4300];
            snprintf(what, sizeof what,
                     "--text %s: more than %llu bytes read so far (byte-level: one token a byte)",
                     path, (unsigned long long)(*bytes + got));
            st = too_many_tokens(what, ntrain, nval, err);
            break;
        }
        st = tok_reserve(v, got, path, err);
        for (size_t i = 0; i < got && !st; i++)
            v->tok[v->n++] = buf[i];
        *bytes += got;
    }
    if (!st && ferror(f))
        st = zc_err_set(err, ZC_EIO, "--text %s: read error: %s", path, strerror(errno));
    fclose(f);
    return st;
}

/* The sizes of the two splits of n tokens: the last val-fraction (rounded) is validation. */
static void split_sizes(uint64_t n, double frac, uint64_t *ntrain, uint64_t *nval)
{
    *nval = (uint64_t)floor(frac * (double)n + 0.5);
    *ntrain = n - (*nval < n ? *nval : n);
}

/* The refusal of a split larger than a token file's int32 count, with the way out. `what`
 * says where the count comes from. */
static zc_status too_many_tokens(const char *what, uint64_t ntrain, uint64_t nval, zc_err *err)
{
    return zc_err_set(err, ZC_EINVAL,
                      "%s: %llu training and %llu validation tokens; a split of more than an "
                      "llm.c token file's int32 count (%d) cannot be written: prepare the corpus "
                      "in parts of fewer tokens each (several runs, each with part of the --text "
                      "files and its own --out prefix, e.g. data/part01, data/part02, ...), then "
                      "train on them as one stream with a glob (--data 'data/part*_train.bin')",
                      what, (unsigned long long)ntrain, (unsigned long long)nval, INT32_MAX);
}

/* Byte-level: one token per byte and one per newline between files, so regular files' sizes
 * give the split sizes before anything is read: a corpus too large is refused at once. Files
 * that are not regular (a pipe) or cannot be stat'ed are left to the read. */
static zc_status check_byte_sizes(const char **files, int nfiles, double frac, zc_err *err)
{
    uint64_t n = (uint64_t)nfiles - 1;
    for (int i = 0; i < nfiles; i++) {
        struct stat sb;
        if (stat(files[i], &sb) || !S_ISREG(sb.st_mode))
            return ZC_OK;
        n += (uint64_t)sb.st_size;
    }
    uint64_t ntrain, nval;
    split_sizes(n, frac, &ntrain, &nval);
    if (ntrain <= INT32_MAX && nval <= INT32_MAX)
        return ZC_OK;
    char what[160];
    snprintf(what, sizeof what, "--text: %d file%s of %llu bytes (byte-level: one token a byte)",
             nfiles, nfiles > 1 ? "s" : "", (unsigned long long)(n - ((uint64_t)nfiles - 1)));
    return too_many_tokens(what, ntrain, nval, err);
}

/* Splits tok[0..n) (uint16_t or uint32_t as width is 2 or 4, llmc_tokens_write) into the last
 * val-fraction (validation) and the rest (training) and writes both files; *ntrain and *nval
 * get the counts. */
static zc_status write_split(const void *tok, int width, size_t n, double frac, size_t *ntrain,
                             size_t *nval, const char *train_path, const char *val_path,
                             zc_err *err)
{
    uint64_t nt, nv;
    split_sizes(n, frac, &nt, &nv);
    *ntrain = (size_t)nt;
    *nval = (size_t)nv;
    if (nt > INT32_MAX || nv > INT32_MAX) {
        char what[64];
        snprintf(what, sizeof what, "--text: %zu tokens", n);
        return too_many_tokens(what, nt, nv, err);
    }
    if (*nval < 1 || *ntrain < 1)
        return zc_err_set(
            err, ZC_EINVAL,
            "--val-fraction %.10g of %zu tokens leaves the %s split empty (each split "
            "needs at least 1 token: give more text or change the fraction)",
            frac, n, *nval < 1 ? "validation" : "training");
    zc_status st = llmc_tokens_write(train_path, tok, width, *ntrain, err);
    if (!st)
        st = llmc_tokens_write(val_path, (const char *)tok + *ntrain * (size_t)width, width, *nval,
                               err);
    return st;
}

/* The error for --text files that hold no bytes at all, naming them. */
static zc_status empty_input(const char **files, int nfiles, zc_err *err)
{
    if (nfiles == 1)
        return zc_err_set(err, ZC_EINVAL, "--text %s: the file is empty; nothing to prepare",
                          files[0]);
    return zc_err_set(err, ZC_EINVAL,
                      "--text %s ... %s: all %d files are empty; nothing to prepare", files[0],
                      files[nfiles - 1], nfiles);
}

static zc_status prepare(const char **files, int nfiles, const char *prefix, double frac,
                         zc_err *err)
{
    char train_path[4096], val_path[4096];
    if (snprintf(train_path, sizeof train_path, "%s_train.bin", prefix) >= (int)sizeof train_path ||
        snprintf(val_path, sizeof val_path, "%s_val.bin", prefix) >= (int)sizeof val_path)
        return zc_err_set(err, ZC_EINVAL, "--out: prefix too long");

    tok_vec v = {0};
    size_t bytes = 0;
    zc_status st = check_byte_sizes(files, nfiles, frac, err);
    for (int i = 0; i < nfiles && !st; i++) {
        if (i > 0 && !(st = tok_reserve(&v, 1, files[i], err)))
            v.tok[v.n++] = '\n';
        if (!st)
            st = append_file(&v, files[i], frac, &bytes, err);
    }
    if (!st && bytes == 0)
        st = empty_input(files, nfiles, err);
    size_t nval = 0, ntrain = 0;
    if (!st)
        st = write_split(v.tok, 2, v.n, frac, &ntrain, &nval, train_path, val_path, err);
    if (!st)
        printf("prepared %d file%s, %zu bytes: %s %zu tokens, %s %zu tokens (byte-level, "
               "vocabulary 256)\n",
               nfiles, nfiles > 1 ? "s" : "", bytes, train_path, ntrain, val_path, nval);
    free(v.tok);
    return st;
}

/* The name of token id for messages: its text when short and printable, else "token ID". */
static const char *token_name(const bpe_vocab *v, int id, char buf[80])
{
    size_t len;
    const uint8_t *t = bpe_vocab_token(v, id, &len);
    bool ok = len > 0 && len < 48;
    for (size_t i = 0; ok && i < len; i++)
        ok = t[i] >= 0x20 && t[i] < 0x7F;
    if (ok)
        snprintf(buf, 80, "%.*s = %d", (int)len, (const char *)t, id);
    else
        snprintf(buf, 80, "token %d", id);
    return buf;
}

/* Puts `after` behind each document: ids becomes the documents of doc_start[0..ndocs] each
 * followed by it. */
static zc_status append_after_each(bpe_ids *ids, const size_t *doc_start, size_t ndocs,
                                   uint32_t after, zc_err *err)
{
    bpe_ids out = {0};
    zc_status st = bpe_ids_reserve(&out, ids->n + ndocs, err);
    for (size_t d = 0; !st && d < ndocs; d++) {
        size_t n = doc_start[d + 1] - doc_start[d];
        memcpy(out.id + out.n, ids->id + doc_start[d], n * sizeof *out.id);
        out.n += n;
        out.id[out.n++] = after;
    }
    if (st)
        return st;
    bpe_ids_free(ids);
    *ids = out;
    return ZC_OK;
}

/* BPE: each file one document. GPT-2's files (hf = false): <|endoftext|> before each, as llm.c's
 * data scripts do. A tokenizer.json: BOS before and/or EOS after each, as its
 * tokenizer_config.json says (hf_tokenizer.h). */
static zc_status prepare_bpe(const char **files, int nfiles, const char *prefix, double frac,
                             const char *vocab_dir, bool hf, int threads, zc_err *err)
{
    char train_path[4096], val_path[4096];
    if (snprintf(train_path, sizeof train_path, "%s_train.bin", prefix) >= (int)sizeof train_path ||
        snprintf(val_path, sizeof val_path, "%s_val.bin", prefix) >= (int)sizeof val_path)
        return zc_err_set(err, ZC_EINVAL, "--out: prefix too long");
    bpe_vocab vocab;
    char json[4200];
    snprintf(json, sizeof json, "%s/tokenizer.json", vocab_dir);
    struct stat sb;
    if (hf && stat(json, &sb) != 0)
        return zc_err_set(err, ZC_EINVAL,
                          "--tokenizer %s: no tokenizer.json in this directory (a Hugging Face "
                          "tokenizer directory holds tokenizer.json and tokenizer_config.json)",
                          vocab_dir);
    zc_status st = hf ? cli_err_flag(hf_tokenizer_load(&vocab, json, err), "--tokenizer", err)
                      : tokenizer_files_load(&vocab, vocab_dir, true, err);
    if (st)
        return st;
    int before = hf ? (vocab.hf.add_bos ? vocab.hf.bos : -1) : vocab.eot;
    int after = hf && vocab.hf.add_eos ? vocab.hf.eos : -1;
    if (!hf && vocab.eot < 0)
        st = zc_err_set(err, ZC_EINVAL,
                        "--vocab %s: the vocabulary has no <|endoftext|> token "
                        "to put between documents",
                        vocab.source);
    else if (hf && before < 0 && after < 0)
        st = zc_err_set(err, ZC_EINVAL,
                        "--tokenizer %s: no token to mark documents with: its "
                        "tokenizer_config.json (beside tokenizer.json) must set bos_token or "
                        "eos_token",
                        vocab_dir);
    uint8_t **bufs = calloc((size_t)nfiles, sizeof *bufs);
    bpe_doc *docs = calloc((size_t)nfiles, sizeof *docs);
    size_t *start = calloc((size_t)nfiles + 1, sizeof *start);
    if (!st && (!bufs || !docs || !start))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    size_t bytes = 0;
    for (int i = 0; !st && i < nfiles; i++) {
        st = bpe_text_read("--text", files[i], &bufs[i], &docs[i].n, err);
        docs[i].text = bufs[i];
        bytes += docs[i].n;
    }
    if (!st && bytes == 0)
        st = empty_input(files, nfiles, err);
    bpe_ids ids = {0};
    double secs = 0;
    int nthreads = bpe_text_threads(threads);
    if (!st)
        st = bpe_text_encode(&vocab, docs, (size_t)nfiles, nthreads, before, &ids, start, &secs,
                             err);
    if (!st && after >= 0)
        st = append_after_each(&ids, start, (size_t)nfiles, (uint32_t)after, err);
    /* uint16 tokens while every id fits (GPT-2's 50257: the files llm.c writes), else uint32 */
    const int width = llmc_tokens_width(vocab.n);
    uint16_t *tok16 = NULL;
    if (!st && width == 2 && !(tok16 = malloc((ids.n ? ids.n : 1) * sizeof *tok16)))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory for %zu tokens", ids.n);
    for (size_t i = 0; !st && width == 2 && i < ids.n; i++)
        tok16[i] = (uint16_t)ids.id[i];
    size_t nval = 0, ntrain = 0;
    if (!st)
        st = write_split(width == 2 ? (const void *)tok16 : ids.id, width, ids.n, frac, &ntrain,
                         &nval, train_path, val_path, err);
    char marks[200] = "", b1[80], b2[80];
    if (before >= 0)
        snprintf(marks, sizeof marks, "%s before", token_name(&vocab, before, b1));
    if (after >= 0)
        snprintf(marks + strlen(marks), sizeof marks - strlen(marks), "%s%s after",
                 before >= 0 ? ", " : "", token_name(&vocab, after, b2));
    if (!st)
        printf("prepared %d file%s, %zu bytes: %s %zu tokens, %s %zu tokens (%s%s, vocabulary %d, "
               "%s each file, uint%d tokens; %.1f MB/s on %d thread%s)\n",
               nfiles, nfiles > 1 ? "s" : "", bytes, train_path, ntrain, val_path, nval,
               hf ? "tokenizer " : "GPT-2 BPE", hf ? vocab.source : "", vocab.n, marks, 8 * width,
               secs > 0 ? (double)bytes / 1e6 / secs : 0.0, nthreads, nthreads > 1 ? "s" : "");
    free(tok16);
    bpe_ids_free(&ids);
    for (int i = 0; bufs && i < nfiles; i++)
        free(bufs[i]);
    free(bufs);
    free(docs);
    free(start);
    bpe_vocab_free(&vocab);
    return st;
}

/* The input files, in order: --text's files as given, each directory replaced by its files. */
typedef struct {
    char **path;
    int n, cap;
} file_list;

/* Appends a copy of path to the list. */
static zc_status list_push(file_list *l, const char *path, zc_err *err)
{
    if (l->n == l->cap) {
        if (l->cap >= INT32_MAX / 2)
            return zc_err_set(err, ZC_EINVAL, "--text: more than %d files", l->cap);
        int cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->path, (size_t)cap * sizeof *p);
        if (!p)
            return zc_err_set(err, ZC_ENOMEM, "out of memory listing %d input files", l->n);
        l->path = p;
        l->cap = cap;
    }
    if (!(l->path[l->n] = strdup(path)))
        return zc_err_set(err, ZC_ENOMEM, "out of memory listing %d input files", l->n);
    l->n++;
    return ZC_OK;
}

static void list_free(file_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->path[i]);
    free(l->path);
    *l = (file_list){0};
}

/* Appends the regular files under directory `dir` (of --text `top`), recursively, unsorted:
 * entries whose names start with '.' are skipped, symbolic links to directories not followed
 * (a link may loop), other kinds of file (FIFOs, devices) left out. */
static zc_status list_directory(file_list *l, const char *top, const char *dir, zc_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return zc_err_set(err, ZC_EIO, "--text %s: cannot read the directory %s: %s", top, dir,
                          strerror(errno));
    zc_status st = ZC_OK;
    char path[4200];
    for (struct dirent *e; !st && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) {
            st = zc_err_set(err, ZC_EINVAL, "--text %s: a path under it is too long: %s/%s", top,
                            dir, e->d_name);
            break;
        }
        struct stat lsb, sb;
        if (lstat(path, &lsb) || stat(path, &sb))
            continue; /* gone since readdir, or a dangling link: not a file to read */
        if (S_ISDIR(lsb.st_mode))
            st = list_directory(l, top, path, err);
        else if (S_ISREG(sb.st_mode))
            st = list_push(l, path, err);
    }
    closedir(d);
    return st;
}

static int path_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The input files of --text's arguments: a directory's regular files (list_directory) sorted
 * by path in byte order, in place of it; anything else as given (a missing file is named when
 * it is read). A directory without one regular file is an error. */
static zc_status list_inputs(const char **args, int nargs, file_list *l, zc_err *err)
{
    zc_status st = ZC_OK;
    for (int i = 0; !st && i < nargs; i++) {
        struct stat sb;
        if (stat(args[i], &sb) || !S_ISDIR(sb.st_mode)) {
            st = list_push(l, args[i], err);
            continue;
        }
        int first = l->n;
        char dir[4096];
        size_t len = strlen(args[i]);
        while (len > 1 && args[i][len - 1] == '/') /* dir/ lists as dir/a, not dir//a */
            len--;
        snprintf(dir, sizeof dir, "%.*s", (int)len, args[i]);
        st = list_directory(l, args[i], dir, err);
        if (!st && l->n == first)
            st = zc_err_set(err, ZC_EINVAL,
                            "--text %s: the directory holds no regular file to read (names "
                            "starting with '.' are skipped)",
                            args[i]);
        if (!st)
            qsort(l->path + first, (size_t)(l->n - first), sizeof *l->path, path_order);
    }
    return st;
}

/* Neither PREFIX_train.bin nor PREFIX_val.bin may be one of the --text files it reads, and both
 * must be writable before the text is read (a missing data/ directory was found only after
 * reading and tokenizing all of it). */
static zc_status outputs_not_inputs(const char **files, int nfiles, const char *prefix,
                                    const char *flag, int noutputs, zc_err *err)
{
    static const char *const suffix[] = {"_train.bin", "_val.bin", "_train.mask", "_val.mask"};
    char path[4200];
    zc_status st = ZC_OK;
    for (int k = 0; !st && k < noutputs; k++) {
        snprintf(path, sizeof path, "%s%s", prefix, suffix[k]);
        st = cli_output_writable("--out", path, err);
        for (int i = 0; !st && i < nfiles; i++)
            st = cli_output_not_input("--out", path, flag, files[i], err);
    }
    return st;
}

int cmd_prepare(int argc, char **argv)
{
    const int rank = cli_launcher_rank();
    if (rank != 0) {
        printf("zeroc prepare: rank %d of an MPI launch; rank 0 prepares the files, this process "
               "does nothing (prepare needs one process: run it without mpirun)\n",
               rank);
        return 0;
    }
    const char *out = NULL, *text_unused = NULL, *tokenizer = "byte", *vocab = NULL,
               *jsonl_unused = NULL, *chat = NULL, *chat_date = NULL;
    int threads = 0;
    double frac = 0.1;
    bool help = false;
    arg_spec specs[] = {
        {"--text", ARG_STR, &text_unused, NULL, "input text files or directories, see below", NULL},
        {"--jsonl", ARG_STR, &jsonl_unused, NULL,
         "instruction data: JSON Lines files of {\"messages\": [{\"role\", \"content\"}]} or "
         "{\"prompt\", \"completion\"} (needs --tokenizer DIR)",
         NULL},
        {"--chat-format", ARG_STR, &chat, NULL,
         "--jsonl: llama3, llama3.1 or chatml (default: recognised from "
         "DIR/tokenizer_config.json's chat_template)",
         NULL},
        {"--chat-date", ARG_STR, &chat_date, NULL,
         "--jsonl, llama3.1: the system header's \"Today Date\" (default: the template's, e.g. "
         "\"26 Jul 2024\"; a template that asks strftime_now for it: today's, as transformers)",
         NULL},
        {"--out", ARG_STR, &out, NULL, "output prefix: writes PREFIX_train.bin and PREFIX_val.bin",
         NULL},
        {"--val-fraction", ARG_DOUBLE, &frac, NULL,
         "fraction of the tokens, from the end, that go to PREFIX_val.bin (default 0.1)", NULL},
        {"--tokenizer", ARG_STR, &tokenizer, NULL,
         "byte (default), gpt2, or a directory with a Hugging Face tokenizer.json + "
         "tokenizer_config.json (Llama 3, Qwen2.5, SmolLM2)",
         NULL},
        {"--vocab", ARG_STR, &vocab, NULL,
         "gpt2: directory with encoder.json + vocab.bpe (or vocab.json + merges.txt)", NULL},
        {"--threads", ARG_INT, &threads, NULL,
         "gpt2 or DIR: encoding threads (default: all processors)", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    const char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    const char **jfiles = calloc((size_t)(argc > 0 ? argc : 1), sizeof *jfiles);
    char **rest0 = calloc((size_t)(argc > 0 ? argc : 1), sizeof *rest0);
    char **rest = calloc((size_t)(argc > 0 ? argc : 1), sizeof *rest);
    int nfiles = 0, njsonl = 0, nrest0 = 0, nrest = 0;
    zc_status st =
        files && jfiles && rest0 && rest ? ZC_OK : zc_err_set(&err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = args_split_list(argc, argv, 2, "--text", files, &nfiles, rest0, &nrest0, &err);
    if (!st)
        st = args_split_list(nrest0, rest0, 0, "--jsonl", jfiles, &njsonl, rest, &nrest, &err);
    for (int i = 0; !st && i < nrest; i++) /* args_usage lists --help itself */
        help = help || !strcmp(rest[i], "--help") || !strcmp(rest[i], "-h");
    if (!st && !help)
        st = args_parse(specs, nspecs, nrest, rest, 0, &err);
    if (!st && help) {
        args_usage(SYNOPSIS, specs, nspecs);
        printf("\n--text takes every following argument up to the next --flag (--text a.txt "
               "b.txt), and may be\ngiven several times; --text=FILE takes one file. A "
               "directory stands for its regular files,\nrecursively, sorted by path (byte "
               "order), names starting with '.' skipped and links to\ndirectories not "
               "followed: --text corpus/ needs no shell glob however many files it holds.\n"
               "byte: the files' bytes are joined with a newline between files, token = byte "
               "value,\nvocabulary 256. gpt2: each file is a document, encoded with GPT-2's "
               "BPE (as tiktoken's\n\"gpt2\"), <|endoftext|> before each; bytes that are not "
               "valid UTF-8 become their byte's\ntoken. DIR: each file is a document, encoded "
               "with the Hugging Face tokenizer.json in DIR\n(byte-level BPE: Llama 3, Qwen2.5, "
               "SmolLM2); the BOS token before each and/or the EOS token\nafter each as DIR's "
               "tokenizer_config.json says (add_bos_token / add_eos_token, else BOS when\n"
               "bos_token is set, else EOS); special tokens' text in the files is ordinary "
               "text.\nThe outputs are llm.c token files: "
               "uint16 tokens (magic 20240520, version 1)\nwhile every id fits, uint32 tokens "
               "(magic 20240801, version 7) for a vocabulary above 65,536.\nOne process, no MPI; "
               "under mpirun "
               "only rank 0 prepares, the other ranks exit at once.\n"
               "--jsonl (with --tokenizer DIR): each line one example, rendered with the chat "
               "template\n(llama3: Llama 3; llama3.1: Llama 3.1, 3.2, with the dated system turn; "
               "chatml: Qwen2.5,\nSmolLM2, with the template's default system message when an "
               "example has none); only the assistant's tokens and its "
               "end-of-turn token count\nin the loss: PREFIX_train.mask and PREFIX_val.mask "
               "beside the token files say which\n(zeroc train --data PREFIX_train.bin reads "
               "the mask beside it). Examples are packed\n(concatenated; attention crosses "
               "examples); the last --val-fraction of the examples is\nvalidation.\n");
        free(files);
        free(jfiles);
        free(rest0);
        free(rest);
        return 0;
    }
    if (!st && njsonl > 0 && nfiles > 0)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--jsonl and --text: give one kind of input (instruction data or text)");
    if (!st && (chat || chat_date) && njsonl == 0)
        st = zc_err_set(&err, ZC_EINVAL, "%s is for --jsonl",
                        chat ? "--chat-format" : "--chat-date");
    if (!st && njsonl > 0 && (!strcmp(tokenizer, "byte") || !strcmp(tokenizer, "gpt2")))
        st = zc_err_set(&err, ZC_EINVAL,
                        "--jsonl needs --tokenizer DIR, a Hugging Face tokenizer directory "
                        "(tokenizer.json and tokenizer_config.json: Llama 3, Qwen2.5, SmolLM2)");
    if (!st && njsonl > 0) {
        st = !out      ? zc_err_set(&err, ZC_EINVAL, "--out PREFIX is required (see --help)")
             : !out[0] ? zc_err_set(&err, ZC_EINVAL, "--out: the prefix is empty")
             : !(frac > 0.0 && frac < 1.0)
                 ? zc_err_set(&err, ZC_EINVAL,
                              "--val-fraction must be between 0 and 1 (exclusive), got %.10g", frac)
                 : outputs_not_inputs(jfiles, njsonl, out, "--jsonl", 4, &err);
        if (!st)
            st = prepare_jsonl(jfiles, njsonl, out, frac, chat_date, tokenizer, chat, &err);
        free(files);
        free(jfiles);
        free(rest0);
        free(rest);
        return st ? cli_fail_alone(&err) : 0;
    }
    if (!st && nfiles == 0)
        st = zc_err_set(&err, ZC_EINVAL, "--text: give at least one input file (see --help)");
    if (!st && !out)
        st = zc_err_set(&err, ZC_EINVAL, "--out PREFIX is required (see --help)");
    if (!st && !out[0])
        st = zc_err_set(&err, ZC_EINVAL, "--out: the prefix is empty");
    if (!st && !(frac > 0.0 && frac < 1.0))
        st = zc_err_set(&err, ZC_EINVAL,
                        "--val-fraction must be between 0 and 1 (exclusive), "
                        "got %.10g",
                        frac);
    bool gpt2 = !st && !strcmp(tokenizer, "gpt2");
    bool hf = !st && !gpt2 && strcmp(tokenizer, "byte") != 0;
    struct stat tsb;
    if (hf && (stat(tokenizer, &tsb) != 0 || !S_ISDIR(tsb.st_mode)))
        st = zc_err_set(&err, ZC_EINVAL,
                        "--tokenizer must be byte, gpt2 or a directory holding a Hugging Face "
                        "tokenizer.json, got '%s'%s",
                        tokenizer,
                        stat(tokenizer, &tsb) != 0 ? " (no such file or directory)"
                                                   : " (not a directory)");
    if (!st && hf && vocab)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--vocab is for --tokenizer gpt2; --tokenizer %s names the tokenizer "
                        "itself",
                        tokenizer);
    if (!st && gpt2 && !vocab)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--tokenizer gpt2 needs --vocab DIR (encoder.json and "
                        "vocab.bpe)");
    if (!st && !gpt2 && !hf && vocab)
        st = zc_err_set(&err, ZC_EINVAL, "--vocab is for --tokenizer gpt2");
    if (!st && !gpt2 && !hf && args_given(nrest, rest, 0, "--threads"))
        st = zc_err_set(&err, ZC_EINVAL,
                        "--threads is for --tokenizer gpt2 or DIR (the byte tokenizer is one "
                        "pass)");
    if (!st && args_given(nrest, rest, 0, "--threads") && threads < 1) /* 0 is the default's */
        st = zc_err_set(&err, ZC_EINVAL,
                        "--threads must be >= 1, got %d (leave it out to use all processors)",
                        threads);
    file_list inputs = {0};
    if (!st)
        st = list_inputs(files, nfiles, &inputs, &err);
    const char **in = (const char **)inputs.path;
    if (!st)
        st = outputs_not_inputs(in, inputs.n, out, "--text", 2, &err);
    if (!st)
        st = gpt2 || hf
                 ? prepare_bpe(in, inputs.n, out, frac, hf ? tokenizer : vocab, hf, threads, &err)
                 : prepare(in, inputs.n, out, frac, &err);
    /* a loss mask left beside the token files by an earlier --jsonl run would mask these */
    for (int k = 0; !st && k < 2; k++) {
        char mask[4200];
        snprintf(mask, sizeof mask, "%s%s", out, k ? "_val.mask" : "_train.mask");
        if (!remove(mask))
            printf("removed %s (a loss mask from an earlier --jsonl run; these files have "
                   "none)\n",
                   mask);
    }
    list_free(&inputs);
    free(files);
    free(jfiles);
    free(rest0);
    free(rest);
    return st ? cli_fail_alone(&err) : 0;
}

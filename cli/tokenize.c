/* tokenize.c — `zeroc tokenize` and `zeroc detokenize`: the BPE tokenizers for scripts (GPT-2's
 * files, or a Hugging Face tokenizer.json: models/gpt2/hf_tokenizer.h).
 *
 *     zeroc tokenize --vocab DIR [--text FILE...] [--out FILE] [--threads N] [--stats]
 *     zeroc detokenize --vocab DIR|FILE [--in FILE | --tokens FILE.bin] [--out FILE]
 *
 * tokenize writes each input's token ids as one line of space-separated decimals (standard
 * input when no --text is given); detokenize reads ids separated by white space or commas (or an
 * llm.c token file) and writes their bytes. Neither needs MPI: main() runs them before it. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bpe_text.h"
#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/output_paths.h"
#include "models/gpt2/llmc_files.h"
#include "models/gpt2/tokenizer_files.h"
#include "zeroc/durable.h"

/* --out: standard output, or a file written whole or not at all through zeroc/durable.h (its
 * refusals too: a dangling link, one another user planted in /tmp, a FIFO) */
typedef struct {
    FILE *f;
    zc_durable *d; /* NULL for standard output */
} out_file;

static zc_status open_out(const char *path, out_file *o, zc_err *err)
{
    o->f = stdout;
    o->d = NULL;
    if (!path)
        return ZC_OK;
    zc_status st = zc_durable_open(&o->d, path, err);
    if (st) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return zc_err_set(err, st, "--out: %s", why);
    }
    int fd = dup(zc_durable_fd(o->d)); /* fclose closes this one; commit fsyncs the file */
    o->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!o->f) {
        st = zc_err_set(err, ZC_EIO, "--out %s: cannot write: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        zc_durable_abort(o->d);
    }
    return st;
}

static zc_status close_out(const char *path, out_file *o, zc_err *err)
{
    if (o->f == stdout) /* the check main makes after every command, made here to say it first */
        return cli_stdout_flush(errno, err);
    bool bad = ferror(o->f) != 0;
    bad = fclose(o->f) != 0 || bad;
    if (bad) {
        zc_durable_abort(o->d);
        return zc_err_set(err, ZC_EIO, "%s: write error: %s", path, strerror(errno));
    }
    return zc_durable_commit(o->d, err);
}

/* --out may not overwrite what the command reads (checked before anything runs, so the input
 * stays as it was): its inputs ins[0..nins) of flag iflag ("-", standard input, aside), nor the
 * vocabulary, the file given or the files bpe_vocab_load reads from the directory given. */
static zc_status out_not_input(const char *out, const char *iflag, const char *const *ins, int nins,
                               const char *vocab, zc_err *err)
{
    static const char *const vocab_files[] = {
        "encoder.json",       "vocab.bpe",      "vocab.json",           "merges.txt",
        "gpt2_tokenizer.bin", "tokenizer.json", "tokenizer_config.json"};
    zc_status st = ZC_OK;
    for (int i = 0; !st && i < nins; i++)
        if (ins[i] && strcmp(ins[i], "-"))
            st = cli_output_not_input("--out", out, iflag, ins[i], err);
    struct stat sb;
    if (st || !out || !vocab || stat(vocab, &sb))
        return st;
    if (!S_ISDIR(sb.st_mode))
        return cli_output_not_input("--out", out, "--vocab", vocab, err);
    char path[4200];
    for (size_t i = 0; !st && i < sizeof vocab_files / sizeof *vocab_files; i++) {
        snprintf(path, sizeof path, "%s/%s", vocab, vocab_files[i]);
        st = cli_output_not_input("--out", out, "--vocab", path, err);
    }
    return st;
}

/* Writes ids[0..n) as decimals separated by spaces, then a newline. */
static void write_ids(FILE *f, const uint32_t *ids, size_t n)
{
    char buf[1 << 14];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > sizeof buf - 16) {
            fwrite(buf, 1, k, f);
            k = 0;
        }
        k += (size_t)snprintf(buf + k, 16, i ? " %u" : "%u", ids[i]);
    }
    buf[k++] = '\n';
    fwrite(buf, 1, k, f);
}

int cmd_tokenize(int argc, char **argv)
{
    const char *vocab = NULL, *out = NULL, *unused = NULL;
    int threads = 0;
    bool stats = false, help = false, special = false;
    arg_spec specs[] = {
        {"--vocab", ARG_STR, &vocab, NULL,
         "directory with encoder.json + vocab.bpe (or vocab.json + merges.txt), or with a Hugging "
         "Face tokenizer.json (Llama 3, Qwen2.5, SmolLM2)",
         NULL},
        {"--text", ARG_STR, &unused, NULL, "input file(s), one line of ids each (default: stdin)",
         NULL},
        {"--out", ARG_STR, &out, NULL, "write the ids here (default: stdout)", NULL},
        {"--threads", ARG_INT, &threads, NULL, "encoding threads (default: all processors)", NULL},
        {"--stats", ARG_BOOL, &stats, NULL, "print bytes, tokens and MB/s to stderr", NULL},
        {"--special", ARG_BOOL, &special, NULL,
         "tokenizer.json: special tokens' text in the input is those tokens (as Hugging Face's "
         "encode); without it, ordinary text",
         NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nfiles = 0, nrest = 0;
    zc_status st = files && rest ? ZC_OK : zc_err_set(&err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = args_split_list(argc, argv, 2, "--text", files, &nfiles, rest, &nrest, &err);
    for (int i = 0; !st && i < nrest; i++)
        help = help || !strcmp(rest[i], "--help") || !strcmp(rest[i], "-h");
    if (!st && help) {
        args_usage("zeroc tokenize --vocab DIR [--text FILE...] [--out FILE]", specs, nspecs);
        printf("\nGPT-2 byte-level BPE, as tiktoken's \"gpt2\" encoding: each input file is one "
               "line of\nspace-separated token ids. Bytes that are not valid UTF-8 become their "
               "byte's token.\n<|endoftext|> in the text is ordinary text.\nA tokenizer.json "
               "(Hugging Face's format, hf_tokenizer.h) encodes as Hugging Face's encode(text,\n"
               "add_special_tokens=False): no BOS/EOS are added; special tokens' text is ordinary "
               "text\nunless --special, added tokens that are not special are always matched.\n");
        free(files);
        free(rest);
        return 0;
    }
    if (!st)
        st = args_parse(specs, nspecs, nrest, rest, 0, &err);
    if (!st && !vocab)
        st = zc_err_set(&err, ZC_EINVAL, "--vocab DIR is required (see --help)");
    if (!st && args_given(nrest, rest, 0, "--threads") && threads < 1) /* 0 is the default's */
        st = zc_err_set(&err, ZC_EINVAL,
                        "--threads must be >= 1, got %d (leave it out to use all processors)",
                        threads);
    static const char *std_in[] = {"-"};
    if (!st && nfiles == 0) {
        files[0] = std_in[0];
        nfiles = 1;
    }
    if (!st)
        st = out_not_input(out, "--text", files, nfiles, vocab, &err);
    bpe_vocab v;
    bool have_vocab = false;
    if (!st)
        have_vocab = !(st = tokenizer_files_load(&v, vocab, true, &err));
    if (!st && special && !v.hf.on)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--special is for a Hugging Face tokenizer.json; %s is GPT-2's files, "
                        "whose <|endoftext|> in text is ordinary text",
                        v.source);
    if (!st && special)
        v.hf.match_special = true;
    uint8_t **bufs = calloc((size_t)nfiles, sizeof *bufs);
    bpe_doc *docs = calloc((size_t)nfiles, sizeof *docs);
    size_t *start = calloc((size_t)nfiles + 1, sizeof *start);
    if (!st && (!bufs || !docs || !start))
        st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
    size_t bytes = 0;
    for (int i = 0; !st && i < nfiles; i++) {
        st = bpe_text_read("--text", files[i], &bufs[i], &docs[i].n, &err);
        docs[i].text = bufs[i];
        bytes += docs[i].n;
    }
    bpe_ids ids = {0};
    double secs = 0;
    int nthreads = bpe_text_threads(threads);
    if (!st)
        st = bpe_text_encode(&v, docs, (size_t)nfiles, nthreads, -1, &ids, start, &secs, &err);
    out_file o;
    if (!st)
        st = open_out(out, &o, &err);
    if (!st) {
        for (int i = 0; i < nfiles; i++)
            write_ids(o.f, ids.id + start[i], start[i + 1] - start[i]);
        st = close_out(out, &o, &err);
    }
    if (!st && stats)
        fprintf(stderr,
                "tokenize: %zu bytes, %zu tokens, %.3f s encoding, %.2f MB/s, %d "
                "thread%s\n",
                bytes, ids.n, secs, secs > 0 ? (double)bytes / 1e6 / secs : 0.0, nthreads,
                nthreads > 1 ? "s" : "");
    bpe_ids_free(&ids);
    for (int i = 0; bufs && i < nfiles; i++)
        free(bufs[i]);
    free(bufs);
    free(docs);
    free(start);
    free(files);
    free(rest);
    if (have_vocab)
        bpe_vocab_free(&v);
    return st ? cli_fail_alone(&err) : 0;
}

/* Parses ids separated by white space or commas from text[0..n) (of input `what`), each below
 * the vocabulary's size; an error gives the item's position, counted from 0. */
static zc_status parse_ids(const char *what, const uint8_t *text, size_t n, const bpe_vocab *v,
                           bpe_ids *ids, zc_err *err)
{
    size_t i = 0, item = 0;
    while (i < n) {
        while (i < n && (text[i] == ',' || text[i] == ' ' || (text[i] >= '\t' && text[i] <= '\r')))
            i++;
        if (i >= n)
            break;
        size_t j = i;
        uint64_t val = 0;
        while (j < n && text[j] >= '0' && text[j] <= '9' && val <= UINT32_MAX)
            val = val * 10 + (text[j++] - '0');
        bool sep =
            j >= n || text[j] == ',' || text[j] == ' ' || (text[j] >= '\t' && text[j] <= '\r');
        if (j == i || !sep || val > INT32_MAX) {
            size_t e = i;
            while (e < n && e - i < 20 && text[e] != ',' && text[e] != ' ' && text[e] != '\n')
                e++;
            return zc_err_set(err, ZC_EINVAL,
                              "%s: item %zu ('%.*s') is not a token id (items are numbered from "
                              "0)",
                              what, item, (int)(e - i), (const char *)text + i);
        }
        if (val >= (uint64_t)v->n)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: token %zu is %llu, outside the vocabulary of %s (ids 0..%d; "
                              "tokens are numbered from 0)",
                              what, item, (unsigned long long)val, v->source, v->n - 1);
        zc_status st = bpe_ids_reserve(ids, 1, err);
        if (st)
            return st;
        ids->id[ids->n++] = (uint32_t)val;
        item++;
        i = j;
    }
    return ZC_OK;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *vocab = NULL, *in = NULL, *tokens = NULL, *out = NULL;
    arg_spec specs[] = {
        {"--vocab", ARG_STR, &vocab, NULL,
         "directory with encoder.json (or vocab.json, or gpt2_tokenizer.bin, or a Hugging Face "
         "tokenizer.json), or an llm.c gpt2_tokenizer.bin",
         NULL},
        {"--in", ARG_STR, &in, NULL, "ids separated by white space or commas (default: stdin)",
         NULL},
        {"--tokens", ARG_STR, &tokens, NULL,
         "an llm.c token file (or a quoted glob of shards, read in name order) instead of --in",
         NULL},
        {"--out", ARG_STR, &out, NULL, "write the bytes here (default: stdout)", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    bool helped;
    zc_status st = args_parse_command(specs, nspecs, argc, argv, 2,
                                      "zeroc detokenize --vocab DIR|FILE [--in FILE | --tokens "
                                      "FILE] [--out FILE]",
                                      true, &helped, &err);
    if (helped)
        return 0;
    if (!st && !vocab)
        st = zc_err_set(&err, ZC_EINVAL, "--vocab DIR|FILE is required (see --help)");
    if (!st && in && tokens)
        st = zc_err_set(&err, ZC_EINVAL, "give --in or --tokens, not both");
    if (!st)
        st = out_not_input(out, tokens ? "--tokens" : "--in", tokens ? &tokens : &in, 1, vocab,
                           &err);
    if (!st && tokens) /* each file a glob of shards reads */
        st = cli_output_not_token_files("--out", out, "--tokens", tokens, &err);
    bpe_vocab v;
    bool have_vocab = false;
    if (!st)
        have_vocab = !(st = tokenizer_files_load(&v, vocab, false, &err));
    bpe_ids ids = {0};
    if (!st && tokens) {
        llmc_tokens t;
        st = llmc_tokens_open(tokens, &t, &err);
        bool opened = !st;
        int *tmp = NULL;
        if (!st && !(tmp = malloc(t.ntok * sizeof *tmp)))
            st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
        if (!st)
            st = llmc_tokens_read(&t, 0, t.ntok, tmp, v.n, &err);
        if (!st)
            st = bpe_ids_reserve(&ids, t.ntok, &err);
        for (size_t i = 0; !st && i < t.ntok; i++)
            ids.id[ids.n++] = (uint32_t)tmp[i];
        free(tmp);
        if (opened)
            llmc_tokens_close(&t);
    } else if (!st) {
        uint8_t *text = NULL;
        size_t n = 0;
        st = bpe_text_read("--in", in ? in : "-", &text, &n, &err);
        if (!st)
            st = parse_ids(in ? in : "standard input", text, n, &v, &ids, &err);
        free(text);
    }
    uint8_t *bytes = NULL;
    size_t len = 0, cap = 0;
    if (!st)
        st = bpe_decode(&v, ids.id, ids.n, &bytes, &len, &cap, &err);
    out_file o;
    if (!st)
        st = open_out(out, &o, &err);
    if (!st) {
        if (len)
            fwrite(bytes, 1, len, o.f);
        st = close_out(out, &o, &err);
    }
    free(bytes);
    bpe_ids_free(&ids);
    if (have_vocab)
        bpe_vocab_free(&v);
    return st ? cli_fail_alone(&err) : 0;
}

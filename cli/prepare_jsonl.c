/* prepare_jsonl.c — `zeroc prepare --jsonl`: instruction data (JSON Lines of prompt/completion
 * pairs or chat messages) into token files with a loss mask beside each (loss_mask.h), rendered
 * with the model family's chat template (chat_format.h). Its own file: the files of examples,
 * their split and the four outputs are apart from prepare.c's plain-text paths.
 *
 * Each non-blank line is one example (jsonl_example.h says what it may hold); blank lines are
 * skipped.
 *
 * Examples are packed: their tokens are concatenated in file order (no padding), so a training
 * window may hold the end of one example and the start of the next, and attention crosses that
 * boundary (the mask still counts only assistant tokens). The last --val-fraction of the
 * examples (rounded, at least one each way) go to PREFIX_val.bin / PREFIX_val.mask, the rest to
 * PREFIX_train.bin / PREFIX_train.mask. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bpe_text.h"
#include "cli/chat_format.h"
#include "cli/jsonl_example.h"
#include "cli/commands.h"
#include "models/gpt2/hf_tokenizer.h"
#include "models/gpt2/llmc_files.h"
#include "models/gpt2/loss_mask.h"

/* Writes tokens [a, b) of ids and the mask as path_bin and its mask file. */
static zc_status write_part(const bpe_ids *ids, const uint8_t *mask, size_t a, size_t b, int width,
                            const char *path, zc_err *err)
{
    void *tok = malloc((b - a) * (size_t)width);
    if (!tok)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (size_t i = a; i < b; i++)
        if (width == 2)
            ((uint16_t *)tok)[i - a] = (uint16_t)ids->id[i];
        else
            ((uint32_t *)tok)[i - a] = ids->id[i];
    zc_status st = llmc_tokens_write(path, tok, width, b - a, err);
    free(tok);
    char mpath[4200];
    if (!st && !loss_mask_path(path, mpath, sizeof mpath))
        st = zc_err_set(err, ZC_EINVAL, "--out: prefix too long");
    if (!st)
        st = loss_mask_write(mpath, mask + a, b - a, err);
    return st;
}

zc_status prepare_jsonl(const char **files, int nfiles, const char *prefix, double frac,
                        const char *chat_date, const char *tokdir, const char *chat_flag,
                        zc_err *err)
{
    char train_path[4096], val_path[4096], json[4200];
    if (snprintf(train_path, sizeof train_path, "%s_train.bin", prefix) >= (int)sizeof train_path ||
        snprintf(val_path, sizeof val_path, "%s_val.bin", prefix) >= (int)sizeof val_path)
        return zc_err_set(err, ZC_EINVAL, "--out: prefix too long");
    snprintf(json, sizeof json, "%s/tokenizer.json", tokdir);
    bpe_vocab vocab;
    zc_status st = hf_tokenizer_load(&vocab, json, err);
    if (st)
        return st;
    chat_format f;
    if ((st = chat_format_init(&f, chat_flag, chat_date, tokdir, &vocab, "--jsonl", err))) {
        bpe_vocab_free(&vocab);
        return st;
    }
    bpe_encoder *e = NULL;
    bpe_ids ids = {0};
    uint8_t *mask = NULL;
    size_t mask_cap = 0, nex = 0, cap_ex = 0, *ex_end = NULL; /* token end of each example */
    st = bpe_encoder_create(&e, &vocab, err);
    for (int i = 0; !st && i < nfiles; i++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        if ((st = bpe_text_read("--jsonl", files[i], &buf, &len, err)))
            break;
        size_t line = 0;
        for (size_t a = 0; !st && a < len;) {
            const uint8_t *nl = memchr(buf + a, '\n', len - a);
            size_t b = nl ? (size_t)(nl - buf) : len;
            line++;
            size_t k = a;
            while (k < b && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\r'))
                k++;
            if (k < b) { /* blank lines are skipped */
                st = jsonl_example(&f, e, (const char *)buf + a, b - a, files[i], line, &ids, &mask,
                                   &mask_cap, err);
                if (!st && nex == cap_ex) {
                    cap_ex = cap_ex ? 2 * cap_ex : 1024;
                    size_t *p = realloc(ex_end, cap_ex * sizeof *p);
                    if (!p)
                        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
                    else
                        ex_end = p;
                }
                if (!st)
                    ex_end[nex++] = ids.n;
            }
            a = b + 1;
        }
        free(buf);
    }
    size_t nval = (size_t)(frac * (double)nex + 0.5), ntrain = nex - (nval < nex ? nval : nex);
    if (!st && nex == 0)
        st = zc_err_set(err, ZC_EINVAL, "--jsonl %s%s: no example (the lines are all blank)",
                        files[0], nfiles > 1 ? " ..." : "");
    else if (!st && (nval < 1 || ntrain < 1))
        st = zc_err_set(err, ZC_EINVAL,
                        "--jsonl: %zu example%s and --val-fraction %.10g leave the %s split "
                        "empty (each needs at least one example: give more examples or change "
                        "the fraction)",
                        nex, nex == 1 ? "" : "s", frac, nval < 1 ? "validation" : "training");
    const size_t cut = st ? 0 : ex_end[ntrain - 1];
    if (!st && (cut > INT32_MAX || ids.n - cut > INT32_MAX))
        st = zc_err_set(err, ZC_EINVAL,
                        "--jsonl: %zu tokens in a split, more than a token file holds (%d): "
                        "prepare the examples in parts",
                        cut > INT32_MAX ? cut : ids.n - cut, INT32_MAX);
    const int width = llmc_tokens_width(vocab.n);
    if (!st)
        st = write_part(&ids, mask, 0, cut, width, train_path, err);
    if (!st)
        st = write_part(&ids, mask, cut, ids.n, width, val_path, err);
    if (!st) {
        size_t counted = 0;
        for (size_t i = 0; i < ids.n; i++)
            counted += mask[i];
        char notes[8192];
        chat_format_notes(&f, true, notes, sizeof notes);
        printf("prepared %zu examples (%s chat format%s): %s %zu examples, %zu tokens; %s %zu "
               "examples, %zu tokens; %zu of %zu tokens (assistant) count in the loss; loss masks "
               "beside each (.mask); examples packed, attention crosses them\n",
               nex, chat_format_name(&f), notes, train_path, ntrain, cut, val_path, nval,
               ids.n - cut, counted, ids.n);
    }
    free(ex_end);
    free(mask);
    bpe_ids_free(&ids);
    if (e)
        bpe_encoder_destroy(e);
    chat_format_free(&f);
    bpe_vocab_free(&vocab);
    return st;
}

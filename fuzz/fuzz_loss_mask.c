/* fuzz_loss_mask.c — fuzz target: a loss-mask file (models/gpt2/loss_mask.h) beside a valid token
 * file of 100 tokens, as `train --data FILE` reads it: the header's checks against the token
 * count, then mask windows at the start and wrapping past the end (bytes other than 0/1
 * refused). Its own target: the mask is a parser of outside bytes apart from the token file. */
#include <string.h>

#include "fuzz/fuzz.h"
#include "models/gpt2/llmc_files.h"
#include "models/gpt2/loss_mask.h"

enum { NTOK = 100 };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t tokens[1024 + 2 * NTOK];
    const int32_t hdr[3] = {LLMC_TOKENS_MAGIC, LLMC_TOKENS_VERSION, NTOK};
    memcpy(tokens, hdr, sizeof hdr);
    char path[4300], mask[4300];
    fuzz_write("tokens.bin", tokens, sizeof tokens, path, sizeof path);
    fuzz_write("tokens.mask", data, size, mask, sizeof mask);
    llmc_tokens t;
    zc_err err;
    if (llmc_tokens_open(path, &t, &err))
        __builtin_trap(); /* the harness's own token file must open */
    loss_mask m;
    if (!loss_mask_open(&t, &m, &err) && m.nshards) {
        uint8_t b[NTOK + 3];
        loss_mask_read(&m, 0, NTOK, b, &err);
        loss_mask_read(&m, NTOK - 1, 3, b, &err);
        loss_mask_close(&m);
    }
    llmc_tokens_close(&t);
    return 0;
}

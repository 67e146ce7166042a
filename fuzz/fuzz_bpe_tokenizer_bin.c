/* fuzz_bpe_tokenizer_bin.c — fuzz target: llm.c's gpt2_tokenizer.bin as `--vocab FILE` reads it
 * (decoding only), then every token decoded. */
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "models/gpt2/bpe_encode.h"
#include "models/gpt2/bpe_vocab.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[4300];
    fuzz_write("gpt2_tokenizer.bin", data, size, path, sizeof path);
    bpe_vocab v;
    zc_err err;
    if (bpe_vocab_load(&v, path, false, &err))
        return 0;
    uint32_t ids[3] = {0, (uint32_t)(v.n - 1), (uint32_t)v.n}; /* the last one is refused */
    uint8_t *text = NULL;
    size_t len = 0, cap = 0;
    bpe_decode(&v, ids, 2, &text, &len, &cap, &err);
    zc_status st = bpe_decode(&v, ids, 3, &text, &len, &cap, &err);
    free(text);
    if (!st)
        abort(); /* an id past the vocabulary decoded */
    bpe_vocab_free(&v);
    return 0;
}

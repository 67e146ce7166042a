/* fuzz_bpe_encode.c — fuzz target: any bytes as text to the GPT-2 tokenizer (the pre-tokenizer's
 * scan over UTF-8, valid or not, and the merge loop) with a small vocabulary (fuzz/vocab/); the
 * ids must decode to exactly the input. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "models/gpt2/bpe_encode.h"
#include "models/gpt2/bpe_vocab.h"

static bpe_vocab vocab;
static bpe_encoder *encoder;

static void finish(void)
{
    bpe_encoder_destroy(encoder);
    bpe_vocab_free(&vocab);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    zc_err err;
    if (bpe_vocab_load(&vocab, ZEROC_SOURCE_DIR "/fuzz/vocab", true, &err) ||
        bpe_encoder_create(&encoder, &vocab, &err))
        abort();
    atexit(finish);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bpe_ids ids = {0};
    uint8_t *back = NULL;
    size_t len = 0, cap = 0;
    zc_err err;
    if (bpe_encode(encoder, data, size, &ids, &err) ||
        bpe_decode(&vocab, ids.id, ids.n, &back, &len, &cap, &err) || len != size ||
        (size && memcmp(back, data, size)))
        abort(); /* every byte string is encodable and decodes back to itself */
    free(back);
    bpe_ids_free(&ids);
    return 0;
}

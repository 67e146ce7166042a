/* fuzz_bpe_vocab.c — fuzz target: a GPT-2 BPE vocabulary as `--vocab DIR` reads it. The input is
 * encoder.json, a NUL byte, then vocab.bpe (without a NUL: all of it is encoder.json, beside an
 * empty merge list). A vocabulary that loads must encode and decode a fixed text back to itself. */
#include <stdlib.h>
#include <string.h>

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
    const uint8_t *nul = memchr(data, 0, size);
    size_t n1 = nul ? (size_t)(nul - data) : size;
    char path[4300];
    fuzz_write("encoder.json", data, n1, path, sizeof path);
    if (nul)
        fuzz_write("vocab.bpe", nul + 1, size - n1 - 1, path, sizeof path);
    else
        fuzz_write("vocab.bpe", "#version: 0.2\n", 14, path, sizeof path);
    bpe_vocab v;
    zc_err err;
    if (bpe_vocab_load(&v, fuzz_dir(), true, &err))
        return 0;
    static const char text[] = "the weather in there, 1234 don't \xff\xc3 \xe4\xb8\x96 end";
    bpe_encoder *e;
    bpe_ids ids = {0};
    if (!bpe_encoder_create(&e, &v, &err)) {
        uint8_t *back = NULL;
        size_t len = 0, cap = 0;
        if (!bpe_encode(e, (const uint8_t *)text, sizeof text - 1, &ids, &err) &&
            !bpe_decode(&v, ids.id, ids.n, &back, &len, &cap, &err) &&
            (len != sizeof text - 1 || memcmp(back, text, len)))
            abort(); /* a loaded vocabulary lost bytes */
        free(back);
        bpe_ids_free(&ids);
        bpe_encoder_destroy(e);
    }
    bpe_vocab_free(&v);
    return 0;
}

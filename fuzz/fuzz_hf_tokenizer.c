/* fuzz_hf_tokenizer.c — fuzz target: a Hugging Face tokenizer.json as `--vocab DIR` reads it
 * (models/gpt2/hf_tokenizer.h). A tokenizer that loads must encode a fixed text (already NFC,
 * so any normalizer leaves it) and decode the ids back to it, with and without the special
 * tokens matched. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "models/gpt2/bpe_encode.h"
#include "models/gpt2/hf_tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[4300];
    fuzz_write("tokenizer.json", data, size, path, sizeof path);
    bpe_vocab v;
    zc_err err;
    if (hf_tokenizer_load(&v, path, &err))
        return 0;
    static const char text[] =
        "the weather in there, 1234 don't IT'S \xff\xc3 \xe4\xb8\x96\n\n end "
        "<|begin_of_text|><think>";
    for (int special = 0; special < 2; special++) {
        v.hf.match_special = special;
        bpe_encoder *e;
        bpe_ids ids = {0};
        if (bpe_encoder_create(&e, &v, &err))
            continue;
        uint8_t *back = NULL;
        size_t len = 0, cap = 0;
        if (!bpe_encode(e, (const uint8_t *)text, sizeof text - 1, &ids, &err) &&
            !bpe_decode(&v, ids.id, ids.n, &back, &len, &cap, &err) &&
            (len != sizeof text - 1 || memcmp(back, text, len)))
            abort(); /* a loaded tokenizer lost bytes */
        free(back);
        bpe_ids_free(&ids);
        bpe_encoder_destroy(e);
    }
    bpe_vocab_free(&v);
    return 0;
}

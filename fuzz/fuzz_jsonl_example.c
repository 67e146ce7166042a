/* fuzz_jsonl_example.c — fuzz target: any bytes as one line of `prepare --jsonl`
 * (cli/jsonl_example.h): the strict JSON parse, the example's checks, and its rendering in the
 * llama3 format (first byte 0 mod 3), the llama3.1 one with its dated system turn (1 mod 3), or
 * the chatml one with a default system message read from the template (2 mod 3), with a small
 * tokenizer that has both formats' markers (fuzz/vocab_chat/). A
 * line either is refused with a message or gives ids with one mask byte (0 or 1) each, ending
 * with the format's end-of-turn token (and chatml's "\n"). */
#include <stdlib.h>
#include <string.h>

#include "cli/jsonl_example.h"
#include "fuzz/fuzz.h"
#include "models/gpt2/hf_tokenizer.h"

static bpe_vocab vocab;
static bpe_encoder *encoder;
static chat_format format[3];

static void finish(void)
{
    for (int k = 0; k < 3; k++)
        chat_format_free(&format[k]);
    bpe_encoder_destroy(encoder);
    bpe_vocab_free(&vocab);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    zc_err err;
    const char *dir = ZEROC_SOURCE_DIR "/fuzz/vocab_chat";
    if (hf_tokenizer_load(&vocab, ZEROC_SOURCE_DIR "/fuzz/vocab_chat/tokenizer.json", &err) ||
        bpe_encoder_create(&encoder, &vocab, &err) ||
        chat_format_init(&format[0], "llama3", NULL, dir, &vocab, "--jsonl", &err) ||
        chat_format_init(&format[1], "llama3.1", "1 Jan 2025", dir, &vocab, "--jsonl", &err) ||
        chat_format_init(&format[2], NULL, NULL, dir, &vocab, "--jsonl", &err) ||
        format[2].kind != CHAT_CHATML || !format[2].default_system ||
        strcmp(format[2].default_system, "You are a fuzz target"))
        abort();
    atexit(finish);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const chat_format *f = &format[data[0] % 3];
    bpe_ids ids = {0};
    uint8_t *mask = NULL;
    size_t cap = 0;
    zc_err err;
    if (!jsonl_example(f, encoder, (const char *)data + 1, size - 1, "fuzz.jsonl", 1, &ids, &mask,
                       &cap, &err)) {
        const bool chatml = f->kind == CHAT_CHATML;
        const uint32_t last = chatml ? (uint32_t)f->im_end : (uint32_t)f->eot;
        const size_t n = ids.n;
        if (n < 2 || cap < n || ids.id[n - (chatml ? 2 : 1)] != last)
            abort();
        for (size_t i = 0; i < n; i++)
            if (mask[i] > 1)
                abort();
    } else if (!err.msg[0]) {
        abort(); /* a refusal always says why */
    }
    free(mask);
    bpe_ids_free(&ids);
    return 0;
}

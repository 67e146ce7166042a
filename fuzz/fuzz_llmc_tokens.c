/* fuzz_llmc_tokens.c — fuzz target: an llm.c token file, as `--data FILE` reads it: the
 * header's checks, then windows at the start and wrapping past the end, against a vocabulary of
 * 50257 (GPT-2's) so ids beyond it are refused. */
#include "fuzz/fuzz.h"
#include "models/gpt2/llmc_files.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[4300];
    fuzz_write("tokens.bin", data, size, path, sizeof path);
    llmc_tokens t;
    zc_err err;
    if (llmc_tokens_open(path, &t, &err))
        return 0;
    int ids[64];
    llmc_tokens_read(&t, 0, 64, ids, 50257, &err);
    llmc_tokens_read(&t, t.ntok - 1, 3, ids, 50257, &err);
    llmc_tokens_close(&t);
    return 0;
}

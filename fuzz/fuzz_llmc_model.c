/* fuzz_llmc_model.c — fuzz target: an llm.c GPT-2 model file, as `--init FILE` reads it: the
 * header's checks, then a few elements at the start and end of every tensor (what a rank of a
 * sharded run reads). */
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
    fuzz_write("model.bin", data, size, path, sizeof path);
    llmc_header h;
    zc_err err;
    if (llmc_ckpt_read_header(path, &h, &err))
        return 0;
    size_t sizes[LLMC_NTENSORS];
    llmc_tensor_sizes(&h, sizes);
    float v[4];
    for (int t = 0; t < LLMC_NTENSORS; t++) {
        size_t n = sizes[t] < 4 ? sizes[t] : 4;
        llmc_ckpt_read(path, &h, t, 0, n, v, &err);
        llmc_ckpt_read(path, &h, t, sizes[t] - n, n, v, &err);
    }
    return 0;
}

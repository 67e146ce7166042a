/* fuzz_hf.c — fuzz target: a Hugging Face directory (GPT-2's, or a Llama-family model_type's,
 * read by hf_decoder.c), as `--init DIR` reads its shape: the
 * input is a 2-byte little-endian length n, then n bytes of config.json, then the rest as
 * model.safetensors; hf_is_checkpoint and hf_is_zeroc_weights look at the file's header and
 * names, and hf_read_config reads config.json (dimensions under either name, the refused keys)
 * against the tensors the header lists. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fuzz/fuzz.h"
#include "models/gpt2/hf_files.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t n = (size_t)data[0] | (size_t)data[1] << 8;
    if (n > size - 2)
        n = size - 2;
    char dir[4300], path[4300];
    snprintf(dir, sizeof dir, "%s/hf", fuzz_dir());
    if (mkdir(dir, 0700) && errno != EEXIST)
        abort();
    fuzz_write("hf/config.json", data + 2, n, path, sizeof path);
    fuzz_write("hf/model.safetensors", data + 2 + n, size - 2 - n, path, sizeof path);
    zc_err err;
    gpt2_config cfg;
    hf_is_checkpoint(dir);
    hf_is_checkpoint(path);
    hf_is_zeroc_weights(path);
    hf_read_config(dir, &cfg, &err);
    hf_read_config(path, &cfg, &err);
    return 0;
}

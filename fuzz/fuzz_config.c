/* fuzz_config.c — fuzz target: a DeepSpeed-style JSON config, as `--config FILE` reads it, then
 * the checks and the batch resolution the trainer applies, and the effective configuration
 * written back out. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "zeroc/config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    zc_config cfg;
    zc_config_defaults(&cfg);
    zc_err err;
    if (!zc_config_load_string(&cfg, text, "fuzz.json", &err) &&
        !zc_config_resolve_batch(&cfg, 2, &err)) {
        char *json = zc_config_to_json(&cfg);
        zc_config back;
        zc_config_defaults(&back);
        /* what zeroc writes it reads back (the checkpoint's config travels this way) */
        if (json && zc_config_load_string(&back, json, "written", &err))
            abort();
        free(json);
    }
    free(text);
    return 0;
}

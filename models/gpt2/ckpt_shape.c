/* ckpt_shape.c — a GPT-2's shape from a zeroc checkpoint's manifest (ckpt_shape.h). */
#include <limits.h>

#include "models/gpt2/ckpt_shape.h"

zc_status gpt2_checkpoint_shape(zc_ckpt_reader *r, const char *dir, gpt2_config *gc, zc_err *err)
{
    struct {
        const char *key;
        int *field;
    } fields[] = {{"max_seq_len", &gc->max_seq_len},
                  {"vocab_size", &gc->vocab_size},
                  {"padded_vocab_size", &gc->padded_vocab_size},
                  {"num_layers", &gc->num_layers},
                  {"num_heads", &gc->num_heads},
                  {"channels", &gc->channels}};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        int64_t v;
        if (zc_ckpt_reader_client_int(r, fields[i].key, &v))
            return zc_err_set(err, ZC_EINVAL,
                              "%s: not a GPT-2 checkpoint of zeroc train (the manifest's client "
                              "has no integer %s)",
                              dir, fields[i].key);
        if (v < 1 || v > INT_MAX)
            return zc_err_set(err, ZC_EINVAL,
                              "%s/manifest.json: client.%s is %lld, expected 1 to %d", dir,
                              fields[i].key, (long long)v, INT_MAX);
        *fields[i].field = (int)v;
    }
    return ZC_OK;
}

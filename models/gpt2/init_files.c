/* init_files.c — a GPT-2's starting weights from an llm.c checkpoint or a Hugging Face GPT-2
 * (init_files.h). */
#include "models/gpt2/init_files.h"
#include "models/gpt2/hf_files.h"
#include "models/gpt2/llmc_files.h"
#include "zeroc/safetensors.h"

bool gpt2_is_init_file(const char *path)
{
    return !zc_safetensors_is_path(path) || hf_is_checkpoint(path);
}

zc_status gpt2_init_shape(const char *path, gpt2_config *cfg, zc_err *err)
{
    if (hf_is_checkpoint(path))
        return hf_read_config(path, cfg, err);
    llmc_header h;
    zc_status st = llmc_ckpt_read_header(path, &h, err);
    if (!st)
        *cfg = (gpt2_config){.max_seq_len = h.max_seq_len,
                             .vocab_size = h.vocab_size,
                             .padded_vocab_size = h.padded_vocab_size,
                             .num_layers = h.num_layers,
                             .num_heads = h.num_heads,
                             .channels = h.channels};
    return st;
}

zc_status gpt2_load_init(gpt2_model *m, const char *path, zc_err *err)
{
    return hf_is_checkpoint(path) ? hf_load(gpt2_engine(m), path, gpt2_get_config(m), err)
                                  : gpt2_load_llmc(m, path, err);
}

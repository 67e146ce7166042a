/* sample.c — `zeroc sample --init FILE`: loads an llm.c GPT-2 checkpoint on one rank (stage 0)
 * and generates text: temperature, top-k, seed, prompt, length. Byte-level models (vocabulary
 * 256) read and print text; others take and print token ids. */
#include <stdlib.h>

#include "cli/args.h"
#include "cli/byte_text.h"
#include "cli/commands.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/gpt2_sample.h"
#include "models/gpt2/llmc_files.h"
#include "zeroc/engine.h"

int cmd_sample(zc_comm *comm, int argc, char **argv)
{
    const char *init = NULL, *prompt = "\n";
    int length = 256, top_k = 40;
    double temperature = 1.0;
    int64_t seed = 42;
    arg_spec specs[] = {
        {"--init", ARG_STR, &init, NULL, "llm.c GPT-2 checkpoint (required)", NULL},
        {"--prompt", ARG_STR, &prompt, NULL,
         "text to continue (byte-level models) or comma-separated token ids (default: newline)",
         NULL},
        {"--length", ARG_INT, &length, NULL, "tokens to generate (default 256)", NULL},
        {"--temperature", ARG_DOUBLE, &temperature, NULL, "softmax temperature > 0 (default 1)",
         NULL},
        {"--top-k", ARG_INT, &top_k, NULL, "sample among the k most likely, 0 = all (default 40)",
         NULL},
        {"--seed", ARG_I64, &seed, NULL, "sampling seed (default 42)", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    bool helped;
    zc_status st = args_parse_command(specs, nspecs, argc, argv, 2, "zeroc sample --init FILE [flags]", zc_comm_rank(comm) == 0,
                                      &helped, &err);
    if (helped)
        return 0;
    if (!st && !init)
        st = zc_err_set(&err, ZC_EINVAL, "zeroc sample needs --init FILE (an llm.c checkpoint)");
    if (!st && (length < 1 || top_k < 0 || !(temperature > 0) || seed < 0))
        st = zc_err_set(&err, ZC_EINVAL, "--length must be >= 1, --top-k >= 0, --temperature > 0 "
                        "and --seed >= 0");
    if (!st && zc_comm_size(comm) != 1)
        st = zc_err_set(&err, ZC_EINVAL, "zeroc sample runs on one rank (got %d)",
                        zc_comm_size(comm));
    llmc_header h;
    if (!st)
        st = llmc_ckpt_read_header(init, &h, &err);
    int *ptok = NULL, np = 0;
    if (!st)
        st = byte_text_parse_prompt(prompt, h.vocab_size, &ptok, &np, &err);
    if (st)
        return cli_fail(comm, &err, true);

    zc_config cfg;
    zc_config_defaults(&cfg);
    zc_mem *mem = zc_mem_create();
    zc_engine *e = NULL;
    zc_gpt2 *m = NULL;
    zc_gpt2_config gc = {h.max_seq_len, h.vocab_size, h.padded_vocab_size, h.num_layers,
                         h.num_heads, h.channels};
    int T = np + length < h.max_seq_len ? np + length : h.max_seq_len;
    int *out = malloc((size_t)length * sizeof(int));
    if (!out)
        st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = zc_engine_create(&e, &cfg, comm, mem, &err);
    if (!st)
        st = zc_gpt2_create(&m, e, mem, &gc, 1, T, false, &err);
    if (!st)
        st = zc_engine_finalize(e, &err);
    if (!st)
        st = zc_gpt2_load_llmc(m, init, &err);
    zc_gpt2_sampling how = {.temperature = (float)temperature, .top_k = top_k,
                            .seed = (uint64_t)seed};
    if (!st)
        st = zc_gpt2_generate(m, ptok, np, length, &how, out, &err);
    if (!st) {
        byte_text_print(stdout, ptok, np, h.vocab_size);
        if (h.vocab_size != BYTE_VOCAB)
            fputc(' ', stdout);
        byte_text_print(stdout, out, length, h.vocab_size);
        fputc('\n', stdout);
    }
    free(out);
    free(ptok);
    zc_gpt2_destroy(m);
    zc_engine_destroy(e);
    zc_mem_destroy(mem);
    return st ? cli_fail(comm, &err, true) : 0;
}

/* sample.c — `zeroc sample --init FILE`: loads the decoder (an llm.c GPT-2 checkpoint, or a
 * Hugging Face GPT-2 or Llama-family directory: gpt2_init_resolve) on one rank (stage 0) and
 * generates text: temperature, top-k, seed, prompt, length. Byte-level models (vocabulary 256) read
 * and print text; BPE models read and print text with
 * --vocab (GPT-2's tokenizer: encoder.json + vocab.bpe, or a Hugging Face tokenizer.json, or
 * llm.c's gpt2_tokenizer.bin for printing only), token ids without; they start from <|endoftext|>
 * when no --prompt is given. zeroc's own checkpoints and weights files are refused saying how to
 * export them (gpt2_init_not_zeroc_output).
 *
 * --chat TEXT prompts a chat model as Hugging Face's apply_chat_template(messages,
 * add_generation_prompt=True) does: one user turn (after --system's, or the template's default
 * system message) and the assistant's header, rendered by chat_format.h's built-in formats from
 * --vocab DIR's tokenizer_config.json (or --chat-format); generation stops at the format's
 * end-of-turn token, and only the answer is printed. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/byte_text.h"
#include "cli/chat_format.h"
#include "cli/commands.h"
#include "cli/jsonl_example.h"
#include "cli/fail.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/bpe_encode.h"
#include "models/gpt2/gpt2_sample.h"
#include "models/gpt2/hf_safetensors.h"
#include "models/gpt2/init_files.h"
#include "models/gpt2/peft_files.h"
#include "models/gpt2/tokenizer_files.h"
#include "zeroc/engine.h"

#define GPT2_EOT 50256 /* GPT-2's <|endoftext|> */

/* The prompt of a BPE model (vocabulary > 256) when --prompt is not given: <|endoftext|>, as
 * `train --sample-every` samples — the tokenizer's (eot ≥ 0, from --vocab), else GPT-2's 50256
 * when the vocabulary holds it, else token 0. *out is malloc'd. */
static zc_status default_bpe_prompt(int vocab, int eot, int **out, int *n, zc_err *err)
{
    if (!(*out = malloc(sizeof **out)))
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    **out = eot >= 0 ? eot : vocab > GPT2_EOT ? GPT2_EOT : 0;
    *n = 1;
    return ZC_OK;
}

/* --messages FILE: the conversation ({"messages": [...]}, as a line of prepare --jsonl) into
 * msgs (at most cap; strings in *root, which the caller deletes); the last must be the user's. */
static zc_status read_messages(const char *path, cJSON **root, chat_message *msgs, int cap, int *n,
                               zc_err *err)
{
    char where[4200];
    snprintf(where, sizeof where, "--messages %s", path);
    zc_status st = hf_read_json(path, root, err);
    if (st)
        return cli_err_flag(st, "--messages", err);
    if (!cJSON_GetObjectItemCaseSensitive(*root, "messages") && cJSON_IsObject(*root))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: expected {\"messages\": [{\"role\": ..., \"content\": ...}, "
                          "...]}, the conversation so far",
                          where);
    if ((st = jsonl_messages(*root, where, msgs, cap, n, err)))
        return st;
    if (strcmp(msgs[*n - 1].role, "user"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: the last message is the %s's; the model answers the user's last "
                          "message, so the conversation must end with one",
                          where, msgs[*n - 1].role);
    return ZC_OK;
}

/* The chat prompt: the messages (--system's, then the user's --chat; or --messages') rendered
 * by the format of dir's tokenizer_config.json (or --chat-format's) with the assistant's
 * generation header; *stop is the format's end-of-turn id. *out is malloc'd. */
static zc_status chat_prompt(const bpe_vocab *v, const char *dir, const char *fmt, const char *date,
                             const chat_message *msgs, int nm, bool system, int **out, int *n,
                             int *stop, zc_err *err)
{
    chat_format f;
    zc_status st = chat_format_init(&f, fmt, date, dir, v, "--chat", err);
    if (st)
        return st;
    bpe_encoder *e = NULL;
    bpe_ids ids = {0};
    st = bpe_encoder_create(&e, v, err);
    if (!st)
        st = chat_render_prompt(&f, e, msgs, nm, &ids, err);
    if (!st && !(*out = malloc(ids.n * sizeof **out)))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (size_t i = 0; !st && i < ids.n; i++)
        (*out)[i] = (int)ids.id[i];
    *n = (int)ids.n;
    *stop = chat_format_end_of_turn(&f);
    char notes[8192]; /* the template's default system message unless --system: as prepare's */
    chat_format_notes(&f, !system, notes, sizeof notes);
    if (!st)
        fprintf(stderr, "sample: chat prompt in the %s format (%d tokens%s)\n",
                chat_format_name(&f), *n, notes);
    bpe_ids_free(&ids);
    bpe_encoder_destroy(e);
    chat_format_free(&f);
    return st;
}

int cmd_sample(zc_comm *comm, int argc, char **argv)
{
    const char *init = NULL, *prompt = NULL, *vocab_path = NULL, *chat = NULL, *system = NULL,
               *chat_fmt = NULL, *chat_date = NULL, *lora_init = NULL, *messages = NULL;
    bool print_ids = false;
    int length = 256, top_k = 40;
    double temperature = 1.0;
    int64_t seed = 42;
    arg_spec specs[] = {
        {"--init", ARG_STR, &init, NULL,
         "llm.c GPT-2 checkpoint or Hugging Face GPT-2 directory (required); a zeroc checkpoint "
         "is exported first: zeroc ckpt export DIR --format llmc --out FILE",
         NULL},
        {"--lora-init", ARG_STR, &lora_init, NULL,
         "a PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors: what "
         "zeroc "
         "ckpt export --format peft writes) applied over --init's model",
         NULL},
        {"--prompt", ARG_STR, &prompt, NULL,
         "text to continue (byte-level models, BPE with --vocab DIR) or comma-separated token ids "
         "(default: a newline for byte-level models; <|endoftext|> for BPE models, 50256 or "
         "--vocab's, as train's samples)",
         NULL},
        {"--vocab", ARG_STR, &vocab_path, NULL,
         "BPE models: tokenizer directory (GPT-2's encoder.json + vocab.bpe, or a Hugging Face "
         "tokenizer.json) to read the prompt as text and print text; or gpt2_tokenizer.bin "
         "(prints text, the prompt is ids)",
         NULL},
        {"--length", ARG_INT, &length, NULL,
         "tokens to generate (default 256). The context is the last max_seq_len tokens (the "
         "model's positions): up to there each token costs one position over a key/value cache; "
         "past it the window slides and each token re-runs its whole context (GPT-2 124M on one "
         "core: ~30 ms a token within the context, 1.1-1.5 s past 1024)",
         NULL},
        {"--temperature", ARG_DOUBLE, &temperature, NULL, "softmax temperature > 0 (default 1)",
         NULL},
        {"--top-k", ARG_INT, &top_k, NULL,
         "sample among the k most likely (ties with the k-th included), 0 = all (default 40)",
         NULL},
        {"--seed", ARG_I64, &seed, NULL, "sampling seed (default 42)", NULL},
        {"--chat", ARG_STR, &chat, NULL,
         "a user message to a chat model, instead of --prompt: rendered as Hugging Face's "
         "apply_chat_template(messages, add_generation_prompt=True) with the chat template of "
         "--vocab DIR's tokenizer_config.json (built-in formats: llama3 for Llama 3, llama3.1 for "
         "Llama 3.1 and 3.2, chatml for "
         "Qwen2.5 and SmolLM2, with the template's default system message); generation stops at "
         "the end of the assistant's turn (<|eot_id|>, <|im_end|>) or --length, and only the "
         "answer is printed",
         NULL},
        {"--messages", ARG_STR, &messages, NULL,
         "a conversation for a chat model, instead of --chat: a JSON file {\"messages\": "
         "[{\"role\": \"system\"|\"user\"|\"assistant\", \"content\": \"...\"}, ...]} "
         "(a line of prepare --jsonl), ending with the user's message; the model writes the next "
         "assistant turn, rendered and stopped as --chat's",
         NULL},
        {"--system", ARG_STR, &system, NULL,
         "with --chat: a system message before the user's (instead of the template's default)",
         NULL},
        {"--chat-format", ARG_STR, &chat_fmt, NULL,
         "with --chat or --messages: llama3, llama3.1 or chatml, instead of the format recognised "
         "from tokenizer_config.json's chat_template",
         NULL},
        {"--chat-date", ARG_STR, &chat_date, NULL,
         "with --chat or --messages, llama3.1: the system header's \"Today Date\" (default: the "
         "template's; one that asks strftime_now for it: today's, as transformers)",
         NULL},
        {"--print-prompt-ids", ARG_BOOL, &print_ids, NULL,
         "print the prompt's token ids, comma-separated, to stderr before generating (what the "
         "model is fed: for --chat, the rendered template)",
         NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    bool helped;
    zc_status st =
        args_parse_command(specs, nspecs, argc, argv, 2, "zeroc sample --init FILE [flags]",
                           zc_comm_rank(comm) == 0, &helped, &err);
    if (helped)
        return 0;
    if (!st && !init)
        st = zc_err_set(
            &err, ZC_EINVAL,
            "zeroc sample needs --init FILE (an llm.c checkpoint or a Hugging Face GPT-2)");
    if (!st && (length < 1 || length > GPT2_MAX_GENERATE))
        st = zc_err_set(&err, ZC_EINVAL, "--length must be in [1, %d], got %d", GPT2_MAX_GENERATE,
                        length);
    /* the model samples in float with denormals flushed to zero: a temperature must be a
     * normal float */
    if (!st && !(temperature >= (double)FLT_MIN && temperature <= (double)FLT_MAX))
        st = zc_err_set(&err, ZC_EINVAL, "--temperature must be a normal float, %g to %g, got %g",
                        (double)FLT_MIN, (double)FLT_MAX, temperature);
    if (!st && (top_k < 0 || seed < 0))
        st = zc_err_set(&err, ZC_EINVAL, "--top-k and --seed must be >= 0");
    const char *chat_flag = chat ? "--chat" : "--messages";
    if (!st && (chat || messages) && prompt)
        st = zc_err_set(&err, ZC_EINVAL,
                        "%s and --prompt: give one (%s a chat prompt, --prompt text to continue)",
                        chat_flag, chat ? "--chat is the user's message of" : "--messages is");
    if (!st && chat && messages)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--chat and --messages: give one (--chat is one user message, --messages "
                        "a whole conversation)");
    if (!st && messages && system)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--system with --messages: put the system message first in the file's "
                        "messages");
    if (!st && !chat && !messages && (system || chat_fmt || chat_date))
        st = zc_err_set(&err, ZC_EINVAL, "%s needs --chat (the user's message)%s",
                        system     ? "--system"
                        : chat_fmt ? "--chat-format"
                                   : "--chat-date",
                        system ? "" : " or --messages");
    struct stat sb;
    const bool chatting = chat || messages;
    if (!st && chatting && (!vocab_path || stat(vocab_path, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        st = zc_err_set(&err, ZC_EINVAL,
                        "%s needs --vocab DIR, the model's tokenizer directory "
                        "(tokenizer.json, and tokenizer_config.json with its chat_template)%s%s",
                        chat_flag, vocab_path ? "; got " : "", vocab_path ? vocab_path : "");
    /* the conversation, read before the model is: a bad file is refused at once */
    cJSON *conv = NULL;
    chat_message *msgs = st ? NULL : malloc(JSONL_MAX_MESSAGES * sizeof *msgs);
    int nm = 0;
    if (!st && !msgs)
        st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
    if (!st && messages)
        st = read_messages(messages, &conv, msgs, JSONL_MAX_MESSAGES, &nm, &err);
    if (!st && chat) {
        if (system)
            msgs[nm++] = (chat_message){"system", system, strlen(system)};
        msgs[nm++] = (chat_message){"user", chat, strlen(chat)};
    }
    if (!st && zc_comm_size(comm) != 1)
        st = zc_err_set(&err, ZC_EINVAL, "zeroc sample runs on one rank (got %d)",
                        zc_comm_size(comm));
    gpt2_config h = {0};
    gpt2_init in;
    if (!st)
        gpt2_init_resolve(init, &in);
    if (!st && !in.decoder && in.st) /* one of zeroc's own outputs: said what it is */
        st = (err = in.err, in.st);
    if (!st && !in.decoder)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--init %s: expected an llm.c GPT-2 checkpoint or a Hugging Face model (a "
                        "directory with config.json and model.safetensors)",
                        init);
    if (!st && in.st) /* a file that cannot be read is named with its flag */
        st = cli_err_flag((err = in.err, in.st), "--init", &err);
    if (!st)
        h = in.cfg;
    if (!st && lora_init)
        st = cli_err_flag(peft_read_config(lora_init, !h.family[0], &h.lora, &err), "--lora-init",
                          &err);
    bpe_vocab vocab;
    bool have_vocab = false;
    if (!st && vocab_path && h.vocab_size == BYTE_VOCAB)
        st =
            zc_err_set(&err, ZC_EINVAL,
                       "--vocab: %s is a byte-level model (vocabulary 256), "
                       "it needs no tokenizer%s",
                       init, chatting ? " (and a chat prompt needs a chat model's tokenizer)" : "");
    if (!st && vocab_path)
        have_vocab = !(st = tokenizer_files_load(&vocab, vocab_path, false, &err));
    /* a Hugging Face model's embedding may have rows past its tokenizer's ids (Qwen2.5:
     * 151,936 rows, 151,665 tokens): padding, as llm.c's padded vocabulary */
    if (!st && have_vocab && vocab.n != h.vocab_size && !(vocab.hf.on && vocab.n < h.vocab_size))
        st = zc_err_set(&err, ZC_EINVAL,
                        "--vocab %s has %d tokens but the model %s has a "
                        "vocabulary of %d",
                        vocab.source, vocab.n, init, h.vocab_size);
    if (!st && chatting && !vocab.hf.on)
        st = zc_err_set(&err, ZC_EINVAL,
                        "%s: --vocab %s holds GPT-2's tokenizer files, not a Hugging Face "
                        "tokenizer.json with a chat template's special tokens",
                        chat_flag, vocab_path);
    int *ptok = NULL, np = 0, stop = -1;
    if (!st && chatting) {
        const bool sys = system || (nm && !strcmp(msgs[0].role, "system"));
        st = chat_prompt(&vocab, vocab_path, chat_fmt, chat_date, msgs, nm, sys, &ptok, &np, &stop,
                         &err);
    } else if (!st && !prompt && h.vocab_size != BYTE_VOCAB) {
        st = default_bpe_prompt(h.vocab_size, have_vocab ? vocab.eot : -1, &ptok, &np, &err);
    } else if (!st && have_vocab && vocab.can_encode) {
        bpe_encoder *enc = NULL;
        bpe_ids ids = {0};
        st = bpe_encoder_create(&enc, &vocab, &err);
        if (!st)
            st = bpe_encode(enc, (const uint8_t *)prompt, strlen(prompt), &ids, &err);
        if (!st && ids.n == 0)
            st = zc_err_set(&err, ZC_EINVAL, "--prompt: empty prompt");
        if (!st && !(ptok = malloc(ids.n * sizeof *ptok)))
            st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
        for (size_t i = 0; !st && i < ids.n; i++)
            ptok[i] = (int)ids.id[i];
        np = (int)ids.n;
        bpe_ids_free(&ids);
        bpe_encoder_destroy(enc);
    } else if (!st) {
        st = byte_text_parse_prompt(prompt ? prompt : "\n", h.vocab_size, &ptok, &np, &err);
    }
    free(msgs); /* the prompt holds the conversation now */
    cJSON_Delete(conv);
    if (!st && print_ids) {
        fprintf(stderr, "sample: prompt ids (%d): ", np);
        for (int i = 0; i < np; i++)
            fprintf(stderr, "%s%d", i ? "," : "", ptok[i]);
        fputc('\n', stderr);
    }
    if (st && have_vocab)
        bpe_vocab_free(&vocab);
    if (st) {
        free(ptok);
        return cli_fail(comm, &err, true);
    }

    zc_config cfg;
    zc_config_defaults(&cfg);
    zc_mem *mem = zc_mem_create();
    zc_engine *e = NULL;
    gpt2_model *m = NULL;
    gpt2_config gc = h;
    int T = length < h.max_seq_len - np ? np + length : h.max_seq_len; /* no int overflow */
    int *out = malloc((size_t)length * sizeof(int));
    if (!out)
        st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = zc_engine_create(&e, &cfg, comm, mem, &err);
    if (!st)
        st = gpt2_create(&m, e, mem, &gc, 1, T, false, &err);
    if (!st)
        st = zc_engine_finalize(e, &err);
    if (!st)
        st = cli_err_flag(gpt2_load_init(m, init, &err), "--init", &err);
    if (!st && lora_init)
        st = cli_err_flag(peft_load(e, lora_init, &gc, &err), "--lora-init", &err);
    gpt2_sampling how = {.temperature = (float)temperature, .top_k = top_k, .seed = (uint64_t)seed};
    int ngen = 0;
    if (!st)
        st = gpt2_generate_until(m, ptok, np, length, &how, stop, out, &ngen, &err);
    /* a chat prints the answer: what was generated, without the end-of-turn token */
    const bool ended = stop >= 0 && ngen > 0 && out[ngen - 1] == stop;
    const int from = chatting ? np : 0, upto = np + (ended ? ngen - 1 : ngen);
    if (!st && chatting && !ended)
        fprintf(stderr, "sample: no end of turn within --length %d tokens: the answer is cut\n",
                length);
    if (!st && have_vocab) {
        uint8_t *text = NULL;
        size_t len = 0, cap = 0;
        uint32_t *all = malloc(((size_t)np + (size_t)length) * sizeof *all);
        if (!all)
            st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
        size_t nall = 0, padding = 0; /* generated ids past the tokenizer's are left out */
        for (int i = from; !st && i < upto; i++) {
            uint32_t id = (uint32_t)(i < np ? ptok[i] : out[i - np]);
            if (id < (uint32_t)vocab.n)
                all[nall++] = id;
            else
                padding++;
        }
        if (!st)
            st = bpe_decode(&vocab, all, nall, &text, &len, &cap, &err);
        if (!st) {
            fwrite(text, 1, len, stdout);
            fputc('\n', stdout);
        }
        if (!st && padding)
            fprintf(stderr,
                    "sample: %zu generated id%s past the tokenizer's %d tokens (the model's "
                    "padding rows) left out of the text\n",
                    padding, padding > 1 ? "s" : "", vocab.n);
        free(all);
        free(text);
    } else if (!st) {
        byte_text_print(stdout, ptok, np, h.vocab_size);
        if (h.vocab_size != BYTE_VOCAB)
            fputc(' ', stdout);
        byte_text_print(stdout, out, length, h.vocab_size);
        fputc('\n', stdout);
    }
    if (have_vocab)
        bpe_vocab_free(&vocab);
    free(out);
    free(ptok);
    gpt2_destroy(m);
    zc_engine_destroy(e);
    zc_mem_destroy(mem);
    return st ? cli_fail(comm, &err, true) : 0;
}

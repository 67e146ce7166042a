/* tokenizer_files.h — what a --vocab path holds, and loading it: a Hugging Face tokenizer.json
 * (hf_tokenizer.h; preferred in a directory that has one) or GPT-2's own files (bpe_vocab.h:
 * encoder.json + vocab.bpe, vocab.json + merges.txt, llm.c's gpt2_tokenizer.bin). Either fills
 * one bpe_vocab, encoded and decoded alike (bpe_encode.h). The one door the commands use, so
 * neither loader needs to know the other.
 *
 *     bpe_vocab v;
 *     if (tokenizer_files_load(&v, "Llama-3.2-1B/", true, &err)) ...  // its tokenizer.json
 */
#ifndef ZEROC_MODELS_GPT2_TOKENIZER_FILES_H
#define ZEROC_MODELS_GPT2_TOKENIZER_FILES_H

#include <stdbool.h>

#include "models/gpt2/bpe_vocab.h"

/* A directory holding tokenizer.json, or the path of a .json file: hf_tokenizer_load; anything
 * else: bpe_vocab_load (need_encode as there). On failure v holds nothing. */
zc_status tokenizer_files_load(bpe_vocab *v, const char *path, bool need_encode, zc_err *err);

#endif

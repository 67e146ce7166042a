/* hf_tokenizer.h — Hugging Face tokenizers' tokenizer.json, for the byte-level BPE tokenizers of
 * Llama 3, Qwen2.5 and SmolLM2 (and GPT-2 in that format), read into the same bpe_vocab that
 * GPT-2's files fill, so one encoder (bpe_encode.h) and one decoder serve both. Why not a regex
 * engine and a general tokenizer.json interpreter: the few tokenizers people bring differ only in
 * their split pattern, and a scanner per known pattern (bpe_pretok.h) is exact, fast and needs no
 * dependency; everything else is refused by name rather than half-supported.
 *
 * What is read (every other value of these keys is refused, naming the file, the key and the
 * value):
 *
 *   model.type               "BPE" (absent: BPE); model.vocab {token: id}; model.merges as
 *                            "left right" strings or [left, right] pairs, rank = order;
 *                            model.ignore_merges (a piece that is a token is that token, else
 *                            it merges from its bytes); dropout null, no subword prefix/suffix,
 *                            byte_fallback false. Tokens are written through GPT-2's
 *                            byte-to-unicode map, all 256 bytes must be tokens, and both sides
 *                            of a merge and their concatenation must be tokens.
 *   normalizer               null, NFC, or a Sequence of NFC (utf8proc): each run of valid text.
 *   pre_tokenizer            ByteLevel with use_regex true (GPT-2's pattern: SmolLM2, GPT-2), or
 *                            a Sequence of a Split (behavior Isolated, invert false) whose Regex
 *                            is Llama 3's, Qwen2's or GPT-2's pattern, then ByteLevel with
 *                            use_regex false; add_prefix_space false.
 *   decoder                  null or ByteLevel (tokens' bytes, concatenated).
 *   added_tokens             [{id, content, special, lstrip/rstrip/single_word false}]: an id
 *                            beyond model.vocab (Llama 3's 128000..128255) or the same token as
 *                            model.vocab's (GPT-2's <|endoftext|>). Decoding gives the content.
 *   post_processor, truncation, padding: ignored (prepare puts the document marks itself).
 *
 * Added tokens in the text: a non-special added token (Qwen3's <think>) is matched wherever its
 * content appears, as Hugging Face's encode does; a special one (<|begin_of_text|>, <|im_end|>)
 * only when v->hf.match_special is set (tokenize --special), else it is ordinary text — as
 * transformers does with split_special_tokens=True, and as tiktoken's encode_ordinary treats
 * GPT-2's <|endoftext|>: text from the wild cannot inject control tokens into training data.
 * Matching is leftmost, longest first, on the raw text, before normalization.
 *
 * Invalid UTF-8: Hugging Face's tokenizers take only Unicode text; zeroc cuts the text at each
 * byte that does not begin a well-formed UTF-8 sequence, encodes the valid runs as Hugging Face
 * encodes them and each such byte as its byte-level token (as for GPT-2, bpe_pretok.h), so every
 * byte string comes back unchanged from decoding its tokens.
 *
 * Document marks (tokenizer_config.json beside tokenizer.json, optional): bos_token and
 * eos_token (a string, or an object with "content"; null = none) name tokens. prepare puts BOS
 * before each document when add_bos_token is true, or, without that key, when bos_token is set
 * (Llama 3's <|begin_of_text|>, as its post-processor and llm.c's Llama 3 data script do); and
 * EOS after each document when add_eos_token is true, or, without that key, when no BOS is put
 * and eos_token is set (Qwen2.5's <|endoftext|>: a separator between documents either way).
 * v->eot is then the BOS put (else the EOS, else <|endoftext|> when the vocabulary has one):
 * sample's default prompt.
 *
 *     bpe_vocab v;
 *     if (hf_tokenizer_load(&v, "Llama-3.2-1B/tokenizer.json", &err)) ...
 *     // v.n = 128256, v.hf.bos = 128000, v.hf.add_bos; encode as any bpe_vocab
 */
#ifndef ZEROC_MODELS_GPT2_HF_TOKENIZER_H
#define ZEROC_MODELS_GPT2_HF_TOKENIZER_H

#include "models/gpt2/bpe_vocab.h"
#include "zeroc/status.h"

/* The split patterns recognised in a Split pre-tokenizer, as tokenizer.json spells them. */
#define HF_REGEX_LLAMA3                                                                            \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "                     \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define HF_REGEX_QWEN2                                                                             \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                          \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define HF_REGEX_GPT2                                                                              \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

/* Loads the tokenizer.json at json_path (and the tokenizer_config.json beside it, when there)
 * into v (which it initialises; v->can_encode is set). ZC_EIO for a missing or unreadable file,
 * ZC_EINVAL for content that is malformed or not supported (the message names the file, the
 * key and the value), ZC_ENOMEM. On failure v holds nothing. */
zc_status hf_tokenizer_load(bpe_vocab *v, const char *json_path, zc_err *err);

#endif

/* chat_format.h — chat templates as named built-in formats, for `zeroc prepare --jsonl`: one
 * conversation becomes token ids and a loss mask, as Hugging Face's apply_chat_template renders
 * it and TRL's assistant_only_loss masks it; and for `zeroc sample --chat`: a conversation
 * becomes the prompt apply_chat_template(messages, add_generation_prompt=True) renders. Why
 * built-in formats and not a Jinja interpreter: the families zeroc trains (Llama 3, 3.1, 3.2,
 * Qwen2.5, SmolLM2) use three layouts; recognising them and refusing the rest by name is exact,
 * where a partial Jinja would be silently wrong.
 *
 *   llama3   Llama 3's template (Meta-Llama-3-*-Instruct's tokenizer_config.json):
 *            <|begin_of_text|> once, then per message
 *            <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>
 *            with CONTENT trimmed of leading and trailing white space (the template's | trim,
 *            Python's str.strip). chat_render adds no generation prompt after the last
 *            message; chat_render_prompt adds <|start_header_id|>assistant<|end_header_id|>\n\n.
 *   llama3.1 Llama 3.1's and 3.2's template (Llama-3.1-*-Instruct, the text models of
 *            Llama-3.2-*-Instruct: 1B, 3B; not 3.2 Vision's, which does not trim): llama3,
 *            but always a system turn first, <|start_header_id|>system<|end_header_id|>\n\n
 *            "Cutting Knowledge Date: December 2023\nToday Date: DATE\n\n" then the first
 *            message's content when it is a system message (trimmed; else nothing), <|eot_id|>.
 *            The cutoff is read from the template; DATE is --chat-date's, else the template's:
 *            its literal default (3.1: "26 Jul 2024"), or where it calls strftime_now (3.2)
 *            today's local date in the format it passes ("%d %b %Y": 28 Nov 2026), as
 *            transformers renders it. Tools are not
 *            rendered (no tools are given: the template's branches for them are not taken).
 *   chatml   Qwen2.5 and SmolLM2: per message <|im_start|>ROLE\nCONTENT<|im_end|>\n. When the
 *            first message is not a system message, the template's default system message
 *            comes first (Qwen2.5: "You are Qwen, created by Alibaba Cloud. You are a helpful
 *            assistant."; SmolLM2-Instruct: "You are a helpful AI assistant named SmolLM,
 *            trained by Hugging Face"), read from the template itself; a template without one
 *            adds none. chat_render_prompt adds <|im_start|>assistant\n after the last message.
 *
 * Recognising tokenizer_config.json's chat_template: one holding <|start_header_id|>,
 * <|end_header_id|> and <|eot_id|> is llama3, or llama3.1 when it holds "Cutting Knowledge
 * Date: " (its dated system header); one
 * holding <|im_start|> and <|im_end|> is chatml, unless it renders reasoning (<think>: Qwen3).
 * Anything else, or no template, is refused unless --chat-format names the format.
 *
 * Tokens: the template's markers are their special ids; the text between two markers is encoded
 * as one piece, as Hugging Face splits the rendered text at special tokens first; special
 * tokens' text inside a message's content stays ordinary text (it cannot inject markers).
 *
 * The mask (TRL's assistant_only_loss, Hugging Face's {% generation %} spans): an assistant
 * message's content tokens and its end-of-turn token (<|eot_id|>, <|im_end|>) are 1; everything
 * else (BOS, headers, system and user turns, the \n after <|im_end|>) is 0. A token that spans
 * the header's last bytes and the content's first (content starting with a newline) counts, as
 * Hugging Face's char_to_token mask counts it. */
#ifndef ZEROC_CLI_CHAT_FORMAT_H
#define ZEROC_CLI_CHAT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/gpt2/bpe_encode.h"
#include "zeroc/status.h"

typedef enum { CHAT_LLAMA3 = 1, CHAT_LLAMA31, CHAT_CHATML } chat_kind;

typedef struct {
    chat_kind kind;
    char *default_system; /* chatml: the template's default system message, or NULL */
    /* llama3.1: the system header's lines — "Cutting Knowledge Date: <cutoff>\nToday Date:
     * <date>\n\n" (malloc'd) — and where the date came from, for the commands' lines */
    char *dated_header;
    const char *date_from;
    /* special ids: llama3 bos, start_header, end_header, eot; chatml im_start, im_end */
    int bos, start_header, end_header, eot, im_start, im_end;
    const bpe_vocab *v; /* the tokenizer, outliving the format */
} chat_format;

typedef struct {
    const char *role; /* "system", "user" or "assistant" */
    const char *content;
    size_t len;
} chat_message;

/* Chooses the format: `flag` ("llama3", "llama3.1", "chatml"; NULL: from
 * dir/tokenizer_config.json's chat_template) and finds its special tokens in v. The default
 * system message (chatml) and the cutoff and default date (llama3.1) are read from the template
 * when there is one; `date` (--chat-date; NULL: the template's) is llama3.1's and refused for
 * the others. Errors name the file or the flag, after `what` (the command's flag that needs the
 * format: "--jsonl", "--chat"). */
zc_status chat_format_init(chat_format *f, const char *flag, const char *date, const char *dir,
                           const bpe_vocab *v, const char *what, zc_err *err);
void chat_format_free(chat_format *f);
/* The format's name ("llama3", "llama3.1", "chatml"). */
const char *chat_format_name(const chat_format *f);
/* What the rendering adds that the conversation does not say, for the commands' lines: ",
 * default system message "…"" (chatml's, where `default_system` says it is used) and ", system
 * header dated "…": <where from>" (llama3.1's); "" for neither. */
void chat_format_notes(const chat_format *f, bool default_system, char *out, size_t cap);

/* Appends the tokens of one conversation to ids and its mask bytes to *mask (realloc'd to
 * ids->n entries, *mask_cap its capacity; mask NULL: no mask). */
zc_status chat_render(const chat_format *f, bpe_encoder *e, const chat_message *msgs, int n,
                      bpe_ids *ids, uint8_t **mask, size_t *mask_cap, zc_err *err);
/* Appends the prompt for the assistant's answer to the conversation: chat_render's tokens (no
 * mask) then the assistant's generation header, as apply_chat_template(messages,
 * add_generation_prompt=True) renders it. */
zc_status chat_render_prompt(const chat_format *f, bpe_encoder *e, const chat_message *msgs, int n,
                             bpe_ids *ids, zc_err *err);
/* The id that ends an assistant's turn: llama3, llama3.1 <|eot_id|>; chatml <|im_end|>. */
int chat_format_end_of_turn(const chat_format *f);

#endif

/* jsonl_example.h — one line of instruction data (`zeroc prepare --jsonl`) into token ids and
 * its loss mask: the JSON checked, its messages rendered with a chat format (chat_format.h). Its
 * own file so that the fuzz target (fuzz/fuzz_jsonl_example.c) runs exactly what prepare runs on
 * each line, without prepare's files.
 *
 * A line is a JSON object with either
 *   "prompt" and "completion" (strings): a user turn, then an assistant turn; or
 *   "messages": a non-empty array of {"role": "system"|"user"|"assistant", "content": string}
 *               (at most 4096 messages).
 * Other keys are ignored; both forms in one line, a key given twice, or anything else is
 * refused, naming the file, the line and the key, with what was expected. The JSON is read as
 * zeroc's other JSON readers read theirs (zc_json_parse_strict: what Python's json refuses). */
#ifndef ZEROC_CLI_JSONL_EXAMPLE_H
#define ZEROC_CLI_JSONL_EXAMPLE_H

#include <cjson/cJSON.h>

#include "cli/chat_format.h"

/* Most messages in one example. */
enum { JSONL_MAX_MESSAGES = 4096 };

/* The messages of a parsed example (root: either form above) into msgs (at most cap; *n set),
 * checked; their strings stay root's. where: how an error names the place ("--jsonl F: line N").
 */
zc_status jsonl_messages(const cJSON *root, const char *where, chat_message *msgs, int cap, int *n,
                         zc_err *err);
/* Parses text[0..len) (line number `line` of file, for messages) and appends its example's
 * tokens to ids and its mask bytes to *mask (chat_render). */
zc_status jsonl_example(const chat_format *f, bpe_encoder *e, const char *text, size_t len,
                        const char *file, size_t line, bpe_ids *ids, uint8_t **mask,
                        size_t *mask_cap, zc_err *err);

#endif

/* jsonl_example.c — one line of `prepare --jsonl` into tokens and mask (jsonl_example.h): the
 * strict JSON parse, the two forms of an example and their checks, then chat_render. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/jsonl_example.h"
#include "src/util/json_strict.h"

/* The messages of one parsed line into msgs (at most cap; *n set), checked. */
static zc_status line_messages(const cJSON *root, const char *file, size_t line, chat_message *msgs,
                               int cap, int *n, zc_err *err)
{
    if (!cJSON_IsObject(root))
        return zc_err_set(err, ZC_EINVAL,
                          "--jsonl %s: line %zu: expected a JSON object ({\"messages\": [...]} or "
                          "{\"prompt\": ..., \"completion\": ...})",
                          file, line);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "messages"),
                *p = cJSON_GetObjectItemCaseSensitive(root, "prompt"),
                *c = cJSON_GetObjectItemCaseSensitive(root, "completion");
    if (m && (p || c))
        return zc_err_set(err, ZC_EINVAL,
                          "--jsonl %s: line %zu: both \"messages\" and \"%s\"; expected one form: "
                          "messages, or prompt and completion",
                          file, line, p ? "prompt" : "completion");
    if (!m) {
        const char *missing = !p && !c ? "messages" : !p ? "prompt" : !c ? "completion" : NULL;
        if (missing)
            return zc_err_set(err, ZC_EINVAL,
                              "--jsonl %s: line %zu: missing key \"%s\" (expected "
                              "{\"messages\": [...]} or {\"prompt\": \"...\", \"completion\": "
                              "\"...\"})",
                              file, line, missing);
        const cJSON *kv[2] = {p, c};
        static const char *const key[2] = {"prompt", "completion"}, *const role[2] = {"user",
                                                                                      "assistant"};
        for (int i = 0; i < 2; i++) {
            if (!cJSON_IsString(kv[i]))
                return zc_err_set(err, ZC_EINVAL,
                                  "--jsonl %s: line %zu: key \"%s\": expected a string", file, line,
                                  key[i]);
            msgs[i] = (chat_message){role[i], kv[i]->valuestring, strlen(kv[i]->valuestring)};
        }
        *n = 2;
        return ZC_OK;
    }
    if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) < 1)
        return zc_err_set(err, ZC_EINVAL,
                          "--jsonl %s: line %zu: key \"messages\": expected a non-empty array of "
                          "{\"role\", \"content\"} objects",
                          file, line);
    int k = 0;
    for (const cJSON *it = m->child; it; it = it->next, k++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "role"),
                    *t = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsObject(it) || !cJSON_IsString(r) || !cJSON_IsString(t))
            return zc_err_set(err, ZC_EINVAL,
                              "--jsonl %s: line %zu: messages[%d]: expected an object with "
                              "string keys \"role\" and \"content\"%s",
                              file, line, k,
                              !cJSON_IsObject(it) ? ""
                              : !r                ? " (missing key \"role\")"
                              : !t                ? " (missing key \"content\")"
                                                  : " (not a string)");
        if (strcmp(r->valuestring, "system") && strcmp(r->valuestring, "user") &&
            strcmp(r->valuestring, "assistant"))
            return zc_err_set(err, ZC_EINVAL,
                              "--jsonl %s: line %zu: messages[%d]: unknown role \"%.40s\" "
                              "(expected system, user or assistant)",
                              file, line, k, r->valuestring);
        if (k >= cap)
            return zc_err_set(err, ZC_EINVAL,
                              "--jsonl %s: line %zu: more than %d messages in one example", file,
                              line, cap);
        msgs[k] = (chat_message){r->valuestring, t->valuestring, strlen(t->valuestring)};
    }
    *n = k;
    return ZC_OK;
}

zc_status jsonl_example(const chat_format *f, bpe_encoder *e, const char *text, size_t len,
                        const char *file, size_t line, bpe_ids *ids, uint8_t **mask,
                        size_t *mask_cap, zc_err *err)
{
    enum { MAX_MESSAGES = 4096 };
    char msg[512]; /* what Python's json and zeroc's other JSON readers refuse, refused alike */
    cJSON *root = zc_json_parse_strict(text, len, 0, " \t\r", "white space", 1, msg, sizeof msg);
    if (!root)
        return zc_err_set(err, ZC_EINVAL,
                          "--jsonl %s: line %zu: %s (each line must be one JSON object; offsets "
                          "count from the line's start)",
                          file, line, msg);
    chat_message *msgs = malloc(MAX_MESSAGES * sizeof *msgs);
    int n = 0;
    zc_status st = msgs ? line_messages(root, file, line, msgs, MAX_MESSAGES, &n, err)
                        : zc_err_set(err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = chat_render(f, e, msgs, n, ids, mask, mask_cap, err);
    free(msgs);
    cJSON_Delete(root);
    return st;
}

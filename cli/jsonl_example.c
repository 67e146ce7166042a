/* jsonl_example.c — one line of `prepare --jsonl` into tokens and mask (jsonl_example.h): the
 * strict JSON parse, the two forms of an example and their checks, then chat_render. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/jsonl_example.h"
#include "src/util/json_strict.h"

zc_status jsonl_messages(const cJSON *root, const char *where, chat_message *msgs, int cap, int *n,
                         zc_err *err)
{
    if (!cJSON_IsObject(root))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: expected a JSON object ({\"messages\": [...]} or "
                          "{\"prompt\": ..., \"completion\": ...})",
                          where);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "messages"),
                *p = cJSON_GetObjectItemCaseSensitive(root, "prompt"),
                *c = cJSON_GetObjectItemCaseSensitive(root, "completion");
    if (m && (p || c))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: both \"messages\" and \"%s\"; expected one form: "
                          "messages, or prompt and completion",
                          where, p ? "prompt" : "completion");
    if (!m) {
        const char *missing = !p && !c ? "messages" : !p ? "prompt" : !c ? "completion" : NULL;
        if (missing)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: missing key \"%s\" (expected "
                              "{\"messages\": [...]} or {\"prompt\": \"...\", \"completion\": "
                              "\"...\"})",
                              where, missing);
        const cJSON *kv[2] = {p, c};
        static const char *const key[2] = {"prompt", "completion"}, *const role[2] = {"user",
                                                                                      "assistant"};
        for (int i = 0; i < 2; i++) {
            if (!cJSON_IsString(kv[i]))
                return zc_err_set(err, ZC_EINVAL, "%s: key \"%s\": expected a string", where,
                                  key[i]);
            msgs[i] = (chat_message){role[i], kv[i]->valuestring, strlen(kv[i]->valuestring)};
        }
        *n = 2;
        return ZC_OK;
    }
    if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) < 1)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: key \"messages\": expected a non-empty array of "
                          "{\"role\", \"content\"} objects",
                          where);
    int k = 0;
    for (const cJSON *it = m->child; it; it = it->next, k++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "role"),
                    *t = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsObject(it) || !cJSON_IsString(r) || !cJSON_IsString(t))
            return zc_err_set(err, ZC_EINVAL,
                              "%s: messages[%d]: expected an object with "
                              "string keys \"role\" and \"content\"%s",
                              where, k,
                              !cJSON_IsObject(it) ? ""
                              : !r                ? " (missing key \"role\")"
                              : !t                ? " (missing key \"content\")"
                                                  : " (not a string)");
        if (strcmp(r->valuestring, "system") && strcmp(r->valuestring, "user") &&
            strcmp(r->valuestring, "assistant"))
            return zc_err_set(err, ZC_EINVAL,
                              "%s: messages[%d]: unknown role \"%.40s\" "
                              "(expected system, user or assistant)",
                              where, k, r->valuestring);
        if (k >= cap)
            return zc_err_set(err, ZC_EINVAL, "%s: more than %d messages in one example", where,
                              cap);
        msgs[k] = (chat_message){r->valuestring, t->valuestring, strlen(t->valuestring)};
    }
    *n = k;
    return ZC_OK;
}

zc_status jsonl_example(const chat_format *f, bpe_encoder *e, const char *text, size_t len,
                        const char *file, size_t line, bpe_ids *ids, uint8_t **mask,
                        size_t *mask_cap, zc_err *err)
{
    char msg[512]; /* what Python's json and zeroc's other JSON readers refuse, refused alike */
    cJSON *root = zc_json_parse_strict(text, len, 0, " \t\r", "white space", 1, msg, sizeof msg);
    if (!root)
        return zc_err_set(err, ZC_EINVAL,
                          "--jsonl %s: line %zu: %s (each line must be one JSON object; offsets "
                          "count from the line's start)",
                          file, line, msg);
    chat_message *msgs = malloc(JSONL_MAX_MESSAGES * sizeof *msgs);
    char where[4200];
    snprintf(where, sizeof where, "--jsonl %s: line %zu", file, line);
    int n = 0;
    zc_status st = msgs ? jsonl_messages(root, where, msgs, JSONL_MAX_MESSAGES, &n, err)
                        : zc_err_set(err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = chat_render(f, e, msgs, n, ids, mask, mask_cap, err);
    free(msgs);
    cJSON_Delete(root);
    return st;
}

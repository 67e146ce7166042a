/* train_ckpt.c — the trainer's record in a checkpoint's manifest and the model check on resume
 * (train_ckpt.h), both built with cJSON from the model's own description of its shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/train_ckpt.h"

/* {"model": NAME, <the members of m->describe>}, or NULL when out of memory. */
static cJSON *model_record(const train_opts *o, const train_model *m)
{
    char text[sizeof m->describe + 2];
    snprintf(text, sizeof text, "{%s}", m->describe);
    cJSON *shape = cJSON_Parse(text), *rec = cJSON_CreateObject();
    if (!shape || !rec || !cJSON_AddStringToObject(rec, "model", o->model)) {
        cJSON_Delete(shape);
        cJSON_Delete(rec);
        return NULL;
    }
    while (shape->child) { /* moved, in order */
        cJSON *item = cJSON_DetachItemViaPointer(shape, shape->child);
        cJSON_AddItemToObject(rec, item->string, item);
    }
    cJSON_Delete(shape);
    return rec;
}

char *train_ckpt_client(const train_opts *o, const train_model *m, const char *schedule,
                        int64_t warmup, int64_t steps_done, double next_lr, int64_t micro_steps,
                        uint64_t tokens, uint64_t seed)
{
    cJSON *rec = model_record(o, m), *lr = NULL, *data = NULL;
    bool ok = rec && cJSON_AddNumberToObject(rec, "steps_planned", o->steps) &&
              (lr = cJSON_AddObjectToObject(rec, "lr_schedule")) &&
              cJSON_AddStringToObject(lr, "type", schedule) &&
              cJSON_AddNumberToObject(lr, "warmup", (double)warmup) &&
              cJSON_AddNumberToObject(lr, "position", (double)steps_done) &&
              cJSON_AddNumberToObject(lr, "next_lr", next_lr) &&
              (data = cJSON_AddObjectToObject(rec, "data")) &&
              cJSON_AddNumberToObject(data, "micro_steps_consumed", (double)micro_steps) &&
              cJSON_AddNumberToObject(data, "tokens_consumed", (double)tokens) &&
              cJSON_AddBoolToObject(data, "shuffle", o->shuffle) &&
              cJSON_AddNumberToObject(data, "shuffle_order", SHUFFLE_ORDER) &&
              cJSON_AddNumberToObject(data, "seed", (double)seed);
    char *text = ok ? cJSON_PrintUnformatted(rec) : NULL;
    cJSON_Delete(rec);
    return text;
}

zc_status train_ckpt_same_model(const char *dir, const char *client, const train_opts *o,
                                const train_model *m, zc_err *err)
{
    cJSON *have = client ? cJSON_Parse(client) : NULL, *want = model_record(o, m);
    zc_status st = want ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (const cJSON *w = want ? want->child : NULL; w && !st; w = w->next) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, w->string);
        char *hs = h ? cJSON_PrintUnformatted(h) : NULL, *ws = cJSON_PrintUnformatted(w);
        if (!h || !hs || !ws || strcmp(hs, ws))
            st = zc_err_set(err, ZC_EINVAL,
                            "--resume %s: the checkpoint was written for %s %s, "
                            "this run has %s (resume with the same model shape)",
                            dir, w->string, hs ? hs : "(not recorded)", ws ? ws : "?");
        free(hs);
        free(ws);
    }
    cJSON_Delete(have);
    cJSON_Delete(want);
    return st;
}

bool train_ckpt_earlier_shuffle(const char *client)
{
    cJSON *have = client ? cJSON_Parse(client) : NULL;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(have, "data"),
                *order = cJSON_GetObjectItemCaseSensitive(data, "shuffle_order");
    bool earlier = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(data, "shuffle")) &&
                   !(cJSON_IsNumber(order) && order->valuedouble == SHUFFLE_ORDER);
    cJSON_Delete(have);
    return earlier;
}

zc_status train_ckpt_resume_data(const char *dir, const char *client, const train_opts *o,
                                 uint64_t seed, double tokens_per_step, int64_t step,
                                 train_model *m, uint64_t *tokens, zc_err *err)
{
    *tokens = 0;
    cJSON *have = client ? cJSON_Parse(client) : NULL;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(have, "data"),
                *shuffle = cJSON_GetObjectItemCaseSensitive(data, "shuffle"),
                *used = cJSON_GetObjectItemCaseSensitive(data, "tokens_consumed"),
                *had_seed = cJSON_GetObjectItemCaseSensitive(data, "seed");
    const double mine = (double)step * tokens_per_step;
    zc_status st = ZC_OK;
    if (cJSON_IsBool(shuffle) && cJSON_IsTrue(shuffle) != o->shuffle)
        st = zc_err_set(err, ZC_EINVAL,
                        "--resume %s: its run read the data %s; this one would read it %s, and "
                        "the windows it has seen would not follow (resume %s --shuffle)",
                        dir, o->shuffle ? "in order" : "shuffled",
                        o->shuffle ? "shuffled" : "in order", o->shuffle ? "without" : "with");
    else if (o->shuffle && cJSON_IsNumber(had_seed) && had_seed->valuedouble != (double)seed)
        st = zc_err_set(err, ZC_EINVAL,
                        "--resume %s: its run shuffled the data with seed %.0f, this one has "
                        "seed %llu (resume with the same seed)",
                        dir, had_seed->valuedouble, (unsigned long long)seed);
    else if (cJSON_IsNumber(used) && tokens_per_step > 0 && used->valuedouble != mine) {
        if (o->shuffle)
            st = zc_err_set(err, ZC_EINVAL,
                            "--resume %s: its run read %.0f tokens in %lld steps; this one reads "
                            "%.0f a step, and a shuffled order cannot continue under another "
                            "global batch (resume with its micro-batch x accumulation x ranks, "
                            "or without --shuffle)",
                            dir, used->valuedouble, (long long)step, tokens_per_step);
        else if (m->resume_data)
            m->resume_data(m, (uint64_t)used->valuedouble, step),
                *tokens = (uint64_t)used->valuedouble;
    }
    cJSON_Delete(have);
    return st;
}

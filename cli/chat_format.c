/* chat_format.c — the built-in chat formats (chat_format.h): recognising tokenizer_config.json's
 * chat_template, reading a default system message out of it, and rendering a conversation into
 * token ids with its assistant-only loss mask (prepare --jsonl), or into a prompt ending in the
 * assistant's generation header (sample --chat). Its own file: the template logic is one concern,
 * apart from reading JSONL lines (prepare_jsonl.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli/chat_format.h"

const char *chat_format_name(const chat_format *f)
{
    return f->kind == CHAT_LLAMA3 ? "llama3" : f->kind == CHAT_LLAMA31 ? "llama3.1" : "chatml";
}

/* The text of the Jinja string literal in template t that starts right after `key` (which ends
 * inside the literal) and runs to its closing quote or to the first \n escape or newline,
 * malloc'd; NULL when absent, empty, or cut short by a Jinja brace or another backslash. */
static char *literal_after(const char *t, const char *key)
{
    const char *p = t ? strstr(t, key) : NULL;
    if (!p)
        return NULL;
    p += strlen(key);
    size_t n = 0;
    while (p[n] && p[n] != '"' && p[n] != '\'' && p[n] != '\\' && p[n] != '\n' && p[n] != '{' &&
           p[n] != '}')
        n++;
    if (!n || (p[n] != '"' && p[n] != '\'' && strncmp(p + n, "\\n", 2) && p[n] != '\n'))
        return NULL;
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, p, n);
        out[n] = 0;
    }
    return out;
}

/* llama3.1: the system header's dated lines, from the template (cutoff, default date) and
 * `date`; f->date_from says where the date came from. */
static zc_status dated_header(chat_format *f, const char *t, const char *date, zc_err *err)
{
    char *cutoff = literal_after(t, "Cutting Knowledge Date: ");
    char *dflt = NULL, *fmt = NULL, today[128] = "";
    if (date)
        f->date_from = "--chat-date";
    else if (t && strstr(t, "strftime_now(")) { /* transformers renders today's date */
        fmt = literal_after(t, "strftime_now(\"");
        if (!fmt)
            fmt = literal_after(t, "strftime_now('");
        time_t now = time(NULL);
        struct tm tm;
        tzset(); /* local time, as Python's datetime.now() */
        if (!localtime_r(&now, &tm) || !strftime(today, sizeof today, fmt ? fmt : "%d %b %Y", &tm))
            snprintf(today, sizeof today, "26 Jul 2024"); /* the template's else branch */
        date = today;
        f->date_from = "today's, as the template's strftime_now renders it";
    } else if ((dflt = literal_after(t, "set date_string = \"")) ||
               (dflt = literal_after(t, "set date_string = '"))) {
        date = dflt;
        f->date_from = "the template's default";
    } else {
        date = "26 Jul 2024";
        f->date_from = "Llama 3.1's default (the template names none)";
    }
    const char *cut = cutoff ? cutoff : "December 2023";
    const size_t n = strlen(cut) + strlen(date) + 64;
    if ((f->dated_header = malloc(n)))
        snprintf(f->dated_header, n, "Cutting Knowledge Date: %s\nToday Date: %s\n\n", cut, date);
    free(cutoff);
    free(dflt);
    free(fmt);
    return f->dated_header ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
}

/* The id of the added token whose text is s, or -1. */
static int special_id(const bpe_vocab *v, const char *s)
{
    const size_t n = strlen(s);
    for (int k = 0; k < v->hf.nadded; k++)
        if (v->hf.added[k].len == n && !memcmp(v->bytes + v->hf.added[k].off, s, n))
            return v->hf.added[k].id;
    return -1;
}

/* chatml: the default system message of template t — the literal text after an
 * '<|im_start|>system' + newline (written \n or as a newline) that runs to <|im_end|> without a
 * quote or a Jinja tag (Qwen2.5's and SmolLM2's else-branch) — unescaped, or NULL. */
static char *default_system(const char *t)
{
    static const char head[] = "<|im_start|>system";
    for (const char *p = strstr(t, head); p; p = strstr(p + 1, head)) {
        const char *q = p + strlen(head);
        if (!strncmp(q, "\\n", 2))
            q += 2;
        else if (*q == '\n')
            q++;
        else
            continue;
        const char *end = strstr(q, "<|im_end|>");
        if (!end || end == q || strcspn(q, "'\"{}") < (size_t)(end - q))
            continue;
        char *out = malloc((size_t)(end - q) + 1), *o = out;
        if (!out)
            return NULL;
        for (const char *c = q; c < end; c++) {
            if (*c == '\\' && c + 1 < end) { /* a Jinja string's escape */
                c++;
                *o++ = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c;
            } else {
                *o++ = *c;
            }
        }
        *o = 0;
        return out;
    }
    return NULL;
}

/* tokenizer_config.json's chat_template (malloc'd) or NULL when the file or the key is absent;
 * a file that is there but not JSON, or a template that is not a string, is an error. */
static zc_status read_template(const char *cfg, char **out, zc_err *err)
{
    *out = NULL;
    struct stat sb;
    if (stat(cfg, &sb) != 0)
        return ZC_OK;
    cJSON *root;
    zc_status st = bpe_read_json(cfg, &root, err);
    if (st)
        return st;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    if (t && cJSON_IsArray(t)) /* a list of named templates: the one named "default" */
        for (const cJSON *it = t->child, *found = NULL; it && !found; it = it->next) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
            if (cJSON_IsString(name) && !strcmp(name->valuestring, "default"))
                t = found = cJSON_GetObjectItemCaseSensitive(it, "template");
        }
    if (t && !cJSON_IsNull(t) && !cJSON_IsString(t))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: chat_template is not a string (expected a Jinja template)", cfg);
    else if (cJSON_IsString(t) && !(*out = strdup(t->valuestring)))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    cJSON_Delete(root);
    return st;
}

zc_status chat_format_init(chat_format *f, const char *flag, const char *date, const char *dir,
                           const bpe_vocab *v, const char *what, zc_err *err)
{
    *f = (chat_format){.v = v};
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    char *t = NULL;
    zc_status st = read_template(cfg, &t, err);
    if (st)
        return st;
    if (flag && !strcmp(flag, "llama3"))
        f->kind = CHAT_LLAMA3;
    else if (flag && !strcmp(flag, "llama3.1"))
        f->kind = CHAT_LLAMA31;
    else if (flag && !strcmp(flag, "chatml"))
        f->kind = CHAT_CHATML;
    else if (flag)
        st = zc_err_set(err, ZC_EINVAL,
                        "--chat-format must be llama3, llama3.1 or chatml, got '%s'", flag);
    else if (!t)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: %s has no chat_template (or there is no such file): give "
                        "--chat-format llama3 (Llama 3), llama3.1 (Llama 3.1, 3.2) or chatml "
                        "(Qwen2.5, SmolLM2)",
                        what, cfg);
    else if (strstr(t, "<|start_header_id|>") && strstr(t, "<|end_header_id|>") &&
             strstr(t, "<|eot_id|>") && !strstr(t, "<|image|>")) /* not 3.2 Vision's (no trim) */
        f->kind = strstr(t, "Cutting Knowledge Date: ") ? CHAT_LLAMA31 : CHAT_LLAMA3;
    else if (strstr(t, "<|im_start|>") && strstr(t, "<|im_end|>") && !strstr(t, "<think>"))
        f->kind = CHAT_CHATML;
    else
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: %s: its chat_template is not one of the built-in formats "
                        "(llama3: Llama 3's; llama3.1: Llama 3.1's and 3.2's text models'; "
                        "chatml: Qwen2.5's, SmolLM2's; Llama 3.2 Vision's images and Qwen3's "
                        "reasoning are not rendered): give --chat-format llama3, llama3.1 or "
                        "chatml to render in that format instead",
                        what, cfg);
    if (!st && date && f->kind != CHAT_LLAMA31)
        st = zc_err_set(err, ZC_EINVAL,
                        "--chat-date is for the llama3.1 format (its system header's \"Today "
                        "Date\"); this is %s",
                        chat_format_name(f));
    if (!st && date && (!date[0] || strpbrk(date, "\n\r")))
        st = zc_err_set(err, ZC_EINVAL,
                        "--chat-date: expected one line like \"26 Jul 2024\", got '%s'", date);
    if (!st && f->kind == CHAT_CHATML && t)
        f->default_system = default_system(t);
    if (!st && f->kind == CHAT_LLAMA31)
        st = dated_header(f, t, date, err);
    free(t);
    if (st)
        return st;
    const char *need[4];
    int *ids[4], k = 0;
    if (f->kind == CHAT_LLAMA3 || f->kind == CHAT_LLAMA31) {
        f->bos = v->hf.bos >= 0 ? v->hf.bos : special_id(v, "<|begin_of_text|>");
        need[0] = "<|begin_of_text|>", ids[0] = &f->bos;
        need[1] = "<|start_header_id|>", ids[1] = &f->start_header;
        need[2] = "<|end_header_id|>", ids[2] = &f->end_header;
        need[3] = "<|eot_id|>", ids[3] = &f->eot;
        for (k = 1; k < 4; k++)
            *ids[k] = special_id(v, need[k]);
        k = 4;
    } else {
        need[0] = "<|im_start|>", ids[0] = &f->im_start;
        need[1] = "<|im_end|>", ids[1] = &f->im_end;
        for (k = 0; k < 2; k++)
            *ids[k] = special_id(v, need[k]);
    }
    for (int i = 0; i < k && !st; i++)
        if (*ids[i] < 0)
            st = zc_err_set(err, ZC_EINVAL,
                            "--chat-format %s: the tokenizer %s has no added token %s (the "
                            "format needs it: is this the right tokenizer?)",
                            chat_format_name(f), v->hf.json, need[i]);
    if (st)
        chat_format_free(f);
    return st;
}

void chat_format_notes(const chat_format *f, bool default_system, char *out, size_t cap)
{
    const char *dated = f->dated_header ? strstr(f->dated_header, "Today Date: ") : NULL;
    const int n = default_system && f->default_system
                      ? snprintf(out, cap, ", default system message \"%s\"", f->default_system)
                      : snprintf(out, cap, "%s", "");
    if (dated && n >= 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, ", system header dated \"%.*s\": %s",
                 (int)strcspn(dated + 12, "\n"), dated + 12, f->date_from);
}

void chat_format_free(chat_format *f)
{
    free(f->default_system);
    free(f->dated_header);
    f->default_system = f->dated_header = NULL;
}

/* Python's str.isspace for code point c (the white space | trim strips). */
static bool py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The code point of the UTF-8 sequence at s[0..n) and its length in *len; 0xFFFFFFFF (not
 * space) for a byte that does not start a well-formed sequence. */
static uint32_t utf8_at(const uint8_t *s, size_t n, size_t *len)
{
    *len = 1;
    if (s[0] < 0x80)
        return s[0];
    size_t k = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
    if (!k || k > n)
        return 0xFFFFFFFFu;
    uint32_t c = s[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0xFFFFFFFFu;
        c = c << 6 | (s[i] & 0x3F);
    }
    *len = k;
    return c;
}

/* Jinja's trim (Python's strip): s[*a .. *b) without leading and trailing white space. */
static void trim(const uint8_t *s, size_t *a, size_t *b)
{
    size_t len;
    while (*a < *b && py_space(utf8_at(s + *a, *b - *a, &len)))
        *a += len;
    while (*b > *a) { /* back to the start of the last code point */
        size_t p = *b - 1;
        while (p > *a && (s[p] & 0xC0) == 0x80 && *b - p < 4)
            p--;
        if (!py_space(utf8_at(s + p, *b - p, &len)) || p + len != *b)
            break;
        *b = p;
    }
}

typedef struct {
    const chat_format *f;
    bpe_encoder *e;
    bpe_ids *ids;
    uint8_t **mask;
    size_t *cap;
    zc_err *err;
} out_state;

/* Grows the mask to the ids' count, filling new entries with `m`; nothing without a mask. */
static zc_status mask_fill(out_state *o, size_t from, uint8_t m)
{
    if (!o->mask)
        return ZC_OK;
    if (o->ids->n > *o->cap) {
        size_t cap = *o->cap ? *o->cap : 4096;
        while (cap < o->ids->n)
            cap *= 2;
        uint8_t *p = realloc(*o->mask, cap);
        if (!p)
            return zc_err_set(o->err, ZC_ENOMEM, "out of memory for the loss mask");
        *o->mask = p;
        *o->cap = cap;
    }
    memset(*o->mask + from, m, o->ids->n - from);
    return ZC_OK;
}

static zc_status put_special(out_state *o, int id, bool counted)
{
    zc_status st = bpe_ids_reserve(o->ids, 1, o->err);
    if (st)
        return st;
    o->ids->id[o->ids->n++] = (uint32_t)id;
    return mask_fill(o, o->ids->n - 1, counted);
}

/* One piece of text between two markers: head (template text) then body[0..n) (a message's
 * content), encoded together; with `counted`, every token that ends past the head counts. */
static zc_status put_text(out_state *o, const char *head, const uint8_t *body, size_t n,
                          bool counted)
{
    const size_t h = strlen(head);
    uint8_t *buf = malloc(h + n + 1);
    if (!buf)
        return zc_err_set(o->err, ZC_ENOMEM, "out of memory");
    memcpy(buf, head, h);
    if (n)
        memcpy(buf + h, body, n);
    const size_t from = o->ids->n;
    zc_status st = h + n ? bpe_encode(o->e, buf, h + n, o->ids, o->err) : ZC_OK;
    free(buf);
    if (!st)
        st = mask_fill(o, from, 0);
    size_t end = 0; /* bytes through each token: the head is ASCII, unchanged by NFC */
    for (size_t i = from; !st && counted && o->mask && i < o->ids->n; i++) {
        size_t len;
        bpe_vocab_token(o->f->v, (int)o->ids->id[i], &len);
        end += len;
        if (end > h)
            (*o->mask)[i] = 1;
    }
    return st;
}

zc_status chat_render(const chat_format *f, bpe_encoder *e, const chat_message *msgs, int n,
                      bpe_ids *ids, uint8_t **mask, size_t *mask_cap, zc_err *err)
{
    out_state o = {f, e, ids, mask, mask_cap, err};
    zc_status st = ZC_OK;
    if (f->kind == CHAT_LLAMA3 || f->kind == CHAT_LLAMA31) {
        st = put_special(&o, f->bos, false);
        int i = 0;
        if (f->kind == CHAT_LLAMA31 && !st) { /* the dated system turn, the system message in it */
            const bool sys = n > 0 && !strcmp(msgs[0].role, "system");
            const uint8_t *c = sys ? (const uint8_t *)msgs[0].content : NULL;
            size_t lo = 0, hi = sys ? msgs[0].len : 0;
            if (sys)
                trim(c, &lo, &hi);
            char *head = malloc(strlen(f->dated_header) + 3);
            if (!head)
                return zc_err_set(err, ZC_ENOMEM, "out of memory");
            snprintf(head, strlen(f->dated_header) + 3, "\n\n%s", f->dated_header);
            if (!(st = put_special(&o, f->start_header, false)) &&
                !(st = put_text(&o, "system", NULL, 0, false)) &&
                !(st = put_special(&o, f->end_header, false)) &&
                !(st = put_text(&o, head, sys ? c + lo : NULL, hi - lo, false)))
                st = put_special(&o, f->eot, false);
            free(head);
            i = sys;
        }
        for (; i < n && !st; i++) {
            const bool a = !strcmp(msgs[i].role, "assistant");
            const uint8_t *c = (const uint8_t *)msgs[i].content;
            size_t lo = 0, hi = msgs[i].len;
            trim(c, &lo, &hi);
            if (!(st = put_special(&o, f->start_header, false)) &&
                !(st = put_text(&o, msgs[i].role, NULL, 0, false)) &&
                !(st = put_special(&o, f->end_header, false)) &&
                !(st = put_text(&o, "\n\n", c + lo, hi - lo, a)))
                st = put_special(&o, f->eot, a);
        }
        return st;
    }
    if (f->default_system && (n == 0 || strcmp(msgs[0].role, "system") != 0) &&
        !(st = put_special(&o, f->im_start, false)) &&
        !(st = put_text(&o, "system\n", (const uint8_t *)f->default_system,
                        strlen(f->default_system), false)) &&
        !(st = put_special(&o, f->im_end, false)))
        st = put_text(&o, "\n", NULL, 0, false);
    for (int i = 0; i < n && !st; i++) {
        const bool a = !strcmp(msgs[i].role, "assistant");
        char head[16];
        snprintf(head, sizeof head, "%s\n", msgs[i].role);
        if (!(st = put_special(&o, f->im_start, false)) &&
            !(st = put_text(&o, head, (const uint8_t *)msgs[i].content, msgs[i].len, a)) &&
            !(st = put_special(&o, f->im_end, a)))
            st = put_text(&o, "\n", NULL, 0, false);
    }
    return st;
}

int chat_format_end_of_turn(const chat_format *f)
{
    return f->kind == CHAT_CHATML ? f->im_end : f->eot;
}

zc_status chat_render_prompt(const chat_format *f, bpe_encoder *e, const chat_message *msgs, int n,
                             bpe_ids *ids, zc_err *err)
{
    zc_status st = chat_render(f, e, msgs, n, ids, NULL, NULL, err);
    if (st)
        return st;
    out_state o = {f, e, ids, NULL, NULL, err};
    if (f->kind != CHAT_CHATML) {
        if (!(st = put_special(&o, f->start_header, false)) &&
            !(st = put_text(&o, "assistant", NULL, 0, false)) &&
            !(st = put_special(&o, f->end_header, false)))
            st = put_text(&o, "\n\n", NULL, 0, false);
        return st;
    }
    if (!(st = put_special(&o, f->im_start, false)))
        st = put_text(&o, "assistant\n", NULL, 0, false);
    return st;
}

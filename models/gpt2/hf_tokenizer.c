/* hf_tokenizer.c — reading a Hugging Face tokenizer.json (and tokenizer_config.json) into a
 * bpe_vocab (hf_tokenizer.h): the checks that refuse what zeroc does not implement, naming the
 * key and value, then the vocabulary, the added tokens, the merges and the document marks. The
 * encoding itself is bpe_encode.c's; the split patterns are bpe_pretok*.c's. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/gpt2/hf_tokenizer.h"

#define MAX_TOKENS (1 << 24)

/* "null", a JSON type name or the string's value, for messages. */
static const char *json_shown(const cJSON *j, char buf[64])
{
    if (!j || cJSON_IsNull(j))
        return "null";
    if (cJSON_IsString(j)) {
        char b[64];
        snprintf(buf, 64, "\"%s\"", bpe_shown(j->valuestring, strlen(j->valuestring), b));
        return buf;
    }
    if (cJSON_IsBool(j))
        return cJSON_IsTrue(j) ? "true" : "false";
    if (cJSON_IsNumber(j)) {
        snprintf(buf, 64, "%g", j->valuedouble);
        return buf;
    }
    return cJSON_IsArray(j) ? "an array" : "an object";
}

/* The "type" string of a component object, or NULL. */
static const char *type_of(const cJSON *j)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

static bool is_false_or_absent(const cJSON *j)
{
    return !j || cJSON_IsNull(j) || cJSON_IsFalse(j);
}

/* normalizer: null, NFC, or a Sequence of NFC. */
static zc_status read_normalizer(bpe_vocab *v, const cJSON *root, const char *path, zc_err *err)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (!n || cJSON_IsNull(n))
        return ZC_OK;
    const char *t = type_of(n);
    if (t && !strcmp(t, "NFC")) {
        v->hf.nfc = true;
        return ZC_OK;
    }
    if (t && !strcmp(t, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "normalizers"), *it;
        cJSON_ArrayForEach(it, list)
        {
            const char *ti = type_of(it);
            if (!ti || strcmp(ti, "NFC"))
                return zc_err_set(err, ZC_EINVAL,
                                  "%s: normalizer Sequence holds a normalizer of type %s; zeroc "
                                  "implements NFC only",
                                  path, ti ? ti : "(none)");
            v->hf.nfc = true;
        }
        return ZC_OK;
    }
    return zc_err_set(err, ZC_EINVAL,
                      "%s: normalizer of type %s is not supported (zeroc implements null and NFC: "
                      "Llama 3, Qwen2.5, SmolLM2)",
                      path, t ? t : "(none)");
}

/* A ByteLevel pre-tokenizer's options: add_prefix_space must be false; *use_regex defaults to
 * true as in Hugging Face's. */
static zc_status byte_level(const cJSON *b, bool *use_regex, const char *path, zc_err *err)
{
    const cJSON *aps = cJSON_GetObjectItemCaseSensitive(b, "add_prefix_space");
    if (!is_false_or_absent(aps))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: pre_tokenizer ByteLevel with add_prefix_space %s is not supported "
                          "(Llama 3, Qwen2.5 and SmolLM2 have false)",
                          path, cJSON_IsTrue(aps) ? "true" : "set");
    const cJSON *ur = cJSON_GetObjectItemCaseSensitive(b, "use_regex");
    *use_regex = !ur || cJSON_IsTrue(ur);
    return ZC_OK;
}

/* A Split pre-tokenizer: one of the known patterns, isolated, not inverted. */
static zc_status split_kind(const cJSON *s, bpe_pretok_kind *kind, const char *path, zc_err *err)
{
    char b[64];
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
    if (!cJSON_IsString(re))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: pre_tokenizer Split's pattern is %s, not a {\"Regex\": ...} (zeroc "
                          "knows Llama 3's, Qwen2's and GPT-2's patterns)",
                          path,
                          cJSON_GetObjectItemCaseSensitive(pat, "String") ? "a String"
                                                                          : json_shown(pat, b));
    if (!strcmp(re->valuestring, HF_REGEX_LLAMA3))
        *kind = BPE_PRETOK_LLAMA3;
    else if (!strcmp(re->valuestring, HF_REGEX_QWEN2))
        *kind = BPE_PRETOK_QWEN2;
    else if (!strcmp(re->valuestring, HF_REGEX_GPT2))
        *kind = BPE_PRETOK_GPT2;
    else
        return zc_err_set(err, ZC_EINVAL,
                          "%s: pre_tokenizer Split's Regex %s is not one zeroc implements (it "
                          "knows Llama 3's, Qwen2's and GPT-2's patterns exactly)",
                          path, json_shown(re, b));
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(s, "behavior");
    if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: pre_tokenizer Split's behavior %s is not supported (Isolated only)",
                          path, json_shown(beh, b));
    if (!is_false_or_absent(cJSON_GetObjectItemCaseSensitive(s, "invert")))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: pre_tokenizer Split with invert true is not supported", path);
    return ZC_OK;
}

/* pre_tokenizer: ByteLevel(use_regex) alone, or Sequence [Split, ByteLevel(no regex)] or
 * [ByteLevel(use_regex)]. */
static zc_status read_pre_tokenizer(bpe_vocab *v, const cJSON *root, const char *path, zc_err *err)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const char *t = type_of(p);
    bool use_regex = false;
    zc_status st;
    if (t && !strcmp(t, "ByteLevel")) {
        if ((st = byte_level(p, &use_regex, path, err)))
            return st;
        if (use_regex) {
            v->pretok = BPE_PRETOK_GPT2;
            return ZC_OK;
        }
    } else if (t && !strcmp(t, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
        int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
        const cJSON *a = n > 0 ? cJSON_GetArrayItem(list, 0) : NULL;
        const cJSON *b = n > 1 ? cJSON_GetArrayItem(list, 1) : NULL;
        const char *ta = type_of(a), *tb = type_of(b);
        if (n == 1 && ta && !strcmp(ta, "ByteLevel")) {
            if ((st = byte_level(a, &use_regex, path, err)))
                return st;
            if (use_regex) {
                v->pretok = BPE_PRETOK_GPT2;
                return ZC_OK;
            }
        } else if (n == 2 && ta && !strcmp(ta, "Split") && tb && !strcmp(tb, "ByteLevel")) {
            if ((st = split_kind(a, &v->pretok, path, err)) ||
                (st = byte_level(b, &use_regex, path, err)))
                return st;
            if (!use_regex)
                return ZC_OK;
            return zc_err_set(err, ZC_EINVAL,
                              "%s: pre_tokenizer Sequence: a Split then a ByteLevel with "
                              "use_regex true splits twice; zeroc implements use_regex false "
                              "there (Llama 3, Qwen2.5)",
                              path);
        }
        return zc_err_set(err, ZC_EINVAL,
                          "%s: pre_tokenizer Sequence of %d (%s, %s%s) is not supported: zeroc "
                          "implements [Split, ByteLevel] and [ByteLevel]",
                          path, n, ta ? ta : "-", tb ? tb : "-", n > 2 ? ", ..." : "");
    } else {
        return zc_err_set(err, ZC_EINVAL,
                          "%s: pre_tokenizer of type %s is not supported (zeroc implements "
                          "byte-level BPE: ByteLevel, or Sequence [Split, ByteLevel])",
                          path,
                          t                       ? t
                          : p && !cJSON_IsNull(p) ? "(none)"
                                                  : "null");
    }
    return zc_err_set(err, ZC_EINVAL,
                      "%s: pre_tokenizer ByteLevel with use_regex false and no Split before it "
                      "(the whole text one piece) is not supported",
                      path);
}

static zc_status read_decoder(const cJSON *root, const char *path, zc_err *err)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    if (!d || cJSON_IsNull(d))
        return ZC_OK;
    const char *t = type_of(d);
    if (t && !strcmp(t, "ByteLevel"))
        return ZC_OK;
    return zc_err_set(err, ZC_EINVAL,
                      "%s: decoder of type %s is not supported (zeroc decodes byte-level BPE: "
                      "ByteLevel)",
                      path, t ? t : "(none)");
}

/* model: type BPE and the options zeroc does not implement absent or neutral. */
static zc_status check_model(bpe_vocab *v, const cJSON *model, const char *path, zc_err *err)
{
    char b[64];
    const char *t = type_of(model);
    if (t && strcmp(t, "BPE"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: model.type %s is not supported (zeroc implements byte-level BPE: "
                          "Llama 3, Qwen2.5, SmolLM2, GPT-2)",
                          path, t);
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (dropout && !cJSON_IsNull(dropout) &&
        !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        return zc_err_set(err, ZC_EINVAL, "%s: model.dropout %s is not supported (null only)", path,
                          json_shown(dropout, b));
    static const char *const affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(model, affix[i]);
        if (a && !cJSON_IsNull(a) && !(cJSON_IsString(a) && !a->valuestring[0]))
            return zc_err_set(err, ZC_EINVAL, "%s: model.%s %s is not supported (null only)", path,
                              affix[i], json_shown(a, b));
    }
    const cJSON *bf = cJSON_GetObjectItemCaseSensitive(model, "byte_fallback");
    if (!is_false_or_absent(bf))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: model.byte_fallback %s is not supported (SentencePiece-style "
                          "byte tokens; byte-level BPE has false)",
                          path, json_shown(bf, b));
    const cJSON *im = cJSON_GetObjectItemCaseSensitive(model, "ignore_merges");
    v->hf.merges_only = !cJSON_IsTrue(im);
    return ZC_OK;
}

/* An id from a JSON number: an integer in [0, MAX_TOKENS), else -1. */
static int json_id(const cJSON *j)
{
    if (!cJSON_IsNumber(j))
        return -1;
    double d = j->valuedouble;
    return d >= 0 && d < MAX_TOKENS && d == (double)(int)d ? (int)d : -1;
}

/* model.vocab and added_tokens → v->n, off, bytes, is_added, hf.added. */
static zc_status read_tokens(bpe_vocab *v, const cJSON *vocab, const cJSON *added, const char *path,
                             const int16_t from_cp[512], zc_err *err)
{
    char b1[64], b2[64];
    if (!cJSON_IsObject(vocab))
        return zc_err_set(err, ZC_EINVAL, "%s: model.vocab is %s, not an object {token: id}", path,
                          vocab ? json_shown(vocab, b1) : "missing");
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return zc_err_set(err, ZC_EINVAL, "%s: added_tokens is %s, not an array", path,
                          json_shown(added, b1));
    /* the id range */
    int n = 0, nadded = added ? cJSON_GetArraySize(added) : 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab)
    {
        int id = json_id(it);
        if (id < 0)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: model.vocab: token '%s' has id %s; ids are integers 0..%d", path,
                              bpe_shown(it->string, strlen(it->string), b1), json_shown(it, b2),
                              MAX_TOKENS - 1);
        n = id + 1 > n ? id + 1 : n;
    }
    for (int i = 0; i < nadded; i++) {
        const cJSON *a = cJSON_GetArrayItem(added, i);
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(a, "content");
        int id = json_id(cJSON_GetObjectItemCaseSensitive(a, "id"));
        if (id < 0 || !cJSON_IsString(content) || !content->valuestring[0])
            return zc_err_set(err, ZC_EINVAL,
                              "%s: added_tokens[%d] needs an integer \"id\" (0..%d) and a "
                              "non-empty string \"content\"",
                              path, i, MAX_TOKENS - 1);
        static const char *const opts[] = {"lstrip", "rstrip", "single_word"};
        for (int k = 0; k < 3; k++)
            if (!is_false_or_absent(cJSON_GetObjectItemCaseSensitive(a, opts[k])))
                return zc_err_set(
                    err, ZC_EINVAL, "%s: added_tokens[%d] '%s': %s true is not supported", path, i,
                    bpe_shown(content->valuestring, strlen(content->valuestring), b1), opts[k]);
        n = id + 1 > n ? id + 1 : n;
    }
    if (n < 256)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %d token ids; a byte-level vocabulary has at least 256", path, n);
    /* each id's text: model.vocab's (unmapped) or the added token's content */
    const char **text = calloc((size_t)n, sizeof *text);
    uint8_t *from_vocab = calloc((size_t)n, 1);
    v->hf.is_added = calloc((size_t)n, 1);
    v->hf.added = calloc(nadded ? (size_t)nadded : 1, sizeof *v->hf.added);
    zc_status st = ZC_OK;
    if (!text || !from_vocab || !v->hf.is_added || !v->hf.added) {
        st = zc_err_set(err, ZC_ENOMEM, "%s: out of memory for %d tokens", path, n);
        goto out;
    }
    size_t total = 0;
    cJSON_ArrayForEach(it, vocab)
    {
        int id = json_id(it);
        if (text[id]) {
            st = zc_err_set(err, ZC_EINVAL, "%s: model.vocab: id %d is given to both '%s' and '%s'",
                            path, id, bpe_shown(text[id], strlen(text[id]), b1),
                            bpe_shown(it->string, strlen(it->string), b2));
            goto out;
        }
        text[id] = it->string;
        from_vocab[id] = 1;
        total += strlen(it->string);
    }
    for (int i = 0; i < nadded; i++) {
        const cJSON *a = cJSON_GetArrayItem(added, i);
        const char *content = cJSON_GetObjectItemCaseSensitive(a, "content")->valuestring;
        int id = json_id(cJSON_GetObjectItemCaseSensitive(a, "id"));
        v->hf.added[i].id = id;
        v->hf.added[i].special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special"));
        if (from_vocab[id])
            continue; /* the vocabulary's own token (GPT-2's <|endoftext|>): checked below */
        if (text[id]) {
            st = zc_err_set(
                err, ZC_EINVAL, "%s: added_tokens: id %d is given to both '%s' and '%s'", path, id,
                bpe_shown(text[id], strlen(text[id]), b1), bpe_shown(content, strlen(content), b2));
            goto out;
        }
        text[id] = content;
        v->hf.is_added[id] = 1;
        total += strlen(content);
    }
    v->n = n;
    v->hf.nadded = nadded;
    v->off = malloc(((size_t)n + 1) * sizeof *v->off);
    v->bytes = malloc(total + 1);
    if (!v->off || !v->bytes || total > UINT32_MAX) {
        st = zc_err_set(err, ZC_ENOMEM, "%s: out of memory for %d tokens", path, n);
        goto out;
    }
    uint32_t o = 0;
    for (int id = 0; id < n; id++) {
        v->off[id] = o;
        if (!text[id])
            continue; /* an id no token has: decoding it is an error */
        size_t len = strlen(text[id]);
        if (v->hf.is_added[id]) {
            memcpy(v->bytes + o, text[id], len);
            o += (uint32_t)len;
            continue;
        }
        long got = len ? bpe_unmap_token(from_cp, text[id], len, v->bytes + o) : -1;
        if (got < 0) {
            st = zc_err_set(err, ZC_EINVAL, "%s: model.vocab: token '%s' (id %d) is %s", path,
                            bpe_shown(text[id], len, b1), id,
                            len ? "not written in the byte-level alphabet (a character outside "
                                  "GPT-2's byte-to-unicode map)"
                                : "empty");
            goto out;
        }
        o += (uint32_t)got;
    }
    v->off[n] = o;
    for (int i = 0; i < nadded; i++) {
        bpe_added *a = &v->hf.added[i];
        const char *content =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(added, i), "content")->valuestring;
        size_t len;
        const uint8_t *mine = bpe_vocab_token(v, a->id, &len);
        if (len != strlen(content) || memcmp(mine, content, len)) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: added_tokens[%d] '%s' has id %d, which model.vocab gives to '%s'",
                            path, i, bpe_shown(content, strlen(content), b1), a->id,
                            bpe_shown((const char *)mine, len, b2));
            goto out;
        }
        a->off = v->off[a->id];
        a->len = (uint32_t)len;
    }
out:
    free(text);
    free(from_vocab);
    return st;
}

/* model.merges: "left right" strings or [left, right] pairs. */
static zc_status read_merges(bpe_vocab *v, const cJSON *merges, const char *path,
                             const int16_t from_cp[512], zc_err *err)
{
    char b1[64], b2[64];
    if (!cJSON_IsArray(merges))
        return zc_err_set(err, ZC_EINVAL, "%s: model.merges is %s, not an array", path,
                          merges ? json_shown(merges, b1) : "missing");
    int count = cJSON_GetArraySize(merges);
    if (count == 0)
        return zc_err_set(err, ZC_EINVAL, "%s: model.merges is empty", path);
    zc_status st = bpe_vocab_merges_init(v, (size_t)count, path, err);
    uint8_t *buf = malloc(2 * (size_t)v->off[v->n] + 2);
    if (!st && !buf)
        st = zc_err_set(err, ZC_ENOMEM, "%s: out of memory", path);
    const cJSON *m;
    size_t i = 0;
    cJSON_ArrayForEach(m, merges)
    {
        if (st)
            break;
        const char *l = NULL, *r = NULL;
        size_t ll = 0, rl = 0;
        char whole[160];
        if (cJSON_IsString(m)) {
            const char *s = m->valuestring, *sp = strchr(s, ' ');
            if (sp && sp > s && sp[1] && !strchr(sp + 1, ' ')) {
                l = s;
                ll = (size_t)(sp - s);
                r = sp + 1;
                rl = strlen(r);
            }
            snprintf(whole, sizeof whole, "\"%s\"", bpe_shown(s, strlen(s), b1));
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
            l = cJSON_GetArrayItem(m, 0)->valuestring;
            r = cJSON_GetArrayItem(m, 1)->valuestring;
            ll = strlen(l);
            rl = strlen(r);
            snprintf(whole, sizeof whole, "[\"%s\", \"%s\"]", bpe_shown(l, ll, b1),
                     bpe_shown(r, rl, b2));
        } else {
            snprintf(whole, sizeof whole, "%s", json_shown(m, b1));
        }
        if (!l || !ll || !rl) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: model.merges[%zu] is %s: expected \"left right\" (one space) or "
                            "[\"left\", \"right\"]",
                            path, i, whole);
            break;
        }
        long n1 = bpe_unmap_token(from_cp, l, ll, buf);
        long n2 = n1 < 0 ? -1 : bpe_unmap_token(from_cp, r, rl, buf + n1);
        int left = n1 < 0 ? -1 : bpe_vocab_find(v, buf, (size_t)n1);
        int right = n2 < 0 ? -1 : bpe_vocab_find(v, buf + n1, (size_t)n2);
        int res = left < 0 || right < 0 ? -1 : bpe_vocab_find(v, buf, (size_t)(n1 + n2));
        if (left < 0 || right < 0 || res < 0) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: model.merges[%zu] %s: %s is not a token of model.vocab", path, i,
                            whole,
                            left < 0    ? "the left side"
                            : right < 0 ? "the right side"
                                        : "the joined token");
            break;
        }
        uint32_t dup;
        if (!bpe_vocab_merge_add(v, (uint32_t)left, (uint32_t)right, res, &dup))
            st = zc_err_set(err, ZC_EINVAL, "%s: model.merges[%zu] %s repeats model.merges[%u]",
                            path, i, whole, dup);
        i++;
    }
    free(buf);
    return st;
}

/* The id of the token whose text is s: an added token's content, or a vocabulary token's
 * bytes; -1 if none. */
static int token_id(const bpe_vocab *v, const char *s)
{
    size_t n = strlen(s);
    for (int i = 0; i < v->hf.nadded; i++)
        if (v->hf.added[i].len == n && !memcmp(v->bytes + v->hf.added[i].off, s, n))
            return v->hf.added[i].id;
    return bpe_vocab_find(v, (const uint8_t *)s, n);
}

/* tokenizer_config.json's bos_token / eos_token: a string, {"content": ...} or null. *id = -1
 * when absent or null. */
static zc_status config_token(const bpe_vocab *v, const cJSON *cfg, const char *key,
                              const char *path, int *id, zc_err *err)
{
    char b[64];
    *id = -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(t))
        t = cJSON_GetObjectItemCaseSensitive(t, "content");
    if (!t || cJSON_IsNull(t))
        return ZC_OK;
    if (!cJSON_IsString(t))
        return zc_err_set(err, ZC_EINVAL, "%s: %s is %s, not a token's text", path, key,
                          json_shown(t, b));
    if ((*id = token_id(v, t->valuestring)) < 0)
        return zc_err_set(err, ZC_EINVAL, "%s: %s %s is not a token of %s", path, key,
                          json_shown(t, b), v->hf.json);
    return ZC_OK;
}

/* tokenizer_config.json beside the tokenizer.json, when there: the document marks. */
static zc_status read_config(bpe_vocab *v, const char *json_path, zc_err *err)
{
    char path[4300];
    const char *slash = strrchr(json_path, '/');
    snprintf(path, sizeof path, "%.*stokenizer_config.json",
             slash ? (int)(slash - json_path + 1) : 0, json_path);
    struct stat sb;
    v->hf.bos = v->hf.eos = -1;
    if (stat(path, &sb) != 0)
        return ZC_OK;
    char *text;
    size_t len;
    zc_status st = bpe_read_file(path, &text, &len, err);
    if (st)
        return st;
    cJSON *cfg = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return zc_err_set(err, ZC_EINVAL, "%s: not a JSON object", path);
    }
    st = config_token(v, cfg, "bos_token", path, &v->hf.bos, err);
    if (!st)
        st = config_token(v, cfg, "eos_token", path, &v->hf.eos, err);
    const cJSON *ab = cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token");
    const cJSON *ae = cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token");
    char b[64];
    if (!st && ((ab && !cJSON_IsBool(ab)) || (ae && !cJSON_IsBool(ae))))
        st = zc_err_set(err, ZC_EINVAL, "%s: %s is %s, not true or false", path,
                        ab && !cJSON_IsBool(ab) ? "add_bos_token" : "add_eos_token",
                        json_shown(ab && !cJSON_IsBool(ab) ? ab : ae, b));
    if (!st) {
        v->hf.add_bos = ab ? cJSON_IsTrue(ab) : v->hf.bos >= 0;
        v->hf.add_eos = ae ? cJSON_IsTrue(ae) : !v->hf.add_bos && v->hf.eos >= 0;
        if ((v->hf.add_bos && v->hf.bos < 0) || (v->hf.add_eos && v->hf.eos < 0))
            st = zc_err_set(err, ZC_EINVAL, "%s: %s is true but %s is not set", path,
                            v->hf.add_bos && v->hf.bos < 0 ? "add_bos_token" : "add_eos_token",
                            v->hf.add_bos && v->hf.bos < 0 ? "bos_token" : "eos_token");
    }
    cJSON_Delete(cfg);
    return st;
}

zc_status hf_tokenizer_load(bpe_vocab *v, const char *json_path, zc_err *err)
{
    memset(v, 0, sizeof *v);
    v->eot = -1;
    v->hf.on = true;
    v->hf.bos = v->hf.eos = -1;
    snprintf(v->hf.json, sizeof v->hf.json, "%s", json_path);
    snprintf(v->source, sizeof v->source, "%s", json_path);
    const char *path = json_path;
    cJSON *root;
    zc_status st = bpe_read_json(path, &root, err);
    if (st)
        return st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    int16_t from_cp[512];
    int32_t to_cp[256];
    bpe_byte_unicode_maps(to_cp, from_cp);
    if (!cJSON_IsObject(root) || !cJSON_IsObject(model))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: no \"model\" object (not a Hugging Face tokenizers file?)", path);
    if (!st)
        st = check_model(v, model, path, err);
    if (!st)
        st = read_normalizer(v, root, path, err);
    if (!st)
        st = read_pre_tokenizer(v, root, path, err);
    if (!st)
        st = read_decoder(root, path, err);
    if (!st)
        st =
            read_tokens(v, cJSON_GetObjectItemCaseSensitive(model, "vocab"),
                        cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), path, from_cp, err);
    if (!st)
        st = bpe_vocab_index(v, path, err);
    for (int b = 0; !st && b < 256; b++)
        if (v->byte_tok[b] < 0)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: model.vocab: byte 0x%02X has no token of its own (a byte-level "
                            "vocabulary needs all 256)",
                            path, b);
    if (!st)
        st = read_merges(v, cJSON_GetObjectItemCaseSensitive(model, "merges"), path, from_cp, err);
    cJSON_Delete(root);
    if (!st && v->eot < 0)
        v->eot = token_id(v, "<|endoftext|>");
    if (!st)
        st = read_config(v, json_path, err);
    if (!st && (v->hf.add_bos || v->hf.add_eos))
        v->eot = v->hf.add_bos ? v->hf.bos : v->hf.eos;
    v->can_encode = !st;
    if (st)
        bpe_vocab_free(v);
    return st;
}

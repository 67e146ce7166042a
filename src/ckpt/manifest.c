/* manifest.c — reading a checkpoint's manifest without trusting it (format in
 * zeroc/checkpoint.h).
 *
 * Why it is shaped this way:
 * - The shards are protected by CRCs the manifest lists, so the manifest is what says what is
 *   true: an edited "step" resumed at the wrong step and an edited "offset" exported the wrong
 *   bytes with exit 0. Its own SHA-256 (manifest.sha256, in sha256sum's format) catches edits and
 *   corruption; the cross-checks below catch what a checksum cannot — a manifest edited and
 *   re-hashed, or written wrong — before any reader uses a field.
 * - Every field a reader uses is validated here, once: integers are integral and in range,
 *   parameters lie contiguously inside their unit (no overlap, no gap, covering it), files are
 *   the names the layout gives, the step is the directory's. Readers then index and size by it
 *   without further checks, and nothing in a file can reach an assertion.
 * - Format 1 (no manifest.sha256) is refused by name rather than read as "probably fine"; a
 *   newer format than this zeroc's too, naming the zeroc that wrote it (producer_version). Formats
 *   2 and 3 share every field read here; what differs is the trainer's record (cli/train_ckpt.c),
 *   so a reader gets the format (zc_manifest.format).
 * It reads; it does not look into the shards (checkpoint.c checks their headers and CRCs). */
#include <ctype.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ckpt/manifest.h"
#include "util/sha256.h"
#include "zeroc/durable.h"
#include "zeroc/estimate.h" /* ZC_MAX_NUMEL */

/* Largest element count of a unit, a tensor or a whole model: the largest model the engine
 * registers (ZC_MAX_NUMEL, 2^49), so that every model zeroc trains can be read back; 16 bytes
 * a parameter stay exact in a JSON number (2^53) and no size computed from it overflows. */
#define MAX_ELEMS ZC_MAX_NUMEL
#define MAX_INT ((int64_t)2147483647)
#define MAX_COUNT ((int64_t)1 << 53) /* counters: exact in a double */

void zc_manifest_free(zc_manifest *m)
{
    cJSON_Delete(m->root);
    free(m->numel);
    free(m->shard);
    free(m->stored);
    free(m->params);
    free(m->crc);
    memset(m, 0, sizeof *m);
}

void zc_manifest_sha256_line(const char *text, char line[96])
{
    zc_sha256 s;
    uint8_t d[32];
    char hex[65];
    zc_sha256_init(&s);
    zc_sha256_update(&s, text, strlen(text));
    zc_sha256_final(&s, d);
    zc_sha256_hex(d, hex);
    snprintf(line, 96, "%s  manifest.json\n", hex);
}

/* The whole file, NUL-terminated, if it is a regular file of at most max bytes (longer than
 * any manifest zeroc writes); the buffer is the file's size, not max. On failure NULL, with why
 * set: ZC_EIO (errno kept) when it cannot be opened, ZC_EINVAL naming what is wrong otherwise.
 * The type is checked on the open descriptor, opened without blocking (zc_open_regular): a FIFO
 * in the manifest's place used to hang every reader. */
static char *read_all(const char *path, size_t max, size_t *len, zc_err *why)
{
    int fd;
    int64_t size;
    if (zc_open_regular(path, &fd, &size, why))
        return NULL;
    FILE *f = fdopen(fd, "rb");
    char *buf = NULL;
    if (!f) {
        zc_err_set(why, ZC_ENOMEM, "out of memory reading %s", path);
        close(fd);
        return NULL;
    }
    if ((uint64_t)size > max)
        zc_err_set(why, ZC_EINVAL, "%s is larger than %zu bytes", path, max);
    else if (!(buf = malloc((size_t)size + 2)))
        zc_err_set(why, ZC_ENOMEM, "out of memory reading %s", path);
    else {
        size_t n = fread(buf, 1, (size_t)size + 1, f); /* + 1: it grew meanwhile */
        if (n > (size_t)size) {
            zc_err_set(why, ZC_EINVAL, "%s changed while it was read", path);
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
            *len = n;
        }
    }
    fclose(f);
    return buf;
}

/* A value for a message: JSON, cut to 40 characters, or "missing". */
static const char *shown(const cJSON *it, char buf[48])
{
    char *t = it ? cJSON_PrintUnformatted(it) : NULL;
    snprintf(buf, 48, "%s", t ? t : "missing");
    if (t && strlen(t) > 40)
        memcpy(buf + 37, "...", 4);
    free(t);
    return buf;
}

/* o[key] as an integer in [lo, hi]; otherwise an error naming where (e.g. "units[2]."), the key,
 * the value and the range. */
static zc_status get_int(const char *path, const char *where, const cJSON *o, const char *key,
                         int64_t lo, int64_t hi, int64_t *out, zc_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!(v >= (double)lo && v <= (double)hi && v == floor(v))) {
        char b[48], want[64];
        if (lo == hi)
            snprintf(want, sizeof want, "%" PRId64, lo);
        else
            snprintf(want, sizeof want, "an integer from %" PRId64 " to %" PRId64, lo, hi);
        return zc_err_set(err, ZC_EINVAL, "%s: %s%s is %s, expected %s", path, where, key,
                          shown(it, b), want);
    }
    *out = (int64_t)v;
    return ZC_OK;
}

static const char *get_string(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* s as a message shows it: at most 160 bytes, anything unprintable as \xNN. */
static const char *printable(const char *s, size_t n, char out[700])
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 160; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 32 && c < 127 && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, 700 - o, "\\x%02x", c);
    }
    snprintf(out + o, 700 - o, "%s", n > 160 ? "..." : ""); /* also terminates out */
    return out;
}

/* manifest.sha256 must hold the SHA-256 of the manifest's bytes, as any sha256sum writes it: 64
 * hex digits (either case), then optionally "  manifest.json" (text mode) or " *manifest.json"
 * (binary mode, -b), then optionally one newline. Anything else is refused showing what is
 * there, rather than compared and reported as a mismatch with the very same digest. */
static zc_status check_digest(const char *ckdir, const char *path, const char *text, int format,
                              zc_err *err)
{
    char spath[4200], want[96], shown_[700];
    snprintf(spath, sizeof spath, "%s/manifest.sha256", ckdir);
    size_t n;
    zc_err why = {0};
    char *have = read_all(spath, 256, &n, &why);
    if (!have && why.code == ZC_EIO)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: missing or unreadable (%m): a format-%d manifest "
                          "comes with its SHA-256, without which %s cannot be trusted",
                          spath, format, path);
    if (!have)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: a format-%d manifest comes with its SHA-256 (manifest.sha256), "
                          "without which it cannot be trusted",
                          why.msg, format);
    zc_manifest_sha256_line(text, want);
    size_t hex = 0;
    while (hex < n && isxdigit((unsigned char)have[hex]))
        hex++;
    const char *rest = have + hex;
    size_t rlen = strlen(rest); /* a NUL inside the file ends it early: then n differs */
    if (rlen && rest[rlen - 1] == '\n')
        rlen--;
    bool named = (rlen == 15 &&
                  (!strncmp(rest, "  manifest.json", 15) || !strncmp(rest, " *manifest.json", 15)));
    zc_status st = ZC_OK;
    if (hex != 64 || hex + strlen(rest) != n || (rlen && !named))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: expected the manifest's SHA-256 as sha256sum writes it (64 hex "
                        "digits, then optionally '  manifest.json'), found \"%s\"",
                        spath, printable(have, n, shown_));
    else if (strncasecmp(have, want, 64)) {
        have[64] = 0;
        want[64] = 0;
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: its SHA-256 is %s, but manifest.sha256 says %s "
                        "(the manifest was edited or is corrupt)",
                        path, want, have);
    }
    free(have);
    return st;
}

/* "step-N" as a directory's last component gives N; anything else (a copied checkpoint under
 * another name) gives no step to compare. */
static int dir_step(const char *ckdir, int64_t *step)
{
    size_t n = strlen(ckdir);
    while (n > 1 && ckdir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && ckdir[b - 1] != '/')
        b--;
    if (n - b < 6 || n - b > 30 || strncmp(ckdir + b, "step-", 5))
        return 0;
    int64_t v = 0;
    for (size_t i = b + 5; i < n; i++) {
        if (!isdigit((unsigned char)ckdir[i]))
            return 0;
        v = v * 10 + (ckdir[i] - '0');
    }
    *step = v;
    return 1;
}

static zc_status read_top(const char *ckdir, const char *path, zc_manifest *m, zc_err *err)
{
    cJSON *r = m->root;
    int64_t w = 0, s = 0, k = 0, step = 0, opt = 0; /* get_int sets each (GCC -O3 cannot tell) */
    zc_status st;
    if ((st = get_int(path, "", r, "world_size", 1, 1 << 20, &w, err)) ||
        (st = get_int(path, "", r, "stage", 0, 3, &s, err)) ||
        (st = get_int(path, "", r, "step", 0, MAX_INT, &step, err)) ||
        (st = get_int(path, "", r, "optimizer_steps", 0, step, &opt, err)))
        return st;
    const cJSON *optim = cJSON_GetObjectItemCaseSensitive(r, "optimizer");
    if ((st = get_int(path, "optimizer.", optim, "moments", 0, 2, &k, err)))
        return st;
    /* two moments: AdamW, Adam or AdamW8bit as configured (earlier zerocs wrote Adam for both);
     * SGD by its moments */
    const char *type = get_string(optim, "type");
    if (!type || (strcmp(type, zc_ckpt_optim_name((int)k)) &&
                  (k != 2 || (strcmp(type, "AdamW") && strcmp(type, "AdamW8bit")))))
        return zc_err_set(
            err, ZC_EINVAL, "%s: optimizer.type is '%s', expected %s (its moments are %d)", path,
            type ? type : "missing",
            k == 2 ? "'AdamW', 'Adam' or 'AdamW8bit'" : zc_ckpt_optim_name((int)k), (int)k);
    const char *dtype = get_string(r, "dtype");
    if (!dtype || (strcmp(dtype, "fp32") && strcmp(dtype, "bf16") && strcmp(dtype, "fp16")))
        return zc_err_set(err, ZC_EINVAL, "%s: dtype is '%s', expected fp32, bf16 or fp16", path,
                          dtype ? dtype : "missing");
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "config")) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "client")))
        return zc_err_set(err, ZC_EINVAL, "%s: config and client must be JSON objects", path);
    int64_t named;
    if (dir_step(ckdir, &named) && named != step)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: step %" PRId64 ", but the directory's name says "
                          "step-%06" PRId64 " (an edited manifest or a renamed directory)",
                          path, step, named);
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(r, "producer_version");
    bool pv_ok = cJSON_IsString(pv) && pv->valuestring[0] &&
                 strlen(pv->valuestring) < ZC_PRODUCER_VERSION_MAX;
    for (const char *c = pv_ok ? pv->valuestring : ""; *c; c++)
        pv_ok &= *c >= 32 && *c < 127;
    char b[48];
    if (!pv_ok && (pv || m->format >= 3))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: producer_version is %s, expected the version of the zeroc that "
                          "wrote it (1 to %d printable ASCII characters)",
                          path, shown(pv, b), ZC_PRODUCER_VERSION_MAX - 1);
    m->producer_version = pv ? pv->valuestring : NULL;
    /* AdamW8bit's moments: "q8", its codes and scales as they are; absent or "fp32", floats (as
     * every other optimizer's, and AdamW8bit's before q8 checkpoints) */
    const char *mf = get_string(optim, "moments_format");
    if (cJSON_GetObjectItemCaseSensitive(optim, "moments_format") &&
        (!mf || (strcmp(mf, "fp32") && (strcmp(mf, "q8") || strcmp(type, "AdamW8bit")))))
        return zc_err_set(err, ZC_EINVAL, "%s: optimizer.moments_format is '%s', expected 'fp32'%s",
                          path, mf ? mf : "not a string",
                          strcmp(type, "AdamW8bit") ? "" : " or 'q8'");
    m->q8 = mf && !strcmp(mf, "q8");
    m->optim = type;
    m->world = (int)w, m->stage = (int)s, m->K = (int)k, m->step = step;
    m->optimizer_steps = opt;
    return ZC_OK;
}

static zc_status read_scaler(const char *path, zc_manifest *m, zc_err *err)
{
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(m->root, "loss_scaler");
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(sc, "scale");
    const cJSON *dyn = cJSON_GetObjectItemCaseSensitive(sc, "dynamic");
    char b[48];
    if (!cJSON_IsNumber(scale) || !(scale->valuedouble >= FLT_MIN) ||
        !(scale->valuedouble <= FLT_MAX))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: loss_scaler.scale is %s, expected a positive "
                          "float32",
                          path, shown(scale, b));
    if (!cJSON_IsBool(dyn))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: loss_scaler.dynamic is %s, expected true or "
                          "false",
                          path, shown(dyn, b));
    int64_t hyst, iter, last, skipped;
    zc_status st;
    if ((st = get_int(path, "loss_scaler.", sc, "hysteresis_left", 0, MAX_INT, &hyst, err)) ||
        (st = get_int(path, "loss_scaler.", sc, "iter", 0, MAX_COUNT, &iter, err)) ||
        (st = get_int(path, "loss_scaler.", sc, "last_overflow_iter", -1, iter, &last, err)) ||
        (st = get_int(path, "loss_scaler.", sc, "skipped", 0, MAX_COUNT, &skipped, err)))
        return st;
    m->scaler =
        (zc_loss_scaler){scale->valuedouble, (int)hyst, iter, last, skipped, cJSON_IsTrue(dyn)};
    return ZC_OK;
}

static zc_status read_units(const char *path, zc_manifest *m, zc_err *err)
{
    const cJSON *units = cJSON_GetObjectItemCaseSensitive(m->root, "units");
    int n = cJSON_IsArray(units) ? cJSON_GetArraySize(units) : 0;
    if (n < 1 || n > (1 << 20))
        return zc_err_set(err, ZC_EINVAL, "%s: units must be an array of 1 to %d units", path,
                          1 << 20);
    m->nunits = n;
    m->numel = calloc((size_t)n, sizeof *m->numel);
    m->shard = calloc((size_t)n, sizeof *m->shard);
    m->stored = calloc((size_t)n, sizeof *m->stored);
    if (!m->numel || !m->shard || !m->stored)
        return zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
    int64_t total = 0;
    for (int u = 0; u < n; u++) {
        const cJSON *o = cJSON_GetArrayItem(units, u);
        char where[32];
        snprintf(where, sizeof where, "units[%d].", u);
        int64_t ne, sh;
        zc_status st = get_int(path, where, o, "numel", 1, MAX_ELEMS, &ne, err);
        if (st)
            return st;
        int64_t want = (ne + m->world - 1) / m->world;
        if ((st = get_int(path, where, o, "shard", want, want, &sh, err)))
            return st;
        const char *name = get_string(o, "name");
        if (!name || !name[0] || strlen(name) >= ZC_MAX_NAME)
            return zc_err_set(err, ZC_EINVAL, "%s: %sname must be a string of 1 to %d bytes", path,
                              where, ZC_MAX_NAME - 1);
        if ((total += ne) > MAX_ELEMS)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: the units hold more than %" PRId64 " elements in all", path,
                              MAX_ELEMS);
        /* format 4: "stored": false for a unit whose values the shards do not hold (a LoRA
         * run's frozen base, checked by base_digest) */
        const cJSON *stored = cJSON_GetObjectItemCaseSensitive(o, "stored");
        char b[48];
        if (stored && (m->format < 4 || !cJSON_IsBool(stored)))
            return zc_err_set(err, ZC_EINVAL, "%s: %sstored is %s, expected %s", path, where,
                              shown(stored, b),
                              m->format < 4 ? "no such key before format 4" : "true or false");
        m->numel[u] = (size_t)ne, m->shard[u] = (size_t)sh;
        m->stored[u] = stored && cJSON_IsFalse(stored) ? 0 : (size_t)ne;
        m->has_base |= !m->stored[u];
    }
    /* the base's digest: present exactly when some unit is not stored, 32 lowercase hex digits */
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(m->root, "base_digest");
    const char *hex = cJSON_IsString(dg) ? dg->valuestring : NULL;
    bool ok = hex && strlen(hex) == 32;
    for (int i = 0; ok && i < 32; i++)
        ok = isdigit((unsigned char)hex[i]) || (hex[i] >= 'a' && hex[i] <= 'f');
    char b[48];
    if (m->has_base && !ok)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: base_digest is %s, expected 32 lowercase hex digits (units not "
                          "stored are checked by it)",
                          path, dg ? shown(dg, b) : "missing");
    if (!m->has_base && dg)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: base_digest is given but every unit is stored (it checks the units "
                          "that are not)",
                          path);
    for (int k = 0; ok && k < 2; k++) {
        char part[17];
        memcpy(part, hex + 16 * k, 16);
        part[16] = 0;
        m->base_digest[k] = strtoull(part, NULL, 16);
    }
    return ZC_OK;
}

typedef struct {
    const char *name;
    int index;
} name_at;

static int by_name(const void *a, const void *b)
{
    const name_at *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* No two parameters may share a name: every reader keys tensors by name (a safetensors export
 * wrote the name twice, which no reader accepts). Sorted, not compared pairwise: there may be
 * 2^24 parameters. Reports the first repeated name with its two lowest indices. */
static zc_status unique_names(const char *path, const zc_manifest *m, zc_err *err)
{
    name_at *v = malloc((size_t)m->nparams * sizeof *v);
    if (!v)
        return zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
    for (int p = 0; p < m->nparams; p++)
        v[p] = (name_at){m->params[p].name, p};
    qsort(v, (size_t)m->nparams, sizeof *v, by_name);
    int a = -1, b = -1;
    for (int i = 1; i < m->nparams; i++)
        if (!strcmp(v[i - 1].name, v[i].name) && (a < 0 || v[i - 1].index < a))
            a = v[i - 1].index, b = v[i].index;
    free(v);
    if (a < 0)
        return ZC_OK;
    return zc_err_set(err, ZC_EINVAL,
                      "%s: params[%d] and params[%d] are both named '%s' (parameter names must "
                      "be unique)",
                      path, a, b, m->params[a].name);
}

/* The parameter table: each parameter's shape gives its element count, and within a unit the
 * parameters follow each other from offset 0 with no gap or overlap and fill it exactly. */
static zc_status read_params(const char *path, zc_manifest *m, zc_err *err)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(m->root, "params");
    int n = cJSON_IsArray(params) ? cJSON_GetArraySize(params) : 0;
    if (n < 1 || n > (1 << 24))
        return zc_err_set(err, ZC_EINVAL, "%s: params must be an array of 1 to %d parameters", path,
                          1 << 24);
    m->nparams = n;
    m->params = calloc((size_t)n, sizeof *m->params);
    size_t *filled = calloc((size_t)m->nunits, sizeof *filled);
    zc_status st = m->params && filled ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int p = 0; p < n && !st; p++) {
        const cJSON *o = cJSON_GetArrayItem(params, p);
        zc_param_info *pi = &m->params[p];
        char where[160], b[48];
        snprintf(where, sizeof where, "params[%d].", p);
        const char *name = get_string(o, "name");
        if (!name || !name[0] || strlen(name) >= ZC_MAX_NAME) {
            st = zc_err_set(err, ZC_EINVAL, "%s: %sname must be a string of 1 to %d bytes", path,
                            where, ZC_MAX_NAME - 1);
            break;
        }
        snprintf(pi->name, sizeof pi->name, "%s", name);
        snprintf(where, sizeof where, "params[%d] ('%.40s') ", p, name);
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
        int nd = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : 0;
        if (nd < 1 || nd > ZC_MAX_DIMS) {
            st = zc_err_set(err, ZC_EINVAL, "%s: %sshape is %s, expected 1 to %d dimensions", path,
                            where, shown(shape, b), ZC_MAX_DIMS);
            break;
        }
        int64_t numel = 1, unit, offset;
        for (int d = 0; d < nd && !st; d++) {
            const cJSON *it = cJSON_GetArrayItem(shape, d);
            double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
            if (!(v >= 1 && v <= (double)(MAX_ELEMS / numel) && v == floor(v)))
                st = zc_err_set(err, ZC_EINVAL,
                                "%s: %sshape is %s, expected positive integer "
                                "sizes of at most %" PRId64 " elements in all",
                                path, where, shown(shape, b), MAX_ELEMS);
            else
                numel *= (pi->shape[d] = (int64_t)v);
        }
        if (st || (st = get_int(path, where, o, "unit", 0, m->nunits - 1, &unit, err)) ||
            (st = get_int(path, where, o, "offset", 0, MAX_ELEMS, &offset, err)))
            break;
        pi->ndim = nd, pi->numel = (size_t)numel, pi->unit = (int)unit;
        pi->offset = (size_t)offset;
        size_t at = filled[unit];
        if (pi->offset != at)
            st = zc_err_set(err, ZC_EINVAL, "%s: %soffset is %zu, expected %zu: it %s", path, where,
                            pi->offset, at,
                            pi->offset < at ? "overlaps the previous parameter of its unit"
                                            : "leaves a gap after the previous parameter of "
                                              "its unit");
        else if (at + pi->numel > m->numel[unit])
            st = zc_err_set(err, ZC_EINVAL, "%s: %sends at element %zu of unit %d, which has %zu",
                            path, where, at + pi->numel, (int)unit, m->numel[unit]);
        filled[unit] = at + pi->numel;
    }
    for (int u = 0; u < m->nunits && !st; u++)
        if (filled[u] != m->numel[u])
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: the parameters of units[%d] cover %zu of its %zu "
                            "elements",
                            path, u, filled[u], m->numel[u]);
    free(filled);
    return st ? st : unique_names(path, m, err);
}

static zc_status read_files(const char *path, zc_manifest *m, zc_err *err)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(m->root, "files");
    if (!cJSON_IsArray(files) || cJSON_GetArraySize(files) != m->world)
        return zc_err_set(err, ZC_EINVAL, "%s: files must list one file per rank (world_size %d)",
                          path, m->world);
    m->crc = calloc((size_t)m->world, sizeof *m->crc);
    if (!m->crc)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int r = 0; r < m->world; r++) {
        const cJSON *f = cJSON_GetArrayItem(files, r);
        char where[32], want[32], b[48];
        snprintf(where, sizeof where, "files[%d].", r);
        snprintf(want, sizeof want, "rank-%05d.bin", r);
        const char *name = get_string(f, "name"), *crc = get_string(f, "crc32c");
        if (!name || strcmp(name, want))
            return zc_err_set(err, ZC_EINVAL, "%s: %sname is %s, expected \"%s\"", path, where,
                              shown(cJSON_GetObjectItemCaseSensitive(f, "name"), b), want);
        int64_t bytes,
            layout = (int64_t)zc_ckpt_file_bytes(m->stored, m->shard, m->nunits, r, m->K, m->q8);
        zc_status st = get_int(path, where, f, "bytes", layout, layout, &bytes, err);
        if (st)
            return st;
        bool hex = crc && strlen(crc) == 8;
        for (int i = 0; hex && i < 8; i++)
            hex = isdigit((unsigned char)crc[i]) || (crc[i] >= 'a' && crc[i] <= 'f');
        if (!hex)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: %scrc32c is %s, expected 8 lowercase hex "
                              "digits",
                              path, where, shown(cJSON_GetObjectItemCaseSensitive(f, "crc32c"), b));
        m->crc[r] = (uint32_t)strtoul(crc, NULL, 16);
    }
    return ZC_OK;
}

zc_status zc_manifest_read(const char *ckdir, zc_manifest *m, zc_err *err)
{
    memset(m, 0, sizeof *m);
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.json", ckdir);
    size_t len;
    zc_err why = {0};
    char *text = read_all(path, 64u << 20, &len, &why);
    if (!text && why.code == ZC_EIO)
        return zc_err_set(err, ZC_EIO, "'%s' is not a checkpoint: cannot read %s: %m", ckdir, path);
    if (!text)
        return zc_err_set(err, ZC_EINVAL, "'%s' is not a checkpoint: %s", ckdir, why.msg);
    zc_status st = ZC_OK;
    int64_t v = 0;
    m->root = strlen(text) == len ? cJSON_Parse(text) : NULL;
    if (!m->root || !cJSON_IsObject(m->root))
        st = zc_err_set(err, ZC_EINVAL, "%s: not JSON (a corrupt manifest)", path);
    else if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(m->root, "format_version")))
        st = zc_err_set(err, ZC_EINVAL, "%s: no format_version", path);
    else if ((st = get_int(path, "", m->root, "format_version", 1, 1 << 30, &v, err)))
        ;
    else if (v == 1)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: format version 1 has no manifest checksum "
                        "(manifest.sha256), so what it says cannot be trusted; this zeroc reads "
                        "formats %d to %d (use the zeroc that wrote it to resume or export it)",
                        path, ZC_MANIFEST_OLDEST, ZC_MANIFEST_VERSION);
    else if (v > ZC_MANIFEST_VERSION) {
        const char *pv = get_string(m->root, "producer_version");
        char shown_[700];
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: format version %" PRId64 " is newer than this zeroc's (it reads "
                        "formats %d to %d); it was written by zeroc %s: resume or export it with "
                        "that zeroc or a newer one",
                        path, v, ZC_MANIFEST_OLDEST, ZC_MANIFEST_VERSION,
                        pv ? printable(pv, strlen(pv), shown_) : "(version not recorded)");
    } else {
        m->format = (int)v;
        st = check_digest(ckdir, path, text, m->format, err);
    }
    free(text);
    if (!st)
        st = read_top(ckdir, path, m, err);
    if (!st)
        st = read_scaler(path, m, err);
    if (!st)
        st = read_units(path, m, err);
    if (!st)
        st = read_params(path, m, err);
    if (!st)
        st = read_files(path, m, err);
    if (st)
        zc_manifest_free(m);
    return st;
}

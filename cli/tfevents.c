/* tfevents.c — TensorBoard event files written by hand, so that a DeepSpeed config's
 * "tensorboard" section works with no TensorFlow, PyTorch or protobuf library: the format is
 * small and fixed. A file is a sequence of TFRecords (uint64 length, masked CRC-32C of the length,
 * the data, masked CRC-32C of the data; little-endian), each holding one Event message:
 * Event{1: double wall_time, 2: int64 step, 3: string file_version, 5: Summary summary},
 * Summary{1: repeated Value value}, Value{1: string tag, 2: float simple_value}. */
#include "cli/tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/crc32c.h"

struct tfevents {
    FILE *f;
    char path[4096];
};

uint32_t tfevents_masked_crc(const void *data, size_t n)
{
    uint32_t crc = zc_crc32c(0, data, n);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ---- protobuf encoding into a caller's buffer (sized by the caller: no bounds here) ---- */

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

static size_t put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return (size_t)bytes;
}

/* field key: (number << 3) | wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32) */
#define KEY(field, wire) ((uint8_t)((field) << 3 | (wire)))

static size_t value_len(const char *tag)
{
    size_t t = strlen(tag);
    return 1 + varint_len(t) + t + 1 + 4;
}

static zc_status write_record(tfevents *w, const uint8_t *data, size_t n, zc_err *err)
{
    uint8_t head[12], tail[4];
    put_le(head, n, 8);
    put_le(head + 8, tfevents_masked_crc(head, 8), 4);
    put_le(tail, tfevents_masked_crc(data, n), 4);
    if (fwrite(head, 1, sizeof head, w->f) != sizeof head || fwrite(data, 1, n, w->f) != n ||
        fwrite(tail, 1, sizeof tail, w->f) != sizeof tail || fflush(w->f) != 0)
        return zc_err_set(err, ZC_EIO, "%s: %s", w->path, strerror(errno));
    return ZC_OK;
}

/* An Event with wall_time and step, then either file_version or a Summary of the scalars. */
static zc_status write_event(tfevents *w, int64_t step, double wall_time, const char *version,
                             const char *const *tags, const double *values, int n, zc_err *err)
{
    size_t summary = 0, cap = 1 + 8 + 1 + 10 + 1 + 10 + 64;
    for (int i = 0; i < n; i++) {
        size_t v = value_len(tags[i]);
        summary += 1 + varint_len(v) + v;
    }
    cap += summary + (version ? strlen(version) : 0);
    uint8_t *buf = malloc(cap), *p = buf;
    if (!buf)
        return zc_err_set(err, ZC_ENOMEM, "out of memory for a TensorBoard event");
    uint64_t bits;
    memcpy(&bits, &wall_time, sizeof bits);
    *p++ = KEY(1, 1);
    p += put_le(p, bits, 8);
    *p++ = KEY(2, 0);
    p += put_varint(p, (uint64_t)step);
    if (version) {
        *p++ = KEY(3, 2);
        p += put_varint(p, strlen(version));
        memcpy(p, version, strlen(version));
        p += strlen(version);
    } else {
        *p++ = KEY(5, 2);
        p += put_varint(p, summary);
        for (int i = 0; i < n; i++) {
            size_t t = strlen(tags[i]);
            float f = (float)values[i];
            uint32_t fb;
            memcpy(&fb, &f, sizeof fb);
            *p++ = KEY(1, 2); /* Summary.value */
            p += put_varint(p, value_len(tags[i]));
            *p++ = KEY(1, 2); /* Value.tag */
            p += put_varint(p, t);
            memcpy(p, tags[i], t);
            p += t;
            *p++ = KEY(2, 5); /* Value.simple_value */
            p += put_le(p, fb, 4);
        }
    }
    zc_status st = write_record(w, buf, (size_t)(p - buf), err);
    free(buf);
    return st;
}

zc_status tfevents_open(const char *dir, tfevents **out, char *path_out, size_t path_cap,
                        zc_err *err)
{
    *out = NULL;
    tfevents *w = calloc(1, sizeof *w);
    if (!w)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "localhost");
    const time_t now = time(NULL);
    /* TensorBoard finds files by "tfevents" in the name; a second run in the same second and
     * directory gets the process id appended rather than replacing the first one's file */
    int fd = -1;
    for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
        int k = snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%010lld.%s", dir,
                         (long long)now, host);
        if (attempt)
            k += snprintf(w->path + k, sizeof w->path - (size_t)k, ".%ld", (long)getpid());
        if ((size_t)k >= sizeof w->path) {
            free(w);
            return zc_err_set(err, ZC_EINVAL, "%s: the event file's path is too long", dir);
        }
        fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
        zc_status st = zc_err_set(err, ZC_EIO, "%s: %s", w->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(w);
        return st;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    zc_status st = write_event(w, 0, (double)ts.tv_sec + ts.tv_nsec / 1e9, "brain.Event:2", NULL,
                               NULL, 0, err);
    if (st) {
        tfevents_close(w);
        return st;
    }
    if (path_out)
        snprintf(path_out, path_cap, "%s", w->path);
    *out = w;
    return ZC_OK;
}

zc_status tfevents_scalars(tfevents *w, int64_t step, double wall_time, const char *const *tags,
                           const double *values, int n, zc_err *err)
{
    return write_event(w, step, wall_time, NULL, tags, values, n, err);
}

void tfevents_close(tfevents *w)
{
    if (!w)
        return;
    fclose(w->f);
    free(w);
}

/* test_direct_file.c — src/offload/direct_file: files of sizes around the 8 MiB buffer and the
 * 4 KiB block (empty, one byte, a block, a buffer, a buffer and a byte, several buffers and a
 * tail), appended in uneven pieces, hold exactly the bytes appended and report their CRC32C; a
 * byte flipped on the disk after it landed — in the first buffer, in one read back while later
 * ones are written, in the last one read after the fsync — fails the close naming the file and
 * both CRCs; an aborted file is closed without a word. All of it twice: with O_DIRECT, and through
 * the page cache (the path of a file system that refuses O_DIRECT: read back after the fsync).
 *
 * Usage: test_direct_file DIR — DIR on a file system with O_DIRECT (ctest passes the build
 * directory); the test works in a fresh subdirectory and removes it. */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "offload/direct_file.h"
#include "util/crc32c.h"

enum { BUF = 8 << 20 };

static char dir[PATH_MAX];
static bool buffered; /* this pass opens its files through the page cache */

static zc_status open_file(zc_direct_file **f, const char *path, zc_err *err)
{
    return buffered ? zc_direct_file_open_buffered(f, path, err)
                    : zc_direct_file_open(f, path, err);
}

/* Byte i of a file's content: differs by position and seed, never the same for long. */
static unsigned char pat(uint64_t seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xD1B54A32D192ED03ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (unsigned char)(x >> 56);
}

/* Writes size bytes of pattern `seed` to name in pieces of 1, 4093, 1 MiB + 3, ... bytes,
 * flipping the byte at flip_at (-1: none); returns close's status, its message in msg. */
static zc_status write_file(const char *name, size_t size, uint64_t seed, int64_t flip_at,
                            uint32_t *crc, char *msg, size_t msg_len)
{
    static const size_t pieces[] = {1, 4093, (1 << 20) + 3, 64, 3 << 20, 4096};
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unsigned char *data = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++)
        data[i] = pat(seed, i);
    zc_err err = {0};
    zc_direct_file *f;
    zc_status st = open_file(&f, path, &err);
    CHECK(!st, "open %s: %s", name, err.msg);
    if (st) {
        free(data);
        return st;
    }
    if (flip_at >= 0)
        zc_direct_file_flip_after_landing(f, flip_at);
    for (size_t at = 0, p = 0; at < size && !st; p++) {
        size_t k = pieces[p % (sizeof pieces / sizeof *pieces)];
        k = k < size - at ? k : size - at;
        st = zc_direct_file_append(f, data + at, k, &err);
        CHECK(!st, "append to %s at %zu: %s", name, at, err.msg);
        at += k;
    }
    if (st) {
        zc_direct_file_abort(f);
        free(data);
        return st;
    }
    st = zc_direct_file_close(f, crc, &err);
    snprintf(msg, msg_len, "%s", st ? err.msg : "");
    if (!st) { /* the file holds the bytes, exactly */
        CHECK(*crc == zc_crc32c(0, data, size), "%s: close's CRC %08x, the data's %08x", name, *crc,
              zc_crc32c(0, data, size));
        struct stat sb;
        CHECK(!stat(path, &sb) && (size_t)sb.st_size == size, "%s: %lld bytes, %zu written", name,
              (long long)sb.st_size, size);
        unsigned char *back = malloc(size ? size : 1);
        int fd = open(path, O_RDONLY);
        ssize_t r = size ? pread(fd, back, size, 0) : 0;
        close(fd);
        CHECK(r == (ssize_t)size && !memcmp(back, data, size), "%s: content differs", name);
        free(back);
    }
    free(data);
    return st;
}

static void test_sizes(void)
{
    const size_t sizes[] = {0, 1, 4095, 4096, 4097, BUF - 1, BUF, BUF + 1, 3 * BUF + 12345};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char name[64], msg[1024];
        uint32_t crc = 0;
        snprintf(name, sizeof name, "size-%zu%s.bin", sizes[i], buffered ? "-buffered" : "");
        zc_status st = write_file(name, sizes[i], i, -1, &crc, msg, sizeof msg);
        CHECK(!st, "%s: %s", name, msg);
    }
}

/* A flip in each place the read-back can find it: the first buffer (read back while the second
 * is written), a middle one, the tail (read after the fsync), and a file of one short buffer. */
static void test_flips(void)
{
    const struct {
        size_t size;
        int64_t at;
    } cases[] = {{3 * BUF + 12345, 64},
                 {3 * BUF + 12345, BUF + 7},
                 {3 * BUF + 12345, 3 * BUF + 12000},
                 {5000, 4999}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[64], msg[1024];
        uint32_t crc = 0;
        snprintf(name, sizeof name, "flip-%zu%s.bin", i, buffered ? "-buffered" : "");
        zc_status st = write_file(name, cases[i].size, 100 + i, cases[i].at, &crc, msg, sizeof msg);
        CHECK(st == ZC_EIO, "%s: a byte flipped at %lld went unnoticed (status %d)", name,
              (long long)cases[i].at, (int)st);
        CHECK(strstr(msg, name) && strstr(msg, "CRC32C") && strstr(msg, "read back"),
              "%s: the message names neither the file nor the CRC: %s", name, msg);
    }
}

static void test_abort(void)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/aborted.bin", dir);
    zc_err err = {0};
    zc_direct_file *f;
    CHECK(!open_file(&f, path, &err), "open: %s", err.msg);
    unsigned char *junk = calloc(1, BUF + 100);
    CHECK(!zc_direct_file_append(f, junk, BUF + 100, &err), "append: %s", err.msg);
    zc_direct_file_abort(f); /* with a write in flight: no wait left behind, nothing leaked */
    zc_direct_file_abort(NULL);
    free(junk);
    char missing[PATH_MAX + 64];
    snprintf(missing, sizeof missing, "%s/no-such-dir/x.bin", dir);
    zc_status st = open_file(&f, missing, &err);
    CHECK(st == ZC_EIO && strstr(err.msg, missing), "open in a missing directory: %d %s", (int)st,
          err.msg);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_direct_file DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s/direct-file-XXXXXX", argv[1]);
    if (!mkdtemp(dir)) {
        perror(dir);
        return 2;
    }
    for (int pass = 0; pass < 2; pass++) {
        buffered = pass == 1;
        test_sizes();
        test_flips();
        test_abort();
    }
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd))
        fprintf(stderr, "could not remove %s\n", dir);
    return check_summary();
}

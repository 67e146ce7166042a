/* test_aio.c — the swap tier's I/O (src/offload): asynchronous transfers through both engines
 * (io_uring and the thread pool, each asked for explicitly) under several block sizes, queue
 * depths, submit and overlap modes and thread counts, read back byte for byte against a model
 * of the file; exact byte counters; errors with their messages (truncated file, injected and
 * real errno, the ZEROC_FAULT_IO hook, no space, missing directory); swap files leave no name
 * behind and give their space back; the synchronous unaligned calls against the model.
 *
 * Usage: test_aio DIR — DIR must be on a file system with O_DIRECT (ctest passes the build
 * directory); the test works in a fresh subdirectory and removes it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "offload/swap.h"

enum { A = ZC_AIO_ALIGN, MIB = 1 << 20 };

static char dir[PATH_MAX]; /* the test's own directory */

/* Byte i of a pattern: differs by position and seed, never the same for long. */
static unsigned char pat(uint64_t seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xD1B54A32D192ED03ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (unsigned char)(x >> 56);
}

static void *xalloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, A, n ? n : A)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static bool has(const char *msg, const char *s)
{
    return strstr(msg, s) != NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int entries(const char *d)
{
    DIR *h = opendir(d);
    if (!h)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(h));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(h);
    return n;
}

/* The descriptor behind s, found as /proc/self/fd/N -> "<path> (deleted)": the swap keeps its
 * fd to itself, and this also shows the name is gone. -1 if not found. */
static int swap_fd(const zc_swap *s)
{
    DIR *h = opendir("/proc/self/fd");
    if (!h)
        return -1;
    int fd = -1;
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s (deleted)", zc_swap_path(s));
    for (struct dirent *e; fd < 0 && (e = readdir(h));) {
        char link[300], target[PATH_MAX + 16];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            if (!strcmp(target, want))
                fd = atoi(e->d_name);
        }
    }
    closedir(h);
    return fd;
}

static uint64_t free_bytes(void)
{
    struct statvfs v;
    if (statvfs(dir, &v))
        return 0;
    return (uint64_t)v.f_bavail * v.f_frsize;
}

typedef struct {
    int64_t block_size;
    int queue_depth, thread_count;
    bool single_submit, overlap_events;
} knobs;

static zc_aio *make_aio(zc_aio_engine engine, knobs k)
{
    zc_aio_config c = {.engine = engine,
                       .block_size = k.block_size,
                       .queue_depth = k.queue_depth,
                       .thread_count = k.thread_count,
                       .single_submit = k.single_submit,
                       .overlap_events = k.overlap_events};
    zc_aio *a = NULL;
    zc_err err = {0};
    CHECK(!zc_aio_create(&a, &c, &err), "zc_aio_create(%s): %s", zc_aio_engine_name(engine),
          err.msg);
    if (a)
        CHECK(zc_aio_engine_used(a) == engine, "asked for %s, got %s", zc_aio_engine_name(engine),
              zc_aio_engine_name(zc_aio_engine_used(a)));
    return a;
}

static zc_swap *make_swap(int rank, int64_t bytes, zc_aio *a)
{
    zc_swap *s = NULL;
    zc_err err = {0};
    CHECK(!zc_swap_create(&s, "nvme_path", dir, rank, bytes, a, &err), "zc_swap_create: %s",
          err.msg);
    if (!s) {
        fprintf(stderr, "cannot go on without a swap file\n");
        exit(1);
    }
    return s;
}

/* ---------- many concurrent transfers, read back against the model ---------- */

enum { NT = 24 };
/* transfer sizes in blocks; offsets follow one another with gaps of 0–2 blocks */
static const int sizes[NT] = {1, 2,   3, 7, 16, 31, 64, 255, 256, 257, 300, 1,
                              2, 128, 5, 9, 1,  4,  33, 2,   11,  6,   3,   70};

static void roundtrip(zc_aio_engine engine, knobs k)
{
    char what[128];
    snprintf(what, sizeof what, "%s bs=%lld qd=%d threads=%d single=%d overlap=%d",
             zc_aio_engine_name(engine), (long long)k.block_size, k.queue_depth, k.thread_count,
             k.single_submit, k.overlap_events);
    zc_aio *a = make_aio(engine, k);
    if (!a)
        return;
    int64_t off[NT], total = 0, at = 0;
    for (int i = 0; i < NT; i++) {
        at += (i % 3) * A;
        off[i] = at;
        at += (int64_t)sizes[i] * A;
        total += (int64_t)sizes[i] * A;
    }
    const int64_t bytes = at + 2 * A; /* a never-written tail */
    zc_swap *s = make_swap(0, bytes, a);
    unsigned char *model = calloc(1, (size_t)bytes), *src = xalloc((size_t)bytes),
                  *dst = xalloc((size_t)bytes);
    for (int64_t i = 0; i < bytes; i++)
        src[i] = pat((uint64_t)k.block_size + (uint64_t)k.queue_depth, (uint64_t)i);
    zc_aio_op ops[NT] = {{0}};
    zc_err err = {0};
    const double t0 = now();

    for (int i = 0; i < NT; i++) { /* all in flight at once */
        zc_swap_write(s, &ops[i], src + off[i], (size_t)sizes[i] * A, off[i]);
        memcpy(model + off[i], src + off[i], (size_t)sizes[i] * A);
    }
    int bad = 0;
    for (int i = NT - 1; i >= 0; i--) { /* waited for out of order */
        bad += zc_swap_wait(s, &ops[i], &err) != ZC_OK;
        bad += ops[i].pending != 0 || ops[i].len != 0; /* idle again */
    }
    CHECK(!bad, "%s: writes: %s", what, err.msg);
    zc_aio_counters c = zc_aio_get_counters(a);
    CHECK(c.bytes_written == total && c.bytes_read == 0, "%s: counters after writes %lld/%lld",
          what, (long long)c.bytes_written, (long long)c.bytes_read);

    memset(dst, 0xEE, (size_t)bytes);
    for (int i = 0; i < NT; i++)
        zc_swap_read(s, &ops[i], dst + off[i], (size_t)sizes[i] * A, off[i]);
    for (int i = 0; i < NT; i++)
        bad += zc_swap_wait(s, &ops[i], &err) != ZC_OK;
    CHECK(!bad, "%s: reads: %s", what, err.msg);
    for (int i = 0; i < NT; i++)
        bad += memcmp(dst + off[i], model + off[i], (size_t)sizes[i] * A) != 0;
    CHECK(!bad, "%s: %d transfers read back differently", what, bad);

    /* the whole file in one transfer: written regions, and zeros in the gaps and the tail */
    memset(dst, 0xEE, (size_t)bytes);
    zc_swap_read(s, &ops[0], dst, (size_t)bytes, 0);
    CHECK(!zc_swap_wait(s, &ops[0], &err), "%s: whole read: %s", what, err.msg);
    CHECK(!memcmp(dst, model, (size_t)bytes), "%s: whole file differs from the model", what);
    c = zc_aio_get_counters(a);
    const double wall = now() - t0;
    CHECK(c.bytes_written == total && c.bytes_read == total + bytes,
          "%s: counters %lld written (want %lld), %lld read (want %lld)", what,
          (long long)c.bytes_written, (long long)total, (long long)c.bytes_read,
          (long long)(total + bytes));
    CHECK(c.wait_seconds >= 0 && c.wait_seconds <= wall, "%s: wait_seconds %g outside [0, %g]",
          what, c.wait_seconds, wall);

    /* progress without the caller: a transfer completes while nobody waits */
    zc_swap_write(s, &ops[0], src, (size_t)bytes, 0);
    bool done = false;
    for (int t = 0; t < 20000 && !(done = zc_aio_done(a, &ops[0])); t++)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    CHECK(done, "%s: a transfer nobody waits for did not complete", what);
    CHECK(!zc_swap_wait(s, &ops[0], &err), "%s: %s", what, err.msg);
    CHECK(zc_aio_get_counters(a).bytes_written == total + bytes, "%s: written after rewrite", what);
    /* an idle op and an empty transfer are done at once */
    CHECK(zc_aio_done(a, &ops[1]) && !zc_aio_wait(a, &ops[1], &err), "%s: idle op", what);
    zc_swap_read(s, &ops[1], dst, 0, 0);
    CHECK(zc_aio_done(a, &ops[1]) && !zc_swap_wait(s, &ops[1], &err), "%s: empty transfer", what);

    zc_swap_destroy(s);
    zc_aio_destroy(a);
    free(model);
    free(src);
    free(dst);
}

/* ---------- errors ---------- */

static void errors(zc_aio_engine engine, knobs k)
{
    const char *en = zc_aio_engine_name(engine);
    zc_aio *a = make_aio(engine, k);
    if (!a)
        return;
    zc_err err = {0};
    zc_aio_op op = {0};
    const int64_t bytes = 4 * MIB;
    unsigned char *buf = xalloc(bytes), *back = xalloc(bytes);
    for (int64_t i = 0; i < bytes; i++)
        buf[i] = pat(7, (uint64_t)i);

    /* a real errno from the kernel: a bad descriptor */
    zc_aio_read(a, &op, -1, "/no/such/swap", back, A, 3 * A);
    CHECK(zc_aio_wait(a, &op, &err) == ZC_EIO &&
              has(err.msg, "file '/no/such/swap': read of 4096 bytes at offset 12288: "
                           "Bad file descriptor"),
          "%s: bad fd: %s", en, err.msg);

    zc_swap *s = make_swap(1, bytes, a);
    const zc_aio_counters c0 = zc_aio_get_counters(a);
    /* injected: every request fails, nothing moves, the offset is the transfer's */
    op.inject_errno = ENOSPC;
    zc_aio_write(a, &op, swap_fd(s), zc_swap_path(s), buf, 3 * A, 2 * A);
    CHECK(zc_aio_wait(a, &op, &err) == ZC_EIO && has(err.msg, zc_swap_path(s)) &&
              has(err.msg, "write of") && has(err.msg, "at offset 8192: No space left on device"),
          "%s: injected: %s", en, err.msg);
    CHECK(op.inject_errno == 0, "%s: the wait clears inject_errno", en);
    zc_aio_counters c1 = zc_aio_get_counters(a);
    CHECK(c1.bytes_written == c0.bytes_written && c1.bytes_read == c0.bytes_read,
          "%s: an injected failure moved bytes", en);

    /* truncated behind the swap's back */
    zc_swap_write(s, &op, buf, bytes, 0);
    CHECK(!zc_swap_wait(s, &op, &err) && !zc_swap_check(s, &err), "%s: %s", en, err.msg);
    int fd = swap_fd(s);
    CHECK(fd >= 0, "%s: the swap's descriptor is not an unlinked file", en);
    if (fd >= 0 && !ftruncate(fd, MIB)) {
        char want[160];
        snprintf(want, sizeof want, "swap file '%s' was truncated to 1048576 bytes (expected %lld)",
                 zc_swap_path(s), (long long)bytes);
        CHECK(zc_swap_check(s, &err) == ZC_EIO && has(err.msg, want), "%s: check: %s", en, err.msg);
        zc_swap_read(s, &op, back, MIB, 2 * MIB);
        CHECK(zc_swap_wait(s, &op, &err) == ZC_EIO &&
                  has(err.msg, "unexpected end of file (was the file truncated?)") &&
                  has(err.msg, zc_swap_path(s)) && has(err.msg, "read of"),
              "%s: read past the cut: %s", en, err.msg);
        if (k.queue_depth == 1) { /* one request at a time: the first to fail is the first */
            char first[96];
            snprintf(first, sizeof first, "read of %lld bytes at offset 2097152: unexpected",
                     (long long)(k.block_size < MIB ? k.block_size : MIB));
            CHECK(has(err.msg, first), "%s: not the first error: %s", en, err.msg);
        }
        /* a transfer across the cut fails; the part before it still reads */
        zc_swap_read(s, &op, back, 2 * A, MIB - A);
        CHECK(zc_swap_wait(s, &op, &err) == ZC_EIO && has(err.msg, "unexpected end of file"),
              "%s: read across the cut: %s", en, err.msg);
        zc_swap_read(s, &op, back, MIB, 0);
        CHECK(!zc_swap_wait(s, &op, &err) && !memcmp(back, buf, MIB), "%s: before the cut: %s", en,
              err.msg);
        /* cut inside a block: the short read is retried, then reported */
        CHECK(!ftruncate(fd, MIB + 100), "ftruncate");
        zc_swap_read(s, &op, back, 2 * A, MIB);
        CHECK(zc_swap_wait(s, &op, &err) == ZC_EIO && has(err.msg, "unexpected end of file"),
              "%s: read across an unaligned cut: %s", en, err.msg);
        bool zeros = true; /* cut to 1 MiB, then extended: zeros up to the new end */
        for (int i = 0; i < 100; i++)
            zeros &= back[i] == 0;
        CHECK(zeros, "%s: the 100 bytes before the cut", en);
    }
    zc_swap_destroy(s);

    /* the fault hook: the K-th asynchronous read/write of rank R, counted per swap */
    setenv("ZEROC_FAULT_IO", "read:3@2,write:3@1", 1);
    zc_swap *s3 = make_swap(3, bytes, a), *s0 = make_swap(0, bytes, a);
    unsetenv("ZEROC_FAULT_IO");
    zc_swap_write(s0, &op, buf, A, 0);
    CHECK(!zc_swap_wait(s0, &op, &err), "%s: rank 0 is not rank 3: %s", en, err.msg);
    zc_swap_write(s3, &op, buf, 2 * A, 5 * A);
    CHECK(zc_swap_wait(s3, &op, &err) == ZC_EIO && has(err.msg, zc_swap_path(s3)) &&
              has(err.msg, "write of") && has(err.msg, "at offset 20480: Input/output error"),
          "%s: write 1 of rank 3: %s", en, err.msg);
    zc_swap_write(s3, &op, buf, 2 * A, 5 * A);
    CHECK(!zc_swap_wait(s3, &op, &err), "%s: write 2 of rank 3: %s", en, err.msg);
    zc_swap_read(s3, &op, back, 2 * A, 5 * A);
    CHECK(!zc_swap_wait(s3, &op, &err) && !memcmp(back, buf, 2 * A), "%s: read 1: %s", en, err.msg);
    zc_swap_read(s3, &op, back, A, 6 * A);
    CHECK(zc_swap_wait(s3, &op, &err) == ZC_EIO &&
              has(err.msg, "read of 4096 bytes at offset 24576: Input/output error"),
          "%s: read 2 of rank 3: %s", en, err.msg);
    zc_swap_read(s3, &op, back, A, 6 * A);
    CHECK(!zc_swap_wait(s3, &op, &err) && !memcmp(back, buf + A, A), "%s: read 3: %s", en, err.msg);
    zc_swap_destroy(s3);
    zc_swap_destroy(s0);

    /* destroy with transfers in flight waits for them: the data is on disk afterwards */
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/plain-direct", dir);
    int pfd = open(path, O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
    CHECK(pfd >= 0 && !fallocate(pfd, 0, 0, bytes), "%s: %s: %m", en, path);
    unlink(path);
    zc_aio_op many[8] = {{0}};
    for (int i = 0; i < 8; i++)
        zc_aio_write(a, &many[i], pfd, path, buf + i * (bytes / 8), bytes / 8, i * (bytes / 8));
    zc_aio_destroy(a);
    memset(back, 0, bytes);
    CHECK(zc_aio_pio(pfd, false, back, bytes, 0) == 0 && !memcmp(back, buf, bytes),
          "%s: destroy did not finish the writes in flight", en);
    close(pfd);
    free(buf);
    free(back);
}

/* ---------- creating swap files ---------- */

static void creation(zc_aio *a)
{
    zc_err err = {0};
    zc_swap *s = NULL;
    char p[PATH_MAX + 32];

    snprintf(p, sizeof p, "%s/missing", dir);
    CHECK(zc_swap_create(&s, "nvme_path", p, 0, MIB, a, &err) == ZC_EIO && !s && has(err.msg, p) &&
              has(err.msg, "does not exist"),
          "missing dir: %s", err.msg);
    snprintf(p, sizeof p, "%s/plain", dir);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL, "cannot create %s", p);
    if (f)
        fclose(f);
    CHECK(zc_swap_create(&s, "nvme_path", p, 0, MIB, a, &err) == ZC_EIO && !s && has(err.msg, p) &&
              has(err.msg, "is not a directory"),
          "dir is a file: %s", err.msg);
    unlink(p);
    if (geteuid() != 0) { /* root writes anywhere */
        snprintf(p, sizeof p, "%s/readonly", dir);
        CHECK(!mkdir(p, 0500), "mkdir %s", p);
        CHECK(zc_swap_create(&s, "nvme_path", p, 0, MIB, a, &err) == ZC_EIO && !s &&
                  has(err.msg, p) && has(err.msg, "cannot create swap file") &&
                  has(err.msg, "Permission denied"),
              "read-only dir: %s", err.msg);
        rmdir(p);
    }

    /* more than the file system has: refused with both numbers, nothing left behind */
    const uint64_t avail = free_bytes();
    if (avail < (1ull << 50)) {
        const int64_t want = (int64_t)((avail + (1ull << 30)) & ~(uint64_t)(A - 1));
        CHECK(zc_swap_create(&s, "nvme_path", dir, 5, want, a, &err) == ZC_EIO && !s &&
                  has(err.msg, "not enough space for rank 5's swap file") &&
                  has(err.msg, "needs") && has(err.msg, "free") && has(err.msg, dir),
              "no space: %s", err.msg);
        CHECK(entries(dir) == 0, "a failed create left %d entries in %s", entries(dir), dir);
    } else {
        printf("note: %s has %llu bytes free; no-space case not tried\n", dir,
               (unsigned long long)avail);
    }

    /* a successful create: the name is gone at once, the space is held, then given back */
    const int64_t big = 512 * (int64_t)MIB, tol = 128 * (int64_t)MIB;
    const uint64_t before = free_bytes();
    zc_swap *s2 = make_swap(2, big, a), *s2b = make_swap(2, A, a);
    CHECK(entries(dir) == 0, "a swap file left a name in %s", dir);
    CHECK(zc_swap_bytes(s2) == big, "zc_swap_bytes");
    const char *name = strrchr(zc_swap_path(s2), '/');
    char pid[32];
    snprintf(pid, sizeof pid, "-%ld-rank2-", (long)getpid());
    CHECK(name && !strncmp(name, "/zeroc-", 7) && has(name, pid) &&
              !strcmp(name + strlen(name) - 5, ".swap"),
          "swap name %s", zc_swap_path(s2));
    CHECK(strcmp(zc_swap_path(s2), zc_swap_path(s2b)) != 0, "two swaps, one name");
    const uint64_t held = free_bytes();
    CHECK(held + (uint64_t)(big - tol) <= before, "free space %llu -> %llu: not preallocated",
          (unsigned long long)before, (unsigned long long)held);
    CHECK(!zc_swap_check(s2, &err), "check: %s", err.msg);
    zc_swap_destroy(s2);
    zc_swap_destroy(s2b);
    uint64_t after = free_bytes();
    for (int t = 0; t < 100 && after + (uint64_t)tol < before; t++) {
        nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
        after = free_bytes();
    }
    CHECK(after + (uint64_t)tol >= before, "free space %llu -> %llu after destroy: not returned",
          (unsigned long long)before, (unsigned long long)after);
}

/* ---------- bad configurations ---------- */

static void configs(void)
{
    zc_err err = {0};
    zc_aio *a = NULL;
    zc_aio_config c = {
        .engine = ZC_AIO_THREADS, .block_size = 1000, .queue_depth = 4, .thread_count = 1};
    CHECK(zc_aio_create(&a, &c, &err) == ZC_EINVAL && !a && has(err.msg, "block_size 1000"),
          "block_size: %s", err.msg);
    c.block_size = A, c.queue_depth = 0;
    CHECK(zc_aio_create(&a, &c, &err) == ZC_EINVAL && has(err.msg, "queue_depth 0"),
          "queue_depth: %s", err.msg);
    c.queue_depth = 4, c.thread_count = 0;
    CHECK(zc_aio_create(&a, &c, &err) == ZC_EINVAL && has(err.msg, "thread_count 0"),
          "thread_count: %s", err.msg);
    CHECK(!strcmp(zc_aio_engine_name(ZC_AIO_AUTO), "auto") &&
              !strcmp(zc_aio_engine_name(ZC_AIO_URING), "io_uring") &&
              !strcmp(zc_aio_engine_name(ZC_AIO_THREADS), "threads"),
          "engine names");
}

/* ---------- synchronous, unaligned, against the model ---------- */

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

static void sync_model(zc_aio *a)
{
    const int64_t bytes = 3 * (int64_t)MIB + 16 * A;
    zc_swap *s = make_swap(4, bytes, a);
    unsigned char *model = calloc(1, (size_t)bytes), *got = malloc((size_t)bytes + 1),
                  *src = malloc((size_t)bytes);
    zc_err err = {0};
    memset(got, 0xEE, (size_t)bytes);
    CHECK(!zc_swap_pread(s, got + 1, (size_t)bytes - 1, 1, &err) &&
              !memcmp(got + 1, model, (size_t)bytes - 1),
          "a fresh file reads zeros: %s", err.msg);
    const struct {
        int64_t off, len;
    } fixed[] = {
        {1, 1},        {4095, 1},    {4095, 2},      {4096, 4095},         {4097, 4097},
        {0, 4096},     {5, MIB + 3}, {bytes - 1, 1}, {bytes - 4097, 4097}, {MIB - 3, 2 * MIB + 7},
        {123457, MIB}, {0, bytes},   {8190, 3},      {2 * MIB + 1, 0}};
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    uint64_t x = 42;
    int bad = 0;
    for (int k = 0; k < nfixed + 40; k++) {
        int64_t off, len;
        if (k < nfixed) {
            off = fixed[k].off, len = fixed[k].len;
        } else {
            off = (int64_t)(lcg(&x) % (uint64_t)bytes);
            len = (int64_t)(lcg(&x) % (uint64_t)(3 * MIB / 2));
            if (len > bytes - off)
                len = bytes - off;
        }
        for (int64_t i = 0; i < len; i++)
            src[i] = pat(100 + (uint64_t)k, (uint64_t)i);
        bad += zc_swap_pwrite(s, src, (size_t)len, off, &err) != ZC_OK;
        memcpy(model + off, src, (size_t)len);
        /* a range around it, and a random one */
        int64_t r0 = off > 5000 ? off - 5000 : 0,
                r1 = off + len + 5000 < bytes ? off + len + 5000 : bytes;
        bad += zc_swap_pread(s, got, (size_t)(r1 - r0), r0, &err) != ZC_OK;
        bad += memcmp(got, model + r0, (size_t)(r1 - r0)) != 0;
        r0 = (int64_t)(lcg(&x) % (uint64_t)bytes);
        r1 = r0 + (int64_t)(lcg(&x) % (uint64_t)(bytes - r0 + 1));
        bad += zc_swap_pread(s, got, (size_t)(r1 - r0), r0, &err) != ZC_OK;
        bad += memcmp(got, model + r0, (size_t)(r1 - r0)) != 0;
    }
    CHECK(!bad, "synchronous writes and reads: %d mismatches (%s)", bad, err.msg);

    /* the asynchronous calls see what the synchronous ones wrote, and the other way round */
    unsigned char *al = xalloc(2 * MIB);
    zc_aio_op op = {0};
    zc_swap_read(s, &op, al, 2 * MIB, MIB - 8 * A);
    CHECK(!zc_swap_wait(s, &op, &err) && !memcmp(al, model + MIB - 8 * A, 2 * MIB),
          "async read after sync writes: %s", err.msg);
    for (int64_t i = 0; i < 2 * MIB; i++)
        al[i] = pat(999, (uint64_t)i);
    zc_swap_write(s, &op, al, 2 * MIB, 4 * A);
    CHECK(!zc_swap_wait(s, &op, &err), "async write: %s", err.msg);
    memcpy(model + 4 * A, al, 2 * MIB);
    CHECK(!zc_swap_pread(s, got, (size_t)bytes, 0, &err) && !memcmp(got, model, (size_t)bytes),
          "the whole file after mixed writes: %s", err.msg);

    /* views and stages: up to ZC_SWAP_VIEW_MAX bytes at any offset, in place in the swap's
     * buffer; a stage not committed writes nothing */
    bad = 0;
    for (int k = 0; k < 60; k++) {
        int64_t off = (int64_t)(lcg(&x) % (uint64_t)bytes);
        int64_t len = k < 3 ? ZC_SWAP_VIEW_MAX : (int64_t)(lcg(&x) % (ZC_SWAP_VIEW_MAX + 1));
        off = k == 0 ? 0 : k == 1 ? A - 1 : k == 2 ? bytes - len : off;
        if (len > bytes - off)
            len = bytes - off;
        void *w = NULL;
        bad += zc_swap_stage(s, (size_t)len, off, &w, &err) != ZC_OK;
        for (int64_t i = 0; w && i < len; i++)
            ((unsigned char *)w)[i] = pat(500 + (uint64_t)k, (uint64_t)i);
        if (k % 4 != 3) { /* every fourth left uncommitted */
            if (w)
                memcpy(model + off, w, (size_t)len); /* before the commit: then w may go */
            bad += zc_swap_commit(s, &err) != ZC_OK;
        }
        int64_t r0 = (int64_t)(lcg(&x) % (uint64_t)bytes);
        int64_t n = (int64_t)(lcg(&x) % (ZC_SWAP_VIEW_MAX + 1));
        n = n < bytes - r0 ? n : bytes - r0;
        const void *v = NULL;
        bad += zc_swap_view(s, (size_t)n, r0, &v, &err) != ZC_OK;
        bad += v && memcmp(v, model + r0, (size_t)n) != 0;
    }
    CHECK(!bad && !zc_swap_pread(s, got, (size_t)bytes, 0, &err) &&
              !memcmp(got, model, (size_t)bytes),
          "views and stages: %d mismatches (%s)", bad, err.msg);
    zc_swap_destroy(s);
    free(al);
    free(model);
    free(got);
    free(src);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_aio DIR (on a file system with O_DIRECT)\n");
        return 2;
    }
    char base[PATH_MAX]; /* absolute: the test finds the swap's fd by its /proc link */
    if (!realpath(argv[1], base)) {
        fprintf(stderr, "%s: %m\n", argv[1]);
        return 1;
    }
    if (snprintf(dir, sizeof dir, "%s/aio-test-XXXXXX", base) >= (int)sizeof dir || !mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp %s: %m\n", dir);
        return 1;
    }
    configs();

    zc_aio_engine engines[2] = {ZC_AIO_URING, ZC_AIO_THREADS};
    int nengines = 2;
    {
        zc_aio *probe = NULL;
        zc_err err = {0};
        zc_aio_config c = {
            .engine = ZC_AIO_URING, .block_size = A, .queue_depth = 1, .thread_count = 1};
        if (zc_aio_create(&probe, &c, &err)) {
            printf("note: io_uring is not available here (%s); testing the thread pool only\n",
                   err.msg);
            engines[0] = ZC_AIO_THREADS, nengines = 1;
        }
        zc_aio_destroy(probe);
        c.engine = ZC_AIO_AUTO;
        CHECK(!zc_aio_create(&probe, &c, &err) && zc_aio_engine_used(probe) == engines[0],
              "auto chose %s", probe ? zc_aio_engine_name(zc_aio_engine_used(probe)) : "-");
        zc_aio_destroy(probe);
    }

    const knobs ks[] = {
        {A, 1, 1, true, true},     {A, 32, 4, false, false},        {A, 32, 4, true, true},
        {A, 1, 4, false, false},   {MIB, 1, 1, false, true},        {MIB, 32, 4, true, false},
        {MIB, 32, 1, false, true}, {64 * 1024, 8, 2, false, false},
    };
    for (int e = 0; e < nengines; e++) {
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
            roundtrip(engines[e], ks[k]);
        errors(engines[e], (knobs){A, 4, 2, false, true});
        errors(engines[e], (knobs){MIB, 32, 1, true, false});
        errors(engines[e], (knobs){A, 1, 1, false, true});
    }

    zc_aio *a = make_aio(engines[0], (knobs){MIB, 8, 1, false, true});
    if (a) {
        creation(a);
        sync_model(a);
        zc_aio_destroy(a);
    }
    CHECK(entries(dir) == 0, "%d entries left in %s", entries(dir), dir);
    rmdir(dir);
    return check_summary();
}

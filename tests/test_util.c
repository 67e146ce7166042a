/* test_util.c — the small pieces everything relies on: SHA-256 against FIPS 180-4's vectors,
 * the counter-based generator's purity (a value depends only on its key, so any slice of a
 * parameter can be initialised alone), and the memory ledger's byte counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/init_values.h"
#include "util/crc32c.h"
#include "util/sha256.h"
#include "zeroc/mem.h"
#include "zeroc/rng.h"

static void sha_hex(const void *data, size_t n, char out[65])
{
    zc_sha256 s;
    uint8_t d[32];
    zc_sha256_init(&s);
    /* feed in uneven pieces to exercise the buffering */
    const char *p = data;
    size_t step = 1;
    while (n) {
        size_t k = step < n ? step : n;
        zc_sha256_update(&s, p, k);
        p += k, n -= k, step = step * 3 + 1;
    }
    zc_sha256_final(&s, d);
    zc_sha256_hex(d, out);
}

int main(void)
{
    char hex[65];
    sha_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
          "sha256('') = %s", hex);
    sha_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
          "sha256(abc) = %s", hex);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_hex(two, strlen(two), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
          "sha256(448 bits) = %s", hex);
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    sha_hex(million, 1000000, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
          "sha256(1M a) = %s", hex);
    free(million);
    /* SHA-NI (where present) and the portable rounds agree on every length 0..300 and a
     * large buffer fed in uneven pieces */
    {
        static unsigned char data[300 + 100000];
        for (size_t i = 0; i < sizeof data; i++)
            data[i] = (unsigned char)(zc_rng_uniform(11, 2, i) * 256);
        int same = 1;
        char a[65], b[65];
        for (size_t len = 0; len <= 300; len++) {
            zc_sha256_force_portable(0);
            sha_hex(data, len, a);
            zc_sha256_force_portable(1);
            sha_hex(data, len, b);
            same &= !strcmp(a, b);
        }
        zc_sha256_force_portable(0);
        sha_hex(data, sizeof data, a);
        zc_sha256_force_portable(1);
        sha_hex(data, sizeof data, b);
        zc_sha256_force_portable(0);
        CHECK(same && !strcmp(a, b), "sha256: hardware and portable rounds differ");
    }

    /* CRC-32C: RFC 3720's vectors (32 bytes of zeros, of 0xff, ascending) and "123456789". */
    unsigned char v32[32];
    memset(v32, 0, 32);
    CHECK(zc_crc32c(0, v32, 32) == 0x8A9136AAu, "crc32c zeros %08x", zc_crc32c(0, v32, 32));
    memset(v32, 0xff, 32);
    CHECK(zc_crc32c(0, v32, 32) == 0x62A8AB43u, "crc32c ones");
    for (int i = 0; i < 32; i++)
        v32[i] = (unsigned char)i;
    CHECK(zc_crc32c(0, v32, 32) == 0x46DD794Eu, "crc32c ascending");
    CHECK(zc_crc32c(zc_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u, "crc32c chained");
    CHECK(zc_crc32c_sw(0, "123456789", 9) == 0xE3069283u, "crc32c table version");
    { /* the hardware path (when present) equals the table on every length and alignment */
        static unsigned char buf[4099];
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (unsigned char)(zc_rng_uniform(3, 9, i) * 256);
        int same = 1;
        for (size_t off = 0; off < 9; off++)
            for (size_t len = 0; len + off <= sizeof buf; len += 257)
                same &= zc_crc32c(7, buf + off, len) == zc_crc32c_sw(7, buf + off, len);
        CHECK(same, "crc32c: hardware (%s) and table differ",
              zc_crc32c_hw_available() ? "in use" : "absent");
    }

    /* Generator: pure, and moments as expected (10^5 draws: mean within 0.02, var within 0.03). */
    CHECK(zc_rng_normal(1, 2, 3) == zc_rng_normal(1, 2, 3), "normal not pure");
    CHECK(zc_rng_normal(1, 2, 3) != zc_rng_normal(1, 2, 4), "normal ignores the index");
    CHECK(zc_rng_normal(1, 2, 3) != zc_rng_normal(2, 2, 3), "normal ignores the seed");
    double s = 0, s2 = 0;
    for (int i = 0; i < 100000; i++) {
        double x = zc_rng_normal(9, 1, (uint64_t)i);
        s += x, s2 += x * x;
    }
    CHECK(fabs(s / 1e5) < 0.02 && fabs(s2 / 1e5 - 1) < 0.03, "normal moments %g %g", s / 1e5,
          s2 / 1e5);
    double umin = 1, umax = 0;
    for (int i = 0; i < 100000; i++) {
        double u = zc_rng_uniform(9, 2, (uint64_t)i);
        umin = u < umin ? u : umin, umax = u > umax ? u : umax;
    }
    CHECK(umin >= 0 && umax < 1 && umin < 1e-3 && umax > 1 - 1e-3, "uniform range %g..%g", umin,
          umax);

    /* Initialisation of a slice equals the same slice of the whole parameter, bit for bit. */
    enum { N = 10007 };
    static float whole[N], part[N];
    zc_init kinds[] = {{ZC_INIT_NORMAL, 0.02f}, {ZC_INIT_UNIFORM, 0.1f}, {ZC_INIT_CONST, 1.0f}};
    for (int k = 0; k < 3; k++) {
        zc_init_fill(whole, 0, N, 42, 5, kinds[k]);
        size_t cuts[] = {0, 1, 333, 5000, 10006};
        for (int c = 0; c < 5; c++) {
            size_t a = cuts[c], n = N - a < 2500 ? N - a : 2500;
            zc_init_fill(part, a, n, 42, 5, kinds[k]);
            CHECK(!memcmp(part, whole + a, n * sizeof(float)), "init kind %d slice at %zu differs",
                  k, a);
        }
    }
    zc_init_fill(part, 0, N, 42, 6, kinds[0]);
    zc_init_fill(whole, 0, N, 42, 5, kinds[0]);
    CHECK(memcmp(part, whole, sizeof whole) != 0, "two parameters got the same values");
    { /* a fill long enough to run on every OpenMP thread equals one of short (one-thread) slices */
        enum { BIG = 300001, SLICE = 9973 };
        float *big = malloc(BIG * sizeof *big), *sliced = malloc(BIG * sizeof *sliced);
        CHECK(big && sliced, "out of memory");
        for (int k = 0; big && sliced && k < 2; k++) {
            zc_init_fill(big, 7, BIG, 42, 5, kinds[k]);
            for (size_t a = 0; a < BIG; a += SLICE)
                zc_init_fill(sliced + a, 7 + a, BIG - a < SLICE ? BIG - a : SLICE, 42, 5, kinds[k]);
            CHECK(!memcmp(big, sliced, BIG * sizeof *big), "init kind %d: threaded fill differs",
                  k);
        }
        free(big);
        free(sliced);
    }

    /* Ledger: exact current and peak per category, mmap'd and small blocks alike. */
    zc_mem *mem = zc_mem_create();
    void *a = zc_mem_alloc(mem, ZC_MEM_PARAMS, 1 << 20);
    void *b = zc_mem_alloc(mem, ZC_MEM_GRADS, 100);
    void *c = zc_mem_alloc(mem, ZC_MEM_OPTIMIZER, 3 << 20);
    CHECK(a && b && c && ((uintptr_t)a % 64 == 0) && ((uintptr_t)b % 64 == 0), "alloc/alignment");
    CHECK(((char *)a)[12345] == 0 && ((char *)b)[99] == 0, "allocations are not zeroed");
    CHECK(zc_mem_get(mem, ZC_MEM_PARAMS).current == 1 << 20, "params current");
    CHECK(zc_mem_model_states_peak(mem) == (1 << 20) + 100 + (3 << 20), "states peak %lld",
          (long long)zc_mem_model_states_peak(mem));
    zc_mem_free(mem, ZC_MEM_OPTIMIZER, c, 3 << 20);
    void *d = zc_mem_alloc(mem, ZC_MEM_WORKING, 2 << 20);
    CHECK(zc_mem_get(mem, ZC_MEM_OPTIMIZER).current == 0 &&
              zc_mem_get(mem, ZC_MEM_OPTIMIZER).peak == 3 << 20,
          "optimizer current/peak after free");
    CHECK(zc_mem_get(mem, ZC_MEM_WORKING).peak == 2 << 20, "working peak");
    zc_mem_reset_peaks(mem);
    CHECK(zc_mem_get(mem, ZC_MEM_OPTIMIZER).peak == 0, "reset peaks");
    CHECK(!strcmp(zc_mem_category_name(ZC_MEM_ACTIVATIONS), "activations"), "category name");
    CHECK(zc_mem_peak_rss() > 0 && zc_mem_current_rss() > 0, "RSS readings");
    zc_mem_free(mem, ZC_MEM_PARAMS, a, 1 << 20);
    zc_mem_free(mem, ZC_MEM_GRADS, b, 100);
    zc_mem_free(mem, ZC_MEM_WORKING, d, 2 << 20);
    zc_mem_destroy(mem);
    return check_summary();
}

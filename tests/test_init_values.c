/* test_init_values.c — zc_init_fill's normal draws, taken in vector lanes with their own log and
 * cos (AVX-512), are bit for bit zc_rng_normal's (libm's log and cos, the product rounded to
 * float) times the scale: over tens of millions of draws, several seeds, parameters and scales,
 * at every offset and length a slice of a parameter can have; run at each vector level
 * (init_values_simd_*). And zc_rng_normal's own bits are pinned: a digest of a million draws as
 * the definition made them before the lanes existed, so a change of its compile options or of
 * libm shows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/init_values.h"
#include "util/sha256.h"
#include "zeroc/rng.h"
#include "zeroc/simd.h"

static uint64_t stream_of(int param)
{
    return 0x5a45524f00000000ULL + (uint64_t)param; /* zc_init_fill's streams */
}

/* The elements of [first, first + n) whose bits differ from the definition's. */
static size_t mismatches(uint64_t seed, int param, float a, size_t first, size_t n, float *got,
                         size_t *first_bad)
{
    zc_init_fill(got, first, n, seed, param, (zc_init){.kind = ZC_INIT_NORMAL, .a = a});
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float want = zc_rng_normal(seed, stream_of(param), first + i) * a;
        if (memcmp(&want, &got[i], sizeof want) && !bad++)
            *first_bad = first + i;
    }
    return bad;
}

int main(void)
{
    printf("vector level: %s\n", zc_simd_name(zc_simd_level()));
    enum { N = 1 << 23 };
    float *got = malloc(N * sizeof *got);
    if (!got)
        return 1;
    /* many draws: seeds, parameters and scales as models use them */
    const struct {
        uint64_t seed;
        int param;
        float a;
    } runs[] = {{1337, 0, 0.02f}, {42, 7, 1.0f}, {0, 123, 0.0078125f}, {~0ULL, 5000, 3.5f}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        size_t at = 0;
        size_t bad = mismatches(runs[r].seed, runs[r].param, runs[r].a, (size_t)r * N, N, got, &at);
        CHECK(!bad,
              "seed %llu, parameter %d: %zu of %d draws differ from zc_rng_normal's (the "
              "first: element %zu)",
              (unsigned long long)runs[r].seed, runs[r].param, bad, N, at);
    }
    /* slices: any first element, any length, across the lanes' blocks */
    const size_t firsts[] = {0, 1, 255, 256, 257, 1000003, (size_t)1 << 40};
    const size_t lens[] = {0, 1, 2, 7, 255, 256, 257, 513, 70001};
    for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            size_t at = 0;
            CHECK(!mismatches(9, 3, 0.5f, firsts[f], lens[l], got, &at),
                  "the slice at %zu of %zu: element %zu differs", firsts[f], lens[l], at);
        }
    /* the definition's bits: normals 0 … 2^20 − 1 of seed 1337, parameter 0, as 29a211b's
     * zc_rng_normal drew them (gcc 12, glibc 2.36) */
    const char *pinned = "1b2aab9f25dda4f11a22e3529fe14c3c28401f1558b5e180287e9be32c57ecbf";
    char hex[65], fill_hex[65];
    uint8_t d[32];
    zc_sha256 h;
    zc_sha256_init(&h);
    for (uint64_t i = 0; i < (1u << 20); i++) {
        const float x = zc_rng_normal(1337, stream_of(0), i);
        zc_sha256_update(&h, &x, sizeof x);
    }
    zc_sha256_final(&h, d);
    zc_sha256_hex(d, hex);
    zc_init_fill(got, 0, 1u << 20, 1337, 0, (zc_init){.kind = ZC_INIT_NORMAL, .a = 1.0f});
    zc_sha256_init(&h);
    zc_sha256_update(&h, got, (1u << 20) * sizeof *got);
    zc_sha256_final(&h, d);
    zc_sha256_hex(d, fill_hex);
    CHECK(!strcmp(hex, pinned) && !strcmp(fill_hex, pinned),
          "a million normals: zc_rng_normal %s, zc_init_fill %s, pinned %s", hex, fill_hex, pinned);
    /* a slice filled alone equals the same elements of a whole fill */
    float *part = malloc(1000 * sizeof *part);
    zc_init_fill(got, 0, 5000, 77, 2, (zc_init){.kind = ZC_INIT_NORMAL, .a = 0.02f});
    zc_init_fill(part, 1234, 1000, 77, 2, (zc_init){.kind = ZC_INIT_NORMAL, .a = 0.02f});
    CHECK(part && !memcmp(part, got + 1234, 1000 * sizeof *part), "a slice alone");
    free(part);
    free(got);
    return check_summary();
}

/* test_dtype.c — fp32 ↔ bf16/fp16 kernels against their double-arithmetic references, bit for
 * bit: every 16-bit value (exhaustive: widening then narrowing gives it back), ~2 million fp32
 * values spread over every exponent (a stride through all 2^32 patterns, plus both neighbours
 * of every halfway point of a sample of 16-bit values, which are the ties), and the special
 * values: ±0, ±inf, NaN, fp16 subnormals and the overflow threshold. Run at every vector level
 * the CPU has (ZEROC_SIMD, see zeroc/simd.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zeroc/dtype.h"
#include "zeroc/simd.h"

static float fb(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* the same bits (NaN payloads included) */
static int same(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

int main(void)
{
    /* ZEROC_SIMD caps the kernels' vector level (ctest runs this file at each level) */
    const char *cap = getenv("ZEROC_SIMD");
    printf("kernels at vector level %s\n", zc_simd_name(zc_simd_level()));
    CHECK(!cap || strcmp(cap, "portable") || zc_simd_level() == ZC_SIMD_PORTABLE,
          "ZEROC_SIMD=portable runs %s", zc_simd_name(zc_simd_level()));
    CHECK(!cap || strcmp(cap, "avx2") || zc_simd_level() <= ZC_SIMD_AVX2, "ZEROC_SIMD=avx2 runs %s",
          zc_simd_name(zc_simd_level()));

    /* exhaustive 16-bit → fp32 → 16-bit */
    static uint16_t h[65536], back[65536];
    static float f[65536];
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    zc_bf16_to_f32(h, f, 65536);
    zc_f32_to_bf16(f, back, 65536);
    int ok = 1;
    for (uint32_t i = 0; i < 65536; i++)
        ok &= back[i] == h[i] || ((i & 0x7f80) == 0x7f80 && (i & 0x7f) && back[i] == (h[i] | 0x40));
    CHECK(ok, "bf16 → fp32 → bf16 does not give every value back");
    zc_f16_to_f32(h, f, 65536);
    ok = 1;
    int refok = 1;
    for (uint32_t i = 0; i < 65536; i++) {
        float r = zc_f16_to_f32_ref(h[i]);
        refok &= memcmp(&r, &f[i], 4) == 0;
    }
    zc_f32_to_f16(f, back, 65536);
    for (uint32_t i = 0; i < 65536; i++)
        ok &=
            back[i] == h[i] || ((i & 0x7c00) == 0x7c00 && (i & 0x3ff) && back[i] == (h[i] | 0x200));
    CHECK(refok, "fp16 → fp32 kernel differs from the reference");
    CHECK(ok, "fp16 → fp32 → fp16 does not give every value back");

    /* fp32 → 16 bits against the references */
    enum { N = 1 << 16 };
    static float x[N];
    static uint16_t a[N];
    long bad_bf = 0, bad_h = 0, total = 0;
    for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)N * 65) {
        for (uint32_t i = 0; i < N; i++)
            x[i] = fb((uint32_t)(base + (uint64_t)i * 65));
        zc_f32_to_bf16(x, a, N);
        for (uint32_t i = 0; i < N; i++)
            bad_bf += a[i] != zc_f32_to_bf16_ref(x[i]);
        zc_f32_to_f16(x, a, N);
        for (uint32_t i = 0; i < N; i++)
            bad_h += a[i] != zc_f32_to_f16_ref(x[i]);
        total += N;
    }
    CHECK(!bad_bf, "bf16: %ld of %ld values differ from the reference", bad_bf, total);
    CHECK(!bad_h, "fp16: %ld of %ld values differ from the reference", bad_h, total);

    /* a conversion large enough to be split among threads (not a multiple of the block):
     * every element as the reference, both directions */
    {
        const size_t M = (1u << 20) + 7;
        float *big = malloc(M * 4), *wide = malloc(M * 4);
        uint16_t *h16 = malloc(M * 2);
        long bad = 0;
        omp_set_num_threads(2);
        for (size_t i = 0; i < M; i++)
            big[i] = fb((uint32_t)(i * 4099u + 17u));
        zc_f32_to_bf16(big, h16, M);
        zc_bf16_to_f32(h16, wide, M);
        for (size_t i = 0; i < M; i++)
            bad +=
                h16[i] != zc_f32_to_bf16_ref(big[i]) || !same(wide[i], fb((uint32_t)h16[i] << 16));
        zc_f32_to_f16(big, h16, M);
        zc_f16_to_f32(h16, wide, M);
        for (size_t i = 0; i < M; i++)
            bad += h16[i] != zc_f32_to_f16_ref(big[i]) || !same(wide[i], zc_f16_to_f32_ref(h16[i]));
        CHECK(!bad, "threaded conversions of %zu values: %ld differ from the references", M, bad);
        free(big), free(wide), free(h16);
    }

    /* ties: exactly halfway between two 16-bit values, and one fp32 ulp either side */
    bad_bf = bad_h = 0;
    for (uint32_t i = 0; i < 65535; i += 7) {
        uint32_t mid = (i << 16) | 0x8000u; /* bf16 halfway */
        for (int d = -1; d <= 1; d++) {
            float v = fb(mid + (uint32_t)d);
            uint16_t k;
            zc_f32_to_bf16(&v, &k, 1);
            bad_bf += k != zc_f32_to_bf16_ref(v);
        }
        float lo = zc_f16_to_f32_ref((uint16_t)i), hi = zc_f16_to_f32_ref((uint16_t)(i + 1));
        if (isfinite(lo) && isfinite(hi) && !((i & 0x7fff) == 0x7bff)) {
            float v = (float)(((double)lo + (double)hi) / 2);
            for (int d = -1; d <= 1; d++) {
                uint32_t vb;
                memcpy(&vb, &v, 4);
                float w = fb(vb + (uint32_t)d);
                uint16_t k;
                zc_f32_to_f16(&w, &k, 1);
                bad_h += k != zc_f32_to_f16_ref(w);
            }
        }
    }
    CHECK(!bad_bf && !bad_h, "ties: %ld bf16 and %ld fp16 differ from the references", bad_bf,
          bad_h);

    /* named cases */
    struct {
        float v;
        uint16_t bf, h;
    } cases[] = {
        {0.0f, 0x0000, 0x0000},       {-0.0f, 0x8000, 0x8000},       {1.0f, 0x3f80, 0x3c00},
        {INFINITY, 0x7f80, 0x7c00},   {-INFINITY, 0xff80, 0xfc00},   {65504.0f, 0x4780, 0x7bff},
        {65520.0f, 0x4780, 0x7c00},   {0x1p-24f, 0x3380, 0x0001},    {0x1p-25f, 0x3300, 0x0000},
        {0x1.8p-25f, 0x3340, 0x0001}, {1.00390625f, 0x3f80, 0x3c04}, {1e10f, 0x5015, 0x7c00},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t b, hh;
        zc_f32_to_bf16(&cases[i].v, &b, 1);
        zc_f32_to_f16(&cases[i].v, &hh, 1);
        CHECK(b == cases[i].bf && hh == cases[i].h,
              "%a: bf16 %04x (want %04x), fp16 %04x (want "
              "%04x)",
              (double)cases[i].v, b, cases[i].bf, hh, cases[i].h);
    }
    float nan = NAN;
    uint16_t b, hh;
    zc_f32_to_bf16(&nan, &b, 1);
    zc_f32_to_f16(&nan, &hh, 1);
    CHECK((b & 0x7f80) == 0x7f80 && (b & 0x7f) && (hh & 0x7c00) == 0x7c00 && (hh & 0x3ff),
          "NaN did not stay NaN: bf16 %04x fp16 %04x", b, hh);
    return check_summary();
}

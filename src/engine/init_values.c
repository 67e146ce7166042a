/* init_values.c — counter-based random values (zeroc/rng.h) and parameter initialisation.
 *
 * A splitmix64-style mixer hashes (seed, stream, index) to 64 bits; uniforms take the top 53
 * bits, normals use Box–Muller's cosine branch on two independent uniforms. No state is carried
 * from one element to the next, which is the point: the value of element i never depends on
 * which rank computes it, or how many ranks there are — nor which thread: the fill runs on
 * every OpenMP thread.
 *
 * zc_rng_normal defines the values: libm's log and cos in double, the product rounded to float.
 * Those two calls were most of a run's set-up (34 ns an element on one thread; GPT-2 2.2 B with
 * both offloads drew each element twice, 75 s a rank), so zc_init_fill draws in vector lanes
 * with its own log and cos (fast_normal: polynomials accurate to a few double ulps) and keeps a
 * lane's float only where the double product lies so far from a float rounding boundary (thousands
 * of double ulps: far beyond both routes' errors) that libm's product rounds to the same float; the
 * rest (about 1 in 60,000) are drawn again by the scalar route. The values are bit for bit
 * zc_rng_normal's (test_init_values compares 33 M). */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "engine/init_values.h"
#include "zeroc/simd.h"

ZC_SIMD_INLINE uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t key(uint64_t seed, uint64_t stream, uint64_t index)
{
    return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

double zc_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (double)(key(seed, stream, index) >> 11) * 0x1.0p-53;
}

/* The normal draw of key k: the definition. */
static float normal_of_key(uint64_t k)
{
    double u1 = ((double)(k >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double u2 = (double)(mix64(k) >> 11) * 0x1.0p-53;  /* [0, 1) */
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float zc_rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    return normal_of_key(key(seed, stream, index));
}

/* ---------- the same in vector lanes ---------- */

ZC_SIMD_INLINE double dbits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
ZC_SIMD_INLINE uint64_t ubits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* q < 2^53 as a double, exactly, with integer operations only (no 64-bit conversion below
 * AVX-512): its top 52 bits under 2^52's exponent, doubled, plus its last bit. */
ZC_SIMD_INLINE double u53(uint64_t q)
{
    return (dbits(0x4330000000000000ULL | (q >> 1)) - 0x1.0p52) * 2.0 + (double)(int)(q & 1);
}

/* c[0] z^(n−1) + … + c[n−1], by Horner. */
ZC_SIMD_INLINE double horner(double z, const double *c, int n)
{
    double p = c[0];
    for (int i = 1; i < n; i++)
        p = p * z + c[i];
    return p;
}

/* log(x) for x in (0, 1]: x = 2^e · m with m in [√½, √2), log m = 2 atanh(f / (2 + f)) with
 * f = m − 1 (exact), the series to s^23 (|s| ≤ 0.172: terms past it below 2^-58); e · ln 2 in
 * two parts (the high one's 32 bits times e exact). A few ulps. */
ZC_SIMD_INLINE double fast_log(double x)
{
    const uint64_t u = ubits(x);
    int64_t e = (int64_t)(u >> 52) - 1023;
    uint64_t mant = (u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    const bool big = mant > 0x3ff6a09e667f3bcdULL; /* m > √2: halve it */
    mant = big ? mant - 0x0010000000000000ULL : mant;
    e += big;
    const double f = dbits(mant) - 1.0, s = f / (2.0 + f), z = s * s;
    static const double atanh_c[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                                     1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
    const double p = horner(z, atanh_c, 11);
    const double de = (double)(int)e; /* from 32 bits: AVX2 converts no 64-bit integers */
    return de * 6.93147180369123816490e-01 +
           (de * 1.90821492927058770002e-10 + 2.0 * s * (1.0 + z * p));
}

/* cos(x) for x in [0, 2π): x − jπ/2 in two parts (the first's 33 bits times j ≤ 4 exact, its
 * difference exact by Sterbenz), then ±cos or ±sin of the remainder r (|r| ≤ π/4) by Taylor to
 * r^16 and r^17. *tiny: |r| < 2^-20, where the second part's error would not be small next to r
 * (the caller then takes the scalar route). A few ulps otherwise. */
ZC_SIMD_INLINE double fast_cos(double x, bool *tiny)
{
    const double j = (double)(int)(x * 0.63661977236758134308 + 0.5);
    const double r = (x - j * 1.57079632673412561417e+00) - j * 6.07710050650619224932e-11;
    *tiny = fabs(r) < 0x1.0p-20;
    const double z = r * r;
    static const double cos_c[] = {1.0 / 20922789888000.0,
                                   -1.0 / 87178291200.0, /* 1/16!, … */
                                   1.0 / 479001600.0,
                                   -1.0 / 3628800.0,
                                   1.0 / 40320.0,
                                   -1.0 / 720.0,
                                   1.0 / 24.0,
                                   -0.5,
                                   1.0};
    static const double sin_c[] = {1.0 / 355687428096000.0,
                                   -1.0 / 1307674368000.0, /* 1/17!, … */
                                   1.0 / 6227020800.0,
                                   -1.0 / 39916800.0,
                                   1.0 / 362880.0,
                                   -1.0 / 5040.0,
                                   1.0 / 120.0,
                                   -1.0 / 6.0};
    const double c = horner(z, cos_c, 9), sn = r + r * z * horner(z, sin_c, 8);
    const int q = (int)j & 3; /* cos(r + qπ/2): c, −sn, −c, sn (selects, no branches: lanes) */
    const double v = (q & 1) ? sn : c;
    return ((q + 1) & 2) ? -v : v;
}

/* normal_of_key(mix64(x)) where *bad is false; *bad where the double product lies within 2^12
 * ulps of a float rounding boundary (halfway between two floats), or is near zero (a tiny
 * remainder above, or log of 1), where only the scalar route is sure of the bits. */
ZC_SIMD_INLINE float fast_normal(uint64_t x, bool *bad)
{
    const uint64_t k = mix64(x);
    const double u1 = (u53(k >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = u53(mix64(k) >> 11) * 0x1.0p-53;
    bool tiny;
    const double y = sqrt(-2.0 * fast_log(u1)) * fast_cos(6.283185307179586 * u2, &tiny);
    const uint64_t low = ubits(y) & 0x1fffffffULL; /* the 29 bits rounding to float drops */
    const uint64_t off = low > 0x10000000ULL ? low - 0x10000000ULL : 0x10000000ULL - low;
    *bad = tiny | (off <= 0x1000) | (fabs(y) < 0x1.0p-60);
    return (float)y;
}

enum { NORMAL_BLOCK = 256 };

/* The lanes pay where AVX-512 has them: 13.9 ns an element against libm's 33.9 (AMD EPYC Zen 5,
 * one thread). With AVX2's four lanes (64-bit multiplies and conversions emulated) or none they
 * were slower than the scalar route (38–43 ns), which those levels therefore take. */
#if ZC_SIMD_MULTI
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,prefer-vector-width=512")
/* n ≤ NORMAL_BLOCK draws in lanes, each flagging a result it cannot vouch for; the flagged ones
 * drawn again by the definition. */
static void normal_lanes(float *restrict dst, uint64_t base, uint64_t first, size_t n, float a)
{
    unsigned char unsure[NORMAL_BLOCK];
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        bool bad;
        dst[i] = fast_normal(base ^ (first + i), &bad) * a;
        unsure[i] = bad;
    }
    for (size_t i = 0; i < n; i++)
        if (unsure[i])
            dst[i] = normal_of_key(mix64(base ^ (first + i))) * a;
}
#pragma GCC pop_options
#endif

static void normal_fill(float *dst, uint64_t base, uint64_t first, size_t n, float a)
{
#if ZC_SIMD_MULTI
    if (zc_simd_level() == ZC_SIMD_AVX512) {
        normal_lanes(dst, base, first, n, a);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        dst[i] = normal_of_key(mix64(base ^ (first + i))) * a;
}

void zc_init_fill(float *dst, size_t first, size_t n, uint64_t seed, int param, zc_init init)
{
    /* Stream: the parameter index, offset so it never collides with models' data streams. */
    uint64_t stream = 0x5a45524f00000000ULL + (uint64_t)param;
    enum { PAR_MIN = 1 << 16 }; /* fewer elements: one thread (a region costs more) */
    switch (init.kind) {
    case ZC_INIT_CONST:
        for (size_t i = 0; i < n; i++)
            dst[i] = init.a;
        break;
    case ZC_INIT_UNIFORM:
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)((2.0 * zc_rng_uniform(seed, stream, first + i) - 1.0) * init.a);
        break;
    case ZC_INIT_NORMAL: {
        const uint64_t base =
            mix64(mix64(seed) ^ stream); /* key(seed, stream, i) = mix64(base ^ i) */
        const size_t nb = (n + NORMAL_BLOCK - 1) / NORMAL_BLOCK;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
        for (size_t b = 0; b < nb; b++) {
            const size_t lo = b * NORMAL_BLOCK, k = n - lo < NORMAL_BLOCK ? n - lo : NORMAL_BLOCK;
            normal_fill(dst + lo, base, first + lo, k, init.a);
        }
        break;
    }
    }
}

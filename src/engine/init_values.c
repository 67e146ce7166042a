/* init_values.c — counter-based random values (zeroc/rng.h) and parameter initialisation.
 *
 * A splitmix64-style mixer hashes (seed, stream, index) to 64 bits; uniforms take the top 53
 * bits, normals use Box–Muller's cosine branch on two independent uniforms. No state is carried
 * from one element to the next, which is the point: the value of element i never depends on
 * which rank computes it, or how many ranks there are — nor which thread: the fill runs on
 * every OpenMP thread (GPT-2 124M: Box–Muller's log and cos took 30% of a 1-step run's time). */
#include <math.h>

#include "engine/init_values.h"

static uint64_t mix64(uint64_t x)
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

float zc_rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t k = key(seed, stream, index);
    double u1 = ((double)(k >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double u2 = (double)(mix64(k) >> 11) * 0x1.0p-53;  /* [0, 1) */
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
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
    case ZC_INIT_NORMAL:
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
        for (size_t i = 0; i < n; i++)
            dst[i] = zc_rng_normal(seed, stream, first + i) * init.a;
        break;
    }
}

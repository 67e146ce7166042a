/* base_digest.h — internal: the digest by which a checkpoint records the frozen units it does not
 * hold (a LoRA run's base; zc_engine_base_digest in engine/engine_state.h). One definition for
 * the engine, which sums the elements each rank owns, and the checkpoint reader, which sums a base
 * read from other files, so that the two agree to the bit.
 *
 * Each element contributes mix(unit key ^ (logical index << 16 | its value rounded to bf16)) to
 * one sum and mix(... ^ golden ratio) to a second, mod 2^64: sums do not depend on the order the
 * elements are visited in, so any partition of a unit over ranks gives the same digest. */
#ifndef ZEROC_UTIL_BASE_DIGEST_H
#define ZEROC_UTIL_BASE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's finalizer: a bijection of 64-bit words that spreads every input bit over the
 * output. */
static inline uint64_t zc_digest_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A unit's key: FNV-1a of its name, mixed. */
static inline uint64_t zc_digest_unit_key(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
    return zc_digest_mix(h);
}

/* Adds the n elements at logical indices first.. of a unit (key), given as bf16 bits, to d. */
static inline void zc_digest_add(uint64_t key, size_t first, const uint16_t *bf16, size_t n,
                                 uint64_t d[2])
{
    uint64_t s0 = 0, s1 = 0;
#pragma omp simd reduction(+ : s0, s1)
    for (size_t j = 0; j < n; j++) {
        uint64_t x = key ^ ((((uint64_t)first + j) << 16) | bf16[j]);
        s0 += zc_digest_mix(x);
        s1 += zc_digest_mix(x ^ 0x9e3779b97f4a7c15ull);
    }
    d[0] += s0, d[1] += s1;
}
#endif

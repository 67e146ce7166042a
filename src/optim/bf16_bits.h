/* bf16_bits.h — one element's fp32 ↔ bf16 conversion as inline integer bit manipulation, shared
 * by the conversion loops (dtype.c) and the optimizer's fused mixed-precision update (optim.c),
 * so both round the same way: nearest even by adding half an ulp minus one plus the kept lsb,
 * NaN kept (quiet, sign and payload top kept). Pure integer selects: `omp simd` loops
 * vectorise them and every lane gives the scalar bits. */
#ifndef ZEROC_BF16_BITS_H
#define ZEROC_BF16_BITS_H
#include <stdint.h>
#include <string.h>

#include "zeroc/simd.h"

ZC_SIMD_INLINE uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

ZC_SIMD_INLINE float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

ZC_SIMD_INLINE uint16_t bf16_one(float f)
{
    uint32_t u = bits(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* The compact master's bf16 weight (zc_master_split): rounded half away from zero, so that the
 * 65,536 fp32 values sharing a weight are exactly those its 16 low bits tell apart (nearest even
 * gives an even weight 65,537 of them: two ties). NaN kept as bf16_one keeps it. */
ZC_SIMD_INLINE uint16_t bf16_half_away(float f)
{
    uint32_t u = bits(f);
    uint32_t rounded = (u + 0x8000u) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* The fp32 value whose half-away weight is h and whose low 16 bits are r: the weight's bits less
 * one (in magnitude: the sign is the top bit) when r reached the half that rounds away. */
ZC_SIMD_INLINE float master_join_one(uint16_t h, uint16_t r)
{
    return from_bits(((uint32_t)(h - (r >= 0x8000u)) << 16) | r);
}

/* bf16 → fp32 is exact: the bits in the top half. */
ZC_SIMD_INLINE float bf16_widen_one(uint16_t h)
{
    return from_bits((uint32_t)h << 16);
}
#endif

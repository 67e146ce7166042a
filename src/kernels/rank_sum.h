/* rank_sum.h — the local half of a reduce-scatter (comm.c): the N blocks each rank received,
 * added in rank order in fp32 and rounded once into this rank's output, in one vectorised pass
 * for the usual type pairs. Internal to the library. */
#ifndef ZEROC_KERNELS_RANK_SUM_H
#define ZEROC_KERNELS_RANK_SUM_H

#include <stdbool.h>
#include <stddef.h>

#include "zeroc/dtype.h"

/* Where block j of a reduce-scatter lies in recv, in blocks: j, or, when this rank's own block
 * self_j (≥ 0) is read where it lies instead, j − 1 past it — recv holds the N − 1 others only. */
static inline size_t zc_rank_sum_slot(int j, int self_j)
{
    return (size_t)(j - (self_j >= 0 && j > self_j));
}

/* out[i] = round(Σ_{j<n} in_j[i]) (accumulate: round(out[i] + Σ_j in_j[i])) for i < len, where
 * block j is recv + zc_rank_sum_slot(j, self_j)·len elements of type `in`, except block self_j
 * (if 0 ≤ self_j < n), which is `self` (it may be out itself: each element is read before it is
 * written), so recv holds n − 1 blocks then, n without one (self_j −1). The sum starts
 * from block 0, adds blocks 1..n−1 in order in fp32, and rounds once to `out_t` (nearest even,
 * NaN kept): the same operations as widening each block and adding it, so the same bits. Runs
 * for in == out_t ∈ {fp32, bf16}; returns false (and writes nothing) for any other pair. */
bool zc_rank_sum(zc_dtype in, const void *recv, const void *self, int self_j, int n, size_t len,
                 bool accumulate, zc_dtype out_t, void *out);

#endif

/* rank_sum.h — the local half of a reduce-scatter (comm.c): the N blocks each rank received,
 * added in rank order in fp32 and rounded once into this rank's output, in one vectorised pass
 * for the usual type pairs. Internal to the library. */
#ifndef ZEROC_KERNELS_RANK_SUM_H
#define ZEROC_KERNELS_RANK_SUM_H

#include <stdbool.h>
#include <stddef.h>

#include "zeroc/dtype.h"

/* out[i] = round(Σ_{j<n} in_j[i]) (accumulate: round(out[i] + Σ_j in_j[i])) for i < len, where
 * block j is recv + j·len elements of type `in`, except block self_j (if 0 ≤ self_j < n), which
 * is `self` (it may be out itself: each element is read before it is written). The sum starts
 * from block 0, adds blocks 1..n−1 in order in fp32, and rounds once to `out_t` (nearest even,
 * NaN kept): the same operations as widening each block and adding it, so the same bits. Runs
 * for in == out_t ∈ {fp32, bf16}; returns false (and writes nothing) for any other pair. */
bool zc_rank_sum(zc_dtype in, const void *recv, const void *self, int self_j, int n, size_t len,
                 bool accumulate, zc_dtype out_t, void *out);

#endif

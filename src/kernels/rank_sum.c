/* rank_sum.c — the reduce-scatter's rank-order sum in one pass (rank_sum.h). Before, comm.c
 * widened each block into a stack chunk, added chunk to chunk on the baseline instruction set and
 * rounded the chunk back: 4% of a bf16 GPT-2 124M step on 2 ranks × 1 thread. Built with
 * -ffp-contract=off like the other arithmetic kernels (only additions here, but the rule is
 * kept file-wide). */
#include <stdint.h>

#include "kernels/rank_sum.h"
#include "optim/bf16_bits.h"
#include "util/asan_range.h"
#include "zeroc/simd.h"

enum { SUM_CHUNK = 1024 }; /* elements summed at a time in a stack buffer (4 KiB) */

#define ZC_SIMD_KERNELS "kernels/rank_sum_kernels.inc"
#include "zeroc/simd_expand.h"

bool zc_rank_sum(zc_dtype in, const void *recv, const void *self, int self_j, int n, size_t len,
                 bool accumulate, zc_dtype out_t, void *out)
{
    if (in != out_t || n < 1)
        return false;
    if (in == ZC_FP32 || in == ZC_BF16) { /* the blocks the kernel reads, whole */
        const size_t bytes = len * (size_t)zc_dtype_size(in);
        for (int j = 0; j < n; j++)
            zc_asan_read(j == self_j ? self
                                     : (const char *)recv + zc_rank_sum_slot(j, self_j) * bytes,
                         bytes);
        zc_asan_write(out, bytes);
    }
    if (in == ZC_FP32) {
        ZC_SIMD_DISPATCH(sum_f32, recv, self, self_j, n, len, accumulate, out);
        return true;
    }
    if (in == ZC_BF16) {
        ZC_SIMD_DISPATCH(sum_bf16, recv, self, self_j, n, len, accumulate, out);
        return true;
    }
    return false;
}

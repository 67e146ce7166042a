/* simd.c — the vector level the elementwise kernels run at (zeroc/simd.h): the CPU's best,
 * detected once through GCC's CPU model (which also checks that the OS saves the wider
 * registers), capped by ZEROC_SIMD. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zeroc/simd.h"

static zc_simd detect(void)
{
#if ZC_SIMD_MULTI
    __builtin_cpu_init();
    zc_simd best = __builtin_cpu_supports("x86-64-v4")   ? ZC_SIMD_AVX512
                   : __builtin_cpu_supports("x86-64-v3") ? ZC_SIMD_AVX2
                                                         : ZC_SIMD_PORTABLE;
#else
    zc_simd best = ZC_SIMD_PORTABLE;
#endif
    const char *env = getenv("ZEROC_SIMD");
    for (int l = ZC_SIMD_PORTABLE; env && l < (int)best; l++)
        if (!strcmp(env, zc_simd_name((zc_simd)l)))
            return (zc_simd)l;
    return best;
}

zc_simd zc_simd_level(void)
{
    /* threads racing on first use all store the same value */
    static atomic_int level = -1;
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        l = (int)detect();
        atomic_store_explicit(&level, l, memory_order_relaxed);
    }
    return (zc_simd)l;
}

const char *zc_simd_name(zc_simd level)
{
    switch (level) {
    case ZC_SIMD_AVX512: return "avx512";
    case ZC_SIMD_AVX2: return "avx2";
    default: return "portable";
    }
}

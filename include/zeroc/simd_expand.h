/* zeroc/simd_expand.h — includes the kernel file named by ZC_SIMD_KERNELS once per vector level
 * (see zeroc/simd.h), each copy's functions named by ZC_SIMD_FN(name) = name_<level> and compiled
 * for that level by GCC's target pragma. ZC_SIMD_IS_AVX512 is 1 in the AVX-512 copy and 0 in the
 * others, for the rare kernel that needs an instruction GCC will not pick by itself (a gather:
 * its generic tuning emulates one with a load per lane). No include guard: a file may expand
 * several kernel files, one after another. */
#ifndef ZC_SIMD_KERNELS
#error "define ZC_SIMD_KERNELS as the kernel file to expand"
#endif
#include "zeroc/simd.h"

#if ZC_SIMD_MULTI
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,prefer-vector-width=512")
#define ZC_SIMD_FN(f) f##_avx512
#define ZC_SIMD_IS_AVX512 1
#include ZC_SIMD_KERNELS
#undef ZC_SIMD_IS_AVX512
#undef ZC_SIMD_FN
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define ZC_SIMD_FN(f) f##_avx2
#define ZC_SIMD_IS_AVX512 0
#include ZC_SIMD_KERNELS
#undef ZC_SIMD_IS_AVX512
#undef ZC_SIMD_FN
#pragma GCC pop_options
#endif

#define ZC_SIMD_FN(f) f##_portable
#define ZC_SIMD_IS_AVX512 0
#include ZC_SIMD_KERNELS
#undef ZC_SIMD_IS_AVX512
#undef ZC_SIMD_FN
#undef ZC_SIMD_KERNELS

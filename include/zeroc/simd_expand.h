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

/* ZC_SIMD_KERNEL marks each kernel definition. In a sanitizer build the vector copies go
 * uninstrumented: AddressSanitizer's check on every element stops GCC vectorising a loop, and
 * made these kernels 7x slower there (the sanitizer pass of the tests 2.9x the plain one). The
 * portable copy of the same source keeps every check, and the tests run it at every level
 * (ZEROC_SIMD=portable); the public functions check the whole ranges they pass in
 * (zeroc/asan_range.h). */
#if defined(__SANITIZE_ADDRESS__)
#define ZC_SIMD_UNCHECKED                                                                          \
    __attribute__((no_sanitize("address", "undefined", "float-cast-overflow")))
#else
#define ZC_SIMD_UNCHECKED
#endif

#if ZC_SIMD_MULTI
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,prefer-vector-width=512")
#define ZC_SIMD_FN(f) f##_avx512
#define ZC_SIMD_IS_AVX512 1
#define ZC_SIMD_KERNEL ZC_SIMD_UNCHECKED
#include ZC_SIMD_KERNELS
#undef ZC_SIMD_KERNEL
#undef ZC_SIMD_IS_AVX512
#undef ZC_SIMD_FN
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define ZC_SIMD_FN(f) f##_avx2
#define ZC_SIMD_IS_AVX512 0
#define ZC_SIMD_KERNEL ZC_SIMD_UNCHECKED
#include ZC_SIMD_KERNELS
#undef ZC_SIMD_KERNEL
#undef ZC_SIMD_IS_AVX512
#undef ZC_SIMD_FN
#pragma GCC pop_options
#endif

#define ZC_SIMD_FN(f) f##_portable
#define ZC_SIMD_IS_AVX512 0
#define ZC_SIMD_KERNEL
#include ZC_SIMD_KERNELS
#undef ZC_SIMD_KERNEL
#undef ZC_SIMD_IS_AVX512
#undef ZC_SIMD_FN
#undef ZC_SIMD_KERNELS
#undef ZC_SIMD_UNCHECKED

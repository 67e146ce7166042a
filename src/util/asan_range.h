/* asan_range.h — a whole range checked against AddressSanitizer's shadow memory at once. A
 * sanitizer build leaves the vector copies of the elementwise kernels uninstrumented
 * (zeroc/simd_expand.h: a check on every element stops GCC vectorising the loop); the functions
 * that call those copies check here, before the call, every range the kernel will read or write,
 * so a caller passing a range past its buffer is reported as the kernel's access would have been
 * ("ERROR: AddressSanitizer", the first bad byte, the buffer it lies beside). Outside a sanitizer
 * build these are empty. */
#ifndef ZEROC_UTIL_ASAN_RANGE_H
#define ZEROC_UTIL_ASAN_RANGE_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

static inline void zc_asan_range(const void *p, size_t bytes, int is_write)
{
    if (!p || !bytes)
        return;
    void *bad = __asan_region_is_poisoned((void *)p, bytes);
    if (bad)
        __asan_report_error(__builtin_return_address(0), __builtin_frame_address(0),
                            __builtin_frame_address(0), bad, is_write, 1);
}
#else
static inline void zc_asan_range(const void *p, size_t bytes, int is_write)
{
    (void)p, (void)bytes, (void)is_write;
}
#endif

/* n bytes from p that a kernel will read / write */
static inline void zc_asan_read(const void *p, size_t bytes)
{
    zc_asan_range(p, bytes, 0);
}
static inline void zc_asan_write(const void *p, size_t bytes)
{
    zc_asan_range(p, bytes, 1);
}

#endif

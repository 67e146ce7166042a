/* zeroc/checked.h — sums and products of sizes that cannot wrap. Sizes come from flags, config
 * files and file headers; a wrapped count prints a negative size, allocates too little or
 * recommends a stage that cannot fit. These saturate at INT64_MAX and set a sticky flag, so a
 * whole formula is computed first and checked once:
 *
 *     bool ovf = false;
 *     int64_t bytes = zc_mul_i64(zc_mul_i64(B, T, &ovf), C, &ovf);
 *     if (ovf)
 *         return zc_err_set(err, ZC_EINVAL, "B × T × C does not fit in 64 bits");
 */
#ifndef ZEROC_CHECKED_H
#define ZEROC_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* a + b; on overflow sets *ovf and returns INT64_MAX (sizes are non-negative) */
static inline int64_t zc_add_i64(int64_t a, int64_t b, bool *ovf)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ovf = true;
        return INT64_MAX;
    }
    return r;
}

/* a · b; on overflow sets *ovf and returns INT64_MAX (sizes are non-negative) */
static inline int64_t zc_mul_i64(int64_t a, int64_t b, bool *ovf)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        *ovf = true;
        return INT64_MAX;
    }
    return r;
}

#ifdef __cplusplus
}
#endif

#endif

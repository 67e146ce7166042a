/* clock.h — the monotonic clock in seconds, for the library's timers (comm, GEMM, engine). */
#ifndef ZEROC_UTIL_CLOCK_H
#define ZEROC_UTIL_CLOCK_H

#include <time.h>

static inline double zc_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif

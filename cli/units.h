/* units.h — what the commands print with: milliseconds of the monotonic clock, bytes in MiB. */
#ifndef ZEROC_CLI_UNITS_H
#define ZEROC_CLI_UNITS_H

#include <stdint.h>
#include <time.h>

static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* MiB of a byte count: mib for counts, mib_d for sums already held in a double */
static inline double mib_d(double bytes)
{
    return bytes / 1048576.0;
}
static inline double mib(int64_t bytes)
{
    return mib_d((double)bytes);
}

#endif

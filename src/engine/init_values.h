/* init_values.h — internal: counter-based initial values, a pure function of
 * (seed, parameter index, element index), so any rank can fill any slice of any parameter. */
#ifndef ZEROC_ENGINE_INIT_VALUES_H
#define ZEROC_ENGINE_INIT_VALUES_H
#include <stddef.h>
#include <stdint.h>

#include "zeroc/engine.h"
#include "zeroc/rng.h"

/* dst[i] = value of element (first + i) of parameter `param`, for i in [0, n). */
void zc_init_fill(float *dst, size_t first, size_t n, uint64_t seed, int param, zc_init init);
#endif

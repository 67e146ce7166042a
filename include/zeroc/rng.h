/* zeroc/rng.h — counter-based random numbers: a value is a pure function of
 * (seed, stream, index), with no state between draws.
 *
 * The engine initialises parameters with it (stream = the parameter), so a rank can fill only
 * the slice it owns and still get the values one process would; models draw synthetic data with
 * it keyed by the global sample index, so N ranks see exactly what one rank would.
 *
 *     float x = zc_rng_normal(seed, stream, i);   // N(0, 1)
 *     double u = zc_rng_uniform(seed, stream, i); // [0, 1)
 */
#ifndef ZEROC_RNG_H
#define ZEROC_RNG_H

#include "zeroc/api.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

ZC_API double zc_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
ZC_API float zc_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

#ifdef __cplusplus
}
#endif

#endif

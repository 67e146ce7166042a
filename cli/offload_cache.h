/* offload_cache.h — offload_param.max_in_cpu and offload_optimizer.ratio "auto": the RAM a rank
 * can spare, used as a cache of the states offloaded to NVMe, sized at start. */
#ifndef ZEROC_CLI_OFFLOAD_CACHE_H
#define ZEROC_CLI_OFFLOAD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/comm.h"
#include "zeroc/config.h"
#include "zeroc/engine.h"
#include "zeroc/estimate.h"
#include "zeroc/mem.h"

/* Bytes of a rank's budget kept back for what the estimate does not count (the runtime, the
 * allocator's slack): a tenth of it, at least 256 MiB. */
int64_t offload_cache_reserve(int64_t budget);

/* For `in` (its stage, offloads and knobs), the most parameter elements kept in RAM (`par`:
 * max_in_cpu, from 0 up to all of the rank's shards) and then the least share of the optimizer
 * state on disk (`opt`: ratio, whole units from the first, 1 when none can stay) with which the
 * rank's need (memory_check_need, `activations` included) stays within `target` bytes. Knobs not
 * sized keep in's values. */
void offload_cache_size(const zc_estimate_in *in, int64_t activations, int64_t target, bool par,
                        bool opt, int64_t *max_in_cpu, double *ratio);

/* `zeroc train`, after the model registered its units and before the memory check: where cfg
 * says "auto" for either knob and the states it places are offloaded, sizes it from what this
 * host can give each rank (memory_check_rank_budget less offload_cache_reserve), the smallest
 * cache over the ranks, and sets it (zc_engine_set_offload_sizes); `said` gets the line rank 0
 * prints at start ("" when nothing was sized). Collective; an error after the ranks' sizes are
 * gathered is this rank's (agree on the result). */
zc_status offload_cache_resolve(zc_comm *comm, zc_engine *e, const zc_mem *mem,
                                const zc_config *cfg, char *said, size_t cap, zc_err *err);

#endif

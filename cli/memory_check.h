/* memory_check.h — refusing, before the model states are allocated, a training run whose
 * estimated memory per rank exceeds what the host (or the process's memory cgroup) can give, or
 * what the process may still map under its `ulimit -v` / `ulimit -d`. */
#ifndef ZEROC_CLI_MEMORY_CHECK_H
#define ZEROC_CLI_MEMORY_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/comm.h"
#include "zeroc/engine.h"
#include "zeroc/estimate.h"
#include "zeroc/mem.h"

/* Bytes this host can still give (the smaller of MemAvailable and the cgroup's room), with a
 * description of which it was in `where`; -1 if neither can be read. */
int64_t memory_check_host_budget(char *where, size_t cap);

/* Before a buffer holding an input of unknown size (a stream: a pipe, /dev/zero, standard input)
 * grows by `more` bytes, `read` bytes into it: ZC_ENOMEM naming flag and path, what was read and
 * the memory this host (or the memory cgroup, named) can still give, when `more` and a margin do
 * not fit in it — so an endless stream ends with this error, not the OOM killer. Unreadable
 * budgets pass. */
zc_status memory_check_grow(const char *flag, const char *path, uint64_t read, size_t more,
                            zc_err *err);

/* What one rank may use: the host's share (memory_check_host_budget over the host's ranks) or,
 * tighter, what its `ulimit -v` / `ulimit -d` still lets it map. */
typedef struct {
    int64_t budget;                      /* bytes; -1: neither could be read */
    int64_t host;                        /* the host's (-1: unreadable) */
    int64_t room;                        /* under the process's limits (-1: none set) */
    int local;                           /* ranks on this host */
    bool limited;                        /* the limits are the tighter */
    char where[4700], limit_where[1200]; /* what each was read from */
} memory_check_budget;
int64_t memory_check_rank_budget(zc_comm *comm, const zc_mem *mem, int param_bytes,
                                 memory_check_budget *b);

/* What one rank needs in RAM at `in`'s settings: the estimator's exact states and staging, its
 * bounds of working memory and offload buffers, and `activations`. INT64_MAX when it overflows. */
int64_t memory_check_need(const zc_estimate_in *in, int64_t activations);

/* After the model registered its units (activations reserved, states not yet allocated):
 * ZC_ENOMEM naming the estimate, the budget and the settings that would fit, if this rank's
 * estimate exceeds its share of the host or what its limits let it map. Not collective: agree on
 * the result. */
zc_status memory_check(zc_comm *comm, const zc_engine *e, const zc_mem *mem, zc_err *err);

/* After building the model failed with ZC_ENOMEM: appends to err's message the address-space or
 * data limit (`ulimit -v` / `ulimit -d`) the process runs under, if any — an allocation refused by
 * such a limit says nothing of it, and the memory check, which names it, runs after the model is
 * built. */
void memory_check_explain_enomem(zc_status st, zc_err *err);

#endif

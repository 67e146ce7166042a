/* zeroc/mem.h — the memory ledger: every byte the engine (and a model) allocates, by category.
 * Like every zeroc call these never exit on a bad argument (a NULL ledger, a category out of
 * range: see each call); the one abort is a free or release of more than a category holds.
 *
 * Each allocation is charged to one category; the ledger keeps current and peak bytes per
 * category and the peak of the model states (params + grads + optimizer) together. Large blocks
 * (64 KiB and more, or any whole number of 4 KiB pages) are mmap'd — page-aligned, as O_DIRECT
 * wants — and unmapped on free, so what the ledger releases also leaves the process's RSS: a
 * ZeRO saving that stays in malloc's heap would be invisible to the operating system.
 *
 * The categories before ZC_MEM_NRAM are RAM. ZC_MEM_NVME is the one tier below: bytes of model
 * state this rank keeps in swap files on disk (offload), charged and released with
 * zc_mem_charge / zc_mem_release since nothing is allocated in RAM for them.
 *
 *     zc_mem *mem = zc_mem_create();
 *     float *act = zc_mem_alloc(mem, ZC_MEM_ACTIVATIONS, n * sizeof(float)); // zeroed
 *     ...
 *     zc_mem_free(mem, ZC_MEM_ACTIVATIONS, act, n * sizeof(float));
 *     zc_mem_stats s = zc_mem_get(mem, ZC_MEM_ACTIVATIONS);  // s.current, s.peak
 */
#ifndef ZEROC_MEM_H
#define ZEROC_MEM_H

#include "zeroc/api.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ZC_MEM_PARAMS = 0,  /* parameters this rank keeps between steps */
    ZC_MEM_GRADS,       /* gradients this rank keeps between micro-steps */
    ZC_MEM_OPTIMIZER,   /* optimizer state: moments (and, in mixed precision, the master copy) */
    ZC_MEM_COMM,        /* communication staging buffers */
    ZC_MEM_WORKING,     /* gathered units and full-unit gradient buffers that live briefly */
    ZC_MEM_ACTIVATIONS, /* the model's activations and their gradients */
    ZC_MEM_OFFLOAD,     /* RAM buffers that offloaded states stream through (sub-group slots,
                         * parameter reads ahead, gradient shards on their way to disk) */
    ZC_MEM_NRAM,        /* the number of RAM categories */
    ZC_MEM_NVME = ZC_MEM_NRAM, /* on disk: model states in this rank's swap files */
    ZC_MEM_NCATEGORIES
} zc_mem_category;

typedef struct {
    int64_t current, peak;
} zc_mem_stats;

typedef struct zc_mem zc_mem;

/* NULL if out of memory. */
ZC_API zc_mem *zc_mem_create(void);
/* Frees the ledger (NULL: nothing). An engine borrows it: destroy the engines first. */
ZC_API void zc_mem_destroy(zc_mem *mem);

/* 64-byte aligned, zero-filled; NULL on failure, and for bytes == 0, a NULL ledger or a category
 * that is not a RAM one (below ZC_MEM_NRAM). */
ZC_API void *zc_mem_alloc(zc_mem *mem, zc_mem_category cat, size_t bytes);
/* Precondition: p came from zc_mem_alloc on this ledger with this category and these bytes. The
 * ledger keeps no list of blocks, so another size or category is not detected when it happens
 * (the block's pages are returned wrongly, the categories' counts go wrong) — only when it
 * would leave a category holding less than nothing, which aborts (ZC_ASSERT, see zeroc/api.h).
 * p NULL, a NULL ledger or a category that is not a RAM one: nothing is done. */
ZC_API void zc_mem_free(zc_mem *mem, zc_mem_category cat, void *p, size_t bytes);
/* Counts bytes held outside RAM (ZC_MEM_NVME) without allocating; release what was charged
 * (precondition: no more than was charged to the category; more aborts, as zc_mem_free). A
 * NULL ledger, a category out of range or negative bytes: nothing is counted. */
ZC_API void zc_mem_charge(zc_mem *mem, zc_mem_category cat, int64_t bytes);
ZC_API void zc_mem_release(zc_mem *mem, zc_mem_category cat, int64_t bytes);

/* Current and peak bytes of a category; {0, 0} for a NULL ledger or a category out of range. */
ZC_API zc_mem_stats zc_mem_get(const zc_mem *mem, zc_mem_category cat);
/* Peak of params + grads + optimizer held in RAM at the same moment (0 for a NULL ledger). */
ZC_API int64_t zc_mem_model_states_peak(const zc_mem *mem);
/* Forgets the peaks (sets them to the current values), e.g. after set-up. NULL: nothing. */
ZC_API void zc_mem_reset_peaks(zc_mem *mem);

ZC_API const char *zc_mem_category_name(zc_mem_category cat);

/* The process's peak resident set (VmHWM) and current resident set (VmRSS), bytes; -1 if unknown.
 */
ZC_API int64_t zc_mem_peak_rss(void);
ZC_API int64_t zc_mem_current_rss(void);

#ifdef __cplusplus
}
#endif

#endif

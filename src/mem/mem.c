/* mem.c — the memory ledger (zeroc/mem.h).
 *
 * Blocks of 64 KiB and more come straight from mmap and go back with munmap: glibc keeps freed
 * heap blocks below its (adaptive) mmap threshold, which would hide stage 2/3's freed gradient
 * and gathered-parameter buffers from the RSS we report beside the ledger. Small blocks use
 * aligned_alloc. The ledger is per process and single-threaded by contract (the engine calls it
 * from the thread that drives training).
 *
 * Blocks of 2 MiB and more ask for transparent huge pages (madvise MADV_HUGEPAGE; the kernels
 * here default THP to "madvise"): the optimizer step sweeps gigabytes of states once a step, and
 * with 4 KiB pages the faults after the kernel's reclaim (DAMON pageout on these machines) and
 * the TLB misses cost 4–18% of a GPT-2 124M step (docs/BENCHMARKS.md); RSS is unchanged because
 * the blocks are touched whole. ZEROC_HUGEPAGES=0 turns it off. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "zeroc/mem.h"
#include "zeroc/status.h"

enum { MMAP_MIN = 64 * 1024, PAGE = 4096, ALIGN = 64, HUGE = 2 << 20 };

static bool huge_pages(void)
{
    static int on = -1; /* read once */
    if (on < 0) {
        const char *v = getenv("ZEROC_HUGEPAGES");
        on = !(v && !strcmp(v, "0"));
    }
    return on;
}

/* mmap'd (page-aligned, returned to the system on free) or from the heap */
static bool mapped(size_t bytes)
{
    return bytes >= MMAP_MIN || bytes % PAGE == 0;
}

struct zc_mem {
    zc_mem_stats cat[ZC_MEM_NCATEGORIES];
    int64_t states_peak;
};

zc_mem *zc_mem_create(void)
{
    return calloc(1, sizeof(zc_mem));
}

void zc_mem_destroy(zc_mem *mem)
{
    free(mem);
}

static int64_t states_now(const zc_mem *m)
{
    return m->cat[ZC_MEM_PARAMS].current + m->cat[ZC_MEM_GRADS].current +
           m->cat[ZC_MEM_OPTIMIZER].current;
}

/* A ledger and a category below `end` (ZC_MEM_NRAM or ZC_MEM_NCATEGORIES): a call without them
 * does nothing (zeroc/mem.h), an allocation returns NULL. */
static bool valid(const zc_mem *mem, zc_mem_category cat, int end)
{
    return mem && (unsigned)cat < (unsigned)end;
}

void *zc_mem_alloc(zc_mem *mem, zc_mem_category cat, size_t bytes)
{
    if (!valid(mem, cat, ZC_MEM_NRAM) || bytes == 0)
        return NULL;
    void *p;
    if (mapped(bytes)) {
        /* activations are mapped before the memory check compares them with what the host can
         * give (cli/memory_check.c): without MAP_NORESERVE the kernel's overcommit heuristic
         * refuses an arena larger than RAM outright, and the run ends on a bare "out of
         * memory" instead of the check's message with the settings that would fit */
        const int noreserve = cat == ZC_MEM_ACTIVATIONS ? MAP_NORESERVE : 0;
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | noreserve, -1,
                 0);
        if (p == MAP_FAILED)
            return NULL;
        if (bytes >= HUGE && huge_pages())
            (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice: refused is fine */
    } else {
        size_t rounded = (bytes + ALIGN - 1) / ALIGN * ALIGN;
        p = aligned_alloc(ALIGN, rounded);
        if (!p)
            return NULL;
        memset(p, 0, rounded);
    }
    zc_mem_charge(mem, cat, (int64_t)bytes);
    return p;
}

void zc_mem_charge(zc_mem *mem, zc_mem_category cat, int64_t bytes)
{
    if (!valid(mem, cat, ZC_MEM_NCATEGORIES) || bytes < 0)
        return;
    zc_mem_stats *s = &mem->cat[cat];
    s->current += bytes;
    if (s->current > s->peak)
        s->peak = s->current;
    int64_t st = states_now(mem);
    if (st > mem->states_peak)
        mem->states_peak = st;
}

void zc_mem_release(zc_mem *mem, zc_mem_category cat, int64_t bytes)
{
    if (!valid(mem, cat, ZC_MEM_NCATEGORIES) || bytes < 0)
        return;
    /* more than the category holds: a free of another size or category than the allocation's
     * (a broken precondition, zeroc/mem.h) — the ledger no longer says what is held */
    ZC_ASSERT(mem->cat[cat].current >= bytes);
    mem->cat[cat].current -= bytes;
}

void zc_mem_free(zc_mem *mem, zc_mem_category cat, void *p, size_t bytes)
{
    if (!p || !valid(mem, cat, ZC_MEM_NRAM))
        return;
    if (mapped(bytes))
        munmap(p, bytes);
    else
        free(p);
    zc_mem_release(mem, cat, (int64_t)bytes);
}

zc_mem_stats zc_mem_get(const zc_mem *mem, zc_mem_category cat)
{
    return valid(mem, cat, ZC_MEM_NCATEGORIES) ? mem->cat[cat] : (zc_mem_stats){0, 0};
}

int64_t zc_mem_model_states_peak(const zc_mem *mem)
{
    return mem ? mem->states_peak : 0;
}

void zc_mem_reset_peaks(zc_mem *mem)
{
    if (!mem)
        return;
    for (int c = 0; c < ZC_MEM_NCATEGORIES; c++)
        mem->cat[c].peak = mem->cat[c].current;
    mem->states_peak = states_now(mem);
}

const char *zc_mem_category_name(zc_mem_category cat)
{
    static const char *const names[] = {"params",  "grads",       "optimizer", "comm",
                                        "working", "activations", "offload",   "nvme"};
    _Static_assert(sizeof names / sizeof names[0] == ZC_MEM_NCATEGORIES, "names out of sync");
    return (unsigned)cat < ZC_MEM_NCATEGORIES ? names[cat] : "?";
}

static int64_t status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    size_t klen = strlen(key);
    int64_t v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0) {
            v = strtoll(line + klen, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return v;
}

int64_t zc_mem_peak_rss(void)
{
    return status_kb("VmHWM:");
}
int64_t zc_mem_current_rss(void)
{
    return status_kb("VmRSS:");
}

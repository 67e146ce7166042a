/* threads.c — how many compute threads each rank runs, and how they treat denormals.
 *
 * OpenBLAS and OpenMP each default to every core of the machine, so two ranks on a 2-core host
 * would run four compute threads on two cores (measured several times slower, and with
 * libgomp's spinning idle threads worse). Unless the environment says otherwise
 * (OMP_NUM_THREADS or OPENBLAS_NUM_THREADS), each rank takes the cores it may run on, shared
 * among the ranks of its host: a rank the launcher bound to its own cores keeps them all, an
 * unbound rank gets its share of the host's cores.
 *
 * Denormals: the main thread and OpenMP's threads (oneDNN, the optimizer, the models'
 * elementwise kernels) flush denormal results to zero and read denormal inputs as zero
 * (MXCSR FTZ and DAZ), as PyTorch's set_flush_denormal does: a training run wandering into
 * denormals otherwise slows down by orders of magnitude. OpenBLAS's worker threads are started
 * when the library is loaded, before this runs, and keep the default.
 *
 * Idle threads: libgomp's default lets an OpenMP thread spin a short while after a parallel
 * region before it sleeps. The products (oneDNN) and the elementwise kernels all run on OpenMP's
 * threads, back to back, and run faster that way than with OMP_WAIT_POLICY=passive (GPT-2 124M,
 * 1 process × 2 threads: 5% faster in fp32, 8% in bf16). The portable products run on OpenBLAS's
 * own pthreads instead, and OpenMP threads spinning beside them take their cores: the same step
 * is 2.2× slower there unless the OpenMP threads sleep at once. libgomp reads OMP_WAIT_POLICY when
 * it is loaded, before main, so for the portable path the process re-executes itself with
 * passive set (unless the environment already chose). */
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <cblas.h>

#include "cli/threads.h"

static void flush_denormals(void)
{
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) and DAZ (bit 6) */
}

void cli_threads_wait_policy(char **argv)
{
    const char *gemm = getenv("ZEROC_GEMM");
    if (!gemm || strcmp(gemm, "portable") || getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
        return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) == 0)
        execv("/proc/self/exe", argv);
    /* not re-executed: the run goes on, only slower on more than one thread */
    unsetenv("OMP_WAIT_POLICY");
}

/* How idle OpenMP threads wait, for the description: the environment's choice or libgomp's. */
static const char *wait_policy(void)
{
    const char *p = getenv("OMP_WAIT_POLICY");
    return p ? p : getenv("GOMP_SPINCOUNT") ? "GOMP_SPINCOUNT" : "default";
}

/* This rank's compute threads: the environment's count, or its share of the cores (set for
 * OpenMP and OpenBLAS, FTZ/DAZ on any thread that adds); the count and why into desc. */
static int choose_threads(const zc_comm *comm, char *desc, size_t cap)
{
    if (getenv("OMP_NUM_THREADS") || getenv("OPENBLAS_NUM_THREADS")) {
        int t = omp_get_max_threads();
        snprintf(desc, cap,
                 "%d compute thread%s per rank (OMP_NUM_THREADS / "
                 "OPENBLAS_NUM_THREADS in the environment)",
                 t, t == 1 ? "" : "s");
        return t;
    }
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)online;
    int local = zc_comm_local_size(comm), t;
    if (mine < online) { /* bound by the launcher: these cores are this rank's */
        t = mine;
        snprintf(desc, cap, "%d compute thread%s per rank (bound to %d of %ld cores)", t,
                 t == 1 ? "" : "s", mine, online);
    } else {
        t = mine / local > 1 ? mine / local : 1;
        snprintf(desc, cap,
                 "%d compute thread%s per rank (%d cores shared by %d rank%s on "
                 "this host)",
                 t, t == 1 ? "" : "s", mine, local, local == 1 ? "" : "s");
    }
    omp_set_num_threads(t);
    openblas_set_num_threads(t);
#pragma omp parallel
    flush_denormals(); /* threads the new count may have added */
    return t;
}

int cli_threads_setup(const zc_comm *comm, char *desc, size_t cap)
{
    flush_denormals();
#pragma omp parallel
    flush_denormals();
    int t = choose_threads(comm, desc, cap);
    size_t n = strlen(desc);
    snprintf(desc + n, cap - n, ", idle OpenMP threads wait: %s", wait_policy());
    return t;
}

/* threads.c — how many compute threads each rank runs, and how they treat denormals.
 *
 * OpenBLAS and OpenMP each default to every core of the machine, so two ranks on a 2-core host
 * would run four compute threads on two cores (measured several times slower, and with
 * libgomp's spinning idle threads worse). So each rank takes its share of the CPUs it may run
 * on: the ranks of its host (MPI_COMM_TYPE_SHARED, the real host even under the testing aid
 * ZEROC_RANKS_PER_HOST) gather their affinity masks, and a rank gets 1/k of each CPU in its
 * mask that k of them may run on, summed and rounded down (at least 1). Ranks the launcher
 * bound to cores of their own keep them all; unbound ranks split their host's cores; ranks
 * confined together to a cpuset smaller than the host (docker --cpuset-cpus, Slurm's cgroups)
 * split that cpuset — a mask smaller than the host's CPUs is not taken to be the rank's alone.
 * A rank that srun started as a task (one rank per task) with --cpus-per-task takes at most
 * SLURM_CPUS_PER_TASK threads: where Slurm binds tasks (TaskPlugin task/affinity or cgroup) the
 * mask already holds that many CPUs, where it does not (task/none, --cpu-bind=none) the mask is
 * the whole node, shared with other jobs' tasks the share cannot see.
 *
 * The environment decides per library: a valid OMP_NUM_THREADS (a positive integer, or
 * OpenMP's list of them per nesting level) leaves OpenMP's count (and so oneDNN's) alone, a
 * valid OPENBLAS_NUM_THREADS OpenBLAS's; the library whose variable is unset or invalid ("abc",
 * 0, -1, "", 1e3) gets the share. A cluster's module file setting only OPENBLAS_NUM_THREADS=1
 * thus no longer gives OpenMP every core of the host on each rank. The threads line names
 * where each count came from and any value ignored.
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
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <cblas.h>

#include "cli/relaunch.h"
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

/* A thread count from the environment: 1 with *out set when name holds a positive integer
 * (with list, OpenMP's comma-separated list of them, whose first counts), 0 when name is unset,
 * -1 when it holds anything else. Spaces around the numbers are accepted, as libgomp does. */
static int env_count(const char *name, bool list, int *out)
{
    const char *v = getenv(name);
    if (!v)
        return 0;
    for (int item = 0;; item++) {
        while (isspace((unsigned char)*v))
            v++;
        if (!isdigit((unsigned char)*v))
            return -1;
        char *end;
        long n = strtol(v, &end, 10);
        if (n < 1 || n > INT_MAX)
            return -1;
        if (!item)
            *out = (int)n;
        for (v = end; isspace((unsigned char)*v);)
            v++;
        if (!*v)
            return 1;
        if (!list || *v != ',')
            return -1;
        v++;
    }
}

/* The CPUs this process may run on, in a set of `bits` CPUs (all online ones if the kernel
 * will not say). */
static void my_cpus(cpu_set_t *set, int bits)
{
    const size_t size = CPU_ALLOC_SIZE(bits);
    if (sched_getaffinity(0, size, set) == 0 && CPU_COUNT_S(size, set) > 0)
        return;
    CPU_ZERO_S(size, set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < online && c < bits; c++)
        CPU_SET_S((size_t)c, size, set);
}

/* Bits of the kernel's CPU masks: sched_getaffinity refuses a smaller set. */
static int mask_bits(void)
{
    for (int bits = 1024; bits < (1 << 22); bits *= 2) {
        cpu_set_t *s = CPU_ALLOC(bits);
        if (!s)
            break;
        int ok = sched_getaffinity(0, CPU_ALLOC_SIZE(bits), s) == 0 || errno != EINVAL;
        CPU_FREE(s);
        if (ok)
            return bits;
    }
    return 1024;
}

/* This rank's share of its CPUs, from every affinity mask of its host: 1/k of each CPU of its
 * mask that k ranks of the host may run on. The count (at least 1) is returned, its reason goes
 * into why, and the smallest and largest share of the host's ranks into lo and hi. Collective
 * over MPI_COMM_WORLD (the host's ranks are those sharing its memory). */
static int cpu_share(const zc_comm *comm, char *why, size_t cap, int *lo, int *hi)
{
    MPI_Comm node = MPI_COMM_NULL;
    int local = 1, me = 0, bits = mask_bits();
    bool gathered = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                        &node) == MPI_SUCCESS &&
                    MPI_Comm_size(node, &local) == MPI_SUCCESS &&
                    MPI_Comm_rank(node, &me) == MPI_SUCCESS &&
                    MPI_Allreduce(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_MAX, node) == MPI_SUCCESS;
    const size_t size = CPU_ALLOC_SIZE(bits);
    char *masks = calloc(gathered ? (size_t)local : 1, size);
    if (masks) {
        my_cpus((cpu_set_t *)(masks + (gathered ? (size_t)me * size : 0)), bits);
        gathered = gathered && MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, masks, (int)size,
                                             MPI_BYTE, node) == MPI_SUCCESS;
    }
    if (node != MPI_COMM_NULL)
        MPI_Comm_free(&node);
    if (!masks || !gathered) { /* the masks unknown: every rank of the host assumed to have ours */
        cpu_set_t *mine = CPU_ALLOC(bits);
        int n = 1;
        if (mine) {
            my_cpus(mine, bits);
            n = CPU_COUNT_S(size, mine);
            CPU_FREE(mine);
        }
        free(masks);
        local = zc_comm_local_size(comm);
        *lo = *hi = n / local > 1 ? n / local : 1;
        snprintf(why, cap, "%d CPU%s shared by %d rank%s on this host; their masks not gathered", n,
                 n == 1 ? "" : "s", local, local == 1 ? "" : "s");
        return *lo;
    }
    int mine = 0, least = INT_MAX, most = 0, others = 0;
    *lo = INT_MAX, *hi = 0;
    for (int r = 0; r < local; r++) {
        const cpu_set_t *m = (const cpu_set_t *)(masks + (size_t)r * size);
        double share = 0;
        for (int c = 0; c < bits; c++) {
            if (!CPU_ISSET_S((size_t)c, size, m))
                continue;
            int k = 0;
            for (int q = 0; q < local; q++)
                k += CPU_ISSET_S((size_t)c, size, (const cpu_set_t *)(masks + (size_t)q * size));
            share += 1.0 / k;
            if (r == me) {
                least = k < least ? k : least;
                most = k > most ? k : most;
            }
        }
        int t = (int)(share + 1e-9);
        t = t > 1 ? t : 1;
        *lo = t < *lo ? t : *lo;
        *hi = t > *hi ? t : *hi;
        if (r == me)
            mine = t;
    }
    const cpu_set_t *my = (const cpu_set_t *)(masks + (size_t)me * size);
    cpu_set_t *both = CPU_ALLOC(bits);
    for (int q = 0; both && q < local; q++) /* the other ranks whose CPUs overlap this one's */
        if (q != me) {
            CPU_AND_S(size, both, my, (const cpu_set_t *)(masks + (size_t)q * size));
            others += CPU_COUNT_S(size, both) > 0;
        }
    CPU_FREE(both);
    const int n = CPU_COUNT_S(size, my);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    char cpus[64];
    if (online > 0 && n != online)
        snprintf(cpus, sizeof cpus, "the %d CPU%s (of %ld online)", n, n == 1 ? "" : "s", online);
    else
        snprintf(cpus, sizeof cpus, "the %d CPU%s", n, n == 1 ? "" : "s");
    if (most <= 1)
        snprintf(why, cap, "%s it may run on, shared with no other rank on this host", cpus);
    else if (least == most && most == others + 1)
        snprintf(why, cap, "%s it may run on, shared by %d ranks on this host", cpus, most);
    else
        snprintf(why, cap,
                 "its share of %s it may run on, each shared by %d to %d ranks on this host", cpus,
                 least, most);
    free(masks);
    return mine;
}

/* This rank's compute threads: OpenMP's and OpenBLAS's each from the environment when its
 * variable holds a valid count, else this rank's share of its CPUs (FTZ/DAZ on any thread that
 * adds); where each count came from into desc; returns OpenMP's count. Collective. */
static int choose_threads(const zc_comm *comm, char *desc, size_t cap)
{
    int omp_env = 0, blas_env = 0;
    const int omp_set = env_count("OMP_NUM_THREADS", true, &omp_env),
              blas_set = env_count("OPENBLAS_NUM_THREADS", false, &blas_env);
    char why[256], omp_why[300], blas_why[300];
    int lo, hi;
    /* always (a collective): ranks whose environments differ must not disagree on calling it */
    int share = cpu_share(comm, why, sizeof why, &lo, &hi);
    int slurm = 0; /* srun's --cpus-per-task, when this rank is its task */
    if (cli_srun_direct() && env_count("SLURM_CPUS_PER_TASK", false, &slurm) == 1 &&
        slurm < share) {
        share = slurm;
        lo = lo < slurm ? lo : slurm;
        hi = hi < slurm ? hi : slurm;
        size_t n = strlen(why);
        snprintf(why + n, sizeof why - n,
                 ", capped at srun's --cpus-per-task (SLURM_CPUS_PER_TASK=%d)", slurm);
    }
    if (omp_set != 1)
        omp_set_num_threads(share);
    if (blas_set != 1)
        openblas_set_num_threads(share);
#pragma omp parallel
    flush_denormals(); /* threads the new count may have added */
    const int t = omp_get_max_threads(), b = openblas_get_num_threads();
    if (omp_set == 1)
        snprintf(omp_why, sizeof omp_why, "OMP_NUM_THREADS=%s", getenv("OMP_NUM_THREADS"));
    else
        snprintf(omp_why, sizeof omp_why, "%s", why);
    if (blas_set == 1)
        snprintf(blas_why, sizeof blas_why, "OPENBLAS_NUM_THREADS=%s",
                 getenv("OPENBLAS_NUM_THREADS"));
    else
        snprintf(blas_why, sizeof blas_why, "%s", why);
    /* "per rank" when every rank of the host runs as many (the ranks of other hosts say theirs) */
    const char *per = omp_set == 1 || lo == hi ? "per rank" : "on this rank";
    int len;
    if (t == b && omp_set != 1 && blas_set != 1)
        len = snprintf(desc, cap, "%d compute thread%s %s (OpenMP, oneDNN and OpenBLAS: %s)", t,
                       t == 1 ? "" : "s", per, why);
    else
        len = snprintf(desc, cap,
                       "%d compute thread%s %s for OpenMP and oneDNN (%s), %d for "
                       "OpenBLAS (%s)",
                       t, t == 1 ? "" : "s", per, omp_why, b, blas_why);
    if (lo != hi && (omp_set != 1 || blas_set != 1) && len >= 0 && (size_t)len < cap)
        len +=
            snprintf(desc + len, cap - (size_t)len, "; %d to %d on the ranks of this host", lo, hi);
    const char *bad[2] = {omp_set < 0 ? "OMP_NUM_THREADS" : NULL,
                          blas_set < 0 ? "OPENBLAS_NUM_THREADS" : NULL};
    for (int i = 0; i < 2; i++)
        if (bad[i] && len >= 0 && (size_t)len < cap)
            len +=
                snprintf(desc + len, cap - (size_t)len,
                         "; %s=\"%.40s\" ignored: not a positive integer", bad[i], getenv(bad[i]));
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

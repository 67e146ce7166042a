/* collectives.c — why zeroc's reduce-scatter is an alltoall plus a local rank-order sum:
 * times MPI_Reduce_scatter_block against zc_comm_reduce_scatter (alltoall + sum) and
 * MPI_Allgather, per buffer size, and prints bus bandwidth as NCCL-tests defines it
 * ((N−1)/N · bytes / time). Run by hand: tests/mpirun.sh 2 build/bench_collectives. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "zeroc/comm.h"

static double time_it(void (*fn)(void *), void *arg, int reps)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++)
        fn(arg);
    double t = (MPI_Wtime() - t0) / reps, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

typedef struct {
    zc_comm *c;
    float *a, *b, *out;
    size_t len; /* floats per rank block */
    int n;
} bench;

static void mpi_rs(void *p)
{
    bench *x = p;
    MPI_Reduce_scatter_block(x->a, x->out, (int)x->len, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void zc_rs(void *p)
{
    bench *x = p;
    zc_comm_req *r;
    zc_err err;
    if (zc_comm_reduce_scatter_start(x->c, ZC_FP32, x->a, x->b, x->len, ZC_FP32, x->out, false,
                                     "bench", &r, &err) ||
        zc_comm_wait(x->c, r, &err))
        fprintf(stderr, "%s\n", err.msg);
}

static void mpi_ag(void *p)
{
    bench *x = p;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x->a, (int)x->len, MPI_FLOAT, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    bench x = {0};
    zc_err err;
    if (zc_comm_init(&x.c, &argc, &argv, &err))
        return 1;
    x.n = zc_comm_size(x.c);
    if (zc_comm_rank(x.c) == 0)
        printf("%d ranks; bus bandwidth GB/s (time)\n%10s %22s %22s %22s\n", x.n, "MiB",
               "MPI_Reduce_scatter_blk", "zeroc alltoall+sum", "MPI_Allgather");
    for (size_t mib = 1; mib <= 256; mib *= 4) {
        size_t total = mib << 20;
        x.len = total / sizeof(float) / (size_t)x.n;
        x.a = calloc(total, 1), x.b = calloc(total, 1), x.out = calloc(x.len, sizeof(float));
        int reps = mib >= 64 ? 3 : 10;
        double t[3] = {time_it(mpi_rs, &x, reps), time_it(zc_rs, &x, reps),
                       time_it(mpi_ag, &x, reps)};
        if (zc_comm_rank(x.c) == 0) {
            printf("%10zu", mib);
            for (int k = 0; k < 3; k++)
                printf("   %8.2f (%8.2f ms)", (double)total * (x.n - 1) / x.n / t[k] / 1e9,
                       t[k] * 1e3);
            printf("\n");
        }
        free(x.a), free(x.b), free(x.out);
    }
    zc_comm_finalize(x.c);
    return 0;
}

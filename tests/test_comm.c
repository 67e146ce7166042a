/* test_comm.c — the communicator on N ranks (run with 1–4): the reduce-scatter result equals
 * the rank-order sum computed here from every rank's (regenerated) input, bit for bit; the
 * all-gather and all-reduce deliver every rank's data; the byte counters follow the ring
 * convention exactly; control sums are identical on every rank. The program initialises MPI
 * itself, as a host program would: zc_comm_finalize must give MPI_COMM_WORLD its error handler
 * back, and a failed zc_comm_init must leave *out NULL. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "check.h"
#include "zeroc/comm.h"
#include "zeroc/dtype.h"
#include "zeroc/rng.h"

/* Rank j's contribution, element i (every rank can compute every rank's). */
static float input(int j, size_t i)
{
    return zc_rng_normal(3, (uint64_t)j, i);
}

/* Whether MPI_COMM_WORLD's error handler is h. */
static bool world_handler_is(MPI_Errhandler h)
{
    MPI_Errhandler now;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &now);
    bool same = now == h;
    MPI_Errhandler_free(&now);
    return same;
}

/* A zc_comm_init that fails (here: a ZEROC_RANKS_PER_HOST it refuses) leaves *out NULL, and a
 * second communicator's finalize leaves MPI_COMM_WORLD returning errors while the first lives. */
static void test_second_comm(void)
{
    zc_err err = {0};
    zc_comm *c2 = (zc_comm *)&err; /* anything but NULL */
    setenv("ZEROC_RANKS_PER_HOST", "x", 1);
    CHECK(zc_comm_init(&c2, NULL, NULL, &err) == ZC_EINVAL && c2 == NULL &&
              strstr(err.msg, "ZEROC_RANKS_PER_HOST=x"),
          "a failed zc_comm_init left *out %p (%s)", (void *)c2, err.msg);
    unsetenv("ZEROC_RANKS_PER_HOST");
    zc_comm_finalize(c2); /* NULL: nothing */
    CHECK(zc_comm_init(NULL, NULL, NULL, &err) == ZC_EINVAL && strstr(err.msg, "out is NULL"),
          "zc_comm_init(NULL): %s", err.msg);
    CHECK(!zc_comm_init(&c2, NULL, NULL, &err), "a second communicator: %s", err.msg);
    zc_comm_finalize(c2);
    CHECK(world_handler_is(MPI_ERRORS_RETURN),
          "MPI_COMM_WORLD must return errors while a zc_comm lives");
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL); /* the program's choice */
    zc_comm *c;
    zc_err err = {0};
    if (zc_comm_init(&c, &argc, &argv, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const int r = zc_comm_rank(c), n = zc_comm_size(c);
    const size_t len = 1001; /* block length: odd, not a vector multiple */
    /* recv holds the other ranks' blocks only, N − 1 (ASan: a block written or read past them) */
    const size_t others = n > 1 ? (size_t)n - 1 : 1;
    float *send = malloc(n * len * 4), *recv = malloc(others * len * 4), *out = malloc(len * 4);
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < len; i++)
            send[j * len + i] = input(r, j * len + i);
    zc_comm_req *req;
    CHECK(!zc_comm_reduce_scatter_start(c, ZC_FP32, send, recv, len, ZC_FP32, out, false, "test rs",
                                        &req, &err) &&
              !zc_comm_wait(c, req, &err),
          "reduce_scatter: %s", err.msg);
    int exact = 1;
    for (size_t i = 0; i < len; i++) {
        float want = input(0, r * len + i);
        for (int j = 1; j < n; j++)
            want += input(j, r * len + i);
        exact &= memcmp(&want, &out[i], 4) == 0;
    }
    CHECK(exact, "rank %d: reduce_scatter differs from the rank-order sum", r);
    /* accumulate = 1 adds the sum to what out holds */
    float before = out[0];
    CHECK(!zc_comm_reduce_scatter_start(c, ZC_FP32, send, recv, len, ZC_FP32, out, true, "test rs+",
                                        &req, &err) &&
              !zc_comm_wait(c, req, &err),
          "reduce_scatter accumulate: %s", err.msg);
    CHECK(out[0] == before + before, "accumulate: %g != 2 × %g", out[0], before);

    /* Strided: the same blocks read where they lie, every `stride` elements of a wider buffer
     * (its gaps NaN, which must not reach the sum), in bf16: the packed call's bits. */
    {
        const size_t stride = len + 37;
        uint16_t *wide = malloc(n * stride * 2), *packed = malloc(n * len * 2);
        uint16_t *recv16 = malloc(others * len * 2), *o1 = malloc(len * 2), *o2 = malloc(len * 2);
        float nan = NAN;
        for (size_t i = 0; i < n * stride; i++)
            zc_dtype_narrow(ZC_BF16, &nan, &wide[i], 1);
        for (int j = 0; j < n; j++)
            for (size_t i = 0; i < len; i++) {
                zc_dtype_narrow(ZC_BF16, &send[j * len + i], &packed[j * len + i], 1);
                wide[j * stride + i] = packed[j * len + i];
            }
        CHECK(!zc_comm_reduce_scatter_start(c, ZC_BF16, packed, recv16, len, ZC_BF16, o1, false,
                                            "test rs bf16", &req, &err) &&
                  !zc_comm_wait(c, req, &err),
              "reduce_scatter bf16: %s", err.msg);
        memset(recv16, 0, others * len * 2);
        CHECK(!zc_comm_reduce_scatter_strided_start(c, ZC_BF16, wide, stride, recv16, len, ZC_BF16,
                                                    o2, false, "test rs strided", &req, &err) &&
                  !zc_comm_wait(c, req, &err),
              "reduce_scatter strided: %s", err.msg);
        CHECK(!memcmp(o1, o2, len * 2),
              "rank %d: the strided reduce_scatter differs from the packed", r);
        /* The bf16 sum's bits: the blocks widened, added in rank order in fp32, rounded once;
         * with accumulate, added to what out holds, rounded once. fp32 blocks into a bf16 out
         * (no fused kernel for that pair: the chunked path) round the fp32 rank-order sum. */
        uint16_t *want = malloc(len * 2), *want2 = malloc(len * 2), *want32 = malloc(len * 2);
        for (size_t i = 0; i < len; i++) {
            float acc = 0, acc32 = 0;
            for (int j = 0; j < n; j++) {
                float x = input(j, r * len + i), w;
                uint16_t h;
                zc_dtype_narrow(ZC_BF16, &x, &h, 1);
                zc_dtype_widen(ZC_BF16, &h, &w, 1);
                acc = j ? acc + w : w;
                acc32 = j ? acc32 + x : x;
            }
            zc_dtype_narrow(ZC_BF16, &acc, &want[i], 1);
            zc_dtype_narrow(ZC_BF16, &acc32, &want32[i], 1);
            float held;
            zc_dtype_widen(ZC_BF16, &want[i], &held, 1);
            held += acc;
            zc_dtype_narrow(ZC_BF16, &held, &want2[i], 1);
        }
        CHECK(!memcmp(o1, want, len * 2), "rank %d: the bf16 reduce_scatter's bits differ", r);
        CHECK(!zc_comm_reduce_scatter_start(c, ZC_BF16, packed, recv16, len, ZC_BF16, o1, true,
                                            "test rs bf16+", &req, &err) &&
                  !zc_comm_wait(c, req, &err),
              "reduce_scatter bf16 accumulate: %s", err.msg);
        CHECK(!memcmp(o1, want2, len * 2), "rank %d: bf16 accumulate's bits differ", r);
        CHECK(!zc_comm_reduce_scatter_start(c, ZC_FP32, send, recv, len, ZC_BF16, o2, false,
                                            "test rs fp32 to bf16", &req, &err) &&
                  !zc_comm_wait(c, req, &err),
              "reduce_scatter fp32 to bf16: %s", err.msg);
        CHECK(!memcmp(o2, want32, len * 2), "rank %d: fp32 blocks into bf16: bits differ", r);
        free(want), free(want2), free(want32);
        free(wide), free(packed), free(recv16), free(o1), free(o2);
    }

    /* all-gather in place: block j = rank j's values */
    float *buf = malloc(n * len * 4);
    for (size_t i = 0; i < len; i++)
        buf[r * len + i] = input(r, i);
    CHECK(!zc_comm_all_gather(c, ZC_FP32, buf, len, "test ag", &err), "all_gather: %s", err.msg);
    int ok = 1;
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < len; i++)
            ok &= buf[j * len + i] == input(j, i);
    CHECK(ok, "rank %d: all_gather delivered wrong data", r);

    /* all-reduce of a length that does not divide by N */
    const size_t cnt = 997;
    for (size_t i = 0; i < cnt; i++)
        buf[i] = input(r, i);
    CHECK(!zc_comm_all_reduce(c, buf, cnt, "test ar", &err), "all_reduce: %s", err.msg);
    double worst = 0;
    for (size_t i = 0; i < cnt; i++) {
        double want = 0;
        for (int j = 0; j < n; j++)
            want += input(j, i);
        worst = fmax(worst, fabs(buf[i] - want));
    }
    CHECK(worst < 1e-5, "all_reduce max error %g", worst);

    /* broadcast from the last rank */
    for (size_t i = 0; i < len; i++)
        buf[i] = r == n - 1 ? input(77, i) : 0.0f;
    CHECK(!zc_comm_broadcast(c, buf, len, n - 1, "test bcast", &err), "broadcast: %s", err.msg);
    ok = 1;
    for (size_t i = 0; i < len; i++)
        ok &= buf[i] == input(77, i);
    CHECK(ok, "broadcast delivered wrong data");

    /* ring-convention byte counts: 3 reduce-scatters of N·len floats (one into bf16) and 3 of
     * N·len bf16 (one strided: counted the same), 1 all-gather of N·len, 1 all-reduce of
     * ceil(997/N)·N floats */
    const zc_comm_counters *k = zc_comm_get_counters(c);
    int64_t S = (int64_t)((cnt + n - 1) / n);
    CHECK(k->bytes[ZC_COMM_REDUCE_SCATTER] == 3 * (int64_t)len * (4 + 2) * (n - 1), "rs bytes %lld",
          (long long)k->bytes[ZC_COMM_REDUCE_SCATTER]);
    CHECK(k->bytes[ZC_COMM_ALL_GATHER] == (int64_t)len * 4 * (n - 1), "ag bytes %lld",
          (long long)k->bytes[ZC_COMM_ALL_GATHER]);
    CHECK(k->bytes[ZC_COMM_ALL_REDUCE] == 2 * S * 4 * (n - 1), "ar bytes %lld",
          (long long)k->bytes[ZC_COMM_ALL_REDUCE]);
    CHECK(k->calls[ZC_COMM_REDUCE_SCATTER] == 6 && k->calls[ZC_COMM_ALL_GATHER] == 1 &&
              k->calls[ZC_COMM_ALL_REDUCE] == 1,
          "call counts");

    /* control: the same sum, same bits, on every rank */
    double sum = 0, sums[64];
    CHECK(!zc_comm_sum_f64(c, 0.1 * (r + 1), &sum, "test sum", &err), "sum: %s", err.msg);
    CHECK(!zc_comm_control_gather(c, &sum, sums, sizeof sum, "test gather", &err), "gather");
    for (int j = 0; j < n; j++)
        CHECK(!memcmp(&sums[j], &sum, sizeof sum), "rank %d's sum differs from rank %d's", j, r);

    /* groups (hpZ): each group of g consecutive ranks gathers its members' blocks, and only
     * those; the bytes count g − 1 peers; on one machine none leaves the host. A size that does
     * not divide N is refused. */
    for (int g = 1; g <= n; g++) {
        if (n % g) {
            CHECK(zc_comm_set_group_size(c, g, &err) == ZC_EINVAL, "group %d of %d ranks", g, n);
            continue;
        }
        CHECK(!zc_comm_set_group_size(c, g, &err), "group size %d: %s", g, err.msg);
        CHECK(zc_comm_group_size(c) == g && zc_comm_group_rank(c) == r % g, "group of rank %d", r);
        int64_t before = k->bytes[ZC_COMM_ALL_GATHER];
        for (int j = 0; j < g; j++)
            for (size_t i = 0; i < len; i++)
                buf[(size_t)j * len + i] = j == r % g ? input(r, i) : -1.0f;
        zc_comm_req *q;
        CHECK(!zc_comm_group_all_gather_start(c, ZC_FP32, buf, len, "test group ag", &q, &err) &&
                  !zc_comm_wait(c, q, &err),
              "group all_gather: %s", err.msg);
        bool same = true;
        for (int j = 0; j < g; j++)
            for (size_t i = 0; i < len; i++)
                same = same && buf[(size_t)j * len + i] == input(r - r % g + j, i);
        CHECK(same, "rank %d: group all_gather (g = %d) delivered wrong data", r, g);
        CHECK(k->bytes[ZC_COMM_ALL_GATHER] - before == (int64_t)len * 4 * (g - 1),
              "group ag bytes %lld", (long long)(k->bytes[ZC_COMM_ALL_GATHER] - before));
    }
    for (int op = 0; op < ZC_COMM_NOPS; op++)
        CHECK(k->inter_host_bytes[op] == 0, "%s: %lld bytes to other hosts on one machine",
              zc_comm_op_name(op), (long long)k->inter_host_bytes[op]);
    free(send), free(recv), free(out), free(buf);
    test_second_comm();
    zc_comm_finalize(c);
    CHECK(world_handler_is(MPI_ERRORS_ARE_FATAL),
          "zc_comm_finalize did not give MPI_COMM_WORLD its error handler back");
    int rc = check_summary();
    MPI_Finalize();
    return rc;
}

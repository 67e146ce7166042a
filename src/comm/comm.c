/* comm.c — the communicator (zeroc/comm.h): every MPI call in zeroc is in this file.
 *
 * Why it is shaped this way:
 * - All collectives are started non-blocking and finished by one wait loop that polls
 *   MPI_Test against a deadline, so a rank that never arrives turns into a ZC_ETIMEOUT naming
 *   the collective instead of a hang. Blocking forms are start + wait.
 * - Reduce-scatter is an alltoallv plus a local sum in rank order: the same bytes on the wire as
 *   a ring reduce-scatter, a summation order that does not depend on the MPI library's algorithm
 *   choice (so every ZeRO stage gets the same bits), and far faster than OpenMPI 4.1's
 *   MPI_Reduce_scatter_block on shared memory.
 * - Errors are returned (MPI_ERRORS_RETURN on our duplicate of MPI_COMM_WORLD); only the caller
 *   decides to abort. OpenMPI 4 reports the completion errors of non-blocking collectives on
 *   MPI_COMM_WORLD whatever their communicator, so MPI_COMM_WORLD returns errors too while a
 *   zc_comm lives; the last zc_comm_finalize gives it back the handler the program had. */
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "kernels/quantize.h"
#include "kernels/rank_sum.h"
#include "util/abort_hook.h"
#include "util/clock.h"
#include "zeroc/comm.h"

struct zc_comm {
    MPI_Comm world;
    int rank, size;
    int local_size;        /* ranks on this host (MPI_COMM_TYPE_SHARED) */
    int remote;            /* ranks on other hosts */
    int *host_of;          /* world rank → host index (hosts numbered by their first rank) */
    int hosts, host_ranks; /* host_ranks: ranks per host when every host has as many, else 0 */
    int *slot_of;          /* world rank → its segment's place in a qgZ send buffer */
    MPI_Comm intra, inter; /* qgZ's two hops: this host's ranks; the ranks of this rank's local
                            * index on every host (MPI_COMM_NULL: one hop) */
    MPI_Comm group;        /* zc_comm_set_group_size's groups; MPI_COMM_NULL: groups of 1 */
    int group_size, group_rank, group_remote; /* group_remote: its ranks on other hosts */
    int we_initialised;
    double timeout_s;
    zc_comm_counters ctr;
};

struct zc_comm_req {
    MPI_Request mpi;
    zc_comm_op op;
    char label[160];
    /* reduce-scatter: */
    void *send, *recv, *out;
    int hop; /* qgZ in two hops: 1 within the host, 2 across hosts (0: one hop) */
    zc_dtype in_type, out_type;
    size_t len;
    size_t q8_segment; /* qgZ: the received blocks are quantized segments of this many bytes */
    bool accumulate;
    const void *self; /* typed blocks: this rank's own block, read where it lies in send (MPI
                       * moves only the other ranks' blocks; recv holds those N − 1) */
    int *v;           /* an alltoallv's counts and displacements (4·N), kept until it ends */
    int done;
};

static int second_hop(zc_comm *c, zc_comm_req *r);

/* MPI_COMM_WORLD's error handler before the first live zc_comm set MPI_ERRORS_RETURN on it, and
 * the zc_comms alive (MPI calls come from one thread: MPI_THREAD_FUNNELED). */
static MPI_Errhandler world_handler = MPI_ERRHANDLER_NULL;
static int live_comms;

/* MPI_Abort asks the runtime to stop every rank; when this rank's host has lost the network
 * (the very failure that brings us here, often), the runtime may never answer: the process
 * ends by itself ABORT_GRACE_S later rather than hang. */
enum { ABORT_GRACE_S = 10 };

static void on_alarm(int sig)
{
    (void)sig;
    _exit(1);
}

static void abort_world(int code)
{
    signal(SIGALRM, on_alarm);
    alarm(ABORT_GRACE_S);
    MPI_Abort(MPI_COMM_WORLD, code);
}

static zc_status mpi_fail(zc_err *err, int rc, const char *what, const char *label)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return zc_err_set(err, ZC_ECOMM, "MPI error in %s (%s): %s", what, label, msg);
}

/* Which ranks share a host: MPI_COMM_TYPE_SHARED, or with ZEROC_RANKS_PER_HOST=R (a testing
 * aid: the multi-host paths on one machine) every R consecutive ranks. Hosts are numbered in the
 * order of their first rank. With as many ranks on every host (more than one, on more than one
 * host), qgZ gets its two hops' communicators. */
static zc_status topology(zc_comm *c, zc_err *err)
{
    const char *hook = getenv("ZEROC_RANKS_PER_HOST");
    int R = 0, n = c->size;
    if (hook && *hook) {
        char *end;
        long v = strtol(hook, &end, 10);
        if (*end || v < 1 || n % v)
            return zc_err_set(err, ZC_EINVAL,
                              "ZEROC_RANKS_PER_HOST=%s: expected a number of "
                              "ranks that divides the %d ranks",
                              hook, n);
        R = (int)v;
    }
    MPI_Comm node;
    int rc = R ? MPI_Comm_split(c->world, c->rank / R, c->rank, &node)
               : MPI_Comm_split_type(c->world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "finding the ranks of this host", "start-up");
    int local, first = c->rank;
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &c->local_size);
    MPI_Bcast(&first, 1, MPI_INT, 0, node); /* node rank 0 is the host's first rank */
    int mine[2] = {local, first}, *all = malloc(2 * (size_t)n * sizeof *all);
    c->host_of = malloc((size_t)n * sizeof *c->host_of);
    c->slot_of = malloc((size_t)n * sizeof *c->slot_of);
    if (!all || !c->host_of || !c->slot_of) {
        free(all);
        MPI_Comm_free(&node);
        return zc_err_set(err, ZC_ENOMEM, "out of memory at start-up");
    }
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, c->world);
    c->hosts = 0;
    for (int w = 0; w < n; w++) {
        int h = 0;
        for (int v = 0; v < all[2 * w + 1]; v++)
            h += all[2 * v] == 0; /* hosts whose first rank comes before */
        c->host_of[w] = h;
        c->hosts += all[2 * w] == 0;
    }
    c->host_ranks = n % c->hosts == 0 ? n / c->hosts : 0;
    for (int w = 0; c->host_ranks && w < n; w++)
        if (all[2 * w] >= c->host_ranks)
            c->host_ranks = 0; /* a host with more ranks than that */
    c->remote = c->size - c->local_size;
    bool two_hops = c->host_ranks > 1 && c->hosts > 1;
    for (int w = 0; w < n; w++)
        c->slot_of[w] = two_hops ? all[2 * w] * c->hosts + c->host_of[w] : w;
    free(all);
    if (!two_hops) {
        MPI_Comm_free(&node);
        return ZC_OK;
    }
    c->intra = node;
    MPI_Comm_set_errhandler(c->intra, MPI_ERRORS_RETURN);
    rc = MPI_Comm_split(c->world, local, c->host_of[c->rank], &c->inter);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "joining the ranks of other hosts", "start-up");
    MPI_Comm_set_errhandler(c->inter, MPI_ERRORS_RETURN);
    return ZC_OK;
}

/* MPI's start and end, left out of LeakSanitizer's check in a sanitizer build: Open MPI's
 * runtime keeps ~3,300 allocations for the life of the process (tests/lsan.supp suppresses
 * them by library), and matching each against the suppressions at exit cost about a second a
 * process. Allocations made on this thread between the two are never reported; zeroc's own
 * code runs none of them. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
static void lsan_off(void)
{
    __lsan_disable();
}
static void lsan_on(void)
{
    __lsan_enable();
}
#else
static void lsan_off(void) {}
static void lsan_on(void) {}
#endif

zc_status zc_comm_init(zc_comm **out, int *argc, char ***argv, zc_err *err)
{
    if (!out)
        return zc_err_set(err, ZC_EINVAL, "zc_comm_init: out is NULL");
    *out = NULL;
    zc_comm *c = calloc(1, sizeof *c);
    if (!c)
        return zc_err_set(err, ZC_ENOMEM, "out of memory creating the communicator");
    int up = 0;
    MPI_Initialized(&up);
    if (!up) {
        int provided;
        lsan_off();
        const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        lsan_on();
        if (rc != MPI_SUCCESS) {
            free(c);
            return zc_err_set(err, ZC_ECOMM, "MPI_Init_thread failed");
        }
        c->we_initialised = 1;
    }
    /* OpenMPI reports completion errors of non-blocking collectives on MPI_COMM_WORLD, so both
     * communicators return errors instead of aborting; the world's own handler is kept for
     * zc_comm_finalize to put back. */
    if (live_comms++ == 0)
        MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_handler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &c->world);
    MPI_Comm_set_errhandler(c->world, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->world, &c->rank);
    MPI_Comm_size(c->world, &c->size);
    c->group = c->intra = c->inter = MPI_COMM_NULL;
    zc_status st = topology(c, err);
    if (st) {
        zc_comm_finalize(c);
        return st;
    }
    c->group_size = 1;
    c->timeout_s = 600.0;
    zc_set_abort_hook(abort_world);
    *out = c;
    return ZC_OK;
}

void zc_comm_finalize(zc_comm *c)
{
    if (!c)
        return;
    MPI_Comm *comms[] = {&c->group, &c->intra, &c->inter};
    for (size_t k = 0; k < sizeof comms / sizeof *comms; k++)
        if (*comms[k] != MPI_COMM_NULL)
            MPI_Comm_free(comms[k]);
    free(c->host_of);
    free(c->slot_of);
    MPI_Comm_free(&c->world);
    if (--live_comms == 0 && world_handler != MPI_ERRHANDLER_NULL) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_handler);
        MPI_Errhandler_free(&world_handler); /* our reference; the world keeps its own */
    }
    if (live_comms == 0) /* another zc_comm still aborts through MPI */
        zc_set_abort_hook(NULL);
    if (c->we_initialised) {
        lsan_off();
        MPI_Finalize();
        lsan_on();
    }
    free(c);
}

void zc_comm_abort(zc_comm *c, int code)
{
    (void)c;
    abort_world(code);
    exit(code); /* not reached */
}

int zc_comm_rank(const zc_comm *c)
{
    return c->rank;
}
int zc_comm_size(const zc_comm *c)
{
    return c->size;
}
int zc_comm_local_size(const zc_comm *c)
{
    return c->local_size;
}
void zc_comm_set_timeout(zc_comm *c, double seconds)
{
    c->timeout_s = seconds;
}
int zc_comm_group_size(const zc_comm *c)
{
    return c->group_size;
}
int zc_comm_hosts(const zc_comm *c)
{
    return c->hosts;
}
int zc_comm_host_ranks(const zc_comm *c)
{
    return c->host_ranks;
}
int zc_comm_q8_slot(const zc_comm *c, int rank)
{
    return c->slot_of[rank];
}
int zc_comm_group_rank(const zc_comm *c)
{
    return c->group_rank;
}

zc_status zc_comm_set_group_size(zc_comm *c, int g, zc_err *err)
{
    if (g < 1 || c->size % g != 0)
        return zc_err_set(err, ZC_EINVAL, "a group size of %d does not divide the %d ranks", g,
                          c->size);
    if (g == c->group_size)
        return ZC_OK;
    if (c->group != MPI_COMM_NULL)
        MPI_Comm_free(&c->group);
    c->group_size = 1;
    c->group_rank = 0;
    c->group_remote = 0;
    if (g == 1)
        return ZC_OK;
    int rc = MPI_Comm_split(c->world, c->rank / g, c->rank, &c->group);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "splitting the ranks into groups", "zero_hpz_partition_size");
    MPI_Comm_set_errhandler(c->group, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->group, &c->group_rank);
    c->group_size = g;
    c->group_remote = 0;
    for (int w = c->rank - c->group_rank; w < c->rank - c->group_rank + g; w++)
        c->group_remote += c->host_of[w] != c->host_of[c->rank];
    return ZC_OK;
}
int zc_comm_groups_across_hosts(const zc_comm *c)
{
    int across = 0;
    for (int first = 0; first < c->size; first += c->group_size)
        for (int w = first + 1; w < first + c->group_size; w++)
            if (c->host_of[w] != c->host_of[first]) {
                across++;
                break;
            }
    return across;
}

const zc_comm_counters *zc_comm_get_counters(const zc_comm *c)
{
    return &c->ctr;
}

const char *zc_comm_op_name(zc_comm_op op)
{
    static const char *const names[] = {"reduce_scatter", "all_gather", "all_reduce", "broadcast",
                                        "control"};
    _Static_assert(sizeof names / sizeof names[0] == ZC_COMM_NOPS, "names out of sync");
    return (unsigned)op < ZC_COMM_NOPS ? names[op] : "?";
}

static zc_comm_req *req_new(zc_comm_op op, const char *label)
{
    zc_comm_req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->op = op;
    r->mpi = MPI_REQUEST_NULL;
    snprintf(r->label, sizeof r->label, "%s", label ? label : "");
    return r;
}

static void req_free(zc_comm_req *r)
{
    if (!r)
        return;
    free(r->v);
    free(r);
}

static zc_status check_count(size_t n, const char *what, const char *label, zc_err *err)
{
    if (n > (size_t)INT_MAX)
        return zc_err_set(err, ZC_EINVAL,
                          "%s (%s): %zu elements exceed MPI's int count limit %d; use smaller "
                          "units or a smaller reduce_bucket_size",
                          what, label, n, INT_MAX);
    return ZC_OK;
}

static MPI_Datatype mpi_type(zc_dtype t)
{
    return t == ZC_FP32 ? MPI_FLOAT : MPI_UINT16_T;
}

/* The typed blocks to the other ranks (block j at send + j·stride elements; stride = len when
 * packed), each other rank's into recv's block zc_rank_sum_slot(j, rank): this rank's own block
 * is not copied (r->self), so recv holds N − 1 blocks.
 * MPI_Ialltoallv's counts and displacements are kept in r until the request ends. */
static int alltoall_blocks(zc_comm *c, zc_comm_req *r, const void *send, size_t stride,
                           MPI_Datatype mpi)
{
    const int n = c->size;
    if (!(r->v = malloc(4 * (size_t)n * sizeof *r->v)))
        return MPI_ERR_NO_MEM;
    int *sc = r->v, *sd = sc + n, *rc = sd + n, *rd = rc + n;
    for (int j = 0; j < n; j++) {
        sc[j] = rc[j] = j == c->rank ? 0 : (int)r->len;
        sd[j] = (int)(stride * (size_t)j);
        rd[j] = (int)(r->len * zc_rank_sum_slot(j, c->rank));
    }
    return MPI_Ialltoallv(send, sc, sd, mpi, r->recv, rc, rd, mpi, c->world, &r->mpi);
}

/* A reduce-scatter of len elements per rank whose blocks travel as `count` items of `mpi`,
 * `block_bytes` bytes in all (typed elements, or qgZ's quantized segments); the blocks lie
 * packed in send, or (stride > 0, typed elements only) every stride elements. */
static zc_status rs_start(zc_comm *c, zc_dtype in, size_t q8_segment, const void *send,
                          size_t stride, void *recv, size_t len, zc_dtype out_type, void *out,
                          bool accumulate, const char *label, zc_comm_req **req, zc_err *err)
{
    double t0 = zc_now_s();
    int n = c->size;
    const size_t count = q8_segment ? q8_segment : len;
    const size_t block_bytes = q8_segment ? q8_segment : len * (size_t)zc_dtype_size(in);
    const MPI_Datatype mpi = q8_segment ? MPI_BYTE : mpi_type(in);
    zc_status st;
    if ((st = check_count(count, "reduce_scatter", label, err)) ||
        (stride && (st = check_count(stride * (size_t)(n - 1) + len, "reduce_scatter (strided)",
                                     label, err))))
        return st;
    zc_comm_req *r = req_new(ZC_COMM_REDUCE_SCATTER, label);
    if (!r)
        return zc_err_set(err, ZC_ENOMEM, "out of memory starting reduce_scatter (%s)", label);
    r->send = (void *)send; /* qgZ's second hop sends from it again */
    r->recv = recv;
    r->out = out;
    r->in_type = in;
    r->out_type = out_type;
    r->len = len;
    r->q8_segment = q8_segment;
    r->accumulate = accumulate;
    r->hop = q8_segment && c->intra != MPI_COMM_NULL;
    if (!q8_segment) /* the own block is summed where it lies */
        r->self = (const char *)send +
                  (size_t)c->rank * (stride ? stride : len) * (size_t)zc_dtype_size(in);
    if (n == 1) {
        if (q8_segment)
            memcpy(recv, send, block_bytes);
        r->done = 1;
    } else if (r->hop) { /* first hop: to each rank of this host, its segment for every host */
        const int H = c->hosts, R = c->host_ranks;
        if ((st = check_count((size_t)H * count, "reduce_scatter", label, err))) {
            req_free(r);
            return st;
        }
        int rc =
            MPI_Ialltoall(send, H * (int)count, mpi, recv, H * (int)count, mpi, c->intra, &r->mpi);
        if (rc != MPI_SUCCESS) {
            req_free(r);
            return mpi_fail(err, rc, "reduce_scatter", label);
        }
        c->ctr.bytes[ZC_COMM_REDUCE_SCATTER] += (int64_t)block_bytes * H * (R - 1);
    } else {
        int rc = q8_segment ? MPI_Ialltoall(send, (int)count, mpi, recv, (int)count, mpi, c->world,
                                            &r->mpi)
                            : alltoall_blocks(c, r, send, stride ? stride : len, mpi);
        if (rc != MPI_SUCCESS) {
            req_free(r);
            return mpi_fail(err, rc, "reduce_scatter", label);
        }
    }
    if (!r->hop) {
        c->ctr.bytes[ZC_COMM_REDUCE_SCATTER] += (int64_t)block_bytes * (n - 1);
        c->ctr.inter_host_bytes[ZC_COMM_REDUCE_SCATTER] += (int64_t)block_bytes * c->remote;
    }
    c->ctr.calls[ZC_COMM_REDUCE_SCATTER]++;
    c->ctr.seconds[ZC_COMM_REDUCE_SCATTER] += zc_now_s() - t0;
    *req = r;
    return ZC_OK;
}

zc_status zc_comm_reduce_scatter_start(zc_comm *c, zc_dtype in, const void *send, void *recv,
                                       size_t len, zc_dtype out_type, void *out, bool accumulate,
                                       const char *label, zc_comm_req **req, zc_err *err)
{
    return rs_start(c, in, 0, send, 0, recv, len, out_type, out, accumulate, label, req, err);
}

zc_status zc_comm_reduce_scatter_strided_start(zc_comm *c, zc_dtype in, const void *send,
                                               size_t stride, void *recv, size_t len,
                                               zc_dtype out_type, void *out, bool accumulate,
                                               const char *label, zc_comm_req **req, zc_err *err)
{
    ZC_ASSERT(stride >= len);
    return rs_start(c, in, 0, send, stride, recv, len, out_type, out, accumulate, label, req, err);
}

zc_status zc_comm_reduce_scatter_q8_start(zc_comm *c, const void *send, void *recv, size_t len,
                                          zc_dtype out_type, void *out, bool accumulate,
                                          const char *label, zc_comm_req **req, zc_err *err)
{
    return rs_start(c, ZC_FP32, (size_t)zc_qwz_segment_bytes((int64_t)len), send, 0, recv, len,
                    out_type, out, accumulate, label, req, err);
}

/* In place, over the world or (group) this rank's group. */
static zc_status all_gather_start(zc_comm *c, bool group, zc_dtype t, void *buf, size_t S,
                                  zc_comm_op op, const char *label, zc_comm_req **req, zc_err *err)
{
    const int n = group ? c->group_size : c->size, remote = group ? c->group_remote : c->remote;
    double t0 = zc_now_s();
    zc_status st;
    if ((st = check_count(S, zc_comm_op_name(op), label, err)))
        return st;
    zc_comm_req *r = req_new(op, label);
    if (!r)
        return zc_err_set(err, ZC_ENOMEM, "out of memory starting all_gather (%s)", label);
    if (n == 1) {
        r->done = 1;
    } else {
        int rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)S, mpi_type(t),
                                group ? c->group : c->world, &r->mpi);
        if (rc != MPI_SUCCESS) {
            req_free(r);
            return mpi_fail(err, rc, zc_comm_op_name(op), label);
        }
    }
    if (op == ZC_COMM_ALL_GATHER) {
        c->ctr.bytes[op] += (int64_t)(S * (size_t)zc_dtype_size(t)) * (n - 1);
        c->ctr.inter_host_bytes[op] += (int64_t)(S * (size_t)zc_dtype_size(t)) * remote;
        c->ctr.calls[op]++;
    }
    c->ctr.seconds[op] += zc_now_s() - t0;
    *req = r;
    return ZC_OK;
}

zc_status zc_comm_all_gather_start(zc_comm *c, zc_dtype t, void *buf, size_t S, const char *label,
                                   zc_comm_req **req, zc_err *err)
{
    return all_gather_start(c, false, t, buf, S, ZC_COMM_ALL_GATHER, label, req, err);
}

zc_status zc_comm_group_all_gather_start(zc_comm *c, zc_dtype t, void *buf, size_t S,
                                         const char *label, zc_comm_req **req, zc_err *err)
{
    return all_gather_start(c, true, t, buf, S, ZC_COMM_ALL_GATHER, label, req, err);
}

zc_status zc_comm_test(zc_comm *c, zc_comm_req *req, bool *done, zc_err *err)
{
    if (!req->done) {
        int rc = MPI_Test(&req->mpi, &req->done, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && req->done && req->hop == 1)
            rc = second_hop(c, req);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, zc_comm_op_name(req->op), req->label);
    }
    *done = req->done != 0;
    return ZC_OK;
}

/* Adds the N received blocks (dequantized first, for qgZ) in rank order in fp32, then stores (or
 * adds) the sum into out, rounding once to out's type: in one vectorised pass (zc_rank_sum) when
 * blocks and out are both fp32 or both bf16, else here through a stack chunk, so 16-bit inputs
 * need no fp32 staging; for fp32 the additions are the same as summing the blocks in place. */
/* Typed block j of a reduce-scatter: this rank's own where it lies in send, the others in recv. */
static const char *typed_block(const zc_comm_req *r, int j, int self_j)
{
    return j == self_j ? (const char *)r->self
                       : (const char *)r->recv + zc_rank_sum_slot(j, self_j) * r->len *
                                                     (size_t)zc_dtype_size(r->in_type);
}

static void rank_order_sum(const zc_comm *c, const zc_comm_req *r, int n)
{
    const int self_j = r->self ? c->rank : -1; /* typed blocks: ours is still in send */
    if (!r->q8_segment && zc_rank_sum(r->in_type, r->recv, r->self, self_j, n, r->len,
                                      r->accumulate, r->out_type, r->out))
        return; /* the usual types, in one vectorised pass */
    enum { CHUNK = 2048 };
    const size_t in_es = (size_t)zc_dtype_size(r->in_type);
    const size_t out_es = (size_t)zc_dtype_size(r->out_type);
    float acc[CHUNK], tmp[CHUNK];
    _Static_assert(CHUNK % ZC_QWZ_BLOCK == 0, "a chunk starts on a quantization block");
    const size_t seg = r->q8_segment;
    for (size_t o = 0; o < r->len; o += CHUNK) {
        size_t k = r->len - o < CHUNK ? r->len - o : CHUNK;
        for (int j = 0; j < n; j++) {
            float *x = j ? tmp : acc;
            if (seg)
                zc_qwz_dequantize_range((const char *)r->recv + (size_t)j * seg, r->len, o, k, x);
            else
                zc_dtype_widen(r->in_type, typed_block(r, j, self_j) + o * in_es, x, k);
            for (size_t i = 0; j && i < k; i++)
                acc[i] += tmp[i];
        }
        void *out = (char *)r->out + o * out_es;
        if (r->accumulate) {
            zc_dtype_widen(r->out_type, out, tmp, k);
            for (size_t i = 0; i < k; i++)
                acc[i] = tmp[i] + acc[i];
        }
        zc_dtype_narrow(r->out_type, acc, out, k);
    }
}

/* qgZ, the first hop landed: recv holds, from each rank of this host in order, its segment for
 * this rank's local index on every host. Sum them per host into send's first segments,
 * quantized again, and send each host its own: the second hop. */
static int second_hop(zc_comm *c, zc_comm_req *r)
{
    const int H = c->hosts, R = c->host_ranks;
    const size_t seg = r->q8_segment;
    const void *segs[R];
    for (int k = 0; k < H; k++) {
        for (int l = 0; l < R; l++)
            segs[l] = (const char *)r->recv + ((size_t)l * H + (size_t)k) * seg;
        zc_qwz_requantize_sum(segs, R, r->len, (char *)r->send + (size_t)k * seg);
    }
    r->hop = 2;
    r->done = 0;
    c->ctr.bytes[ZC_COMM_REDUCE_SCATTER] += (int64_t)seg * (H - 1);
    c->ctr.inter_host_bytes[ZC_COMM_REDUCE_SCATTER] += (int64_t)seg * (H - 1);
    return MPI_Ialltoall(r->send, (int)seg, MPI_BYTE, r->recv, (int)seg, MPI_BYTE, c->inter,
                         &r->mpi);
}

zc_status zc_comm_wait(zc_comm *c, zc_comm_req *req, zc_err *err)
{
    double t0 = zc_now_s();
    long spins = 0;
    while (!req->done) {
        int rc = MPI_Test(&req->mpi, &req->done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            zc_status st = mpi_fail(err, rc, zc_comm_op_name(req->op), req->label);
            req_free(req);
            return st;
        }
        if (req->done && req->hop == 1 && (rc = second_hop(c, req)) != MPI_SUCCESS) {
            zc_status st = mpi_fail(err, rc, "reduce_scatter (across hosts)", req->label);
            req_free(req);
            return st;
        }
        if (req->done)
            break;
        if (++spins > 64) {
            sched_yield();
            if ((spins & 63) == 0 && zc_now_s() - t0 > c->timeout_s) {
                zc_status st = zc_err_set(
                    err, ZC_ETIMEOUT,
                    "rank %d: %s (%s) waited more than comm_timeout_s = %g s: another rank is "
                    "not taking part (it crashed, is stuck, or is out of lockstep), or the "
                    "network moves this collective's data more slowly than that (a slow or "
                    "congested link), or another rank is still reading or writing its offloaded "
                    "states (a slow disk; the step line's disk figures show it): if so, raise "
                    "comm_timeout_s, --comm-timeout",
                    c->rank, zc_comm_op_name(req->op), req->label, c->timeout_s);
                /* The request cannot be cancelled; it is leaked on purpose (we abort next). */
                return st;
            }
        }
    }
    if (req->op == ZC_COMM_REDUCE_SCATTER)
        rank_order_sum(c, req, req->hop ? c->hosts : c->size);
    c->ctr.seconds[req->op] += zc_now_s() - t0;
    req_free(req);
    return ZC_OK;
}

zc_status zc_comm_all_gather(zc_comm *c, zc_dtype t, void *buf, size_t S, const char *label,
                             zc_err *err)
{
    zc_comm_req *r;
    zc_status st = zc_comm_all_gather_start(c, t, buf, S, label, &r, err);
    return st ? st : zc_comm_wait(c, r, err);
}

zc_status zc_comm_all_reduce(zc_comm *c, float *buf, size_t count, const char *label, zc_err *err)
{
    int n = c->size;
    double t0 = zc_now_s();
    c->ctr.calls[ZC_COMM_ALL_REDUCE]++;
    if (n == 1 || count == 0)
        return ZC_OK;
    /* Padded copy (N blocks of S) + receive staging ((N − 1)·S); our block of the copy takes the
     * sum, then the copy is all-gathered in place. */
    size_t S = (count + (size_t)n - 1) / (size_t)n, padded = S * (size_t)n;
    float *tmp = calloc(2 * padded - S, sizeof(float));
    if (!tmp)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in all_reduce (%s)", label);
    memcpy(tmp, buf, count * sizeof(float));
    float *recv = tmp + padded, *mine = tmp + (size_t)c->rank * S;
    zc_comm_req *r;
    zc_comm_counters saved = c->ctr;
    zc_status st = zc_comm_reduce_scatter_start(c, ZC_FP32, tmp, recv, S, ZC_FP32, mine, false,
                                                label, &r, err);
    if (!st)
        st = zc_comm_wait(c, r, err);
    if (!st)
        st = all_gather_start(c, false, ZC_FP32, tmp, S, ZC_COMM_ALL_REDUCE, label, &r, err);
    if (!st)
        st = zc_comm_wait(c, r, err);
    if (!st)
        memcpy(buf, tmp, count * sizeof(float));
    free(tmp);
    /* Counted once, as an all-reduce, not as its two halves. */
    int64_t ar_calls = c->ctr.calls[ZC_COMM_ALL_REDUCE];
    int64_t ar_bytes = c->ctr.bytes[ZC_COMM_ALL_REDUCE];
    c->ctr = saved;
    c->ctr.calls[ZC_COMM_ALL_REDUCE] = ar_calls;
    c->ctr.bytes[ZC_COMM_ALL_REDUCE] = ar_bytes + 2 * (int64_t)(S * sizeof(float)) * (n - 1);
    c->ctr.inter_host_bytes[ZC_COMM_ALL_REDUCE] += 2 * (int64_t)(S * sizeof(float)) * c->remote;
    c->ctr.seconds[ZC_COMM_ALL_REDUCE] += zc_now_s() - t0;
    return st;
}

zc_status zc_comm_broadcast(zc_comm *c, float *buf, size_t count, int root, const char *label,
                            zc_err *err)
{
    zc_status st;
    if ((st = check_count(count, "broadcast", label, err)))
        return st;
    zc_comm_req *r = req_new(ZC_COMM_BROADCAST, label);
    if (!r)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in broadcast (%s)", label);
    double t0 = zc_now_s();
    if (c->size == 1) {
        r->done = 1;
    } else {
        int rc = MPI_Ibcast(buf, (int)count, MPI_FLOAT, root, c->world, &r->mpi);
        if (rc != MPI_SUCCESS) {
            req_free(r);
            return mpi_fail(err, rc, "broadcast", label);
        }
    }
    /* Ring convention for a pipelined broadcast: B·(N−1)/N per rank on average. */
    c->ctr.bytes[ZC_COMM_BROADCAST] += (int64_t)(count * sizeof(float)) * (c->size - 1) / c->size;
    c->ctr.inter_host_bytes[ZC_COMM_BROADCAST] +=
        (int64_t)(count * sizeof(float)) * c->remote / c->size;
    c->ctr.calls[ZC_COMM_BROADCAST]++;
    c->ctr.seconds[ZC_COMM_BROADCAST] += zc_now_s() - t0;
    return zc_comm_wait(c, r, err);
}

zc_status zc_comm_control_gather(zc_comm *c, const void *in, void *out, size_t bytes,
                                 const char *label, zc_err *err)
{
    zc_status st;
    if ((st = check_count(bytes, "control gather", label, err)))
        return st;
    double t0 = zc_now_s();
    zc_comm_req *r = req_new(ZC_COMM_CONTROL, label);
    if (!r)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in control gather (%s)", label);
    if (c->size == 1) {
        memcpy(out, in, bytes);
        r->done = 1;
    } else {
        int rc =
            MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, c->world, &r->mpi);
        if (rc != MPI_SUCCESS) {
            req_free(r);
            return mpi_fail(err, rc, "control gather", label);
        }
    }
    c->ctr.bytes[ZC_COMM_CONTROL] += (int64_t)bytes * (c->size - 1);
    c->ctr.inter_host_bytes[ZC_COMM_CONTROL] += (int64_t)bytes * c->remote;
    c->ctr.calls[ZC_COMM_CONTROL]++;
    c->ctr.seconds[ZC_COMM_CONTROL] += zc_now_s() - t0;
    return zc_comm_wait(c, r, err);
}

zc_status zc_comm_sum_f64(zc_comm *c, double in, double *out, const char *label, zc_err *err)
{
    double stack[64], *all = c->size <= 64 ? stack : malloc((size_t)c->size * sizeof(double));
    if (!all)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in sum (%s)", label);
    zc_status st = zc_comm_control_gather(c, &in, all, sizeof in, label, err);
    if (!st) {
        double s = 0.0;
        for (int j = 0; j < c->size; j++)
            s += all[j];
        *out = s;
    }
    if (all != stack)
        free(all);
    return st;
}

/* Every rank's status and message in one gather; the first failure becomes everyone's error,
 * with the failing rank's own message. */
typedef struct {
    int32_t status;
    char msg[1024]; /* a whole zc_err message */
} outcome;

zc_status zc_comm_agree(zc_comm *c, zc_status mine, const char *what, zc_err *err)
{
    outcome me = {.status = mine}, *all = malloc((size_t)c->size * sizeof *all);
    if (mine) { /* cut to fit (the message reaches the other ranks in a fixed record) */
        memcpy(me.msg, err->msg, sizeof me.msg - 1);
        me.msg[sizeof me.msg - 1] = '\0';
    }
    if (!all)
        return mine ? mine : zc_err_set(err, ZC_ENOMEM, "out of memory");
    zc_err scratch;
    zc_status st = zc_comm_control_gather(c, &me, all, sizeof me, what, &scratch);
    if (st) {
        free(all);
        if (!mine)
            *err = scratch;
        return mine ? mine : st;
    }
    zc_status out = ZC_OK;
    for (int r = 0; r < c->size && !out; r++)
        if (all[r].status)
            out = c->size == 1 ? zc_err_set(err, (zc_status)all[r].status, "%s", all[r].msg)
                               : zc_err_set(err, (zc_status)all[r].status,
                                            "%s failed on rank %d: %s", what, r, all[r].msg);
    free(all);
    return out;
}

zc_status zc_comm_barrier(zc_comm *c, const char *label, zc_err *err)
{
    char b = 0, stack[64], *all = c->size <= 64 ? stack : malloc((size_t)c->size);
    if (!all)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in barrier (%s)", label);
    zc_status st = zc_comm_control_gather(c, &b, all, 1, label, err);
    if (all != stack)
        free(all);
    return st;
}

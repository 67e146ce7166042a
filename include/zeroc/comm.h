/* zeroc/comm.h — the communicator: the only part of zeroc that calls MPI.
 *
 * Data collectives work on float buffers laid out as N equal blocks (one per rank):
 *   reduce-scatter: every rank contributes N·S floats; rank r receives the sum of block r, added
 *                   in rank order 0, 1, …, N−1 (so the result is the same bits on every run);
 *   all-gather:     every rank contributes block r; every rank receives all N blocks;
 *   all-reduce:     reduce-scatter then all-gather (same rank-order sums).
 * Each has a non-blocking start and a wait; waits give up after the configured timeout with a
 * ZC_ETIMEOUT that names the collective and the caller's label (e.g. "unit 'fc3', step 12").
 *
 * Byte accounting uses the ring convention: a reduce-scatter or all-gather over a buffer of B
 * bytes counts B·(N−1)/N sent by this rank, an all-reduce 2·B·(N−1)/N. Small control messages
 * (lockstep checks, loss and norm sums, reports) are counted separately as "control". Of those
 * bytes, the ones addressed to ranks on other hosts (B/N to each of them: the all-to-all and
 * direct exchanges the collectives perform) are counted again as inter-host bytes; a host is
 * the ranks that share memory (MPI_COMM_TYPE_SHARED).
 *
 * Groups (ZeRO++ hpZ): zc_comm_set_group_size splits the ranks into groups of g consecutive
 * ranks (a host's, when ranks are placed by slot); a group all-gather runs within this rank's
 * group only.
 *
 * Reduce-scatter is built on MPI_Ialltoallv (each rank sends block j to rank j, its own block
 * read where it lies, then adds the N blocks in rank order; ZeRO++'s int8 qgZ uses
 * MPI_Ialltoall): it moves the same bytes as a ring, its sum order is fixed,
 * and OpenMPI 4.1's MPI_Reduce_scatter_block is several times slower on one machine.
 *
 *     zc_comm *c;
 *     if (zc_comm_init(&c, &argc, &argv, &err)) ...  // MPI_Init unless already initialised
 *     int r = zc_comm_rank(c), n = zc_comm_size(c);
 *     zc_comm_all_gather(c, ZC_FP32, buf, S, "unit 'fc1'", &err); // N·S floats, block r ours
 *     zc_comm_finalize(c);
 *
 * Threads: zc_comm_init initialises MPI with MPI_THREAD_FUNNELED when it initialises it; a
 * zc_comm (and every engine and checkpoint call on it) is used from the thread that created it,
 * one call at a time. Two engines sharing one zc_comm from two threads at once are unsupported.
 *
 * Errors: zeroc's communicators (its duplicate of MPI_COMM_WORLD, the host and group splits)
 * return MPI errors (MPI_ERRORS_RETURN) as ZC_ECOMM. OpenMPI 4 reports the completion errors of
 * non-blocking collectives on MPI_COMM_WORLD whatever their communicator, so while any zc_comm
 * lives MPI_COMM_WORLD returns errors too: a program that relies on its own MPI calls aborting
 * must check their return codes meanwhile. The last zc_comm_finalize puts back the handler
 * MPI_COMM_WORLD had at the first zc_comm_init.
 */
#ifndef ZEROC_COMM_H
#define ZEROC_COMM_H

#include "zeroc/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/dtype.h"
#include "zeroc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ZC_COMM_REDUCE_SCATTER = 0,
    ZC_COMM_ALL_GATHER,
    ZC_COMM_ALL_REDUCE,
    ZC_COMM_BROADCAST,
    ZC_COMM_CONTROL,
    ZC_COMM_NOPS
} zc_comm_op;

typedef struct {
    int64_t bytes[ZC_COMM_NOPS]; /* bytes this rank sent, ring convention */
    int64_t calls[ZC_COMM_NOPS];
    double seconds[ZC_COMM_NOPS];           /* time spent waiting in this op's calls */
    int64_t inter_host_bytes[ZC_COMM_NOPS]; /* of bytes[], those sent to other hosts */
} zc_comm_counters;

typedef struct zc_comm zc_comm;
typedef struct zc_comm_req zc_comm_req;

/* Initialises MPI if needed (MPI_Init_thread with MPI_THREAD_FUNNELED; a singleton run without
 * mpirun is a world of 1). Collective over MPI_COMM_WORLD. *out is NULL on failure. */
ZC_API zc_status zc_comm_init(zc_comm **out, int *argc, char ***argv, zc_err *err);
/* Frees the communicator (NULL: nothing), restores MPI_COMM_WORLD's error handler when it is the
 * last zc_comm, and finalises MPI if zc_comm_init initialised it — so it comes last: after
 * zc_engine_destroy of every engine using it (zc_mem_destroy may come before or after).
 * Collective (MPI_Comm_free). */
ZC_API void zc_comm_finalize(zc_comm *c);
/* Stops every rank now with the given exit code (after the caller printed why). */
ZC_API void zc_comm_abort(zc_comm *c, int code) __attribute__((noreturn));

ZC_API int zc_comm_rank(const zc_comm *c);
ZC_API int zc_comm_size(const zc_comm *c);
/* Ranks on this rank's host (those sharing its memory), this rank included. */
ZC_API int zc_comm_local_size(const zc_comm *c);
ZC_API void zc_comm_set_timeout(zc_comm *c, double seconds);
/* Collective: groups of g consecutive ranks (g must divide the world size) for
 * zc_comm_group_all_gather_start; g = 1, the default, makes every rank its own group. */
ZC_API zc_status zc_comm_set_group_size(zc_comm *c, int g, zc_err *err);
ZC_API int zc_comm_group_size(const zc_comm *c);
/* How many of the groups (consecutive ranks, zc_comm_set_group_size) hold ranks of more than one
 * host: their group gathers cross the network (0 when every group lies within a host). */
ZC_API int zc_comm_groups_across_hosts(const zc_comm *c);
/* Hosts (the ranks that share memory; ZEROC_RANKS_PER_HOST=R, a testing aid, makes every R
 * consecutive ranks a host instead), and the ranks per host when every host has as many (else
 * 0). */
ZC_API int zc_comm_hosts(const zc_comm *c);
ZC_API int zc_comm_host_ranks(const zc_comm *c);
/* Where the segment for `rank` goes in zc_comm_reduce_scatter_q8_start's send buffer: at
 * `rank`, or, when qgZ runs in two hops, grouped by the destination's index on its host. */
ZC_API int zc_comm_q8_slot(const zc_comm *c, int rank);
ZC_API int zc_comm_group_rank(const zc_comm *c); /* this rank's place in its group */
ZC_API const zc_comm_counters *zc_comm_get_counters(const zc_comm *c);
ZC_API const char *zc_comm_op_name(zc_comm_op op);

/* --- non-blocking data collectives --- label is copied; it names the request in errors. */

/* Reduce-scatter: send holds N blocks of len elements of type `in` (fp32, or bf16/fp16 bits;
 * block j goes to rank j); recv ((N − 1)·len elements) receives every other rank's block for us
 * (ours is read where it lies in send). Neither may be touched until the wait, which widens the N
 * blocks to fp32, adds them in rank order
 * j = 0..N−1 (in fp32) and stores the sum into out[0..len) as `out_type`, rounded once to
 * nearest even — or, with accumulate, stores out + sum rounded once. Bytes are counted at the
 * sent element size. */
ZC_API zc_status zc_comm_reduce_scatter_start(zc_comm *c, zc_dtype in, const void *send, void *recv,
                                              size_t len, zc_dtype out_type, void *out,
                                              bool accumulate, const char *label, zc_comm_req **req,
                                              zc_err *err);
/* The same with the N blocks read where they lie: block j at send + j·stride elements (stride ≥
 * len), for a caller whose blocks already sit in one buffer of the sent type — no packing copy.
 * send is read until the wait. */
ZC_API zc_status zc_comm_reduce_scatter_strided_start(zc_comm *c, zc_dtype in, const void *send,
                                                      size_t stride, void *recv, size_t len,
                                                      zc_dtype out_type, void *out, bool accumulate,
                                                      const char *label, zc_comm_req **req,
                                                      zc_err *err);
/* ZeRO++ qgZ: the same reduce-scatter with the blocks quantized — send holds N segments of
 * zc_qwz_segment_bytes(len) bytes in zeroc's block-wise int8 form (the segment for rank j at
 * zc_comm_q8_slot(j): zeroc/estimate.h's ZC_QWZ_BLOCK values per fp32 scale), recv room for N.
 * On one host (or with uneven hosts, or one rank per host) it is one all-to-all; the wait
 * dequantizes the N received segments and sums them in rank order in fp32, as above. With H
 * hosts of R ranks it takes DeepSpeed's two hops: an all-to-all within the host (each rank
 * receives its local index's segments for every host, sums the host's R in fp32 and quantizes
 * them again into send), then one across hosts (H segments summed in host order): R times fewer
 * bytes leave the host, and the sums still come in a fixed order. Bytes are counted at the
 * segments' size. */
ZC_API zc_status zc_comm_reduce_scatter_q8_start(zc_comm *c, const void *send, void *recv,
                                                 size_t len, zc_dtype out_type, void *out,
                                                 bool accumulate, const char *label,
                                                 zc_comm_req **req, zc_err *err);
/* In-place all-gather: buf holds N blocks of S elements of type t, block rank is this rank's. */
ZC_API zc_status zc_comm_all_gather_start(zc_comm *c, zc_dtype t, void *buf, size_t S,
                                          const char *label, zc_comm_req **req, zc_err *err);
/* The same within this rank's group: buf holds g blocks of S elements, block group_rank ours. */
ZC_API zc_status zc_comm_group_all_gather_start(zc_comm *c, zc_dtype t, void *buf, size_t S,
                                                const char *label, zc_comm_req **req, zc_err *err);
/* Progresses the request without blocking; *done is set when it has completed (then call wait). */
ZC_API zc_status zc_comm_test(zc_comm *c, zc_comm_req *req, bool *done, zc_err *err);
/* Waits (up to the timeout), finishes the request (the rank-order sum for a reduce-scatter)
 * and frees it. On an MPI error the request is freed too. On ZC_ETIMEOUT the collective is
 * still in flight and may still write its buffers: that is fatal for the job — report it and
 * call zc_comm_abort. */
ZC_API zc_status zc_comm_wait(zc_comm *c, zc_comm_req *req, zc_err *err);

/* --- blocking forms --- */
ZC_API zc_status zc_comm_all_gather(zc_comm *c, zc_dtype t, void *buf, size_t S, const char *label,
                                    zc_err *err);
/* In-place all-reduce (sum) of count floats; uses a staging buffer it allocates. */
ZC_API zc_status zc_comm_all_reduce(zc_comm *c, float *buf, size_t count, const char *label,
                                    zc_err *err);
ZC_API zc_status zc_comm_broadcast(zc_comm *c, float *buf, size_t count, int root,
                                   const char *label, zc_err *err);
ZC_API zc_status zc_comm_barrier(zc_comm *c, const char *label, zc_err *err);

/* --- control messages (counted as ZC_COMM_CONTROL) --- */
/* Every rank contributes `bytes` bytes; out receives N·bytes, rank order. */
ZC_API zc_status zc_comm_control_gather(zc_comm *c, const void *in, void *out, size_t bytes,
                                        const char *label, zc_err *err);
/* Collective: every rank's status; if any failed, every rank returns the first failing rank's
 * status with "WHAT failed on rank R: <its message>" (in a world of 1, the message as it is). */
ZC_API zc_status zc_comm_agree(zc_comm *c, zc_status mine, const char *what, zc_err *err);
/* Sum of one double per rank, added in rank order (same bits on every rank). */
ZC_API zc_status zc_comm_sum_f64(zc_comm *c, double in, double *out, const char *label,
                                 zc_err *err);

#ifdef __cplusplus
}
#endif

#endif

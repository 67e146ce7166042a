/* swap.h — a rank's swap file: the disk tier that offloaded model states live in.
 *
 * zc_swap_create makes a new file in the configured directory with a name no other rank or run
 * can have (zeroc-<host>-<pid>-rank<r>-<n>.swap, created with O_EXCL), opens it O_DIRECT,
 * preallocates all of it with fallocate — so a disk too small fails here, before step 1, with the
 * bytes needed and the bytes free — and then unlinks the name: the space belongs to the open file
 * and returns to the file system when the process ends, however it ends (normal exit, error,
 * kill -9). A swap file from a dead run therefore never exists to be reused, and nothing is left
 * behind. A preallocated region reads back as zeros until written.
 *
 * Offsets handed to the asynchronous calls must be multiples of ZC_AIO_ALIGN, as must buffer
 * addresses and lengths; the synchronous zc_swap_pread/pwrite take any offset and length (they
 * go through an aligned bounce buffer, reading and rewriting partial blocks at the edges) and
 * serve initialisation and checkpoints.
 *
 * Test hook: ZEROC_FAULT_IO=read:R@K (or write:R@K; several joined by commas) makes the K-th
 * (1-based) asynchronous read (write) transfer of rank R fail with EIO, without touching the
 * file. Read at zc_swap_create; transfers are counted per swap object (a rank has one).
 *
 * Not thread-safe: one thread uses a swap (the synchronous calls share one bounce buffer).
 */
#ifndef ZEROC_OFFLOAD_SWAP_H
#define ZEROC_OFFLOAD_SWAP_H

#include <stddef.h>
#include <stdint.h>

#include "offload/aio.h"
#include "zeroc/status.h"

typedef struct zc_swap zc_swap;

/* bytes > 0 and a multiple of ZC_AIO_ALIGN. key is the setting dir came from (e.g. the config
 * key "zero_optimization.offload_param.nvme_path"); each error names it and dir, as "KEY 'DIR' …"
 * (ZC_EIO unless said):
 * dir missing, not a directory, not writable, on a file system without O_DIRECT (e.g. tmpfs
 * before Linux 6.6: named in the message), on tmpfs (RAM), no space ("needs N bytes (X GiB), the
 * file system has M bytes (Y GiB) free" — checked with fstatvfs before fallocate, so a request that
 * cannot fit never fills the disk for a moment), fallocate unsupported; ZC_ENOMEM. Nothing is left
 * in dir whatever happens. The aio must outlive the swap. */
zc_status zc_swap_create(zc_swap **out, const char *key, const char *dir, int rank, int64_t bytes,
                         zc_aio *aio, zc_err *err);
/* What zc_swap_create checks of dir without making a file (exists, a directory, writable, not
 * tmpfs): for an nvme_path configured but given nothing to hold, so that a wrong path is not
 * found only when the model grows. */
zc_status zc_swap_check_dir(const char *key, const char *dir, zc_err *err);
/* Waits for nothing: the caller waits for its transfers first. Closes (and so frees) the file. */
void zc_swap_destroy(zc_swap *s);

const char *zc_swap_path(const zc_swap *s); /* the name it had, for messages */
int64_t zc_swap_bytes(const zc_swap *s);

void zc_swap_read(zc_swap *s, zc_aio_op *op, void *buf, size_t len, int64_t off);
void zc_swap_write(zc_swap *s, zc_aio_op *op, const void *buf, size_t len, int64_t off);
zc_status zc_swap_wait(zc_swap *s, zc_aio_op *op, zc_err *err);

/* Any offset and length within the file, synchronous. */
zc_status zc_swap_pread(zc_swap *s, void *dst, size_t len, int64_t off, zc_err *err);
zc_status zc_swap_pwrite(zc_swap *s, const void *src, size_t len, int64_t off, zc_err *err);

/* The same without a copy, for callers that convert on the way (a compact master joined from two
 * files, bf16 widened to fp32): at most ZC_SWAP_VIEW_MAX bytes at any offset, in the bounce
 * buffer, valid until the next call on s. zc_swap_view reads [off, off + len) and points *out at
 * it. zc_swap_stage points *out at where [off, off + len) will be written from (the partial
 * blocks at its edges read in, so the bytes around the range stay); the caller fills all len
 * bytes, then zc_swap_commit writes them. A stage not committed writes nothing. */
enum { ZC_SWAP_VIEW_MAX = (1 << 20) - ZC_AIO_ALIGN };
zc_status zc_swap_view(zc_swap *s, size_t len, int64_t off, const void **out, zc_err *err);
zc_status zc_swap_stage(zc_swap *s, size_t len, int64_t off, void **out, zc_err *err);
zc_status zc_swap_commit(zc_swap *s, zc_err *err);

/* ZC_EIO if the file no longer has its size (truncated by someone else). */
zc_status zc_swap_check(zc_swap *s, zc_err *err);

#endif

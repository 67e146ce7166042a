/* zeroc/api.h — ZC_API marks what libzeroc exports. The library is built with hidden visibility,
 * so a function is public only if its declaration in include/zeroc/ carries ZC_API (and the
 * test `exported_symbols` fails on any exported symbol without it).
 *
 * The library's contract, shared by every header:
 * - C and C++: every header declaring functions wraps them in extern "C" under __cplusplus, so a
 *   C++ program includes them as they are and links against libzeroc.
 * - Errors come back as a zc_status with a message in a caller-owned zc_err (zeroc/status.h);
 *   the library never prints and never exits. A call in the wrong state is ZC_ESTATE, an id or
 *   argument out of range ZC_EINVAL; calls returning a pointer return NULL, registration calls
 *   −1 (each header says which); the memory ledger's calls without a status (zeroc/mem.h) do
 *   nothing, or return NULL or 0, for a NULL ledger or a category out of range.
 *   *_create / *_open / zc_comm_init set *out to NULL on failure, and every destroy / close /
 *   finalize function accepts NULL.
 * - Preconditions that abort: a broken precondition that a call has no status to report, or
 *   that would leave state corrupt, is caught by ZC_ASSERT (zeroc/status.h), which prints
 *   file:line and aborts every rank: a required pointer that is NULL (a zc_config *, a path, a
 *   JSON text), a parameter index or element range out of a checkpoint reader's
 *   (zc_ckpt_reader_param, zc_ckpt_reader_read), a product's dimension below 1 (zeroc/gemm.h),
 *   zc_lr_schedule_at without a schedule or at a negative step, and zc_mem_free /
 *   zc_mem_release of more bytes than the category holds (a block freed with another size or
 *   category than it was allocated with; a mismatch that stays within the category's bytes is
 *   not detected: zeroc/mem.h). Every other ZC_ASSERT guards the library's internal invariants.
 * - Threads: zc_comm_init initialises MPI with MPI_THREAD_FUNNELED (or uses the program's MPI as
 *   it was initialised). Every call that communicates — a zc_comm, and the engine and
 *   checkpoint calls on it — must come from the thread that called zc_comm_init, one call at a
 *   time: an engine and its communicator are driven from one thread. Two engines on one
 *   communicator driven from two threads at once are not supported. The library's own threads
 *   (OpenMP kernels, disk I/O) never call MPI. */
#ifndef ZEROC_API_H
#define ZEROC_API_H

#define ZC_API __attribute__((visibility("default")))

#endif

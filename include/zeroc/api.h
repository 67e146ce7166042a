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
 *   −1 (each header says which). *_create / *_open / zc_comm_init set *out to NULL on failure,
 *   and every destroy / close / finalize function accepts NULL.
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

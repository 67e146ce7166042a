/* stream.h — the optimizer step's sub-groups, streamed through a few RAM slots: each sub-group's
 * arrays are read from disk ahead of its update and written back behind it.
 *
 * A job is one sub-group of one unit. For each array (zc_stream_array: the fp32 weights, the
 * gradients, m, v, the rounded 16-bit parameters) a job names either RAM (the array is resident:
 * the update works on it in place) or a region of a swap file to read before the update (in)
 * and/or write after it (out). The job list is the whole step's, fixed when the engine is set
 * up, so the streamer can read ahead: with B slots, job j uses slot j mod B, and its reads start
 * as soon as job j − B has been written back — while job j − B + 1 … j − 1 are updated. In the
 * steady state that is "read k + 1 and write k − 1 while updating k" (B = 3), deeper with more
 * slots; a slot is refilled once its writes have landed, never by waiting for them. read_ahead =
 * false starts a job's reads only when it is asked for; write_behind = false waits for a job's
 * writes before the next job starts (DeepSpeed's pipeline_read/pipeline_write switched off): the
 * same bytes, no overlap.
 *
 *     zc_stream_begin(s, jobs, njobs, &err);
 *     for (int j = 0; j < njobs; j++) {
 *         void *a[ZC_NSTREAMS];
 *         zc_stream_next(s, a, &err);          // job j's arrays, in RAM
 *         ...update a[ZC_STREAM_WEIGHTS] from a[ZC_STREAM_GRADS]...
 *         zc_stream_done(s, &err);             // writes job j back, reads further ahead
 *     }
 *     zc_stream_end(s, &err);                  // every write has landed
 */
#ifndef ZEROC_OFFLOAD_STREAM_H
#define ZEROC_OFFLOAD_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "offload/swap.h"
#include "zeroc/estimate.h"
#include "zeroc/mem.h"
#include "zeroc/status.h"

typedef struct {
    void *ram;     /* resident: the sub-group's first element (NULL with swap set, or absent) */
    zc_swap *swap; /* on disk: the file, the sub-group's byte offset and its bytes (4 KiB
                    * multiples, within the slot's buffer for this array) */
    int64_t off;
    int64_t bytes;
    bool in, out; /* read before the update / written after it */
    bool ask;     /* (in false) read before the update if the pass's ask function says so when
                   * the job's reads start (zc_stream_set_ask): the caller's own copy may exist */
} zc_stream_ref;

/* Whether the stream should read array a of job j now (a ref marked ask): called as the job's
 * reads start, in job order, on the thread that called into the stream. */
typedef bool (*zc_stream_ask_fn)(void *ctx, int job, int array);

typedef struct {
    zc_stream_ref a[ZC_NSTREAMS];
} zc_stream_job;

typedef struct zc_stream zc_stream;

/* nslots slots of slot_bytes[a] bytes per array, in the ledger's offload category (locked in
 * RAM with pin). */
zc_status zc_stream_create(zc_stream **out, zc_mem *mem, zc_aio *aio, int nslots,
                           const int64_t slot_bytes[ZC_NSTREAMS], bool read_ahead,
                           bool write_behind, bool pin, zc_err *err);
/* Waits for whatever is still in flight, then frees the slots. NULL is a no-op. */
void zc_stream_destroy(zc_stream *s);

/* The function the refs marked ask consult (none set: they are not read). */
void zc_stream_set_ask(zc_stream *s, zc_stream_ask_fn fn, void *ctx);

/* Starts a pass over jobs (which must outlive it), reading ahead as far as the slots allow. */
zc_status zc_stream_begin(zc_stream *s, const zc_stream_job *jobs, int njobs, zc_err *err);
/* The next job's arrays in RAM: a[k] is the slot buffer (its reads landed) or the job's RAM
 * pointer; NULL for an array the job does not have. */
zc_status zc_stream_next(zc_stream *s, void *a[ZC_NSTREAMS], zc_err *err);
/* Whether array a of the job next() handed out was read from disk into its slot (in, or ask
 * answered yes). */
bool zc_stream_read_in(const zc_stream *s, int a);
/* The current job's update is done: its outputs start on their way to disk. */
zc_status zc_stream_done(zc_stream *s, zc_err *err);
/* Between jobs (the caller's other work): starts the reads of the slots whose writes have
 * landed since. Never waits for I/O. */
zc_status zc_stream_poll(zc_stream *s, zc_err *err);
/* Waits until job j's writes have landed (j done: its outputs may be read back from disk). */
zc_status zc_stream_landed(zc_stream *s, int j, zc_err *err);
/* Waits until every write of the pass has landed. */
zc_status zc_stream_end(zc_stream *s, zc_err *err);

#endif

/* direct_file.h — a file written front to back with O_DIRECT, double-buffered: the caller fills
 * one 8 MiB buffer while the other is on its way to disk. For checkpoints, whose bytes are
 * written once and not read back soon: through the page cache they ran at a third of the disk's
 * speed here (the kernel's copy into the cache dominated), and they evicted whatever else the
 * cache held. A file system that refuses O_DIRECT (EINVAL) gets ordinary buffered writes.
 * zc_direct_file_close writes the tail, cuts the file to its exact size and fsyncs it. */
#ifndef ZEROC_OFFLOAD_DIRECT_FILE_H
#define ZEROC_OFFLOAD_DIRECT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "zeroc/status.h"

typedef struct zc_direct_file zc_direct_file;

/* Creates (or truncates) path. */
zc_status zc_direct_file_open(zc_direct_file **out, const char *path, zc_err *err);
zc_status zc_direct_file_append(zc_direct_file *f, const void *data, size_t n, zc_err *err);
/* Everything written, the size exact, fsync'd, closed and freed (also on error). */
zc_status zc_direct_file_close(zc_direct_file *f, zc_err *err);
/* Gives up: closes and frees without finishing (the caller removes the file). NULL is a no-op. */
void zc_direct_file_abort(zc_direct_file *f);

#endif

/* direct_file.h — a file written front to back with O_DIRECT, double-buffered, and read back
 * from the disk as it goes: the caller fills one 8 MiB buffer while the other is on its way to
 * disk, and each buffer, once its write has landed, is read back while later ones are written
 * (a GPT-2 124M save took 2.9 s instead of the 3.5 s of a write pass then a read pass). The
 * CRC32C of the bytes read back must equal that of the bytes appended, so a file changed after
 * it was written (another process, a failing disk) is an error, not a saved file. For
 * checkpoints, whose bytes are written once and not read soon: through the page cache they ran
 * at a third of the disk's speed here (the kernel's copy into the cache dominated), and they
 * evicted whatever else the cache held. A file system that refuses O_DIRECT (EINVAL) gets
 * ordinary buffered writes, read back after the fsync. zc_direct_file_close writes the tail,
 * cuts the file to its exact size, fsyncs it and finishes the read-back. */
#ifndef ZEROC_OFFLOAD_DIRECT_FILE_H
#define ZEROC_OFFLOAD_DIRECT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "zeroc/status.h"

typedef struct zc_direct_file zc_direct_file;

/* Creates (or truncates) path. */
zc_status zc_direct_file_open(zc_direct_file **out, const char *path, zc_err *err);
/* The same through the page cache: the path a file system that refuses O_DIRECT takes, which
 * the tests run on any file system. */
zc_status zc_direct_file_open_buffered(zc_direct_file **out, const char *path, zc_err *err);
zc_status zc_direct_file_append(zc_direct_file *f, const void *data, size_t n, zc_err *err);
/* Everything written, the size exact, fsync'd, every byte read back, closed and freed (also on
 * error). *crc is the file's CRC32C, as appended and as read back. ZC_EIO names the file when
 * the two differ. */
zc_status zc_direct_file_close(zc_direct_file *f, uint32_t *crc, zc_err *err);
/* Gives up: closes and frees without finishing (the caller removes the file). NULL is a no-op. */
void zc_direct_file_abort(zc_direct_file *f);
/* Test hook: once the byte at offset off has landed on the disk, and before it is read back,
 * flip one of its bits there — what another writer or a failing disk does. */
void zc_direct_file_flip_after_landing(zc_direct_file *f, int64_t off);

#endif

/* tfevents.h — TensorBoard's event files (events.out.tfevents.<time>.<host>), written without
 * TensorFlow: the TFRecord framing and the Event/Summary protobuf messages, encoded by hand. */
#ifndef ZEROC_CLI_TFEVENTS_H
#define ZEROC_CLI_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "zeroc/status.h"

typedef struct tfevents tfevents;

/* Creates in the existing directory dir a new event file whose first record is the Event
 * file_version "brain.Event:2", as TensorBoard's writers start one. *path_out (optional) gets the
 * file's path. */
zc_status tfevents_open(const char *dir, tfevents **out, char *path_out, size_t path_cap,
                        zc_err *err);
/* One Event at step `step`, wall_time seconds since the epoch, holding n scalars (a Summary of
 * simple_value Values: float, as TensorBoard stores them); flushed to the file. */
zc_status tfevents_scalars(tfevents *w, int64_t step, double wall_time, const char *const *tags,
                           const double *values, int n, zc_err *err);
/* Closes the file (NULL: nothing). */
void tfevents_close(tfevents *w);

/* TFRecord's masked CRC-32C of n bytes (exposed for the tests' fixtures). */
uint32_t tfevents_masked_crc(const void *data, size_t n);

#endif

/* train_agree.h — the ranks of one `zeroc train` job are given the same trainer flags, the same
 * --init file and the same --resume checkpoint, checked before anything is built. */
#ifndef ZEROC_CLI_TRAIN_AGREE_H
#define ZEROC_CLI_TRAIN_AGREE_H

#include "cli/train_opts.h"
#include "zeroc/comm.h"

/* Collective. Refuses (every rank with the same message, naming the first flag that differs and
 * the rank's value) a job whose ranks were given different flags that are not config keys (the
 * engine compares the config: zc_engine_finalize), a different --init file (its size, header
 * and 256 blocks spread over it) or a --resume that resolves to a different checkpoint (the
 * SHA-256 of its manifest, which records every shard's CRC). */
zc_status train_agree_opts(zc_comm *comm, const train_opts *o, zc_err *err);

#endif

/* output_paths.h — checking an output path before anything runs: that it can be written, and
 * refusing, naming both flags, one that would overwrite what the same command reads: one of its
 * input files (the same file through any spelling or link), or the files of a checkpoint it
 * reads or writes. */
#ifndef ZEROC_CLI_OUTPUT_PATHS_H
#define ZEROC_CLI_OUTPUT_PATHS_H

#include "zeroc/status.h"

/* Can `path` (of flag) be written when the command ends? Probed now, so that a typo costs
 * nothing: an existing file must open for writing (it is not changed), a new one is created and
 * removed again. */
zc_status cli_output_writable(const char *flag, const char *path, zc_err *err);

/* Refuses output `out` (of flag oflag) when it is the same file as input `in` (of flag iflag),
 * or an existing file inside `in` when that is a directory (a Hugging Face model's). NULL
 * paths, and an out that does not exist yet, pass. */
zc_status cli_output_not_input(const char *oflag, const char *out, const char *iflag,
                               const char *in, zc_err *err);

/* Refuses output `out` when writing it could overwrite a checkpoint under `ckdir` (of flag
 * cflag): out lies inside a checkpoint directory (one holding manifest.json), inside any
 * directory under ckdir, or directly in ckdir under a name zeroc's saves use (latest, .lock,
 * step-*, .tmp-step-*, latest.tmp-*). A file of another name beside the step directories
 * (ck/report.json) passes. Directories in out that do not exist yet count as where they would
 * be made (ck/step-000001/new/x and ck/step-000009/x are refused too). NULL paths pass. */
zc_status cli_output_outside_checkpoint(const char *oflag, const char *out, const char *cflag,
                                        const char *ckdir, zc_err *err);

#endif

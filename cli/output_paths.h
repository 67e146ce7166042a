/* output_paths.h — checking an output path before anything runs: that it can be written, and
 * refusing, naming both flags, one that would overwrite what the same command reads: one of its
 * input files (the same file through any spelling or link), or the files of a checkpoint it
 * reads or writes. */
#ifndef ZEROC_CLI_OUTPUT_PATHS_H
#define ZEROC_CLI_OUTPUT_PATHS_H

#include "zeroc/status.h"

/* Can `path` (of flag) be written when the command ends? Probed now, so that a typo costs
 * nothing: an existing file must open for writing (it is not changed), a new one is created and
 * removed again; a symbolic link gets zc_durable_probe's checks (a dangling one, or one another
 * user planted in a sticky or world-writable directory, is refused naming it and why). */
zc_status cli_output_writable(const char *flag, const char *path, zc_err *err);

/* Refuses output `out` (of flag oflag) when it is the same file as input `in` (of flag iflag),
 * or an existing file inside `in` when that is a directory (a Hugging Face model's), or when
 * it lies among any checkpoint's files (cli_output_not_checkpoint). NULL paths, and an out
 * that does not exist yet, pass the first two. */
zc_status cli_output_not_input(const char *oflag, const char *out, const char *iflag,
                               const char *in, zc_err *err);

/* The same for an llm.c token stream `in` (--data, --val-data, --tokens: a file or a glob of
 * shards): out is none of the files it reads. A stream that does not open passes, left to the
 * command's own open, which names what is wrong with it. */
zc_status cli_output_not_token_files(const char *oflag, const char *out, const char *iflag,
                                     const char *in, zc_err *err);

/* Refuses output `out` when writing it could overwrite a checkpoint under `ckdir` (of flag
 * cflag): out lies inside a checkpoint directory (one holding manifest.json), inside any
 * directory under ckdir, or directly in ckdir under a name zeroc's saves use (latest, .lock,
 * step-*, .tmp-step-*, latest.tmp-*). A file of another name beside the step directories
 * (ck/report.json) passes. Directories in out that do not exist yet count as where they would
 * be made (ck/step-000001/new/x and ck/step-000009/x are refused too). When ckdir is a step
 * directory of a save directory (its parent has `latest` or other step-* checkpoints), the
 * save directory's files are protected the same way. NULL paths pass. */
zc_status cli_output_outside_checkpoint(const char *oflag, const char *out, const char *cflag,
                                        const char *ckdir, zc_err *err);

/* Refuses an empty path of flag, or one longer than max characters (saying so, before
 * anything is tried: a message about it would be cut off). NULL passes. */
zc_status cli_output_named(const char *flag, const char *path, size_t max, zc_err *err);

/* Refuses output `out` (of flag oflag) lying among any checkpoint's files, whatever the
 * command reads: inside a checkpoint (a directory holding manifest.json and manifest.sha256,
 * or a step-* directory holding manifest.json), or named as saves name their entries (latest,
 * .lock, step-*, .tmp-step-*) in a save directory (one with `latest` or step-* checkpoints).
 * cli_output_not_input checks this too. NULL passes. */
zc_status cli_output_not_checkpoint(const char *oflag, const char *out, zc_err *err);

/* Refuses two outputs of one command that are the same file (any spelling or link; compared
 * resolved when either does not exist yet). NULL paths pass. */
zc_status cli_outputs_distinct(const char *aflag, const char *a, const char *bflag, const char *b,
                               zc_err *err);

/* Refuses a save directory that is, or lies inside, a checkpoint (as above), or a step-* /
 * .tmp-step-* directory of a save directory, existing or not. NULL passes. */
zc_status cli_save_dir_not_in_checkpoint(const char *flag, const char *dir, zc_err *err);

/* Refuses a save directory that already holds checkpoints (a `latest` file or a step-*
 * directory with manifest.json): a fresh run would replace or prune them. NULL passes. */
zc_status cli_save_dir_unused(const char *flag, const char *dir, zc_err *err);

#endif

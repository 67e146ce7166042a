/* commands.h — the zeroc subcommands, each in its own file under cli/, dispatched by main.c. */
#ifndef ZEROC_CLI_COMMANDS_H
#define ZEROC_CLI_COMMANDS_H

#include "zeroc/comm.h"
#include "zeroc/status.h"

int cmd_train(zc_comm *comm, int argc, char **argv);
int cmd_sample(zc_comm *comm, int argc, char **argv);
int cmd_analyze(zc_comm *comm, int argc, char **argv);
/* Without MPI, in one process: plot (reads reports, writes an SVG), the estimator, the
 * checkpoint tools, prepare (cli/prepare.c), the tokenizer commands (cli/tokenize.c). */
int cmd_plot(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_ckpt(int argc, char **argv);
int cmd_prepare(int argc, char **argv);
/* prepare --jsonl (cli/prepare_jsonl.c): files[0..nfiles) of instruction data into
 * PREFIX_{train,val}.bin and their .mask files, with the tokenizer in tokdir and the chat
 * format chat_flag (NULL: from tokdir's tokenizer_config.json); chat_date is --chat-date (the
 * llama3.1 format's "Today Date"; NULL: the template's). */
zc_status prepare_jsonl(const char **files, int nfiles, const char *prefix, double frac,
                        const char *chat_date, const char *tokdir, const char *chat_flag,
                        zc_err *err);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);

#endif

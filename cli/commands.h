/* commands.h — the zeroc subcommands, each in its own file under cli/, dispatched by main.c. */
#ifndef ZEROC_CLI_COMMANDS_H
#define ZEROC_CLI_COMMANDS_H

#include "zeroc/comm.h"

int cmd_train(zc_comm *comm, int argc, char **argv);
int cmd_sample(zc_comm *comm, int argc, char **argv);
int cmd_analyze(zc_comm *comm, int argc, char **argv);
/* Without MPI, in one process: plot (reads reports, writes an SVG), the estimator, the
 * checkpoint tools, prepare (cli/prepare.c), the tokenizer commands (cli/tokenize.c). */
int cmd_plot(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_ckpt(int argc, char **argv);
int cmd_prepare(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);

#endif

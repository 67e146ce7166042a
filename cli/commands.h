/* commands.h — the zeroc subcommands, each in its own file under cli/, dispatched by main.c. */
#ifndef ZEROC_CLI_COMMANDS_H
#define ZEROC_CLI_COMMANDS_H

#include "zeroc/comm.h"

int cmd_train(zc_comm *comm, int argc, char **argv);
int cmd_sample(zc_comm *comm, int argc, char **argv);
int cmd_estimate(zc_comm *comm, int argc, char **argv);
int cmd_analyze(zc_comm *comm, int argc, char **argv);
int cmd_ckpt(zc_comm *comm, int argc, char **argv);
int cmd_plot(int argc, char **argv); /* no MPI: reads reports, writes an SVG */
/* Without MPI: prepare (cli/prepare.c), the tokenizer commands (cli/tokenize.c). */
int cmd_prepare(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);

#endif

/* args.h — command-line flag parsing for the zeroc subcommands: a table of flags, each bound
 * to a string, int, int64, double or boolean destination, or to a config key (applied with
 * zc_config_set after the --config file is read, so flags override the file). */
#ifndef ZEROC_CLI_ARGS_H
#define ZEROC_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "zeroc/config.h"
#include "zeroc/status.h"

typedef enum { ARG_STR, ARG_INT, ARG_I64, ARG_DOUBLE, ARG_BOOL, ARG_CONFIG } arg_kind;

typedef struct {
    const char *flag; /* "--steps" */
    arg_kind kind;
    void *dst;              /* const char **, int *, int64_t *, double *, bool * */
    const char *config_key; /* ARG_CONFIG: dotted config path */
    const char *help;
    const char *value; /* ARG_CONFIG: the raw value seen (NULL if not given) */
} arg_spec;

/* Parses argv[first..argc) against specs (at most 128); unknown flags, a flag given twice,
 * missing values and unparsable numbers are errors naming the flag. */
zc_status args_parse(arg_spec *specs, int nspecs, int argc, char **argv, int first, zc_err *err);
/* Applies the ARG_CONFIG flags that were given, in table order. */
zc_status args_apply_config(const arg_spec *specs, int nspecs, zc_config *cfg, zc_err *err);
/* Was flag given in argv[first..argc) (as "--flag value" or "--flag=value")? */
bool args_given(int argc, char **argv, int first, const char *flag);
/* Prints the flags and their help to stdout. */
void args_usage(const char *synopsis, const arg_spec *specs, int nspecs);
/* A subcommand's parse: with --help (or -h) anywhere, prints the usage (when `print`, i.e. on
 * rank 0), sets *helped and returns ZC_OK; otherwise args_parse. */
zc_status args_parse_command(arg_spec *specs, int nspecs, int argc, char **argv, int first,
                             const char *synopsis, bool print, bool *helped, zc_err *err);

/* Takes the occurrences of a list flag out of argv[first..argc): "FLAG a b ..." takes every
 * following argument up to the next one starting with "--"; "FLAG=a" takes one. The list goes
 * to list, the other arguments to rest (for args_parse); both need room for argc entries. */
zc_status args_split_list(int argc, char **argv, int first, const char *flag, const char **list,
                          int *nlist, char **rest, int *nrest, zc_err *err);

#endif

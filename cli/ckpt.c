/* ckpt.c — `zeroc ckpt inspect|verify|export`: look into, check, and convert a sharded
 * checkpoint without training (one process; any world size wrote it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "zeroc/checkpoint.h"

int cmd_ckpt(zc_comm *comm, int argc, char **argv)
{
    const char *out = NULL, *format = "safetensors";
    bool help = false;
    arg_spec specs[] = {
        {"--out", ARG_STR, &out, NULL, "export: the file to write", NULL},
        {"--format", ARG_STR, &format, NULL, "export: safetensors (fp32)", NULL},
        {"--help", ARG_BOOL, &help, NULL, "print this help", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    const char *verb = argc > 2 ? argv[2] : "", *path = argc > 3 ? argv[3] : NULL;
    zc_status st = ZC_OK;
    if (!strcmp(verb, "--help") || !strcmp(verb, "-h")) {
        args_usage("zeroc ckpt inspect DIR | verify DIR | export DIR --out FILE.safetensors",
                   specs, nspecs);
        return 0;
    }
    if (strcmp(verb, "inspect") && strcmp(verb, "verify") && strcmp(verb, "export"))
        st = zc_err_set(&err, ZC_EINVAL, "zeroc ckpt: expected inspect, verify or export, got "
                        "'%s'", verb);
    else if (!path || path[0] == '-')
        st = zc_err_set(&err, ZC_EINVAL, "zeroc ckpt %s: which checkpoint? (a DIR given to "
                        "--save-dir, or DIR/step-N)", verb);
    if (!st)
        st = args_parse(specs, nspecs, argc, argv, 4, &err);
    if (!st && !strcmp(verb, "export") && !out)
        st = zc_err_set(&err, ZC_EINVAL, "zeroc ckpt export needs --out FILE");
    if (!st && strcmp(format, "safetensors"))
        st = zc_err_set(&err, ZC_EINVAL, "--format: only safetensors is implemented, got '%s'",
                        format);
    char dir[4096];
    if (!st)
        st = zc_ckpt_resolve(path, dir, sizeof dir, &err);
    if (!st && zc_comm_rank(comm) == 0) {
        char *summary = NULL;
        if (!strcmp(verb, "inspect"))
            st = zc_ckpt_inspect(dir, &summary, &err);
        else if (!strcmp(verb, "verify"))
            st = zc_ckpt_verify(dir, &summary, &err);
        else if (!(st = zc_ckpt_export_safetensors(dir, out, &err)))
            printf("wrote %s from %s\n", out, dir);
        if (summary)
            printf("%s\n", summary);
        free(summary);
    }
    return st ? cli_fail(comm, &err, true) : 0;
}

/* args.c — table-driven flag parsing for the zeroc subcommands (see args.h). Strict: an integer
 * is decimal digits with an optional '-' and nothing before or after them (no white space, no
 * '+'), a number has no white space around it; every error names the flag and the value. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"

static zc_status parse_value(arg_spec *s, const char *v, zc_err *err)
{
    char *end;
    errno = 0;
    switch (s->kind) {
    case ARG_STR: *(const char **)s->dst = v; return ZC_OK;
    case ARG_CONFIG: s->value = v; return ZC_OK;
    case ARG_INT:
    case ARG_I64: {
        /* strtoll would skip white space and take a '+': "-3" or "12" only */
        long long x = strtoll(v, &end, 10);
        if (!(*v == '-' || (*v >= '0' && *v <= '9')) || *end || (errno && errno != ERANGE))
            return zc_err_set(err, ZC_EINVAL, "%s: expected an integer, got '%s'", s->flag, v);
        if (errno == ERANGE || (s->kind == ARG_INT && (x < INT_MIN || x > INT_MAX)))
            return zc_err_set(err, ZC_EINVAL, "%s: %s is out of range (%lld to %lld)", s->flag, v,
                              s->kind == ARG_INT ? (long long)INT_MIN : LLONG_MIN,
                              s->kind == ARG_INT ? (long long)INT_MAX : LLONG_MAX);
        if (s->kind == ARG_INT)
            *(int *)s->dst = (int)x;
        else
            *(int64_t *)s->dst = x;
        return ZC_OK;
    }
    case ARG_DOUBLE: {
        double x = strtod(v, &end); /* white space before the number, as after it, is refused */
        if (!*v || isspace((unsigned char)*v) || *end || errno)
            return zc_err_set(err, ZC_EINVAL, "%s: expected a number, got '%s'", s->flag, v);
        *(double *)s->dst = x;
        return ZC_OK;
    }
    case ARG_BOOL: *(bool *)s->dst = true; return ZC_OK;
    }
    return ZC_EINVAL;
}

zc_status args_parse(arg_spec *specs, int nspecs, int argc, char **argv, int first, zc_err *err)
{
    enum { MAX_SPECS = 128 };
    bool seen[MAX_SPECS] = {false};
    ZC_ASSERT(nspecs <= MAX_SPECS);
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        size_t flen = eq ? (size_t)(eq - a) : strlen(a);
        arg_spec *s = NULL;
        for (int k = 0; k < nspecs && !s; k++)
            if (strlen(specs[k].flag) == flen && strncmp(specs[k].flag, a, flen) == 0)
                s = &specs[k];
        if (!s && a[0] != '-' && i > first && argv[i - 1][0] != '-')
            /* a value where a flag should be, after another value: what the shell leaves when
             * it expands an unquoted glob of shards (the flag takes the first file) */
            return zc_err_set(err, ZC_EINVAL,
                              "unexpected argument '%s' after %s %s: a flag takes one value (a "
                              "glob of files must be quoted, --data 'data/*.bin', or the shell "
                              "expands it into several arguments)",
                              a, i >= first + 2 ? argv[i - 2] : "", argv[i - 1]);
        if (!s)
            return zc_err_set(err, ZC_EINVAL, "unknown flag '%.*s' (see --help)", (int)flen, a);
        if (seen[s - specs]) /* the last would win in silence: the run is not what was typed */
            return zc_err_set(err, ZC_EINVAL, "%s is given twice; give it once", s->flag);
        seen[s - specs] = true;
        const char *v = NULL;
        if (s->kind == ARG_BOOL) {
            if (eq)
                return zc_err_set(err, ZC_EINVAL, "%s takes no value", s->flag);
        } else if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            return zc_err_set(err, ZC_EINVAL, "%s needs a value", s->flag);
        }
        zc_status st = parse_value(s, v, err);
        if (st)
            return st;
    }
    return ZC_OK;
}

zc_status args_apply_config(const arg_spec *specs, int nspecs, zc_config *cfg, zc_err *err)
{
    for (int k = 0; k < nspecs; k++)
        if (specs[k].kind == ARG_CONFIG && specs[k].value) {
            zc_status st = zc_config_set(cfg, specs[k].config_key, specs[k].value, err);
            if (st) {
                /* name the flag the user typed as well as the key */
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s", err->msg);
                return zc_err_set(err, st, "%s: %s", specs[k].flag, msg);
            }
        }
    return ZC_OK;
}

zc_status args_parse_command(arg_spec *specs, int nspecs, int argc, char **argv, int first,
                             const char *synopsis, bool print, bool *helped, zc_err *err)
{
    *helped = false;
    for (int i = first; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (print)
                args_usage(synopsis, specs, nspecs);
            *helped = true;
            return ZC_OK;
        }
    return args_parse(specs, nspecs, argc, argv, first, err);
}

void args_usage(const char *synopsis, const arg_spec *specs, int nspecs)
{
    printf("usage: %s\n\n", synopsis);
    for (int k = 0; k < nspecs; k++) {
        if (!strcmp(specs[k].flag, "--help")) /* a command's own --help spec: said once, below */
            continue;
        const char *meta = specs[k].kind == ARG_BOOL ? "" : specs[k].kind == ARG_STR ? " S" : " N";
        char left[64];
        snprintf(left, sizeof left, "%s%s", specs[k].flag, meta);
        if (specs[k].kind == ARG_CONFIG)
            printf("  %-24s %s (config: %s)\n", left, specs[k].help, specs[k].config_key);
        else
            printf("  %-24s %s\n", left, specs[k].help);
    }
    printf("  %-24s %s\n", "--help", "print this help");
}

bool args_given(int argc, char **argv, int first, const char *flag)
{
    size_t n = strlen(flag);
    for (int i = first; i < argc; i++)
        if (strncmp(argv[i], flag, n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '='))
            return true;
    return false;
}

zc_status args_split_list(int argc, char **argv, int first, const char *flag, const char **list,
                          int *nlist, char **rest, int *nrest, zc_err *err)
{
    size_t fl = strlen(flag);
    *nlist = *nrest = 0;
    for (int i = first; i < argc; i++) {
        if (!strncmp(argv[i], flag, fl) && argv[i][fl] == '=') {
            if (!argv[i][fl + 1])
                return zc_err_set(err, ZC_EINVAL, "%s= needs a file name", flag);
            list[(*nlist)++] = argv[i] + fl + 1;
        } else if (!strcmp(argv[i], flag)) {
            int before = *nlist;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                list[(*nlist)++] = argv[++i];
            if (*nlist == before)
                return zc_err_set(err, ZC_EINVAL, "%s needs at least one file", flag);
        } else {
            rest[(*nrest)++] = argv[i];
        }
    }
    return ZC_OK;
}

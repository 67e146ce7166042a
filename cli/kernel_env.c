/* kernel_env.c — refuses a value of ZEROC_GEMM, ZEROC_GEMM_ISA or ZEROC_SIMD that the library
 * would ignore (see kernel_env.h). The accepted values are listed here, beside the library's own
 * tables (src/kernels/gemm.c's ISA caps, zeroc/simd.h's level names): the library stays silent
 * about the environment, as it stays silent about everything; only the command speaks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/kernel_env.h"

zc_status cli_kernel_env_check(zc_err *err)
{
    static const struct {
        const char *var;
        const char *values[5]; /* NULL-terminated */
        const char *what;
    } vars[] = {
        {"ZEROC_GEMM", {"portable", NULL}, "unset it for oneDNN's products"},
        {"ZEROC_GEMM_ISA",
         {"avx2", "avx512_core", "avx512_core_bf16", "avx512_core_amx", NULL},
         "unset it to let oneDNN use all the CPU has"},
        {"ZEROC_SIMD", {"avx512", "avx2", "portable", NULL}, "unset it for the CPU's best"},
    };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i].var);
        if (!v || !*v)
            continue;
        char list[128] = "";
        size_t n = 0;
        for (int k = 0; vars[i].values[k]; k++) {
            if (!strcmp(v, vars[i].values[k])) {
                list[0] = 0;
                break;
            }
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "",
                                  vars[i].values[k]);
        }
        if (list[0])
            return zc_err_set(err, ZC_EINVAL,
                              "%s=\"%.64s\" is not a value zeroc knows: expected %s (%s)",
                              vars[i].var, v, list, vars[i].what);
    }
    return ZC_OK;
}

/* kernel_env.h — the environment variables that choose zeroc's compute kernels (ZEROC_GEMM,
 * ZEROC_GEMM_ISA, ZEROC_SIMD), checked before a command that computes starts: the library reads
 * them where the kernels start and ignores a value it does not know, so a typo (`portabel`,
 * `avx3`) ran the default kernels without a word. */
#ifndef ZEROC_CLI_KERNEL_ENV_H
#define ZEROC_CLI_KERNEL_ENV_H

#include "zeroc/status.h"

/* ZC_EINVAL naming the variable, its value and the values accepted when one of them is set to
 * something the library would ignore; an empty value counts as unset. */
zc_status cli_kernel_env_check(zc_err *err);

#endif

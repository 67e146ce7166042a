/* test_asan_range.c — in the sanitizer build the vector copies of the elementwise kernels run
 * uninstrumented (zeroc/simd_expand.h), and the public functions check the whole ranges they
 * hand those copies instead (src/util/asan_range.h). This program converts into a buffer one
 * element short, at the CPU's own vector level: the check must report it as AddressSanitizer
 * reports an access (ctest matches "ERROR: AddressSanitizer: heap-buffer-overflow" and
 * "WRITE"). Built and run in the sanitizer build only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "zeroc/dtype.h"
#include "zeroc/simd.h"

int main(void)
{
    enum { N = 1000 };
    float *src = calloc(N, sizeof *src);
    uint16_t *dst = malloc((N - 1) * sizeof *dst); /* one short */
    if (!src || !dst)
        return 2;
    fprintf(stderr, "converting %d elements into %d at level %s\n", N, N - 1,
            zc_simd_name(zc_simd_level()));
    zc_f32_to_bf16(src, dst, N);
    fprintf(stderr, "not reported\n");
    free(src);
    free(dst);
    return 1;
}

/* crc32c.c — CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78). x86-64 has the
 * polynomial in hardware (SSE4.2 `crc32`, 8 bytes per instruction): used when the CPU has it,
 * chosen at run time; otherwise a byte-at-a-time table (~0.5 GB/s, which made the CRC — not the
 * disk — the bottleneck of a checkpoint save). Both are checked against RFC 3720's vectors and
 * against each other in tests/test_util.c. */
#include <string.h>

#include "util/crc32c.h"

static uint32_t table[256];

static void build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t zc_crc32c_sw(uint32_t crc, const void *data, size_t n)
{
    if (!table[1])
        build();
    const unsigned char *p = data;
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t c = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
#endif

int zc_crc32c_hw_available(void)
{
#if defined(__x86_64__)
    return __builtin_cpu_supports("sse4.2");
#else
    return 0;
#endif
}

uint32_t zc_crc32c(uint32_t crc, const void *data, size_t n)
{
#if defined(__x86_64__)
    static int hw = -1;
    if (hw < 0)
        hw = zc_crc32c_hw_available();
    if (hw)
        return crc_hw(crc, data, n);
#endif
    return zc_crc32c_sw(crc, data, n);
}

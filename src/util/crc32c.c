/* crc32c.c — CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), slicing by one
 * byte over a table built on first use: simple, and far faster than the disk it checks.
 * Checked against the RFC 3720 test vectors in tests/test_util.c. */
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

uint32_t zc_crc32c(uint32_t crc, const void *data, size_t n)
{
    if (!table[1])
        build();
    const unsigned char *p = data;
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

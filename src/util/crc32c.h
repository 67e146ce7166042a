/* crc32c.h — internal: CRC-32C (Castagnoli), the checksum of checkpoint shard files. */
#ifndef ZEROC_UTIL_CRC32C_H
#define ZEROC_UTIL_CRC32C_H
#include <stddef.h>
#include <stdint.h>
/* crc = zc_crc32c(0, data, n) for a whole buffer; chain calls to continue a stream. */
uint32_t zc_crc32c(uint32_t crc, const void *data, size_t n);
/* The portable table version, and whether the hardware one is in use (for the tests). */
uint32_t zc_crc32c_sw(uint32_t crc, const void *data, size_t n);
int zc_crc32c_hw_available(void);
#endif

/* sha256.h — internal: SHA-256 (FIPS 180-4), streaming, for weight digests. */
#ifndef ZEROC_UTIL_SHA256_H
#define ZEROC_UTIL_SHA256_H
#include <stddef.h>
#include <stdint.h>
typedef struct {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
} zc_sha256;
void zc_sha256_init(zc_sha256 *s);
void zc_sha256_update(zc_sha256 *s, const void *data, size_t n);
void zc_sha256_final(zc_sha256 *s, uint8_t out[32]);
/* out: 64 hex digits and a NUL. */
void zc_sha256_hex(const uint8_t digest[32], char out[65]);
/* Tests: use the portable rounds even where SHA-NI is available (on = 1), or decide again. */
void zc_sha256_force_portable(int on);
#endif

/* quantize.h — ZeRO++'s quantized weight all-gather (qwZ): a parameter shard as blocks of
 * ZC_QWZ_BLOCK int8 values with one fp32 scale each, the form it crosses the network in, and
 * back. Internal to the engine; the segment's size is public (zeroc/estimate.h). */
#ifndef ZEROC_ENGINE_QUANTIZE_H
#define ZEROC_ENGINE_QUANTIZE_H

#include <stddef.h>

#include "zeroc/dtype.h"
#include "zeroc/estimate.h"

/* One rank's segment of a gathered unit: ceil(S / ZC_QWZ_BLOCK) fp32 scales, then S int8
 * values padded to a multiple of 4 bytes (zc_qwz_segment_bytes(S) in all). Block b's values are
 * round(x / s) with s = max |x| / 127 over the block (0 for an all-zero block), so a value comes
 * back within s / 2 of what it was. Symmetric and deterministic: every rank dequantizes a
 * segment to the same numbers. src holds S values of type t (fp32, bf16 or fp16). */
void zc_qwz_quantize(const void *src, zc_dtype t, size_t S, void *segment);

/* The S values of a segment, as type t, into dst. */
void zc_qwz_dequantize(const void *segment, size_t S, zc_dtype t, void *dst);

#endif

/* quantize.h — ZeRO++'s block-wise int8 form of a tensor slice: blocks of ZC_QWZ_BLOCK int8
 * values with one fp32 scale each, the form in which qwZ sends parameter shards (the engine's
 * all-gathers) and qgZ sends gradient blocks (comm's reduce-scatter). Internal to the library;
 * the segment's size is public (zeroc/estimate.h). */
#ifndef ZEROC_KERNELS_QUANTIZE_H
#define ZEROC_KERNELS_QUANTIZE_H

#include <stddef.h>

#include "zeroc/dtype.h"
#include "zeroc/estimate.h"

/* A segment of S values: ceil(S / ZC_QWZ_BLOCK) fp32 scales, then S int8 values padded to a
 * multiple of 4 bytes (zc_qwz_segment_bytes(S) in all). Block b's values are round(x / s) with
 * s = max |x| / 127 over the block (0 for an all-zero block), so a value comes back within s / 2
 * of what it was (below max 127 · FLT_MIN = 1.5e-36, s is a denormal float, rounded: add 127 ·
 * 2^-150; a thread that flushes denormals, as the engine's compute threads do, gets such a
 * block back as zeros). A block holding inf or NaN gets scale NaN, so it comes back as NaN (an fp16
 * overflow stays visible). Deterministic: every rank dequantizes a segment to the same numbers,
 * whatever the thread count. src holds S values of type t (fp32, bf16 or fp16). */
void zc_qwz_quantize(const void *src, zc_dtype t, size_t S, void *segment);

/* The S values of a segment, as type t, into dst. */
void zc_qwz_dequantize(const void *segment, size_t S, zc_dtype t, void *dst);

/* qgZ's second hop: out (a segment of S values) gets the sum of the nsegs segments' values,
 * added in fp32 in the order given, quantized again. A block that is not finite in any input
 * stays NaN. */
void zc_qwz_requantize_sum(const void *const *segs, int nsegs, size_t S, void *out);

/* Values [lo, lo + n) of a segment of S values as fp32, lo a multiple of ZC_QWZ_BLOCK. */
void zc_qwz_dequantize_range(const void *segment, size_t S, size_t lo, size_t n, float *dst);

#endif

/* zeroc/safetensors.h — the engine's weights out as a safetensors file (Hugging Face's format).
 *
 *   OFFSET  SIZE  DESCRIPTION
 *   0       8     N, the header length, unsigned little-endian
 *   8       N     JSON: {"<param name>": {"dtype": "F32", "shape": [...],
 *                        "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
 *                 padded with spaces to a multiple of 8
 *   8+N     ...   the tensors' little-endian bytes, in registration order; offsets are
 *                 relative to this point
 *
 * Writing is collective (stage 3 gathers each unit in turn) and streamed unit by unit, so no
 * rank ever holds more than one unit; rank 0 writes the file through a temporary name and a
 * rename, so an existing file is replaced only by a complete one.
 *
 *     if (zc_safetensors_save(engine, "weights.safetensors", &err)) ...   // collective
 *     if (zc_safetensors_load(engine, "weights.safetensors", &err)) ...   // each rank
 */
#ifndef ZEROC_SAFETENSORS_H
#define ZEROC_SAFETENSORS_H

#include "zeroc/api.h"

#include <stdbool.h>

#include "zeroc/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

ZC_API zc_status zc_safetensors_save(zc_engine *e, const char *path, zc_err *err);

/* After zc_engine_finalize: sets the weights from a safetensors file (F32 or BF16 tensors whose
 * names and shapes are the model's parameters; any other tensor, or a missing one, is an
 * error). Each rank reads only the elements it holds. Not collective. */
ZC_API zc_status zc_safetensors_load(zc_engine *e, const char *path, zc_err *err);
/* Whether the tensors' data_offsets in a safetensors file tile the data after its header, as
 * the format requires (in any header order): two tensors on the same bytes, a gap, trailing
 * bytes, offsets past the end or a name given twice are errors naming the file and tensor.
 * zc_safetensors_load checks it itself; for readers of other layouts (Hugging Face's). */
ZC_API zc_status zc_safetensors_check_layout(const char *path, zc_err *err);
/* Whether a path names a safetensors file (by its extension). */
ZC_API bool zc_safetensors_is_path(const char *path);

#ifdef __cplusplus
}
#endif

#endif

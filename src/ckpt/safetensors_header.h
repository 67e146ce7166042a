/* safetensors_header.h — internal: the safetensors JSON header (F32 or, with elem_bytes 2,
 * BF16 tensors, data in the given order, padded with spaces to a multiple of 8), shared by the
 * engine's export and the checkpoint export. malloc'd; *len is its padded length. */
#ifndef ZEROC_CKPT_SAFETENSORS_HEADER_H
#define ZEROC_CKPT_SAFETENSORS_HEADER_H
#include <stddef.h>

#include "zeroc/engine.h"

char *zc_safetensors_header(const zc_param_info *params, int nparams, int elem_bytes, size_t *len);
#endif

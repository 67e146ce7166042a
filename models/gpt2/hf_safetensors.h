/* hf_safetensors.h — the Hugging Face file readers every decoder family shares (hf_files.c for
 * GPT-2, hf_decoder.c for Llama, Qwen2, Mistral): a safetensors file open with its JSON header,
 * a tensor's dtype/shape/offsets checked against the file, elements read as fp32, and a
 * config.json parsed as Python's json parses it. Internal to models/. */
#ifndef ZEROC_MODELS_GPT2_HF_SAFETENSORS_H
#define ZEROC_MODELS_GPT2_HF_SAFETENSORS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "zeroc/dtype.h"
#include "zeroc/durable.h"
#include "zeroc/status.h"

enum { HF_NAME_CAP = 160 };

/* An open safetensors file: fd, its parsed header h, the data's start (8 + header length). */
typedef struct {
    const char *path;
    int fd;
    cJSON *h;
    uint64_t data0, size;
    const char *prefix;    /* GPT-2's "transformer." or "" (hf_files.c) */
    char wte[HF_NAME_CAP]; /* GPT-2's token embedding tensor (hf_files.c) */
    const char *who;       /* what a missing tensor's message says has it */
} hf_st_file;

/* One tensor of the header: dtype F32/BF16/F16, 1 or 2 dimensions, bytes from data0 + off. */
typedef struct {
    zc_dtype dt;
    int ndim;
    int64_t shape[2];
    uint64_t off; /* from data0 */
} hf_st_tensor;

/* Opens path (a regular file, never blocking on a FIFO) and parses its header; ZC_EINVAL naming
 * what is wrong with it. */
zc_status hf_st_open(hf_st_file *f, const char *path, zc_err *err);
void hf_st_close(hf_st_file *f);
/* Tensor `name`: its dtype, shape and bytes checked against the file. */
zc_status hf_st_tensor_get(const hf_st_file *f, const char *name, hf_st_tensor *t, zc_err *err);
/* Elements [first, first + n) of t as fp32 into dst. */
zc_status hf_st_read(const hf_st_file *f, const char *name, const hf_st_tensor *t, size_t first,
                     size_t n, float *dst, zc_err *err);
/* v as an exact non-negative integer of at most 2^53. */
bool hf_json_u64(const cJSON *v, uint64_t *out);
/* A JSON object of at most 1 MiB, as Python's json reads it (one value, white space after, no
 * key twice); ZC_EIO when it cannot be opened, ZC_EINVAL naming what is wrong. */
zc_status hf_read_json(const char *path, cJSON **out, zc_err *err);
/* The header of a file being written: h's tensors plus __metadata__ {"format": "pt"} as one JSON
 * line padded with spaces to a multiple of 8 (*hlen bytes); takes h. NULL when out of memory. */
char *hf_st_header_text(cJSON *h, uint64_t *hlen);
/* The file's first bytes: the header's length, 8 bytes little-endian, then the header. */
zc_status hf_st_write_header(zc_durable *f, const char *text, uint64_t hlen, zc_err *err);
/* c printed as indented JSON and written durably to path; takes c (NULL: out of memory). */
zc_status hf_write_json(const char *path, cJSON *c, zc_err *err);

#endif

/* llmc_files.h — the two binary file formats of llm.c (github.com/karpathy/llm.c), so zeroc can
 * start from, and hand back, llm.c GPT-2 checkpoints and train on llm.c token files (one, or a
 * glob of shards read as one stream). Owns: the header layouts, their validation (every failure
 * is a message naming the file and the problem), the tensor order and sizes, ranged reads (a rank
 * reads only the elements it holds), and writing through a temporary file that is fsync'd and
 * renamed into place, so an existing file is only ever replaced by a complete one. POSIX + libc
 * only; never prints.
 *
 * Both formats are little-endian and begin with a header of 256 int32 (1024 bytes); unused
 * header slots are 0. Checked against llm.c's train_gpt2.c (gpt2_build_from_checkpoint,
 * fill_in_parameter_sizes), train_gpt2.py (write_model, write_tensors) and
 * dev/data/data_common.py (write_datafile).
 *
 * GPT-2 checkpoint (train_gpt2.py write_model; 124M: 497,904,640 bytes as version 3)
 *
 *   OFFSET   SIZE            DESCRIPTION
 *   0        4               magic 20240326
 *   4        4               version: 3 = every tensor fp32, 5 = every tensor bf16
 *   8        4               max_seq_len maxT (1024 for GPT-2)
 *   12       4               vocab_size V (50257)
 *   16       4               num_layers L (12 for 124M)
 *   20       4               num_heads NH (12); channels must be a multiple of it
 *   24       4               channels C (768)
 *   28       4               padded_vocab_size Vp (50304): wte has Vp rows, rows V..Vp-1 unused
 *   32       992             zero (header slots 8..255)
 *   1024     Σ n_i · w       16 tensors, one after the other, w = 4 (fp32) or 2 (bf16):
 *
 *     i  name      n_i (elements)  shape          i  name      n_i          shape
 *     0  wte       Vp·C            (Vp, C)        8  ln2w      L·C          (L, C)
 *     1  wpe       maxT·C          (maxT, C)      9  ln2b      L·C          (L, C)
 *     2  ln1w      L·C             (L, C)         10 fcw       L·4C·C       (L, 4C, C)
 *     3  ln1b      L·C             (L, C)         11 fcb       L·4C         (L, 4C)
 *     4  qkvw      L·3C·C          (L, 3C, C)     12 fcprojw   L·C·4C       (L, C, 4C)
 *     5  qkvb      L·3C            (L, 3C)        13 fcprojb   L·C          (L, C)
 *     6  attprojw  L·C·C           (L, C, C)      14 lnfw      C            (C)
 *     7  attprojb  L·C             (L, C)         15 lnfb      C            (C)
 *
 *   Weights are [out, in] row-major. A per-layer tensor (first dimension L) holds layer 0's slab,
 *   then layer 1's, ...: layer l of qkvw is elements [l·3C·C, (l+1)·3C·C). A bf16 value is the
 *   top 16 bits of the fp32 value (read back as those bits followed by 16 zero bits).
 *
 * Token file (data_common.py write_datafile; the llm.c DataLoader's input), in two widths:
 * "gpt-2" (uint16 tokens, ids up to 65,535) and "llama-3" (uint32 tokens, for vocabularies
 * beyond: Llama 3 has 128,256 tokens, Qwen2.5 151,936). The magic and the version go together;
 * any other pairing is refused.
 *
 *   OFFSET   SIZE            DESCRIPTION
 *   0        4               magic: 20240520 (uint16 tokens) or 20240801 (uint32 tokens)
 *   4        4               version: 1 with magic 20240520, 7 with magic 20240801
 *   8        4               ntok, the number of tokens (≥ 1)
 *   12       1012            zero (header slots 3..255)
 *   1024     w · ntok        the tokens, w = 2 (uint16 each) or 4 (uint32 each)
 *
 * zeroc writes the uint16 form whenever every id fits it (a vocabulary of at most 65,536
 * tokens: GPT-2's files are byte for byte as before) and the uint32 form otherwise
 * (llmc_tokens_width); it reads both, and a glob of shards may mix them.
 *
 *     llmc_header h;
 *     if (llmc_ckpt_read_header("gpt2_124M.bin", &h, &err)) ...
 *     size_t sizes[LLMC_NTENSORS];
 *     llmc_tensor_sizes(&h, sizes);
 *     llmc_ckpt_read("gpt2_124M.bin", &h, 4, l * 3 * C * C, 3 * C * C, qkvw_l, &err);
 *
 *     llmc_ckpt_writer w;                  // writes "out.bin.tmp.<pid>", renamed by finish
 *     if (llmc_ckpt_create(&w, "out.bin", &h, &err)) ...
 *     for each tensor i, in pieces:  llmc_ckpt_write(&w, i, first, n, src, &err)
 *     llmc_ckpt_finish(&w, &err);          // on any error before it: llmc_ckpt_abort(&w)
 */
#ifndef ZEROC_MODELS_GPT2_LLMC_FILES_H
#define ZEROC_MODELS_GPT2_LLMC_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "zeroc/durable.h"
#include "zeroc/status.h"

#define LLMC_HEADER_BYTES 1024
#define LLMC_CKPT_MAGIC 20240326
#define LLMC_CKPT_FP32 3
#define LLMC_CKPT_BF16 5
#define LLMC_TOKENS_MAGIC 20240520 /* uint16 tokens ("gpt-2" in llm.c's data_common.py) */
#define LLMC_TOKENS_VERSION 1
#define LLMC_TOKENS32_MAGIC 20240801 /* uint32 tokens ("llama-3" in data_common.py) */
#define LLMC_TOKENS32_VERSION 7
#define LLMC_TOKENS16_MAX_VOCAB 65536 /* the largest vocabulary whose ids all fit uint16 */
#define LLMC_NTENSORS 16

typedef struct {
    int version; /* LLMC_CKPT_FP32 or LLMC_CKPT_BF16 */
    int max_seq_len, vocab_size, padded_vocab_size, num_layers, num_heads, channels;
} llmc_header;

/* --- checkpoints: reading --- */

/* Reads and validates the header of an llm.c GPT-2 checkpoint: magic, version (3 or 5), every
 * size positive, channels % num_heads == 0, padded_vocab_size >= vocab_size, no overflow, and
 * the file size equal to 1024 + Σ tensor sizes × (4 or 2) bytes. ZC_EIO if the file cannot be
 * opened or read, ZC_EINVAL if it is not a valid checkpoint. */
zc_status llmc_ckpt_read_header(const char *path, llmc_header *h, zc_err *err);

/* Element counts of the 16 tensors, in file order (h must be valid: read or created). */
void llmc_tensor_sizes(const llmc_header *h, size_t sizes[LLMC_NTENSORS]);
/* "wte", "wpe", "ln1w", ..., "lnfb"; NULL if i is not in [0, 16). */
const char *llmc_tensor_name(int i);
/* Total element count (the model's parameter count, with wte padded to Vp rows). */
size_t llmc_num_params(const llmc_header *h);

/* Reads elements [first, first + n) of tensor `tensor` into dst as fp32 (bf16 is widened), with
 * pread: only those bytes are read. h is the file's header from llmc_ckpt_read_header. A tensor
 * index or range outside the tensor is a programmer error (ZC_ASSERT); a file shorter than h
 * says is ZC_EIO. */
zc_status llmc_ckpt_read(const char *path, const llmc_header *h, int tensor, size_t first, size_t n,
                         float *dst, zc_err *err);

/* --- checkpoints: writing (version 3, fp32) --- */

typedef struct {
    zc_durable *out; /* the temporary file, renamed to path by finish */
    llmc_header h;
    size_t written[LLMC_NTENSORS]; /* elements written so far, per tensor */
    char path[4096];               /* the final name */
} llmc_ckpt_writer;

/* Validates h (as read_header does; version must be 3, or 0 meaning 3) and creates the temporary
 * file next to path with the header written. Nothing exists at path until finish succeeds. */
zc_status llmc_ckpt_create(llmc_ckpt_writer *w, const char *path, const llmc_header *h,
                           zc_err *err);
/* Writes src[0..n) as elements [first, first + n) of tensor `tensor` (pwrite at its offset; any
 * order, any pieces). Range outside the tensor: ZC_ASSERT. */
zc_status llmc_ckpt_write(llmc_ckpt_writer *w, int tensor, size_t first, size_t n, const float *src,
                          zc_err *err);
/* Checks that every tensor was written in full (each element once), fsyncs, closes and renames
 * the temporary file to path (then fsyncs the directory). On any error the temporary file is
 * removed and an existing file at path is left untouched. The writer is finished either way. */
zc_status llmc_ckpt_finish(llmc_ckpt_writer *w, zc_err *err);
/* Discards an unfinished writer: closes and removes the temporary file. Safe to call twice. */
void llmc_ckpt_abort(llmc_ckpt_writer *w);

/* --- token files --- */

/* One file of a token stream: its tokens are the stream's [first, first + ntok). */
typedef struct {
    int fd;
    int width; /* bytes per token: 2 (uint16, version 1) or 4 (uint32, version 7) */
    size_t first, ntok;
    char *path; /* for messages */
} llmc_token_shard;

/* A token stream: one token file, or the files a glob pattern matches read as one stream, their
 * concatenation in byte order of their names. A window may span several files (llm.c's loader
 * instead drops each shard's remainder); the stream wraps from the last file's end to the
 * first's start. Every file stays open (one descriptor each) until llmc_tokens_close. */
typedef struct {
    size_t ntok;             /* tokens of all the files */
    int nshards;             /* 0 when closed */
    llmc_token_shard *shard; /* nshards, in stream order */
    char path[512];          /* the path or pattern as given, for messages (truncated) */
} llmc_tokens;

/* Opens a token file, or every file a glob(3) pattern matches (a path with *, ? or [ that is not
 * itself an existing file), sorted by name in byte order; no match is a ZC_EINVAL naming the
 * pattern. Each file is validated: magic and version (either width), 1 <= ntok <= INT32_MAX (a
 * larger size is refused saying to split it into shards) and the file size (1024 + w·ntok
 * bytes). On failure nothing stays open. */
zc_status llmc_tokens_open(const char *path, llmc_tokens *t, zc_err *err);
/* Reads n tokens starting at token `first` modulo ntok of the stream, crossing from one file to
 * the next and wrapping to the start of the first when it runs out (n may exceed ntok). Any
 * token id >= vocab_size (> 0) is a ZC_EINVAL naming the file and the token's position in it. */
zc_status llmc_tokens_read(const llmc_tokens *t, size_t first, size_t n, int *dst, int vocab_size,
                           zc_err *err);
/* Closes every file and frees the list; safe to call twice. */
void llmc_tokens_close(llmc_tokens *t);
/* The bytes per token of the file for a vocabulary of vocab_size tokens: 2 (uint16, version 1)
 * when every id fits, vocab_size <= LLMC_TOKENS16_MAX_VOCAB; else 4 (uint32, version 7). */
int llmc_tokens_width(int vocab_size);
/* Writes tok[0..n) as a token file (1 <= n <= INT32_MAX) of `width` bytes per token through a
 * temporary file, fsync'd and renamed to path: width 2 takes tok as uint16_t[n] (magic 20240520,
 * version 1), width 4 as uint32_t[n] (magic 20240801, version 7); another width is a programmer
 * error. */
zc_status llmc_tokens_write(const char *path, const void *tok, int width, size_t n, zc_err *err);

#endif

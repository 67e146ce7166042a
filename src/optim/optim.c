/* optim.c — Adam(W) and SGD kernels over one shard, plus the squared-norm reduction.
 *
 * Built with -ffp-contract=off (no fused multiply-adds the scalar tail would not also get) and
 * -fno-math-errno (so sqrtf vectorises to the correctly rounded vsqrtps instead of a libm call
 * per element: measured 4–6× faster on the Adam kernel). All constants are rounded to float once,
 * outside the loop, in one helper shared by the fast kernel and its reference, so both do the same
 * float operations in the same order. Threads split the shard into static blocks; elements are
 * independent, so the thread count never changes a bit. Gradients may be 16-bit: each block is
 * widened (exactly) on the thread that updates it, and in mixed precision each updated block is
 * rounded into the 16-bit model copy on that thread while it is in cache (a separate sweep
 * re-read the whole fp32 master from memory: 1.5% of perf's samples in a bf16 GPT-2 124M step).
 * Adam with bf16 gradients and a bf16 copy, mixed precision's usual case, does all three in one
 * loop (adam_block_bf16). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "zeroc/dtype.h"
#include "zeroc/optim.h"
#include "zeroc/simd.h"
#include "zeroc/status.h"

#include "bf16_bits.h"
#include "util/asan_range.h"

#if ZC_SIMD_MULTI
#include <immintrin.h> /* the AVX-512 copy's gathers (optim_kernels.inc) */
#endif

typedef struct {
    float decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, step_size, l2;
} adam_consts;

static adam_consts adam_prepare(const zc_adam_hparams *h)
{
    adam_consts k;
    double bc1 = h->uncorrected ? 1.0 : 1.0 - pow(h->beta1, (double)h->step);
    double bc2 = h->uncorrected ? 1.0 : 1.0 - pow(h->beta2, (double)h->step);
    k.decay = h->decoupled ? (float)(1.0 - h->lr * h->weight_decay) : 1.0f;
    k.l2 = h->decoupled ? 0.0f : (float)h->weight_decay;
    k.b1 = (float)h->beta1;
    k.one_minus_b1 = (float)(1.0 - h->beta1);
    k.b2 = (float)h->beta2;
    k.one_minus_b2 = (float)(1.0 - h->beta2);
    k.bc2_sqrt = (float)sqrt(bc2);
    k.eps = (float)h->eps;
    k.step_size = (float)(h->lr / bc1);
    return k;
}

/* The per-element update, written once: both kernels below inline it. */
ZC_SIMD_INLINE void adam_element(float *p, float g, float *m, float *v, const adam_consts *k)
{
    float w = *p;
    g = g + k->l2 * w;
    w = w * k->decay;
    float mi = *m * k->b1 + k->one_minus_b1 * g;
    float vi = *v * k->b2 + k->one_minus_b2 * (g * g);
    float denom = sqrtf(vi) / k->bc2_sqrt + k->eps;
    *m = mi;
    *v = vi;
    *p = w - k->step_size * (mi / denom);
}

/* The same step on a compact master's element (zc_master_split): weight and remainder joined into
 * fp32, stepped, split back. Returns whether the new bf16 weight is not finite (as
 * nonfinite_16: the weights the model uses). Adam's and AdamW8bit's block loops inline it. */
ZC_SIMD_INLINE int adam_element_split(uint16_t *p16, uint16_t *rem, float g, float *m, float *v,
                                      const adam_consts *k)
{
    float w = master_join_one(*p16, *rem);
    adam_element(&w, g, m, v, k);
    *p16 = bf16_half_away(w);
    *rem = (uint16_t)bits(w);
    return (*p16 & 0x7f80u) == 0x7f80u;
}

/* Elements [lo, hi) of the gradient g (of type gt) as fp32: g itself when it is fp32, else
 * widened (exactly) into buf. */
static const float *grad_block(const void *g, zc_dtype gt, size_t lo, size_t hi, float *buf)
{
    if (gt == ZC_FP32)
        return (const float *)g + lo;
    zc_dtype_widen(gt, (const char *)g + lo * (size_t)zc_dtype_size(gt), buf, hi - lo);
    return buf;
}

/* The ranges an update's kernels touch, checked whole in a sanitizer build (util/asan_range.h):
 * the fp32 weights p, or the compact master rem + p16; the gradient g; the model copy out. */
static void step_ranges(const float *p, const uint16_t *rem, const uint16_t *p16, const void *g,
                        zc_dtype gt, size_t n, zc_dtype ot, const void *out)
{
    zc_asan_write(p, 4 * n);
    zc_asan_write(rem, p ? 0 : 2 * n);
    zc_asan_write(p16, p ? 0 : 2 * n);
    zc_asan_read(g, n * (size_t)zc_dtype_size(gt));
    zc_asan_write(out, out ? n * (size_t)zc_dtype_size(ot) : 0);
}

/* Elements [lo, hi) of the updated weights p rounded into out (of type ot), if there is one. */
static void narrow_block(const float *p, zc_dtype ot, void *out, size_t lo, size_t hi)
{
    if (out)
        zc_dtype_narrow(ot, p + lo, (char *)out + lo * (size_t)zc_dtype_size(ot), hi - lo);
}

/* Elements [lo, hi) of a 16-bit model copy (bf16/fp16) that are inf or NaN: every exponent bit
 * set. A finite fp32 weight past the type's range (fp16: 65504) rounds to inf there. */
static int64_t nonfinite_16(zc_dtype t, const uint16_t *h, size_t lo, size_t hi)
{
    const uint16_t e = t == ZC_BF16 ? 0x7f80u : 0x7c00u;
    int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
    for (size_t i = lo; i < hi; i++)
        bad += (h[i] & e) == e;
    return bad;
}

/* How many of block [lo, hi)'s updated weights are not finite: in the 16-bit copy out when
 * there is one (it is what the model computes with), else the fp32 count the kernel gave. */
static int64_t block_nonfinite(int64_t fp32_bad, zc_dtype ot, const void *out, size_t lo, size_t hi)
{
    return out && zc_dtype_size(ot) == 2 ? nonfinite_16(ot, out, lo, hi) : fp32_bad;
}

typedef struct {
    float lr, mom, wd;
} sgd_consts;

ZC_SIMD_INLINE void sgd_element(float *p, float g, float *buf, const sgd_consts *k)
{
    float d = g + k->wd * *p;
    if (buf) {
        d = *buf * k->mom + d;
        *buf = d;
    }
    *p = *p - k->lr * d;
}

/* AdamW8bit's maps (zeroc/optim.h): values ascending, and the 255 midpoints between
 * neighbours that decide the nearest code. Built once, before the first use, in double and
 * rounded to float, so they depend on nothing but this code. */
static float q8_smap[256], q8_umap[256], q8_sthr[256], q8_uthr[256];
static pthread_once_t q8_once = PTHREAD_ONCE_INIT;
/* Each bucket of floats that share their top 16 bits (sign, exponent, 7 mantissa bits) holds at
 * most one midpoint (checked when built: these maps' midpoints are farther apart than 2^-7 of
 * their value), so a value's code is its bucket's least value's code, plus one if it lies above
 * that midpoint. An entry holds both: the code in its low 8 bits, and above them the split — the
 * least of the value's low 16 bits, counted in the direction the value grows, that lies above
 * the midpoint (65536: none). q8_code then reads one entry and compares two integers: no search
 * (an 8-step binary search was 4.4x the offloaded update's time at 2.2 B parameters), and no
 * second lookup of the midpoint that depends on the first (the previous form: 1.15x this
 * update's time per element, measured).
 *
 * Only the buckets of Q8_ROWS exponents up to 2 in magnitude are kept, per sign (24 KiB a table,
 * within a core's L1 cache; all 65,536 buckets made 256 KiB, gathered from L2): a smaller
 * magnitude is read from the least kept exponent's first bucket, which q8_build checks holds the
 * same entry as every bucket below it (all of them 0's code, no split: these maps' least nonzero
 * midpoint is above 2^-22), and a larger one from the greatest kept bucket, which holds the
 * greatest finite value's code with no split, as every bucket above it (±inf among them) does;
 * a NaN gets code 0 whatever its entry. */
enum {
    Q8_ROWS = 24,                       /* exponents 104..127: magnitudes in [2^-23, 2) */
    Q8_LO = (128 - Q8_ROWS) << 7,       /* the least kept bucket's exponent and mantissa bits */
    Q8_HI = Q8_LO + (Q8_ROWS << 7) - 1, /* the greatest */
    Q8_SIGN = Q8_ROWS << 7,             /* where the negative buckets start */
};
static int32_t q8_sbucket[2 * Q8_SIGN], q8_ubucket[2 * Q8_SIGN];

/* The kept bucket of value bits u (a float's bits), as an index into the tables. */
ZC_SIMD_INLINE uint32_t q8_index(uint32_t u)
{
    uint32_t em = (u >> 16) & 0x7FFF;
    em = em < Q8_LO ? Q8_LO : em > Q8_HI ? Q8_HI : em;
    return (u >> 31) * Q8_SIGN + em - Q8_LO;
}

static int q8_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static uint8_t q8_code_ref(const float *thr, float r);

/* The value of bucket b's entry at ascending index a (0 the least, 0xFFFF the greatest). */
static float q8_bucket_value(uint32_t b, uint32_t a)
{
    const uint32_t bits = b << 16 | (b & 0x8000 ? 0xFFFF - a : a);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Bucket b's entry (see q8_sbucket). */
static int32_t q8_entry(const float *thr, uint32_t b)
{
    /* the bucket's values in ascending order: low bits up for a positive bucket, down for a
     * negative one */
    const float lo = q8_bucket_value(b, 0), hi = q8_bucket_value(b, 0xFFFF);
    if (lo != lo || hi != hi) /* NaNs (q8_code gives them code 0) and ±inf */
        return (lo == -INFINITY || lo != lo ? 0 : q8_code_ref(thr, lo)) | 65536 << 8;
    const int32_t code = q8_code_ref(thr, lo);
    ZC_ASSERT(q8_code_ref(thr, hi) - code <= 1);
    /* the split: the least ascending index whose value lies above the midpoint */
    uint32_t first = 0, past = 65536;
    while (first < past) {
        const uint32_t mid = (first + past) / 2;
        if (q8_bucket_value(b, mid) > thr[code])
            past = mid;
        else
            first = mid + 1;
    }
    return code | (int32_t)first << 8;
}

static void q8_build(void)
{
    int ns = 0, nu = 0;
    for (int i = 0; i < 7; i++) {
        const int sk = (1 << i) + 1, uk = (1 << (i + 1)) + 1; /* points over [0.1, 1] */
        const double scale = pow(10.0, i - 6);
        for (int j = 0; j + 1 < sk; j++) {
            double a = 0.1 + 0.9 * j / (sk - 1), b = 0.1 + 0.9 * (j + 1) / (sk - 1);
            q8_smap[ns++] = (float)(scale * (a + b) / 2);
            /* the smallest negative value gives way to −1 (see zeroc/optim.h) */
            q8_smap[ns++] = i == 0 ? -1.0f : (float)(-scale * (a + b) / 2);
        }
        for (int j = 0; j + 1 < uk; j++) {
            double a = 0.1 + 0.9 * j / (uk - 1), b = 0.1 + 0.9 * (j + 1) / (uk - 1);
            q8_umap[nu++] = (float)(scale * (a + b) / 2);
        }
    }
    q8_smap[ns++] = 0.0f;
    q8_smap[ns++] = 1.0f;
    q8_umap[nu++] = 0.0f;
    q8_umap[nu++] = 1.0f;
    ZC_ASSERT(ns == 256 && nu == 256);
    qsort(q8_smap, 256, sizeof(float), q8_cmp);
    qsort(q8_umap, 256, sizeof(float), q8_cmp);
    for (int c = 0; c < 255; c++) {
        ZC_ASSERT(q8_smap[c] < q8_smap[c + 1] && q8_umap[c] < q8_umap[c + 1]);
        q8_sthr[c] = (float)(((double)q8_smap[c] + q8_smap[c + 1]) / 2);
        q8_uthr[c] = (float)(((double)q8_umap[c] + q8_umap[c + 1]) / 2);
    }
    q8_sthr[255] = q8_uthr[255] = INFINITY; /* past the last midpoint: no value is greater */
    for (int k = 0; k < 2; k++) {
        const float *thr = k ? q8_uthr : q8_sthr;
        int32_t *bucket = k ? q8_ubucket : q8_sbucket;
        for (uint32_t sign = 0; sign < 2; sign++) {
            for (uint32_t em = Q8_LO; em <= Q8_HI; em++)
                bucket[sign * Q8_SIGN + em - Q8_LO] = q8_entry(thr, sign << 15 | em);
            /* the buckets not kept read the nearest kept one: it must hold their entry (NaNs
             * aside, and ±inf, whose entries are the greatest finite bucket's: code 255 / 0) */
            const int32_t least = bucket[sign * Q8_SIGN],
                          most = bucket[sign * Q8_SIGN + Q8_HI - Q8_LO];
            for (uint32_t em = 0; em < Q8_LO; em++)
                ZC_ASSERT(q8_entry(thr, sign << 15 | em) == least);
            for (uint32_t em = Q8_HI + 1; em < 0x7F80; em++)
                ZC_ASSERT(q8_entry(thr, sign << 15 | em) == most);
            ZC_ASSERT((most & 0xFF) == (sign ? 0 : 255) && most >> 8 == 65536);
        }
    }
}

static void q8_init(void)
{
    pthread_once(&q8_once, q8_build);
}

/* The nearest code of r (ties go to the lower code) from its bucket's entry: the code of the
 * bucket's least value, plus one where r's low bits, taken in the direction its value grows, reach
 * the split; the references count the midpoints below r one by one (q8_code_ref). NaN: code 0. */
ZC_SIMD_INLINE int32_t q8_code(const int32_t *bucket, float r)
{
    int32_t bits;
    memcpy(&bits, &r, sizeof bits);
    const int32_t e = bucket[q8_index((uint32_t)bits)];
    const int32_t up = (bits ^ (bits >> 31)) & 0xFFFF; /* a negative value's low bits reversed */
    return ((e & 0xFF) + (up >= e >> 8)) * (int32_t)(r == r); /* arithmetic: no branch */
}

static uint8_t q8_code_ref(const float *thr, float r)
{
    unsigned c = 0;
    for (int j = 0; j < 255; j++)
        c += r > thr[j];
    return (uint8_t)c;
}

/* The per-block loops (adam_block, sgd_block, sum_squares), once per vector level: see
 * optim_kernels.inc and zeroc/simd.h. */
#define ZC_SIMD_KERNELS "optim/optim_kernels.inc"
#include "zeroc/simd_expand.h"

/* Threads split the shard into blocks of BLOCK elements, in one parallel region (none for a
 * single block): a region per small call costs more than the update (measured: 2048-element
 * calls spent a third of a bf16 step in futex and scheduler code). */
enum { BLOCK = 16384 };

/* Adam(W)'s step over n elements, thread block by thread block: on the fp32 weights p, each
 * block rounded into out (of type ot) if there is one; or, p NULL, on the compact master p16 +
 * rem, each block joined into fp32 before the step and split back after it (as adam8_run). With
 * bf16 gradients a block of either runs as one loop (adam_block_bf16 into a bf16 copy,
 * adam_block_split on the compact master). */
static int64_t adam_run(float *restrict p, uint16_t *restrict rem, uint16_t *restrict p16,
                        const void *restrict g, zc_dtype gt, float *restrict m, float *restrict v,
                        size_t n, float gscale, const zc_adam_hparams *h, zc_dtype ot,
                        void *restrict out)
{
    const adam_consts k = adam_prepare(h);
    long nblocks = (long)((n + BLOCK - 1) / BLOCK);
    int64_t bad = 0;
    step_ranges(p, rem, p16, g, gt, n, ot, out);
    zc_asan_write(m, 4 * n);
    zc_asan_write(v, 4 * n);
    int64_t (*const block)(float *, const float *, float *, float *, size_t, size_t, float,
                           const adam_consts *) = ZC_SIMD_SELECT(adam_block);
    int64_t (*const fused)(float *, const uint16_t *, float *, float *, uint16_t *, size_t, size_t,
                           float, const adam_consts *) =
        p && gt == ZC_BF16 && ot == ZC_BF16 && out ? ZC_SIMD_SELECT(adam_block_bf16) : NULL;
    int64_t (*const fused_split)(uint16_t *, uint16_t *, const uint16_t *, float *, float *, size_t,
                                 size_t, float, const adam_consts *) =
        !p && gt == ZC_BF16 ? ZC_SIMD_SELECT(adam_block_split) : NULL;
#pragma omp parallel for schedule(static) reduction(+ : bad) if (nblocks > 1)
    for (long b = 0; b < nblocks; b++) {
        size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        if (fused) {
            bad += fused(p, g, m, v, out, lo, hi, gscale, &k);
            continue;
        }
        if (fused_split) {
            bad += fused_split(rem, p16, g, m, v, lo, hi, gscale, &k);
            continue;
        }
        float buf[BLOCK], joined[BLOCK]; /* a compact master's block, indexed from lo as p is */
        float *w = p ? p : joined - lo;
        if (!p)
            zc_master_join(p16 + lo, rem + lo, hi - lo, joined);
        int64_t nb = block(w, grad_block(g, gt, lo, hi, buf) - lo, m, v, lo, hi, gscale, &k);
        if (p)
            narrow_block(p, ot, out, lo, hi);
        else
            zc_master_split(joined, hi - lo, p16 + lo, rem + lo);
        bad += p ? block_nonfinite(nb, ot, out, lo, hi) : nonfinite_16(ZC_BF16, p16, lo, hi);
    }
    return bad;
}

int64_t zc_adam_update(float *restrict p, const void *restrict g, zc_dtype gt, float *restrict m,
                       float *restrict v, size_t n, float gscale, const zc_adam_hparams *h,
                       zc_dtype ot, void *restrict out)
{
    return adam_run(p, NULL, NULL, g, gt, m, v, n, gscale, h, ot, out);
}

int64_t zc_adam_update_split(uint16_t *restrict rem, uint16_t *restrict p16, const void *restrict g,
                             zc_dtype gt, float *restrict m, float *restrict v, size_t n,
                             float gscale, const zc_adam_hparams *h)
{
    return adam_run(NULL, rem, p16, g, gt, m, v, n, gscale, h, ZC_BF16, NULL);
}

void zc_adam_update_ref(float *p, const float *g, float *m, float *v, size_t n, float gscale,
                        const zc_adam_hparams *h)
{
    const adam_consts k = adam_prepare(h);
    for (size_t i = 0; i < n; i++) {
        volatile float gi = g[i] * gscale; /* volatile: keep the reference scalar */
        adam_element(&p[i], gi, &m[i], &v[i], &k);
    }
}

int64_t zc_sgd_update(float *restrict p, const void *restrict g, zc_dtype gt, float *restrict buf,
                      size_t n, float gscale, const zc_sgd_hparams *h, zc_dtype ot,
                      void *restrict out)
{
    const sgd_consts k = {(float)h->lr, (float)h->momentum, (float)h->weight_decay};
    if (h->momentum == 0.0)
        buf = NULL;
    step_ranges(p, NULL, NULL, g, gt, n, ot, out);
    zc_asan_write(buf, buf ? 4 * n : 0);
    int64_t (*const block)(float *, const float *, float *, size_t, size_t, float,
                           const sgd_consts *) = ZC_SIMD_SELECT(sgd_block);
    long nblocks = (long)((n + BLOCK - 1) / BLOCK);
    int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad) if (nblocks > 1)
    for (long b = 0; b < nblocks; b++) {
        size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        float wide[BLOCK];
        int64_t b = block(p, grad_block(g, gt, lo, hi, wide) - lo, buf, lo, hi, gscale, &k);
        narrow_block(p, ot, out, lo, hi);
        bad += block_nonfinite(b, ot, out, lo, hi);
    }
    return bad;
}

void zc_sgd_update_ref(float *p, const float *g, float *buf, size_t n, float gscale,
                       const zc_sgd_hparams *h)
{
    const sgd_consts k = {(float)h->lr, (float)h->momentum, (float)h->weight_decay};
    if (h->momentum == 0.0)
        buf = NULL;
    for (size_t i = 0; i < n; i++) {
        volatile float gi = g[i] * gscale;
        sgd_element(&p[i], gi, buf ? &buf[i] : NULL, &k);
    }
}

double zc_sum_squares(const float *g, size_t n)
{
    double r;
    zc_asan_read(g, 4 * n);
    ZC_SIMD_DISPATCH_RET(r, sum_squares, g, n);
    return r;
}

double zc_sum_squares_16(const void *g, zc_dtype t, size_t n)
{
    /* Batches of chunks: the threads fill a batch's sums, then one thread adds them in order. */
    enum { K = ZC_SUM_SQUARES_CHUNK, BATCH = 512, PAR_MIN_CHUNKS = 16 };
    const size_t es = (size_t)zc_dtype_size(t);
    const long nchunks = (long)((n + K - 1) / K);
    double sum = 0.0;
    for (long c0 = 0; c0 < nchunks; c0 += BATCH) {
        const long m = nchunks - c0 < BATCH ? nchunks - c0 : BATCH;
        double part[BATCH];
#pragma omp parallel for schedule(static) if (m >= PAR_MIN_CHUNKS)
        for (long j = 0; j < m; j++) {
            size_t lo = (size_t)(c0 + j) * K, k = n - lo < K ? n - lo : K;
            float x[K];
            zc_dtype_widen(t, (const char *)g + lo * es, x, k);
            part[j] = zc_sum_squares(x, k);
        }
        for (long j = 0; j < m; j++)
            sum += part[j];
    }
    return sum;
}

/* ---------- AdamW8bit ---------- */

const float *zc_q8_map(bool is_signed)
{
    q8_init();
    return is_signed ? q8_smap : q8_umap;
}

uint8_t zc_q8_zero_code(bool is_signed)
{
    q8_init();
    return q8_code_ref(is_signed ? q8_sthr : q8_uthr, 0.0f);
}

void zc_q8_quantize(const float *x, size_t n, bool is_signed, uint8_t *q, float *scales)
{
    q8_init();
    const int32_t *bucket = is_signed ? q8_sbucket : q8_ubucket;
    for (size_t lo = 0; lo < n; lo += ZC_Q8_BLOCK) {
        size_t hi = lo + ZC_Q8_BLOCK < n ? lo + ZC_Q8_BLOCK : n;
        float a = 0.0f;
        for (size_t i = lo; i < hi; i++)
            a = fmaxf(a, fabsf(x[i]));
        scales[lo / ZC_Q8_BLOCK] = a;
        for (size_t i = lo; i < hi; i++)
            q[i] = (uint8_t)q8_code(bucket, a > 0.0f ? x[i] / a : 0.0f);
    }
}

void zc_q8_dequantize(const uint8_t *q, const float *scales, bool is_signed, size_t first, size_t n,
                      float *x)
{
    const float *map = zc_q8_map(is_signed);
    for (size_t i = first; i < first + n; i++)
        x[i - first] = map[q[i]] * scales[i / ZC_Q8_BLOCK];
}

/* AdamW8bit's step over n elements, thread block by thread block: on the fp32 weights p, each
 * block rounded into out (of type ot) if there is one; or, p NULL, on the compact master p16 +
 * rem, each block joined into fp32 before the step and split back after it. */
static int64_t adam8_run(float *restrict p, uint16_t *restrict rem, uint16_t *restrict p16,
                         const void *restrict g, zc_dtype gt, uint8_t *restrict mq,
                         float *restrict ms, uint8_t *restrict vq, float *restrict vs, size_t n,
                         float gscale, const zc_adam_hparams *h, zc_dtype ot, void *restrict out)
{
    _Static_assert(BLOCK % ZC_Q8_BLOCK == 0, "threads' blocks hold whole quantization blocks");
    q8_init();
    const adam_consts k = adam_prepare(h);
    long nblocks = (long)((n + BLOCK - 1) / BLOCK);
    int64_t bad = 0;
    step_ranges(p, rem, p16, g, gt, n, ot, out);
    zc_asan_write(mq, n);
    zc_asan_write(vq, n);
    zc_asan_write(ms, 4 * ((n + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK));
    zc_asan_write(vs, 4 * ((n + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK));
    int64_t (*const qblock)(float *, uint16_t *, uint16_t *, const float *, uint8_t *, float *,
                            uint8_t *, float *, size_t, float, const adam_consts *) =
        ZC_SIMD_SELECT(adam8_block);
#pragma omp parallel for schedule(static) reduction(+ : bad) if (nblocks > 1)
    for (long b = 0; b < nblocks; b++) {
        size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        float buf[BLOCK];
        const float *gb = grad_block(g, gt, lo, hi, buf) - lo;
        int64_t nb = 0;
        for (size_t q = lo; q < hi; q += ZC_Q8_BLOCK) {
            size_t len = hi - q < ZC_Q8_BLOCK ? hi - q : ZC_Q8_BLOCK;
            nb += qblock(p ? p + q : NULL, p ? NULL : p16 + q, p ? NULL : rem + q, gb + q, mq + q,
                         ms + q / ZC_Q8_BLOCK, vq + q, vs + q / ZC_Q8_BLOCK, len, gscale, &k);
        }
        if (p)
            narrow_block(p, ot, out, lo, hi);
        bad += p ? block_nonfinite(nb, ot, out, lo, hi) : nb;
    }
    return bad;
}

int64_t zc_adam8_update(float *restrict p, const void *restrict g, zc_dtype gt,
                        uint8_t *restrict mq, float *restrict ms, uint8_t *restrict vq,
                        float *restrict vs, size_t n, float gscale, const zc_adam_hparams *h,
                        zc_dtype ot, void *restrict out)
{
    return adam8_run(p, NULL, NULL, g, gt, mq, ms, vq, vs, n, gscale, h, ot, out);
}

void zc_master_split(const float *w, size_t n, uint16_t *p16, uint16_t *rem)
{
    if (p16) {
#pragma omp simd
        for (size_t i = 0; i < n; i++)
            p16[i] = bf16_half_away(w[i]);
    }
    if (rem) {
#pragma omp simd
        for (size_t i = 0; i < n; i++)
            rem[i] = (uint16_t)bits(w[i]);
    }
}

void zc_master_join(const uint16_t *p16, const uint16_t *rem, size_t n, float *w)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        w[i] = master_join_one(p16[i], rem[i]);
}

int64_t zc_adam8_update_split(uint16_t *restrict rem, uint16_t *restrict p16,
                              const void *restrict g, zc_dtype gt, uint8_t *restrict mq,
                              float *restrict ms, uint8_t *restrict vq, float *restrict vs,
                              size_t n, float gscale, const zc_adam_hparams *h)
{
    return adam8_run(NULL, rem, p16, g, gt, mq, ms, vq, vs, n, gscale, h, ZC_BF16, NULL);
}

void zc_adam8_update_ref(float *p, const float *g, uint8_t *mq, float *ms, uint8_t *vq, float *vs,
                         size_t n, float gscale, const zc_adam_hparams *h)
{
    q8_init();
    const adam_consts k = adam_prepare(h);
    for (size_t lo = 0; lo < n; lo += ZC_Q8_BLOCK) {
        size_t hi = lo + ZC_Q8_BLOCK < n ? lo + ZC_Q8_BLOCK : n, s = lo / ZC_Q8_BLOCK;
        float mf[ZC_Q8_BLOCK], vf[ZC_Q8_BLOCK], mmax = 0.0f, vmax = 0.0f;
        for (size_t i = lo; i < hi; i++) {
            volatile float gi = g[i] * gscale; /* volatile: keep the reference scalar */
            float mi = q8_smap[mq[i]] * ms[s], vi = q8_umap[vq[i]] * vs[s];
            adam_element(&p[i], gi, &mi, &vi, &k);
            mf[i - lo] = mi;
            vf[i - lo] = vi;
            if (fabsf(mi) > mmax)
                mmax = fabsf(mi);
            if (fabsf(vi) > vmax)
                vmax = fabsf(vi);
        }
        ms[s] = mmax;
        vs[s] = vmax;
        for (size_t i = lo; i < hi; i++) {
            mq[i] = q8_code_ref(q8_sthr, mmax > 0.0f ? mf[i - lo] / mmax : 0.0f);
            vq[i] = q8_code_ref(q8_uthr, vmax > 0.0f ? vf[i - lo] / vmax : 0.0f);
        }
    }
}

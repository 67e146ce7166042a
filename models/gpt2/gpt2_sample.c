/* gpt2_sample.c — autoregressive sampling (gpt2_sample.h). The logits of each new token come
 * from the key/value-cached decoder (gpt2_decode.h: the context is the last T tokens, as the
 * ordinary forward sees them, on one row); the token is drawn from them over the real
 * vocabulary, with the top-k cutoff found by a selection in O(V). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt2/gpt2_decode.h"
#include "models/gpt2/gpt2_sample.h"
#include "zeroc/rng.h"

/* The k-th largest of a[0..n) (1 ≤ k ≤ n; duplicates counted: the value at index k−1 of a sorted
 * in descending order), reordering a: quickselect with a three-way partition around a median of
 * three, expected O(n). a holds no NaN. */
static double kth_largest(double *a, int n, int k)
{
    int lo = 0, hi = n - 1;
    const int want = k - 1;
    while (lo < hi) {
        double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi];
        double p = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        int lt = lo, i = lo, gt = hi; /* [lo,lt) > p, [lt,i) == p, (gt,hi] < p */
        while (i <= gt) {
            double v = a[i];
            if (v > p) {
                a[i++] = a[lt];
                a[lt++] = v;
            } else if (v < p) {
                a[i] = a[gt];
                a[gt--] = v;
            } else {
                i++;
            }
        }
        if (want < lt)
            hi = lt - 1;
        else if (want > gt)
            lo = gt + 1;
        else
            return p;
    }
    return a[want];
}

/* Draws from softmax(logits[0..V) / temperature), restricted to the logits ≥ the k-th largest
 * (top_k; ties with it included). */
static int draw(const float *logits, int V, const gpt2_sampling *s, uint64_t index, double *scratch)
{
    double maxv = -INFINITY;
    for (int i = 0; i < V; i++)
        maxv = fmax(maxv, logits[i]);
    double cutoff = -INFINITY;
    if (s->top_k > 0 && s->top_k < V) {
        /* the k-th largest logit: a selection over a copy (a NaN logit, which no cutoff
         * admits, counts as the smallest) */
        for (int i = 0; i < V; i++)
            scratch[i] = isnan(logits[i]) ? -INFINITY : logits[i];
        cutoff = kth_largest(scratch, V, s->top_k);
    }
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        scratch[i] = logits[i] >= cutoff ? exp((logits[i] - maxv) / s->temperature) : 0.0;
        sum += scratch[i];
    }
    double u = zc_rng_uniform(s->seed, 0x53414d504c45ULL /* "SAMPLE" */, index) * sum, acc = 0.0;
    int last = 0;
    for (int i = 0; i < V; i++) {
        if (scratch[i] == 0.0)
            continue;
        last = i;
        acc += scratch[i];
        if (u < acc)
            return i;
    }
    return last;
}

zc_status gpt2_generate(gpt2_model *m, const int *prompt, int nprompt, int length,
                        const gpt2_sampling *s, int *out, zc_err *err)
{
    int n;
    return gpt2_generate_until(m, prompt, nprompt, length, s, -1, out, &n, err);
}

zc_status gpt2_generate_until(gpt2_model *m, const int *prompt, int nprompt, int length,
                              const gpt2_sampling *s, int stop, int *out, int *ngen, zc_err *err)
{
    *ngen = 0;
    const gpt2_config *c = gpt2_get_config(m);
    if (nprompt < 1 || length < 0 || length > GPT2_MAX_GENERATE || nprompt > INT_MAX - length ||
        !(s->temperature > 0.0f) || !isfinite(s->temperature) || s->top_k < 0)
        return zc_err_set(err, ZC_EINVAL,
                          "sample: need a prompt of >= 1 token, length in [0, %d], a finite "
                          "temperature > 0 and top-k >= 0",
                          GPT2_MAX_GENERATE);
    int total = nprompt + length;
    int *seq = malloc((size_t)total * sizeof(int));
    double *scratch = malloc((size_t)c->vocab_size * sizeof(double));
    gpt2_decoder *d = NULL;
    zc_status st = ZC_OK;
    if (!seq || !scratch)
        st = zc_err_set(err, ZC_ENOMEM, "sample: out of memory");
    for (int i = 0; i < nprompt && !st; i++)
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            st = zc_err_set(err, ZC_EINVAL,
                            "sample: prompt token %d at %d is outside the "
                            "vocabulary [0, %d)",
                            prompt[i], i, c->vocab_size);
    if (!st)
        memcpy(seq, prompt, (size_t)nprompt * sizeof(int));
    if (!st && length > 0)
        st = gpt2_decoder_create(&d, m, err);
    for (int t = nprompt; t < total && !st; t++) {
        const float *logits;
        if ((st = gpt2_decoder_logits(d, seq, t, &logits, err)))
            break;
        seq[t] = draw(logits, c->vocab_size, s, (uint64_t)t, scratch);
        out[t - nprompt] = seq[t];
        *ngen = t - nprompt + 1;
        if (seq[t] == stop) /* every rank drew the same token: all stop here */
            break;
    }
    gpt2_decoder_destroy(d);
    free(seq);
    free(scratch);
    return st;
}

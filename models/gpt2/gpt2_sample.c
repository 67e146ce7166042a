/* gpt2_sample.c — autoregressive sampling (gpt2_sample.h). Each new token runs the model's
 * ordinary (B,T) forward over the last T tokens (every batch row the same; causal attention
 * makes positions past the context irrelevant) and samples from position t−1's logits over the
 * real vocabulary. Simple rather than fast: no key/value cache. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt2/gpt2_sample.h"
#include "zeroc/rng.h"

/* Draws from softmax(logits[0..V) / temperature), restricted to the top_k largest. */
static int draw(const float *logits, int V, const gpt2_sampling *s, uint64_t index, double *scratch)
{
    double maxv = -INFINITY;
    for (int i = 0; i < V; i++)
        maxv = fmax(maxv, logits[i]);
    double cutoff = -INFINITY;
    if (s->top_k > 0 && s->top_k < V) {
        /* the k-th largest logit: partial selection over a copy */
        for (int i = 0; i < V; i++)
            scratch[i] = logits[i];
        for (int k = 0; k < s->top_k; k++) {
            int best = k;
            for (int i = k + 1; i < V; i++)
                if (scratch[i] > scratch[best])
                    best = i;
            double t = scratch[k];
            scratch[k] = scratch[best];
            scratch[best] = t;
        }
        cutoff = scratch[s->top_k - 1];
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
    const gpt2_config *c = gpt2_get_config(m);
    int B, T;
    gpt2_batch_shape(m, &B, &T);
    if (nprompt < 1 || length < 0 || length > GPT2_MAX_GENERATE || nprompt > INT_MAX - length ||
        !(s->temperature > 0.0f) || !isfinite(s->temperature) || s->top_k < 0)
        return zc_err_set(err, ZC_EINVAL,
                          "sample: need a prompt of >= 1 token, length in [0, %d], a finite "
                          "temperature > 0 and top-k >= 0",
                          GPT2_MAX_GENERATE);
    int total = nprompt + length;
    int *seq = malloc((size_t)total * sizeof(int)), *batch = calloc((size_t)B * T, sizeof(int));
    double *scratch = malloc((size_t)c->vocab_size * sizeof(double));
    zc_status st = ZC_OK;
    if (!seq || !batch || !scratch)
        st = zc_err_set(err, ZC_ENOMEM, "sample: out of memory");
    for (int i = 0; i < nprompt && !st; i++)
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            st = zc_err_set(err, ZC_EINVAL,
                            "sample: prompt token %d at %d is outside the "
                            "vocabulary [0, %d)",
                            prompt[i], i, c->vocab_size);
    if (!st)
        memcpy(seq, prompt, (size_t)nprompt * sizeof(int));
    for (int t = nprompt; t < total && !st; t++) {
        int start = t > T ? t - T : 0, n = t - start;
        for (int b = 0; b < B; b++) {
            memcpy(batch + (size_t)b * T, seq + start, (size_t)n * sizeof(int));
            memset(batch + (size_t)b * T + n, 0, (size_t)(T - n) * sizeof(int));
        }
        if ((st = gpt2_forward(m, batch, NULL, NULL, err)))
            break;
        const float *logits = gpt2_logits(m) + (size_t)(n - 1) * c->padded_vocab_size;
        seq[t] = draw(logits, c->vocab_size, s, (uint64_t)t, scratch);
        out[t - nprompt] = seq[t];
    }
    free(seq);
    free(batch);
    free(scratch);
    return st;
}

/* plot.c — `zeroc plot REPORT.json [REPORT.json ...] [--out FILE.svg]`: the runs' `--report`
 * files drawn side by side as one SVG of five panels — the training loss with the validation
 * losses, tokens per second (steps per second for a model without tokens), the gradient norm,
 * the learning rate, and each rank's memory — the way a run is looked at rather than read.
 *
 * Step-to-step noise hides a trend (tokens/s swings with the machine's load, the loss with the
 * batch), so the loss, rate and gradient norm are drawn twice: the raw values faint (class "loss",
 * "rate", "grad_norm": every point the report's) and over them TensorBoard's smoothing, a
 * debiased exponential moving average (class "...-smooth", its weight in data-smoothing:
 * 1 - 4/steps, from 0 to 0.95, so a run of any length shows about the same detail; a weight of 0
 * draws no second line). Each run is named in the legend by what it ran — the report's model,
 * ZeRO stage, dtype and ranks — rather than by its file name (kept as the legend's <title>, and
 * added to the text when two runs would read the same); a report without those keys is named by
 * its file.
 *
 * No MPI and no library beyond cJSON: the SVG is written by hand. Every panel's <g> carries its
 * data range and plot area (data-x0, data-x1, data-y0, data-y1; data-px, data-py, data-pw,
 * data-ph) so a reader — the test — can map any point back to the value it shows.
 *
 * Any finite numbers draw: an axis is rounded out to round steps from half its span and stops at
 * ±DBL_MAX, and a point is placed from halves when the axis spans more than a double holds, so a
 * loss of 1.7e308 beside one of -1e308 neither overflows to inf/NaN nor loops over ticks. A flat
 * range (max - min within 1e-12 of its largest magnitude, or under 1e-300) is widened to ± half
 * that magnitude around its middle (±0.5 when the magnitude too is under 1e-300: 0, -0,
 * denormals). A step_ms that is not positive, or so small that the rate overflows, is refused. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/output_paths.h"
#include "cli/svg.h"
#include "cli/units.h"
#include "zeroc/durable.h"
#include "zeroc/status.h"

#define MAX_RUNS 8
enum { MEM_PARAMS, MEM_GRADS, MEM_OPTIMIZER, MEM_WORKING, MEM_ACTIVATIONS, MEM_NCAT };
static const char *const mem_keys[MEM_NCAT] = {"params", "grads", "optimizer", "working_peak",
                                               "activations_peak"};
static const char *const mem_names[MEM_NCAT] = {"params", "grads", "optimizer", "working (peak)",
                                                "activations (peak)"};
static const char *const mem_colour[MEM_NCAT] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                 "#59a14f"};
static const char *const run_colour[MAX_RUNS] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                 "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

typedef struct {
    const char *path;
    int first, steps, nranks;
    double *loss, *val, *ms, *gnorm, *lr; /* steps each; NaN where absent */
    double tokens_per_step;
    char label[256]; /* "gpt2 · ZeRO-3 · fp32 · 2 ranks", or empty: the file names the run */
    double mem[64][MEM_NCAT + 1]; /* per rank (at most 64 drawn): categories, then peak RSS */
} run;

static void run_free(run *r)
{
    free(r->loss), free(r->val), free(r->ms), free(r->gnorm), free(r->lr);
}

/* report[key] as `steps` numbers (null → NaN when nullable). */
static zc_status series(const cJSON *root, const char *path, const char *key, int steps,
                        bool nullable, double **out, zc_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!a && nullable) { /* a report from before the key existed */
        *out = malloc((size_t)steps * sizeof(double));
        for (int i = 0; *out && i < steps; i++)
            (*out)[i] = NAN;
        return *out ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    }
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != steps)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: \"%s\" must be an array of %d numbers (one per "
                          "step)",
                          path, key, steps);
    *out = malloc((size_t)steps * sizeof(double));
    if (!*out)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int i = 0; i < steps; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (cJSON_IsNumber(v) && isfinite(v->valuedouble))
            (*out)[i] = v->valuedouble;
        else if (cJSON_IsNull(v) && nullable)
            (*out)[i] = NAN;
        else
            return cJSON_IsNumber(v)
                       ? zc_err_set(err, ZC_EINVAL, "%s: \"%s\"[%d] is %g, not a finite number",
                                    path, key, i, v->valuedouble)
                       : zc_err_set(err, ZC_EINVAL, "%s: \"%s\"[%d] is not a finite number", path,
                                    key, i);
    }
    return ZC_OK;
}

/* o[key], a number in [lo, hi] (whole: a whole number). */
static zc_status number(const cJSON *o, const char *path, const char *key, double lo, double hi,
                        bool whole, double *out, zc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        (whole && v->valuedouble != floor(v->valuedouble)))
        return zc_err_set(err, ZC_EINVAL, "%s: \"%s\" must be a %s in [%g, %g]", path, key,
                          whole ? "whole number" : "number", lo, hi);
    *out = v->valuedouble;
    return ZC_OK;
}

static zc_status read_run(const char *path, run *r, zc_err *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    /* a regular file only, opened without blocking: a FIFO hung the plot, and a directory opens
     * (and "measured" LONG_MAX bytes) */
    zc_err why = {0};
    int fd;
    int64_t size;
    zc_status ost = zc_open_regular(path, &fd, &size, &why);
    if (ost == ZC_EIO)
        return zc_err_set(err, ZC_EIO, "cannot read report '%s': %m", path);
    if (ost)
        return zc_err_set(err, ZC_EINVAL, "cannot read report: %s", why.msg);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return zc_err_set(err, ZC_EIO, "cannot read report '%s': %m", path);
    }
    size_t n = (size_t)size;
    char *text = size < (64l << 20) ? malloc(n + 1) : NULL;
    size_t got = text ? fread(text, 1, n, f) : 0;
    fclose(f);
    if (!text || got != n) {
        free(text);
        return zc_err_set(err, ZC_EINVAL, "%s: not a readable report (%lld bytes)", path,
                          (long long)size);
    }
    text[n] = 0;
    cJSON *root = cJSON_Parse(text);
    free(text);
    zc_status st = cJSON_IsObject(root) ? ZC_OK
                                        : zc_err_set(err, ZC_EINVAL,
                                                     "%s: not JSON (a `zeroc "
                                                     "train --report` file?)",
                                                     path);
    double steps = 0, first = 0, tps = 0;
    if (!st)
        st = number(root, path, "steps", 1, 1e8, true, &steps, err);
    if (!st)
        st = number(root, path, "first_step", 0, 1e9, true, &first, err);
    if (!st && cJSON_GetObjectItemCaseSensitive(root, "tokens_per_step")) /* language models */
        st = number(root, path, "tokens_per_step", 0, 1e18, false, &tps, err);
    r->steps = (int)steps, r->first = (int)first, r->tokens_per_step = tps;
    if (!st)
        st = series(root, path, "loss", r->steps, false, &r->loss, err);
    if (!st)
        st = series(root, path, "step_ms", r->steps, false, &r->ms, err);
    for (int i = 0; !st && i < r->steps; i++) /* the rate divides by it */
        if (!(r->ms[i] > 0))
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: \"step_ms\"[%d] is %g: expected a positive number of "
                            "milliseconds",
                            path, i, r->ms[i]);
    if (!st)
        st = series(root, path, "grad_norm", r->steps, true, &r->gnorm, err);
    if (!st)
        st = series(root, path, "val_loss", r->steps, true, &r->val, err);
    if (!st)
        st = series(root, path, "lr", r->steps, true, &r->lr, err);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model"),
                *stage = cJSON_GetObjectItemCaseSensitive(root, "stage"),
                *dtype = cJSON_GetObjectItemCaseSensitive(root, "dtype"),
                *world = cJSON_GetObjectItemCaseSensitive(root, "world_size");
    if (!st && cJSON_IsString(model) && cJSON_IsNumber(stage) && cJSON_IsString(dtype)) {
        int len = snprintf(r->label, sizeof r->label, "%.100s \xc2\xb7 ZeRO-%g \xc2\xb7 %.40s",
                           model->valuestring, stage->valuedouble, dtype->valuestring);
        if (cJSON_IsNumber(world) && len > 0 && len < (int)sizeof r->label)
            snprintf(r->label + len, sizeof r->label - (size_t)len, " \xc2\xb7 %g rank%s",
                     world->valuedouble, world->valuedouble == 1 ? "" : "s");
    }
    const cJSON *ranks =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "memory"), "ranks");
    if (!st && (!cJSON_IsArray(ranks) || cJSON_GetArraySize(ranks) < 1))
        st = zc_err_set(err, ZC_EINVAL, "%s: \"memory\".\"ranks\" must be a non-empty array", path);
    r->nranks = st ? 0 : cJSON_GetArraySize(ranks);
    if (r->nranks > 64)
        r->nranks = 64;
    for (int k = 0; !st && k < r->nranks; k++) {
        const cJSON *o = cJSON_GetArrayItem(ranks, k);
        char where[4200];
        snprintf(where, sizeof where, "%s: memory.ranks[%d]", path, k);
        for (int c = 0; !st && c <= MEM_NCAT; c++)
            st = number(o, where, c < MEM_NCAT ? mem_keys[c] : "peak_rss", 0, 1e18, false,
                        &r->mem[k][c], err);
    }
    cJSON_Delete(root);
    if (st)
        run_free(r);
    return st;
}

typedef struct {
    double px, py, pw, ph; /* plot area, pixels */
    double x0, x1, y0, y1; /* data range */
} panel;

/* (v - a) / (b - a) for a <= v <= b, a < b: from halves when b - a is beyond a double. */
static double frac(double v, double a, double b)
{
    return isfinite(b - a) ? (v - a) / (b - a) : (v / 2 - a / 2) / (b / 2 - a / 2);
}
static double sx(const panel *p, double x)
{
    return p->px + frac(x, p->x0, p->x1) * p->pw;
}
static double sy(const panel *p, double y)
{
    return p->py + p->ph - frac(y, p->y0, p->y1) * p->ph;
}

/* The y axis over the finite values [*lo, *hi]: a flat range widened (the file's comment), then
 * rounded out to whole steps, stopping at ±DBL_MAX. */
static double y_axis(double *lo, double *hi)
{
    double m = fmax(fabs(*lo), fabs(*hi)), span = *hi - *lo; /* inf: huge, opposite signs */
    if (span <= 1e-12 * m || span < 1e-300) {
        double mid = *lo / 2 + *hi / 2, pad = m >= 1e-300 ? m / 2 : 0.5;
        *lo = fmax(mid - pad, -DBL_MAX), *hi = fmin(mid + pad, DBL_MAX);
    }
    double step = svg_nice_step(*lo, *hi);
    *lo = fmax(floor(*lo / step) * step, -DBL_MAX), *hi = fmin(ceil(*hi / step) * step, DBL_MAX);
    return step;
}

/* The multiples of step in [lo, hi] (step from svg_nice_step: at most about ten), into t. */
static int ticks(double lo, double hi, double step, double t[static 32])
{
    double k0 = ceil(lo / step - 1e-6), k1 = floor(hi / step + 1e-6);
    int n = 0;
    for (int i = 0; i <= k1 - k0 && n < 32; i++) {
        double v = (k0 + i) * step + 0.0; /* + 0.0: never a "-0" label */
        if (isfinite(v))
            t[n++] = v;
    }
    return n;
}

/* Opens a panel: its group with the mapping, frame, grid, tick labels and title. */
static void panel_open(FILE *f, const char *id, const char *title, const char *xlabel, panel *p)
{
    double ys = y_axis(&p->y0, &p->y1), xs = svg_nice_step(p->x0, p->x1), t[32];
    fprintf(f,
            "<g id=\"%s\" data-x0=\"%.17g\" data-x1=\"%.17g\" data-y0=\"%.17g\" data-y1=\"%.17g\" "
            "data-px=\"%.2f\" data-py=\"%.2f\" data-pw=\"%.2f\" data-ph=\"%.2f\">\n"
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\">%s</text>\n",
            id, p->x0, p->x1, p->y0, p->y1, p->px, p->py, p->pw, p->ph, p->px + p->pw / 2,
            p->py - 10, title);
    for (int i = 0, n = ticks(p->y0, p->y1, ys, t); i < n; i++)
        fprintf(f,
                "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%g</text>\n",
                p->px, sy(p, t[i]), p->px + p->pw, sy(p, t[i]), p->px - 6, sy(p, t[i]) + 4, t[i]);
    for (int i = 0, n = xlabel ? ticks(p->x0, p->x1, xs, t) : 0; i < n; i++)
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%g</text>\n",
                sx(p, t[i]), p->py + p->ph + 16, t[i]);
    fprintf(f,
            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" "
            "stroke=\"black\"/>\n",
            p->px, p->py, p->pw, p->ph);
    if (xlabel)
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">%s</text>\n",
                p->px + p->pw / 2, p->py + p->ph + 34, xlabel);
}

/* The smoothing weight of a run of n steps (the file's comment). */
static double smoothing(int n)
{
    return fmin(0.95, fmax(0.0, 1.0 - 4.0 / n));
}

/* TensorBoard's debiased exponential moving average of the finite values of v[0..n) into out
 * (NaN where v is), with weight w; kept in halves and within the values seen so far, so ±DBL_MAX
 * neither overflows nor rounds past its inputs. */
static void smooth(const double *v, int n, double w, double *out)
{
    double last = 0, pow_w = 1, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            out[i] = NAN;
            continue;
        }
        lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
        last = last * w + (1 - w) * (v[i] / 2);
        pow_w *= w;
        out[i] = fmin(fmax(last / (1 - pow_w) * 2, lo), hi);
    }
}

/* One polyline per run over the finite values of v (x = the step's number, 1-based); with
 * smoothed, drawn faint under its smoothed line. */
static void lines(FILE *f, const panel *p, const run *runs, int nruns, double *const *v,
                  const char *kind, bool dots, bool smoothed)
{
    for (int k = 0; k < nruns; k++) {
        const run *r = &runs[k];
        double w = smoothed ? smoothing(r->steps) : 0;
        fprintf(f,
                "<polyline class=\"%s\" data-run=\"%d\" fill=\"none\" stroke=\"%s\" "
                "stroke-width=\"1.5\"%s%s points=\"",
                kind, k, run_colour[k], dots ? " stroke-dasharray=\"4,3\"" : "",
                w > 0 ? " stroke-opacity=\"0.25\"" : "");
        for (int i = 0; i < r->steps; i++)
            if (isfinite(v[k][i]))
                fprintf(f, "%.2f,%.2f ", sx(p, r->first + i + 1), sy(p, v[k][i]));
        fprintf(f, "\"/>\n");
        double *s = w > 0 ? malloc(sizeof(double) * (size_t)r->steps) : NULL;
        if (s) { /* out of memory: the raw line alone */
            smooth(v[k], r->steps, w, s);
            fprintf(f,
                    "<polyline class=\"%s-smooth\" data-run=\"%d\" data-smoothing=\"%.17g\" "
                    "fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                    kind, k, w, run_colour[k]);
            for (int i = 0; i < r->steps; i++)
                if (isfinite(s[i]))
                    fprintf(f, "%.2f,%.2f ", sx(p, r->first + i + 1), sy(p, s[i]));
            fprintf(f, "\"/>\n");
            free(s);
        }
        for (int i = 0; dots && i < r->steps; i++)
            if (isfinite(v[k][i]))
                fprintf(f,
                        "<circle class=\"%s-point\" data-run=\"%d\" cx=\"%.2f\" cy=\"%.2f\" "
                        "r=\"3.5\" fill=\"%s\"/>\n",
                        kind, k, sx(p, r->first + i + 1), sy(p, v[k][i]), run_colour[k]);
    }
}

static void range(const run *runs, int nruns, double *const *v, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (int k = 0; k < nruns; k++)
        for (int i = 0; i < runs[k].steps; i++)
            if (isfinite(v[k][i]))
                *lo = fmin(*lo, v[k][i]), *hi = fmax(*hi, v[k][i]);
    if (!isfinite(*lo))
        *lo = 0, *hi = 1;
}

static zc_status write_svg(const char *out, const run *runs, int nruns, zc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len); /* then written durably, whole */
    if (!f)
        return zc_err_set(err, ZC_ENOMEM, "out of memory drawing %s", out);
    const double W = 1100, H = 1200, cw = W / 2, ch = (H - 60) / 3;
    double *loss[MAX_RUNS] = {0}, *val[MAX_RUNS] = {0}, *rate[MAX_RUNS] = {0}, *gn[MAX_RUNS] = {0},
           *lr[MAX_RUNS] = {0};
    int xmin = 1 << 30, xmax = 0, lm_tokens = 0;
    for (int k = 0; k < nruns; k++) {
        const run *r = &runs[k];
        loss[k] = r->loss, val[k] = r->val, gn[k] = r->gnorm, lr[k] = r->lr;
        xmin = r->first + 1 < xmin ? r->first + 1 : xmin;
        xmax = r->first + r->steps > xmax ? r->first + r->steps : xmax;
        lm_tokens += r->tokens_per_step > 0;
    }
    if (xmax <= xmin)
        xmax = xmin + 1;
    bool oom = false;
    for (int k = 0; k < nruns; k++) { /* tokens (or steps) per second */
        rate[k] = malloc(sizeof(double) * (size_t)runs[k].steps);
        oom |= !rate[k];
        for (int i = 0; rate[k] && i < runs[k].steps; i++)
            rate[k][i] =
                (lm_tokens == nruns ? runs[k].tokens_per_step : 1.0) / (runs[k].ms[i] / 1e3);
    }
    zc_status st = oom ? zc_err_set(err, ZC_ENOMEM, "out of memory drawing %s", out) : ZC_OK;
    for (int k = 0; !st && k < nruns; k++)
        for (int i = 0; !st && i < runs[k].steps; i++)
            if (!isfinite(rate[k][i]))
                st = zc_err_set(err, ZC_EINVAL,
                                "%s: \"step_ms\"[%d] is %g: too small, the rate it gives "
                                "is beyond a double",
                                runs[k].path, i, runs[k].ms[i]);
    if (st) {
        for (int k = 0; k < nruns; k++)
            free(rate[k]);
        fclose(f);
        free(text);
        return st;
    }
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H);
    /* legend: one line per run, named by what it ran (the file's comment) */
    for (int k = 0; k < nruns; k++) {
        bool same = false;
        for (int j = 0; j < nruns; j++)
            same |= j != k && runs[k].label[0] && !strcmp(runs[k].label, runs[j].label);
        fprintf(f, "<g class=\"legend\" data-run=\"%d\"><title>", k);
        svg_text(f, runs[k].path);
        fprintf(f,
                "</title><line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" "
                "stroke=\"%s\" stroke-width=\"3\"/><text x=\"%.0f\" y=\"%d\">",
                20.0 + 270 * (k % 4), 18 + 16 * (k / 4), 44.0 + 270 * (k % 4), 18 + 16 * (k / 4),
                run_colour[k], 50.0 + 270 * (k % 4), 22 + 16 * (k / 4));
        svg_text(f, runs[k].label[0] ? runs[k].label : runs[k].path);
        if (same) {
            fprintf(f, " (");
            svg_text(f, runs[k].path);
            fprintf(f, ")");
        }
        fprintf(f, "</text></g>\n");
    }
    panel p;
    double lo, hi, lo2, hi2;
    range(runs, nruns, loss, &lo, &hi);
    range(runs, nruns, val, &lo2, &hi2);
    bool any_val = false;
    for (int k = 0; k < nruns; k++)
        for (int i = 0; i < runs[k].steps; i++)
            any_val |= isfinite(val[k][i]);
    if (any_val)
        lo = fmin(lo, lo2), hi = fmax(hi, hi2);
    p = (panel){70, 60 + 40, cw - 100, ch - 90, xmin, xmax, lo, hi};
    panel_open(f, "loss", any_val ? "loss (line: training, dots: validation)" : "training loss",
               "step", &p);
    lines(f, &p, runs, nruns, loss, "loss", false, true);
    if (any_val)
        lines(f, &p, runs, nruns, val, "val", true, false);
    fprintf(f, "</g>\n");
    range(runs, nruns, rate, &lo, &hi);
    p = (panel){cw + 70, 60 + 40, cw - 100, ch - 90, xmin, xmax, fmin(0, lo), hi};
    panel_open(f, "rate", lm_tokens == nruns ? "tokens per second" : "steps per second", "step",
               &p);
    lines(f, &p, runs, nruns, rate, "rate", false, true);
    fprintf(f, "</g>\n");
    range(runs, nruns, gn, &lo, &hi);
    p = (panel){70, 60 + ch + 40, cw - 100, ch - 90, xmin, xmax, fmin(0, lo), hi};
    panel_open(f, "grad_norm", "gradient norm (before clipping)", "step", &p);
    lines(f, &p, runs, nruns, gn, "grad_norm", false, true);
    fprintf(f, "</g>\n");
    range(runs, nruns, lr, &lo, &hi);
    bool any_lr = false;
    for (int k = 0; k < nruns; k++)
        for (int i = 0; i < runs[k].steps; i++)
            any_lr |= isfinite(lr[k][i]);
    p = (panel){cw + 70, 60 + ch + 40, cw - 100, ch - 90, xmin, xmax, fmin(0, lo), hi};
    panel_open(f, "lr", any_lr ? "learning rate" : "learning rate (not in these reports)", "step",
               &p);
    lines(f, &p, runs, nruns, lr, "lr", false, false);
    fprintf(f, "</g>\n");
    /* memory: per run and rank, the ledger's categories stacked, the peak RSS as a tick */
    int bars = 0;
    double top = 0;
    for (int k = 0; k < nruns; k++)
        for (int q = 0; q < runs[k].nranks; q++, bars++) {
            double sum = 0;
            for (int c = 0; c < MEM_NCAT; c++)
                sum += runs[k].mem[q][c];
            top = fmax(top, mib_d(fmax(sum, runs[k].mem[q][MEM_NCAT])));
        }
    p = (panel){70, 60 + 2 * ch + 40, W - 230, ch - 90, 0, bars, 0, top > 0 ? top : 1};
    panel_open(f, "memory", "memory per rank, MiB (tick: peak RSS)", NULL, &p);
    double slot = p.pw / bars, bw = fmin(slot * 0.6, 60);
    int b = 0;
    for (int k = 0; k < nruns; k++)
        for (int q = 0; q < runs[k].nranks; q++, b++) {
            double x = p.px + slot * b + (slot - bw) / 2, base = 0;
            for (int c = 0; c < MEM_NCAT; c++) {
                double v = mib_d(runs[k].mem[q][c]);
                fprintf(f,
                        "<rect class=\"mem\" data-run=\"%d\" data-rank=\"%d\" "
                        "data-category=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                        "height=\"%.2f\" fill=\"%s\"/>\n",
                        k, q, mem_keys[c], x, sy(&p, base + v), bw, sy(&p, base) - sy(&p, base + v),
                        mem_colour[c]);
                base += v;
            }
            double rss = mib_d(runs[k].mem[q][MEM_NCAT]);
            fprintf(f,
                    "<line class=\"rss\" data-run=\"%d\" data-rank=\"%d\" x1=\"%.2f\" "
                    "y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"black\" stroke-width=\"2\"/>\n"
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\" "
                    "fill=\"%s\">r%d</text>\n",
                    k, q, x - 3, sy(&p, rss), x + bw + 3, sy(&p, rss), x + bw / 2, p.py + p.ph + 14,
                    run_colour[k], q);
        }
    for (int c = MEM_NCAT - 1; c >= 0; c--)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                p.px + p.pw + 14, p.py + 10 + 20.0 * (MEM_NCAT - 1 - c), mem_colour[c],
                p.px + p.pw + 30, p.py + 20 + 20.0 * (MEM_NCAT - 1 - c), mem_names[c]);
    fprintf(f, "</g>\n</svg>\n");
    for (int k = 0; k < nruns; k++)
        free(rate[k]);
    st = ferror(f) | (fclose(f) != 0) ? zc_err_set(err, ZC_ENOMEM, "out of memory drawing %s", out)
                                      : zc_durable_write_file(out, text, len, err);
    free(text);
    return st;
}

int cmd_plot(int argc, char **argv)
{
    const char *out = NULL, *paths[MAX_RUNS];
    int n = 0;
    zc_err err = {0};
    zc_status st = ZC_OK;
    for (int i = 2; i < argc && !st; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: zeroc plot REPORT.json [REPORT.json ...] [--out FILE.svg]\n\n"
                   "Draws `zeroc train --report` files side by side (up to %d): the training "
                   "and validation loss,\ntokens (or steps) per second, the gradient norm, the "
                   "learning rate and each rank's memory,\nas one SVG; noisy series are drawn "
                   "faint with a smoothed line over them, each run named by\nits model, ZeRO "
                   "stage, dtype and ranks.\n  --out FILE.svg  where to write it "
                   "(default: the first report's name with .svg)\n",
                   MAX_RUNS);
            return 0;
        } else if (!strcmp(argv[i], "--out") || !strncmp(argv[i], "--out=", 6)) {
            if (out)
                st = zc_err_set(&err, ZC_EINVAL, "--out is given twice; give it once");
            else if (argv[i][5] == '=')
                out = argv[i] + 6;
            else if (i + 1 >= argc)
                st = zc_err_set(&err, ZC_EINVAL, "--out needs a file name");
            else
                out = argv[++i];
        } else if (argv[i][0] == '-') {
            st = zc_err_set(&err, ZC_EINVAL, "unknown flag '%s' (see zeroc plot --help)", argv[i]);
        } else if (n == MAX_RUNS) {
            st = zc_err_set(&err, ZC_EINVAL, "at most %d reports in one plot", MAX_RUNS);
        } else {
            paths[n++] = argv[i];
        }
    }
    if (!st && n == 0)
        st = zc_err_set(&err, ZC_EINVAL,
                        "give one or more report files (zeroc train --report "
                        "FILE); see zeroc plot --help");
    char def[4200];
    if (!st && !out) {
        const char *dot = strrchr(paths[0], '.'), *slash = strrchr(paths[0], '/');
        int keep = dot && (!slash || dot > slash) ? (int)(dot - paths[0]) : (int)strlen(paths[0]);
        snprintf(def, sizeof def, "%.*s.svg", keep, paths[0]);
        out = def;
    }
    if (!st)
        st = cli_output_named("--out", out, 4000, &err);
    for (int k = 0; !st && k < n; k++)
        st = cli_output_not_input("--out", out, "report", paths[k], &err);
    run runs[MAX_RUNS] = {
        0}; /* zeroed: GCC cannot see that write_svg runs only when all are read */
    int loaded = 0;
    for (; !st && loaded < n; loaded++)
        if ((st = read_run(paths[loaded], &runs[loaded], &err)))
            break;
    if (!st)
        st = write_svg(out, runs, n, &err);
    for (int k = 0; k < loaded; k++)
        run_free(&runs[k]);
    if (st)
        return cli_fail_alone(&err);
    printf("wrote %s (%d run%s)\n", out, n, n == 1 ? "" : "s");
    return 0;
}

/* analyze_chart.c — `zeroc analyze`'s files: a CSV of every measurement and an SVG bar chart a
 * person can read at a glance in a browser (hand-written SVG: axes with units, a legend, one
 * stacked bar per stage, the estimate as a dashed mark). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/analyze_chart.h"
#include "cli/svg.h"
#include "cli/units.h"
#include "zeroc/durable.h"

const char *const analyze_checkpoint_names[CP_N] = {
    "after model creation", "after optimizer creation", "after data load",
    "after forward",        "after backward",           "after step"};

/* A file built in memory (open_memstream), then written durably whole. */
static zc_status finish(FILE *f, char **text, size_t *len, const char *path, zc_err *err)
{
    /* the stream sets *text and *len when it is closed */
    zc_status st = ferror(f) | (fclose(f) != 0)
                       ? zc_err_set(err, ZC_ENOMEM, "out of memory writing '%s'", path)
                       : zc_durable_write_file(path, *text, *len, err);
    free(*text);
    return st;
}

zc_status analyze_write_csv(const char *path, const analyze_stage *st, int nstages, int nranks,
                            zc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing '%s'", path);
    fprintf(f, "stage,rank,when,category,bytes\n");
    for (int s = 0; s < nstages; s++) {
        for (int r = 0; r < nranks; r++) {
            const analyze_rank *a = &st[s].ranks[r];
            for (int c = 0; c < CP_N; c++)
                for (int k = 0; k < ANALYZE_NCAT; k++)
                    fprintf(f, "%d,%d,%s,%s,%lld\n", st[s].stage, r, analyze_checkpoint_names[c],
                            zc_mem_category_name(k), (long long)a->at[c][k]);
            for (int k = 0; k < ANALYZE_NCAT; k++)
                fprintf(f, "%d,%d,peak,%s,%lld\n", st[s].stage, r, zc_mem_category_name(k),
                        (long long)a->peak[k]);
            fprintf(f, "%d,%d,peak,model_states,%lld\n", st[s].stage, r, (long long)a->states_peak);
            fprintf(f, "%d,%d,peak,rss,%lld\n", st[s].stage, r, (long long)a->peak_rss);
        }
        fprintf(f, "%d,,estimate,model_states,%lld\n", st[s].stage, (long long)st[s].est_states);
        fprintf(f, "%d,,estimate,activations,%lld\n", st[s].stage,
                (long long)st[s].est_activations);
        fprintf(f, "%d,,estimate,comm,%lld\n", st[s].stage, (long long)st[s].est_staging);
        fprintf(f, "%d,,estimate,working_bound,%lld\n", st[s].stage,
                (long long)st[s].est_working_bound);
    }
    return finish(f, &text, &len, path, err);
}

zc_status analyze_write_svg(const char *path, const char *title, const analyze_stage *st,
                            int nstages, zc_err *err)
{
    static const char *const colour[ANALYZE_NCAT] = {"#4e79a7", "#f28e2b", "#e15759",
                                                     "#76b7b2", "#59a14f", "#edc948"};
    const double W = 760, H = 460, left = 80, right = 200, top = 50, bottom = 60;
    const double plot_w = W - left - right, plot_h = H - top - bottom;
    double ymax = 0;
    for (int s = 0; s < nstages; s++) {
        double sum = 0;
        for (int k = 0; k < ANALYZE_NCAT; k++)
            sum += (double)st[s].ranks[0].peak[k];
        double est = (double)(st[s].est_states + st[s].est_activations + st[s].est_staging);
        ymax = fmax(ymax, fmax(sum, est));
    }
    ymax = mib_d(ymax);
    double step = svg_nice_step(0, ymax > 0 ? ymax : 1), yt = ceil(ymax / step) * step;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing '%s'", path);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"13\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">%s</text>\n",
            W, H, left + plot_w / 2, title);
    for (double y = 0; y <= yt + 1e-9; y += step) { /* y axis: grid and labels */
        double py = top + plot_h - y / yt * plot_h;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                left, py, left + plot_w, py, left - 8, py + 4, y);
    }
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
            "<text transform=\"translate(24,%.1f) rotate(-90)\" text-anchor=\"middle\">"
            "peak memory per rank (MiB)</text>\n"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">ZeRO stage</text>\n",
            left, top, left, top + plot_h, left, top + plot_h, left + plot_w, top + plot_h,
            top + plot_h / 2, left + plot_w / 2, H - 14);
    double slot = plot_w / nstages, bw = slot * 0.5;
    for (int s = 0; s < nstages; s++) {
        double x = left + slot * s + (slot - bw) / 2, base = 0;
        for (int k = 0; k < ANALYZE_NCAT; k++) {
            double v = mib(st[s].ranks[0].peak[k]);
            double y0 = top + plot_h - (base + v) / yt * plot_h, h = v / yt * plot_h;
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>stage %d %s: %.1f MiB</title></rect>\n",
                    x, y0, bw, h, colour[k], st[s].stage, zc_mem_category_name(k), v);
            base += v;
        }
        double est = mib(st[s].est_states + st[s].est_activations + st[s].est_staging);
        double ey = top + plot_h - est / yt * plot_h;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" "
                "stroke-width=\"2\" stroke-dasharray=\"5,3\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">"
                "%.0f MiB</text>\n",
                x - 6, ey, x + bw + 6, ey, x + bw / 2, top + plot_h + 18, st[s].stage, x + bw / 2,
                top + plot_h - base / yt * plot_h - 6, base);
    }
    double lx = left + plot_w + 20, ly = top + 10;
    for (int k = ANALYZE_NCAT - 1; k >= 0; k--, ly += 22)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">%s%s</text>\n",
                lx, ly, colour[k], lx + 20, ly + 12, zc_mem_category_name(k),
                k == ZC_MEM_WORKING || k == ZC_MEM_ACTIVATIONS ? " (peak)" : "");
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" "
            "stroke-width=\"2\" stroke-dasharray=\"5,3\"/><text x=\"%.1f\" y=\"%.1f\">"
            "estimate (states +</text><text x=\"%.1f\" y=\"%.1f\">activations + comm)</text>\n"
            "</svg>\n",
            lx, ly + 7, lx + 14, ly + 7, lx + 20, ly + 12, lx + 20, ly + 27);
    return finish(f, &text, &len, path, err);
}

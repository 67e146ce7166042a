/* monitors.c — the monitors of a DeepSpeed config on rank 0: where DeepSpeed's files go
 * (output_path/job_name), which series they get under which tags (DeepSpeed's
 * "Train/Samples/..." names, keyed by samples seen), and when the printed monitors print. The
 * event-file format is cli/tfevents.c's; the printed lines are cli/monitor_lines.c's. */
#include "cli/monitors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/monitor_lines.h"

/* output_path/job_name as DeepSpeed's os.path.join makes it ("" output_path: the working
 * directory), created with its parents. */
static zc_status make_dir(const char *key, const char *base, const char *job, char *dir, size_t cap,
                          zc_err *err)
{
    int k = !base[0] ? snprintf(dir, cap, "%s", job[0] ? job : ".")
            : !job[0]
                ? snprintf(dir, cap, "%s", base)
                : snprintf(dir, cap, "%s%s%s", base, base[strlen(base) - 1] == '/' ? "" : "/", job);
    if (k < 0 || (size_t)k >= cap)
        return zc_err_set(err, ZC_EINVAL, "%s: output_path/job_name is too long", key);
    char part[4096];
    for (size_t i = 1; i <= (size_t)k; i++) {
        if (dir[i] != '/' && dir[i] != '\0')
            continue;
        memcpy(part, dir, i);
        part[i] = '\0';
        struct stat st;
        if (mkdir(part, 0777) != 0 &&
            !(errno == EEXIST && stat(part, &st) == 0 && S_ISDIR(st.st_mode)))
            return zc_err_set(err, ZC_EIO, "%s: cannot make the directory %s: %s", key, part,
                              errno == EEXIST ? "a file of that name exists" : strerror(errno));
    }
    return ZC_OK;
}

zc_status monitors_open(monitors *m, const zc_config *cfg, int rank,
                        const zc_comm_counters *counters, zc_err *err)
{
    *m = (monitors){.cfg = cfg, .rank = rank, .start = *counters, .prev = *counters};
    if (rank != 0)
        return ZC_OK;
    char dir[4096], path[4096];
    zc_status st = ZC_OK;
    if (cfg->tensorboard &&
        !(st = make_dir("tensorboard", cfg->tensorboard_output_path, cfg->tensorboard_job_name, dir,
                        sizeof dir, err)) &&
        !(st = tfevents_open(dir, &m->tb, path, sizeof path, err)))
        printf("tensorboard: writing %s (tensorboard --logdir %s)\n", path, dir);
    if (!st && cfg->csv_monitor &&
        !(st = make_dir("csv_monitor", cfg->csv_output_path, cfg->csv_job_name, m->csv_dir,
                        sizeof m->csv_dir, err)))
        printf("csv_monitor: writing %s/Train_Samples_*.csv\n", m->csv_dir);
    return st;
}

/* Python's str(float), as DeepSpeed's csv.writer writes a value: the shortest digits that read
 * back as the same double, positional between 1e-4 and 1e16, with ".0" on a whole number. */
static void py_float(char *out, size_t cap, double x)
{
    if (isnan(x) || isinf(x)) {
        snprintf(out, cap, "%s", isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
        return;
    }
    int p = 1;
    char buf[64];
    for (; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    int exp10 = atoi(strchr(buf, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16)
        snprintf(out, cap, "%.*f", p - 1 - exp10 > 1 ? p - 1 - exp10 : 1, x);
    else
        snprintf(out, cap, "%s", buf);
}

/* One row into output_path/job_name/<tag, '/' and ' ' as '_'>.csv: "step,<last part of the
 * tag>" heads a new file; rows are "samples,value", CRLF-terminated as Python's csv module
 * writes them. */
static zc_status csv_row(const monitors *m, const char *tag, int64_t samples, double v, zc_err *err)
{
    char path[4096 + 128], val[64];
    int k = snprintf(path, sizeof path, "%s/", m->csv_dir);
    for (const char *t = tag; *t && (size_t)k < sizeof path - 5; t++)
        path[k++] = *t == '/' || *t == ' ' ? '_' : *t;
    snprintf(path + k, sizeof path - (size_t)k, ".csv");
    FILE *f = fopen(path, "ab");
    if (!f)
        return zc_err_set(err, ZC_EIO, "csv_monitor: %s: %s", path, strerror(errno));
    const char *header = strrchr(tag, '/') ? strrchr(tag, '/') + 1 : tag;
    py_float(val, sizeof val, v);
    bool ok = (ftell(f) > 0 || fprintf(f, "step,%s\r\n", header) > 0) &&
              fprintf(f, "%lld,%s\r\n", (long long)samples, val) > 0;
    ok = (fclose(f) == 0) && ok;
    return ok ? ZC_OK : zc_err_set(err, ZC_EIO, "csv_monitor: %s: %s", path, strerror(errno));
}

zc_status monitors_step(monitors *m, int s, int64_t samples, double loss, double lr,
                        double loss_scale, const step_phases *ph, bool print,
                        const zc_comm_counters *counters, zc_err *err)
{
    const zc_config *cfg = m->cfg;
    zc_status st = ZC_OK;
    if (m->rank != 0)
        return ZC_OK;
    if (m->first_step == 0)
        m->first_step = s + 1;
    m->last_step = s + 1;
    /* DeepSpeed's tags; the phases under wall_clock_breakdown are zeroc's parts, named as
     * measured (its forward and backward are one call of the model) */
    const char *tags[8];
    double vals[8];
    int n = 0;
    tags[n] = "Train/Samples/train_loss", vals[n++] = loss;
    tags[n] = "Train/Samples/lr", vals[n++] = lr;
    if (cfg->dtype == ZC_FP16)
        tags[n] = "Train/Samples/loss_scale", vals[n++] = loss_scale;
    if (cfg->wall_clock_breakdown) {
        tags[n] = "Train/Samples/elapsed_time_ms_forward_backward", vals[n++] = ph->fwd_bwd_ms;
        tags[n] = "Train/Samples/elapsed_time_ms_step", vals[n++] = ph->engine_ms;
        tags[n] = "Train/Samples/elapsed_time_ms_comm_wait",
        vals[n++] = ph->fwd_bwd_comm_ms + ph->engine_comm_ms;
        tags[n] = "Train/Samples/elapsed_time_ms_total", vals[n++] = ph->step_ms;
    }
    if (m->tb) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        st = tfevents_scalars(m->tb, samples, (double)ts.tv_sec + ts.tv_nsec / 1e9, tags, vals, n,
                              err);
    }
    for (int i = 0; !st && m->csv_dir[0] && i < n; i++)
        st = csv_row(m, tags[i], samples, vals[i], err);
    if (cfg->wall_clock_breakdown && print)
        monitor_print_phases(s + 1, ph);
    if (cfg->comms_logger && cfg->comms_verbose) {
        char title[64];
        snprintf(title, sizeof title, "step %d", s + 1);
        monitor_print_comms(cfg, title, &m->prev, counters);
    }
    m->prev = *counters;
    fflush(stdout);
    return st;
}

void monitors_close(monitors *m, const zc_comm_counters *counters)
{
    if (m->rank == 0 && m->cfg && m->cfg->comms_logger && m->last_step) {
        char title[96];
        snprintf(title, sizeof title, "steps %lld-%lld, with validation, sampling and saving",
                 (long long)m->first_step, (long long)m->last_step);
        monitor_print_comms(m->cfg, title, &m->start, counters);
        fflush(stdout);
    }
    tfevents_close(m->tb);
    m->tb = NULL;
}

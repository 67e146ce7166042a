/* progress.c — elapsed time, the estimate of the time left, and the live line (progress.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/progress.h"
#include "cli/relaunch.h"
#include "cli/units.h"

void progress_start(progress *p, int64_t first, int64_t total, bool draw)
{
    *p = (progress){.t0_ms = now_ms(), .first = first, .total = total};
    const char *mode = getenv("ZEROC_PROGRESS");
    const bool live = mode && !strcmp(mode, "live"), plain = mode && !strcmp(mode, "plain");
    p->live = draw && !plain && (live || (isatty(STDOUT_FILENO) && !cli_launched()));
}

/* h:mm:ss */
static void clock_text(double seconds, char *out, size_t cap)
{
    long long t = seconds < 0 ? 0 : (long long)(seconds + 0.5);
    snprintf(out, cap, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
}

void progress_text(const progress *p, int64_t s, char *out, size_t cap)
{
    const double elapsed = (now_ms() - p->t0_ms) / 1e3;
    const int64_t done = s + 1 - p->first, left = p->total - s - 1;
    char e[32], eta[32];
    clock_text(elapsed, e, sizeof e);
    clock_text(done > 0 ? elapsed / (double)done * (double)left : 0, eta, sizeof eta);
    snprintf(out, cap, "%s elapsed, ETA %s", e, eta);
}

void progress_live(progress *p, int64_t s, const char *what)
{
    if (!p->live)
        return;
    char t[96];
    progress_text(p, s, t, sizeof t);
    /* carriage return, the line, erase to its end: the next draw or a plain line replaces it */
    printf("\rstep %5lld/%lld | %s | %s\033[K", (long long)s + 1, (long long)p->total, what, t);
    fflush(stdout);
    p->pending = true;
}

void progress_clear(progress *p)
{
    if (!p->pending)
        return;
    fputs("\r\033[K", stdout);
    p->pending = false;
}

/* progress.h — how far a training run has got: elapsed time and an estimate of the time left on
 * each printed step line, and on a terminal a live line between the printed ones (plain lines
 * only when the output is a file or a pipe, so logs stay one line per printed step). Under an
 * MPI launcher the process cannot tell (Open MPI gives every rank a pseudo-terminal, even when
 * mpirun's own output goes to a file), so there the lines are plain unless ZEROC_PROGRESS=live;
 * ZEROC_PROGRESS=plain turns the live line off anywhere. */
#ifndef ZEROC_CLI_PROGRESS_H
#define ZEROC_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    double t0_ms;         /* when this run's first step began */
    int64_t first, total; /* steps: the first this run trains (0-based), the last + 1 */
    bool live;            /* the live line is drawn (rank 0, stdout a terminal) */
    bool pending;         /* a live line is on the screen, not yet cleared */
} progress;

/* Starts the clock before step `first` of `total`; `draw` false (ranks other than 0) draws
 * nothing. */
void progress_start(progress *p, int64_t first, int64_t total, bool draw);

/* ", 0:01:23 elapsed, ETA 0:04:10" after step s (0-based) is done: the wall time since the
 * start, and the remaining steps at the mean wall time of the steps done so far (validation,
 * sampling and saving included, as they will recur). */
void progress_text(const progress *p, int64_t s, char *out, size_t cap);

/* On a terminal, after step s that printed no line: "step s+1/total | what | elapsed, ETA"
 * drawn over the previous live line. */
void progress_live(progress *p, int64_t s, const char *what);

/* Erases the live line before a plain line is printed. */
void progress_clear(progress *p);

#endif

/* progress.h — one progress report for a long command (eval, sim record) on
 * stderr that knows where it is written: on a terminal one line rewritten
 * in place (\r, at most five times a second); anywhere else (a pipe, a log
 * file) a plain line each time another tenth of the work is done, never a
 * \r, so a log reads as lines. */
#ifndef VLA_BASE_PROGRESS_H
#define VLA_BASE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    char what[64];   /* the line's prefix, e.g. "eval" */
    double total;    /* units of work (episodes, or fractions of them) */
    double t0, last; /* start; the last terminal update */
    int tenths;      /* tenths already reported on a non-terminal */
    bool enabled, tty, drawn;
} vla_progress;

/* Start reporting `total` units under `what`; enabled false: nothing is ever
 * printed. Whether stderr is a terminal is read here (VLA_PROGRESS=tty|lines
 * overrides it, for tests). */
void vla_progress_start(vla_progress *p, const char *what, double total, bool enabled);
/* `done` units of `total` finished; `detail` (may be NULL) is appended, e.g.
 * "success 40% so far". The rate and ETA are computed from the elapsed time. */
void vla_progress_update(vla_progress *p, double done, const char *detail);
/* Finish: a terminal's line is ended so what follows starts on its own. */
void vla_progress_end(vla_progress *p);

#endif

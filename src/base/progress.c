/* progress.c — terminal-aware progress lines on stderr (see progress.h). */
#include "base/progress.h"
#include "base/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void vla_progress_start(vla_progress *p, const char *what, double total, bool enabled) {
    memset(p, 0, sizeof *p);
    snprintf(p->what, sizeof p->what, "%s", what ? what : "");
    p->total = total > 0 ? total : 1;
    p->enabled = enabled;
    const char *force = getenv("VLA_PROGRESS");
    p->tty = force && *force ? !strcmp(force, "tty") : isatty(fileno(stderr)) == 1;
    p->t0 = vla_now_s();
}

/* "12 s", "3 min 20 s", "1 h 05 min" */
static void fmt_duration(double s, char *buf, size_t cap) {
    if (s < 0) s = 0;
    if (s < 60) snprintf(buf, cap, "%.0f s", s);
    else if (s < 3600) snprintf(buf, cap, "%d min %02d s", (int)(s / 60), (int)s % 60);
    else snprintf(buf, cap, "%d h %02d min", (int)(s / 3600), (int)(s / 60) % 60);
}

void vla_progress_update(vla_progress *p, double done, const char *detail) {
    if (!p->enabled) return;
    if (done > p->total) done = p->total;
    double now = vla_now_s(), el = now - p->t0, frac = done / p->total;
    if (p->tty) {
        if (p->drawn && now - p->last < 0.2 && done < p->total) return;
    } else {
        int tenths = (int)(frac * 10 + 1e-9);
        if (tenths <= p->tenths) return;
        p->tenths = tenths;
    }
    p->last = now;
    char eta[32] = "", took[32];
    fmt_duration(el, took, sizeof took);
    if (done > 0 && done < p->total) {
        char d[24];
        fmt_duration(el * (p->total - done) / done, d, sizeof d);
        snprintf(eta, sizeof eta, ", ETA %s", d);
    }
    char line[512];
    snprintf(line, sizeof line, "%s: %3.0f%%%s%s, %s elapsed%s", p->what, 100 * frac, detail && *detail ? ", " : "",
             detail ? detail : "", took, eta);
    if (p->tty) {
        fprintf(stderr, "\r%s\033[K", line); /* \033[K: clear what a longer line left */
        p->drawn = true;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

void vla_progress_end(vla_progress *p) {
    if (p->enabled && p->tty && p->drawn) fputc('\n', stderr);
    p->drawn = false;
}

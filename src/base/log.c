/* log.c — leveled logging to stderr (see log.h). */
#include "base/log.h"
#include "base/timer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

static int log_level = -1; /* -1: not yet read from VLA_LOG */
static int log_rank = -1;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

int vla_log_level_from_name(const char *name) {
    static const char *const names[] = {"debug", "info", "warn", "error", "quiet"};
    for (int i = 0; i < 5; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

vla_log_level vla_log_get_level(void) {
    if (log_level < 0) {
        const char *env = getenv("VLA_LOG");
        int lvl = env ? vla_log_level_from_name(env) : -1;
        log_level = lvl < 0 ? VLA_LOG_INFO : lvl;
    }
    return (vla_log_level)log_level;
}

void vla_log_set_level(vla_log_level level) { log_level = (int)level; }
void vla_log_set_rank(int rank) { log_rank = rank; }

void vla_log(vla_log_level level, const char *fmt, ...) {
    if (level < vla_log_get_level()) return;
    static const char *const tags[] = {"debug", "info", "warn", "error"};
    char line[2048];
    int n;
    if (log_rank >= 0)
        n = snprintf(line, sizeof line, "[%8.3f r%d %s] ", vla_elapsed_s(), log_rank, tags[level]);
    else
        n = snprintf(line, sizeof line, "[%8.3f %s] ", vla_elapsed_s(), tags[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
}

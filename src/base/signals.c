/* signals.c — SIGINT/SIGTERM on a thread of their own (see signals.h). */
#include "base/signals.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

static sigset_t watched;
static void (*callback)(int sig);

static void *signal_thread(void *arg) {
    (void)arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&watched, &sig) == 0) callback(sig);
    }
    return NULL;
}

void vla_signals_watch(void (*on)(int sig)) {
    callback = on;
    sigemptyset(&watched);
    sigaddset(&watched, SIGINT);
    sigaddset(&watched, SIGTERM);
    pthread_t th;
    if (pthread_sigmask(SIG_BLOCK, &watched, NULL) == 0) {
        if (pthread_create(&th, NULL, signal_thread, NULL) == 0) {
            pthread_detach(th);
            return;
        }
        pthread_sigmask(SIG_UNBLOCK, &watched, NULL);
    }
    struct sigaction sa; /* no thread: an ordinary handler */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

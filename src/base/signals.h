/* signals.h — SIGINT and SIGTERM taken by a thread of their own, never by a
 * compute thread.
 *
 * Why: oneDNN's JIT f32 GEMM kernels point rsp into a heap workspace while
 * they run (oneDNN issue #4845, fixed in 2026, after Debian 12's oneDNN), so
 * a signal handler that runs on a thread inside such a kernel writes its
 * signal frame into the heap. Measured with `vla train` interrupted by
 * SIGTERM: 4 heap corruptions in about 300 runs on oneDNN's GEMM, none in
 * 200 on OpenBLAS's, none in 200 with this thread.
 *
 * How: vla_signals_watch blocks both signals in the calling thread and
 * starts one thread that sigwait()s for them and calls `on` there (an
 * ordinary thread: it may lock, print, stop a server). Call it first in a
 * command, before any other thread exists, so that every later thread
 * (OpenMP's, loaders', MPI's, libwebsockets') inherits the block. Child
 * processes would inherit it too: the commands that use this start none.
 * If the thread cannot start, `on` becomes an ordinary handler (and the
 * rare corruption above is possible again). */
#ifndef VLA_BASE_SIGNALS_H
#define VLA_BASE_SIGNALS_H

void vla_signals_watch(void (*on)(int sig));

#endif

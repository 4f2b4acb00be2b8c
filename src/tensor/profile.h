/* profile.h — where a backend's time goes, op by op: an op table that
 * forwards every call to the table it wraps and, while profiling, times
 * each call and sums the times by op (GEMM slots also by the precision they
 * read, attention by the precision it runs), with the FLOPs of every GEMM and attention, so a
 * step's table says which op to make faster before anyone writes a kernel
 * (what PyTorch's profiler key_averages() table says for a PyTorch step).
 *
 * The clock: a backend with timeline marks (ops.h, mark: cuda's events)
 * times each op on the device, from a mark placed before its work to one
 * placed after, so an op's time is the device's time on it, whatever the
 * host was doing; "between ops" is then the device's idle time between
 * ops — a host that cannot issue work fast enough (launch-bound steps)
 * shows there. Without marks (cpu, checked) an op has finished when it
 * returns, and the host's clock times it; "between ops" is then the
 * model code's own time between ops.
 *
 * What profiling changes: two marks per op (about a microsecond of host
 * time each on cuda, which lengthens the gaps, not the ops' times), and
 * captured regions (ops.h, run_captured) run op by op, so their ops are
 * seen: a profiled step is never a graph replay (unless the regions are
 * timed whole: vla_profile_start_whole_regions). Time steps unprofiled
 * (vla bench policy times first, then profiles). Not profiling, the table
 * only forwards: its results are the wrapped table's bit for bit
 * (test_conformance runs it as a backend).
 *
 * One wrapped backend per process at a time (the wrappers carry no
 * context): vla_profile_wrap of another table fails until
 * vla_profile_unwrap. Ops from any thread are recorded. */
#ifndef VLA_TENSOR_PROFILE_H
#define VLA_TENSOR_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"
#include "tensor/ops.h"

/* The profiling table of `inner` (the same name, device, tolerance; the
 * same NULL slots), profiling off; VLA_ERR_INVALID_ARG when another table is
 * wrapped. Wrapping the same table again returns the same table. */
vla_status vla_profile_wrap(const vla_ops *inner, const vla_ops **out);
/* Forget the wrapped table (profiling stops; records dropped). */
void vla_profile_unwrap(void);

/* Record every op from now on (records of an earlier start are dropped). */
void vla_profile_start(void);
/* The same, but a captured region runs the backend's way (cuda: a graph
 * replay once recorded) and is one "run_captured" row per call, its phase
 * telling which region — what a chunk costs with graphs on, where
 * vla_profile_start shows what is inside it. */
void vla_profile_start_whole_regions(void);

/* The phase the calling thread's ops belong to from now on (a string that
 * outlives the profile, e.g. a literal; NULL: none): a training step's
 * "forward", "backward" and "update" (train/step.c), a chunk's "prefix" and
 * "flow" (the policies' sampling). The profile sums each phase's ops too.
 * Costs a thread-local store when nothing is profiled. */
void vla_profile_phase(const char *name);

typedef struct {
    char op[48];       /* slot name, ".fp32"/".bf16"/".fp8" for GEMMs and attention */
    int64_t calls;
    double ms;         /* summed over the calls */
    double flops;      /* GEMM slots: 2·m·n·k per product; attention: 4 (forward) or 10 (backward)
                          · the pairs the group rule allows · heads · head_dim; summed; 0 elsewhere */
    double bytes;      /* memory-bound ops: the bytes they must move at least (each array read or
                          written once; 0 for GEMMs, attention and host queries), summed */
    int64_t launches;  /* what the backend launched inside the calls (ops.h, launches; cuda: kernels,
                          cuBLASLt calls, copies; checked: 1 per call; 0: not counted) */
} vla_profile_row;

typedef struct {
    const char *name; /* as given to vla_profile_phase; "(none)" for ops outside any phase */
    int64_t calls, launches;
    double ms;
} vla_profile_phase_row;

#define VLA_PROFILE_MAX_PHASES 16

typedef struct {
    vla_profile_row *rows; /* largest time first */
    int n_rows;
    vla_profile_phase_row phases[VLA_PROFILE_MAX_PHASES]; /* in the order first seen (more: summed into the last) */
    int n_phases;
    int64_t calls;         /* op calls recorded */
    int64_t unmarked;      /* calls the backend could place no mark for (not timed) */
    int64_t dropped;       /* calls past the record cap (not timed) */
    int64_t launches;      /* summed over the rows */
    double op_ms;          /* the ops' times, summed */
    double span_ms;        /* from the first op's start to the last op's end */
    bool device_clock;     /* the backend's marks (true) or the host's clock */
} vla_profile;

/* Stop recording, wait for the backend, and sum the records into *out
 * (rows allocated; vla_profile_free). */
vla_status vla_profile_stop(vla_profile *out);
void vla_profile_free(vla_profile *p);

/* The table for people: the `top` largest rows (the rest summed as one),
 * every figure divided by `per` (steps, chunks) and named per `per_what`. */
void vla_profile_print_table(FILE *f, const vla_profile *p, double per, const char *per_what, int top);
/* The same as one JSON object's members (no braces): "clock", per-`per`
 * totals and an "ops" array of the top rows. */
void vla_profile_print_json_members(FILE *f, const vla_profile *p, double per, int top);

#endif

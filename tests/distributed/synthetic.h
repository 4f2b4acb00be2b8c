/* synthetic.h — test helper (not in libvla): a synthetic MLP regression task
 * and a data-parallel training loop over it, compiled only into
 * test_dist_mpi and test_dist_faults, which need "some model trained by N
 * ranks" to exercise the whole distributed layer end to end: communicator,
 * sampler, overlapped gradient buckets, ZeRO-1 AdamW, coordinated checkpoints,
 * elastic resume, and the failure of a rank (killed or hung) at a given step.
 * It is milliseconds per run where the real trainer (src/train) needs a
 * dataset and a policy; tests/train/test_train_mpi.c checks the real one.
 *
 * Parameters and gradients are flat f32 buffers, backward calls
 * vla_grad_buckets_mark_ready(i) as each parameter's gradient becomes final
 * (last layer first), and the optimizer is vla_zero1_step.
 *
 * Model: y = W_{L-1}·tanh(… tanh(W_0·x + b_0) …) + b_{L-1}, loss = mean
 * squared error over batch and outputs. Sample i's input and target are drawn
 * from the Philox stream (data_seed, i), so they do not depend on rank.
 *
 * Checkpoint layout (<dir>/):
 *   params.safetensors       rank 0 (shared file)
 *   zero1-rank<r>.safetensors every rank, its own optimizer shard
 *   manifest.json            rank 0, written last and only after every rank
 *                            reported its part written: a checkpoint without
 *                            it is incomplete and is refused on resume. */
#ifndef VLA_TEST_SYNTHETIC_H
#define VLA_TEST_SYNTHETIC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"

typedef struct {
    const char *dims;        /* "16,32,32,4": input, hidden…, output */
    int64_t samples;         /* dataset size */
    int64_t seed;            /* sampler and init seed */
    int64_t batch;           /* per-rank micro-batch */
    int64_t accum;           /* gradient accumulation steps */
    int64_t steps;           /* optimizer steps to run in this process */
    double lr, wd, max_grad_norm;
    int64_t bucket_bytes;    /* 0 = 25 MiB */
    const char *mode;        /* "buckets" (overlapped all-reduce) | "reduce-scatter" */
    const char *save;        /* checkpoint dir written after the last step (NULL: none) */
    const char *resume;      /* checkpoint dir to resume from (NULL: fresh) */
    const char *out_params;  /* rank 0 writes the final parameters here (raw f32) */
    int64_t die_rank, die_step;   /* fault injection: SIGKILL self at that step (-1 off) */
    int64_t hang_rank, hang_step; /* fault injection: sleep forever at that step (-1 off) */
    double timeout_s;        /* collective watchdog (0: default) */
    int64_t threads;         /* OpenMP threads per rank (0: leave) */
    int64_t warmup;          /* steps excluded from timing */
    double compute_ms;       /* extra busy-wait per layer backward (to test overlap) */
    bool json;               /* print one JSON line per step (rank 0) */
    bool bench;              /* print a summary JSON line (rank 0) */
} vla_synth_opts;

void vla_synth_defaults(vla_synth_opts *o);
/* Parse flags (--dims, --samples, …, the names above with '-' for '_').
 * Returns -1 to go on, else an exit code (0 after --help). */
int vla_synth_parse(vla_synth_opts *o, const char *command, int argc, char **argv);
/* Run: init comm (MPI when launched by mpirun), train, save. Prints to `out`
 * on rank 0. */
vla_status vla_synth_train(const vla_synth_opts *o, FILE *out);

#endif

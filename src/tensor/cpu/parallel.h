/* parallel.h — how much work a CPU loop needs before it gets an OpenMP team.
 * One set of numbers for ops_cpu.c and nn/; the measurements behind them
 * are at the top of ops_cpu.c. In short: waking a sleeping worker costs
 * ~3 µs after 1 ms of serial work and ~60–80 µs after 10 ms on a quiet
 * machine (`vla bench threads`), ~7 ms on a loaded one, so a region must
 * carry tens of microseconds of work at least; these thresholds are the
 * smallest that keep one thread as fast as before and give mid-size
 * policies ~1.85× on two cores (docs/benchmarks.md). */
#ifndef VLA_TENSOR_PARALLEL_H
#define VLA_TENSOR_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

/* Nonzero: every loop with a team clause gets a team whatever its size.
 * For tests of thread-count independence, whose shapes are far below the
 * thresholds; set it while no parallel work runs. Default 0. */
extern int vla_parallel_always;

/* elementwise loops and row-wise norms: elements (~15–60 µs serial) */
#define VLA_PAR_MIN_ELEMS (vla_parallel_always ? (int64_t)0 : (int64_t)1 << 16)
/* GEMM: m·n·k multiply-adds below which all tiles run on the calling thread
 * (2^22 ≈ 8 MFLOP, ~70 µs at one core's ~120 GFLOP/s) */
#define VLA_PAR_MIN_GEMM (vla_parallel_always ? (int64_t)0 : (int64_t)1 << 22)
/* tiled attention: q-tiles × heads × bq·bk·head_dim (QKᵀ multiply-adds of
 * the tiles, masked or not; 2^22 ≈ 0.1 ms of forward) */
#define VLA_ATTN_PAR_WORK ((int64_t)1 << 22)
#define VLA_PAR_MIN_ATTN (vla_parallel_always ? (int64_t)0 : VLA_ATTN_PAR_WORK)

/* Host work in parallel, for the layers above tensor/ that must not use
 * OpenMP themselves (docs/design.md: threads live in the op table): calls
 * fn(ctx, i) for i < n on a team when `team`, each i once, in any order —
 * fn must not depend on the order (e.g. one parameter's seeded draws). */
void vla_host_parallel_for(int64_t n, bool team, void (*fn)(void *ctx, int64_t i), void *ctx);

#endif

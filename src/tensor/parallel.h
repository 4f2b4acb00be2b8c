/* parallel.h — how much work a CPU loop needs before it gets an OpenMP team.
 * One set of numbers for ops_cpu.c and nn/; the measurements behind them
 * are at the top of ops_cpu.c. In short: on a loaded 2-core box a parallel
 * region that follows a stretch of serial work costs ~7 ms (the sleeping
 * worker waits for a CPU), so a region must carry milliseconds of work. */
#ifndef VLA_TENSOR_PARALLEL_H
#define VLA_TENSOR_PARALLEL_H

#include <stdint.h>

/* Nonzero: every loop with a team clause gets a team whatever its size.
 * For tests of thread-count independence, whose shapes are far below the
 * thresholds; set it while no parallel work runs. Default 0. */
extern int vla_parallel_always;

/* elementwise loops and row-wise norms: elements (about 1–3 ms serial) */
#define VLA_PAR_MIN_ELEMS (vla_parallel_always ? (int64_t)0 : (int64_t)1 << 21)
/* GEMM: m·n·k multiply-adds below which OpenBLAS runs on the calling thread
 * (2^25 ≈ 67 MFLOP, ~1 ms at one core's ~70 GFLOP/s) */
#define VLA_PAR_MIN_GEMM (vla_parallel_always ? (int64_t)0 : (int64_t)1 << 25)
/* tiled attention: q-tiles × heads × bq·bk·head_dim (QKᵀ multiply-adds of
 * the tiles, masked or not; 2^27 ≈ 2–4 ms of forward) */
#define VLA_ATTN_PAR_WORK ((int64_t)1 << 27)
#define VLA_PAR_MIN_ATTN (vla_parallel_always ? (int64_t)0 : VLA_ATTN_PAR_WORK)

#endif

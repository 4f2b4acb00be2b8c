/* bench.h — the benchmarks (`vla bench <name>`, docs/benchmarks.md): one
 * file each, src/bench/bench_<name>.c, exposing `int vla_bench_<name>(int
 * argc, char **argv)` that prints one JSON object per result line on
 * stdout; src/cli/cmd_bench.c lists them. They are commands, beside cli/
 * (whose flag parsing and error reporting, cli/cli.h, they use), above
 * every library layer; what several benchmarks share is declared here too. */
#ifndef VLA_BENCH_BENCH_H
#define VLA_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "distributed/comm.h"
#include "policy/policy.h"
#include "train/trainer_opt.h"

/* One function a benchmark, `vla bench <name>`, listed in src/cli/cmd_bench.c. */
int vla_bench_gemm(int argc, char **argv);
int vla_bench_sim(int argc, char **argv);
int vla_bench_parquet(int argc, char **argv);
int vla_bench_dataset(int argc, char **argv);
int vla_bench_video(int argc, char **argv);
int vla_bench_policy(int argc, char **argv);
int vla_bench_train_dist(int argc, char **argv);
int vla_bench_threads(int argc, char **argv);
int vla_bench_attention(int argc, char **argv);
int vla_bench_shards(int argc, char **argv);
int vla_bench_packing(int argc, char **argv);
int vla_bench_serve(int argc, char **argv);
/* bench_policy.c: the trainer's AdamW over a policy's trainable tensors, and
 * seconds per training step (the trainer's, train/step.h) timed for at least
 * `seconds` after a warm-up step — shared by the benchmarks that train. */
vla_status vla_bench_optimizer(vla_policy *p, vla_comm *comm, vla_train_opt **opt);
vla_status vla_bench_time_training(vla_policy *p, const vla_batch *b, vla_train_opt *opt, double seconds,
                                   double *per_step, vla_loss_info *info);
/* bench_gemm.c: OpenBLAS core types a peer process forces (OPENBLAS_CORETYPE
 * set for it alone): the best two OpenBLAS has for this CPU's features,
 * best first; or parsed from the text of --`flag` ("auto", "none", names;
 * -1 after printing an error). Returns the count (≤ cap). */
int vla_bench_openblas_coretypes(char names[][32], int cap);
int vla_bench_parse_coretypes(const char *flag, const char *text, char names[][32], int cap);
/* bench_dataset.c: a LeRobot v3.0 dataset of `episodes` × `ep_len` frames,
 * 14-D state and action, `cams` (≤ 3) cameras of 640×480 AV1 at LeRobot's
 * settings (moving gradients and a square: not trivially compressible). */
vla_status vla_bench_generate_dataset(const char *root, int episodes, int ep_len, int cams);

/* peer.c: other processes. Append `s` to the command line in `dst`
 * (capacity cap), single-quoted for sh and followed by a space (launching
 * `vla` jobs, under mpirun or not). */
void vla_bench_shell_quote(char *dst, size_t cap, const char *s);

/* The running `vla` binary (/proc/self/exe), to launch `vla` jobs. */
vla_status vla_bench_self_path(char *buf, size_t cap);

/* A file of the source tree the CLI was built from (tools/bench_pyav.py, …):
 * under $VLA_SOURCE_DIR, else beside the build directory the CLI lives in
 * (<repo>/<build dir>/vla). buf receives the first candidate even when it
 * does not exist (the caller's error then names it). */
void vla_bench_source_file(const char *relpath, char *buf, size_t cap);

/* Run a peer benchmark (`cmd`, stderr merged) and return its JSON result
 * line: the last line holding `key` ("\"samples_per_s\": " …), copied to
 * `line`. On failure returns false with the reason in `why`: the exit
 * status and the peer's last line (a Python traceback ends with the
 * exception). */
bool vla_bench_run_peer(const char *cmd, const char *key, char *line, size_t line_cap, char *why, size_t why_cap);
/* The number after `key` in a peer's result line (NAN when absent). */
double vla_bench_peer_number(const char *line, const char *key);

#endif

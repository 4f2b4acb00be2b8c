/* cmd_bench.c — `vla bench <name>`: the dispatcher to the benchmarks
 * (src/bench/, bench/bench.h), which print one JSON object per result on
 * stdout (see scripts/bench.sh and docs/benchmarks.md). */
#include "bench/bench.h"
#include "cli/cli.h"

static const vla_cli_command benches[] = {
    {"gemm", "SGEMM GFLOP/s through the op table (the machine's ceiling for MFU)", vla_bench_gemm},
    {"train_dist", "`vla train` data-parallel scaling (pi05/groot-tiny): samples/s at 1 and 2 ranks, efficiency", vla_bench_train_dist},
    {"parquet", "Parquet scan rows/s and MB/s on a LeRobot-like file", vla_bench_parquet},
    {"video", "random-access video frames/s, vla.c vs PyAV (LeRobot's seek-then-decode)", vla_bench_video},
    {"shards", "training shards vs video decoding: prepare frames/s (1 and 2 workers) and sample reads per core (3 x 640x480 AV1 -> 224)", vla_bench_shards},
    {"dataset", "random rows, delta windows and 1-3 cameras' frames through the dataset API (640x480 AV1)", vla_bench_dataset},
    {"sim", "environment steps/s per core (state and 96x96 pixel observations)", vla_bench_sim},
    {"policy", "policy training samples/s, GFLOP/s, MFU and batch-1 action-chunk latency, vs the PyTorch eager peer", vla_bench_policy},
    {"packing", "training on a mixture of robots: packed (varlen) vs every sample padded to the longest", vla_bench_packing},
    {"attention", "π0.5 prefix-LM attention, fused and packed, vs PyTorch's dense-mask attention (fwd+bwd)", vla_bench_attention},
    {"serve", "vla serve on loopback: p50/p99 latency and throughput with N robots, dynamic batching on and off", vla_bench_serve},
    {"threads", "cost of an OpenMP region after serial gaps; break-even size of a threaded loop", vla_bench_threads},
};

int vla_cmd_bench(int argc, char **argv) {
    return vla_cli_dispatch("vla bench", benches, (int)(sizeof benches / sizeof benches[0]), argc, argv);
}

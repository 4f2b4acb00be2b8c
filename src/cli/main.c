/* main.c — the `vla` command: top-level dispatch to one file per command. */
#include "cli/cli.h"
#include "sim/env.h"
#include "tensor/cpu/gemm.h"
#include "train/plot.h"

#include <stdio.h>
#include <string.h>

static vla_cli_command commands[] = {
    {"bench", "measure kernels and pipelines; prints one JSON object per result", vla_cmd_bench},
    {"data", "training shards: decode a LeRobot dataset once (vla data prepare; resumable, MPI)", vla_cmd_data},
    {"dataset", "LeRobot datasets (v2.1, v3.0): info, validate, frame, stats, convert", vla_cmd_dataset},
    {"eval", "evaluate a trained policy in closed loop in a simulator (success rate, eval_info.json, videos)", vla_cmd_eval},
    {"parquet", "inspect Parquet files: schema, rows as JSON, full decode check", vla_cmd_parquet},
    {"plan", "predict data-parallel step time, communication and MFU at N GPUs (alpha-beta ring model)", vla_cmd_plan},
    {"policy", "inspect policy configs: parameter counts and training memory", vla_cmd_policy},
    {"serve", "serve a policy to robots over openpi's websocket protocol (batching, real-time chunking)", vla_cmd_serve},
    {"sim", NULL, vla_cmd_sim}, /* the summary names the simulators sim/env.c registers: see main */
    {"tokenize", "text to token ids (or back) with the Gemma/PaliGemma and Qwen3/Eagle tokenizers", vla_cmd_tokenize},
    {"dagger", "DAgger with the simulator's scripted expert: roll out, relabel, fine-tune, evaluate, K rounds", vla_cmd_dagger},
    {"train", "train a pi05 or groot policy on a LeRobot dataset (checkpoints, metrics, plots, resume, MPI)", vla_cmd_train},
    {"version", "print the version and the features compiled in (also vla --version, vla -V)", vla_cmd_version},
};

int main(int argc, char **argv) {
    vla_cli_guard_stdout(); /* no NaN/Inf on a JSON line */
    vla_gemm_lib gemm; /* a VLA_GEMM the library would only warn about is refused here, before any work */
    if (vla_gemm_lib_from_env(&gemm) != VLA_OK) {
        fprintf(stderr, "vla: error: %s\n", vla_error_message());
        return 2;
    }
    /* the simulators as the registry has them, so the list never lags behind sim/env.c */
    static char sim_summary[256];
    size_t k = (size_t)snprintf(sim_summary, sizeof sim_summary, "simulators (");
    for (const char *const *e = vla_env_names(); *e && k < sizeof sim_summary; e++)
        k += (size_t)snprintf(sim_summary + k, sizeof sim_summary - k, "%s%s", e == vla_env_names() ? "" : ", ", *e);
    if (k < sizeof sim_summary)
        snprintf(sim_summary + k, sizeof sim_summary - k, "): run scripted policies, record, render");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, "sim")) commands[i].summary = sim_summary;
    /* --version and -V, as most tools spell it: `vla version` */
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
        static char version[] = "version";
        argv[1] = version;
    }
    int rc = vla_cli_dispatch("vla", commands, (int)(sizeof commands / sizeof commands[0]), argc - 1, argv + 1);
    vla_plot_release_caches(); /* plots loaded fonts; a leak checker should not count those caches */
    vla_cli_guard_end();
    return rc;
}

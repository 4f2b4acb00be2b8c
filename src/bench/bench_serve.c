/* bench_serve.c — `vla bench serve`: p50/p99 latency and throughput of
 * `vla serve` on loopback with N robots asking as fast as they are answered,
 * with dynamic batching and without, next to a single robot's chunk
 * (serve/loadgen.h does the measuring); on each device of --device, in
 * alternating rounds, each later device's figures also as a ratio to the
 * first's (a GPU server against the CPU one). */
#include "bench/bench.h"
#include "cli/cli.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "serve/loadgen.h"
#include "serve/server.h"
#include "tensor/backend.h"
#include "tensor/ops.h"

typedef struct {
    vla_server *s;
} run_arg;

static void *serve_main(void *arg) {
    vla_server_run(((run_arg *)arg)->s);
    return NULL;
}

/* One configuration: a server in this process, the robots on threads. */
/* The figures of one (device, mode) from the latest round. */
typedef struct {
    double p50, p99, rps;
} served;

/* One configuration: a server in this process, the robots on threads. single:
 * the same device's one-robot chunk (p99 relative to it); base: the first
 * device's figures for this mode (ratios to it); both NULL when not known. */
static vla_status measure(vla_engine *e, int clients, int tasks, double seconds, int max_batch, double window, const char *name,
                          const char *config, const served *single, const served *base, const char *base_device,
                          served *got) {
    vla_server_opts so;
    vla_server_opts_default(&so);
    so.port = 0, so.max_batch = max_batch, so.batch_window_ms = window, so.max_queue = clients + 8;
    const vla_engine_info *in = vla_engine_get_info(e);
    /* captured regions replayed per batch (cuda: CUDA graphs; checked: compared): whether the batches a
     * server forms repeat their layouts, as a graph needs; -1 where the backend has no regions */
    const vla_ops *bops = NULL;
    int64_t r0 = vla_backend_get(in->device, &bops) == VLA_OK ? vla_ops_stat_of(bops, VLA_STAT_CAPTURED_REPLAYS) : -1;
    vla_server *s;
    VLA_TRY(vla_server_create(&so, e, &s));
    run_arg ra = {s};
    pthread_t th;
    pthread_create(&th, NULL, serve_main, &ra);
    vla_loadgen_opts lo = {"127.0.0.1", vla_server_port(s), clients, seconds, 0, 0, tasks};
    lo.state_dim = (int)(in->n_state_keys > 1 ? 2 : in->state_frame);
    lo.env_state_dim = (int)(in->state_frame - lo.state_dim);
    vla_loadgen_result r;
    vla_status st = vla_loadgen_run(&lo, &r);
    vla_server_stop(s);
    pthread_join(th, NULL);
    vla_server_stats ss;
    vla_server_get_stats(s, &ss);
    vla_server_free(s);
    if (st != VLA_OK) return st;
    *got = (served){r.p50_ms, r.p99_ms, r.throughput};
    printf("{\"bench\":\"serve\",\"policy\":\"%s\",\"device\":\"%s\",\"precision\":\"%s\",\"mode\":\"%s\","
           "\"clients\":%d,\"tasks\":%d,\"max_batch\":%d,\"window_ms\":%.1f,"
           "\"seconds\":%.2f,\"requests\":%lld,\"throughput_rps\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"mean_ms\":%.3f,"
           "\"max_ms\":%.3f,\"mean_batch\":%.2f,\"batches\":%llu,\"errors\":%lld",
           config, in->device, in->precision, name, clients, tasks, max_batch, window, r.seconds, (long long)r.requests,
           r.throughput, r.p50_ms, r.p99_ms, r.mean_ms, r.max_ms, r.mean_batch, (unsigned long long)ss.batches,
           (long long)r.errors);
    if (r0 >= 0 && ss.batches > 0)
        printf(",\"graph_replays_per_batch\":%.2f",
               (double)(vla_ops_stat_of(bops, VLA_STAT_CAPTURED_REPLAYS) - r0) / (double)ss.batches);
    if (single && single->p50 > 0) /* issue 41: p99 at N robots against one robot's chunk */
        printf(",\"single_chunk_ms\":%.3f,\"p99_vs_single_chunk\":%.3f", single->p50, r.p99_ms / single->p50);
    if (base && base->rps > 0 && r.throughput > 0)
        printf(",\"base_device\":\"%s\",\"throughput_vs_base_device\":%.3f,\"p99_vs_base_device\":%.3f",
               base_device, r.throughput / base->rps, r.p99_ms / base->p99);
    printf("}\n");
    fflush(stdout);
    return VLA_OK;
}

int vla_bench_serve(int argc, char **argv) {
    const char *path = NULL, *config = "groot-pusht", *devices = NULL, *precision = NULL;
    int64_t clients = 8, max_batch = 8, rounds = 2, tasks = 0;
    double seconds = 5, window = 2;
    bool quick = false;
    const vla_flag flags[] = {
        {"policy.path", VLA_FLAG_STRING, &path, "DIR", "checkpoint to serve (none: --policy.config with random weights)"},
        {"policy.config", VLA_FLAG_STRING, &config, "NAME", "preset for the random-weight checkpoint"},
        {"clients", VLA_FLAG_INT, &clients, "N", "robots asking at once"},
        {"tasks", VLA_FLAG_INT, &tasks, "N",
         "robot i sends instruction i % N of a fixed list of different lengths (a fleet on several jobs: each "
         "batch then mixes prompt layouts); 0: none, the checkpoint's task"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "per configuration and round; the machine is shared, so rounds alternate"},
        {"serve.max_batch", VLA_FLAG_INT, &max_batch, "N", "largest batch in the batching configuration"},
        {"serve.batch_window_ms", VLA_FLAG_FLOAT, &window, "MS", "batch window in the batching configuration"},
        {"rounds", VLA_FLAG_INT, &rounds, "N", "alternating rounds of the two configurations"},
        {"device", VLA_FLAG_STRING, &devices, "NAME[,NAME]",
         "backends serving in turn, e.g. cpu,cuda; later ones add their ratios to the first (default: the default "
         "device, as vla serve)"},
        {"precision", VLA_FLAG_STRING, &precision, "auto|fp32|bf16", "as vla serve --precision (default auto)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "0.3 s, 2 clients, one round (smoke test)"},
    };
    const vla_command_spec spec = {
        "vla bench serve", NULL, "Latency (p50/p99) and throughput of vla serve on loopback, batching on and off.",
        "Runs a server in this process on a free port and N client threads (serve/ws_client.c) that each send\n"
        "their own PushT-shaped observation and wait for the chunk, as fast as they are answered. Three\n"
        "configurations, alternating: one robot (single, the chunk latency), no batching (max_batch 1) and\n"
        "dynamic batching, each with p99_vs_single_chunk; on every --device in turn. One JSON line each.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (quick) seconds = 0.3, clients = 2, rounds = 1;
    if (clients < 1 || clients > 1024 || max_batch < 1 || !(seconds > 0) || rounds < 1 || tasks < 0 || tasks > 1024) {
        fprintf(stderr, "vla: error: vla bench serve: --clients 1..1024, --tasks 0..1024, --serve.max_batch >= 1, --seconds > 0, --rounds >= 1\n");
        return 2;
    }
    char tmp[] = "/tmp/vla_bench_serve_XXXXXX";
    vla_status st = VLA_OK;
    if (!path) {
        if (!mkdtemp(tmp)) return vla_cli_fail(vla_error(VLA_ERR_IO, "bench serve: cannot make a temporary directory"));
        st = vla_loadgen_checkpoint(tmp, config);
        path = tmp;
    }
    /* one engine per device, all loaded before the first round */
    enum { MAX_DEVICES = 4 };
    vla_engine *e[MAX_DEVICES] = {0};
    char names[MAX_DEVICES][32];
    int nd = 0;
    for (const char *q = devices ? devices : ""; st == VLA_OK && (nd == 0 || *q);) {
        size_t n = strcspn(q, ",");
        if (nd == MAX_DEVICES) {
            st = vla_error(VLA_ERR_INVALID_ARG, "bench serve: --device=%s: at most %d devices", devices, MAX_DEVICES);
            break;
        }
        snprintf(names[nd], sizeof names[nd], "%.*s", (int)(n < 31 ? n : 31), q);
        vla_engine_opts eo;
        vla_engine_opts_default(&eo);
        eo.policy_path = path, eo.precision = precision, eo.device = names[nd][0] ? names[nd] : NULL;
        st = vla_engine_open(&eo, &e[nd]);
        if (st == VLA_OK) nd++;
        q += n + (q[n] == ',');
    }
    const char *shown = nd ? vla_engine_get_info(e[0])->config : config;
    static const char *const modes[3] = {"single", "no_batching", "batching"};
    served got[MAX_DEVICES][3] = {{{0}}};
    for (int64_t r = 0; st == VLA_OK && r < rounds; r++)
        for (int d = 0; st == VLA_OK && d < nd; d++)
            for (int m = 0; st == VLA_OK && m < 3; m++) {
                int c = m == 0 ? 1 : (int)clients, mb = m == 2 ? (int)max_batch : 1;
                st = measure(e[d], c, (int)tasks, seconds, mb, m == 2 ? window : 0, modes[m], shown, m ? &got[d][0] : NULL,
                             d ? &got[0][m] : NULL, vla_engine_get_info(e[0])->device, &got[d][m]);
            }
    for (int d = 0; d < nd; d++) vla_engine_free(e[d]);
    if (path == tmp) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
        if (system(cmd) != 0) fprintf(stderr, "bench serve: could not remove %s\n", tmp);
    }
    return st == VLA_OK ? 0 : vla_cli_fail(st);
}

/* cmd_serve.c — `vla serve`: a checkpoint served to robots over openpi's
 * websocket protocol (serve/server.h, docs/serve.md). */
#include "cli/cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/signals.h"
#include "serve/server.h"

static vla_server *g_server; /* for the signal handler */

static volatile sig_atomic_t serving;

/* on the signal thread (base/signals.h): stop the server, or exit at once before it runs */
static void on_signal(int sig) {
    if (!serving) _exit(128 + sig);
    if (g_server) vla_server_stop(g_server);
}

int vla_cmd_serve(int argc, char **argv) {
    vla_signals_watch(on_signal); /* first: before any thread exists */
    vla_engine_opts eo;
    vla_engine_opts_default(&eo);
    vla_server_opts so;
    vla_server_opts_default(&so);
    const char *pretrained = NULL, *schedule = "exp";
    int64_t port = so.port, max_batch = so.max_batch, max_queue = so.max_queue, flow_steps = 0, seed = 0;
    double window = so.batch_window_ms, frame_mb = (double)so.max_frame_bytes / (1 << 20), beta = eo.rtc_beta;
    const vla_flag flags[] = {
        {"policy.path", VLA_FLAG_STRING, &eo.policy_path, "DIR",
         "pretrained_model dir, checkpoint step dir, training output dir (newest valid checkpoint) or a published "
         "fine-tune (docs/checkpoints.md)"},
        {"policy.pretrained_path", VLA_FLAG_STRING, &pretrained, "DIR", "the same as --policy.path"},
        {"policy.config", VLA_FLAG_STRING, &eo.policy_config, "NAME|PATH", "a published checkpoint's architecture preset"},
        {"policy.embodiment", VLA_FLAG_STRING, &eo.embodiment, "NAME|ID", "which embodiment of a mixture-trained policy to serve"},
        {"policy.num_inference_steps", VLA_FLAG_INT, &flow_steps, "N", "Euler steps of flow sampling (0: the checkpoint's)"},
        {"device", VLA_FLAG_STRING, &eo.device, "NAME", VLA_CLI_DEVICE_HELP},
        {"precision", VLA_FLAG_STRING, &eo.precision, "auto|fp32|bf16",
         "how the transformer blocks' large linears run: auto is $VLA_PRECISION, else bf16 on a GPU (each weight "
         "cast once and kept on the device for the server's life) and fp32 on the CPU (default auto)"},
        {"host", VLA_FLAG_STRING, &so.host, "ADDR", "address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface)"},
        {"port", VLA_FLAG_INT, &port, "N", "TCP port (0: any free port, printed)"},
        {"api_key", VLA_FLAG_STRING, &so.api_key, "KEY",
         "refuse websocket handshakes without the header 'Authorization: Api-Key KEY' (openpi_client's api_key)"},
        {"serve.keys", VLA_FLAG_STRING, &eo.keys, "K:L,...",
         "map a client's observation keys to LeRobot's, e.g. observation/state:observation.state,prompt:task"},
        {"serve.batch_window_ms", VLA_FLAG_FLOAT, &window, "MS",
         "how long the oldest waiting request may wait for others to batch with"},
        {"serve.max_batch", VLA_FLAG_INT, &max_batch, "N", "largest batch per policy call (1: no batching)"},
        {"serve.max_queue", VLA_FLAG_INT, &max_queue, "N", "requests that may wait; more are refused with an error"},
        {"serve.max_frame_mb", VLA_FLAG_FLOAT, &frame_mb, "MB", "largest request frame"},
        {"rtc.schedule", VLA_FLAG_STRING, &schedule, "NAME", "real-time chunking's prefix weights: exp | linear | ones | zeros"},
        {"rtc.max_guidance_weight", VLA_FLAG_FLOAT, &beta, "B", "real-time chunking's guidance cap beta (5 is the paper's)"},
        {"seed", VLA_FLAG_INT, &seed, "S", "the flow noise's seed"},
    };
    const vla_command_spec spec = {
        "vla serve", NULL, "Serve a policy to robots over openpi's websocket protocol.",
        "A client such as openpi_client.WebsocketClientPolicy connects to ws://HOST:PORT, receives one metadata\n"
        "frame, then sends observations (msgpack maps of LeRobot keys with NumPy arrays) and gets back\n"
        "{\"actions\": float32 [horizon, action_dim], \"server_timing\": {...}}. Requests from all clients\n"
        "are batched into one policy call per window. Optional request fields prev_chunk_left_over and\n"
        "inference_delay ask for real-time chunking. GET /healthz answers OK. docs/serve.md has the protocol.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (pretrained && eo.policy_path && strcmp(pretrained, eo.policy_path)) {
        fprintf(stderr, "vla: error: vla serve: --policy.path and --policy.pretrained_path name different checkpoints\n");
        return 2;
    }
    if (pretrained) eo.policy_path = pretrained;
    if (!eo.policy_path) {
        fprintf(stderr, "vla: error: vla serve: --policy.path=DIR is required\n");
        return 2;
    }
    if (port < 0 || port > 65535 || max_batch < 1 || max_batch > 4096 || max_queue < 1 || window < 0 ||
        !(frame_mb > 0) || frame_mb > 4096 || flow_steps < 0 || !(beta > 0)) {
        fprintf(stderr, "vla: error: vla serve: --port 0..65535, --serve.max_batch 1..4096, --serve.max_queue >= 1, "
                        "--serve.batch_window_ms >= 0, --serve.max_frame_mb in (0, 4096], "
                        "--rtc.max_guidance_weight > 0\n");
        return 2;
    }
    vla_status st = vla_rtc_schedule_parse(schedule, &eo.rtc_schedule);
    if (st != VLA_OK) {
        fprintf(stderr, "vla: error: vla serve: --rtc.schedule: %s\n", vla_error_message());
        return 2;
    }
    eo.flow_steps = (int)flow_steps, eo.seed = (uint64_t)seed, eo.rtc_beta = beta;
    so.port = (int)port, so.max_batch = (int)max_batch, so.max_queue = (int)max_queue, so.batch_window_ms = window;
    so.max_frame_bytes = (size_t)(frame_mb * (1 << 20));
    if (vla_log_get_level() > VLA_LOG_INFO && !getenv("VLA_LOG")) vla_log_set_level(VLA_LOG_INFO);
    vla_engine *e = NULL;
    if ((st = vla_engine_open(&eo, &e)) != VLA_OK) return vla_cli_fail(st);
    vla_server *s = NULL;
    if ((st = vla_server_create(&so, e, &s)) != VLA_OK) {
        vla_engine_free(e);
        return vla_cli_fail(st);
    }
    vla_engine_log_memory(e, so.max_batch);
    const vla_engine_info *in = vla_engine_get_info(e);
    /* one line a script can wait for (tests read the port from it) */
    printf("vla serve: %s (%s, %s, %s on %s) listening on ws://%s:%d (chunks of %lld x %lld, execute %d per chunk, "
           "%d frame(s) of state, batches of up to %d in %.1f ms, real-time chunking %s)\n",
           in->dir, in->family, in->config, in->precision, in->device, so.host, vla_server_port(s), (long long)in->horizon,
           (long long)in->action_dim, in->n_action_steps, in->n_obs_steps, so.max_batch, so.batch_window_ms,
           in->rtc ? "on" : "unavailable");
    fflush(stdout);
    g_server = s;
    serving = 1;
    signal(SIGPIPE, SIG_IGN);
    st = vla_server_run(s);
    vla_server_stats stats;
    vla_server_get_stats(s, &stats);
    g_server = NULL;
    vla_server_free(s);
    vla_engine_free(e);
    fprintf(stderr, "vla serve: stopped after %llu connections, %llu requests, %llu replies, %llu errors, %llu "
                    "batches (largest %d)\n",
            (unsigned long long)stats.connections, (unsigned long long)stats.requests, (unsigned long long)stats.replies,
            (unsigned long long)stats.errors, (unsigned long long)stats.batches, stats.largest_batch);
    return st == VLA_OK ? 0 : vla_cli_fail(st);
}

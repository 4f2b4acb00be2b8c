/* loadgen.h — what `vla bench serve` measures with: N robots (threads, each
 * with the websocket client of ws_client.h) asking a server for chunks as
 * fast as they get them for a while, and the latency of every request; and
 * a checkpoint with random weights to serve when none is given. */
#ifndef VLA_SERVE_LOADGEN_H
#define VLA_SERVE_LOADGEN_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct {
    const char *host;
    int port;
    int clients;
    double seconds;
    int state_dim, env_state_dim; /* the observation's widths (observation.state, observation.environment_state; 0: none) */
    int tasks; /* robot i asks under instruction i % tasks of a fixed list, each a different length (a fleet doing
                  several jobs); 0: no instruction sent (the server's default) */
} vla_loadgen_opts;

/* The instruction loadgen's robots send under task index i (any i >= 0; lengths differ across the first
 * eight), into buf */
const char *vla_loadgen_task(int i, char *buf, size_t cap);

typedef struct {
    int64_t requests, errors;
    double seconds, throughput;   /* replies per second */
    double p50_ms, p99_ms, mean_ms, max_ms;
    double mean_batch;            /* from the replies' server_timing.batch_size */
} vla_loadgen_result;

vla_status vla_loadgen_run(const vla_loadgen_opts *o, vla_loadgen_result *out);

/* A pretrained_model directory at `dir` for preset `config` with the
 * family's initial weights, PushT's features (observation.state 2 +
 * observation.environment_state 16, 2 frames, relative actions, no camera)
 * and identity-like statistics: something to serve and time. */
vla_status vla_loadgen_checkpoint(const char *dir, const char *config);

#endif

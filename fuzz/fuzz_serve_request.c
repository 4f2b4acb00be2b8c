/* fuzz_serve_request.c — libFuzzer target for what `vla serve` reads from
 * a client: a frame is parsed as msgpack-numpy (serve/msgpack_np.h), every
 * value read back, and the map checked as a request (serve/engine.h) by an
 * engine over a tiny checkpoint written once at start (a GR00T config with
 * one 8×8 camera, two state keys, 2 frames of history, relative actions):
 * any bytes must be answered with a request or a message, never a crash,
 * an overread or an unbounded allocation. Seeds: the openpi-style goldens of
 * tests/serve/data and requests shaped for the tiny checkpoint. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve/engine.h"
#include "serve/msgpack_np.h"
#include "tensor/backend.h"
#include "checkpoint/pretrained.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char CONFIG[] =
    "{\"policy\": \"groot\", \"name\": \"groot-fuzz\","
    " \"vision\": {\"image_size\": 8, \"patch\": 4, \"channels\": 3, \"width\": 8, \"depth\": 1, \"heads\": 1, \"mlp\": 8, \"cameras\": 1},"
    " \"language\": {\"width\": 8, \"depth\": 1, \"heads\": 1, \"kv_heads\": 1, \"head_dim\": 8, \"mlp\": 8, \"vocab\": 259,"
    "   \"max_tokens\": 8, \"rope_theta\": 10000, \"qk_norm\": true},"
    " \"action_head\": {\"vl_layers\": 1, \"vl_heads\": 1, \"vl_head_dim\": 8, \"dit_layers\": 2, \"dit_heads\": 1,"
    "   \"dit_head_dim\": 8, \"output_dim\": 8, \"state_hidden\": 8, \"ff_mult\": 1, \"embodiments\": 1, \"future_tokens\": 1,"
    "   \"max_seq_len\": 8, \"timestep_channels\": 8, \"timestep_buckets\": 1000},"
    " \"action\": {\"dim\": 2, \"horizon\": 4, \"state_dim\": 12},"
    " \"flow\": {\"steps\": 2, \"beta_alpha\": 1.5, \"beta_beta\": 1.0, \"time_scale\": 0.999},"
    " \"normalization\": {\"state\": \"min_max\", \"action\": \"mean_std\"}, \"frozen\": []}";

static vla_engine *g_engine;
static vla_session *g_session;

static void setup(void) {
    static int done;
    if (done++) return;
    char dir[] = "/tmp/fuzz_serve_XXXXXX";
    if (!mkdtemp(dir)) abort();
    vla_policy_config cfg;
    vla_policy *p = NULL;
    if (vla_policy_config_parse("groot-fuzz", CONFIG, sizeof CONFIG - 1, &cfg) != VLA_OK ||
        vla_policy_create(&cfg, vla_backend_find("cpu"), &p) != VLA_OK) {
        fprintf(stderr, "fuzz_serve_request: %s\n", vla_error_message());
        abort();
    }
    float lo[12] = {0}, hi[12], mean[8] = {0}, sd[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 12; i++) hi[i] = 1;
    vla_normalizer ns, na;
    vla_normalizer_init(&ns, VLA_NORM_MIN_MAX, VLA_NORM_EPS_LEROBOT, 12, lo, hi, 0);
    vla_normalizer_init(&na, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 8, mean, sd, 0); /* per step */
    vla_pretrained_meta m;
    memset(&m, 0, sizeof m);
    m.state_width = 12, m.action_width = 2, m.cameras = 1, m.fps = 10, m.n_obs_steps = 2;
    m.relative_actions = true, m.action_stats_per_step = true;
    snprintf(m.state_keys, sizeof m.state_keys, "observation.state,observation.environment_state");
    snprintf(m.task, sizeof m.task, "fuzz");
    json_t *cj = vla_pretrained_config_json(p, &ns, &na, &m);
    vla_engine_opts o;
    vla_engine_opts_default(&o);
    o.policy_path = dir;
    o.keys = "observation/state:observation.state,image:observation.images.top";
    if (!cj || vla_pretrained_write_dir(dir, p, NULL, cj) != VLA_OK || vla_engine_open(&o, &g_engine) != VLA_OK ||
        vla_session_create(g_engine, 1, &g_session) != VLA_OK) {
        fprintf(stderr, "fuzz_serve_request: %s\n", vla_error_message());
        abort();
    }
    json_decref(cj);
    vla_normalizer_free(&ns), vla_normalizer_free(&na);
    vla_policy_free(p);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir); /* the engine has read everything it needs */
    if (system(cmd) != 0) fprintf(stderr, "fuzz_serve_request: could not remove %s\n", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    vla_np_map m;
    if (vla_np_parse(data, size, &m) != VLA_OK) return 0;
    double sink = 0;
    for (int i = 0; i < m.n; i++) {
        const vla_np_field *f = &m.fields[i];
        if (!vla_np_is_numeric(f)) continue;
        int64_t n = vla_np_count(f);
        for (int64_t k = 0; k < n; k++) sink += vla_np_at(f, k);
    }
    (void)sink;
    vla_request *r = NULL;
    if (vla_request_prepare(g_engine, g_session, &m, &r) == VLA_OK) {
        vla_engine_run(g_engine, &r, 1); /* a tiny policy: a few hundred microseconds */
        vla_request_free(r);
    }
    vla_np_map_free(&m);
    return 0;
}

/* loadgen.c — robots asking a server for chunks, timed (see loadgen.h). */
#include "serve/loadgen.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "serve/msgpack_np.h"
#include "serve/ws_client.h"
#include "tensor/backend.h"
#include "checkpoint/pretrained.h"

typedef struct {
    const vla_loadgen_opts *o;
    int id;
    double until;
    double *lat; /* milliseconds of each reply */
    int64_t n, cap, errors;
    double batch_sum;
    char err[256];
} robot_thread;

const char *vla_loadgen_task(int i, char *buf, size_t cap) {
    static const char *const jobs[] = {
        "Push the T-shaped block onto the T-shaped target.",
        "pick up the red cube",
        "open the top drawer and put the bowl inside it",
        "stack the green block on the blue block",
        "wipe the table",
        "put the spoon in the cup, then move the cup to the left of the plate",
        "close the microwave door",
        "fold the towel in half and place it on the shelf next to the basket",
    };
    const int n = (int)(sizeof jobs / sizeof jobs[0]);
    if (i < n) snprintf(buf, cap, "%s", jobs[i]);
    else snprintf(buf, cap, "%s (station %d)", jobs[i % n], i / n);
    return buf;
}

static size_t build_request(const vla_loadgen_opts *o, int id, vla_np_writer *w) {
    float st[64], env[64];
    for (int i = 0; i < o->state_dim && i < 64; i++) st[i] = 100.0f + (float)((37 * id + 11 * i) % 300);
    for (int i = 0; i < o->env_state_dim && i < 64; i++) env[i] = (float)((53 * i + 97 * id) % 512);
    int64_t sd = o->state_dim, ed = o->env_state_dim;
    vla_np_put_map(w, 1 + (ed > 0) + (o->tasks > 0));
    vla_np_put_str(w, "observation.state"), vla_np_put_f32_array(w, st, &sd, 1);
    if (ed > 0) vla_np_put_str(w, "observation.environment_state"), vla_np_put_f32_array(w, env, &ed, 1);
    if (o->tasks > 0) {
        char task[160];
        vla_np_put_str(w, "prompt"), vla_np_put_str(w, vla_loadgen_task(id % o->tasks, task, sizeof task));
    }
    size_t n;
    vla_np_writer_data(w, &n);
    return n;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *robot_main(void *arg) {
    robot_thread *r = arg;
    vla_np_writer w;
    if (vla_np_writer_init(&w) != VLA_OK) return NULL;
    build_request(r->o, r->id, &w);
    size_t n;
    const uint8_t *req = vla_np_writer_data(&w, &n);
    vla_ws_client *c = NULL;
    if (vla_ws_connect(r->o->host, r->o->port, NULL, 30, &c) != VLA_OK) {
        snprintf(r->err, sizeof r->err, "%s", vla_error_message());
        r->errors++;
        vla_np_writer_free(&w);
        return NULL;
    }
    int op;
    uint8_t *d;
    size_t dn;
    if (vla_ws_recv(c, &op, &d, &dn, 30) == VLA_OK) free(d); /* metadata */
    /* at least one request: a robot whose connection took the whole window (a loaded machine, a short
     * --seconds) still gives a latency, where it gave none and the run reported no throughput */
    do {
        double t0 = vla_now_s();
        if (vla_ws_send(c, VLA_WS_BINARY, req, n) != VLA_OK || vla_ws_recv(c, &op, &d, &dn, 60) != VLA_OK) {
            snprintf(r->err, sizeof r->err, "%s", vla_error_message());
            r->errors++;
            break;
        }
        double ms = (vla_now_s() - t0) * 1e3;
        vla_np_map m;
        if (op != VLA_WS_BINARY || vla_np_parse(d, dn, &m) != VLA_OK) {
            snprintf(r->err, sizeof r->err, "%s", op == VLA_WS_TEXT ? (char *)d : "an unreadable reply");
            r->errors++;
            free(d);
            break;
        }
        const vla_np_field *b = vla_np_get(&m, "server_timing/batch_size");
        r->batch_sum += b ? vla_np_at(b, 0) : 1;
        vla_np_map_free(&m);
        free(d);
        if (r->n == r->cap) {
            int64_t cap = r->cap ? 2 * r->cap : 4096;
            double *nl = realloc(r->lat, (size_t)cap * sizeof *nl);
            if (!nl) break;
            r->lat = nl, r->cap = cap;
        }
        r->lat[r->n++] = ms;
    } while (vla_now_s() < r->until);
    vla_ws_close(c);
    vla_np_writer_free(&w);
    return NULL;
}

vla_status vla_loadgen_run(const vla_loadgen_opts *o, vla_loadgen_result *out) {
    memset(out, 0, sizeof *out);
    if (o->clients < 1 || o->clients > 1024 || !(o->seconds > 0))
        return vla_error(VLA_ERR_INVALID_ARG, "loadgen: 1..1024 clients for a positive time");
    robot_thread *rs = calloc((size_t)o->clients, sizeof *rs);
    pthread_t *th = calloc((size_t)o->clients, sizeof *th);
    if (!rs || !th) {
        free(rs), free(th);
        return vla_error(VLA_ERR_NOMEM, "loadgen: out of memory");
    }
    double t0 = vla_now_s();
    for (int i = 0; i < o->clients; i++) {
        rs[i] = (robot_thread){o, i, t0 + o->seconds, NULL, 0, 0, 0, 0, ""};
        pthread_create(&th[i], NULL, robot_main, &rs[i]);
    }
    int64_t total = 0;
    for (int i = 0; i < o->clients; i++) pthread_join(th[i], NULL), total += rs[i].n;
    out->seconds = vla_now_s() - t0;
    double *all = malloc((size_t)(total + 1) * sizeof *all);
    vla_status st = all ? VLA_OK : vla_error(VLA_ERR_NOMEM, "loadgen: out of memory");
    int64_t k = 0;
    double bsum = 0;
    for (int i = 0; i < o->clients; i++) {
        if (all) memcpy(all + k, rs[i].lat, (size_t)rs[i].n * sizeof *all);
        k += rs[i].n, out->errors += rs[i].errors, bsum += rs[i].batch_sum;
        if (rs[i].errors && st == VLA_OK) st = vla_error(VLA_ERR_IO, "loadgen: client %d: %s", i, rs[i].err);
        free(rs[i].lat);
    }
    if (all && total > 0) {
        qsort(all, (size_t)total, sizeof *all, cmp_d);
        double sum = 0;
        for (int64_t i = 0; i < total; i++) sum += all[i];
        out->requests = total;
        out->throughput = (double)total / out->seconds;
        out->p50_ms = all[(int64_t)floor(0.50 * (double)(total - 1))];
        out->p99_ms = all[(int64_t)floor(0.99 * (double)(total - 1))];
        out->mean_ms = sum / (double)total, out->max_ms = all[total - 1];
        out->mean_batch = bsum / (double)total;
    }
    free(all), free(rs), free(th);
    return st;
}

vla_status vla_loadgen_checkpoint(const char *dir, const char *config) {
    vla_policy_config cfg;
    VLA_TRY(vla_policy_config_load(config, &cfg));
    const int K = 2, frame = 18;
    if (cfg.action.state_dim < K * frame) cfg.action.state_dim = K * frame;
    if (cfg.action.action_dim < 2) return vla_error(VLA_ERR_INVALID_ARG, "loadgen: %s predicts fewer than 2 action dims", config);
    vla_policy *p = NULL;
    VLA_TRY(vla_policy_create(&cfg, vla_backend_find(vla_backend_default_name()), &p));
    vla_status st = vla_policy_init_weights(p, 1);
    float lo[36], hi[36], mean[2] = {0, 0}, sd[2] = {10, 10};
    for (int i = 0; i < K * frame; i++) lo[i] = 0, hi[i] = 512;
    vla_normalizer ns = {0}, na = {0};
    if (st == VLA_OK) st = vla_normalizer_init(&ns, VLA_NORM_MIN_MAX, VLA_NORM_EPS_LEROBOT, K * frame, lo, hi, 0);
    if (st == VLA_OK) st = vla_normalizer_init(&na, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 2, mean, sd, 0);
    vla_pretrained_meta m;
    memset(&m, 0, sizeof m);
    m.state_width = K * frame, m.action_width = 2, m.fps = 10, m.n_obs_steps = K, m.relative_actions = true;
    snprintf(m.state_keys, sizeof m.state_keys, "observation.state,observation.environment_state");
    snprintf(m.task, sizeof m.task, "Push the T-shaped block onto the T-shaped target.");
    json_t *cj = st == VLA_OK ? vla_pretrained_config_json(p, &ns, &na, &m) : NULL;
    if (st == VLA_OK && !cj) st = vla_error(VLA_ERR_NOMEM, "loadgen: config.json");
    if (st == VLA_OK) st = vla_pretrained_write_dir(dir, p, NULL, cj);
    json_decref(cj);
    vla_normalizer_free(&ns), vla_normalizer_free(&na);
    vla_policy_free(p);
    return st;
}

/* engine.c — requests checked and turned into policy inputs, batched
 * sampling, chunks back in the robot's units (see engine.h). */
#include "serve/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "tensor/backend.h"
#include "checkpoint/pretrained.h"
#include "checkpoint/published.h"
#include "policy/memory.h"
#include "policy/precision.h"

#define MAX_MAPPINGS 32
#define MAX_TASK 4096
#define MAX_FRAME 512 /* state values per frame */

struct vla_engine {
    vla_engine_opts o;
    vla_pretrained pm;
    vla_policy *policy; /* pm.policy, or a copy with other flow steps */
    vla_engine_info info;
    int64_t Sd, Ad, pcams;     /* the policy's padded state and action dims, image slots */
    int64_t action_norm_width; /* channels per step of the action normaliser */
    int n_map;
    char map_from[MAX_MAPPINGS][VLA_NP_MAX_KEY], map_to[MAX_MAPPINGS][64];
    bool arrival_order; /* VLA_SERVE_BATCH_ORDER=arrival: a batch as it came (A/B runs; vla_engine_run) */
};

struct vla_session {
    uint64_t id, requests;
    int K;
    int64_t frame_w, pushed;
    float *ring; /* [K × frame_w] */
};

struct vla_request {
    float *state;    /* [Sd] normalised, zero-padded */
    float *images;   /* [pcams × 3 × img × img] */
    uint8_t *valid;  /* [pcams] */
    char *task;
    uint64_t key;
    int32_t embodiment;
    double ref[64];  /* relative actions: observation.state now */
    bool rtc;
    float *target;   /* [H × Ad] normalised RTC target */
    float *weights;  /* [H] */
    float *actions;  /* [H × action_dim] the answer, env units */
};

void vla_engine_opts_default(vla_engine_opts *o) {
    memset(o, 0, sizeof *o);
    o->rtc_schedule = VLA_RTC_EXP;
    o->rtc_beta = 5.0;
}

/* "a:b,c:d" → pairs; the right side is a LeRobot key. */
static vla_status parse_keys(vla_engine *e, const char *spec) {
    for (const char *q = spec; q && *q;) {
        size_t len = strcspn(q, ","), colon = strcspn(q, ":");
        if (colon >= len || colon == 0 || colon + 1 == len)
            return vla_error(VLA_ERR_INVALID_ARG, "--serve.keys: '%.*s' is not CLIENT_KEY:LEROBOT_KEY", (int)len, q);
        if (e->n_map >= MAX_MAPPINGS) return vla_error(VLA_ERR_INVALID_ARG, "--serve.keys: more than %d mappings", MAX_MAPPINGS);
        if (colon >= VLA_NP_MAX_KEY || len - colon - 1 >= 64)
            return vla_error(VLA_ERR_INVALID_ARG, "--serve.keys: '%.*s' is too long", (int)len, q);
        snprintf(e->map_from[e->n_map], VLA_NP_MAX_KEY, "%.*s", (int)colon, q);
        snprintf(e->map_to[e->n_map], 64, "%.*s", (int)(len - colon - 1), q + colon + 1);
        e->n_map++;
        q += len + (q[len] == ',');
    }
    return VLA_OK;
}

void vla_engine_free(vla_engine *e) {
    if (!e) return;
    if (e->policy) vla_policy_weights_release(e->policy);
    if (e->policy && e->policy != e->pm.policy) vla_policy_free(e->policy);
    if (e->pm.policy) vla_pretrained_free(&e->pm);
    free(e);
}

vla_status vla_engine_open(const vla_engine_opts *o, vla_engine **out) {
    *out = NULL;
    if (!o->policy_path) return vla_error(VLA_ERR_INVALID_ARG, "serve: --policy.path is required");
    vla_engine *e = calloc(1, sizeof *e);
    if (!e) return vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    e->o = *o;
    if (!(e->o.rtc_beta > 0)) e->o.rtc_beta = 5.0;
    const char *order = getenv("VLA_SERVE_BATCH_ORDER");
    e->arrival_order = order && !strcmp(order, "arrival");
    const vla_ops *ops = NULL;
    vla_status st = parse_keys(e, o->keys);
    if (st == VLA_OK) st = vla_backend_get(o->device ? o->device : vla_backend_default_name(), &ops);
    if (st == VLA_OK) {
        if (vla_published_detect(o->policy_path))
            st = vla_published_open(o->policy_path, o->policy_config, o->embodiment, ops, &e->pm);
        else if (o->policy_config)
            st = vla_error(VLA_ERR_INVALID_ARG, "serve: %s is a vla.c checkpoint, which carries its config; drop "
                           "--policy.config", o->policy_path);
        else if ((st = vla_pretrained_load(o->policy_path, ops, &e->pm)) == VLA_OK)
            st = vla_pretrained_select_embodiment(&e->pm, o->embodiment, NULL);
    }
    e->policy = e->pm.policy;
    if (st == VLA_OK && o->flow_steps > 0 && o->flow_steps != e->policy->cfg.flow.steps) {
        vla_policy_config cfg = e->policy->cfg; /* a policy fixes its Euler steps at creation */
        cfg.flow.steps = o->flow_steps;
        vla_policy *p = NULL;
        st = vla_policy_create(&cfg, ops, &p);
        if (st == VLA_OK) {
            ops->copy_bytes(p->weights, e->pm.policy->weights, (size_t)e->pm.policy->n_weight_floats * sizeof(float));
            e->policy = p;
        }
    }
    vla_precision prec = VLA_PREC_FP32;
    if (st == VLA_OK) st = vla_inference_precision(o->precision, ops, &prec);
    if (st == VLA_OK) st = vla_policy_set_precision(e->policy, prec, NULL);
    if (st != VLA_OK) {
        vla_engine_free(e);
        return st;
    }
    /* the weights never change while the engine lives: held from here to
     * vla_engine_free, so a GPU casts each weight once and keeps the cast */
    vla_policy_weights_hold(e->policy);
    const vla_policy_config *c = &e->policy->cfg;
    const vla_pretrained_meta *m = &e->pm.meta;
    vla_engine_info *in = &e->info;
    snprintf(in->family, sizeof in->family, "%s", e->policy->ops->name);
    snprintf(in->config, sizeof in->config, "%s", c->name);
    snprintf(in->precision, sizeof in->precision, "%s", vla_precision_name(prec));
    snprintf(in->device, sizeof in->device, "%s", ops->name);
    in->horizon = c->action.horizon, in->action_dim = m->action_width;
    in->n_action_steps = m->n_action_steps > 0 ? m->n_action_steps : (int)(in->horizon < 8 ? in->horizon : 8);
    in->n_obs_steps = m->n_obs_steps > 1 ? m->n_obs_steps : 1;
    in->state_frame = m->state_width / in->n_obs_steps;
    in->cameras = m->cameras, in->image_size = c->vision.image_size, in->fps = m->fps;
    in->relative_actions = m->relative_actions, in->rtc = vla_rtc_supported(e->policy);
    snprintf(in->task, sizeof in->task, "%s", m->task);
    snprintf(in->dir, sizeof in->dir, "%s", e->pm.dir);
    if (!m->state_keys[0]) snprintf(in->state_keys[in->n_state_keys++], 64, "observation.state");
    for (const char *q = m->state_keys; *q && in->n_state_keys < VLA_ENGINE_MAX_KEYS;) {
        size_t len = strcspn(q, ",");
        snprintf(in->state_keys[in->n_state_keys++], 64, "%.*s", (int)len, q);
        q += len + (q[len] == ',');
    }
    e->Sd = c->action.state_dim, e->Ad = c->action.action_dim, e->pcams = c->vision.cameras;
    e->action_norm_width = e->pm.action_norm.dim / (m->action_stats_per_step ? in->horizon : 1);
    if (in->state_frame * in->n_obs_steps > e->Sd || in->action_dim > e->Ad || in->action_dim > 64 ||
        in->cameras > e->pcams) {
        vla_status bad = vla_error(VLA_ERR_FORMAT, "serve: checkpoint %s: its features (state %lld, action %lld, cameras %d) do "
                         "not fit its policy (state %lld, action %lld, cameras %lld)", o->policy_path,
                         (long long)(in->state_frame * in->n_obs_steps), (long long)in->action_dim, in->cameras,
                         (long long)e->Sd, (long long)e->Ad, (long long)e->pcams);
        vla_engine_free(e);
        return bad;
    }
    *out = e;
    return VLA_OK;
}

void vla_engine_log_memory(const vla_engine *e, int max_batch) {
    const vla_ops *ops = e->policy->tops;
    int64_t free_b = vla_ops_stat_of(ops, VLA_STAT_DEVICE_FREE_BYTES);
    if (free_b < 0 || max_batch < 1) return;
    vla_memory_opts o = {.sized_as = ops->name, .precision = vla_policy_precision_mode(e->policy),
                         .batch = max_batch};
    vla_memory_use u;
    if (vla_policy_memory_measure_inference(&e->policy->cfg, &o, &u) != VLA_OK) {
        vla_log(VLA_LOG_WARN, "serving memory not measured: %s", vla_error_message());
        vla_error_clear();
        return;
    }
    const double GiB = 1073741824.0;
    double rest = (double)u.peak - (double)u.params; /* the weights are on the device already */
    vla_log(rest <= (double)free_b ? VLA_LOG_INFO : VLA_LOG_WARN,
            "%sserving batches of up to %d holds up to %.1f GiB on the device (measured on the meta backend: the "
            "weights %.1f, their casts and the sampling arenas %.1f) with %.1f GiB free beside the weights%s",
            rest <= (double)free_b ? "" : "may not fit: ", max_batch, (double)u.peak / GiB, (double)u.params / GiB,
            rest / GiB, (double)free_b / GiB, rest <= (double)free_b ? "" : "; a smaller --serve.max_batch needs less");
}

const vla_engine_info *vla_engine_get_info(const vla_engine *e) { return &e->info; }

void vla_engine_write_metadata(const vla_engine *e, vla_np_writer *w) {
    const vla_engine_info *in = &e->info;
    vla_np_put_map(w, 15);
    vla_np_put_str(w, "server"), vla_np_put_str(w, "vla.c " VLA_VERSION);
    vla_np_put_str(w, "policy"), vla_np_put_str(w, in->family);
    vla_np_put_str(w, "config"), vla_np_put_str(w, in->config);
    vla_np_put_str(w, "precision"), vla_np_put_str(w, in->precision);
    vla_np_put_str(w, "action_dim"), vla_np_put_int(w, in->action_dim);
    vla_np_put_str(w, "action_horizon"), vla_np_put_int(w, in->horizon);
    vla_np_put_str(w, "n_action_steps"), vla_np_put_int(w, in->n_action_steps); /* execute these, then re-plan */
    vla_np_put_str(w, "fps"), vla_np_put_float(w, in->fps);
    vla_np_put_str(w, "state_keys"), vla_np_put_list(w, in->n_state_keys);
    for (int i = 0; i < in->n_state_keys; i++) vla_np_put_str(w, in->state_keys[i]);
    vla_np_put_str(w, "state_dim"), vla_np_put_int(w, in->state_frame);
    vla_np_put_str(w, "n_obs_steps"), vla_np_put_int(w, in->n_obs_steps);
    vla_np_put_str(w, "n_cameras"), vla_np_put_int(w, in->cameras);
    vla_np_put_str(w, "image_shape"), vla_np_put_list(w, 3);
    vla_np_put_int(w, in->cameras ? in->image_size : 0), vla_np_put_int(w, in->cameras ? in->image_size : 0);
    vla_np_put_int(w, 3);
    vla_np_put_str(w, "task"), vla_np_put_str(w, in->task);
    vla_np_put_str(w, "rtc"), vla_np_put_map(w, 3);
    vla_np_put_str(w, "supported"), vla_np_put_bool(w, in->rtc);
    vla_np_put_str(w, "schedule"), vla_np_put_str(w, vla_rtc_schedule_name(e->o.rtc_schedule));
    vla_np_put_str(w, "max_guidance_weight"), vla_np_put_float(w, e->o.rtc_beta);
}

/* ---- sessions --------------------------------------------------------------------------------- */

vla_status vla_session_create(const vla_engine *e, uint64_t id, vla_session **out) {
    *out = NULL;
    vla_session *s = calloc(1, sizeof *s);
    if (!s) return vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    s->id = id, s->K = e->info.n_obs_steps, s->frame_w = e->info.state_frame;
    if (!(s->ring = calloc((size_t)(s->K * s->frame_w) + 1, sizeof(float)))) {
        free(s);
        return vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    }
    *out = s;
    return VLA_OK;
}

void vla_session_free(vla_session *s) {
    if (s) free(s->ring), free(s);
}

void vla_session_reset(vla_session *s) { s->pushed = 0; }

/* ---- requests ------------------------------------------------------------------------------------ */

void vla_request_free(vla_request *r) {
    if (!r) return;
    free(r->state), free(r->images), free(r->valid), free(r->task), free(r->target), free(r->weights);
    free(r->actions), free(r);
}

bool vla_request_uses_rtc(const vla_request *r) { return r->rtc; }
const float *vla_request_actions(const vla_request *r) { return r->actions; }

/* The field the request sent under a LeRobot key (after --serve.keys). */
static const vla_np_field *field_for(const vla_engine *e, const vla_np_map *m, const char *key) {
    for (int i = 0; i < m->n; i++) {
        const char *k = m->fields[i].key;
        for (int j = 0; j < e->n_map; j++)
            if (!strcmp(e->map_from[j], k)) {
                k = e->map_to[j];
                break;
            }
        if (!strcmp(k, key)) return &m->fields[i];
    }
    return NULL;
}

static const char *mapped_key(const vla_engine *e, const char *k) {
    for (int j = 0; j < e->n_map; j++)
        if (!strcmp(e->map_from[j], k)) return e->map_to[j];
    return k;
}

static void list_keys(const vla_np_map *m, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < m->n && o + 8 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", m->fields[i].key);
    if (m->n == 0) snprintf(buf, cap, "none");
}

static vla_status missing(const vla_engine *e, const vla_np_map *m, const char *key, const char *what) {
    char have[512];
    list_keys(m, have, sizeof have);
    (void)e;
    return vla_error(VLA_ERR_INVALID_ARG, "%s: missing (%s); the request has: %s — name other keys with "
                     "--serve.keys=CLIENT_KEY:%s", key, what, have, key);
}

static vla_status numbers(const vla_np_field *f, const char *key, int64_t i0, int64_t n, float *out) {
    for (int64_t i = 0; i < n; i++) {
        double v = vla_np_at(f, i0 + i);
        if (!isfinite(v)) return vla_error(VLA_ERR_NUMERIC, "%s: element %lld is %g (not finite)", key, (long long)(i0 + i), v);
        out[i] = (float)v;
    }
    return VLA_OK;
}

/* The state keys: each [w] (this step) or [K, w]; frames oldest first. */
static vla_status read_state(const vla_engine *e, vla_session *s, const vla_np_map *m, vla_request *r) {
    const vla_engine_info *in = &e->info;
    const int K = in->n_obs_steps;
    const vla_np_field *f[VLA_ENGINE_MAX_KEYS];
    int64_t width[VLA_ENGINE_MAX_KEYS], total = 0;
    int frames = -1;
    for (int k = 0; k < in->n_state_keys; k++) {
        const char *key = in->state_keys[k];
        if (!(f[k] = field_for(e, m, key))) {
            char what[160];
            snprintf(what, sizeof what, "the policy reads %s%s%s", in->state_keys[0], in->n_state_keys > 1 ? ", " : "",
                     in->n_state_keys > 1 ? in->state_keys[1] : "");
            return missing(e, m, key, what);
        }
        if (!vla_np_is_numeric(f[k]) || f[k]->kind == VLA_NP_BOOL)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: not an array of numbers", key);
        int fr = 1;
        int64_t cnt = vla_np_count(f[k]);
        if (f[k]->kind == VLA_NP_ARRAY && f[k]->ndim == 2) fr = (int)f[k]->shape[0];
        else if (f[k]->kind == VLA_NP_ARRAY && f[k]->ndim > 2)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: %d dimensions; send [%s] or [%d, %s]", key, f[k]->ndim, "width", K, "width");
        if (fr != 1 && fr != K)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: %d frames; the policy reads 1 (this step) or %d (the last %d, oldest first)",
                             key, fr, K, K);
        if (frames >= 0 && fr != frames)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: %d frames, %s had %d", key, fr, in->state_keys[0], frames);
        frames = fr;
        width[k] = cnt / fr;
        total += width[k];
    }
    if (total != in->state_frame) {
        char parts[512];
        size_t o = 0;
        for (int k = 0; k < in->n_state_keys; k++)
            o += (size_t)snprintf(parts + o, sizeof parts - o, "%s%s [%lld]", k ? " + " : "", in->state_keys[k], (long long)width[k]);
        return vla_error(VLA_ERR_INVALID_ARG, "state: %s = %lld values per frame; the policy was trained on %lld", parts,
                         (long long)total, (long long)in->state_frame);
    }
    float *st = r->state;
    if (frames == K && K > 1) { /* the client's own history */
        for (int fr = 0; fr < K; fr++)
            for (int k = 0, off = 0; k < in->n_state_keys; off += (int)width[k], k++)
                VLA_TRY(numbers(f[k], in->state_keys[k], fr * width[k], width[k], st + fr * total + off));
    } else { /* this step's frame into the session's history */
        float frame[MAX_FRAME];
        if (total > MAX_FRAME) return vla_error(VLA_ERR_UNSUPPORTED, "state: %lld values per frame", (long long)total);
        for (int k = 0, off = 0; k < in->n_state_keys; off += (int)width[k], k++)
            VLA_TRY(numbers(f[k], in->state_keys[k], 0, width[k], frame + off));
        memcpy(s->ring + (s->pushed % K) * total, frame, (size_t)total * sizeof(float));
        s->pushed++;
        for (int fr = 0; fr < K; fr++) { /* frames before the first repeat it, as the loader clamps */
            int64_t idx = s->pushed - K + fr;
            if (idx < 0) idx = 0;
            memcpy(st + fr * total, s->ring + (idx % K) * total, (size_t)total * sizeof(float));
        }
    }
    /* relative actions are added to observation.state at this step */
    if (in->relative_actions) {
        const vla_np_field *os = field_for(e, m, "observation.state");
        int64_t w = os ? vla_np_count(os) / (frames > 0 ? frames : 1) : 0;
        if (!os || w != in->action_dim)
            return vla_error(VLA_ERR_INVALID_ARG, "observation.state: the policy predicts actions relative to it, so it "
                             "needs %lld values per frame (has %lld)", (long long)in->action_dim, (long long)w);
        for (int64_t d = 0; d < w; d++) r->ref[d] = vla_np_at(os, (frames - 1) * w + d);
    }
    vla_normalize(&e->pm.state_norm, st, st, 1);
    return VLA_OK;
}

typedef struct {
    const char *key; /* the LeRobot key it maps to: cameras go in the order of these */
    const vla_np_field *f;
} camera_field;

static int cmp_cameras(const void *a, const void *b) {
    return strcmp(((const camera_field *)a)->key, ((const camera_field *)b)->key);
}

static vla_status read_images(const vla_engine *e, const vla_np_map *m, vla_request *r) {
    const vla_engine_info *in = &e->info;
    camera_field cams[VLA_NP_MAX_FIELDS];
    int n = 0;
    for (int i = 0; i < m->n; i++) {
        const char *k = mapped_key(e, m->fields[i].key);
        if (!strcmp(k, "observation.image") || !strncmp(k, "observation.images.", 19))
            cams[n++] = (camera_field){k, &m->fields[i]};
    }
    if (in->cameras == 0) return VLA_OK; /* a state-only policy: images are not read */
    if (n != in->cameras)
        return vla_error(VLA_ERR_INVALID_ARG, "images: the policy reads %d camera(s) (observation.image or "
                         "observation.images.<camera>, in key order), the request has %d", in->cameras, n);
    qsort(cams, (size_t)n, sizeof cams[0], cmp_cameras);
    const int64_t S = in->image_size, plane = S * S;
    for (int c = 0; c < n; c++) {
        const vla_np_field *f = cams[c].f;
        if (f->kind != VLA_NP_ARRAY || f->dtype.kind != VLA_NP_U || f->dtype.size != 1)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: an image is a uint8 array (|u1), not %s", f->key,
                             f->kind == VLA_NP_ARRAY ? f->dtype.str : "a scalar or string");
        if (f->ndim != 3 || f->shape[0] != S || f->shape[1] != S || f->shape[2] != 3)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: shape [%lld, %lld, %lld]%s; the policy reads [%lld, %lld, 3] "
                             "(height, width, RGB)", f->key, (long long)f->shape[0], (long long)(f->ndim > 1 ? f->shape[1] : 0),
                             (long long)(f->ndim > 2 ? f->shape[2] : 0), f->ndim != 3 ? " (not 3-D)" : "", (long long)S,
                             (long long)S);
        float *dst = r->images + (int64_t)c * 3 * plane;
        for (int64_t q = 0; q < plane; q++)
            for (int ch = 0; ch < 3; ch++) dst[ch * plane + q] = f->data[q * 3 + ch] * (1.0f / 255.0f);
        r->valid[c] = 1;
    }
    return VLA_OK;
}

static vla_status read_int(const vla_np_field *f, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    double v = f && vla_np_count(f) == 1 && vla_np_is_numeric(f) ? vla_np_at(f, 0) : NAN;
    if (!(v == floor(v)) || v < (double)lo || v > (double)hi)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: an integer in [%lld, %lld], not %s", key, (long long)lo,
                         (long long)hi, f && f->kind == VLA_NP_STRING ? "a string" : "that");
    *out = (int64_t)v;
    return VLA_OK;
}

static vla_status read_rtc(const vla_engine *e, const vla_np_map *m, vla_request *r) {
    const vla_engine_info *in = &e->info;
    const vla_np_field *prev = field_for(e, m, "prev_chunk_left_over"), *fd = field_for(e, m, "inference_delay");
    const vla_np_field *fe = field_for(e, m, "execution_horizon");
    if (!prev) {
        if (fd && vla_np_count(fd) == 1 && vla_np_at(fd, 0) != 0)
            return vla_error(VLA_ERR_INVALID_ARG, "inference_delay: given without prev_chunk_left_over (the actions to hold to)");
        return VLA_OK;
    }
    if (!in->rtc)
        return vla_error(VLA_ERR_UNSUPPORTED, "prev_chunk_left_over: real-time chunking needs a policy family with a "
                         "velocity field (groot, pi05); this checkpoint is %s", in->family);
    const int64_t A = in->action_dim, H = in->horizon;
    if (!vla_np_is_numeric(prev) || prev->kind == VLA_NP_BOOL)
        return vla_error(VLA_ERR_INVALID_ARG, "prev_chunk_left_over: not an array of numbers");
    int64_t cnt = vla_np_count(prev);
    if (prev->kind == VLA_NP_ARRAY && prev->ndim == 2 && prev->shape[1] != A)
        return vla_error(VLA_ERR_INVALID_ARG, "prev_chunk_left_over: shape [%lld, %lld]; rows are actions of %lld dims",
                         (long long)prev->shape[0], (long long)prev->shape[1], (long long)A);
    if (cnt == 0 || cnt % A != 0 || cnt / A > H || (prev->kind == VLA_NP_ARRAY && prev->ndim > 2))
        return vla_error(VLA_ERR_INVALID_ARG, "prev_chunk_left_over: %lld values; send [n, %lld] with 1 ≤ n ≤ %lld (the "
                         "chunk length)", (long long)cnt, (long long)A, (long long)H);
    int64_t n = cnt / A, d = 0, end = n;
    if (fd) VLA_TRY(read_int(fd, "inference_delay", 0, n, &d));
    if (fe) VLA_TRY(read_int(fe, "execution_horizon", 1, H, &end));
    if (end > n) end = n;
    float *prevv = malloc((size_t)cnt * sizeof(float));
    if (!prevv) return vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    vla_status st = numbers(prev, "prev_chunk_left_over", 0, cnt, prevv);
    if (st == VLA_OK) {
        vla_rtc_prefix_from_env(&e->pm.action_norm, prevv, (int)n, (int)A, in->relative_actions ? r->ref : NULL, H,
                                e->Ad, r->target);
        vla_rtc_prefix_weights(e->o.rtc_schedule, (int)d, (int)end, (int)H, r->weights);
        r->rtc = true;
    }
    free(prevv);
    return st;
}

vla_status vla_request_prepare(const vla_engine *e, vla_session *s, const vla_np_map *m, vla_request **out) {
    *out = NULL;
    const vla_engine_info *in = &e->info;
    const int64_t img = in->image_size;
    vla_request *r = calloc(1, sizeof *r);
    if (!r) return vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    r->state = calloc((size_t)e->Sd + 1, sizeof(float));
    r->images = calloc((size_t)(e->pcams * 3 * img * img) + 1, sizeof(float));
    r->valid = calloc((size_t)e->pcams + 1, 1);
    r->target = calloc((size_t)(in->horizon * e->Ad), sizeof(float));
    r->weights = calloc((size_t)in->horizon, sizeof(float));
    r->actions = calloc((size_t)(in->horizon * in->action_dim), sizeof(float));
    vla_status st = VLA_OK;
    if (!r->state || !r->images || !r->valid || !r->target || !r->weights || !r->actions)
        st = vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    int64_t pushed = s->pushed; /* a failed request leaves the history as it was */
    if (st == VLA_OK) st = read_state(e, s, m, r);
    if (st == VLA_OK) st = read_images(e, m, r);
    if (st == VLA_OK) {
        const vla_np_field *t = field_for(e, m, "task");
        if (!t) t = field_for(e, m, "prompt");
        if (t && t->kind != VLA_NP_STRING) st = vla_error(VLA_ERR_INVALID_ARG, "%s: the instruction is a string", t->key);
        else if (t && t->len > MAX_TASK) st = vla_error(VLA_ERR_INVALID_ARG, "%s: %zu bytes (at most %d)", t->key, t->len, MAX_TASK);
        else {
            const char *txt = t ? t->str : in->task;
            size_t len = t ? t->len : strlen(in->task);
            if (!(r->task = malloc(len + 1))) st = vla_error(VLA_ERR_NOMEM, "serve: out of memory");
            else memcpy(r->task, txt, len), r->task[len] = 0;
            if (r->task && strlen(r->task) != len) st = vla_error(VLA_ERR_INVALID_ARG, "%s: holds a NUL byte", t->key);
        }
    }
    if (st == VLA_OK) {
        const vla_np_field *sd = field_for(e, m, "seed");
        int64_t key = 0;
        if (sd) st = read_int(sd, "seed", 0, INT64_MAX / 2, &key), r->key = (uint64_t)key;
        else r->key = s->id << 24 ^ s->requests;
    }
    if (st == VLA_OK) st = read_rtc(e, m, r);
    if (st != VLA_OK) {
        s->pushed = pushed;
        vla_request_free(r);
        return st;
    }
    r->embodiment = e->pm.meta.embodiment;
    s->requests++;
    *out = r;
    return VLA_OK;
}

/* A batch's requests in a canonical order: by instruction, then by arrival. The policy's captured regions
 * (CUDA graphs on a GPU) are keyed by the batch's layout, which follows its samples' prompts in order; robots
 * on several tasks reach the server in a different order every time, and sorted the same set of tasks
 * makes the same layout, so the recorded chunk replays (vla bench serve --tasks). A sample's actions do not
 * depend on its place in the batch: its noise is keyed by the request (sample_keys).
 * VLA_SERVE_BATCH_ORDER=arrival keeps the arrival order (gpu_check's A/B run). */
typedef struct {
    const char *task;
    int at;
} batch_slot;

static int cmp_slots(const void *a, const void *b) {
    const batch_slot *x = a, *y = b;
    int c = strcmp(x->task, y->task);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

vla_status vla_engine_run(vla_engine *e, vla_request *const *reqs_in, int n) {
    if (n < 1) return VLA_OK;
    batch_slot *slot = malloc((size_t)n * sizeof *slot);
    vla_request **reqs = malloc((size_t)n * sizeof *reqs);
    if (!slot || !reqs) {
        free(slot), free(reqs);
        return vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    }
    for (int i = 0; i < n; i++) slot[i] = (batch_slot){reqs_in[i]->task, i};
    if (!e->arrival_order) qsort(slot, (size_t)n, sizeof *slot, cmp_slots);
    for (int i = 0; i < n; i++) reqs[i] = reqs_in[slot[i].at];
    free(slot);
    const vla_engine_info *in = &e->info;
    const int64_t H = in->horizon, Ad = e->Ad, Sd = e->Sd, img = in->image_size, A = in->action_dim;
    const int64_t imgf = e->pcams * 3 * img * img;
    float *state = malloc((size_t)(n * Sd) * sizeof(float)), *images = malloc((size_t)(n * imgf + 1) * sizeof(float));
    float *acts = malloc((size_t)(n * H * Ad) * sizeof(float)), *target = calloc((size_t)(n * H * Ad), sizeof(float));
    float *weights = calloc((size_t)(n * H), sizeof(float));
    uint8_t *valid = malloc((size_t)(n * e->pcams) + 1);
    uint64_t *keys = malloc((size_t)n * sizeof *keys);
    int32_t *emb = malloc((size_t)n * sizeof *emb), *rd = malloc((size_t)n * sizeof *rd);
    const char **tasks = malloc((size_t)n * sizeof *tasks);
    vla_status st = VLA_OK;
    if (!state || !images || !acts || !target || !weights || !valid || !keys || !emb || !rd || !tasks)
        st = vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    bool rtc = false;
    for (int i = 0; st == VLA_OK && i < n; i++) {
        const vla_request *r = reqs[i];
        memcpy(state + i * Sd, r->state, (size_t)Sd * sizeof(float));
        memcpy(images + i * imgf, r->images, (size_t)imgf * sizeof(float));
        memcpy(valid + i * e->pcams, r->valid, (size_t)e->pcams);
        keys[i] = r->key, emb[i] = r->embodiment, tasks[i] = r->task, rd[i] = (int32_t)A;
        if (r->rtc) {
            rtc = true;
            memcpy(target + i * H * Ad, r->target, (size_t)(H * Ad) * sizeof(float));
            memcpy(weights + i * H, r->weights, (size_t)H * sizeof(float));
        }
    }
    if (st == VLA_OK) {
        vla_observation obs = {.n_samples = n, .task = tasks, .images = images, .image_valid = valid, .state = state,
                               .embodiment = emb, .seed = e->o.seed, .sample_keys = keys};
        if (rtc) {
            vla_rtc_guide g = {target, weights, rd, e->o.rtc_beta, e->o.rtc_no_jacobian};
            st = vla_rtc_sample(e->policy, &obs, &g, acts);
        } else {
            st = vla_policy_sample_actions(e->policy, &obs, acts);
        }
    }
    for (int i = 0; st == VLA_OK && i < n; i++) { /* env units: unnormalised, absolute */
        float *a = acts + i * H * Ad;
        vla_unnormalize_chunk(&e->pm.action_norm, a, H, e->action_norm_width, Ad);
        for (int64_t h = 0; h < H; h++)
            for (int64_t d = 0; d < A; d++)
                reqs[i]->actions[h * A + d] = a[h * Ad + d] + (in->relative_actions ? (float)reqs[i]->ref[d] : 0.0f);
    }
    free(state), free(images), free(acts), free(target), free(weights), free(valid), free(keys), free(emb), free(rd);
    free(tasks), free(reqs);
    return st;
}

/* state_map.c — a checkpoint's state features from a simulator's
 * observations (state_map.h), and eval.h's state history over them. */
#include "eval/state_map.h"

#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"

vla_status vla_state_source(const vla_env_spec *spec, int64_t width, int *src) {
    if (width == spec->agent_pos_dim) *src = VLA_SRC_AGENT_POS;
    else if (width == spec->state_dim) *src = VLA_SRC_STATE;
    else
        return vla_error(VLA_ERR_INVALID_ARG,
                         "eval: the policy's observation.state has %lld dims; env '%s' offers agent_pos (%d) or "
                         "state (%d)",
                         (long long)width, spec->name, spec->agent_pos_dim, spec->state_dim);
    return VLA_OK;
}

vla_status vla_state_mapping(const vla_env_spec *spec, const vla_pretrained_meta *m, vla_state_map *map) {
    memset(map, 0, sizeof *map);
    map->K = m->n_obs_steps > 1 ? m->n_obs_steps : 1;
    if (m->state_width % map->K != 0)
        return vla_error(VLA_ERR_INVALID_ARG, "eval: state width %lld is not %d frames of history",
                         (long long)m->state_width, map->K);
    int64_t fw = m->state_width / map->K;
    map->frame_w = (int)fw;
    if (!m->state_keys[0]) {
        map->n = 1, map->width[0] = (int)fw;
        return vla_state_source(spec, fw, &map->src[0]);
    }
    int total = 0;
    for (const char *q = m->state_keys; *q;) {
        size_t len = strcspn(q, ",");
        if (map->n >= VLA_STATE_MAX_KEYS) return vla_error(VLA_ERR_INVALID_ARG, "eval: too many state keys '%s'", m->state_keys);
        int i = map->n++;
        if (len == 17 && !strncmp(q, "observation.state", len)) {
            /* its width: what is left once the other keys are counted */
            int rest = 0;
            for (const char *r = q + len + (q[len] == ','); *r;) {
                size_t l2 = strcspn(r, ",");
                if (l2 == 29 && !strncmp(r, "observation.environment_state", l2)) rest += spec->env_state_dim;
                r += l2 + (r[l2] == ',');
            }
            map->width[i] = (int)fw - total - rest;
            VLA_TRY(vla_state_source(spec, map->width[i], &map->src[i]));
        } else if (len == 29 && !strncmp(q, "observation.environment_state", len)) {
            map->src[i] = VLA_SRC_ENV_STATE, map->width[i] = spec->env_state_dim;
        } else {
            return vla_error(VLA_ERR_UNSUPPORTED,
                             "eval: state key '%.*s' has no counterpart in env '%s' (observation.state, "
                             "observation.environment_state)",
                             (int)len, q, spec->name);
        }
        total += map->width[i];
        q += len + (q[len] == ',');
    }
    if (total != fw)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "eval: state keys '%s' give %d dims in env '%s', the policy was trained on %lld per frame",
                         m->state_keys, total, spec->name, (long long)fw);
    return VLA_OK;
}

void vla_state_from_obs(const vla_state_map *map, const vla_env_obs *ob, float *out) {
    for (int i = 0, off = 0; i < map->n; off += map->width[i], i++) {
        const double *v = map->src[i] == VLA_SRC_AGENT_POS ? ob->agent_pos : map->src[i] == VLA_SRC_STATE ? ob->state : ob->env_state;
        for (int k = 0; k < map->width[i]; k++) out[off + k] = (float)v[k];
    }
}

vla_status vla_eval_policy_state(const char *env, const vla_pretrained_meta *meta, const vla_env_obs *ob, float *out) {
    const vla_env_vtable *vt = vla_env_find(env);
    if (!vt) return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'", env);
    vla_state_map map;
    VLA_TRY(vla_state_mapping(vt->spec, meta, &map));
    vla_state_from_obs(&map, ob, out);
    return VLA_OK;
}

/* ---- state history (n_obs_steps) ----------------------------------------------
 * A ring of the last K frames' raw state vectors; before K frames were seen the
 * oldest slots repeat the first frame, as the loader clamps rows to the
 * episode's first. */
struct vla_eval_history {
    vla_state_map map;
    int64_t pushed;
    float *ring; /* [K × frame_w]; frame n lives at slot n % K */
};

vla_status vla_eval_history_create(const char *env, const vla_pretrained_meta *meta, vla_eval_history **out) {
    *out = NULL;
    const vla_env_vtable *vt = vla_env_find(env);
    if (!vt) return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'", env);
    vla_eval_history *h = calloc(1, sizeof *h);
    if (!h) return vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    vla_status st = vla_state_mapping(vt->spec, meta, &h->map);
    if (st == VLA_OK && !(h->ring = calloc((size_t)(h->map.K * h->map.frame_w) + 1, sizeof(float))))
        st = vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    if (st != VLA_OK) {
        vla_eval_history_free(h);
        return st;
    }
    *out = h;
    return VLA_OK;
}

void vla_eval_history_free(vla_eval_history *h) {
    if (!h) return;
    free(h->ring);
    free(h);
}

void vla_eval_history_reset(vla_eval_history *h) { h->pushed = 0; }

void vla_eval_history_push(vla_eval_history *h, const vla_env_obs *ob) {
    vla_state_from_obs(&h->map, ob, h->ring + (h->pushed % h->map.K) * h->map.frame_w);
    h->pushed++;
}

int64_t vla_eval_history_width(const vla_eval_history *h) { return (int64_t)h->map.K * h->map.frame_w; }

void vla_eval_history_state(const vla_eval_history *h, float *out) {
    int K = h->map.K, fw = h->map.frame_w;
    for (int f = 0; f < K; f++) {
        /* frame index of slot f (oldest first), clamped to the first frame */
        int64_t n = h->pushed - K + f;
        if (n < 0) n = 0;
        if (h->pushed == 0) {
            memset(out + f * fw, 0, (size_t)fw * sizeof(float));
            continue;
        }
        memcpy(out + f * fw, h->ring + (n % K) * fw, (size_t)fw * sizeof(float));
    }
}

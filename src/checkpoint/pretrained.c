/* pretrained.c — write and read a checkpoint's pretrained_model/ (see pretrained.h). */
#include "checkpoint/pretrained.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"
#include "io/safetensors.h"

/* "a,b,c" → ["a", "b", "c"], and back (into out, cap bytes). */
static json_t *keys_json(const char *list) {
    json_t *keys = json_array();
    for (const char *q = list; *q;) {
        size_t len = strcspn(q, ",");
        json_array_append_new(keys, json_stringn(q, len));
        q += len + (q[len] == ',');
    }
    return keys;
}

static void keys_from_json(const json_t *arr, char *out, size_t cap) {
    for (size_t i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
        const char *k = json_string_value(json_array_get(arr, i));
        size_t used = strlen(out);
        if (k) snprintf(out + used, cap - used, "%s%s", i ? "," : "", k);
    }
}

/* One embodiment's part of config.json: its normalisation, features, task and dataset. */
static json_t *embodiment_json(const vla_policy *p, const vla_normalizer *ns, const vla_normalizer *na,
                               const vla_pretrained_meta *m) {
    json_t *norm = json_pack("{s:o, s:o}", "observation.state", vla_norm_to_json(ns), "action", vla_norm_to_json(na));
    json_t *feat = json_pack("{s:I, s:I, s:i, s:I, s:f}", "observation.state", (json_int_t)m->state_width, "action",
                             (json_int_t)m->action_width, "cameras", m->cameras, "image_size",
                             (json_int_t)p->cfg.vision.image_size, "fps", m->fps);
    /* the order eval must rebuild the state vector in (see train/loader.h) */
    if (feat && m->state_keys[0]) json_object_set_new(feat, "state_keys", keys_json(m->state_keys));
    /* which camera fills which image slot (eval renders the same ones) */
    if (feat && m->image_keys[0]) json_object_set_new(feat, "image_keys", keys_json(m->image_keys));
    /* frames of state history the loader concatenated (eval keeps as many) */
    if (feat) json_object_set_new(feat, "n_obs_steps", json_integer(m->n_obs_steps > 1 ? m->n_obs_steps : 1));
    /* the action normalisation is of action − observation.state; eval adds the state back */
    if (feat && m->relative_actions) json_object_set_new(feat, "relative_actions", json_true());
    /* normalization.action then holds horizon × action channels, step-major */
    if (feat && m->action_stats_per_step) json_object_set_new(feat, "action_stats_per_step", json_true());
    return json_pack("{s:I, s:s, s:o, s:o, s:s, s:s}", "id", (json_int_t)m->embodiment, "name", m->embodiment_name,
                     "normalization", norm, "features", feat, "task", m->task, "dataset", m->dataset);
}

json_t *vla_pretrained_config_json_mixture(const vla_policy *p, int n, const vla_normalizer *const *ns,
                                           const vla_normalizer *const *na, const vla_pretrained_meta *metas) {
    json_t *pc = NULL;
    if (n < 1 || vla_policy_config_to_json(&p->cfg, &pc) != VLA_OK) return NULL;
    json_t *emb = json_array();
    for (int d = 0; d < n; d++) json_array_append_new(emb, embodiment_json(p, ns[d], na[d], &metas[d]));
    /* the top level repeats the first embodiment's entry: what a reader that
     * knows no embodiments (or a single-dataset run) uses */
    /* what eval executes per chunk: the training's decision, else eval's default min(horizon, 8) */
    int64_t h = p->cfg.action.horizon, nact = metas[0].n_action_steps > 0 ? metas[0].n_action_steps : h < 8 ? h : 8;
    json_t *root = json_pack("{s:s, s:s, s:o, s:I, s:o}", "type", vla_policy_config_family_name(&p->cfg), "name",
                             p->cfg.name, "policy", pc, "n_action_steps", (json_int_t)nact, "embodiments", emb);
    if (root && json_object_update(root, json_array_get(emb, 0)) != 0) json_decref(root), root = NULL;
    if (root) json_object_del(root, "id"), json_object_del(root, "name");
    if (root) json_object_set_new(root, "name", json_string(p->cfg.name));
    return root;
}

json_t *vla_pretrained_config_json(const vla_policy *p, const vla_normalizer *ns, const vla_normalizer *na,
                                   const vla_pretrained_meta *m) {
    return vla_pretrained_config_json_mixture(p, 1, &ns, &na, m);
}

/* weights: a host weights-layout buffer, or NULL for the policy's own
 * (brought to the host in *owned when the backend's memory is not). */
static vla_status fill_writer(vla_safetensors_writer *sw, const vla_policy *p, const float *weights, float **owned) {
    if (!weights && !(weights = vla_policy_weights_on_host(p, owned)))
        return vla_error(VLA_ERR_NOMEM, "checkpoint: out of memory for a host copy of the weights");
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *s = p->params[i].spec;
        const float *d = weights + (p->params[i].data - p->weights);
        VLA_TRY(vla_safetensors_writer_add(sw, s->name, VLA_F32, s->ndim, s->shape, d));
    }
    char buf[64];
    VLA_TRY(vla_safetensors_writer_set_meta(sw, "format", "pt"));
    snprintf(buf, sizeof buf, "%s", p->cfg.name);
    return vla_safetensors_writer_set_meta(sw, "vla_policy", buf);
}

vla_status vla_pretrained_write_ckpt(vla_ckpt_writer *w, const char *prefix, const vla_policy *p, const float *weights,
                                     const json_t *config) {
    char rel[256];
    snprintf(rel, sizeof rel, "%s/config.json", prefix);
    VLA_TRY(vla_ckpt_write_json(w, rel, config));
    vla_safetensors_writer *sw = NULL;
    VLA_TRY(vla_safetensors_writer_new(&sw));
    float *owned = NULL;
    vla_status st = fill_writer(sw, p, weights, &owned);
    snprintf(rel, sizeof rel, "%s/model.safetensors", prefix);
    if (st == VLA_OK) st = vla_ckpt_write_safetensors(w, rel, sw);
    vla_safetensors_writer_free(sw);
    free(owned);
    return st;
}

vla_status vla_pretrained_write_dir(const char *dir, const vla_policy *p, const float *weights, const json_t *config) {
    VLA_TRY(vla_mkdirs(dir));
    char path[VLA_CKPT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/config.json", dir);
    VLA_TRY(vla_json_write_file(path, config));
    vla_safetensors_writer *sw = NULL;
    VLA_TRY(vla_safetensors_writer_new(&sw));
    float *owned = NULL;
    vla_status st = fill_writer(sw, p, weights, &owned);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (st == VLA_OK) st = vla_safetensors_writer_write(sw, path);
    vla_safetensors_writer_free(sw);
    free(owned);
    return st;
}

vla_status vla_pretrained_load_weights(vla_policy *p, const char *path) {
    vla_safetensors st;
    VLA_TRY(vla_safetensors_open(path, &st));
    vla_status s = VLA_OK;
    for (int64_t i = 0; i < p->specs.n && s == VLA_OK; i++) {
        const vla_param_spec *sp = p->params[i].spec;
        const vla_safetensors_tensor *t;
        s = vla_safetensors_get(&st, sp->name, &t);
        if (s != VLA_OK) break;
        if (t->numel != sp->numel || t->ndim != sp->ndim) {
            s = vla_error(VLA_ERR_FORMAT, "%s: tensor '%s' has %lld elements, the policy expects %lld", path, sp->name,
                          (long long)t->numel, (long long)sp->numel);
            break;
        }
        float *dst = vla_policy_param_stage(p, i);
        if (!dst) {
            s = vla_error(VLA_ERR_NOMEM, "%s: out of memory staging tensor '%s'", path, sp->name);
            break;
        }
        s = vla_safetensors_tensor_to_f32(&st, t, dst, (size_t)sp->numel);
        int64_t bad = vla_policy_param_commit(p, i, dst);
        if (s == VLA_OK && bad >= 0)
            s = vla_error(VLA_ERR_NUMERIC, "%s: non-finite weight at element %lld of '%s'", path, (long long)bad,
                          sp->name);
    }
    vla_safetensors_close(&st);
    return s;
}

/* Resolve `path` to a pretrained_model directory, verifying the checkpoint
 * that holds it when there is one. */
static vla_status resolve(const char *path, char *dir, size_t cap) {
    char buf[VLA_CKPT_PATH_MAX + 64];
    snprintf(buf, sizeof buf, "%s/%s", path, VLA_CKPT_MANIFEST);
    if (vla_path_exists(buf)) { /* a step directory */
        VLA_TRY(vla_ckpt_verify(path, NULL));
        snprintf(dir, cap, "%s/%s", path, VLA_CKPT_MODEL_DIR);
        return VLA_OK;
    }
    snprintf(buf, sizeof buf, "%s/%s", path, VLA_CKPT_DIR);
    if (vla_is_dir(buf)) { /* an output directory */
        vla_ckpt_info ck;
        VLA_TRY(vla_ckpt_find_last(path, &ck));
        int k = snprintf(dir, cap, "%s/%s", ck.dir, VLA_CKPT_MODEL_DIR);
        if (k < 0 || (size_t)k >= cap) return vla_error(VLA_ERR_INVALID_ARG, "%s: path too long", path);
        return VLA_OK;
    }
    /* a pretrained_model directory: inside a checkpoint, verify the checkpoint */
    char tmp[VLA_CKPT_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    size_t l = strlen(tmp);
    while (l > 1 && tmp[l - 1] == '/') tmp[--l] = 0;
    char *parent = dirname(tmp);
    snprintf(buf, sizeof buf, "%s/%s", parent, VLA_CKPT_MANIFEST);
    if (vla_path_exists(buf)) {
        vla_status st = vla_ckpt_verify(parent, NULL);
        if (st != VLA_OK) return vla_error_context(st, "refusing checkpoint %s", parent);
    }
    snprintf(dir, cap, "%s", path);
    return VLA_OK;
}

/* config.json's "normalization" object into the state and action normalisers. */
static vla_status normalizers_from_json(const char *file, const json_t *norm, vla_normalizer *ns, vla_normalizer *na) {
    char what[VLA_CKPT_PATH_MAX + 160];
    snprintf(what, sizeof what, "%s: normalization.observation.state", file);
    VLA_TRY(vla_norm_from_json(what, json_object_get(norm, "observation.state"), ns));
    snprintf(what, sizeof what, "%s: normalization.action", file);
    vla_status st = vla_norm_from_json(what, json_object_get(norm, "action"), na);
    if (st != VLA_OK) vla_normalizer_free(ns);
    return st;
}

vla_status vla_pretrained_normalizers(const char *dir, vla_normalizer *ns, vla_normalizer *na) {
    char file[VLA_CKPT_PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/config.json", dir);
    json_t *root;
    VLA_TRY(vla_json_load_file(file, &root));
    vla_status st = normalizers_from_json(file, json_object_get(root, "normalization"), ns, na);
    json_decref(root);
    return st;
}

/* One embodiment's entry (the top level of config.json, or an element of
 * its "embodiments") into normalisers and meta, checked against the policy
 * config. */
static vla_status parse_embodiment(const char *file, const json_t *e, const vla_policy_config *cfg,
                                   vla_normalizer *ns, vla_normalizer *na, vla_pretrained_meta *m) {
    json_t *norm = json_object_get(e, "normalization"), *feat = json_object_get(e, "features");
    if (!json_is_object(norm) || !json_is_object(feat))
        return vla_error(VLA_ERR_FORMAT, "%s: needs 'policy', 'normalization' and 'features' objects", file);
    memset(m, 0, sizeof *m);
    m->state_width = json_integer_value(json_object_get(feat, "observation.state"));
    m->action_width = json_integer_value(json_object_get(feat, "action"));
    m->cameras = (int)json_integer_value(json_object_get(feat, "cameras"));
    m->fps = json_number_value(json_object_get(feat, "fps"));
    keys_from_json(json_object_get(feat, "state_keys"), m->state_keys, sizeof m->state_keys);
    keys_from_json(json_object_get(feat, "image_keys"), m->image_keys, sizeof m->image_keys);
    m->relative_actions = json_is_true(json_object_get(feat, "relative_actions"));
    m->action_stats_per_step = json_is_true(json_object_get(feat, "action_stats_per_step"));
    json_t *nobs = json_object_get(feat, "n_obs_steps");
    m->n_obs_steps = json_is_integer(nobs) ? (int)json_integer_value(nobs) : 1;
    if (m->n_obs_steps < 1 || m->n_obs_steps > 64 || m->state_width % m->n_obs_steps != 0)
        return vla_error(VLA_ERR_FORMAT, "%s: features.n_obs_steps %d does not divide the state width %lld (or is not "
                         "in 1..64)", file, m->n_obs_steps, (long long)m->state_width);
    const char *task = json_string_value(json_object_get(e, "task"));
    snprintf(m->task, sizeof m->task, "%s", task ? task : "");
    const char *ds = json_string_value(json_object_get(e, "dataset"));
    snprintf(m->dataset, sizeof m->dataset, "%s", ds ? ds : "");
    json_t *id = json_object_get(e, "id");
    m->embodiment = json_is_integer(id) ? (int32_t)json_integer_value(id) : 0;
    const char *name = json_string_value(json_object_get(e, "name"));
    snprintf(m->embodiment_name, sizeof m->embodiment_name, "%s", name ? name : "");
    if (m->embodiment < 0 || m->embodiment > 1023)
        return vla_error(VLA_ERR_FORMAT, "%s: embodiment id %d is out of range", file, (int)m->embodiment);
    VLA_TRY(normalizers_from_json(file, norm, ns, na));
    /* widths bounded by the policy's before the per-step product (no overflow on a hostile file) */
    bool ok = m->state_width == ns->dim && m->state_width <= cfg->action.state_dim && m->action_width >= 0 &&
              m->action_width <= cfg->action.action_dim;
    if (ok) ok = m->action_width * (m->action_stats_per_step ? cfg->action.horizon : 1) == na->dim;
    if (!ok) {
        vla_normalizer_free(ns), vla_normalizer_free(na);
        return vla_error(VLA_ERR_FORMAT, "%s: feature widths disagree with the normalisation or the policy dims", file);
    }
    return VLA_OK;
}

void vla_pretrained_inference_config(vla_policy_config *cfg) {
    for (int g = 0; g < VLA_GROUP_COUNT; g++) cfg->frozen[g] = true;
}

vla_status vla_pretrained_load(const char *path, const vla_ops *ops, vla_pretrained *out) {
    memset(out, 0, sizeof *out);
    VLA_TRY(resolve(path, out->dir, sizeof out->dir));
    char file[VLA_CKPT_PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/config.json", out->dir);
    json_t *root = NULL;
    VLA_TRY(vla_json_load_file(file, &root));
    vla_status st = VLA_OK;
    vla_policy_config cfg;
    json_t *pc = json_object_get(root, "policy");
    if (!json_is_object(pc)) {
        st = vla_error(VLA_ERR_FORMAT, "%s: needs 'policy', 'normalization' and 'features' objects", file);
        goto done;
    }
    if ((st = vla_policy_config_from_json(file, pc, &cfg)) != VLA_OK) goto done;
    if ((st = parse_embodiment(file, root, &cfg, &out->state_norm, &out->action_norm, &out->meta)) != VLA_OK) goto done;
    json_t *embs = json_object_get(root, "embodiments");
    if (json_is_array(embs) && json_array_size(embs) > 0) { /* the top level has no id: the first entry's */
        json_t *id = json_object_get(json_array_get(embs, 0), "id");
        const char *name = json_string_value(json_object_get(json_array_get(embs, 0), "name"));
        out->meta.embodiment = json_is_integer(id) ? (int32_t)json_integer_value(id) : 0;
        snprintf(out->meta.embodiment_name, sizeof out->meta.embodiment_name, "%s", name ? name : "");
    }
    json_t *nact = json_object_get(root, "n_action_steps");
    if (json_is_integer(nact) && json_integer_value(nact) >= 1 && json_integer_value(nact) <= cfg.action.horizon)
        out->meta.n_action_steps = (int)json_integer_value(nact);
    vla_pretrained_inference_config(&cfg);
    if ((st = vla_policy_create(&cfg, ops, &out->policy)) != VLA_OK) goto done;
    snprintf(file, sizeof file, "%s/model.safetensors", out->dir);
    st = vla_pretrained_load_weights(out->policy, file);
done:
    json_decref(root);
    if (st != VLA_OK) vla_pretrained_free(out);
    return st;
}

vla_status vla_pretrained_choose_embodiment(const char *file, const json_t *root, const vla_policy_config *cfg,
                                            const char *current, const char *want, const char *env_name,
                                            vla_normalizer *ns, vla_normalizer *na, vla_pretrained_meta *m,
                                            bool *found) {
    *found = false;
    json_t *embs = json_object_get(root, "embodiments");
    size_t n = json_is_array(embs) ? json_array_size(embs) : 0;
    char names[1024] = "";
    int pick = -1, matches = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(embs, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        json_int_t id = json_integer_value(json_object_get(e, "id"));
        char idtext[32];
        snprintf(idtext, sizeof idtext, "%lld", (long long)id);
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%.100s (id %lld)", i ? ", " : "", name ? name : "?",
                 (long long)id);
        bool hit = want ? (name && !strcmp(name, want)) || !strcmp(idtext, want)
                        : env_name && name && !strcmp(name, env_name);
        if (hit && pick < 0) pick = (int)i;
        matches += hit;
    }
    if (want && pick < 0 && (n > 0 || (strcmp(want, "0") && strcmp(want, current ? current : ""))))
        return vla_error(VLA_ERR_NOT_FOUND, "--policy.embodiment=%s: %s was trained on %s", want, file,
                         n ? names : "one dataset (embodiment 0)");
    if (!want && n > 1 && matches != 1)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "%s was trained on a mixture of %s; %s, so pass --policy.embodiment=NAME|ID", file, names,
                         matches ? "more than one is named after this environment" : "none is named after this environment");
    if (pick < 0) return VLA_OK; /* one embodiment: the one already loaded */
    char what[VLA_CKPT_PATH_MAX + 96];
    snprintf(what, sizeof what, "%s: embodiments[%d]", file, pick);
    VLA_TRY(parse_embodiment(what, json_array_get(embs, (size_t)pick), cfg, ns, na, m));
    *found = true;
    return VLA_OK;
}

vla_status vla_pretrained_select_embodiment(vla_pretrained *pm, const char *want, const char *env_name) {
    char file[VLA_CKPT_PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/config.json", pm->dir);
    json_t *root = NULL;
    VLA_TRY(vla_json_load_file(file, &root));
    vla_normalizer ns, na;
    vla_pretrained_meta m;
    bool found = false;
    vla_status st = vla_pretrained_choose_embodiment(file, root, &pm->policy->cfg, pm->meta.embodiment_name, want,
                                                     env_name, &ns, &na, &m, &found);
    if (st == VLA_OK && found) {
        vla_normalizer_free(&pm->state_norm), vla_normalizer_free(&pm->action_norm);
        int nact = pm->meta.n_action_steps; /* the checkpoint's, not the embodiment's */
        pm->state_norm = ns, pm->action_norm = na, pm->meta = m;
        pm->meta.n_action_steps = nact;
    }
    json_decref(root);
    return st;
}

void vla_pretrained_free(vla_pretrained *pm) {
    vla_policy_free(pm->policy);
    pm->policy = NULL;
    vla_normalizer_free(&pm->state_norm);
    vla_normalizer_free(&pm->action_norm);
}

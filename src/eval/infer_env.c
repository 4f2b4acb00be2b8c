/* infer_env.c — which simulator a checkpoint was trained for, from its
 * config and training config (eval.h, vla_eval_infer_env). */
#include "eval/eval.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/pretrained.h"
#include "checkpoint/published.h"
#include "eval/state_map.h"
#include "sim/env.h"

/* The pretrained_model directory holding config.json under a path the user
 * gave (itself, a checkpoint step, a training output dir); no weights read. */
static vla_status config_dir(const char *path, char *dir, size_t cap) {
    static const char *const under[] = {"", "/" VLA_CKPT_MODEL_DIR, "/" VLA_CKPT_DIR "/" VLA_CKPT_LAST "/" VLA_CKPT_MODEL_DIR};
    char file[VLA_CKPT_PATH_MAX + 128];
    for (int i = 0; i < 3; i++) {
        snprintf(file, sizeof file, "%s%s/config.json", path, under[i]);
        if (vla_path_exists(file)) {
            snprintf(dir, cap, "%s%s", path, under[i]);
            return VLA_OK;
        }
    }
    snprintf(file, sizeof file, "%s/%s", path, VLA_CKPT_DIR);
    if (vla_is_dir(file)) {
        vla_ckpt_info ck;
        VLA_TRY(vla_ckpt_find_last(path, &ck));
        int k = snprintf(dir, cap, "%s/%s", ck.dir, VLA_CKPT_MODEL_DIR);
        if (k < 0 || (size_t)k >= cap) return vla_error(VLA_ERR_INVALID_ARG, "%s: path too long", path);
        return VLA_OK;
    }
    return vla_error(VLA_ERR_NOT_FOUND, "%s: no config.json here (a pretrained_model, checkpoint step or training "
                     "output directory has one)", path);
}

/* The env named `name` as an env or as its datasets' robot_type, or NULL. */
static const char *env_of_robot(const char *name) {
    if (!name || !*name) return NULL;
    for (const char *const *n = vla_env_names(); *n; n++) {
        const vla_env_spec *sp = vla_env_find(*n)->spec;
        if (!strcmp(sp->name, name) || (sp->robot_type && !strcmp(sp->robot_type, name))) return sp->name;
    }
    return NULL;
}

/* One config.json entry (the top level or an "embodiments" element) → env, or NULL with `seen` saying what it has. */
static const char *env_of_entry(const json_t *e, const char *file, char *why, size_t why_cap, char *seen, size_t seen_cap) {
    const char *name = json_string_value(json_object_get(e, "name"));
    const char *env = env_of_robot(name);
    if (env) {
        snprintf(why, why_cap, "the dataset's robot_type '%s' in %s", name, file);
        return env;
    }
    json_t *feat = json_object_get(e, "features");
    json_t *keys = json_object_get(feat, "image_keys");
    for (size_t k = 0; json_is_array(keys) && k < json_array_size(keys); k++) {
        const char *key = json_string_value(json_array_get(keys, k)), *hit = NULL;
        int hits = 0;
        for (const char *const *n = vla_env_names(); key && *n; n++) {
            const vla_env_spec *sp = vla_env_find(*n)->spec;
            for (int c = 0; c < sp->n_cameras; c++)
                if (sp->image_keys[c] && !strcmp(sp->image_keys[c], key)) {
                    hits++, hit = sp->name;
                    break;
                }
        }
        if (hits == 1) {
            snprintf(why, why_cap, "its camera '%s' in %s", key, file);
            return hit;
        }
    }
    /* the widths: exactly one env whose action and state vectors fit */
    vla_pretrained_meta m;
    memset(&m, 0, sizeof m);
    m.state_width = json_integer_value(json_object_get(feat, "observation.state"));
    m.action_width = json_integer_value(json_object_get(feat, "action"));
    json_t *nobs = json_object_get(feat, "n_obs_steps"), *sk = json_object_get(feat, "state_keys");
    m.n_obs_steps = json_is_integer(nobs) ? (int)json_integer_value(nobs) : 1;
    for (size_t k = 0; json_is_array(sk) && k < json_array_size(sk); k++) {
        const char *key = json_string_value(json_array_get(sk, k));
        size_t used = strlen(m.state_keys);
        if (key) snprintf(m.state_keys + used, sizeof m.state_keys - used, "%s%s", k ? "," : "", key);
    }
    const char *fit = NULL;
    int fits = 0;
    if (m.n_obs_steps >= 1 && m.state_width > 0) {
        for (const char *const *n = vla_env_names(); *n; n++) {
            const vla_env_spec *sp = vla_env_find(*n)->spec;
            vla_state_map map;
            if (m.action_width == sp->action_dim && vla_state_mapping(sp, &m, &map) == VLA_OK) fits++, fit = sp->name;
        }
    }
    if (fits == 1) {
        snprintf(why, why_cap, "its widths (state %lld, action %lld) in %s, which only env '%s' fits",
                 (long long)m.state_width, (long long)m.action_width, file, fit);
        return fit;
    }
    snprintf(seen, seen_cap, "robot_type '%s', cameras %s, state %lld, action %lld", name && *name ? name : "?",
             json_array_size(keys) ? json_string_value(json_array_get(keys, 0)) : "none", (long long)m.state_width,
             (long long)m.action_width);
    return NULL;
}

vla_status vla_eval_infer_env(const char *policy_path, const char *embodiment, const char **env, char *why,
                              size_t why_cap) {
    *env = NULL;
    if (why_cap) why[0] = 0;
    char names[256] = "";
    for (const char *const *n = vla_env_names(); *n; n++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", n == vla_env_names() ? "" : "|", *n);
    VLA_TRY(vla_published_check_path("--policy.path", policy_path));
    if (vla_published_detect(policy_path))
        return vla_error(VLA_ERR_INVALID_ARG, "eval: %s is a published checkpoint, which does not record the simulator "
                         "it runs in; pass --env.type=%s", policy_path, names);
    char dir[VLA_CKPT_PATH_MAX], file[VLA_CKPT_PATH_MAX + 64];
    VLA_TRY(config_dir(policy_path, dir, sizeof dir));
    /* 1. training evaluated in an env: its --env.type (the flag is saved even when unused, so only then) */
    snprintf(file, sizeof file, "%s/train_config.json", dir);
    json_t *tc = NULL;
    if (vla_path_exists(file) && vla_json_load_file(file, &tc) == VLA_OK) {
        json_t *fl = json_object_get(tc, "flags");
        const char *t = env_of_robot(json_string_value(json_object_get(fl, "env.type")));
        if (t && json_integer_value(json_object_get(fl, "eval_freq")) > 0) {
            snprintf(why, why_cap, "--env.type=%s of its training (evaluated there every %lld steps) in %s", t,
                     (long long)json_integer_value(json_object_get(fl, "eval_freq")), file);
            *env = t;
        }
        json_decref(tc);
        if (*env) return VLA_OK;
    }
    /* 2..4. config.json: the robot, its cameras, its widths */
    snprintf(file, sizeof file, "%s/config.json", dir);
    json_t *root;
    VLA_TRY(vla_json_load_file(file, &root));
    json_t *embs = json_object_get(root, "embodiments");
    size_t n = json_is_array(embs) ? json_array_size(embs) : 0;
    char seen[600] = "", list[1024] = "";
    vla_status st = VLA_OK;
    if (n <= 1 || embodiment) {
        const json_t *e = n == 1 ? json_array_get(embs, 0) : root; /* the robot is the entry's name, not the top's */
        for (size_t i = 0; embodiment && i < n; i++) { /* the chosen entry, by name or id */
            json_t *x = json_array_get(embs, i);
            const char *nm = json_string_value(json_object_get(x, "name"));
            char id[32];
            snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(x, "id")));
            if ((nm && !strcmp(nm, embodiment)) || !strcmp(id, embodiment)) e = x;
        }
        *env = env_of_entry(e, file, why, why_cap, seen, sizeof seen);
    } else { /* a mixture: its entries must name one env */
        for (size_t i = 0; i < n; i++) {
            char w[1200], s2[600];
            const char *x = env_of_entry(json_array_get(embs, i), file, w, sizeof w, s2, sizeof s2);
            const char *nm = json_string_value(json_object_get(json_array_get(embs, i), "name"));
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", nm ? nm : "?");
            if (x && !*env) *env = x, snprintf(why, why_cap, "%s", w);
            else if (x && strcmp(x, *env)) {
                st = vla_error(VLA_ERR_INVALID_ARG, "eval: %s was trained on a mixture (%s) that runs in more than "
                               "one simulator; pass --env.type=%s (and --policy.embodiment=NAME)", dir, list, names);
                break;
            }
        }
        if (st == VLA_OK && !*env && snprintf(seen, sizeof seen, "a mixture of %s", list) >= (int)sizeof seen)
            memcpy(seen + sizeof seen - 4, "...", 4); /* a long list, cut where the message says so */
    }
    json_decref(root);
    if (st != VLA_OK) return *env = NULL, st;
    if (!*env)
        return vla_error(VLA_ERR_INVALID_ARG, "eval: cannot tell which simulator %s was trained for (%s); pass "
                         "--env.type=%s", dir, seen, names);
    return VLA_OK;
}

/* published_stats.c — the normalisation statistics a published fine-tune
 * keeps beside its weights, in its publisher's own files, and a policy
 * opened from them ready to evaluate (see published.h, docs/checkpoints.md).
 *
 * Three sources, tried in this order in the checkpoint's directory:
 *   LeRobot   policy_preprocessor.json: the step whose registry_name is
 *             "normalizer_processor" names its state_file (a safetensors of
 *             "<feature>.<stat>" tensors, NormalizerProcessorStep.state_dict)
 *             and its config carries features {key: {type, shape}}, norm_map
 *             {STATE|ACTION|VISUAL: MODE} and eps. State = the STATE features
 *             in their order, action = the ACTION feature; VISUAL ones count
 *             the cameras. LeRobot's formulas (normalize.h).
 *   openpi    assets/<asset_id>/norm_stats.json ({"norm_stats": {"state":
 *             {mean, std, q01, q99}, "actions": {…}}}; asset ids may hold a
 *             '/', e.g. physical-intelligence/libero). The mode is the
 *             config's (π0.5: quantiles, as openpi's pi05 configs use), in
 *             openpi's epsilon form.
 *   GR00T     experiment_cfg/metadata.json ({tag: {statistics: {state:
 *             {key: {min, max, mean, std, q01, q99}}, action: {…}},
 *             modalities: {video, state, action}}}). State/action = the keys
 *             in modalities order, concatenated, normalised min_max (what
 *             Isaac-GR00T's data configs use for both) in GR00T's form; the
 *             tag gives the embodiment id (Isaac-GR00T's
 *             EMBODIMENT_TAG_MAPPING).
 * Where a file holds several candidates (openpi asset ids, GR00T tags) the
 * caller's `want` picks one; with none given a single candidate is taken
 * and several are refused, listing them. */
#include "checkpoint/published.h"

#include <dirent.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "io/safetensors.h"

#define PATH_CAP 4096
#define MAX_DIM 4096
#define MAX_CANDIDATES 32

/* Isaac-GR00T N1.5's EMBODIMENT_TAG_MAPPING (gr00t/data/embodiment_tags.py):
 * the row of the per-embodiment encoders/decoders a tag trains. */
static const struct {
    const char *tag;
    int id;
} groot_tags[] = {
    {"new_embodiment", 31}, {"gr1", 24}, {"oxe_droid", 17}, {"agibot_genie1", 26}, {"so100", 2}, {"unitree_g1", 3},
};

/* A growing vector of floats: one side (lo or hi) of a normaliser. */
typedef struct {
    float v[MAX_DIM];
    int64_t n;
} floats;

static vla_status append_json(const char *what, const json_t *arr, floats *f, int64_t *count) {
    if (!json_is_array(arr)) return vla_error(VLA_ERR_FORMAT, "%s is missing or not an array of numbers", what);
    size_t n = json_array_size(arr);
    if (f->n + (int64_t)n > MAX_DIM) return vla_error(VLA_ERR_FORMAT, "%s: more than %d values", what, MAX_DIM);
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(arr, i);
        if (!json_is_number(x)) return vla_error(VLA_ERR_FORMAT, "%s[%zu] is not a number", what, i);
        f->v[f->n++] = (float)json_number_value(x);
    }
    *count = (int64_t)n;
    return VLA_OK;
}

static vla_status append_tensor(const vla_safetensors *st, const char *name, floats *f) {
    const vla_safetensors_tensor *t;
    VLA_TRY(vla_safetensors_get(st, name, &t));
    if (f->n + t->numel > MAX_DIM) return vla_error(VLA_ERR_FORMAT, "%s: %s has more than %d values", st->what, name, MAX_DIM);
    VLA_TRY(vla_safetensors_tensor_to_f32(st, t, f->v + f->n, (size_t)t->numel));
    f->n += t->numel;
    return VLA_OK;
}

/* The two statistics a mode reads (normalize.h): mean/std, min/max, q01/q99. */
static void stat_names(vla_norm_mode m, const char **a, const char **b) {
    static const char *const pair[][2] = {{NULL, NULL}, {"mean", "std"}, {"min", "max"}, {"q01", "q99"}};
    *a = pair[m][0], *b = pair[m][1];
}

/* Normalisers from the gathered statistics; IDENTITY keeps only the width. */
static vla_status make_norm(const char *what, vla_norm_mode mode, vla_norm_eps_style style, float eps, int64_t dim,
                            const floats *lo, const floats *hi, vla_normalizer *n) {
    bool ident = mode == VLA_NORM_IDENTITY;
    vla_status st = vla_normalizer_init(n, mode, style, dim, ident ? NULL : lo->v, ident ? NULL : hi->v, eps);
    return st == VLA_OK ? VLA_OK : vla_error_context(st, "%s", what);
}

/* ---- LeRobot: policy_preprocessor.json + its normalizer's safetensors --- */

static vla_status lerobot_mode(const char *file, const json_t *norm_map, const char *type, vla_norm_mode *out) {
    const char *s = json_string_value(json_object_get(norm_map, type));
    int m = s ? vla_norm_mode_from_name(s) : VLA_NORM_IDENTITY; /* LeRobot: a type not in norm_map is IDENTITY */
    if (m < 0)
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: norm_map.%s is %s; vla.c reads MEAN_STD, MIN_MAX, QUANTILES and "
                         "IDENTITY", file, type, s);
    *out = (vla_norm_mode)m;
    return VLA_OK;
}

static vla_status lerobot_stats(const char *dir, vla_normalizer *ns, vla_normalizer *na,
                                vla_pretrained_meta *m, bool *found) {
    char file[PATH_CAP + 64], sfile[PATH_CAP + 300];
    snprintf(file, sizeof file, "%s/policy_preprocessor.json", dir);
    if (!vla_path_exists(file)) return VLA_OK;
    json_t *root = NULL;
    VLA_TRY(vla_json_load_file(file, &root));
    vla_status st = VLA_OK;
    vla_safetensors sf = {0};
    bool opened = false;
    floats *lo = calloc(2, sizeof *lo), *hi = lo ? lo + 1 : NULL;
    const json_t *steps = json_object_get(root, "steps"), *step = NULL;
    for (size_t i = 0; json_is_array(steps) && i < json_array_size(steps); i++) {
        const char *rn = json_string_value(json_object_get(json_array_get(steps, i), "registry_name"));
        if (rn && !strcmp(rn, "normalizer_processor")) step = json_array_get(steps, i);
    }
    if (!lo) {
        st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", file);
        goto done;
    }
    if (!step) goto done; /* a pipeline without a normaliser: no statistics here */
    const json_t *conf = json_object_get(step, "config"), *features = json_object_get(conf, "features");
    const json_t *norm_map = json_object_get(conf, "norm_map");
    const char *state_file = json_string_value(json_object_get(step, "state_file"));
    if (!json_is_object(features) || !json_is_object(norm_map) || !state_file || strchr(state_file, '/')) {
        st = vla_error(VLA_ERR_FORMAT, "%s: the normalizer_processor step needs config.features, config.norm_map and "
                       "a state_file in the same directory", file);
        goto done;
    }
    double eps = json_is_number(json_object_get(conf, "eps")) ? json_number_value(json_object_get(conf, "eps")) : 1e-8;
    snprintf(sfile, sizeof sfile, "%s/%s", dir, state_file);
    if ((st = vla_safetensors_open(sfile, &sf)) != VLA_OK) goto done;
    opened = true;
    vla_norm_mode smode, amode;
    if ((st = lerobot_mode(file, norm_map, "STATE", &smode)) != VLA_OK) goto done;
    if ((st = lerobot_mode(file, norm_map, "ACTION", &amode)) != VLA_OK) goto done;
    memset(m, 0, sizeof *m);
    m->n_obs_steps = 1;
    int n_action = 0;
    bool made_state = false;
    /* state: every STATE feature in order; then the ACTION feature */
    for (int pass = 0; pass < 2 && st == VLA_OK; pass++) {
        const char *want_type = pass ? "ACTION" : "STATE";
        vla_norm_mode mode = pass ? amode : smode;
        const char *a, *b;
        stat_names(mode, &a, &b);
        lo->n = hi->n = 0;
        int64_t width = 0;
        const char *key;
        const json_t *f;
        json_object_foreach((json_t *)features, key, f) {
            const char *type = json_string_value(json_object_get(f, "type"));
            const json_t *shape = json_object_get(f, "shape");
            if (!type || !json_is_array(shape) || json_array_size(shape) < 1) {
                st = vla_error(VLA_ERR_FORMAT, "%s: features.%s needs a type and a shape", file, key);
                break;
            }
            if (!pass && !strcmp(type, "VISUAL")) m->cameras++;
            if (strcmp(type, want_type)) continue;
            int64_t w = json_integer_value(json_array_get(shape, json_array_size(shape) - 1));
            if (w < 1 || w > MAX_DIM) {
                st = vla_error(VLA_ERR_FORMAT, "%s: features.%s has width %lld", file, key, (long long)w);
                break;
            }
            if (pass) n_action++;
            else {
                size_t used = strlen(m->state_keys);
                snprintf(m->state_keys + used, sizeof m->state_keys - used, "%s%s", used ? "," : "", key);
            }
            width += w;
            if (mode == VLA_NORM_IDENTITY) continue;
            char name[600];
            int64_t before = lo->n;
            snprintf(name, sizeof name, "%s.%s", key, a);
            if ((st = append_tensor(&sf, name, lo)) != VLA_OK) break;
            snprintf(name, sizeof name, "%s.%s", key, b);
            if ((st = append_tensor(&sf, name, hi)) != VLA_OK) break;
            if (lo->n - before != w || hi->n != lo->n) {
                st = vla_error(VLA_ERR_FORMAT, "%s: %s.%s/%s hold %lld values, features.%s says %lld", sfile, key, a, b,
                               (long long)(lo->n - before), key, (long long)w);
                break;
            }
        }
        if (st != VLA_OK) break;
        if (!width || (pass && n_action != 1)) {
            st = vla_error(VLA_ERR_FORMAT, "%s: the normaliser's features need %s", file,
                           pass ? "exactly one ACTION feature" : "a STATE feature");
            break;
        }
        char what[PATH_CAP + 400];
        snprintf(what, sizeof what, "%s: %s statistics", sfile, pass ? "action" : "state");
        if (pass) m->action_width = width;
        else m->state_width = width;
        st = make_norm(what, mode, VLA_NORM_EPS_LEROBOT, (float)eps, width, lo, hi, pass ? na : ns);
        if (st == VLA_OK && !pass) made_state = true;
    }
    if (st != VLA_OK && made_state) vla_normalizer_free(ns);
    if (st == VLA_OK) {
        if (!strcmp(m->state_keys, "observation.state")) m->state_keys[0] = 0; /* the plain layout */
        *found = true;
    }
done:
    if (opened) vla_safetensors_close(&sf);
    free(lo);
    json_decref(root);
    return st;
}

/* ---- openpi: assets/<asset_id>/norm_stats.json ------------------------ */

/* Asset ids under `base` (relative paths of directories holding
 * norm_stats.json), to depth 3. */
static void find_assets(const char *base, const char *rel, int depth, char ids[][256], int *n) {
    char path[PATH_CAP + 300];
    snprintf(path, sizeof path, "%s%s%s", base, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && *n < MAX_CANDIDATES) {
        if (e->d_name[0] == '.') continue;
        char sub[256], full[PATH_CAP + 600];
        if ((size_t)snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= sizeof sub) continue;
        snprintf(full, sizeof full, "%s/%s", base, sub);
        if (!vla_is_dir(full)) continue;
        char ns[PATH_CAP + 700];
        snprintf(ns, sizeof ns, "%s/norm_stats.json", full);
        if (vla_path_exists(ns)) snprintf(ids[(*n)++], 256, "%s", sub);
        else if (depth > 1) find_assets(base, sub, depth - 1, ids, n);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Pick one of n candidate names: `want`, or the only one. */
static vla_status pick(const char *where, const char *kind, char names[][256], int n, const char *want, int *out) {
    *out = -1;
    char list[2048] = "";
    for (int i = 0; i < n; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
        if (want && !strcmp(names[i], want)) *out = i;
    }
    if (want && *out < 0)
        return vla_error(VLA_ERR_NOT_FOUND, "--policy.embodiment=%s: %s holds statistics for %s %s", want, where,
                         n > 1 ? kind : "only", list);
    if (!want && n > 1)
        return vla_error(VLA_ERR_INVALID_ARG, "%s holds statistics for several %s (%s): pass --policy.embodiment=NAME",
                         where, kind, list);
    if (!want) *out = 0;
    return VLA_OK;
}

static vla_status openpi_side(const char *file, const json_t *obj, vla_norm_mode mode, const char *side,
                              vla_normalizer *n, int64_t *width) {
    const char *a, *b;
    char what[PATH_CAP + 64];
    floats *lo = calloc(2, sizeof *lo), *hi = lo ? lo + 1 : NULL;
    if (!lo) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", file);
    vla_status st = VLA_OK;
    int64_t na = 0, nb = 0;
    if (mode == VLA_NORM_IDENTITY) stat_names(VLA_NORM_MEAN_STD, &a, &b); /* the width, from mean */
    else stat_names(mode, &a, &b);
    snprintf(what, sizeof what, "%s: norm_stats.%s.%s", file, side, a);
    if ((st = append_json(what, json_object_get(obj, a), lo, &na)) == VLA_OK) {
        snprintf(what, sizeof what, "%s: norm_stats.%s.%s", file, side, b);
        st = append_json(what, json_object_get(obj, b), hi, &nb);
    }
    if (st == VLA_OK && (na != nb || na < 1))
        st = vla_error(VLA_ERR_FORMAT, "%s: norm_stats.%s.%s and .%s hold %lld and %lld values", file, side, a, b,
                       (long long)na, (long long)nb);
    if (st == VLA_OK) {
        snprintf(what, sizeof what, "%s: norm_stats.%s", file, side);
        st = make_norm(what, mode, VLA_NORM_EPS_OPENPI, 1e-6f, na, lo, hi, n);
        *width = na;
    }
    free(lo);
    return st;
}

static vla_status openpi_stats(const char *dir, const vla_policy_config *cfg, const char *want, vla_normalizer *ns,
                               vla_normalizer *na, vla_pretrained_meta *m, bool *found) {
    char base[PATH_CAP + 16], ids[MAX_CANDIDATES][256];
    snprintf(base, sizeof base, "%s/assets", dir);
    int n = 0, k;
    find_assets(base, "", 3, ids, &n);
    if (!n) return VLA_OK;
    qsort(ids, (size_t)n, sizeof ids[0], cmp_str);
    VLA_TRY(pick(base, "asset ids", ids, n, want, &k));
    char file[PATH_CAP + 300];
    snprintf(file, sizeof file, "%s/%s/norm_stats.json", base, ids[k]);
    json_t *root = NULL;
    VLA_TRY(vla_json_load_file(file, &root));
    const json_t *stats = json_object_get(root, "norm_stats");
    vla_status st = VLA_OK;
    if (!json_is_object(stats) || !json_is_object(json_object_get(stats, "state")) ||
        !json_is_object(json_object_get(stats, "actions")))
        st = vla_error(VLA_ERR_FORMAT, "%s: needs norm_stats.state and norm_stats.actions objects", file);
    memset(m, 0, sizeof *m);
    if (st == VLA_OK)
        st = openpi_side(file, json_object_get(stats, "state"), cfg->norm_state, "state", ns, &m->state_width);
    if (st == VLA_OK) {
        st = openpi_side(file, json_object_get(stats, "actions"), cfg->norm_action, "actions", na, &m->action_width);
        if (st != VLA_OK) vla_normalizer_free(ns);
    }
    if (st == VLA_OK) {
        m->n_obs_steps = 1;
        m->cameras = (int)cfg->vision.cameras;
        snprintf(m->embodiment_name, sizeof m->embodiment_name, "%.127s", ids[k]);
        *found = true;
    }
    json_decref(root);
    return st;
}

/* ---- GR00T: experiment_cfg/metadata.json ------------------------------ */

/* One side ("state" or "action") of a tag's statistics: the keys in
 * modalities order (statistics order when modalities is absent), min/max
 * concatenated. */
static vla_status groot_side(const char *file, const json_t *entry, const char *side, vla_normalizer *n,
                             int64_t *width) {
    const json_t *stats = json_object_get(json_object_get(entry, "statistics"), side);
    const json_t *order = json_object_get(json_object_get(entry, "modalities"), side);
    if (!json_is_object(order)) order = stats;
    if (!json_is_object(stats) || !json_object_size(stats))
        return vla_error(VLA_ERR_FORMAT, "%s: statistics.%s is missing or empty", file, side);
    floats *lo = calloc(2, sizeof *lo), *hi = lo ? lo + 1 : NULL;
    if (!lo) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", file);
    vla_status st = VLA_OK;
    const char *key;
    const json_t *v;
    char what[PATH_CAP + 600];
    json_object_foreach((json_t *)order, key, v) {
        const json_t *s = json_object_get(stats, key);
        int64_t c1 = 0, c2 = 0;
        if (!json_is_object(s)) {
            st = vla_error(VLA_ERR_FORMAT, "%s: modalities.%s.%s has no statistics.%s.%s", file, side, key, side, key);
            break;
        }
        snprintf(what, sizeof what, "%s: statistics.%s.%s.min", file, side, key);
        if ((st = append_json(what, json_object_get(s, "min"), lo, &c1)) != VLA_OK) break;
        snprintf(what, sizeof what, "%s: statistics.%s.%s.max", file, side, key);
        if ((st = append_json(what, json_object_get(s, "max"), hi, &c2)) != VLA_OK) break;
        if (c1 != c2 || c1 < 1) {
            st = vla_error(VLA_ERR_FORMAT, "%s: statistics.%s.%s: min and max hold %lld and %lld values", file, side,
                           key, (long long)c1, (long long)c2);
            break;
        }
    }
    if (st == VLA_OK && lo->n < 1) st = vla_error(VLA_ERR_FORMAT, "%s: modalities.%s names no key", file, side);
    if (st == VLA_OK) {
        snprintf(what, sizeof what, "%s: statistics.%s", file, side);
        st = make_norm(what, VLA_NORM_MIN_MAX, VLA_NORM_EPS_GROOT, 0, lo->n, lo, hi, n);
        *width = lo->n;
    }
    free(lo);
    return st;
}

static vla_status groot_stats(const char *dir, const char *want, vla_normalizer *ns, vla_normalizer *na,
                              vla_pretrained_meta *m, bool *found) {
    char file[PATH_CAP + 64];
    snprintf(file, sizeof file, "%s/experiment_cfg/metadata.json", dir);
    if (!vla_path_exists(file)) return VLA_OK;
    json_t *root = NULL;
    VLA_TRY(vla_json_load_file(file, &root));
    char tags[MAX_CANDIDATES][256];
    int n = 0, k = -1;
    const char *key;
    const json_t *v;
    vla_status st = VLA_OK;
    if (!json_is_object(root)) st = vla_error(VLA_ERR_FORMAT, "%s: not a JSON object of embodiment tags", file);
    else
        json_object_foreach(root, key, v) if (n < MAX_CANDIDATES && json_is_object(v))
            snprintf(tags[n++], sizeof tags[0], "%s", key);
    if (st == VLA_OK && !n) st = vla_error(VLA_ERR_FORMAT, "%s: names no embodiment tag", file);
    if (st == VLA_OK) st = pick(file, "embodiment tags", tags, n, want, &k);
    int id = -1;
    for (size_t i = 0; st == VLA_OK && i < sizeof groot_tags / sizeof groot_tags[0]; i++)
        if (!strcmp(groot_tags[i].tag, tags[k])) id = groot_tags[i].id;
    if (st == VLA_OK && id < 0)
        st = vla_error(VLA_ERR_UNSUPPORTED, "%s: embodiment tag '%s' is not one of GR00T N1.5's (new_embodiment, gr1, "
                       "oxe_droid, agibot_genie1, so100, unitree_g1)", file, tags[k]);
    memset(m, 0, sizeof *m);
    const json_t *entry = st == VLA_OK ? json_object_get(root, tags[k]) : NULL;
    if (st == VLA_OK) st = groot_side(file, entry, "state", ns, &m->state_width);
    if (st == VLA_OK) {
        st = groot_side(file, entry, "action", na, &m->action_width);
        if (st != VLA_OK) vla_normalizer_free(ns);
    }
    if (st == VLA_OK) {
        m->n_obs_steps = 1;
        m->cameras = (int)json_object_size(json_object_get(json_object_get(entry, "modalities"), "video"));
        m->embodiment = id;
        snprintf(m->embodiment_name, sizeof m->embodiment_name, "%.127s", tags[k]);
        *found = true;
    }
    json_decref(root);
    return st;
}

/* ---- together ---------------------------------------------------------- */

vla_status vla_published_stats(const char *path, const vla_policy_config *cfg, const char *want, vla_normalizer *ns,
                               vla_normalizer *na, vla_pretrained_meta *m, vla_pub_stats_source *src) {
    char dir[PATH_CAP];
    if (vla_is_dir(path)) snprintf(dir, sizeof dir, "%s", path);
    else {
        char tmp[PATH_CAP];
        snprintf(tmp, sizeof tmp, "%s", path);
        snprintf(dir, sizeof dir, "%s", dirname(tmp));
    }
    *src = VLA_PUB_STATS_NONE;
    bool found = false;
    VLA_TRY(lerobot_stats(dir, ns, na, m, &found));
    if (found) *src = VLA_PUB_STATS_LEROBOT;
    if (!found) {
        VLA_TRY(openpi_stats(dir, cfg, want, ns, na, m, &found));
        if (found) *src = VLA_PUB_STATS_OPENPI;
    }
    if (!found) {
        VLA_TRY(groot_stats(dir, want, ns, na, m, &found));
        if (found) *src = VLA_PUB_STATS_GROOT;
    }
    if (!found) return VLA_OK;
    vla_status st = VLA_OK;
    if (m->state_width > cfg->action.state_dim || m->action_width > cfg->action.action_dim)
        st = vla_error(VLA_ERR_FORMAT, "%s: its statistics are for %lld state and %lld action dims, wider than the "
                       "policy's %lld and %lld", dir, (long long)m->state_width, (long long)m->action_width,
                       (long long)cfg->action.state_dim, (long long)cfg->action.action_dim);
    else if (m->cameras > cfg->vision.cameras)
        st = vla_error(VLA_ERR_FORMAT, "%s: its features name %d cameras, the policy has %lld image slots", dir,
                       m->cameras, (long long)cfg->vision.cameras);
    else if (m->embodiment >= cfg->head.embodiments && cfg->head.embodiments > 0)
        st = vla_error(VLA_ERR_FORMAT, "%s: embodiment '%s' is row %d, the policy has %lld", dir, m->embodiment_name,
                       (int)m->embodiment, (long long)cfg->head.embodiments);
    if (st != VLA_OK) {
        vla_normalizer_free(ns), vla_normalizer_free(na);
        *src = VLA_PUB_STATS_NONE;
        return st;
    }
    snprintf(m->dataset, sizeof m->dataset, "%.1000s", dir);
    return VLA_OK;
}

const char *vla_pub_stats_source_name(vla_pub_stats_source s) {
    switch (s) {
    case VLA_PUB_STATS_LEROBOT: return "LeRobot policy_preprocessor.json";
    case VLA_PUB_STATS_OPENPI: return "openpi assets/*/norm_stats.json";
    case VLA_PUB_STATS_GROOT: return "GR00T experiment_cfg/metadata.json";
    default: return "none";
    }
}

vla_status vla_published_open(const char *path, const char *base, const char *want, const vla_ops *ops,
                              vla_pretrained *out) {
    memset(out, 0, sizeof *out);
    vla_policy_config cfg;
    vla_pub_format fmt;
    VLA_TRY(vla_published_config(path, base, &cfg, &fmt));
    vla_pub_stats_source src;
    VLA_TRY(vla_published_stats(path, &cfg, want, &out->state_norm, &out->action_norm, &out->meta, &src));
    if (src == VLA_PUB_STATS_NONE)
        return vla_error(VLA_ERR_NOT_FOUND,
                         "%s is a published %s checkpoint with no normalisation statistics beside it (LeRobot's "
                         "policy_preprocessor.json, openpi's assets/*/norm_stats.json or GR00T's "
                         "experiment_cfg/metadata.json): a base model; fine-tune it first with vla train "
                         "--policy.pretrained_path=%s --dataset.root=... and evaluate the output",
                         path, vla_pub_format_name(fmt), path);
    vla_pretrained_inference_config(&cfg);
    vla_status st = vla_policy_create(&cfg, ops, &out->policy);
    vla_published_report rep;
    if (st == VLA_OK) st = vla_published_load_weights(out->policy, path, &rep);
    if (st != VLA_OK) {
        vla_pretrained_free(out);
        return st;
    }
    snprintf(out->dir, sizeof out->dir, "%s", out->meta.dataset);
    return VLA_OK;
}

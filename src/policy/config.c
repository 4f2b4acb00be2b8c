/* config.c — reading and validating policy configs (see config.h). Each
 * section is a table of (key, destination, range, default) so the error for
 * a missing, mistyped or out-of-range value always names "section.key"; the
 * family's own section goes through the same tables (family.h). */
#include "policy/config.h"
#include "base/flags.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "policy/family.h"

#include <limits.h>
#include <math.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *group_names[VLA_GROUP_COUNT] = {"vision", "connector", "language",
                                                   "vl_adapter", "expert", "action_io"};
static const char *norm_names[] = {"identity", "mean_std", "min_max", "quantiles"};

const char *vla_policy_config_family_name(const vla_policy_config *cfg) {
    return cfg->family ? cfg->family->name : "?";
}

const char *vla_param_group_name(vla_param_group g) {
    return (unsigned)g < VLA_GROUP_COUNT ? group_names[g] : "?";
}

int vla_param_group_from_name(const char *name) {
    for (int g = 0; g < VLA_GROUP_COUNT; g++)
        if (!strcmp(name, group_names[g])) return g;
    return -1;
}

const char *vla_norm_mode_name(vla_norm_mode m) {
    return (unsigned)m < sizeof norm_names / sizeof norm_names[0] ? norm_names[m] : "?";
}

int vla_norm_mode_from_name(const char *name) {
    for (int m = 0; m < (int)(sizeof norm_names / sizeof norm_names[0]); m++)
        if (!strcasecmp(name, norm_names[m])) return m;
    return -1;
}

int64_t vla_policy_image_tokens(const vla_policy_config *cfg) {
    int64_t side = cfg->vision.image_size / cfg->vision.patch;
    return side * side;
}

int64_t vla_policy_prefix_tokens(const vla_policy_config *cfg) {
    return cfg->vision.cameras * vla_policy_image_tokens(cfg) + cfg->language.max_tokens;
}

/* ---- table-driven section parsing --------------------------------------- */

typedef vla_config_field field;
#define REQ_INT VLA_REQ_INT
#define OPT_INT VLA_OPT_INT
#define REQ_NUM VLA_REQ_NUM
#define OPT_NUM VLA_OPT_NUM
#define OPT_BOOL VLA_OPT_BOOL
#define F_INT VLA_FIELD_INT
#define F_NUM VLA_FIELD_NUM
#define F_BOOL VLA_FIELD_BOOL

static const double BIG = 1e12;

/* Every key of `obj` must be a field, a comment ("_…") or in `extra`. */
static vla_status check_keys(const char *what, const char *section, const json_t *obj, const field *f, int n,
                             const char *const *extra) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (key[0] == '_') continue;
        bool ok = false;
        for (int i = 0; i < n && !ok; i++) ok = !strcmp(key, f[i].key);
        for (int i = 0; extra && extra[i] && !ok; i++) ok = !strcmp(key, extra[i]);
        if (!ok) {
            const char *best = NULL;
            int best_d = INT_MAX;
            for (int i = 0; i < n; i++) {
                int d = vla_flags_distance(key, f[i].key);
                if (d < best_d) best_d = d, best = f[i].key;
            }
            if (best && best_d <= 2)
                return vla_error(VLA_ERR_FORMAT, "%s: unknown key '%s%s%s'; did you mean '%s'?", what,
                                 section ? section : "", section ? "." : "", key, best);
            return vla_error(VLA_ERR_FORMAT, "%s: unknown key '%s%s%s'", what, section ? section : "",
                             section ? "." : "", key);
        }
    }
    return VLA_OK;
}

static vla_status read_fields(const char *what, const char *section, const json_t *obj, const field *f, int n) {
    for (int i = 0; i < n; i++) {
        json_t *v = json_object_get(obj, f[i].key);
        double x;
        if (!v) {
            if (f[i].required)
                return vla_error(VLA_ERR_FORMAT, "%s: key '%s.%s' is missing", what, section, f[i].key);
            x = f[i].def;
        } else if (f[i].type == F_BOOL) {
            if (!json_is_boolean(v))
                return vla_error(VLA_ERR_FORMAT, "%s: key '%s.%s' must be true or false", what, section, f[i].key);
            x = json_is_true(v);
        } else if (f[i].type == F_INT) {
            if (!json_is_integer(v))
                return vla_error(VLA_ERR_FORMAT, "%s: key '%s.%s' must be an integer", what, section, f[i].key);
            x = (double)json_integer_value(v);
        } else {
            if (!json_is_number(v))
                return vla_error(VLA_ERR_FORMAT, "%s: key '%s.%s' must be a number", what, section, f[i].key);
            x = json_number_value(v);
        }
        if (f[i].type != F_BOOL && (!(x >= f[i].lo) || !(x <= f[i].hi)))
            return vla_error(VLA_ERR_FORMAT, "%s: key '%s.%s' is %g; it must be in [%g, %g]", what, section,
                             f[i].key, x, f[i].lo, f[i].hi);
        if (f[i].type == F_INT) *(int64_t *)f[i].dst = (int64_t)x;
        else if (f[i].type == F_NUM) *(double *)f[i].dst = x;
        else *(bool *)f[i].dst = x != 0;
    }
    return VLA_OK;
}

vla_status vla_config_parse_section(const char *what, const json_t *root, const char *section,
                                    const vla_config_field *f, int n) {
    json_t *obj = json_object_get(root, section);
    if (!obj) return vla_error(VLA_ERR_FORMAT, "%s: section '%s' is missing", what, section);
    if (!json_is_object(obj)) return vla_error(VLA_ERR_FORMAT, "%s: '%s' must be an object", what, section);
    VLA_TRY(check_keys(what, section, obj, f, n, NULL));
    return read_fields(what, section, obj, f, n);
}

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- the sections ------------------------------------------------------- */

static vla_status parse_vision(const char *what, const json_t *root, vla_vit_config *v) {
    const field f[] = {
        REQ_INT("image_size", &v->image_size, 1, 4096), REQ_INT("patch", &v->patch, 1, 4096),
        OPT_INT("channels", &v->channels, 1, 16, 3),    REQ_INT("width", &v->width, 1, 65536),
        REQ_INT("depth", &v->depth, 0, 1024),           REQ_INT("heads", &v->heads, 1, 1024),
        REQ_INT("mlp", &v->mlp, 1, 1 << 20),            OPT_INT("cameras", &v->cameras, 1, 64, 1),
        OPT_NUM("norm_eps", &v->norm_eps, 0, 1, 1e-6),
    };
    return vla_config_parse_section(what, root, "vision", f, N(f));
}

static vla_status parse_language(const char *what, const json_t *root, vla_lm_config *l) {
    const field f[] = {
        REQ_INT("width", &l->width, 1, 65536),        REQ_INT("depth", &l->depth, 1, 1024),
        REQ_INT("heads", &l->heads, 1, 1024),         REQ_INT("kv_heads", &l->kv_heads, 1, 1024),
        REQ_INT("head_dim", &l->head_dim, 2, 4096),   REQ_INT("mlp", &l->mlp, 1, 1 << 20),
        REQ_INT("vocab", &l->vocab, 1, 1 << 24),      REQ_INT("max_tokens", &l->max_tokens, 1, 1 << 20),
        OPT_NUM("rope_theta", &l->rope_theta, 1, BIG, 10000.0),
        OPT_NUM("norm_eps", &l->norm_eps, 0, 1, 1e-6), OPT_BOOL("qk_norm", &l->qk_norm, false),
    };
    return vla_config_parse_section(what, root, "language", f, N(f));
}

static vla_status parse_action(const char *what, const json_t *root, vla_action_config *a) {
    const field f[] = {
        REQ_INT("dim", &a->action_dim, 1, 4096),
        REQ_INT("horizon", &a->horizon, 1, 65536),
        REQ_INT("state_dim", &a->state_dim, 0, 4096),
    };
    return vla_config_parse_section(what, root, "action", f, N(f));
}

static vla_status parse_flow(const char *what, const json_t *root, vla_flow_config *fl) {
    const field f[] = {
        REQ_INT("steps", &fl->steps, 1, 100000),
        OPT_NUM("beta_alpha", &fl->beta_alpha, 1e-6, BIG, 1.5),
        OPT_NUM("beta_beta", &fl->beta_beta, 1e-6, BIG, 1.0),
        OPT_NUM("time_scale", &fl->time_scale, 1e-6, 1.0, 0.999),
        OPT_NUM("time_min_period", &fl->time_min_period, 1e-12, BIG, 4e-3),
        OPT_NUM("time_max_period", &fl->time_max_period, 1e-12, BIG, 4.0),
    };
    return vla_config_parse_section(what, root, "flow", f, N(f));
}

static vla_status parse_norm_mode(const char *what, const json_t *obj, const char *key, vla_norm_mode *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return vla_error(VLA_ERR_FORMAT, "%s: key 'normalization.%s' is missing", what, key);
    int m = json_is_string(v) ? vla_norm_mode_from_name(json_string_value(v)) : -1;
    if (m < 0)
        return vla_error(VLA_ERR_FORMAT,
                         "%s: key 'normalization.%s' must be one of \"identity\", \"mean_std\", \"min_max\", "
                         "\"quantiles\"",
                         what, key);
    *out = (vla_norm_mode)m;
    return VLA_OK;
}

static vla_status parse_normalization(const char *what, const json_t *root, vla_policy_config *cfg) {
    json_t *obj = json_object_get(root, "normalization");
    if (!obj) return vla_error(VLA_ERR_FORMAT, "%s: section 'normalization' is missing", what);
    if (!json_is_object(obj)) return vla_error(VLA_ERR_FORMAT, "%s: 'normalization' must be an object", what);
    static const char *const keys[] = {"state", "action", NULL};
    VLA_TRY(check_keys(what, "normalization", obj, NULL, 0, keys));
    VLA_TRY(parse_norm_mode(what, obj, "state", &cfg->norm_state));
    return parse_norm_mode(what, obj, "action", &cfg->norm_action);
}

static vla_status parse_frozen(const char *what, const json_t *root, vla_policy_config *cfg) {
    json_t *arr = json_object_get(root, "frozen");
    if (!arr) return VLA_OK; /* default: everything trains */
    if (!json_is_array(arr)) return vla_error(VLA_ERR_FORMAT, "%s: 'frozen' must be an array of group names", what);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        int g = json_is_string(v) ? vla_param_group_from_name(json_string_value(v)) : -1;
        if (g < 0)
            return vla_error(VLA_ERR_FORMAT,
                             "%s: 'frozen[%zu]' must be one of vision, connector, language, vl_adapter, expert, "
                             "action_io",
                             what, i);
        cfg->frozen[g] = true;
    }
    return VLA_OK;
}

vla_status vla_policy_config_validate(const char *what, const vla_policy_config *c) {
    const vla_vit_config *v = &c->vision;
    const vla_lm_config *l = &c->language;
    if (v->image_size % v->patch)
        return vla_error(VLA_ERR_FORMAT, "%s: vision.image_size (%lld) must be a multiple of vision.patch (%lld)",
                         what, (long long)v->image_size, (long long)v->patch);
    if (v->width % v->heads)
        return vla_error(VLA_ERR_FORMAT, "%s: vision.width (%lld) must be a multiple of vision.heads (%lld)", what,
                         (long long)v->width, (long long)v->heads);
    if (l->heads % l->kv_heads)
        return vla_error(VLA_ERR_FORMAT, "%s: language.kv_heads (%lld) must divide language.heads (%lld)", what,
                         (long long)l->kv_heads, (long long)l->heads);
    if (l->head_dim % 2)
        return vla_error(VLA_ERR_FORMAT, "%s: language.head_dim (%lld) must be even (RoPE)", what,
                         (long long)l->head_dim);
    if (!c->family) return vla_error(VLA_ERR_FORMAT, "%s: no policy family", what);
    return c->family->validate(what, c);
}

vla_status vla_policy_config_from_json(const char *what, const json_t *root, vla_policy_config *out) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(root)) return vla_error(VLA_ERR_FORMAT, "%s: a config must be a JSON object", what);
    json_t *p = json_object_get(root, "policy");
    if (!p) return vla_error(VLA_ERR_FORMAT, "%s: key 'policy' is missing (one of %s)", what, vla_policy_family_names());
    out->family = json_is_string(p) ? vla_policy_family_find(json_string_value(p)) : NULL;
    if (!out->family)
        return vla_error(VLA_ERR_FORMAT, "%s: key 'policy' must name a policy family (one of %s)", what,
                         vla_policy_family_names());
    const char *keys[] = {"policy", "name", "vision", "language", out->family->section, "action", "flow",
                          "normalization", "frozen", "tokenizer", NULL};
    VLA_TRY(check_keys(what, NULL, root, NULL, 0, keys));

    json_t *name = json_object_get(root, "name");
    if (name) {
        if (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) >= sizeof out->name)
            return vla_error(VLA_ERR_FORMAT, "%s: key 'name' must be a non-empty string under %zu bytes", what,
                             sizeof out->name);
        snprintf(out->name, sizeof out->name, "%s", json_string_value(name));
    }
    VLA_TRY(parse_vision(what, root, &out->vision));
    VLA_TRY(parse_language(what, root, &out->language));
    vla_config_field ff[32];
    int nf = out->family->section_fields(out, ff, 32);
    VLA_TRY(vla_config_parse_section(what, root, out->family->section, ff, nf));
    VLA_TRY(parse_action(what, root, &out->action));
    VLA_TRY(parse_flow(what, root, &out->flow));
    VLA_TRY(parse_normalization(what, root, out));
    VLA_TRY(parse_frozen(what, root, out));
    json_t *tk = json_object_get(root, "tokenizer");
    if (tk && (!json_is_string(tk) || json_string_length(tk) >= sizeof out->tokenizer))
        return vla_error(VLA_ERR_FORMAT, "%s: key 'tokenizer' must be a string (bytes, paligemma or a path)", what);
    snprintf(out->tokenizer, sizeof out->tokenizer, "%s", tk ? json_string_value(tk) : "");
    return vla_policy_config_validate(what, out);
}

vla_status vla_policy_config_parse(const char *what, const char *text, size_t len, vla_policy_config *out) {
    json_t *root = NULL;
    VLA_TRY(vla_json_parse(what, text, len, &root));
    vla_status st = vla_policy_config_from_json(what, root, out);
    json_decref(root);
    return st;
}

/* ---- writing ------------------------------------------------------------ */

static int put_fields(json_t *obj, const field *f, int n);

int vla_config_put_section(json_t *root, const char *section, const vla_config_field *f, int n) {
    json_t *obj = json_object();
    if (!obj) return 1;
    int bad = put_fields(obj, f, n);
    bad |= json_object_set_new(root, section, obj);
    return bad;
}

static int put_fields(json_t *obj, const field *f, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        json_t *v = f[i].type == F_INT   ? json_integer(*(const int64_t *)f[i].dst)
                    : f[i].type == F_NUM ? json_real(*(const double *)f[i].dst)
                                         : json_boolean(*(const bool *)f[i].dst);
        bad |= json_object_set_new(obj, f[i].key, v);
    }
    return bad;
}

vla_status vla_policy_config_to_json(const vla_policy_config *cfg, json_t **out) {
    /* The tables of the parsers, pointed at a copy (they take non-const destinations). */
    vla_policy_config c = *cfg;
    vla_vit_config *v = &c.vision;
    vla_lm_config *l = &c.language;
    vla_action_config *a = &c.action;
    vla_flow_config *fl = &c.flow;
    const field fv[] = {
        REQ_INT("image_size", &v->image_size, 0, 0), REQ_INT("patch", &v->patch, 0, 0),
        REQ_INT("channels", &v->channels, 0, 0),     REQ_INT("width", &v->width, 0, 0),
        REQ_INT("depth", &v->depth, 0, 0),           REQ_INT("heads", &v->heads, 0, 0),
        REQ_INT("mlp", &v->mlp, 0, 0),               REQ_INT("cameras", &v->cameras, 0, 0),
        REQ_NUM("norm_eps", &v->norm_eps, 0, 0),
    };
    const field fl_[] = {
        REQ_INT("width", &l->width, 0, 0),       REQ_INT("depth", &l->depth, 0, 0),
        REQ_INT("heads", &l->heads, 0, 0),       REQ_INT("kv_heads", &l->kv_heads, 0, 0),
        REQ_INT("head_dim", &l->head_dim, 0, 0), REQ_INT("mlp", &l->mlp, 0, 0),
        REQ_INT("vocab", &l->vocab, 0, 0),       REQ_INT("max_tokens", &l->max_tokens, 0, 0),
        REQ_NUM("rope_theta", &l->rope_theta, 0, 0), REQ_NUM("norm_eps", &l->norm_eps, 0, 0),
        OPT_BOOL("qk_norm", &l->qk_norm, 0),
    };
    const field fa[] = {REQ_INT("dim", &a->action_dim, 0, 0), REQ_INT("horizon", &a->horizon, 0, 0),
                        REQ_INT("state_dim", &a->state_dim, 0, 0)};
    const field ff[] = {
        REQ_INT("steps", &fl->steps, 0, 0),         REQ_NUM("beta_alpha", &fl->beta_alpha, 0, 0),
        REQ_NUM("beta_beta", &fl->beta_beta, 0, 0), REQ_NUM("time_scale", &fl->time_scale, 0, 0),
        REQ_NUM("time_min_period", &fl->time_min_period, 0, 0),
        REQ_NUM("time_max_period", &fl->time_max_period, 0, 0),
    };
    if (!c.family) return vla_error(VLA_ERR_INVALID_ARG, "config '%s': no policy family", cfg->name);
    vla_config_field fx[32];
    int nfx = c.family->section_fields(&c, fx, 32);
    json_t *o = json_object(), *sv = json_object(), *sl = json_object(), *sa = json_object(), *sf = json_object(),
           *sn = json_object(), *fr = json_array();
    int bad = !o || !sv || !sl || !sa || !sf || !sn || !fr;
    if (!bad) {
        bad |= json_object_set_new(o, "policy", json_string(c.family->name));
        if (c.name[0]) bad |= json_object_set_new(o, "name", json_string(c.name));
        if (c.tokenizer[0] && strcmp(c.tokenizer, "bytes"))
            bad |= json_object_set_new(o, "tokenizer", json_string(c.tokenizer));
        bad |= put_fields(sv, fv, N(fv)) | put_fields(sl, fl_, N(fl_)) | put_fields(sa, fa, N(fa)) |
               put_fields(sf, ff, N(ff));
        bad |= vla_config_put_section(o, c.family->section, fx, nfx);
        bad |= json_object_set_new(sn, "state", json_string(vla_norm_mode_name(c.norm_state)));
        bad |= json_object_set_new(sn, "action", json_string(vla_norm_mode_name(c.norm_action)));
        for (int g = 0; g < VLA_GROUP_COUNT; g++)
            if (c.frozen[g]) bad |= json_array_append_new(fr, json_string(group_names[g]));
        bad |= json_object_set(o, "vision", sv) | json_object_set(o, "language", sl) |
               json_object_set(o, "action", sa) | json_object_set(o, "flow", sf) |
               json_object_set(o, "normalization", sn) | json_object_set(o, "frozen", fr);
    }
    json_decref(sv), json_decref(sl), json_decref(sa), json_decref(sf), json_decref(sn), json_decref(fr);
    if (bad) {
        json_decref(o);
        return vla_error(VLA_ERR_NOMEM, "config '%s': cannot build JSON", cfg->name);
    }
    *out = o;
    return VLA_OK;
}

/* ---- locating presets --------------------------------------------------- */

static bool try_dir(const char *dir, const char *name, char *path, size_t cap) {
    int n = snprintf(path, cap, "%s/%s.json", dir, name);
    if (n <= 0 || (size_t)n >= cap || !vla_path_exists(path) || vla_is_dir(path)) return false;
    char *real = realpath(path, NULL); /* "…/build/../configs/x.json" reads better resolved */
    if (real && strlen(real) < cap) snprintf(path, cap, "%s", real);
    free(real);
    return true;
}

/* The config directories in search order — $VLA_CONFIG_DIR, ./configs, then configs/ next to the
 * executable (build tree, install prefix) — until fn says it found what it wanted. */
static bool each_config_dir(bool (*fn)(const char *dir, void *user), void *user) {
    const char *env = getenv("VLA_CONFIG_DIR");
    if (env && *env && fn(env, user)) return true;
    if (fn("configs", user)) return true;
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    static const char *const rel[] = {"/configs", "/../configs", "/../../configs", "/../share/vla/configs"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s%s", exe, rel[i]);
        if (fn(dir, user)) return true;
    }
    return false;
}

typedef struct {
    const char *name;
    char *path;
    size_t cap;
} find_ctx;

static bool find_in(const char *dir, void *user) {
    find_ctx *f = user;
    return try_dir(dir, f->name, f->path, f->cap);
}

typedef struct {
    char *buf;
    size_t cap;
} list_ctx;

static int list_dir(const char *dir, char *buf, size_t cap);
static bool list_in(const char *dir, void *user) {
    list_ctx *l = user;
    return list_dir(dir, l->buf, l->cap) > 0;
}

vla_status vla_policy_config_find(const char *name, char *path, size_t cap) {
    size_t len = strlen(name);
    if (len == 0) return vla_error(VLA_ERR_INVALID_ARG, "empty config name");
    if (strchr(name, '/') || (len > 5 && !strcmp(name + len - 5, ".json"))) {
        if (!vla_path_exists(name)) return vla_error(VLA_ERR_NOT_FOUND, "%s: no such config file", name);
        if ((size_t)snprintf(path, cap, "%s", name) >= cap)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: path too long", name);
        return VLA_OK;
    }
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
              *c == '_' || *c == '.'))
            return vla_error(VLA_ERR_INVALID_ARG, "config name '%s': only letters, digits, '-', '_' and '.'", name);
    const char *env = getenv("VLA_CONFIG_DIR");
    find_ctx fc = {name, path, cap};
    if (each_config_dir(find_in, &fc)) return VLA_OK;
    char names[1024];
    vla_policy_config_presets(names, sizeof names);
    return vla_error(VLA_ERR_NOT_FOUND,
                     "config '%s' not found (looked in $VLA_CONFIG_DIR%s%s, ./configs and configs/ next to the "
                     "executable); the presets are: %s; or pass a JSON path",
                     name, env ? "=" : "", env ? env : "", names[0] ? names : "none found");
}

/* Append the *.json names of `dir` (sorted), ", "-separated; returns how many. */
static int list_dir(const char *dir, char *buf, size_t cap) {
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort), k = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(ents[i]->d_name);
        if (l > 5 && !strcmp(ents[i]->d_name + l - 5, ".json")) {
            size_t used = strlen(buf);
            snprintf(buf + used, cap - used, "%s%.*s", used ? ", " : "", (int)(l - 5), ents[i]->d_name);
            k++;
        }
        free(ents[i]);
    }
    free(ents);
    return k;
}

void vla_policy_config_presets(char *buf, size_t cap) {
    buf[0] = 0;
    list_ctx lc = {buf, cap};
    each_config_dir(list_in, &lc);
}

vla_status vla_policy_config_load(const char *name_or_path, vla_policy_config *out) {
    char path[1024];
    VLA_TRY(vla_policy_config_find(name_or_path, path, sizeof path));
    json_t *root = NULL;
    VLA_TRY(vla_json_load_file(path, &root));
    vla_status st = vla_policy_config_from_json(path, root, out);
    json_decref(root);
    if (st != VLA_OK) return st;
    snprintf(out->path, sizeof out->path, "%s", path);
    if (!out->name[0]) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        snprintf(out->name, sizeof out->name, "%.*s", (int)strcspn(base, "."), base);
    }
    return VLA_OK;
}

/* published.c — weights and config from published checkpoints (see published.h). */
#include "checkpoint/published.h"

#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/dtype.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "io/safetensors.h"

#define MAX_SHARDS 256
#define PATH_CAP 4096

const char *const vla_published_unused[][2] = {
    {"paligemma_with_expert.gemma_expert.lm_head.weight",
     "π0.5: the action expert never produces tokens (its LM head is an artefact of building it as a Gemma)"},
    {"paligemma_with_expert.paligemma.lm_head.weight",
     "π0.5: tied to the token embedding; read as embed_tokens when the file stores it only here"},
    {"backbone.eagle_model.language_model.lm_head.weight",
     "GR00T: hidden states are read at select_layer; the LM never produces tokens"},
    {"backbone.eagle_model.vision_model.vision_model.head.",
     "GR00T: SigLIP's attention-pooling head; Eagle uses the patch tokens"},
    {NULL, NULL},
};

/* Names stored once for two tensors, where a file carries no alias:
 * {the policy's name, the stored name}. */
static const char *const known_ties[][2] = {
    {"paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight",
     "paligemma_with_expert.paligemma.lm_head.weight"},
    {NULL, NULL},
};

static const char *const prefixes[] = {"", "model.", "_groot_model."};

const char *vla_pub_format_name(vla_pub_format f) {
    switch (f) {
    case VLA_PUB_VLA: return "vla.c";
    case VLA_PUB_LEROBOT: return "LeRobot";
    case VLA_PUB_OPENPI: return "openpi";
    case VLA_PUB_GROOT: return "Isaac-GR00T";
    default: return "unknown";
    }
}

/* ---- the files -------------------------------------------------------- */

typedef struct {
    vla_safetensors sh[MAX_SHARDS];
    bool *used[MAX_SHARDS]; /* per tensor of each shard */
    int n;
    char where[PATH_CAP];   /* the path the user gave, for messages */
} shard_set;

static void shards_close(shard_set *s) {
    for (int i = 0; i < s->n; i++) {
        vla_safetensors_close(&s->sh[i]);
        free(s->used[i]);
    }
    s->n = 0;
}

static vla_status shard_open(shard_set *s, const char *file) {
    if (s->n == MAX_SHARDS) return vla_error(VLA_ERR_UNSUPPORTED, "%s: more than %d shards", s->where, MAX_SHARDS);
    VLA_TRY(vla_safetensors_open(file, &s->sh[s->n]));
    size_t nt = vla_safetensors_count(&s->sh[s->n]);
    s->used[s->n] = calloc(nt ? nt : 1, sizeof(bool));
    if (!s->used[s->n]) {
        vla_safetensors_close(&s->sh[s->n]);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", file);
    }
    s->n++;
    return VLA_OK;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* A sharded checkpoint: open every shard the index names (each once, in
 * order of first mention) and check that each listed tensor is where the
 * index says. Shard names are plain file names beside the index. */
static vla_status open_index(shard_set *s, const char *index) {
    json_t *root = NULL;
    VLA_TRY(vla_json_load_file(index, &root));
    vla_status st = VLA_OK;
    json_t *map = json_object_get(root, "weight_map");
    char dir[PATH_CAP], file[PATH_CAP * 2];
    snprintf(dir, sizeof dir, "%s", index);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    const char *names[MAX_SHARDS];
    int n_names = 0;
    const char *key;
    json_t *val;
    if (!json_is_object(map) || json_object_size(map) == 0) {
        st = vla_error(VLA_ERR_FORMAT, "%s: needs a non-empty \"weight_map\" object {tensor: shard file}", index);
        goto done;
    }
    json_object_foreach(map, key, val) {
        const char *shard = json_string_value(val);
        if (!shard || !shard[0] || strchr(shard, '/') || !strcmp(shard, "..")) {
            st = vla_error(VLA_ERR_FORMAT, "%s: weight_map[\"%s\"] must be a file name beside the index", index, key);
            goto done;
        }
        int j = 0;
        while (j < n_names && strcmp(names[j], shard)) j++;
        if (j < n_names) continue;
        if (n_names == MAX_SHARDS) {
            st = vla_error(VLA_ERR_UNSUPPORTED, "%s: more than %d shards", index, MAX_SHARDS);
            goto done;
        }
        names[n_names++] = shard;
        snprintf(file, sizeof file, "%s/%s", dir, shard);
        if (!vla_path_exists(file)) {
            st = vla_error(VLA_ERR_NOT_FOUND, "%s: shard %s (holding %s) is missing; download every file the index "
                           "lists", index, file, key);
            goto done;
        }
        if ((st = shard_open(s, file)) != VLA_OK) goto done;
    }
    json_object_foreach(map, key, val) {
        const char *shard = json_string_value(val);
        int j = 0;
        while (strcmp(names[j], shard)) j++;
        if (!vla_safetensors_find(&s->sh[j], key)) {
            st = vla_error(VLA_ERR_FORMAT, "%s: the index puts tensor '%s' in %s, which does not hold it", index, key,
                           shard);
            goto done;
        }
    }
done:
    json_decref(root);
    return st;
}

/* Resolve `path` (file, index or directory) and open what it names. */
static vla_status shards_open(shard_set *s, const char *path) {
    memset(s, 0, sizeof *s);
    snprintf(s->where, sizeof s->where, "%s", path);
    char file[PATH_CAP + 64];
    vla_status st;
    if (vla_is_dir(path)) {
        snprintf(file, sizeof file, "%s/model.safetensors.index.json", path);
        if (vla_path_exists(file)) st = open_index(s, file);
        else {
            snprintf(file, sizeof file, "%s/model.safetensors", path);
            if (!vla_path_exists(file))
                return vla_error(VLA_ERR_NOT_FOUND, "%s: no model.safetensors.index.json or model.safetensors in this "
                                 "directory", path);
            st = shard_open(s, file);
        }
    } else if (ends_with(path, ".json")) st = open_index(s, path);
    else st = shard_open(s, path);
    if (st != VLA_OK) shards_close(s);
    return st;
}

/* The tensor `name` in any shard; *shard set to its index. */
static const vla_safetensors_tensor *shards_find(const shard_set *s, const char *name, int *shard) {
    for (int i = 0; i < s->n; i++) {
        const vla_safetensors_tensor *t = vla_safetensors_find(&s->sh[i], name);
        if (t) {
            *shard = i;
            return t;
        }
    }
    return NULL;
}

/* The stored tensor behind `name`: itself, an alias in some shard's
 * __metadata__, or a known tie. */
static const vla_safetensors_tensor *resolve_name(const shard_set *s, const char *prefix, const char *name,
                                                  int *shard, bool *aliased) {
    char full[512];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    *aliased = false;
    const vla_safetensors_tensor *t = shards_find(s, full, shard);
    if (t) return t;
    *aliased = true;
    for (int i = 0; i < s->n; i++) {
        const char *target = vla_safetensors_meta_get(&s->sh[i], full);
        if (target && (t = shards_find(s, target, shard))) return t;
    }
    for (int i = 0; known_ties[i][0]; i++)
        if (!strcmp(name, known_ties[i][0])) {
            snprintf(full, sizeof full, "%s%s", prefix, known_ties[i][1]);
            if ((t = shards_find(s, full, shard))) return t;
        }
    return NULL;
}

static bool on_unused_list(const char *name) {
    for (int i = 0; vla_published_unused[i][0]; i++) {
        const char *u = vla_published_unused[i][0];
        size_t n = strlen(u);
        if (u[n - 1] == '.' ? !strncmp(name, u, n) : !strcmp(name, u)) return true;
    }
    return false;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* The prefix under which most of the policy's names are found. */
static vla_status pick_prefix(const shard_set *s, const vla_param_list *specs, const char **prefix) {
    int64_t best = -1;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        int64_t found = 0;
        for (int64_t j = 0; j < specs->n; j++) {
            int sh;
            bool al;
            found += resolve_name(s, prefixes[i], specs->items[j].name, &sh, &al) != NULL;
        }
        if (found > best) best = found, *prefix = prefixes[i];
    }
    if (best <= 0)
        return vla_error(VLA_ERR_FORMAT, "%s: holds none of this policy's %lld tensors (e.g. '%s', with or without a "
                         "'model.' / '_groot_model.' prefix): not a checkpoint of this architecture", s->where,
                         (long long)specs->n, specs->n ? specs->items[0].name : "");
    return VLA_OK;
}

/* One binding: for spec j, the stored tensor and its shard. */
typedef struct {
    const vla_safetensors_tensor **t;
    int *shard;
} binding;

static vla_status bind_all(shard_set *s, const vla_param_list *specs, binding *b, vla_published_report *rep) {
    const char *prefix = "";
    VLA_TRY(pick_prefix(s, specs, &prefix));
    snprintf(rep->prefix, sizeof rep->prefix, "%s", prefix);
    rep->n_files = s->n;
    for (int64_t j = 0; j < specs->n; j++) {
        const vla_param_spec *sp = &specs->items[j];
        bool aliased;
        const vla_safetensors_tensor *t = resolve_name(s, prefix, sp->name, &b->shard[j], &aliased);
        char want[96], got[96];
        shape_str(want, sizeof want, sp->ndim, sp->shape);
        if (!t)
            return vla_error(VLA_ERR_NOT_FOUND, "%s: tensor '%s%s' %s is missing (the policy needs every tensor; a "
                             "checkpoint of another size or architecture? see docs/checkpoints.md)", s->where, prefix,
                             sp->name, want);
        shape_str(got, sizeof got, t->ndim, t->shape);
        bool same = t->ndim == sp->ndim;
        for (int d = 0; same && d < sp->ndim; d++) same = t->shape[d] == sp->shape[d];
        if (!same)
            return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s' has shape %s, the policy expects %s", s->where,
                             t->name, got, want);
        if (t->dtype != VLA_F32 && t->dtype != VLA_BF16 && t->dtype != VLA_F16)
            return vla_error(VLA_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; weights load from F32, BF16 or F16", s->where,
                             t->name, vla_dtype_safetensors_name(t->dtype));
        s->used[b->shard[j]][t - s->sh[b->shard[j]].tensors] = true;
        b->t[j] = t;
        rep->bound++;
        rep->converted += t->dtype != VLA_F32;
        rep->aliased += aliased;
    }
    for (int i = 0; i < s->n; i++) {
        size_t nt = vla_safetensors_count(&s->sh[i]);
        rep->file_tensors += (int64_t)nt;
        rep->file_bytes += (int64_t)s->sh[i].data_len;
        for (size_t k = 0; k < nt; k++) {
            if (s->used[i][k]) continue;
            const char *name = s->sh[i].tensors[k].name;
            const char *bare = !strncmp(name, prefix, strlen(prefix)) ? name + strlen(prefix) : name;
            if (!on_unused_list(bare))
                return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s' (in %s) is not used by this policy and not on the "
                                 "list of known unused tensors (docs/checkpoints.md): a checkpoint of another "
                                 "architecture or size?", s->where, name, s->sh[i].what);
            rep->unused++;
        }
    }
    return VLA_OK;
}

static vla_status with_binding(const char *path, const vla_param_list *specs, vla_policy *p,
                               vla_published_report *rep) {
    memset(rep, 0, sizeof *rep);
    shard_set *s = calloc(1, sizeof *s);
    binding b = {calloc((size_t)(specs->n ? specs->n : 1), sizeof *b.t),
                 calloc((size_t)(specs->n ? specs->n : 1), sizeof *b.shard)};
    vla_status st = s && b.t && b.shard ? shards_open(s, path) : vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    if (st == VLA_OK) st = bind_all(s, specs, &b, rep);
    long page = sysconf(_SC_PAGESIZE);
    for (int64_t j = 0; p && st == VLA_OK && j < specs->n; j++) {
        const vla_safetensors_tensor *t = b.t[j];
        float *dst = vla_policy_param_stage(p, j);
        if (!dst) {
            st = vla_error(VLA_ERR_NOMEM, "%s: out of memory staging tensor '%s'", path, t->name);
            break;
        }
        st = vla_safetensors_tensor_to_f32(&s->sh[b.shard[j]], t, dst, (size_t)t->numel);
        int64_t bad = vla_policy_param_commit(p, j, dst);
        if (st == VLA_OK && bad >= 0)
            st = vla_error(VLA_ERR_NUMERIC, "%s: tensor '%s' holds a non-finite value at element %lld", path, t->name,
                           (long long)bad);
        /* read once: let the kernel drop the file pages now (they are page
         * cache, re-read from the file if ever touched again) */
        uintptr_t a = ((uintptr_t)t->data + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        uintptr_t e = ((uintptr_t)t->data + t->nbytes) & ~((uintptr_t)page - 1);
        if (s->sh[b.shard[j]].mapped && e > a) madvise((void *)a, e - a, MADV_DONTNEED);
    }
    if (s) shards_close(s);
    free(s);
    free(b.t);
    free(b.shard);
    return st;
}

vla_status vla_published_check(const char *path, const vla_param_list *specs, vla_published_report *rep) {
    return with_binding(path, specs, NULL, rep);
}

vla_status vla_published_load_weights(vla_policy *p, const char *path, vla_published_report *rep) {
    return with_binding(path, &p->specs, p, rep);
}

/* ---- config.json -------------------------------------------------------- */

/* The directory a path names (a file inside it → its directory). */
static void checkpoint_dir(const char *path, char *dir, size_t cap) {
    if (vla_is_dir(path)) {
        snprintf(dir, cap, "%s", path);
        return;
    }
    char tmp[PATH_CAP];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(dir, cap, "%s", dirname(tmp));
}

static vla_pub_format format_of(const json_t *root) {
    const char *type = json_string_value(json_object_get(root, "type"));
    const char *mt = json_string_value(json_object_get(root, "model_type"));
    if (json_is_object(json_object_get(root, "policy")) && json_object_get(root, "normalization")) return VLA_PUB_VLA;
    if (type && (!strcmp(type, "pi05") || !strcmp(type, "groot"))) return VLA_PUB_LEROBOT;
    if (mt && !strcmp(mt, "gr00t_n1_5")) return VLA_PUB_GROOT;
    if (json_object_get(root, "paligemma_variant") || json_object_get(root, "action_expert_variant"))
        return VLA_PUB_OPENPI;
    return VLA_PUB_UNKNOWN;
}

bool vla_published_detect(const char *path) {
    char dir[PATH_CAP], file[PATH_CAP + 32];
    checkpoint_dir(path, dir, sizeof dir);
    snprintf(file, sizeof file, "%s/config.json", dir);
    json_t *root = NULL;
    if (!vla_path_exists(file) || vla_json_load_file(file, &root) != VLA_OK) {
        vla_error_clear();
        return false;
    }
    vla_pub_format f = format_of(root);
    bool pub = f != VLA_PUB_UNKNOWN && f != VLA_PUB_VLA;
    json_decref(root);
    return pub;
}

/* Set root[section][key] = value (an integer) when `value` is one. */
static void put_int(json_t *root, const char *section, const char *key, const json_t *value) {
    if (!json_is_integer(value)) return;
    json_t *sec = json_object_get(root, section);
    if (json_is_object(sec)) json_object_set_new(sec, key, json_integer(json_integer_value(value)));
}

static const json_t *path_get(const json_t *root, const char *a, const char *b) {
    const json_t *x = json_object_get(root, a);
    return b ? json_object_get(x, b) : x;
}

/* Cameras: LeRobot's input_features of type VISUAL. */
static void put_cameras(json_t *preset, const json_t *root) {
    const json_t *in = json_object_get(root, "input_features");
    const char *k;
    json_t *v;
    int64_t n = 0;
    json_object_foreach((json_t *)in, k, v) {
        const char *t = json_string_value(json_object_get(v, "type"));
        n += t && !strcmp(t, "VISUAL");
    }
    if (n > 0) {
        json_t *c = json_integer(n);
        put_int(preset, "vision", "cameras", c);
        json_decref(c);
    }
}

/* What each format states, written over the preset's JSON. */
static void apply_overrides(json_t *preset, const json_t *root, vla_pub_format fmt, bool groot) {
    if (fmt == VLA_PUB_LEROBOT) {
        put_cameras(preset, root);
        put_int(preset, "action", "dim", path_get(root, "max_action_dim", NULL));
        put_int(preset, "action", "state_dim", path_get(root, "max_state_dim", NULL));
        if (!groot) { /* LeRobot's GR00T keeps chunk_size 50 but predicts action_horizon 16 */
            put_int(preset, "action", "horizon", path_get(root, "chunk_size", NULL));
            put_int(preset, "language", "max_tokens", path_get(root, "tokenizer_max_length", NULL));
            put_int(preset, "flow", "steps", path_get(root, "num_inference_steps", NULL));
        }
    } else if (fmt == VLA_PUB_OPENPI) {
        put_int(preset, "action", "dim", path_get(root, "action_dim", NULL));
        put_int(preset, "action", "horizon", path_get(root, "action_horizon", NULL));
        put_int(preset, "language", "max_tokens", path_get(root, "max_token_len", NULL));
    } else if (fmt == VLA_PUB_GROOT) {
        put_int(preset, "action", "horizon", path_get(root, "action_horizon", NULL));
        put_int(preset, "action", "dim", path_get(root, "action_head_cfg", "max_action_dim"));
        put_int(preset, "action", "state_dim", path_get(root, "action_head_cfg", "max_state_dim"));
        put_int(preset, "flow", "steps", path_get(root, "action_head_cfg", "num_inference_timesteps"));
        put_int(preset, "language", "depth", path_get(root, "backbone_cfg", "select_layer"));
        put_int(preset, "action_head", "embodiments", path_get(root, "action_head_cfg", "max_num_embodiments"));
    }
}

vla_status vla_published_check_path(const char *flag, const char *path) {
    static const char *const hint = "give a checkpoint directory (a pretrained_model, a training output, a "
                                    "published model) or its .safetensors file";
    if (!vla_path_exists(path)) return vla_error(VLA_ERR_NOT_FOUND, "%s=%s: no such file or directory", flag, path);
    if (vla_is_dir(path)) {
        static const char *const inside[] = {"config.json", "model.safetensors", "model.safetensors.index.json",
                                             "checkpoints", "pretrained_model", "manifest.json"};
        for (size_t i = 0; i < sizeof inside / sizeof *inside; i++) {
            char f[PATH_CAP + 64];
            snprintf(f, sizeof f, "%s/%s", path, inside[i]);
            if (vla_path_exists(f)) return VLA_OK;
        }
        return vla_error(VLA_ERR_FORMAT, "%s=%s is not a checkpoint: the directory holds no config.json, "
                         "model.safetensors or checkpoints/; %s", flag, path, hint);
    }
    size_t l = strlen(path);
    if (l > 11 && !strcmp(path + l - 11, ".index.json")) return VLA_OK; /* a sharded checkpoint's index */
    /* safetensors: an 8-byte little-endian header length, then the JSON header */
    unsigned char h[9] = {0};
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(h, 1, sizeof h, f) : 0;
    if (f) fclose(f);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | h[i];
    if (got == sizeof h && h[8] == '{' && n >= 2 && n < ((uint64_t)1 << 32)) return VLA_OK;
    return vla_error(VLA_ERR_FORMAT, "%s=%s is not a checkpoint: the file is not safetensors (no safetensors header "
                     "at its start); %s", flag, path, hint);
}

vla_status vla_published_config(const char *path, const char *base, vla_policy_config *cfg, vla_pub_format *fmt) {
    char dir[PATH_CAP], file[PATH_CAP + 32], preset_path[1024];
    VLA_TRY(vla_published_check_path("--policy.pretrained_path", path));
    checkpoint_dir(path, dir, sizeof dir);
    snprintf(file, sizeof file, "%s/config.json", dir);
    if (!vla_path_exists(file))
        return vla_error(VLA_ERR_NOT_FOUND, "%s: no config.json beside the weights; it says whose checkpoint this is "
                         "(LeRobot, openpi, Isaac-GR00T or vla.c), so how its tensors are named (--policy.config "
                         "picks a size, not that): copy the checkpoint's config.json there with the weights", dir);
    json_t *root = NULL, *preset = NULL;
    VLA_TRY(vla_json_load_file(file, &root));
    vla_status st = VLA_OK;
    *fmt = format_of(root);
    const char *type = json_string_value(json_object_get(root, "type"));
    bool groot = *fmt == VLA_PUB_GROOT || (type && !strcmp(type, "groot"));
    if (*fmt == VLA_PUB_VLA) { /* as written by vla.c: the whole config */
        if (base) st = vla_error(VLA_ERR_INVALID_ARG, "%s: a vla.c checkpoint carries its config; drop --policy.config",
                                 file);
        else st = vla_policy_config_from_json(file, json_object_get(root, "policy"), cfg);
        goto done;
    }
    if (*fmt == VLA_PUB_UNKNOWN) {
        st = vla_error(VLA_ERR_FORMAT, "%s: not a LeRobot (\"type\": \"pi05\"|\"groot\"), openpi (Pi0Config) or "
                       "Isaac-GR00T (\"model_type\": \"gr00t_n1_5\") config", file);
        goto done;
    }
    if ((st = vla_policy_config_find(base ? base : groot ? "groot-n1.5" : "pi05", preset_path,
                                     sizeof preset_path)) != VLA_OK)
        goto done;
    if ((st = vla_json_load_file(preset_path, &preset)) != VLA_OK) goto done;
    const char *fam = json_string_value(json_object_get(preset, "policy"));
    if (!fam || strcmp(fam, groot ? "groot" : "pi05")) {
        st = vla_error(VLA_ERR_INVALID_ARG, "%s: a %s checkpoint, but --policy.config %s is a '%s' policy", file,
                       groot ? "GR00T" : "π0.5", preset_path, fam ? fam : "?");
        goto done;
    }
    apply_overrides(preset, root, *fmt, groot);
    st = vla_policy_config_from_json(file, preset, cfg);
    if (st == VLA_OK) st = vla_policy_config_validate(file, cfg);
done:
    json_decref(root);
    json_decref(preset);
    return st;
}

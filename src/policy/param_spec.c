/* param_spec.c — the parameter inventory's builder (LIST and BIND modes,
 * see param_spec.h), counting, and the estimates shared by every family:
 * the order of tensors is the order of the weight allocation, as the
 * families' inventories declare them. */
#include "policy/param_spec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/family.h"

static const float STD = 0.02f; /* HF initializer_range / GR00T 0.02·randn */

void vla_pb_group(vla_param_builder *b, vla_param_group g, vla_param_apply apply) {
    b->group = g;
    b->apply = apply;
}

/* LIST: the next free spec (grown as needed); NULL on error. */
static vla_param_spec *next_spec(vla_param_builder *b) {
    vla_param_list *l = b->list;
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 256;
        vla_param_spec *p = realloc(l->items, (size_t)cap * sizeof *p);
        if (!p) {
            b->st = vla_error(VLA_ERR_NOMEM, "parameter list: out of memory at %lld entries", (long long)l->n);
            return NULL;
        }
        l->items = p, l->cap = cap;
    }
    vla_param_spec *s = &l->items[l->n];
    memset(s, 0, sizeof *s);
    return s;
}

/* BIND: the tensor at the walk's position must be this one. */
static void bind_next(vla_param_builder *b, vla_wg *t, const char *name, int64_t numel) {
    if (b->next >= b->list->n) {
        b->st = vla_error(VLA_ERR_INTERNAL, "parameter %s is not in the inventory", name);
        return;
    }
    const vla_param_spec *s = &b->list->items[b->next++];
    if (strcmp(s->name, name) != 0 || s->numel != numel) {
        b->st = vla_error(VLA_ERR_INTERNAL, "binding %s (%lld elements) met %s (%lld) in the inventory", name,
                          (long long)numel, s->name, (long long)s->numel);
        return;
    }
    if (t) {
        t->w = b->weights + b->w_off;
        t->g = s->trainable && b->grads ? b->grads + b->g_off : NULL;
    }
    b->w_off += s->numel;
    if (s->trainable) b->g_off += s->numel;
}

void vla_pb_tensor(vla_param_builder *b, vla_wg *t, vla_init_kind init, int ndim, const int64_t *shape,
                   const char *fmt, ...) {
    if (b->st != VLA_OK) return;
    char name[sizeof ((vla_param_spec *)0)->name];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof name) {
        b->st = vla_error(VLA_ERR_INTERNAL, "parameter name too long: %s…", name);
        return;
    }
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    if (b->binding) {
        bind_next(b, t, name, numel);
        return;
    }
    vla_param_spec *s = next_spec(b);
    if (!s) return;
    memcpy(s->name, name, (size_t)n + 1);
    s->ndim = ndim;
    s->numel = numel;
    for (int i = 0; i < ndim; i++) s->shape[i] = shape[i];
    s->group = b->group;
    s->trainable = !b->cfg->frozen[b->group];
    s->init = init;
    s->init_scale = init == VLA_INIT_NORMAL ? STD : 0.0f;
    s->apply = ndim >= 2 ? b->apply : VLA_APPLY_NONE;
    s->n_emb = 1;
    b->list->n++;
    if (t) t->w = NULL, t->g = NULL;
}

void vla_pb_last_apply(vla_param_builder *b, vla_param_apply apply, int64_t n_emb) {
    if (b->st == VLA_OK && !b->binding && b->list->n > 0) {
        b->list->items[b->list->n - 1].apply = apply;
        b->list->items[b->list->n - 1].n_emb = n_emb;
    }
}

/* The init scale of the tensor just added (LIST mode). */
static void last_scale(vla_param_builder *b, float scale) {
    if (b->st == VLA_OK && !b->binding && b->list->n > 0) b->list->items[b->list->n - 1].init_scale = scale;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

void vla_pb_linear(vla_param_builder *b, vla_wg *w, vla_wg *bias, int64_t in, int64_t out, const char *prefix) {
    bool torch = b->torch_linear;
    vla_pb_tensor(b, w, torch ? VLA_INIT_UNIFORM : VLA_INIT_NORMAL, 2, SHAPE(out, in), "%s.weight", prefix);
    if (torch) last_scale(b, (float)(1.0 / sqrt((double)in)));
    if (!bias) return;
    vla_pb_tensor(b, bias, torch ? VLA_INIT_UNIFORM : VLA_INIT_ZEROS, 1, SHAPE(out), "%s.bias", prefix);
    if (torch) last_scale(b, (float)(1.0 / sqrt((double)in)));
}

void vla_pb_layernorm(vla_param_builder *b, vla_wg *w, vla_wg *bias, int64_t dim, const char *prefix) {
    vla_pb_tensor(b, w, VLA_INIT_ONES, 1, SHAPE(dim), "%s.weight", prefix);
    vla_pb_tensor(b, bias, VLA_INIT_ZEROS, 1, SHAPE(dim), "%s.bias", prefix);
}

void vla_pb_cat_linear(vla_param_builder *b, vla_wg *w, vla_wg *bias, int64_t n_emb, int64_t in, int64_t out,
                       const char *prefix) {
    bool torch = b->torch_linear;
    vla_pb_tensor(b, w, torch ? VLA_INIT_UNIFORM : VLA_INIT_NORMAL, 3, SHAPE(n_emb, in, out), "%s.W", prefix);
    if (torch) last_scale(b, (float)(1.0 / sqrt((double)in)));
    vla_pb_last_apply(b, b->apply, n_emb);
    vla_pb_tensor(b, bias, torch ? VLA_INIT_UNIFORM : VLA_INIT_ZEROS, 2, SHAPE(n_emb, out), "%s.b", prefix);
    if (torch) last_scale(b, (float)(1.0 / sqrt((double)in)));
    vla_pb_last_apply(b, VLA_APPLY_NONE, 1);
}

void vla_pb_decoder_attn_mlp(vla_param_builder *b, vla_wg *q, vla_wg *k, vla_wg *v, vla_wg *o, vla_wg *gate,
                             vla_wg *up, vla_wg *down, int64_t width, int64_t Q, int64_t K, int64_t mlp,
                             const char *prefix) {
    const struct {
        vla_wg *w;
        const char *name;
        int64_t in, out;
    } mats[] = {{q, "self_attn.q_proj", width, Q}, {k, "self_attn.k_proj", width, K},
                {v, "self_attn.v_proj", width, K}, {o, "self_attn.o_proj", Q, width},
                {gate, "mlp.gate_proj", width, mlp}, {up, "mlp.up_proj", width, mlp},
                {down, "mlp.down_proj", mlp, width}};
    char name[300];
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
        snprintf(name, sizeof name, "%s.%s", prefix, mats[i].name);
        vla_pb_linear(b, mats[i].w, NULL, mats[i].in, mats[i].out, name);
    }
}

void *vla_pb_array(vla_param_builder *b, int64_t count, size_t size) {
    if (b->st != VLA_OK) return NULL;
    void *p = vla_arena_calloc(b->arena, (size_t)(count > 0 ? count : 1) * size, 64);
    if (!p) b->st = vla_error(VLA_ERR_NOMEM, "parameter inventory: out of memory");
    return p;
}

vla_block_weights *vla_pb_blocks(vla_param_builder *b, int64_t count) {
    vla_block_weights *w = vla_pb_array(b, count, sizeof *w);
    if (!w || !b->binding || !b->blocks) return w;
    vla_block_set *s = b->blocks;
    if (s->n == VLA_BLOCK_SET_MAX) {
        b->st = vla_error(VLA_ERR_INTERNAL, "parameter inventory: more than %d block stacks", VLA_BLOCK_SET_MAX);
        return NULL;
    }
    s->arr[s->n] = w, s->count[s->n] = count, s->n++;
    return w;
}

/* Run the family's inventory with a zeroed weight struct of its size. */
static vla_status run_inventory(vla_param_builder *b, void *weight_struct) {
    const vla_policy_family *f = b->cfg->family;
    if (!f) return vla_error(VLA_ERR_INVALID_ARG, "config '%s' names no policy family", b->cfg->name);
    void *tmp = NULL;
    if (!weight_struct) {
        if (!(tmp = calloc(1, f->weights_size ? f->weights_size : 1)))
            return vla_error(VLA_ERR_NOMEM, "parameter inventory: out of memory");
        weight_struct = tmp;
    }
    f->inventory(b, b->cfg, weight_struct);
    free(tmp);
    return b->st;
}

vla_status vla_param_specs(const vla_policy_config *cfg, vla_param_list *out) {
    vla_arena arena;
    vla_arena_init(&arena, 0);
    vla_param_builder b = {.list = out, .cfg = cfg, .arena = &arena};
    vla_status st = run_inventory(&b, NULL);
    vla_arena_free(&arena);
    return st;
}

vla_status vla_param_bind(const vla_policy_config *cfg, const vla_param_list *list, float *weights, float *grads,
                          vla_arena *arena, void *weight_struct, vla_block_set *blocks) {
    if (blocks) memset(blocks, 0, sizeof *blocks);
    vla_param_builder b = {.list = (vla_param_list *)list, .cfg = cfg, .binding = true, .weights = weights,
                           .grads = grads, .arena = arena, .blocks = blocks};
    VLA_TRY(run_inventory(&b, weight_struct));
    if (b.next != list->n)
        return vla_error(VLA_ERR_INTERNAL, "binding %s: %lld of %lld tensors bound", cfg->name, (long long)b.next,
                         (long long)list->n);
    return VLA_OK;
}

void vla_param_list_free(vla_param_list *list) {
    free(list->items);
    memset(list, 0, sizeof *list);
}

int64_t vla_param_find(const vla_param_list *list, const char *name) {
    for (int64_t i = 0; i < list->n; i++)
        if (!strcmp(list->items[i].name, name)) return i;
    return -1;
}

void vla_param_count(const vla_param_list *list, vla_param_counts *out) {
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < list->n; i++) {
        const vla_param_spec *s = &list->items[i];
        out->params[s->group] += s->numel;
        out->tensors[s->group]++;
        if (s->trainable) out->trainable[s->group] += s->numel;
    }
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        out->total_params += out->params[g];
        out->total_trainable += out->trainable[g];
        out->total_tensors += out->tensors[g];
    }
}

/* ---- estimates ---------------------------------------------------------- */

double vla_layer_act_floats(double n, double d, double heads, double kv_heads, double head_dim, double n_kv,
                            double ff, bool gated, bool bf16_copies) {
    /* residual input, normed input and its stats, q, k and v (k/v for n_kv
     * tokens), attention output and log-sum-exp, the residual after
     * attention, the second norm's output, the MLP's hidden activations
     * (pre-activation and activated; gated MLPs also the up branch) */
    double attn = n * (2 * d + 2) + n * heads * head_dim + 2 * n_kv * kv_heads * head_dim + n * heads * head_dim +
                  n * heads;
    double mlp = n * (2 * d + 2) + n * ff * (gated ? 3 : 2);
    /* kept copies: both normed inputs and the activated hidden at half size (their rows' padding left out) */
    double halved = bf16_copies ? 0.5 * (2 * n * d + n * ff) : 0;
    return attn + mlp - halved;
}

/* Which groups train, and which must pass gradients (own weights train, or
 * some upstream group's do). Data flow: vision → connector → language →
 * vl_adapter (GR00T) → expert, with action_io feeding and reading the expert. */
static void gradient_flow(const vla_param_list *list, bool *tr, bool *need) {
    for (int g = 0; g < VLA_GROUP_COUNT; g++) tr[g] = false;
    for (int64_t i = 0; i < list->n; i++)
        if (list->items[i].trainable) tr[list->items[i].group] = true;
    need[VLA_GROUP_VISION] = tr[VLA_GROUP_VISION];
    need[VLA_GROUP_CONNECTOR] = need[VLA_GROUP_VISION] || tr[VLA_GROUP_CONNECTOR];
    need[VLA_GROUP_LANGUAGE] = need[VLA_GROUP_CONNECTOR] || tr[VLA_GROUP_LANGUAGE];
    need[VLA_GROUP_VL_ADAPTER] = need[VLA_GROUP_LANGUAGE] || tr[VLA_GROUP_VL_ADAPTER];
    need[VLA_GROUP_EXPERT] = need[VLA_GROUP_VL_ADAPTER] || tr[VLA_GROUP_EXPERT] || tr[VLA_GROUP_ACTION_IO];
    need[VLA_GROUP_ACTION_IO] = need[VLA_GROUP_EXPERT] || tr[VLA_GROUP_ACTION_IO];
}

void vla_flops_estimate_compute(const vla_policy_config *c, const vla_param_list *list, vla_flops_estimate *out) {
    memset(out, 0, sizeof *out);
    bool tr[VLA_GROUP_COUNT], need[VLA_GROUP_COUNT];
    gradient_flow(list, tr, need);
    double img1 = (double)vla_policy_image_tokens(c), n_img = c->vision.cameras * img1;
    double n_pre = (double)vla_policy_prefix_tokens(c), horizon = (double)c->action.horizon;
    double n_head = c->family->head_tokens(c);
    double fwd[VLA_GROUP_COUNT] = {0};
    for (int64_t i = 0; i < list->n; i++) {
        const vla_param_spec *s = &list->items[i];
        double tokens = 0;
        switch (s->apply) {
        case VLA_APPLY_IMAGE: tokens = n_img; break;
        case VLA_APPLY_PREFIX: tokens = n_pre; break;
        case VLA_APPLY_ACTION: tokens = horizon; break;
        case VLA_APPLY_DIT: tokens = n_head; break;
        case VLA_APPLY_SAMPLE: tokens = 1; break;
        default: break;
        }
        fwd[s->group] += 2.0 * (double)s->numel / (double)(s->n_emb > 0 ? s->n_emb : 1) * tokens;
    }
    /* attention scores and weighted sums: 4·Nq·Nk·(heads·head_dim) */
    fwd[VLA_GROUP_VISION] += c->vision.depth * c->vision.cameras * 4.0 * img1 * img1 * c->vision.width;
    c->family->attention_flops(c, fwd);
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        out->forward[g] = fwd[g];
        out->train[g] = fwd[g] * (1.0 + (need[g] ? 1.0 : 0.0) + (tr[g] ? 1.0 : 0.0));
        out->total_forward += fwd[g];
        out->total_train += out->train[g];
        bool action_side = g == VLA_GROUP_EXPERT || g == VLA_GROUP_ACTION_IO;
        out->sample += action_side ? (double)c->flow.steps * fwd[g] : fwd[g];
    }
}

void vla_activation_estimate_compute(const vla_policy_config *c, const vla_param_list *list, bool bf16_copies,
                                     vla_activation_estimate *out) {
    memset(out, 0, sizeof *out);
    out->bf16_copies = bf16_copies; /* the families' layers read it */
    bool tr[VLA_GROUP_COUNT], need[VLA_GROUP_COUNT];
    gradient_flow(list, tr, need);
    const vla_vit_config *v = &c->vision;
    const vla_lm_config *l = &c->language;
    double n_img = (double)(v->cameras * vla_policy_image_tokens(c));
    double n_pre = (double)vla_policy_prefix_tokens(c);
    double per_layer[VLA_GROUP_COUNT] = {0}, total[VLA_GROUP_COUNT] = {0};

    /* vision: patches (im2col) + embeddings, then the encoder layers */
    out->tokens[VLA_GROUP_VISION] = (int64_t)n_img;
    per_layer[VLA_GROUP_VISION] = vla_layer_act_floats(n_img, v->width, v->heads, v->heads,
                                                       (double)v->width / v->heads, n_img, v->mlp, false, bf16_copies);
    total[VLA_GROUP_VISION] = n_img * (v->channels * v->patch * v->patch + v->width) +
                              v->depth * per_layer[VLA_GROUP_VISION] + n_img * v->width;
    out->recompute_per_sample[VLA_GROUP_VISION] =
        vla_activation_remat(total[VLA_GROUP_VISION], v->depth, per_layer[VLA_GROUP_VISION], n_img * v->width);
    out->tokens[VLA_GROUP_CONNECTOR] = (int64_t)n_img;
    per_layer[VLA_GROUP_CONNECTOR] = total[VLA_GROUP_CONNECTOR] = n_img * (v->width + l->width);
    out->tokens[VLA_GROUP_LANGUAGE] = (int64_t)n_pre;
    per_layer[VLA_GROUP_LANGUAGE] =
        vla_layer_act_floats(n_pre, l->width, l->heads, l->kv_heads, l->head_dim, n_pre, l->mlp, true, bf16_copies);
    total[VLA_GROUP_LANGUAGE] = n_pre * l->width + l->depth * per_layer[VLA_GROUP_LANGUAGE] + n_pre * l->width;
    out->recompute_per_sample[VLA_GROUP_CONNECTOR] = total[VLA_GROUP_CONNECTOR];
    out->recompute_per_sample[VLA_GROUP_LANGUAGE] =
        vla_activation_remat(total[VLA_GROUP_LANGUAGE], l->depth, per_layer[VLA_GROUP_LANGUAGE], n_pre * l->width);
    c->family->activations(c, out, total, per_layer); /* sets its groups' recompute_per_sample too */
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        out->transient_per_sample[g] = per_layer[g];
        out->floats_per_sample[g] = need[g] ? total[g] : 0;
        out->recompute_per_sample[g] = need[g] ? out->recompute_per_sample[g] : 0;
        out->total_floats_per_sample += out->floats_per_sample[g];
        out->total_recompute_per_sample += out->recompute_per_sample[g];
    }
}

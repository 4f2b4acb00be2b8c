/* precision.c — a policy's mixed-precision state: binding each transformer
 * block's large linears to bf16 or to FP8 scaling state in one backend
 * buffer, the delayed-scaling update, and the checkpoint form (see
 * precision.h and docs/precision.md). */
#include "policy/precision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/env_switch.h"
#include "policy/region.h"

void vla_fp8_recipe_default(vla_fp8_recipe *r) {
    r->amax_history_len = 1024;
    r->margin = 0.0f;
    r->most_recent = false;
    r->min_dim = 0;
}

const char *vla_precision_name(vla_precision m) {
    switch (m) {
    case VLA_PREC_FP32: return "fp32";
    case VLA_PREC_BF16: return "bf16";
    case VLA_PREC_FP8: return "fp8";
    }
    return "?";
}

vla_status vla_precision_parse(const char *s, vla_precision *out) {
    for (int m = VLA_PREC_FP32; m <= VLA_PREC_FP8; m++)
        if (s && !strcmp(s, vla_precision_name((vla_precision)m))) {
            *out = (vla_precision)m;
            return VLA_OK;
        }
    return vla_error(VLA_ERR_INVALID_ARG, "unknown precision '%s' (fp32, bf16 or fp8)", s ? s : "(null)");
}

static int64_t n_blocks(const vla_policy *p) {
    int64_t n = 0;
    for (int s = 0; s < p->blocks.n; s++) n += p->blocks.count[s];
    return n;
}

static void unbind(vla_policy *p) {
    for (int s = 0; s < p->blocks.n; s++)
        for (int64_t b = 0; b < p->blocks.count[s]; b++) p->blocks.arr[s][b].prec = NULL;
}

/* what the precision and the switches say now (precision.h, kept copies) */
static const vla_ops *kept_wanted(const vla_policy *p) {
    const vla_gemm_q g = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
    bool on = p->prec && p->prec->mode == VLA_PREC_BF16 && vla_linear_kept_copies_on() && vla_linear_input_ready_on() &&
              p->tops->ready_bytes(&g, 1, 1) > 0;
    return on ? p->tops : NULL;
}

const vla_ops *vla_policy_kept_copies(const vla_policy *p) { return p->blocks.kept; }

/* every registered config as the precision now says (a size table follows its config: the next call's
 * activations are carved accordingly) */
static void keep_copies(vla_policy *p) {
    p->blocks.kept = kept_wanted(p);
    for (int i = 0; i < p->blocks.n_cfg; i++) vla_block_keep_copies(p->blocks.cfg[i], p->blocks.kept);
}

void vla_policy_block_config(vla_policy *p, vla_block_config *c) {
    if (p->blocks.n_cfg >= VLA_BLOCK_SET_MAX) abort(); /* a family with more block kinds: raise the max */
    p->blocks.cfg[p->blocks.n_cfg++] = c;
    keep_copies(p);
}

void vla_policy_precision_free(vla_policy *p) {
    vla_policy_precision *q = p->prec;
    if (!q) return;
    unbind(p);
    if (q->buf) p->tops->free(q->buf);
    for (int64_t l = 0; q->ready && l < q->n_linears; l++) {
        if (q->ready[l].fwd) p->tops->free(q->ready[l].fwd);
        if (q->ready[l].dgrad) p->tops->free(q->ready[l].dgrad);
    }
    free(q->ready);
    if (q->casts.fwd.buf) p->tops->free(q->casts.fwd.buf);
    if (q->casts.wgrad.buf) p->tops->free(q->casts.wgrad.buf);
    if (q->casts.dy.buf) p->tops->free(q->casts.dy.buf);
    if (q->casts.dy_t.buf) p->tops->free(q->casts.dy_t.buf);
    if (q->casts.out.buf) p->tops->free(q->casts.out.buf);
    free(q->fmt_max), free(q->names), free(q->bp), free(q->fp8_index), free(q->fp8_linear);
    free(q);
    p->prec = NULL;
    keep_copies(p);
}

/* linear's name from its weight's parameter name ("….weight" → "…"); i: that parameter's index */
static vla_status linear_name(const vla_policy *p, int64_t i, char *out, size_t cap) {
    if (i < 0) return vla_error(VLA_ERR_INTERNAL, "precision: a block's linear weight is not a parameter");
    const char *name = p->params[i].spec->name;
    size_t len = strlen(name);
    if (len > 7 && !strcmp(name + len - 7, ".weight")) len -= 7;
    if (len >= cap) return vla_error(VLA_ERR_INTERNAL, "precision: parameter name '%s' too long", name);
    memcpy(out, name, len);
    out[len] = 0;
    return VLA_OK;
}

/* Whether a lowered linear reads FP8 in an FP8 run: both sides of its weight [out, in] at least min_dim. */
static bool fp8_pays(const vla_policy *p, const vla_policy_precision *q, int64_t param) {
    if (q->mode != VLA_PREC_FP8) return false;
    const vla_param_spec *s = param >= 0 ? p->params[param].spec : NULL;
    if (!s || s->ndim < 2) return true;
    int64_t out = s->shape[s->ndim - 2], in = s->shape[s->ndim - 1];
    return out >= q->recipe.min_dim && in >= q->recipe.min_dim;
}

/* Count (bind = false) or bind the lowered linears, block by block;
 * *n_fp8: those that read FP8. */
static vla_status walk(vla_policy *p, vla_policy_precision *q, bool bind, int64_t *n_linears, int64_t *n_fp8) {
    int64_t l = 0, blk = 0, f = 0;
    for (int s = 0; s < p->blocks.n; s++)
        for (int64_t b = 0; b < p->blocks.count[s]; b++, blk++) {
            vla_block_weights *bw = &p->blocks.arr[s][b];
            for (int i = 0; i < VLA_BLOCK_N_LIN; i++) {
                const vla_wg *wg = vla_block_linear_weight(bw, (vla_block_linear)i);
                if (!wg) continue;
                int64_t param = vla_policy_param_index(p, wg->w);
                bool fp8 = fp8_pays(p, q, param);
                if (bind) {
                    vla_linear_prec *lp = &q->bp[blk].lin[i];
                    lp->mode = q->mode == VLA_PREC_FP8 && !fp8 ? VLA_PREC_BF16 : q->mode;
                    q->fp8_index[l] = fp8 ? f : -1;
                    if (fp8) q->fp8_linear[f] = l;
                    q->ready[l].scope = &q->scope;
                    q->ready[l].param = param;
                    lp->ready = &q->ready[l];
                    lp->casts = &q->casts;
                    if (fp8) {
                        vla_fp8_operand *ops[VLA_FP8_ROLES] = {&lp->x, &lp->w, &lp->dy};
                        for (int r = 0; r < VLA_FP8_ROLES; r++) {
                            int64_t t = 3 * f + r;
                            *ops[r] = (vla_fp8_operand){r == VLA_FP8_ROLE_GRAD_OUTPUT ? VLA_FP8_E5M2 : VLA_FP8_E4M3,
                                                        q->scale + t, q->history + t};
                            q->fmt_max[t] = r == VLA_FP8_ROLE_GRAD_OUTPUT ? VLA_E5M2_MAX : VLA_E4M3_MAX;
                        }
                    }
                    VLA_TRY(linear_name(p, param, q->names[l], sizeof q->names[l]));
                }
                l++;
                f += fp8;
            }
            if (bind) bw->prec = &q->bp[blk];
        }
    *n_linears = l;
    *n_fp8 = f;
    return VLA_OK;
}

vla_status vla_policy_set_precision(vla_policy *p, vla_precision mode, const vla_fp8_recipe *r) {
    vla_policy_precision_free(p);
    if (mode == VLA_PREC_FP32) return VLA_OK;
    if (mode != VLA_PREC_BF16 && mode != VLA_PREC_FP8)
        return vla_error(VLA_ERR_INVALID_ARG, "precision: unknown mode %d", (int)mode);
    vla_policy_precision *q = calloc(1, sizeof *q);
    if (!q) return vla_error(VLA_ERR_NOMEM, "precision: out of memory");
    static uint64_t serials; /* policies are set up from one thread */
    q->mode = mode;
    q->serial = ++serials;
    q->scope.frozen_gen = 1; /* a copy stamped 0 was never made */
    if (r) q->recipe = *r;
    else vla_fp8_recipe_default(&q->recipe);
    if (mode == VLA_PREC_FP8 && (q->recipe.amax_history_len < 1 || !isfinite(q->recipe.margin))) {
        vla_fp8_recipe bad = q->recipe;
        free(q);
        return vla_error(VLA_ERR_INVALID_ARG, "precision: FP8 amax history length %lld, margin %g: need ≥ 1 and finite",
                         (long long)bad.amax_history_len, bad.margin);
    }
    if (mode == VLA_PREC_FP8 && q->recipe.min_dim < 0) {
        int64_t bad = q->recipe.min_dim;
        free(q);
        return vla_error(VLA_ERR_INVALID_ARG, "precision: FP8 min_dim %lld: need ≥ 0", (long long)bad);
    }
    int64_t nl = 0, nf = 0, nb = n_blocks(p);
    vla_status st = walk(p, q, false, &nl, &nf);
    q->n_linears = nl;
    q->n_fp8 = nf;
    q->n = 3 * nf;
    q->bp = calloc((size_t)(nb > 0 ? nb : 1), sizeof *q->bp);
    q->names = calloc((size_t)(nl > 0 ? nl : 1), sizeof *q->names);
    q->fmt_max = calloc((size_t)(q->n > 0 ? q->n : 1), sizeof *q->fmt_max);
    q->ready = calloc((size_t)(nl > 0 ? nl : 1), sizeof *q->ready);
    q->fp8_index = calloc((size_t)(nl > 0 ? nl : 1), sizeof *q->fp8_index);
    q->fp8_linear = calloc((size_t)(nf > 0 ? nf : 1), sizeof *q->fp8_linear);
    if (st == VLA_OK && (!q->bp || !q->names || !q->fmt_max || !q->ready || !q->fp8_index || !q->fp8_linear))
        st = vla_error(VLA_ERR_NOMEM, "precision: out of memory");
    p->prec = q; /* from here vla_policy_precision_free undoes everything */
    if (st == VLA_OK && q->n > 0) {
        int64_t floats = (1 + q->recipe.amax_history_len) * q->n;
        if (!(q->buf = p->tops->alloc((size_t)floats * sizeof(float))))
            st = vla_error(VLA_ERR_NOMEM, "precision: cannot allocate FP8 state for %lld tensors × %lld steps",
                           (long long)q->n, (long long)q->recipe.amax_history_len);
        else {
            q->scale = q->buf, q->history = q->buf + q->n;
            p->tops->fill(q->scale, 1.0f, q->n);
            p->tops->fill(q->history, 0.0f, floats - q->n);
        }
    }
    if (st == VLA_OK) st = walk(p, q, true, &nl, &nf);
    if (st != VLA_OK) vla_policy_precision_free(p);
    else keep_copies(p);
    return st;
}

/* VLA_WEIGHT_COPIES=0 turns the copies off (every GEMM casts its weight, as
 * before): they cost 2 bytes per lowered weight in bf16 on cuda (one layout
 * serves the forward and the dgrad), ~6 GB for the full π0.5, which a run
 * at the edge of memory may need; FP8 keeps 1 byte per weight per layout. */
static bool weight_copies_wanted(void) {
    static atomic_int wanted = -1;
    return vla_env_switch(&wanted, "VLA_WEIGHT_COPIES");
}

vla_status vla_inference_precision(const char *want, const vla_ops *ops, vla_precision *out) {
    const char *src = "--precision";
    if (!want || !strcmp(want, "auto")) {
        const char *env = getenv("VLA_PRECISION");
        if (env && *env && strcmp(env, "auto") != 0) want = env, src = "VLA_PRECISION";
    }
    if (!want || !strcmp(want, "auto")) {
        *out = ops->device == VLA_DEVICE_CPU ? VLA_PREC_FP32 : VLA_PREC_BF16;
        return VLA_OK;
    }
    if (vla_precision_parse(want, out) != VLA_OK || *out == VLA_PREC_FP8)
        return vla_error(VLA_ERR_INVALID_ARG, "%s=%s: give auto, fp32 or bf16 (FP8's scales are calibrated in "
                         "training; inference does not run FP8)", src, want);
    return VLA_OK;
}

void vla_policy_weights_hold(vla_policy *p) {
    if (!p->prec || !weight_copies_wanted()) return;
    vla_weight_scope *s = &p->prec->scope;
    if (s->depth++ > 0) return; /* inside a hold: its copies stay good */
    s->gen++;                   /* copies of an earlier hold are stale (frozen bf16 ones excepted) */
    s->holding = true;
    /* which weights are frozen now (nn/linear.h: their bf16 copies outlive holds) */
    for (int64_t l = 0; l < p->prec->n_linears; l++) {
        vla_weight_ready *r = &p->prec->ready[l];
        r->frozen = r->param >= 0 && !p->params[r->param].grad;
    }
}

void vla_policy_weights_release(vla_policy *p) {
    if (!p->prec || p->prec->scope.depth == 0) return;
    if (--p->prec->scope.depth == 0) p->prec->scope.holding = false;
}

void vla_policy_weights_changed(vla_policy *p) {
    if (!p->prec) return;
    p->prec->scope.gen++;        /* every copy made so far is stale; the hold (if any) goes on */
    p->prec->scope.frozen_gen++; /* frozen weights' copies too */
}

void vla_policy_trainable_changed(vla_policy *p) {
    if (p->prec) p->prec->scope.gen++; /* the optimizer wrote trainable weights only: frozen copies stay */
}

/* The stale copies' casts, the body of the refresh's captured region. */
typedef struct {
    const vla_policy *p;
    const int64_t *stale;
    int64_t n;
} refresh_casts;

static vla_status refresh_body(void *v) {
    const refresh_casts *c = v;
    for (int64_t i = 0; i < c->n; i++) vla_weight_ready_recast(c->p->tops, &c->p->prec->ready[c->stale[i]]);
    return VLA_OK;
}

/* One captured region (tensor/ops.h, run_captured) for every cast: after an update the same copies are
 * stale step after step (the trainable ones), so its key repeats and a device launches one graph where
 * it would launch a cast per trainable linear. The key holds what the casts read and write: which
 * linears, each one's weight, shape, layout and copy, and the policy's region key (its instance, the
 * copies' addresses and currency). */
void vla_policy_weights_refresh(vla_policy *p) {
    vla_policy_precision *q = p->prec;
    if (!q || q->mode != VLA_PREC_BF16 || !q->scope.holding) return;
    int64_t *stale = malloc((size_t)(q->n_linears > 0 ? q->n_linears : 1) * sizeof *stale), n = 0;
    if (!stale) { /* no memory for the list: one linear at a time, plainly */
        for (int64_t l = 0; l < q->n_linears; l++)
            if (vla_weight_ready_stale(&q->ready[l]))
                vla_weight_ready_recast(p->tops, &q->ready[l]), vla_weight_ready_mark_recast(&q->ready[l]);
        return;
    }
    for (int64_t l = 0; l < q->n_linears; l++)
        if (vla_weight_ready_stale(&q->ready[l])) stale[n++] = l;
    refresh_casts c = {p, stale, n};
    if (n > 0) {
        vla_key key = {0};
        if (vla_train_regions_on()) {
            vla_key_add(&key, "refresh1", 8);
            vla_policy_region_key_add(p, &key);
            for (int64_t i = 0; i < n; i++) {
                const vla_weight_ready *r = &q->ready[stale[i]];
                const struct {
                    int64_t linear, mode, trans_b, n, k, ldw;
                    const float *w;
                    const void *copy;
                } part = {stale[i], r->cast.g.mode, r->cast.trans_b, r->cast.n, r->cast.k, r->cast.ldw, r->cast.w, r->fwd};
                vla_key_add(&key, &part, sizeof part);
            }
        } else
            key.failed = true;
        /* the body cannot fail, and a region a device cannot record runs it plainly: the casts are issued */
        vla_status st = key.failed ? refresh_body(&c) : vla_ops_run_captured(p->tops, key.b, key.n, refresh_body, &c);
        (void)st;
        vla_key_release(&key);
    }
    for (int64_t i = 0; i < n; i++) vla_weight_ready_mark_recast(&q->ready[stale[i]]);
    free(stale);
}

void vla_policy_region_key_add(const vla_policy *p, vla_key *key) {
    vla_key_add(key, &p->serial, sizeof p->serial);
    const vla_policy_precision *q = p->prec;
    if (!q) return;
    const struct {
        uint64_t serial, holding, mode;
    } head = {q->serial, q->scope.holding, (uint64_t)q->mode};
    vla_key_add(key, &head, sizeof head);
    bool bf16 = q->mode == VLA_PREC_BF16;
    for (int64_t l = 0; l < q->n_linears; l++) {
        const vla_weight_ready *r = &q->ready[l];
        const struct {
            const void *fwd, *dgrad;
            uint64_t fresh;
        } c = {r->fwd, r->dgrad,
               (uint64_t)vla_weight_ready_fresh(r, false, bf16) | (uint64_t)vla_weight_ready_fresh(r, true, bf16) << 1};
        vla_key_add(key, &c, sizeof c);
    }
    const vla_cast_buf *b[] = {&q->casts.fwd, &q->casts.wgrad, &q->casts.dy, &q->casts.dy_t, &q->casts.out};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        const struct {
            const void *buf;
            uint64_t bytes;
        } c = {b[i]->buf, b[i]->bytes};
        vla_key_add(key, &c, sizeof c);
    }
}

int64_t vla_policy_weight_casts(const vla_policy *p) { return p->prec ? p->prec->scope.casts : 0; }

const char *vla_policy_fp8_tensor_linear(const vla_policy *p, int64_t t) {
    const vla_policy_precision *q = p->prec;
    return q && t >= 0 && t < q->n ? q->names[q->fp8_linear[t / 3]] : "?";
}

float *vla_policy_fp8_amax(vla_policy *p, int64_t *n) {
    bool fp8 = p->prec && p->prec->mode == VLA_PREC_FP8;
    *n = fp8 ? p->prec->n : 0;
    return fp8 ? p->prec->history : NULL;
}

void vla_policy_fp8_update(vla_policy *p) {
    vla_policy_precision *q = p->prec;
    if (!q || q->mode != VLA_PREC_FP8 || q->n == 0) return;
    p->tops->fp8_scale_update(q->history, q->scale, q->n, q->recipe.amax_history_len, q->fmt_max, q->recipe.margin,
                              q->recipe.most_recent);
}

void vla_policy_fp8_discard_step(vla_policy *p) {
    vla_policy_precision *q = p->prec;
    if (q && q->mode == VLA_PREC_FP8 && q->n > 0) p->tops->fill(q->history, 0.0f, q->n);
}

float *vla_policy_fp8_state_to_host(const vla_policy *p, int64_t *count) {
    const vla_policy_precision *q = p->prec;
    *count = 0;
    if (!q || q->mode != VLA_PREC_FP8 || q->n == 0) return NULL;
    int64_t n = (1 + q->recipe.amax_history_len) * q->n;
    float *h = malloc((size_t)n * sizeof *h);
    if (h) p->tops->to_host(h, q->buf, (size_t)n * sizeof *h), *count = n;
    return h;
}

void vla_policy_fp8_state_from_host(vla_policy *p, const float *host) {
    vla_policy_precision *q = p->prec;
    if (q && q->mode == VLA_PREC_FP8 && q->n > 0)
        p->tops->to_device(q->buf, host, (size_t)((1 + q->recipe.amax_history_len) * q->n) * sizeof *host);
}

/* ---- checkpoint form ---------------------------------------------------------- */

static void recipe_meta(const vla_fp8_recipe *r, char *buf, size_t cap) {
    snprintf(buf, cap, "{\"format\": \"HYBRID\", \"roles\": [\"input:E4M3\", \"weight:E4M3\", \"grad_output:E5M2\"], "
                       "\"amax_history_len\": %lld, \"margin\": %.9g, \"amax_compute_algo\": \"%s\", \"min_dim\": %lld}",
             (long long)r->amax_history_len, r->margin, r->most_recent ? "most_recent" : "max", (long long)r->min_dim);
}

vla_status vla_policy_fp8_export(const vla_policy *p, vla_safetensors_writer *sw, float **keep) {
    *keep = NULL;
    const vla_policy_precision *q = p->prec;
    if (!q || q->mode != VLA_PREC_FP8) return vla_error(VLA_ERR_INVALID_ARG, "precision: no FP8 state to export");
    int64_t count, L = q->recipe.amax_history_len, n = q->n;
    float *state = vla_policy_fp8_state_to_host(p, &count);
    /* per linear: 3 scales, then its [L, 3] history */
    float *out = state ? malloc((size_t)(n * (1 + L)) * sizeof *out) : NULL;
    if (!out) {
        free(state);
        return vla_error(VLA_ERR_NOMEM, "precision: out of memory exporting the FP8 state");
    }
    const float *scale = state, *hist = state + n;
    for (int64_t f = 0; f < q->n_fp8; f++) {
        float *o = out + f * 3 * (1 + L);
        for (int r = 0; r < 3; r++) o[r] = scale[3 * f + r];
        for (int64_t j = 0; j < L; j++)
            for (int r = 0; r < 3; r++) o[3 + j * 3 + r] = hist[j * n + 3 * f + r];
    }
    free(state);
    *keep = out;
    char name[160], meta[512];
    vla_status st = VLA_OK;
    for (int64_t f = 0; f < q->n_fp8 && st == VLA_OK; f++) {
        float *o = out + f * 3 * (1 + L);
        int64_t s1[1] = {3}, s2[2] = {L, 3};
        snprintf(name, sizeof name, "%s.fp8_scale", q->names[q->fp8_linear[f]]);
        st = vla_safetensors_writer_add(sw, name, VLA_F32, 1, s1, o);
        snprintf(name, sizeof name, "%s.fp8_amax_history", q->names[q->fp8_linear[f]]);
        if (st == VLA_OK) st = vla_safetensors_writer_add(sw, name, VLA_F32, 2, s2, o + 3);
    }
    recipe_meta(&q->recipe, meta, sizeof meta);
    if (st == VLA_OK) st = vla_safetensors_writer_set_meta(sw, "fp8_recipe", meta);
    return st;
}

static vla_status import_from(vla_policy *p, const vla_safetensors *f, const char *path, float *state) {
    const vla_policy_precision *q = p->prec;
    int64_t L = q->recipe.amax_history_len, n = q->n;
    float *scale = state, *hist = state + n;
    char name[160];
    float three[3];
    float *rows = NULL;
    int64_t cap_rows = 0;
    vla_status st = VLA_OK;
    if (vla_safetensors_count(f) != (size_t)(2 * q->n_fp8))
        return vla_error(VLA_ERR_FORMAT, "%s: %zu tensors, this policy's FP8 state has %lld (2 per FP8 linear; "
                         "--fp8.min_dim=%lld chooses them): another model's, or another min_dim's", path,
                         vla_safetensors_count(f), (long long)(2 * q->n_fp8), (long long)q->recipe.min_dim);
    for (int64_t fi = 0; fi < q->n_fp8 && st == VLA_OK; fi++) {
        const vla_safetensors_tensor *t;
        snprintf(name, sizeof name, "%s.fp8_scale", q->names[q->fp8_linear[fi]]);
        if ((st = vla_safetensors_get(f, name, &t)) != VLA_OK) break;
        if (t->ndim != 1 || t->shape[0] != 3 || t->dtype != VLA_F32) {
            st = vla_error(VLA_ERR_FORMAT, "%s: tensor %s: want F32 [3]", path, name);
            break;
        }
        if ((st = vla_safetensors_tensor_to_f32(f, t, three, 3)) != VLA_OK) break;
        for (int r = 0; r < 3; r++) {
            if (!(isfinite(three[r]) && three[r] > 0)) {
                st = vla_error(VLA_ERR_FORMAT, "%s: tensor %s: scale %d is %g (scales are finite and positive)", path,
                               name, r, three[r]);
                break;
            }
            scale[3 * fi + r] = three[r];
        }
        snprintf(name, sizeof name, "%s.fp8_amax_history", q->names[q->fp8_linear[fi]]);
        if (st != VLA_OK || (st = vla_safetensors_get(f, name, &t)) != VLA_OK) break;
        if (t->ndim != 2 || t->shape[1] != 3 || t->shape[0] < 1 || t->dtype != VLA_F32) {
            st = vla_error(VLA_ERR_FORMAT, "%s: tensor %s: want F32 [history length, 3]", path, name);
            break;
        }
        int64_t saved = t->shape[0];
        if (saved > cap_rows) {
            float *nr = realloc(rows, (size_t)(saved * 3) * sizeof *rows);
            if (!nr) {
                st = vla_error(VLA_ERR_NOMEM, "precision: out of memory reading %s", path);
                break;
            }
            rows = nr, cap_rows = saved;
        }
        if ((st = vla_safetensors_tensor_to_f32(f, t, rows, (size_t)(saved * 3))) != VLA_OK) break;
        for (int64_t j = 0; j < L; j++) /* newest first: keep the newest min(saved, L) rows */
            for (int r = 0; r < 3; r++) hist[j * n + 3 * fi + r] = j < saved ? rows[j * 3 + r] : 0.0f;
    }
    free(rows);
    return st;
}

vla_status vla_policy_fp8_import_from(vla_policy *p, const vla_safetensors *f, const char *what) {
    const vla_policy_precision *q = p->prec;
    if (!q || q->mode != VLA_PREC_FP8) return vla_error(VLA_ERR_INVALID_ARG, "precision: not in FP8 mode");
    int64_t count = (1 + q->recipe.amax_history_len) * q->n;
    float *state = malloc((size_t)(count > 0 ? count : 1) * sizeof *state);
    vla_status st = state ? import_from(p, f, what, state) : vla_error(VLA_ERR_NOMEM, "precision: out of memory");
    if (st == VLA_OK) vla_policy_fp8_state_from_host(p, state);
    free(state);
    return st;
}

vla_status vla_policy_fp8_import(vla_policy *p, const char *path) {
    vla_safetensors f;
    VLA_TRY(vla_safetensors_open(path, &f));
    vla_status st = vla_policy_fp8_import_from(p, &f, path);
    vla_safetensors_close(&f);
    return st;
}

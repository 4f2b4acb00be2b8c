/* test_policy_precision.c — mixed precision bound into whole policies
 * (policy/precision.h), pi05-nano and groot-nano, on the test backend:
 *   - every transformer block's seven large linears (q, k, v, o, up, gate,
 *     down; those the block has) are bound, named after their weights;
 *   - bf16 changes the loss and gradients, by bf16's rounding and no more;
 *   - FP8: one loss + backward records every role's amax exactly where
 *     the GEMM ran — the input's and the weight's for every linear the
 *     forward reached (equal to max |W| read from the weights themselves),
 *     the output gradient's wherever a weight gradient came out non-zero —
 *     and the update then sets each scale to FP8 max / amax; a second step
 *     on the updated scales lands closer to f32 than the first on scale 1;
 *   - back to fp32 the loss and gradients are the f32 ones bit for bit;
 *   - the checkpoint form round-trips, and damaged files are refused with
 *     the file and tensor named;
 *   - every attention call (forward, backward, the KV-cached sampling
 *     forward) is asked for bf16 operands when the policy trains in bf16
 *     or FP8, and for f32 otherwise (the cpu backend computes f32 anyway;
 *     the cuda backend picks its kernels by it). */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "io/safetensors.h"
#include "policy/precision.h"
#include "policy/policy.h"

static double step(vla_policy *p, const vla_batch *b, float **grads) {
    vla_loss_info info;
    vla_policy_zero_grad(p);
    if (vla_policy_loss(p, b, true, &info) != VLA_OK) fail_msg("loss: %s", vla_error_message());
    if (vla_policy_backward(p) != VLA_OK) fail_msg("backward: %s", vla_error_message());
    *grads = test_grads_get(p);
    return info.loss;
}

static double rel_l2(const float *a, const float *b, int64_t n) {
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), s += (double)b[i] * b[i];
    return sqrt(d / (s > 0 ? s : 1));
}

/* max |w| of parameter k, read from the host copy of the weights */
static float param_amax(const vla_policy *p, const float *w, int64_t k) {
    const float *x = w + (p->params[k].data - p->weights);
    float m = 0;
    for (int64_t i = 0; i < p->params[k].spec->numel; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

static void check_policy(const char *preset) {
    vla_policy *p = test_policy_make(preset, true, 0.02);
    test_policy_batch t;
    test_policy_batch_make(p, 3, &t);
    float *g32, *g16, *g8a, *g8b, *gback;
    double l32 = step(p, &t.b, &g32);

    /* bf16 */
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_BF16, NULL), VLA_OK);
    assert_int_equal(vla_policy_precision_mode(p), VLA_PREC_BF16);
    double l16 = step(p, &t.b, &g16);
    double d16 = fabs(l16 - l32) / l32, gd16 = rel_l2(g16, g32, p->n_grad_floats);
    int64_t n_amax;
    assert_null(vla_policy_fp8_amax(p, &n_amax));
    assert_int_equal(n_amax, 0);

    /* fp8, every linear's roles */
    vla_fp8_recipe r;
    vla_fp8_recipe_default(&r);
    r.amax_history_len = 4;
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP8, &r), VLA_OK);
    const vla_policy_precision *q = p->prec;
    int64_t blocks = 0, expect_linears = 0;
    for (int s = 0; s < p->blocks.n; s++)
        for (int64_t b = 0; b < p->blocks.count[s]; b++, blocks++) {
            assert_ptr_equal(p->blocks.arr[s][b].prec, &q->bp[blocks]);
            for (int i = 0; i < VLA_BLOCK_N_LIN; i++) expect_linears += vla_block_linear_weight(&p->blocks.arr[s][b], i) != NULL;
        }
    assert_true(blocks >= 4);
    assert_int_equal(q->n_linears, expect_linears);
    assert_int_equal(q->n_fp8, expect_linears); /* min_dim 0: every lowered linear, in binding order */
    assert_int_equal(q->n, 3 * expect_linears);
    for (int64_t l = 0; l < q->n_linears; l++) assert_int_equal(q->fp8_index[l], l);
    double l8a = step(p, &t.b, &g8a);
    float *amax = vla_policy_fp8_amax(p, &n_amax);
    assert_int_equal(n_amax, q->n);
    float *a = test_dev_dup(p->tops, amax, n_amax), *w = test_weights_get(p);
    int64_t reached = 0, with_dy = 0;
    for (int64_t l = 0; l < q->n_linears; l++) {
        char wname[160];
        snprintf(wname, sizeof wname, "%s.weight", q->names[l]);
        int64_t k = vla_param_find(&p->specs, wname);
        assert_true(k >= 0); /* named after its weight */
        float ax = a[3 * l], aw = a[3 * l + 1], ady = a[3 * l + 2];
        /* the forward GEMM reads x and W together: both recorded or neither */
        assert_true((ax > 0) == (aw > 0));
        if (aw > 0) {
            reached++;
            if (aw != param_amax(p, w, k)) fail_msg("%s: weight amax %g, max |W| %g", q->names[l], aw, param_amax(p, w, k));
        }
        /* a weight with a gradient (in f32: FP8 on scale 1 may flush a small one to 0) is reached by
         * wgrad, which reads dy and x; amax is taken before quantisation */
        const float *gw = g32 + (p->params[k].grad - p->grads);
        double gn = 0;
        for (int64_t i = 0; i < p->params[k].spec->numel; i++) gn += fabs(gw[i]);
        if (gn > 0) {
            if (!(ady > 0 && ax > 0)) fail_msg("%s: gradient without recorded dy / x amax", q->names[l]);
            with_dy++;
        }
        assert_true(isfinite(ax) && isfinite(aw) && isfinite(ady));
    }
    printf("%s: %lld blocks, %lld linears bound; %lld reached by the forward, %lld with gradients\n", preset,
           (long long)blocks, (long long)q->n_linears, (long long)reached, (long long)with_dy);
    assert_true(reached >= q->n_linears * 8 / 10);
    assert_true(with_dy >= reached * 8 / 10);

    /* the update: scale = fmt max / amax where recorded, 1 elsewhere */
    vla_policy_fp8_update(p);
    float *sc = test_dev_dup(p->tops, q->scale, q->n);
    float *hist = test_dev_dup(p->tops, q->history, r.amax_history_len * q->n);
    for (int64_t i = 0; i < q->n; i++) {
        float fmax = i % 3 == 2 ? 57344.0f : 448.0f, want = a[i] > 0 ? fmax / a[i] : 1.0f;
        if (sc[i] != want) fail_msg("tensor %lld: scale %.9g, want %.9g", (long long)i, sc[i], want);
        assert_true(hist[i] == 0.0f && hist[q->n + i] == a[i]); /* row 0 restarted, row 1 this step's */
    }
    double l8b = step(p, &t.b, &g8b);
    double d8a = fabs(l8a - l32) / l32, d8b = fabs(l8b - l32) / l32;
    double gd8a = rel_l2(g8a, g32, p->n_grad_floats), gd8b = rel_l2(g8b, g32, p->n_grad_floats);
    printf("%s: loss f32 %.6f, bf16 %.6f (rel %.2e, grads %.2e), fp8 scale 1 %.6f (rel %.2e, grads %.2e), "
           "fp8 scaled %.6f (rel %.2e, grads %.2e)\n", preset, l32, l16, d16, gd16, l8a, d8a, gd8a, l8b, d8b, gd8b);
    assert_true(d16 > 0 && d16 < 1e-2 && gd16 > 0 && gd16 < 5e-2); /* 8 significant bits: ~0.4% per operand */
    assert_true(d8b < 5e-2 && gd8b < 0.3);                          /* 4 bits (E4M3) and 3 (E5M2), scaled */
    assert_true(gd8b < gd8a);                                       /* scaling helps */

    /* back to f32: bit for bit */
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP32, NULL), VLA_OK);
    assert_null(p->prec);
    double lback = step(p, &t.b, &gback);
    assert_true(lback == l32);
    assert_memory_equal(gback, g32, sizeof(float) * p->n_grad_floats);

    free(g32), free(g16), free(g8a), free(g8b), free(gback), free(a), free(w), free(sc), free(hist);
    test_policy_batch_free(&t);
    vla_policy_free(p);
}

static void test_pi05(void **state) {
    (void)state;
    check_policy("pi05-nano");
}

static void test_groot(void **state) {
    (void)state;
    check_policy("groot-nano");
}

/* p's FP8 state exported to a file of the test's temporary directory; its path */
static const char *export_state(const vla_policy *p, const char *file) {
    const char *path = test_tmp_path(file);
    vla_safetensors_writer *sw;
    float *keep;
    assert_int_equal(vla_safetensors_writer_new(&sw), VLA_OK);
    assert_int_equal(vla_policy_fp8_export(p, sw, &keep), VLA_OK);
    assert_int_equal(vla_safetensors_writer_write(sw, path), VLA_OK);
    vla_safetensors_writer_free(sw), free(keep);
    return path;
}

/* Export → import gives the state back; another history length keeps the
 * newest rows; damaged files are refused naming file and tensor. */
static void test_checkpoint_form(void **state) {
    (void)state;
    vla_policy *p = test_policy_make("pi05-nano", false, 0.02);
    vla_fp8_recipe r;
    vla_fp8_recipe_default(&r);
    r.amax_history_len = 3;
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP8, &r), VLA_OK);
    int64_t count, n = p->prec->n;
    float *s0 = vla_policy_fp8_state_to_host(p, &count);
    assert_int_equal(count, 4 * n);
    for (int64_t i = 0; i < count; i++) s0[i] = i < n ? 1.0f + (float)i : (float)(i % 97) * 0.25f;
    vla_policy_fp8_state_from_host(p, s0);
    const char *path = export_state(p, "fp8.safetensors");
    /* the file by its own reader: linear 0's scales and newest row */
    vla_safetensors f;
    assert_int_equal(vla_safetensors_open(path, &f), VLA_OK);
    char name[200];
    snprintf(name, sizeof name, "%s.fp8_amax_history", p->prec->names[0]);
    float h[9];
    assert_int_equal(vla_safetensors_load_f32(&f, name, h, 9), VLA_OK);
    for (int j = 0; j < 3; j++)
        for (int rr = 0; rr < 3; rr++) assert_true(h[j * 3 + rr] == s0[n + j * n + rr]);
    assert_non_null(strstr(vla_safetensors_meta_get(&f, "fp8_recipe"), "\"amax_history_len\": 3"));
    vla_safetensors_close(&f);
    /* round trip */
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP8, &r), VLA_OK); /* fresh: scale 1, history 0 */
    assert_int_equal(vla_policy_fp8_import(p, path), VLA_OK);
    float *s1 = vla_policy_fp8_state_to_host(p, &count);
    assert_memory_equal(s0, s1, sizeof(float) * count);
    free(s1);
    /* a longer history: the saved rows newest first, then zeros */
    r.amax_history_len = 5;
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP8, &r), VLA_OK);
    assert_int_equal(vla_policy_fp8_import(p, path), VLA_OK);
    s1 = vla_policy_fp8_state_to_host(p, &count);
    assert_int_equal(count, 6 * n);
    for (int64_t i = 0; i < count; i++) assert_true(s1[i] == (i < 4 * n ? s0[i] : 0.0f));
    free(s1);
    /* damaged: a scale of 0; another model's file */
    uint8_t *bytes;
    size_t nb;
    assert_int_equal(vla_read_file(path, (char **)&bytes, &nb), VLA_OK);
    vla_safetensors g;
    assert_int_equal(vla_safetensors_parse(bytes, nb, path, &g), VLA_OK);
    snprintf(name, sizeof name, "%s.fp8_scale", p->prec->names[1]);
    const vla_safetensors_tensor *t;
    assert_int_equal(vla_safetensors_get(&g, name, &t), VLA_OK);
    size_t off = (size_t)((const uint8_t *)t->data - bytes);
    vla_safetensors_close(&g);
    memset(bytes + off, 0, 4);
    const char *bad = test_tmp_path("fp8_bad.safetensors");
    assert_int_equal(vla_write_file_atomic(bad, bytes, nb), VLA_OK);
    assert_int_not_equal(vla_policy_fp8_import(p, bad), VLA_OK);
    assert_non_null(strstr(vla_error_message(), bad));
    assert_non_null(strstr(vla_error_message(), name));
    free(bytes);
    vla_policy *other = test_policy_make("groot-nano", false, 0.02);
    assert_int_equal(vla_policy_set_precision(other, VLA_PREC_FP8, &r), VLA_OK);
    assert_int_not_equal(vla_policy_fp8_import(other, path), VLA_OK);
    printf("refused: %s\n", vla_error_message());
    assert_non_null(strstr(vla_error_message(), path));
    vla_policy_free(other);
    free(s0);
    vla_policy_free(p);
}

/* FP8 only where it pays (recipe.min_dim): a lowered linear with a weight
 * side under min_dim reads bf16 and has no FP8 tensors; with no linear
 * left in FP8 the run is bf16's to the bit; the checkpoint form holds the
 * FP8 linears only, and a state saved under another min_dim is refused. */
static void test_fp8_min_dim(void **state) {
    (void)state;
    vla_policy *p = test_policy_make("pi05-nano", true, 0.02);
    test_policy_batch t;
    test_policy_batch_make(p, 3, &t);
    vla_fp8_recipe r;
    vla_fp8_recipe_default(&r);
    r.amax_history_len = 2;
    r.min_dim = 32; /* pi05-nano: widths 32 (ViT, LM) and 16 (expert), k/v 16 wide (one KV head of 16) */
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP8, &r), VLA_OK);
    const vla_policy_precision *q = p->prec;
    int64_t l = 0, want_fp8 = 0;
    for (int s = 0; s < p->blocks.n; s++)
        for (int64_t b = 0; b < p->blocks.count[s]; b++)
            for (int i = 0; i < VLA_BLOCK_N_LIN; i++) {
                const vla_wg *wg = vla_block_linear_weight(&p->blocks.arr[s][b], i);
                if (!wg) continue;
                const vla_param_spec *sp = p->params[vla_policy_param_index(p, wg->w)].spec;
                bool big = sp->shape[0] >= 32 && sp->shape[1] >= 32;
                vla_precision mode = p->blocks.arr[s][b].prec->lin[i].mode;
                if (mode != (big ? VLA_PREC_FP8 : VLA_PREC_BF16))
                    fail_msg("%s [%lld × %lld]: mode %s", q->names[l], (long long)sp->shape[0],
                             (long long)sp->shape[1], vla_precision_name(mode));
                if ((q->fp8_index[l] >= 0) != big) fail_msg("%s: FP8 number %lld", q->names[l], (long long)q->fp8_index[l]);
                if (big) assert_int_equal(q->fp8_linear[q->fp8_index[l]], l);
                want_fp8 += big, l++;
            }
    assert_int_equal(l, q->n_linears);
    assert_int_equal(q->n_fp8, want_fp8);
    assert_true(want_fp8 > 0 && want_fp8 < q->n_linears); /* both kinds present */
    assert_int_equal(q->n, 3 * want_fp8);
    printf("pi05-nano, min_dim 32: %lld of %lld linears in FP8\n", (long long)want_fp8, (long long)q->n_linears);

    /* one step: every FP8 linear the forward reached recorded its weight's amax in its own slots */
    float *gmix, *g16, *gnone;
    double lmix = step(p, &t.b, &gmix);
    int64_t n_amax;
    float *a = test_dev_dup(p->tops, vla_policy_fp8_amax(p, &n_amax), q->n), *w = test_weights_get(p);
    assert_int_equal(n_amax, q->n);
    int64_t reached = 0;
    for (int64_t f = 0; f < q->n_fp8; f++) {
        char wname[160];
        snprintf(wname, sizeof wname, "%s.weight", q->names[q->fp8_linear[f]]);
        int64_t k = vla_param_find(&p->specs, wname);
        assert_true(k >= 0);
        assert_string_equal(vla_policy_fp8_tensor_linear(p, 3 * f + 2), q->names[q->fp8_linear[f]]);
        if (a[3 * f + 1] > 0) {
            reached++;
            if (a[3 * f + 1] != param_amax(p, w, k)) fail_msg("%s: weight amax %g", wname, a[3 * f + 1]);
        }
    }
    assert_true(reached >= q->n_fp8 * 8 / 10);

    /* the checkpoint form: the FP8 linears' tensors only */
    const char *path = export_state(p, "fp8_min_dim.safetensors");
    vla_safetensors f;
    assert_int_equal(vla_safetensors_open(path, &f), VLA_OK);
    assert_int_equal((int64_t)vla_safetensors_count(&f), 2 * q->n_fp8);
    assert_non_null(strstr(vla_safetensors_meta_get(&f, "fp8_recipe"), "\"min_dim\": 32"));
    const vla_safetensors_tensor *tt;
    char name[200];
    for (int64_t k = 0; k < q->n_linears; k++) {
        snprintf(name, sizeof name, "%s.fp8_scale", q->names[k]);
        bool there = vla_safetensors_get(&f, name, &tt) == VLA_OK;
        if (there != (q->fp8_index[k] >= 0)) fail_msg("%s: in the file %d, FP8 %d", name, there, q->fp8_index[k] >= 0);
    }
    vla_safetensors_close(&f);
    assert_int_equal(vla_policy_fp8_import(p, path), VLA_OK);
    vla_fp8_recipe all = r;
    all.min_dim = 0;
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP8, &all), VLA_OK);
    assert_int_not_equal(vla_policy_fp8_import(p, path), VLA_OK);
    printf("refused: %s\n", vla_error_message());
    assert_non_null(strstr(vla_error_message(), "min_dim"));

    /* no linear wide enough: an FP8 run is a bf16 run, bit for bit, with no FP8 state */
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_BF16, NULL), VLA_OK);
    double l16 = step(p, &t.b, &g16);
    vla_fp8_recipe none = r;
    none.min_dim = 1 << 20;
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_FP8, &none), VLA_OK);
    assert_int_equal(p->prec->n_fp8, 0);
    assert_int_equal(p->prec->n, 0);
    double lnone = step(p, &t.b, &gnone);
    assert_true(lnone == l16);
    assert_memory_equal(gnone, g16, sizeof(float) * p->n_grad_floats);
    vla_policy_fp8_update(p); /* nothing to update: no state, no crash */
    assert_true(lmix != l16); /* the mix rounds its wide linears to FP8, not bf16 */

    free(gmix), free(g16), free(gnone), free(a), free(w);
    test_policy_batch_free(&t);
    vla_policy_free(p);
}

/* The cpu table with the attention slots wrapped to count the precision
 * each call asks for. */
static vla_ops rec_ops;
static int attn_calls[3][3]; /* [slot: forward, backward, cached][precision] */
static vla_status rec_fwd(const vla_attn_config *c, float *o, float *lse, const float *q, const float *k,
                          const float *v, const vla_attn_seqs *qs, const vla_attn_seqs *ks, vla_attn_stats *st,
                          void *ready) {
    attn_calls[0][c->precision]++;
    return test_cpu_backend()->attention_forward(c, o, lse, q, k, v, qs, ks, st, ready);
}
static vla_status rec_bwd(const vla_attn_config *c, float *dq, float *dk, float *dv, const float *dout,
                          const float *q, const float *k, const float *v, const float *o, const float *lse,
                          const vla_attn_seqs *qs, const vla_attn_seqs *ks, vla_attn_stats *st) {
    attn_calls[1][c->precision]++;
    return test_cpu_backend()->attention_backward(c, dq, dk, dv, dout, q, k, v, o, lse, qs, ks, st);
}
static vla_status rec_cached(const vla_attn_config *c, float *o, float *lse, const float *q, const vla_attn_seqs *qs,
                             const float *kc, const float *vc, const vla_attn_seqs *cs, const float *kn,
                             const float *vn, const vla_attn_seqs *ns, vla_attn_stats *st) {
    attn_calls[2][c->precision]++;
    return test_cpu_backend()->attention_forward_cached(c, o, lse, q, qs, kc, vc, cs, kn, vn, ns, st);
}

static void check_attention_precision(const char *preset) {
    rec_ops = *test_cpu_backend();
    rec_ops.attention_forward = rec_fwd, rec_ops.attention_backward = rec_bwd;
    rec_ops.attention_forward_cached = rec_cached;
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load(preset, &c), VLA_OK);
    memset(c.frozen, 0, sizeof c.frozen);
    vla_policy *p = NULL;
    assert_int_equal(vla_policy_create(&c, &rec_ops, &p), VLA_OK);
    assert_int_equal(vla_policy_init_weights(p, 3), VLA_OK);
    test_policy_batch t;
    test_policy_batch_make(p, 2, &t);
    const vla_precision modes[] = {VLA_PREC_FP32, VLA_PREC_BF16, VLA_PREC_FP8, VLA_PREC_FP32};
    for (unsigned m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        memset(attn_calls, 0, sizeof attn_calls);
        assert_int_equal(vla_policy_set_precision(p, modes[m], NULL), VLA_OK);
        float *g;
        step(p, &t.b, &g);
        free(g);
        float *act = calloc((size_t)(c.action.horizon * c.action.action_dim), sizeof(float));
        const char *task[1] = {"pick up the cube"};
        vla_observation ob = {0};
        ob.n_samples = 1, ob.task = task, ob.images = t.images, ob.state = t.state, ob.seed = 1;
        assert_int_equal(vla_policy_sample_actions(p, &ob, act), VLA_OK);
        free(act);
        vla_precision want = modes[m] == VLA_PREC_FP32 ? VLA_PREC_FP32 : VLA_PREC_BF16;
        int total = 0;
        for (int slot = 0; slot < 3; slot++)
            for (int q = 0; q < 3; q++) {
                if (q != (int)want && attn_calls[slot][q])
                    fail_msg("%s in %s: %d attention calls (slot %d) asked for precision %d, not %d", preset,
                             vla_precision_name(modes[m]), attn_calls[slot][q], slot, q, (int)want);
                total += attn_calls[slot][q];
            }
        assert_true(attn_calls[0][want] > 0 && attn_calls[1][want] > 0); /* training reached forward and backward */
        assert_true(total > 0);
    }
    test_policy_batch_free(&t);
    vla_policy_free(p);
}

static void test_attention_precision(void **state) {
    (void)state;
    check_attention_precision("pi05-nano");
    check_attention_precision("groot-nano");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pi05),
        cmocka_unit_test(test_groot),
        cmocka_unit_test(test_checkpoint_form),
        cmocka_unit_test(test_fp8_min_dim),
        cmocka_unit_test(test_attention_precision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_nn_block.c — the configured transformer block (src/nn/block.c) in the
 * five forms the policies use (SigLIP ViT, Gemma LM, Qwen3 LM, π0.5's AdaRMS
 * expert, GR00T's cross-attending AdaLN DiT block): output and every
 * gradient against PyTorch float64 goldens (tools/gen_nn_goldens.py,
 * gen_block), central finite differences on the input, the context, the
 * condition and each weight, the two halves around a caller-run attention
 * equal to the whole block bit for bit, shared activations (no backward)
 * equal to per-call ones, and bad configs refused. */
#include "nn/attention.h"
#include "nn/block.h"
#include "nn/linear.h"
#include "tensor/cuda/gemm_plan.h"
#include "nn_test.h"
#include "tensor/ops.h"

#define RTOL 2e-4
#define ATOL 5e-5

enum { NSEG = 3, NTOK = 17, NCTX = 15, D = 16, DC = 12, DKV = 10, M = 24 };

typedef struct {
    const char *name;
    vla_block_norm n1, n2;
    int heads, kv_heads, head_dim;
    bool bias, qk_norm, cross;
    double rope;
    vla_act act;
    bool gated_mlp;
} block_case;

static const block_case CASES[] = {
    {"vit", VLA_BLOCK_NORM_LAYER, VLA_BLOCK_NORM_LAYER, 4, 4, 4, true, false, false, 0.0, VLA_ACT_GELU_TANH, false},
    {"gemma", VLA_BLOCK_NORM_RMS_1P, VLA_BLOCK_NORM_RMS_1P, 4, 1, 4, false, false, false, 10000.0, VLA_ACT_GELU_TANH,
     true},
    {"qwen3", VLA_BLOCK_NORM_RMS, VLA_BLOCK_NORM_RMS, 4, 2, 4, false, true, false, 1e6, VLA_ACT_SILU, true},
    {"adarms", VLA_BLOCK_NORM_ADARMS, VLA_BLOCK_NORM_ADARMS, 2, 1, 8, false, false, false, 10000.0, VLA_ACT_GELU_TANH,
     true},
    {"dit", VLA_BLOCK_NORM_ADALN, VLA_BLOCK_NORM_LAYER_PLAIN, 2, 2, 8, true, false, true, 0.0, VLA_ACT_GELU_TANH,
     false},
};

static vla_block_config config_of(const block_case *k) {
    vla_block_config c = {0};
    c.dim = D;
    c.norm1 = k->n1, c.norm2 = k->n2;
    c.norm_eps = 1e-6f;
    c.cond_dim = DC;
    c.attn = (vla_attn_config){.n_heads = k->heads, .n_kv_heads = k->kv_heads, .head_dim = k->head_dim};
    c.qkv_bias = c.o_bias = c.mlp_bias = k->bias;
    c.qk_norm = k->qk_norm;
    c.rope_theta = k->rope;
    c.cross = k->cross;
    c.kv_dim = DKV;
    c.mlp = (vla_mlp_config){.gated = k->gated_mlp, .act = k->act, .dim = D, .hidden = M};
    return c;
}

/* The golden's tensor, or NULL when the case has no such weight. */
static float *maybe(golden *g, const char *name) {
    for (int i = 0; i < g->count; i++)
        if (!strcmp(g->t[i].name, name)) return golden_f32(g, name, -1);
    return NULL;
}

/* Weights from the golden, with zeroed gradients of the same sizes. */
typedef struct {
    const char *name;
    vla_wg *wg;
    float *w, *grad, *want_grad;
    int64_t numel;
} weight_slot;

#define N_SLOTS 22
static int bind_weights(golden *g, vla_block_weights *w, weight_slot *slots) {
    struct {
        const char *name;
        vla_wg *wg;
    } names[N_SLOTS] = {
        {"norm1_w", &w->norm1_w}, {"norm1_b", &w->norm1_b}, {"q_w", &w->q_w},       {"q_b", &w->q_b},
        {"k_w", &w->k_w},         {"k_b", &w->k_b},         {"v_w", &w->v_w},       {"v_b", &w->v_b},
        {"o_w", &w->o_w},         {"o_b", &w->o_b},         {"q_norm", &w->q_norm}, {"k_norm", &w->k_norm},
        {"norm2_w", &w->norm2_w}, {"norm2_b", &w->norm2_b}, {"up_w", &w->up_w},     {"up_b", &w->up_b},
        {"gate_w", &w->gate_w},   {"gate_b", &w->gate_b},   {"down_w", &w->down_w}, {"down_b", &w->down_b},
    };
    memset(w, 0, sizeof *w);
    int n = 0;
    for (int i = 0; i < N_SLOTS && names[i].name; i++) {
        float *val = maybe(g, names[i].name);
        if (!val) continue;
        char dn[64];
        snprintf(dn, sizeof dn, "d_%s", names[i].name);
        golden_tensor *t = golden_get(g, names[i].name, -1);
        weight_slot *s = &slots[n++];
        s->name = names[i].name, s->wg = names[i].wg, s->w = val, s->numel = t->numel;
        s->grad = fzeros(t->numel);
        s->want_grad = golden_f32(g, dn, t->numel);
        names[i].wg->w = val, names[i].wg->g = s->grad;
    }
    return n;
}

typedef struct {
    const vla_ops *ops;
    vla_block_config c;
    vla_block_weights w;
    vla_block_io io;
    float *x, *out, *acts, *scratch, *dx, *dctx, *dcond, *dy;
    vla_block_acts a;
    vla_block_scratch s;
} fixture;

static double block_loss(void *p) {
    fixture *f = p;
    assert_int_equal(vla_block_forward(f->ops, &f->c, &f->w, &f->io, f->x, f->out, &f->a), VLA_OK);
    return dot_f32(f->out, f->dy, NTOK * D);
}

static void grads(fixture *f, weight_slot *slots, int n_slots) {
    for (int i = 0; i < n_slots; i++) memset(slots[i].grad, 0, (size_t)slots[i].numel * sizeof(float));
    memset(f->dcond, 0, NSEG * DC * sizeof(float));
    memset(f->dctx, 0, NCTX * DKV * sizeof(float));
    block_loss(f);
    memcpy(f->dx, f->dy, NTOK * D * sizeof(float));
    assert_int_equal(vla_block_backward(f->ops, &f->c, &f->w, &f->io, f->x, &f->a, &f->s, f->dx,
                                        f->c.cross ? f->dctx : NULL, f->dcond),
                     VLA_OK);
}

static void setup(fixture *f, golden *g, const block_case *k) {
    memset(f, 0, sizeof *f);
    f->ops = test_cpu_backend();
    f->c = config_of(k);
    assert_int_equal(vla_block_check(&f->c), VLA_OK);
    f->io.n = NTOK, f->io.n_seg = NSEG;
    f->io.cu = golden_i32(g, "cu", NSEG + 1);
    f->io.pos = golden_i32(g, "pos", NTOK);
    f->io.groups = golden_i32(g, "groups", NTOK);
    f->io.cond = golden_f32(g, "cond", NSEG * DC);
    if (k->cross) {
        f->io.n_ctx = NCTX, f->io.cu_ctx = golden_i32(g, "cu_ctx", NSEG + 1);
        f->io.ctx = golden_f32(g, "ctx", NCTX * DKV);
        f->io.groups = NULL;
    }
    f->x = golden_f32(g, "x", NTOK * D);
    f->dy = golden_f32(g, "dy", NTOK * D);
    f->out = fzeros(NTOK * D), f->dx = fzeros(NTOK * D), f->dctx = fzeros(NCTX * DKV), f->dcond = fzeros(NSEG * DC);
    f->acts = fzeros(vla_block_acts_floats(&f->c, NTOK, NCTX, NSEG));
    f->scratch = fzeros(vla_block_scratch_floats(&f->c, NTOK, NCTX, NSEG));
    vla_block_acts_carve(&f->c, NTOK, NCTX, NSEG, f->acts, &f->a);
    vla_block_scratch_carve(&f->c, NTOK, NCTX, NSEG, f->scratch, &f->s);
}

static void test_against_pytorch_and_fd(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const block_case *k = &CASES[i];
        char gname[64], what[128];
        snprintf(gname, sizeof gname, "block_%s", k->name);
        golden *g = golden_load(gname);
        fixture f;
        setup(&f, g, k);
        weight_slot slots[N_SLOTS];
        int ns = bind_weights(g, &f.w, slots);
        grads(&f, slots, ns);
        snprintf(what, sizeof what, "%s: output", k->name);
        check_close(what, f.out, golden_f32(g, "y", NTOK * D), NTOK * D, RTOL, ATOL);
        snprintf(what, sizeof what, "%s: dx", k->name);
        check_close(what, f.dx, golden_f32(g, "dx", NTOK * D), NTOK * D, RTOL, ATOL);
        snprintf(what, sizeof what, "%s: dcond", k->name);
        check_close(what, f.dcond, golden_f32(g, "dcond", NSEG * DC), NSEG * DC, RTOL, ATOL);
        snprintf(what, sizeof what, "%s: dctx", k->name);
        check_close(what, f.dctx, golden_f32(g, "dctx", NCTX * DKV), NCTX * DKV, RTOL, ATOL);
        for (int s = 0; s < ns; s++) {
            snprintf(what, sizeof what, "%s: d %s", k->name, slots[s].name);
            check_close(what, slots[s].grad, slots[s].want_grad, slots[s].numel, RTOL, ATOL);
        }
        /* finite differences: the input, the condition, the context and every weight */
        double scale = abs_dot(f.out, f.dy, NTOK * D);
        snprintf(what, sizeof what, "%s: FD x", k->name);
        fd_check(what, block_loss, &f, f.x, f.dx, NTOK * D, 100 + i, 3e-3, 1e-2, scale);
        if (f.c.norm1 == VLA_BLOCK_NORM_ADARMS || f.c.norm1 == VLA_BLOCK_NORM_ADALN) {
            snprintf(what, sizeof what, "%s: FD cond", k->name);
            fd_check(what, block_loss, &f, (float *)f.io.cond, f.dcond, NSEG * DC, 200 + i, 3e-3, 1e-2, scale);
        }
        if (k->cross) {
            snprintf(what, sizeof what, "%s: FD ctx", k->name);
            fd_check(what, block_loss, &f, (float *)f.io.ctx, f.dctx, NCTX * DKV, 300 + i, 3e-3, 1e-2, scale);
        }
        for (int s = 0; s < ns; s++) {
            snprintf(what, sizeof what, "%s: FD %s", k->name, slots[s].name);
            fd_check(what, block_loss, &f, slots[s].w, slots[s].grad, slots[s].numel, 400 + 10 * i + s, 3e-3, 1e-2,
                     scale);
        }
        golden_free(g);
    }
}

/* attn_in + the caller's attention + attn_out (and their backward halves)
 * give the whole block's results bit for bit — how π0.5 runs its two
 * weight streams through one attention. */
static void test_halves_equal_whole(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const block_case *k = &CASES[i];
        char gname[64];
        snprintf(gname, sizeof gname, "block_%s", k->name);
        golden *g = golden_load(gname);
        fixture f;
        setup(&f, g, k);
        weight_slot slots[N_SLOTS];
        int ns = bind_weights(g, &f.w, slots);
        grads(&f, slots, ns);
        float *out1 = fzeros(NTOK * D), *dx1 = fzeros(NTOK * D), *dcond1 = fzeros(NSEG * DC);
        memcpy(out1, f.out, sizeof(float) * NTOK * D), memcpy(dx1, f.dx, sizeof(float) * NTOK * D);
        memcpy(dcond1, f.dcond, sizeof(float) * NSEG * DC);
        float **g1 = nn_alloc(sizeof(float *) * N_SLOTS);
        for (int s = 0; s < ns; s++) {
            g1[s] = fzeros(slots[s].numel);
            memcpy(g1[s], slots[s].grad, sizeof(float) * slots[s].numel);
            memset(slots[s].grad, 0, sizeof(float) * slots[s].numel);
        }
        memset(f.dcond, 0, sizeof(float) * NSEG * DC);
        memset(f.dctx, 0, sizeof(float) * NCTX * DKV);
        /* the halves */
        vla_attn_seqs qs = {NSEG, f.io.cu, f.io.groups}, ks = qs;
        if (k->cross) ks = (vla_attn_seqs){NSEG, f.io.cu_ctx, NULL};
        float *out2 = fzeros(NTOK * D);
        assert_int_equal(vla_block_attn_in(ops, &f.c, &f.w, &f.io, f.x, &f.a), VLA_OK);
        assert_int_equal(vla_attention_forward(ops, &f.c.attn, f.a.att, f.a.lse, f.a.q, f.a.k, f.a.v, &qs, &ks, NULL),
                         VLA_OK);
        assert_int_equal(vla_block_attn_out(ops, &f.c, &f.w, &f.io, f.x, out2, &f.a), VLA_OK);
        assert_memory_equal(out1, out2, sizeof(float) * NTOK * D);
        memcpy(f.dx, f.dy, sizeof(float) * NTOK * D);
        assert_int_equal(vla_block_attn_out_backward(ops, &f.c, &f.w, &f.io, &f.a, &f.s, f.dx, f.dcond), VLA_OK);
        int64_t nk = k->cross ? NCTX : NTOK, Q = (int64_t)k->heads * k->head_dim, K = (int64_t)k->kv_heads * k->head_dim;
        memset(f.s.dq, 0, sizeof(float) * NTOK * Q);
        memset(f.s.dk, 0, sizeof(float) * nk * K);
        memset(f.s.dv, 0, sizeof(float) * nk * K);
        assert_int_equal(vla_attention_backward(ops, &f.c.attn, f.s.dq, f.s.dk, f.s.dv, f.s.datt, f.a.q, f.a.k, f.a.v,
                                                f.a.att, f.a.lse, &qs, &ks, NULL),
                         VLA_OK);
        assert_int_equal(vla_block_attn_in_backward(ops, &f.c, &f.w, &f.io, f.x, &f.a, &f.s, f.dx,
                                                    k->cross ? f.dctx : NULL, f.dcond),
                         VLA_OK);
        assert_memory_equal(dx1, f.dx, sizeof(float) * NTOK * D);
        assert_memory_equal(dcond1, f.dcond, sizeof(float) * NSEG * DC);
        for (int s = 0; s < ns; s++) assert_memory_equal(g1[s], slots[s].grad, sizeof(float) * slots[s].numel);
        golden_free(g);
    }
}

/* Cross-attention with the context's K/V computed once (sampling) gives the same output. */
static void test_cached_context(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load("block_dit");
    fixture f;
    setup(&f, g, &CASES[4]);
    weight_slot slots[N_SLOTS];
    bind_weights(g, &f.w, slots);
    block_loss(&f);
    float *want = fzeros(NTOK * D), *kc = fzeros(NCTX * D), *vc = fzeros(NCTX * D);
    memcpy(want, f.out, sizeof(float) * NTOK * D);
    vla_linear_forward(ops, kc, f.io.ctx, f.w.k_w.w, f.w.k_b.w, NCTX, DKV, D);
    vla_linear_forward(ops, vc, f.io.ctx, f.w.v_w.w, f.w.v_b.w, NCTX, DKV, D);
    f.io.k_cached = kc, f.io.v_cached = vc;
    memset(f.acts, 0, sizeof(float) * vla_block_acts_floats(&f.c, NTOK, NCTX, NSEG));
    block_loss(&f);
    assert_memory_equal(want, f.out, sizeof(float) * NTOK * D);
    /* and no backward through a cache */
    assert_int_equal(vla_block_backward(ops, &f.c, &f.w, &f.io, f.x, &f.a, &f.s, f.dx, f.dctx, f.dcond),
                     VLA_ERR_INVALID_ARG);
    golden_free(g);
}

/* Kept copies (nn/linear.h, block.h copies): at π0.5's Gemma shapes, with cuda's copy sizes
 * (vla_q_ready_bytes, which its ready_bytes returns), h1, h2 and the GeGLU's hidden take their bf16
 * copies' bytes in the size table instead of f32's — about half — and nothing else moves. (That the
 * copies give the f32 path's bits is test_backends': checked, which keeps copies, against cpu.) */
static void test_kept_copies_size(void **state) {
    (void)state;
    vla_ops sizing = *test_cpu_backend();
    sizing.ready_bytes = vla_q_ready_bytes;
    vla_block_config c = {0};
    c.dim = 2048, c.norm1 = c.norm2 = VLA_BLOCK_NORM_RMS_1P, c.norm_eps = 1e-6f;
    c.attn = (vla_attn_config){.n_heads = 8, .n_kv_heads = 1, .head_dim = 256};
    c.rope_theta = 10000.0, c.external_attention = true;
    c.mlp = (vla_mlp_config){.gated = true, .act = VLA_ACT_GELU_TANH, .dim = 2048, .hidden = 16384};
    const int64_t n = 813, Dm = 2048, Hm = 16384;
    int64_t f32 = vla_block_acts_floats(&c, n, 0, 4);
    vla_block_keep_copies(&c, &sizing);
    int64_t kept = vla_block_acts_floats(&c, n, 0, 4);
    int64_t want = f32 - 2 * (n * Dm - vla_linear_kept_floats(&sizing, n, Dm)) - (n * Hm - vla_linear_kept_floats(&sizing, n, Hm));
    print_message("gemma block, %lld rows: %lld floats kept f32, %lld keeping copies (%.1f%% less)\n", (long long)n,
                  (long long)f32, (long long)kept, 100.0 * (double)(f32 - kept) / (double)f32);
    assert_true(llabs(kept - want) <= 16); /* the hidden's copy starts 64-byte aligned */
    /* bf16: 2 bytes an element (ready_bytes sizes for either layout: up to 7 rows' padding more) and the 1/s slot */
    assert_true(vla_linear_kept_floats(&sizing, n, Dm) <= (n + 7) * Dm / 2 + 64 + 16);
    /* a plain (GELU) MLP — GR00T's DiT, the ViTs: its hidden is the up GEMM's epilogue's copy alone too, its
     * pre-activation f32 (the activation's backward reads it) */
    c.mlp.gated = false;
    vla_block_keep_copies(&c, NULL);
    f32 = vla_block_acts_floats(&c, n, 0, 4);
    vla_block_keep_copies(&c, &sizing);
    kept = vla_block_acts_floats(&c, n, 0, 4);
    print_message("plain-MLP block, %lld rows: %lld floats kept f32, %lld keeping copies (%.1f%% less)\n", (long long)n,
                  (long long)f32, (long long)kept, 100.0 * (double)(f32 - kept) / (double)f32);
    want = f32 - 2 * (n * Dm - vla_linear_kept_floats(&sizing, n, Dm)) - (n * Hm - vla_linear_kept_floats(&sizing, n, Hm));
    assert_true(llabs(kept - want) <= 16);
    assert_true(c.mlp.copies == &sizing);
}

static void test_bad_configs(void **state) {
    (void)state;
    vla_block_config c = config_of(&CASES[2]);
    c.attn.n_kv_heads = 3; /* does not divide 4 heads */
    assert_int_equal(vla_block_check(&c), VLA_ERR_INVALID_ARG);
    c = config_of(&CASES[0]);
    c.mlp.dim = D + 1;
    assert_int_equal(vla_block_check(&c), VLA_ERR_INVALID_ARG);
    c = config_of(&CASES[3]);
    c.cond_dim = 0;
    assert_int_equal(vla_block_check(&c), VLA_ERR_INVALID_ARG);
    c = config_of(&CASES[4]);
    c.rope_theta = 10000.0; /* RoPE on cross-attention */
    assert_int_equal(vla_block_check(&c), VLA_ERR_INVALID_ARG);
    c = config_of(&CASES[4]);
    c.kv_dim = 0;
    assert_int_equal(vla_block_check(&c), VLA_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_pytorch_and_fd),
        cmocka_unit_test(test_halves_equal_whole),
        cmocka_unit_test(test_cached_context),
        cmocka_unit_test(test_kept_copies_size),
        cmocka_unit_test(test_bad_configs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

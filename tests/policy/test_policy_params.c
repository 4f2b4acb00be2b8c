/* test_policy_params.c — the parameter inventory: nano configs counted by
 * hand (arithmetic written out here, independent of param_spec.c), the
 * full-size models against their published sizes, checkpoint-style names,
 * the parameter store of policy.c, and `vla policy info --json`. */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/block.h"
#include "nn/linear.h"
#include "policy/param_spec.h"
#include "policy/policy.h"
#include "tensor/cuda/gemm_plan.h"

static void load(const char *name, vla_policy_config *c, vla_param_list *l, vla_param_counts *n) {
    if (vla_policy_config_load(name, c) != VLA_OK) fail_msg("%s: %s", name, vla_error_message());
    memset(l, 0, sizeof *l);
    assert_int_equal(vla_param_specs(c, l), VLA_OK);
    vla_param_count(l, n);
}

/* Linear with bias. */
static int64_t lin(int64_t in, int64_t out) { return in * out + out; }

/* The nano ViT shared by both nano configs: image 32, patch 8 (16 patches),
 * width 32, depth 1, heads 2, mlp 64, 3 channels. */
static int64_t nano_vision(void) {
    int64_t patch = 32 * 3 * 8 * 8 + 32, pos = 16 * 32;
    int64_t layer = 2 * 32 + 4 * lin(32, 32) + 2 * 32 + lin(32, 64) + lin(64, 32);
    return patch + pos + layer + 2 * 32;
}

static void test_pi05_nano_by_hand(void **state) {
    vla_policy_config c;
    vla_param_list l;
    vla_param_counts n;
    load("pi05-nano", &c, &l, &n);
    assert_int_equal(n.params[VLA_GROUP_VISION], nano_vision()); /* 15296 */
    assert_int_equal(n.params[VLA_GROUP_CONNECTOR], lin(32, 32));
    /* Gemma-style LM: width 32, 2 layers, 2 heads × 16, 1 KV head, GeGLU 64, vocab 259 */
    int64_t attn = 32 * 32 + 2 * 32 * 16 + 32 * 32, mlp = 3 * 32 * 64, norms = 2 * 32;
    int64_t lm = 259 * 32 + 2 * (attn + mlp + norms) + 32;
    assert_int_equal(n.params[VLA_GROUP_LANGUAGE], lm); /* 26880 */
    /* expert: width 16, heads shared (q 16→32, k/v 16→16, o 32→16), GeGLU 32, AdaRMS Dense(16→48) ×2 + final */
    int64_t e_attn = 16 * 32 + 2 * 16 * 16 + 32 * 16, e_mlp = 3 * 16 * 32, ada = lin(16, 48);
    assert_int_equal(n.params[VLA_GROUP_EXPERT], 2 * (e_attn + e_mlp + 2 * ada) + ada); /* 10224 */
    /* action_in_proj 2→16, action_out_proj 16→2, time_mlp_in/out 16→16 */
    assert_int_equal(n.params[VLA_GROUP_ACTION_IO], lin(2, 16) + lin(16, 2) + 2 * lin(16, 16)); /* 626 */
    assert_int_equal(n.total_params, 54082);
    assert_int_equal(n.total_trainable, 54082);
    vla_param_list_free(&l);
}

static void test_flops_by_hand(void **state) {
    vla_policy_config c;
    vla_param_list l;
    vla_param_counts n;
    load("pi05-nano", &c, &l, &n);
    vla_flops_estimate f;
    vla_flops_estimate_compute(&c, &l, &f);
    /* vision, 16 image tokens: matrices 6144 (patch) + 4·1024 + 2·2048, ×2·16; attention 4·16·16·32 */
    double vision = 2.0 * (6144 + 4 * 1024 + 2 * 2048) * 16 + 4.0 * 16 * 16 * 32;
    double connector = 2.0 * 1024 * 16;
    /* LM over 16 + 48 = 64 prefix tokens: 2 layers × (1024+512+512+1024+6144); bidirectional attention */
    double lm = 2.0 * 2 * (1024 + 512 + 512 + 1024 + 6144) * 64 + 2 * 4.0 * 64 * 64 * 32;
    /* expert over 4 action tokens: 2 × (1536 + 1536) per token; 5 AdaRMS Dense(16→48) per sample;
     * queries over 64 + 4 keys */
    double expert = 2.0 * 2 * 3072 * 4 + 2.0 * 5 * 768 + 2 * 4.0 * 4 * 68 * 32;
    double io = 2.0 * (32 + 32) * 4 + 2.0 * 2 * 256; /* in/out per action token, time MLP per sample */
    assert_true(f.forward[VLA_GROUP_VISION] == vision);
    assert_true(f.forward[VLA_GROUP_LANGUAGE] == lm);
    assert_true(f.forward[VLA_GROUP_EXPERT] == expert);
    assert_true(f.total_forward == vision + connector + lm + expert + io); /* 4,060,160 */
    assert_true(f.total_train == 3 * f.total_forward);                  /* everything trains */
    assert_true(f.sample == vision + connector + lm + 10 * (expert + io));
    vla_param_list_free(&l);

    /* GR00T with the published freezing: the frozen front runs forward only */
    load("groot-nano", &c, &l, &n);
    vla_flops_estimate_compute(&c, &l, &f);
    assert_true(f.train[VLA_GROUP_VISION] == f.forward[VLA_GROUP_VISION]);
    assert_true(f.train[VLA_GROUP_LANGUAGE] == f.forward[VLA_GROUP_LANGUAGE]);
    assert_true(f.train[VLA_GROUP_EXPERT] == 3 * f.forward[VLA_GROUP_EXPERT]);
    /* the vl_adapter trains: gradients flow through its activations to reach its weights (3×) */
    assert_true(f.train[VLA_GROUP_VL_ADAPTER] == 3 * f.forward[VLA_GROUP_VL_ADAPTER]);
    vla_param_list_free(&l);
}

static void test_groot_nano_by_hand(void **state) {
    vla_policy_config c;
    vla_param_list l;
    vla_param_counts n;
    load("groot-nano", &c, &l, &n);
    assert_int_equal(n.params[VLA_GROUP_VISION], nano_vision());
    assert_int_equal(n.params[VLA_GROUP_CONNECTOR], lin(32, 32));
    /* Qwen3-style: as Gemma above plus q_norm/k_norm (head_dim 16 each) */
    int64_t attn = 32 * 32 + 2 * 32 * 16 + 32 * 32, mlp = 3 * 32 * 64, norms = 2 * 32 + 2 * 16;
    assert_int_equal(n.params[VLA_GROUP_LANGUAGE], 259 * 32 + 2 * (attn + mlp + norms) + 32); /* 26944 */
    /* vlln LN(32) + 1 block: LN, q/k/v/o 32→32 with bias, LN, FF 32→128→32 */
    int64_t vl_block = 2 * 32 + 4 * lin(32, 32) + 2 * 32 + lin(32, 128) + lin(128, 32);
    assert_int_equal(n.params[VLA_GROUP_VL_ADAPTER], 2 * 32 + vl_block); /* 12768 */
    /* DiT inner 16: timestep MLP 16→16→16; block 0 cross (k/v from 32-d VL), block 1 self;
     * each: AdaLN Linear(16→32), attention, FF 16→64→16; proj_out_1 16→32, proj_out_2 16→16 */
    int64_t temb = lin(16, 16) + lin(16, 16), ff = lin(16, 64) + lin(64, 16);
    int64_t cross = lin(16, 32) + lin(16, 16) + 2 * lin(32, 16) + lin(16, 16) + ff;
    int64_t self = lin(16, 32) + 4 * lin(16, 16) + ff;
    assert_int_equal(n.params[VLA_GROUP_EXPERT], temb + cross + self + lin(16, 32) + lin(16, 16)); /* 9392 */
    /* per-embodiment (2) W[e, in, out] + b[e, out]: state 2→16→16, action W1 2→16, W2 32→16, W3 16→16,
     * decoder 16→16→2; position embedding 16×16; future tokens 4×16 */
    int64_t E = 2;
#define CAT(in, out) (E * (in) * (out) + E * (out))
    int64_t io = CAT(2, 16) + CAT(16, 16) + CAT(2, 16) + CAT(32, 16) + CAT(16, 16) + CAT(16, 16) + CAT(16, 2) +
                 16 * 16 + 4 * 16;
#undef CAT
    assert_int_equal(n.params[VLA_GROUP_ACTION_IO], io); /* 3268 */
    assert_int_equal(n.total_params, 68724);
    /* published default: the backbone (vision, mlp1, LM) is frozen */
    assert_int_equal(n.total_trainable, 12768 + 9392 + 3268);
    assert_int_equal(n.trainable[VLA_GROUP_VISION] + n.trainable[VLA_GROUP_LANGUAGE], 0);
    vla_param_list_free(&l);
}

static void test_full_size(void **state) {
    vla_policy_config c;
    vla_param_list l;
    vla_param_counts n;
    load("pi05", &c, &l, &n);
    /* Hand-derived (see the report): SigLIP So400m 412,442,352; projector
     * 2,361,344; Gemma 2B 2,508,531,712; expert with AdaRMS 427,932,672;
     * action/time 2,165,792. */
    assert_int_equal(n.params[VLA_GROUP_VISION], 412442352);
    assert_int_equal(n.params[VLA_GROUP_LANGUAGE], 2508531712LL);
    assert_int_equal(n.total_params, 3353433872LL);
    /* Published: π0 "3.3B" = PaliGemma 3B + gemma_300m; π0.5 adds AdaRMS
     * (+116M here); baidu-baige/LoongForge #21 calls π0.5 "3.5B".
     * Accept 3.2–3.6 B. */
    assert_true(n.total_params > 3.2e9 && n.total_params < 3.6e9);
    /* gemma_300m is "311M params" (openpi models/gemma.py): the expert's layers
     * without the AdaRMS dense layers. */
    int64_t ada = 0;
    for (int64_t i = 0; i < l.n; i++)
        if (l.items[i].group == VLA_GROUP_EXPERT && strstr(l.items[i].name, ".dense.")) ada += l.items[i].numel;
    double e300 = (double)(n.params[VLA_GROUP_EXPERT] - ada);
    assert_true(fabs(e300 - 311e6) / 311e6 < 0.005); /* 311,463,936 */
    assert_true(vla_param_find(&l, "paligemma_with_expert.paligemma.model.language_model.layers.0.self_attn.q_proj"
                                   ".weight") >= 0);
    int64_t k = vla_param_find(&l, "paligemma_with_expert.paligemma.model.language_model.layers.17.self_attn.k_proj"
                                   ".weight");
    assert_true(k >= 0);
    assert_int_equal(l.items[k].shape[0], 256); /* one KV head of 256 */
    assert_int_equal(l.items[k].shape[1], 2048);
    assert_true(vla_param_find(&l, "paligemma_with_expert.gemma_expert.model.layers.0.input_layernorm.dense.weight") >=
                0);
    assert_true(vla_param_find(&l, "paligemma_with_expert.paligemma.model.vision_tower.vision_model.encoder.layers"
                                   ".26.mlp.fc2.weight") >= 0);
    assert_true(vla_param_find(&l, "time_mlp_out.bias") >= 0);
    vla_param_list_free(&l);

    load("groot-n1.5", &c, &l, &n);
    /* Hand-derived: vision 412,442,352; mlp1 2,361,344; Qwen3 12 layers +
     * embeddings + norm 914,674,688; vlln + VL self-attention 201,437,184;
     * DiT 550,386,688; encoders/decoder/embeddings 316,982,272. */
    assert_int_equal(n.params[VLA_GROUP_LANGUAGE], 914674688);
    assert_int_equal(n.params[VLA_GROUP_EXPERT], 550386688);
    assert_int_equal(n.total_params, 2398284528LL);
    assert_int_equal(n.total_trainable, 1068806144LL);
    /* Published: the checkpoint is named "GR00T-N1.5-3B". The inventory
     * leaves out the LM head (tied to embed_tokens in Qwen3-1.7B; 0.31 B if
     * stored untied) and the deleted Qwen3 layers 12..27. Accept 2.2–3.1 B. */
    assert_true(n.total_params > 2.2e9 && n.total_params < 3.1e9);
    k = vla_param_find(&l, "action_head.model.transformer_blocks.0.attn1.to_k.weight");
    assert_true(k >= 0);
    assert_int_equal(l.items[k].shape[1], 2048); /* block 0 is cross-attention to the 2048-d VL tokens */
    k = vla_param_find(&l, "action_head.model.transformer_blocks.1.attn1.to_k.weight");
    assert_int_equal(l.items[k].shape[1], 1536); /* block 1 is self-attention */
    k = vla_param_find(&l, "action_head.state_encoder.layer1.W");
    assert_int_equal(l.items[k].ndim, 3);
    assert_int_equal(l.items[k].shape[0], 32);
    assert_int_equal(l.items[k].shape[1], 64);
    assert_int_equal(l.items[k].shape[2], 1024);
    assert_true(vla_param_find(&l, "backbone.eagle_model.mlp1.0.weight") >= 0);
    assert_true(vla_param_find(&l, "backbone.eagle_model.language_model.model.layers.11.self_attn.q_norm.weight") >=
                0);
    assert_true(vla_param_find(&l, "backbone.eagle_model.language_model.model.layers.12.self_attn.q_proj.weight") <
                0);
    assert_false(l.items[vla_param_find(&l, "backbone.eagle_model.mlp1.0.weight")].trainable);
    assert_true(l.items[vla_param_find(&l, "action_head.future_tokens.weight")].trainable);
    vla_param_list_free(&l);
}

static void test_names_unique(void **state) {
    static const char *const names[] = {"pi05", "groot-n1.5", "pi05-tiny", "groot-tiny"};
    for (size_t i = 0; i < 4; i++) {
        vla_policy_config c;
        vla_param_list l;
        vla_param_counts n;
        load(names[i], &c, &l, &n);
        /* sort-free check: hash names into a table */
        enum { H = 1 << 14 };
        static const char *seen[H];
        memset(seen, 0, sizeof seen);
        for (int64_t k = 0; k < l.n; k++) {
            uint64_t h = 1469598103934665603ull;
            for (const char *p = l.items[k].name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
            size_t slot = h & (H - 1);
            while (seen[slot]) {
                if (!strcmp(seen[slot], l.items[k].name)) fail_msg("%s: duplicate %s", names[i], l.items[k].name);
                slot = (slot + 1) & (H - 1);
            }
            seen[slot] = l.items[k].name;
            assert_true(l.items[k].numel > 0);
        }
        vla_param_list_free(&l);
    }
}

static void test_param_store(void **state) {
    vla_policy p;
    memset(&p, 0, sizeof p);
    assert_int_equal(vla_policy_config_load("groot-nano", &p.cfg), VLA_OK);
    p.tops = test_backend();
    assert_int_equal(vla_policy_alloc_params(&p), VLA_OK);
    assert_int_equal(p.n_weight_floats, 68724);
    assert_int_equal(p.n_grad_floats, 25428);
    vla_policy_default_init(&p, 7);
    float *hw = test_weights_get(&p); /* the weights are the backend's: read them through it */
    int64_t off = 0, goff = 0;
    for (int64_t i = 0; i < p.specs.n; i++) {
        const vla_param *q = &p.params[i];
        assert_ptr_equal(q->data, p.weights + off);
        off += q->spec->numel;
        if (q->spec->trainable) {
            assert_ptr_equal(q->grad, p.grads + goff);
            goff += q->spec->numel;
        } else {
            assert_null(q->grad);
        }
        const float *d = hw + (q->data - p.weights);
        if (q->spec->init == VLA_INIT_ONES) assert_true(d[0] == 1.0f);
        if (q->spec->init == VLA_INIT_ZEROS) assert_true(d[q->spec->numel - 1] == 0.0f);
    }
    /* the patch embedding (1536+ values): std near 0.02 */
    const vla_param *pe = &p.params[0];
    double ss = 0;
    for (int64_t k = 0; k < pe->spec->numel; k++) ss += (double)hw[k] * hw[k];
    assert_true(fabs(sqrt(ss / pe->spec->numel) - 0.02) < 0.002);
    /* initialisation is a pure function of (seed, parameter index) */
    float first = hw[0];
    vla_policy_default_init(&p, 7);
    free(hw);
    hw = test_weights_get(&p);
    assert_true(hw[0] == first);
    free(hw);
    vla_policy_free_params(&p);

    /* pi05 is implemented (pi05.c): create succeeds and lays out the same inventory */
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load("pi05-nano", &c), VLA_OK);
    vla_policy *pp = NULL;
    assert_int_equal(vla_policy_create(&c, test_backend(), &pp), VLA_OK);
    assert_non_null(pp);
    assert_int_equal(pp->n_weight_floats, 54082);
    vla_policy_free(pp);
}

static void test_batch_check(void **state) {
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load("pi05-nano", &c), VLA_OK);
    /* two samples: 16 image + 3 text + 4 action tokens, and 16 + 2 + 4 */
    int32_t cu[3] = {0, 23, 45};
    uint8_t roles[45];
    int32_t pos[45], grp[45], ids[45];
    for (int s = 0; s < 2; s++)
        for (int t = cu[s]; t < cu[s + 1]; t++) {
            int i = t - cu[s], n_text = s ? 2 : 3;
            roles[t] = i < 16 ? VLA_ROLE_IMAGE : i < 16 + n_text ? VLA_ROLE_TEXT : VLA_ROLE_ACTION;
            pos[t] = i;
            grp[t] = roles[t] == VLA_ROLE_ACTION;
            ids[t] = roles[t] == VLA_ROLE_TEXT ? 65 : -1;
        }
    int32_t cu_img[3] = {0, 1, 2};
    float images[2 * 3 * 32 * 32] = {0}, state_v[4] = {0.1f, -0.2f, 0.3f, 0.4f}, actions[2 * 4 * 2] = {0};
    uint8_t pad[8] = {0, 0, 0, 1, 0, 0, 0, 0};
    vla_batch b = {2, 45, cu, roles, pos, grp, ids, 2, cu_img, images, state_v, actions, pad, NULL, NULL, 1, NULL, 0};
    assert_int_equal(vla_batch_check(&b, &c), VLA_OK);
    cu[2] = 44;
    assert_int_equal(vla_batch_check(&b, &c), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "cu_seqlens[2] = 44 but n_tokens = 45"));
    cu[2] = 45;
    ids[17] = 259;
    assert_int_equal(vla_batch_check(&b, &c), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "token_ids[17] = 259 outside the vocabulary"));
    ids[17] = 65;
    pos[30] = 22;
    assert_int_equal(vla_batch_check(&b, &c), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "positions[30] = 22 outside sample 1"));
    pos[30] = 7;
    pad[5] = 2;
    assert_int_equal(vla_batch_check(&b, &c), VLA_ERR_INVALID_ARG);
    pad[5] = 0;
    cu_img[1] = 0; /* sample 1 would have 2 images, config allows 1 */
    assert_int_equal(vla_batch_check(&b, &c), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "sample 1 has 2 images"));
    cu_img[1] = 1;
    state_v[2] = NAN;
    assert_int_equal(vla_batch_check(&b, &c), VLA_ERR_NUMERIC);
    state_v[2] = 0.3f;
    assert_int_equal(vla_batch_check(&b, &c), VLA_OK);
}

/* Pack two samples the way the data layer will: tokenize, ask for the
 * layout, concatenate, and the result passes vla_batch_check. */
static void test_default_layout_and_pack(void **state) {
    static const char *const names[] = {"pi05-nano", "groot-nano"};
    for (int which = 0; which < 2; which++) {
        vla_policy_config c;
        assert_int_equal(vla_policy_config_load(names[which], &c), VLA_OK);
        bool groot = !strcmp(vla_policy_config_family_name(&c), "groot");
        const char *tasks[2] = {"push the T", "a_much longer task that will not fit in forty-eight tokens at all"};
        float st[2][2] = {{0.0f, 1.0f}, {-1.0f, 0.5f}};
        int32_t cu[3] = {0}, cu_img[3] = {0, 1, 2};
        uint8_t roles[256];
        int32_t groups[256], pos[256], ids[256];
        for (int s = 0; s < 2; s++) {
            int32_t text[64];
            int64_t n = 0;
            bool cut = false;
            assert_int_equal(vla_policy_default_tokenize(&c, vla_tokenizer_bytes(), tasks[s], st[s], 2, 1, text, 64, &n,
                                                         &cut),
                             VLA_OK);
            if (!groot) {
                /* [BOS] + "Task: " (6) "push the T" (10) ", State: " (9) "128 255" (7) ";\n" (2) "Action: " (8) */
                assert_int_equal(n, s == 0 ? 1 + 42 : 48);
                assert_int_equal(text[0], VLA_BYTE_BOS);
                assert_int_equal(cut, s == 1); /* max_tokens 48 */
            } else {
                assert_int_equal(n, (int64_t)strlen(tasks[s]) < 48 ? (int64_t)strlen(tasks[s]) : 48);
                assert_int_equal(text[0], s == 0 ? (int)'p' : (int)'a');
            }
            int64_t len = vla_policy_default_layout(&c, 1, NULL, (int32_t)n, NULL, NULL, NULL);
            assert_int_equal(len, 16 + n + (groot ? 1 : 0) + 4);
            int64_t o = cu[s];
            assert_int_equal(vla_policy_default_layout(&c, 1, text, (int32_t)n, roles + o, groups + o, pos + o), len);
            for (int64_t t = 0; t < len; t++) ids[o + t] = roles[o + t] == VLA_ROLE_TEXT ? text[t - 16] : -1;
            cu[s + 1] = (int32_t)(o + len);
            /* spot checks */
            assert_int_equal(roles[o], VLA_ROLE_IMAGE);
            assert_int_equal(roles[o + 16], VLA_ROLE_TEXT);
            assert_int_equal(roles[o + len - 1], VLA_ROLE_ACTION);
            if (groot) {
                assert_int_equal(roles[o + 16 + n], VLA_ROLE_STATE);
                assert_int_equal(groups[o + 5], 5); /* causal backbone */
                assert_int_equal(pos[o + len - 1], 3); /* action positions 0..horizon-1 */
            } else {
                assert_int_equal(groups[o + 15], 0);
                assert_int_equal(groups[o + len - 4], 1); /* the chunk sees the prefix and itself */
                assert_int_equal(pos[o + len - 1], len - 1);
            }
        }
        float images[2 * 3 * 32 * 32] = {0}, actions[2 * 4 * 2] = {0};
        uint8_t pad[8] = {0};
        vla_batch b = {2, cu[2], cu, roles, pos, groups, ids, 2, cu_img, images, &st[0][0], actions, pad,
                       NULL, NULL, 1, NULL, 0};
        if (vla_batch_check(&b, &c) != VLA_OK) fail_msg("%s: %s", names[which], vla_error_message());
    }
}

static char out[1 << 20];

static void test_cli_json(void **state) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s policy info --config pi05-nano --batch 4 --json --params", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    json_error_t err;
    json_t *v = json_loads(out, 0, &err);
    if (!v) fail_msg("not JSON (%s): %.200s", err.text, out);
    assert_int_equal(json_integer_value(json_object_get(v, "total_params")), 54082);
    assert_int_equal(json_integer_value(json_object_get(v, "batch")), 4);
    json_t *g = json_object_get(json_object_get(v, "groups"), "expert");
    assert_int_equal(json_integer_value(json_object_get(g, "params")), 10224);
    json_t *params = json_object_get(v, "params");
    assert_int_equal((int64_t)json_array_size(params), json_integer_value(json_object_get(v, "tensors")));
    json_t *m = json_object_get(v, "memory_bytes");
    assert_true(json_number_value(json_object_get(m, "weights_f32")) == 4.0 * 54082);
    assert_true(json_number_value(json_object_get(m, "adamw_f32")) == 8.0 * 54082);
    double a32 = json_number_value(json_object_get(m, "activations_f32"));
    /* bf16 on cuda keeps the blocks' normed inputs and MLP hidden at half size, the rest f32: less, not half */
    double a16 = json_number_value(json_object_get(m, "activations_bf16"));
    assert_true(a32 > 0 && a16 < a32 && a16 > a32 / 2);
    /* --gradient_checkpointing: the language model (2 layers of width 32)
     * keeps its 2 layer inputs and one layer instead of 2 layers */
    json_t *lm = json_object_get(json_object_get(v, "groups"), "language");
    double saved = json_number_value(json_object_get(lm, "activation_floats_per_sample"));
    double layer = json_number_value(json_object_get(lm, "peak_layer_floats_per_sample"));
    double tokens = (double)json_integer_value(json_object_get(lm, "tokens_per_sample"));
    double remat = json_number_value(json_object_get(lm, "gradient_checkpointing_floats_per_sample"));
    assert_true(fabs(remat - (saved - 2 * layer + 2 * tokens * 32 + layer)) <= 1e-9 * saved);
    double g32 = json_number_value(json_object_get(m, "activations_gradient_checkpointing_f32"));
    assert_true(g32 > 0 && g32 < a32);
    json_decref(v);

    /* the frozen GR00T backbone saves no activations; its trainable head does */
    snprintf(cmd, sizeof cmd, "%s policy info --config groot-n1.5 --json", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    v = json_loads(out, 0, &err);
    assert_non_null(v);
    json_t *gs = json_object_get(v, "groups");
    assert_true(json_number_value(json_object_get(json_object_get(gs, "language"), "activation_floats_per_sample")) ==
                0);
    assert_true(json_number_value(json_object_get(json_object_get(gs, "expert"), "activation_floats_per_sample")) >
                0);
    assert_int_equal(json_integer_value(json_object_get(v, "trainable_params")), 1068806144LL);
    json_decref(v);

    snprintf(cmd, sizeof cmd, "%s policy info --config pi05 2>&1", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "3353433872"));
    snprintf(cmd, sizeof cmd, "%s policy info --config nope 2>&1", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    assert_non_null(strstr(out, "config 'nope' not found"));
    snprintf(cmd, sizeof cmd, "%s policy info 2>&1", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 2);
}

/* The bf16 estimate `vla plan` and `vla policy info` budget (param_spec.h: the blocks' normed inputs and MLP
 * hidden as bf16 copies alone) saves what the nn size tables save when a block keeps its copies, with cuda's
 * copy sizes — up to those copies' row padding, which the estimate leaves out. At π0.5's Gemma layer (GeGLU)
 * and the same widths with a plain GELU MLP (GR00T's DiT and VL blocks, the ViTs). */
static void test_bf16_estimate_matches_size_tables(void **state) {
    (void)state;
    vla_ops sizing = *test_cpu_backend();
    sizing.ready_bytes = vla_q_ready_bytes;
    const int64_t n = 813, D = 2048, H = 16384;
    for (int gated = 0; gated < 2; gated++) {
        vla_block_config c = {0};
        c.dim = D, c.norm1 = c.norm2 = VLA_BLOCK_NORM_RMS_1P, c.norm_eps = 1e-6f;
        c.attn = (vla_attn_config){.n_heads = 8, .n_kv_heads = 1, .head_dim = 256};
        c.rope_theta = 10000.0, c.external_attention = true;
        c.mlp = (vla_mlp_config){.gated = gated, .act = VLA_ACT_GELU_TANH, .dim = D, .hidden = H};
        double f32 = (double)vla_block_acts_floats(&c, n, 0, 4);
        vla_block_keep_copies(&c, &sizing);
        double saved = f32 - (double)vla_block_acts_floats(&c, n, 0, 4);
        double est = vla_layer_act_floats(n, D, 8, 1, 256, n, H, gated, false) -
                     vla_layer_act_floats(n, D, 8, 1, 256, n, H, gated, true);
        print_message("%s MLP, %lld rows: the size tables save %.0f floats, the estimate %.0f\n",
                      gated ? "gated" : "plain", (long long)n, saved, est);
        assert_true(saved > 0 && saved <= est && saved >= 0.99 * est);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_estimate_matches_size_tables),
        cmocka_unit_test(test_pi05_nano_by_hand), cmocka_unit_test(test_groot_nano_by_hand),
        cmocka_unit_test(test_flops_by_hand),
        cmocka_unit_test(test_full_size),         cmocka_unit_test(test_names_unique),
        cmocka_unit_test(test_param_store),       cmocka_unit_test(test_batch_check),
        cmocka_unit_test(test_default_layout_and_pack), cmocka_unit_test(test_cli_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fuzz_policy_config.c — libFuzzer target for policy configs: parses the
 * input as a config; when it validates, builds the parameter inventory and
 * the memory/FLOP estimates and checks that the per-group counts add up,
 * then runs a training step and an action chunk on the meta backend.
 * The same bytes also go through π0.5 prompt construction as a task
 * string, so cleaning and tokenisation see arbitrary text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/config.h"
#include "policy/memory.h"
#include "policy/param_spec.h"
#include "policy/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vla_policy_config cfg;
    if (vla_policy_config_parse("fuzz", (const char *)data, size, &cfg) == VLA_OK) {
        vla_param_list l = {0};
        /* keep huge-but-valid configs from spending the fuzzer's time */
        if (cfg.vision.depth + cfg.language.depth < 256 && vla_param_specs(&cfg, &l) == VLA_OK) {
            vla_param_counts n;
            vla_param_count(&l, &n);
            int64_t sum = 0;
            for (int64_t i = 0; i < l.n; i++) sum += l.items[i].numel;
            if (sum != n.total_params || n.total_trainable > n.total_params) abort();
            vla_activation_estimate a, a16; /* f32; bf16 on cuda (kept copies): never more, never negative */
            vla_activation_estimate_compute(&cfg, &l, false, &a);
            vla_activation_estimate_compute(&cfg, &l, true, &a16);
            vla_flops_estimate f;
            vla_flops_estimate_compute(&cfg, &l, &f);
            if (!(f.total_train >= f.total_forward) || !(a.total_floats_per_sample >= 0)) abort();
            if (!(a16.total_floats_per_sample >= 0) || !(a16.total_floats_per_sample <= a.total_floats_per_sample))
                abort();
            /* the model code itself, on the meta backend (policy/memory.h: no data, address space alone): a
             * training step and an action chunk of one sample build and run for every config that validates,
             * or fail with an error — never a crash — and what they hold adds up. Bounded so a valid giant
             * spends no fuzzing time; the byte tokenizer, so no file the input names is opened. */
            if (n.total_params < ((int64_t)1 << 31) && vla_policy_prefix_tokens(&cfg) + cfg.action.horizon < 4096) {
                cfg.tokenizer[0] = 0;
                vla_memory_opts o = {.sized_as = "cuda", .precision = VLA_PREC_BF16, .batch = 1};
                vla_memory_use u;
                if (vla_policy_memory_measure(&cfg, &o, &u) == VLA_OK) {
                    if ((double)u.params != 4.0 * (double)(n.total_params + n.total_trainable) ||
                        u.held < u.params + u.activations || u.peak < u.held)
                        abort();
                } else {
                    vla_error_clear();
                }
                if (vla_policy_memory_measure_inference(&cfg, &o, &u) == VLA_OK) {
                    if ((double)u.params != 4.0 * (double)n.total_params || u.peak < u.held) abort();
                } else {
                    vla_error_clear();
                }
            }
        }
        vla_param_list_free(&l);
    }
    char *task = malloc(size + 1);
    if (!task) return 0;
    memcpy(task, data, size);
    task[size] = 0;
    float state[3] = {-1.0f, 0.0f, 1.0f};
    int32_t ids[64];
    bool mask[64];
    int64_t n = 0;
    bool trunc = false;
    if (vla_pi05_tokenize(vla_tokenizer_bytes(), task, state, 3, 64, ids, mask, &n, &trunc) == VLA_OK) {
        if (n < 1 || n > 64 || ids[0] != VLA_BYTE_BOS) abort();
        for (int64_t i = 0; i < 64; i++)
            if (ids[i] < 0 || ids[i] >= VLA_BYTE_VOCAB || mask[i] != (i < n)) abort();
    }
    free(task);
    return 0;
}

/* fuzz_fp8_state.c — libFuzzer target for a checkpoint's FP8 scaling state
 * (training_state/fp8_scaling.safetensors, policy/precision.h): the bytes
 * are parsed as a safetensors file and imported into pi05-nano in FP8 mode
 * (amax history of 4 steps): names, shapes, dtypes, histories of other
 * lengths, scales that are 0, negative, Inf or NaN. Any result is fine
 * except a crash or a sanitizer report — and an import that succeeds must
 * leave finite, positive scales. */
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/status.h"
#include "io/safetensors.h"
#include "policy/config.h"
#include "policy/precision.h"
#include "tensor/backend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static vla_policy *policy;

static int setup(void) {
    char src[2048], preset[2200];
    snprintf(src, sizeof src, "%s", __FILE__);
    snprintf(preset, sizeof preset, "%s/../configs/pi05-nano.json", dirname(src));
    vla_policy_config cfg;
    const vla_ops *ops;
    vla_fp8_recipe r;
    vla_fp8_recipe_default(&r);
    r.amax_history_len = 4;
    if (vla_policy_config_load(preset, &cfg) != VLA_OK || vla_backend_get("cpu", &ops) != VLA_OK ||
        vla_policy_create(&cfg, ops, &policy) != VLA_OK || vla_policy_set_precision(policy, VLA_PREC_FP8, &r) != VLA_OK)
        return -1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        if (setup() != 0) abort();
        ready = 1;
    }
    vla_safetensors f;
    if (vla_safetensors_parse(data, size, "fuzz", &f) != VLA_OK) {
        vla_error_clear();
        return 0;
    }
    if (vla_policy_fp8_import_from(policy, &f, "fuzz") == VLA_OK) {
        int64_t n;
        float *state = vla_policy_fp8_state_to_host(policy, &n);
        for (int64_t i = 0; state && i < policy->prec->n; i++)
            if (!(isfinite(state[i]) && state[i] > 0)) abort(); /* a scale the import should have refused */
        free(state);
    } else {
        vla_error_clear();
    }
    vla_safetensors_close(&f);
    return 0;
}

/* fuzz_embodiments.c — libFuzzer target for a mixture-trained checkpoint's
 * config.json as `vla eval` reads it: the input is parsed as JSON and the
 * embodiment chosen by environment name, by name and by id
 * (vla_pretrained_choose_embodiment: the "embodiments" list, each entry's
 * normalisation and features, checked against the policy's dims, per-step
 * action statistics included); and the
 * same bytes as a `--dataset.weights` list and a mixture's sampling map. A
 * choice that succeeds must give normalisers as wide as the features it
 * read (the action's × horizon when per step), within the policy's dims. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "data/mixture.h"
#include "checkpoint/pretrained.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void choose(const json_t *root, const vla_policy_config *cfg, const char *want, const char *env) {
    vla_normalizer ns, na;
    vla_pretrained_meta m;
    bool found = false;
    if (vla_pretrained_choose_embodiment("fuzz.json", root, cfg, "reach", want, env, &ns, &na, &m, &found) != VLA_OK ||
        !found)
        return;
    int64_t action_channels = m.action_width * (m.action_stats_per_step ? cfg->action.horizon : 1);
    if (ns.dim != m.state_width || na.dim != action_channels || m.state_width > cfg->action.state_dim ||
        m.action_width > cfg->action.action_dim || m.n_obs_steps < 1)
        abort();
    vla_normalizer_free(&ns), vla_normalizer_free(&na);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool quiet;
    if (!quiet) vla_log_set_level(VLA_LOG_ERROR), quiet = true;
    vla_policy_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.action.state_dim = 32, cfg.action.action_dim = 32, cfg.action.horizon = 4;
    json_t *root = json_loadb((const char *)data, size, 0, NULL);
    if (root) {
        choose(root, &cfg, NULL, "reach");
        choose(root, &cfg, "1", NULL);
        choose(root, &cfg, "so101_follower", "pusht");
        json_decref(root);
    }
    /* the bytes as weights for three datasets, and the map they make */
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    double w[3];
    const int64_t rows[3] = {7, 1, 40};
    vla_mixture mix;
    if (vla_mixture_parse_weights(text, 3, w) == VLA_OK && vla_mixture_init(&mix, 3, rows, w, 1) == VLA_OK) {
        int64_t count[3] = {0};
        for (int64_t v = 0; v < mix.total; v++) {
            int d = -1;
            int64_t r = vla_mixture_row(&mix, 2, v, &d);
            if (d < 0 || d > 2 || r < mix.first_row[d] || r >= mix.first_row[d] + rows[d]) abort();
            count[d]++;
        }
        for (int d = 0; d < 3; d++)
            if (count[d] != mix.quota[d] || count[d] < 1) abort();
    }
    free(text);
    return 0;
}

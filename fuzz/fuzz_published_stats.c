/* fuzz_published_stats.c — libFuzzer target for the normalisation statistics
 * published fine-tunes store (checkpoint/published_stats.c). The first byte picks
 * which file the rest is, the others in the work directory staying valid:
 *   0: LeRobot policy_preprocessor.json (beside a valid normaliser file),
 *   1: that normaliser's safetensors (beside a valid policy_preprocessor.json),
 *   2: openpi assets/<id>/norm_stats.json,
 *   3: GR00T experiment_cfg/metadata.json.
 * Any result is fine except a crash, a sanitizer report, or statistics
 * accepted that are wider than the policy or disagree with their own
 * normalisers. */
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/status.h"
#include "io/safetensors.h"
#include "policy/config.h"
#include "checkpoint/published.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[256], dirs[4][320];
static vla_policy_config cfg_pi05, cfg_groot;

static void cleanup(void) {
    if (root[0] && vla_remove_tree(root) != VLA_OK) vla_error_clear();
}

static int put(const char *dir, const char *name, const void *text, size_t n) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return vla_write_file_atomic(path, text, n) == VLA_OK ? 0 : -1;
}

/* A LeRobot normaliser file: observation.state and action, every stat. */
static int write_normalizer(const char *dir) {
    static const float st[2] = {1.0f, 2.0f}, hi[2] = {3.0f, 4.0f};
    static const int64_t shape[1] = {2};
    static const char *const keys[] = {"observation.state", "action"};
    static const char *const stats[] = {"mean", "std", "min", "max", "q01", "q99"};
    vla_safetensors_writer *w = NULL;
    if (vla_safetensors_writer_new(&w) != VLA_OK) return -1;
    char names[12][64];
    int k = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 6; j++, k++) {
            snprintf(names[k], sizeof names[k], "%s.%s", keys[i], stats[j]);
            vla_safetensors_writer_add(w, names[k], VLA_F32, 1, shape, j % 2 ? hi : st);
        }
    char path[700];
    snprintf(path, sizeof path, "%s/policy_preprocessor_step_0_normalizer_processor.safetensors", dir);
    vla_status s = vla_safetensors_writer_write(w, path);
    vla_safetensors_writer_free(w);
    return s == VLA_OK ? 0 : -1;
}

static const char preprocessor[] =
    "{\"name\": \"policy_preprocessor\", \"steps\": [{\"registry_name\": \"normalizer_processor\", \"config\": "
    "{\"eps\": 1e-8, \"features\": {\"observation.images.top\": {\"type\": \"VISUAL\", \"shape\": [3, 96, 96]}, "
    "\"observation.state\": {\"type\": \"STATE\", \"shape\": [2]}, \"action\": {\"type\": \"ACTION\", \"shape\": [2]}}, "
    "\"norm_map\": {\"VISUAL\": \"IDENTITY\", \"STATE\": \"QUANTILES\", \"ACTION\": \"MIN_MAX\"}}, "
    "\"state_file\": \"policy_preprocessor_step_0_normalizer_processor.safetensors\"}]}";

static int setup(void) {
    char src[2048], preset[2300];
    snprintf(src, sizeof src, "%s", __FILE__);
    char *d = dirname(src);
    snprintf(preset, sizeof preset, "%s/../configs/pi05-nano.json", d);
    if (vla_policy_config_load(preset, &cfg_pi05) != VLA_OK) return -1;
    snprintf(preset, sizeof preset, "%s/../configs/groot-nano.json", d);
    if (vla_policy_config_load(preset, &cfg_groot) != VLA_OK) return -1;
    cfg_groot.head.embodiments = 32, cfg_groot.action.state_dim = 8; /* as N1.5's config states them */
    snprintf(root, sizeof root, "/tmp/vla_fuzz_pubstats_XXXXXX");
    if (!mkdtemp(root)) return -1;
    atexit(cleanup);
    for (int i = 0; i < 4; i++) {
        snprintf(dirs[i], sizeof dirs[i], "%s/%d", root, i);
        if (mkdir(dirs[i], 0700) != 0) return -1;
    }
    char sub[700];
    snprintf(sub, sizeof sub, "%s/assets", dirs[2]), mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/assets/pusht", dirs[2]), mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/experiment_cfg", dirs[3]), mkdir(sub, 0700);
    return write_normalizer(dirs[0]) || write_normalizer(dirs[1]) ||
           put(dirs[1], "policy_preprocessor.json", preprocessor, sizeof preprocessor - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        if (setup() != 0) abort();
        ready = 1;
    }
    if (size < 1) return 0;
    int mode = data[0] % 4;
    static const char *const files[] = {"policy_preprocessor.json",
                                        "policy_preprocessor_step_0_normalizer_processor.safetensors",
                                        "assets/pusht/norm_stats.json", "experiment_cfg/metadata.json"};
    if (put(dirs[mode], files[mode], data + 1, size - 1) != 0) abort();
    const vla_policy_config *cfg = mode == 3 ? &cfg_groot : &cfg_pi05;
    vla_normalizer ns, na;
    vla_pretrained_meta m;
    vla_pub_stats_source src;
    if (vla_published_stats(dirs[mode], cfg, (data[0] / 4) & 1 ? "new_embodiment" : NULL, &ns, &na, &m, &src) ==
            VLA_OK &&
        src != VLA_PUB_STATS_NONE) {
        if (m.state_width != ns.dim || m.action_width != na.dim || m.state_width < 1 || m.action_width < 1 ||
            m.state_width > cfg->action.state_dim || m.action_width > cfg->action.action_dim ||
            m.cameras > cfg->vision.cameras)
            abort();
        float x[64] = {0}, y[64];
        vla_normalize(&ns, y, x, 1), vla_unnormalize(&na, y, x, 1);
        vla_normalizer_free(&ns), vla_normalizer_free(&na);
    }
    vla_error_clear();
    return 0;
}

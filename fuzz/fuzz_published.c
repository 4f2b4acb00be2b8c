/* fuzz_published.c — libFuzzer target for published checkpoints
 * (checkpoint/published.h). The first byte picks what the rest is:
 *   0: config.json (LeRobot / openpi / GR00T fields over the nano presets),
 *   1: model.safetensors.index.json beside a real shard of pi05-nano's
 *      tensors, checked against pi05-nano's inventory,
 *   2: model.safetensors itself (names, aliases in __metadata__, prefixes,
 *      shapes, dtypes), checked against pi05-nano's inventory.
 * Any result is fine except a crash, a sanitizer report, or a check that
 * passes with a binding that does not add up. */
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
#include "policy/param_spec.h"
#include "checkpoint/published.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256], preset_pi05[2048], preset_groot[2048];
static vla_param_list specs;

/* The work directory goes when the process ends. */
static void cleanup(void) {
    if (dir[0] && vla_remove_tree(dir) != VLA_OK) vla_error_clear();
}

/* The presets beside this source file; a work directory with a shard of
 * pi05-nano's tensors (zeros) and an openpi config.json. */
static int setup(void) {
    char src[2048];
    snprintf(src, sizeof src, "%s", __FILE__);
    char *d = dirname(src);
    snprintf(preset_pi05, sizeof preset_pi05, "%s/../configs/pi05-nano.json", d);
    snprintf(preset_groot, sizeof preset_groot, "%s/../configs/groot-nano.json", d);
    snprintf(dir, sizeof dir, "/tmp/vla_fuzz_published_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    atexit(cleanup);
    vla_policy_config cfg;
    if (vla_policy_config_load(preset_pi05, &cfg) != VLA_OK || vla_param_specs(&cfg, &specs) != VLA_OK) return -1;
    int64_t most = 0;
    for (int64_t i = 0; i < specs.n; i++) most = specs.items[i].numel > most ? specs.items[i].numel : most;
    float *zeros = calloc((size_t)most, sizeof(float));
    vla_safetensors_writer *w = NULL;
    if (!zeros || vla_safetensors_writer_new(&w) != VLA_OK) return -1;
    for (int64_t i = 0; i < specs.n; i++)
        vla_safetensors_writer_add(w, specs.items[i].name, VLA_F32, specs.items[i].ndim, specs.items[i].shape, zeros);
    char path[512];
    snprintf(path, sizeof path, "%s/shard.safetensors", dir);
    vla_status st = vla_safetensors_writer_write(w, path);
    vla_safetensors_writer_free(w);
    free(zeros);
    snprintf(path, sizeof path, "%s/config.json", dir);
    const char *cfg_text = "{\"action_dim\": 2, \"action_horizon\": 4, \"paligemma_variant\": \"gemma_2b\"}";
    return st == VLA_OK && vla_write_file_atomic(path, cfg_text, strlen(cfg_text)) == VLA_OK ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        if (setup() != 0) abort();
        ready = 1;
    }
    if (size < 1) return 0;
    int mode = data[0] % 3;
    char path[512], cfgpath[512], idx[512], model[512];
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    snprintf(model, sizeof model, "%s/model.safetensors", dir);
    if (mode == 0) {
        snprintf(path, sizeof path, "%s/c0", dir);
        mkdir(path, 0700);
        snprintf(path, sizeof path, "%s/c0/config.json", dir);
        if (vla_write_file_atomic(path, data + 1, size - 1) != VLA_OK) abort();
        path[strlen(path) - strlen("/config.json")] = 0;
        vla_policy_config cfg;
        vla_pub_format fmt;
        vla_published_config(path, (data[0] / 3) & 1 ? preset_groot : preset_pi05, &cfg, &fmt);
    } else {
        const char *target = mode == 1 ? idx : model;
        unlink(idx);
        unlink(model);
        if (vla_write_file_atomic(target, data + 1, size - 1) != VLA_OK) abort();
        vla_published_report rep;
        if (vla_published_check(dir, &specs, &rep) == VLA_OK) {
            /* a passing check binds every tensor, and the files hold at least as many */
            if (rep.bound != specs.n || rep.file_tensors < rep.bound - rep.aliased || rep.n_files < 1) abort();
        }
        unlink(target);
    }
    vla_error_clear();
    return 0;
}

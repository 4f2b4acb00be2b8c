/* fuzz_ckpt_manifest.c — libFuzzer target for checkpoint verification: the
 * input becomes training_state/manifest.json of a small checkpoint directory
 * (with a fixed model file and training_step.json) and vla_ckpt_verify must
 * accept or refuse it without crashing, escaping the directory or leaking. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "checkpoint/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];

static void cleanup(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void setup(void) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/vla-fuzz-ckpt-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(dir)) abort();
    atexit(cleanup);
    char p[400];
    snprintf(p, sizeof p, "%s/pretrained_model", dir);
    if (vla_mkdirs(p) != VLA_OK) abort();
    snprintf(p, sizeof p, "%s/training_state", dir);
    if (vla_mkdirs(p) != VLA_OK) abort();
    snprintf(p, sizeof p, "%s/pretrained_model/model.safetensors", dir);
    if (vla_write_file_atomic(p, "model-bytes", 11) != VLA_OK) abort();
    snprintf(p, sizeof p, "%s/training_state/training_step.json", dir);
    if (vla_write_file_atomic(p, "{\"step\": 5}", 11) != VLA_OK) abort();
    vla_log_set_level(VLA_LOG_QUIET);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) setup();
    char p[400];
    snprintf(p, sizeof p, "%s/training_state/manifest.json", dir);
    if (vla_write_file_atomic(p, data, size) != VLA_OK) abort();
    int64_t step = -1;
    if (vla_ckpt_verify(dir, &step) == VLA_OK && step != 5) abort();
    return 0;
}

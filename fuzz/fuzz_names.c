/* fuzz_names.c — libFuzzer target for the names a user types that vla.c
 * turns into paths or suggestions: --dataset.repo_id lists
 * (vla_lerobot_repo_roots: ORG/NAME checked, then looked up in the LeRobot
 * cache, here an empty one), the "did you mean" closeness of two flag names
 * (vla_flags_close, on the input split at its first NUL), and a file given
 * as a checkpoint (vla_published_check_path: the safetensors header test).
 * Each must answer or fail with a message, never crash or read past the
 * input; a repo id that resolves must name a directory inside the cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/flags.h"
#include "base/log.h"
#include "data/lerobot.h"
#include "checkpoint/published.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char cache[64], file[96];
    if (!cache[0]) {
        vla_log_set_level(VLA_LOG_QUIET);
        snprintf(cache, sizeof cache, "/tmp/vla-fuzz-names-%d", (int)getpid());
        snprintf(file, sizeof file, "%s.ckpt", cache);
        setenv("HF_LEROBOT_HOME", cache, 1); /* absent: every lookup fails after the name is checked */
    }
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    char roots[8192];
    if (vla_lerobot_repo_roots(s, roots, sizeof roots) == VLA_OK && strncmp(roots, cache, strlen(cache)) != 0) abort();
    vla_error_clear();
    const char *second = s + strlen(s) + (strlen(s) < size ? 1 : 0);
    if (strlen(s) < 128 && strlen(second) < 128) (void)vla_flags_close(s, second);
    FILE *f = fopen(file, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
        (void)vla_published_check_path("--policy.path", file);
        vla_error_clear();
        unlink(file);
    }
    free(s);
    return 0;
}

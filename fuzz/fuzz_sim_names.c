/* fuzz_sim_names.c — libFuzzer target for the names a user gives the
 * simulators: `--env.task` (vla_env_resolve: LeRobot's "AlohaTransferCube-v0"
 * or "transfer_cube", folded for case, underscores, the type prefix and a -vN
 * suffix), one camera (vla_env_camera_index) and `--cameras` lists
 * (vla_env_parse_cameras), for every registered env. A list that parses must
 * give distinct, in-range camera indices, at most VLA_ENV_MAX_CAMERAS. (The
 * MJCF of `--env.model` is parsed by MuJoCo itself; tests/sim/test_sim_aloha.c
 * covers bad model files.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    for (const char *const *nm = vla_env_names(); *nm; nm++) {
        const vla_env_spec *sp = vla_env_find(*nm)->spec;
        const char *name;
        if (vla_env_resolve(*nm, s, &name) == VLA_OK && strcmp(name, *nm)) abort();
        int idx = -1, n_cams = sp->n_cameras > 0 ? sp->n_cameras : 1;
        if (vla_env_camera_index(sp, s, &idx) == VLA_OK && (idx < 0 || idx >= n_cams)) abort();
        int list[VLA_ENV_MAX_CAMERAS], n = -1;
        if (vla_env_parse_cameras(sp, s, list, &n) == VLA_OK) {
            if (n < 1 || n > VLA_ENV_MAX_CAMERAS) abort();
            for (int i = 0; i < n; i++) {
                if (list[i] < 0 || list[i] >= n_cams) abort();
                for (int j = 0; j < i; j++)
                    if (list[i] == list[j]) abort();
            }
        }
    }
    vla_error_clear();
    free(s);
    return 0;
}

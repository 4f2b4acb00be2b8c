/* fuzz_lerobot_meta.c — fuzz the LeRobot metadata loader: info.json
 * (features, cameras, path templates), episodes.jsonl and tasks.jsonl, from
 * one buffer split at 0x01 bytes into those three texts, and a fourth part
 * after another 0x01: a --dataset.episodes selection ("1,3-5"), parsed and
 * applied as open applies it. A parsed dataset also has its path templates
 * expanded and a window resolved, as open and the loader would. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/lerobot.h"
#include "data/lerobot_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *parts[4] = {NULL, NULL, NULL, NULL};
    size_t lens[4] = {0, 0, 0, 0};
    size_t start = 0;
    int k = 0;
    for (size_t i = 0; i <= size && k < 4; i++)
        if (i == size || data[i] == 0x01) {
            parts[k] = (const char *)data + start;
            lens[k] = i - start;
            k++;
            start = i + 1;
        }
    vla_lerobot *ds;
    if (vla_lerobot_open_meta_buffers(parts[0], lens[0], parts[1], lens[1], parts[2], lens[2], &ds) != VLA_OK) return 0;
    if (parts[3] && lens[3] < 256) {
        char spec[256];
        memcpy(spec, parts[3], lens[3]);
        spec[lens[3]] = 0;
        int64_t *eps, n;
        if (vla_lerobot_parse_episodes(spec, &eps, &n) == VLA_OK) {
            int64_t before = ds->n_episodes;
            if (vla_lr_apply_selection(ds, eps, n) == VLA_OK) {
                /* every wanted episode kept, compact and in order */
                if (ds->n_episodes != n || ds->n_episodes + ds->n_selected_dropped != before) abort();
                for (int64_t e = 0; e < ds->n_episodes; e++)
                    if (ds->episodes[e].from != (e ? ds->episodes[e - 1].to : 0) ||
                        (e && ds->episodes[e].episode_index <= ds->episodes[e - 1].episode_index))
                        abort();
            }
            free(eps);
        }
    }
    char buf[512];
    for (int64_t e = 0; e < ds->n_episodes && e < 64; e++) {
        vla_lerobot_data_file(ds, e, buf, sizeof buf);
        for (int c = 0; c < ds->n_cameras && c < 4; c++) vla_lerobot_video_file(ds, c, e, buf, sizeof buf);
    }
    double deltas[3] = {-1.0 / ds->fps, 0, 2.0 / ds->fps};
    int off[3];
    vla_lerobot_delta_offsets(ds, deltas, 3, 1e-4, off);
    vla_lerobot_close(ds);
    return 0;
}

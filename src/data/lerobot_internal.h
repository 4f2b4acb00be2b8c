/* lerobot_internal.h — helpers shared by the lerobot_*.c files (not API). */
#ifndef VLA_DATA_LEROBOT_INTERNAL_H
#define VLA_DATA_LEROBOT_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "data/lerobot.h"

/* Open with consistency problems collected into `problems` (each
 * {"file","reason"}) instead of failing; files that cannot be read are
 * skipped. problems == NULL is the strict open of vla_lerobot_open. */
vla_status vla_lr_open_internal(const char *root, json_t *problems, vla_lerobot **out);

/* Append {"file": file (relative to the root), "reason": ...}. */
void vla_lr_problem(json_t *problems, const char *file, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Statistics of one channel-interleaved block [n × width]: 10 arrays of
 * `width` doubles in the order min,max,mean,std,q01,q10,q50,q90,q99 (9
 * arrays; count = n). Non-finite values are skipped. `scratch` holds n floats. */
#define VLA_LR_NSTAT 9
extern const char *const vla_lr_stat_names[VLA_LR_NSTAT];
extern const double vla_lr_quantiles[5];
void vla_lr_numeric_stats(const float *v, int64_t n, int64_t width, int64_t stride, float *scratch, double *out);

/* Per-channel image statistics from 256-bin histograms (values /255). hist is
 * [3][256], sums [3] of value and value² (in [0,1] units); out as above with width 3. */
void vla_lr_hist_stats(const uint64_t *hist, int64_t count_per_channel, double *out);

/* Stats JSON object of one feature from out[] (layout above); image: nested 3×1×1. */
json_t *vla_lr_stats_json(const double *out, int64_t width, int64_t count, int image);

/* Expand a path template. */
typedef struct {
    int64_t chunk, file, episode_index;
    const char *video_key, *image_key;
} vla_lr_tmpl_vars;
vla_status vla_lr_format_path(const char *tmpl, const vla_lr_tmpl_vars *v, char *buf, size_t cap);

int vla_lr_is_numeric_dtype(const char *dtype);

#endif

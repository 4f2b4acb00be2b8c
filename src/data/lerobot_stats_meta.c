/* lerobot_stats_meta.c — the normalisation stats a dataset ships: meta/stats.json,
 * or for v2.1 the per-episode meta/episodes_stats.jsonl aggregated into one
 * set per feature. (Recomputing stats from the data is lerobot_stats.c.)
 * Format: huggingface/lerobot src/lerobot/datasets/. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "data/lerobot_internal.h"

static int flatten(json_t *v, double *out, int cap, int n) {
    if (json_is_number(v)) {
        if (n < cap) out[n] = json_number_value(v);
        return n + 1;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            n = flatten(json_array_get(v, i), out, cap, n);
            if (n < 0 || n > (1 << 20)) return -1;
        }
        return n;
    }
    return -1;
}

/* *out stays NULL when v is not (nested arrays of) numbers: the caller
 * says what it expected. */
static vla_status flat_array(json_t *v, double **out, int *n) {
    *out = NULL;
    int k = flatten(v, NULL, 0, 0);
    if (k < 0) return VLA_OK;
    double *d = malloc((size_t)(k ? k : 1) * sizeof *d);
    if (!d) return vla_error(VLA_ERR_NOMEM, "out of memory");
    flatten(v, d, k, 0);
    *n = k;
    *out = d;
    return VLA_OK;
}

void vla_lr_stats_free(vla_lr_stats *s) {
    free(s->key);
    free(s->min);
    free(s->max);
    free(s->mean);
    free(s->std);
    free(s->q01);
    free(s->q10);
    free(s->q50);
    free(s->q90);
    free(s->q99);
}

static vla_status stats_from_json(const char *what, const char *key, json_t *obj, vla_lr_stats *s) {
    memset(s, 0, sizeof *s);
    s->key = vla_lr_strdup(key);
    if (!s->key) return vla_error(VLA_ERR_NOMEM, "out of memory");
    double **dst[] = {&s->min, &s->max, &s->mean, &s->std, &s->q01, &s->q10, &s->q50, &s->q90, &s->q99};
    const char *names[] = {"min", "max", "mean", "std", "q01", "q10", "q50", "q90", "q99"};
    s->n = -1;
    for (int k = 0; k < 9; k++) {
        json_t *v = json_object_get(obj, names[k]);
        if (!v) {
            if (k < 4) return vla_error(VLA_ERR_FORMAT, "%s: stats of '%s': '%s' is missing", what, key, names[k]);
            continue;
        }
        int n;
        VLA_TRY(flat_array(v, dst[k], &n));
        if (!*dst[k]) return vla_error(VLA_ERR_FORMAT, "%s: stats of '%s': '%s' must be numbers", what, key, names[k]);
        if (s->n >= 0 && n != s->n)
            return vla_error(VLA_ERR_FORMAT, "%s: stats of '%s': '%s' has %d values, 'min' has %d", what, key, names[k], n, s->n);
        s->n = n;
    }
    /* quantiles all-or-none */
    if (!(s->q01 && s->q10 && s->q50 && s->q90 && s->q99)) {
        free(s->q01), free(s->q10), free(s->q50), free(s->q90), free(s->q99);
        s->q01 = s->q10 = s->q50 = s->q90 = s->q99 = NULL;
    }
    json_t *c = json_object_get(obj, "count");
    int nc = 0;
    double *cv = NULL;
    if (c) VLA_TRY(flat_array(c, &cv, &nc));
    s->count = cv && nc > 0 ? (int64_t)cv[0] : 0;
    free(cv);
    return VLA_OK;
}

static vla_status load_stats_object(vla_lerobot *ds, const char *what, json_t *root) {
    if (!json_is_object(root)) return vla_error(VLA_ERR_FORMAT, "%s: not a JSON object", what);
    ds->stats = calloc(json_object_size(root) + 1, sizeof *ds->stats);
    if (!ds->stats) return vla_error(VLA_ERR_NOMEM, "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!json_is_object(v)) continue;
        VLA_TRY(stats_from_json(what, key, v, &ds->stats[ds->n_stats++]));
    }
    return VLA_OK;
}

/* v2.1 first pass: the lines of episodes_stats.jsonl regrouped by feature,
 * per[key] = the episodes' stats objects in file order. */
static vla_status collect_episode_stats(const char *path, const char *text, size_t len, json_t *per) {
    vla_lr_jsonl_cursor c = {0};
    for (;;) {
        json_t *obj;
        VLA_TRY(vla_lr_jsonl_next(path, text, len, &c, &obj));
        if (!obj) return VLA_OK;
        json_t *stats = json_object_get(obj, "stats");
        vla_status st = json_is_object(stats) ? VLA_OK : vla_error(VLA_ERR_FORMAT, "%s: 'stats' is missing", c.where);
        const char *key;
        json_t *v;
        if (st == VLA_OK) json_object_foreach(stats, key, v) {
            json_t *arr = json_object_get(per, key);
            if (!arr) json_object_set_new(per, key, arr = json_array());
            json_array_append(arr, v);
        }
        json_decref(obj);
        VLA_TRY(st);
    }
}

/* One more episode's stats `s` into the running aggregate: count-weighted
 * mean, pooled second moment m2 (Chan et al.), min of mins, max of maxs,
 * quantiles as LeRobot's envelope. */
static vla_status merge_episode(vla_lr_stats *agg, double *m2, double *total, const vla_lr_stats *s,
                                const char *path, const char *key) {
    if (s->n != agg->n) return vla_error(VLA_ERR_FORMAT, "%s: stats of '%s' change width across episodes", path, key);
    double c = (double)s->count;
    for (int k = 0; k < agg->n; k++) {
        double nt = *total + c;
        double d = s->mean[k] - agg->mean[k];
        double mean = nt > 0 ? agg->mean[k] + d * c / nt : agg->mean[k];
        m2[k] += c * s->std[k] * s->std[k] + (nt > 0 ? d * d * *total * c / nt : 0);
        agg->mean[k] = mean;
        if (s->min[k] < agg->min[k]) agg->min[k] = s->min[k];
        if (s->max[k] > agg->max[k]) agg->max[k] = s->max[k];
        if (agg->q01 && s->q01) {
            agg->q01[k] = fmin(agg->q01[k], s->q01[k]);
            agg->q10[k] = fmin(agg->q10[k], s->q10[k]);
            agg->q50[k] = fmin(agg->q50[k], s->q50[k]);
            agg->q90[k] = fmax(agg->q90[k], s->q90[k]);
            agg->q99[k] = fmax(agg->q99[k], s->q99[k]);
        }
    }
    *total += c;
    return VLA_OK;
}

/* One feature's stats over all episodes (arr: its per-episode objects);
 * *out is set, and owns its arrays, only on success. */
static vla_status aggregate_feature(const char *path, const char *key, json_t *arr, vla_lr_stats *out) {
    vla_lr_stats agg;
    memset(&agg, 0, sizeof agg);
    double total = 0;
    double *m2 = NULL;
    vla_status st = VLA_OK;
    for (size_t i = 0; i < json_array_size(arr) && st == VLA_OK; i++) {
        vla_lr_stats s;
        st = stats_from_json(path, key, json_array_get(arr, i), &s);
        if (st == VLA_OK && i == 0) {
            agg = s; /* takes s's arrays and key */
            s.key = NULL;
            s.min = s.max = s.mean = s.std = s.q01 = s.q10 = s.q50 = s.q90 = s.q99 = NULL;
            m2 = calloc((size_t)agg.n + 1, sizeof *m2);
            for (int k = 0; k < agg.n; k++) m2[k] = (double)agg.count * agg.std[k] * agg.std[k];
            total = (double)agg.count;
        } else if (st == VLA_OK) {
            st = merge_episode(&agg, m2, &total, &s, path, key);
        }
        if (i > 0 || st != VLA_OK) vla_lr_stats_free(&s);
    }
    if (st == VLA_OK && agg.key) {
        for (int k = 0; k < agg.n; k++) agg.std[k] = total > 0 ? sqrt(m2[k] / total) : 0;
        agg.count = (int64_t)total;
        *out = agg;
    } else {
        vla_lr_stats_free(&agg);
    }
    free(m2);
    return st;
}

/* v2.1: aggregate episodes_stats.jsonl (count-weighted mean, pooled variance,
 * min of mins, max of maxs; quantiles as LeRobot's envelope when present). */
static vla_status aggregate_episode_stats(vla_lerobot *ds, const char *path, const char *text, size_t len) {
    json_t *per = json_object(); /* key → array of stats objects */
    vla_status st = collect_episode_stats(path, text, len, per);
    if (st == VLA_OK) {
        ds->stats = calloc(json_object_size(per) + 1, sizeof *ds->stats);
        if (!ds->stats) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    const char *key;
    json_t *arr;
    if (st == VLA_OK) json_object_foreach(per, key, arr) {
        vla_lr_stats agg;
        memset(&agg, 0, sizeof agg);
        if ((st = aggregate_feature(path, key, arr, &agg)) != VLA_OK) break;
        if (agg.key) ds->stats[ds->n_stats++] = agg;
    }
    json_decref(per);
    return st;
}

vla_status vla_lr_load_stats(vla_lerobot *ds, json_t *problems) {
    char path[2048], *text = NULL;
    size_t len;
    vla_status st = VLA_OK;
    snprintf(path, sizeof path, "%s/meta/stats.json", ds->root);
    if (ds->version == 21) {
        char p2[2048];
        snprintf(p2, sizeof p2, "%s/meta/episodes_stats.jsonl", ds->root);
        if (vla_read_file(p2, &text, &len) == VLA_OK) {
            st = aggregate_episode_stats(ds, p2, text, len);
            free(text);
            path[0] = 0;
        }
    }
    if (st == VLA_OK && path[0] && vla_path_exists(path)) {
        json_t *sj;
        st = vla_json_load_file(path, &sj);
        if (st == VLA_OK) st = load_stats_object(ds, path, sj);
        json_decref(sj);
    }
    if (st != VLA_OK) {
        if (!problems) return st;
        vla_lr_problem(problems, vla_lr_rel(ds, path[0] ? path : "meta/episodes_stats.jsonl"), "%s", vla_error_message());
    }
    return VLA_OK;
}

/* lerobot_select.c — partial datasets: an episode selection applied to the
 * episode index (LeRobot's --dataset.episodes), the presence of each
 * episode's data file, and the message that turns a partial download into
 * something a user can act on (see "PARTIAL DATASETS" in lerobot.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "data/lerobot_internal.h"

#define MAX_SELECTED ((int64_t)1 << 20) /* a million episodes: more than any dataset has */

vla_status vla_lerobot_parse_episodes(const char *spec, int64_t **episodes, int64_t *n) {
    *episodes = NULL;
    *n = 0;
    int64_t cap = 16, k = 0;
    int64_t *e = malloc((size_t)cap * sizeof *e);
    if (!e) return vla_error(VLA_ERR_NOMEM, "out of memory");
    const char *p = spec;
    while (*p) {
        while (*p == ' ' || *p == '[' || *p == ']' || *p == ',') p++;
        if (!*p) break;
        char *end;
        if (!isdigit((unsigned char)*p)) goto bad;
        long long a = strtoll(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            if (!isdigit((unsigned char)p[1])) goto bad;
            b = strtoll(p + 1, &end, 10);
            p = end;
        }
        if (a < 0 || b < a || b >= ((long long)1 << 40) || b - a >= MAX_SELECTED || k + (b - a + 1) > MAX_SELECTED)
            goto bad; /* (b < 2^40 keeps v++ below from overflowing) */
        for (long long v = a; v <= b; v++) {
            if (k == cap) {
                cap *= 2;
                int64_t *g = realloc(e, (size_t)cap * sizeof *g);
                if (!g) {
                    free(e);
                    return vla_error(VLA_ERR_NOMEM, "out of memory");
                }
                e = g;
            }
            e[k++] = v;
        }
        if (*p && *p != ',' && *p != ' ' && *p != ']') goto bad;
    }
    if (k == 0) goto bad;
    *episodes = e;
    *n = k;
    return VLA_OK;
bad:
    free(e);
    return vla_error(VLA_ERR_INVALID_ARG, "--dataset.episodes='%s': expected episode indices like 0,3,7 or 2-5 or [1, 2]",
                     spec);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

vla_status vla_lr_apply_selection(vla_lerobot *ds, const int64_t *episodes, int64_t n) {
    int64_t *want = malloc((size_t)(n > 0 ? n : 1) * sizeof *want);
    if (!want) return vla_error(VLA_ERR_NOMEM, "out of memory");
    memcpy(want, episodes, (size_t)n * sizeof *want);
    if (n > 1) qsort(want, (size_t)n, sizeof *want, cmp_i64);
    vla_status st = VLA_OK;
    for (int64_t i = 1; i < n && st == VLA_OK; i++)
        if (want[i] == want[i - 1])
            st = vla_error(VLA_ERR_INVALID_ARG, "--dataset.episodes lists episode %lld twice", (long long)want[i]);
    /* both lists are in episode_index order: one merge keeps the wanted ones */
    int64_t kept = 0, w = 0, row = 0;
    for (int64_t e = 0; e < ds->n_episodes && st == VLA_OK; e++) {
        vla_lr_episode *ep = &ds->episodes[e];
        while (w < n && want[w] < ep->episode_index) {
            st = vla_error(VLA_ERR_NOT_FOUND, "%s: --dataset.episodes: episode %lld is not in the dataset (%lld episodes "
                           "listed, %lld..%lld)", ds->root, (long long)want[w], (long long)ds->n_episodes,
                           (long long)ds->episodes[0].episode_index,
                           (long long)ds->episodes[ds->n_episodes - 1].episode_index);
            break;
        }
        if (st != VLA_OK) break;
        if (w < n && want[w] == ep->episode_index) {
            w++;
            vla_lr_episode keep = *ep;
            keep.index_from = ep->from;
            keep.to = row + ep->length;
            keep.from = row;
            row = keep.to;
            ds->episodes[e] = ds->episodes[kept]; /* swap: what is dropped is still freed by close */
            ds->episodes[kept++] = keep;
        }
    }
    if (st == VLA_OK && w < n)
        st = vla_error(VLA_ERR_NOT_FOUND, "%s: --dataset.episodes: episode %lld is not in the dataset (%lld episodes listed)",
                       ds->root, (long long)want[w], (long long)ds->n_episodes);
    free(want);
    if (st != VLA_OK) return st;
    ds->n_selected_dropped = ds->n_episodes - kept;
    ds->n_episodes = kept;
    ds->selected = true;
    return VLA_OK;
}

/* Append episode run [a, b] to a "0-2,5" list. */
static void list_run(char *list, size_t cap, size_t *k, int64_t a, int64_t b) {
    if (!list || a < 0 || *k >= cap) return;
    int m = a == b ? snprintf(list + *k, cap - *k, "%s%lld", *k ? "," : "", (long long)a)
                   : snprintf(list + *k, cap - *k, "%s%lld-%lld", *k ? "," : "", (long long)a, (long long)b);
    *k += m > 0 ? (size_t)m : 0;
}

int64_t vla_lerobot_presence(const vla_lerobot *ds, int64_t *first_missing, char *list, size_t cap) {
    int64_t present = 0, run_a = -1, run_b = -1;
    size_t k = 0;
    if (list && cap) list[0] = 0;
    *first_missing = -1;
    char path[2048], prev[2048] = "";
    bool prev_ok = false;
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        bool ok = vla_lerobot_data_file(ds, e, path, sizeof path) == VLA_OK;
        if (ok && strcmp(path, prev) != 0) { /* v3.0: many episodes share a file; stat it once */
            snprintf(prev, sizeof prev, "%s", path);
            prev_ok = vla_path_exists(path);
        }
        ok = ok && prev_ok;
        int64_t idx = ds->episodes[e].episode_index;
        if (!ok) {
            if (*first_missing < 0) *first_missing = idx;
            continue;
        }
        present++;
        if (run_b >= 0 && idx == run_b + 1) {
            run_b = idx;
            continue;
        }
        list_run(list, cap, &k, run_a, run_b);
        run_a = run_b = idx;
    }
    list_run(list, cap, &k, run_a, run_b);
    vla_error_clear();
    return present;
}

vla_status vla_lr_check_present(const vla_lerobot *ds) {
    int64_t first_missing;
    char list[256];
    int64_t present = vla_lerobot_presence(ds, &first_missing, list, sizeof list);
    if (present == ds->n_episodes) return VLA_OK;
    int64_t e = 0;
    while (e < ds->n_episodes && ds->episodes[e].episode_index != first_missing) e++;
    char path[2048] = "";
    vla_lerobot_data_file(ds, e, path, sizeof path);
    vla_error_clear();
    if (present == 0)
        return vla_error(VLA_ERR_NOT_FOUND, "%s: data file is missing (episode %lld): none of the %lld episodes' data "
                         "files is present", path, (long long)first_missing, (long long)ds->n_episodes);
    bool cut = strlen(list) >= sizeof list - 1;
    return vla_error(VLA_ERR_NOT_FOUND, "%s: %lld of %lld %sepisodes have no data file (first: episode %lld, %s): a "
                     "partial download? Download them, or use the %lld present ones with --dataset.episodes=%s%s",
                     ds->root, (long long)(ds->n_episodes - present), (long long)ds->n_episodes,
                     ds->selected ? "selected " : "", (long long)first_missing, path, (long long)present, list,
                     cut ? "…" : "");
}

int64_t vla_lerobot_row_of_index(const vla_lerobot *ds, int64_t index) {
    int64_t lo = 0, hi = ds->n_episodes - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        const vla_lr_episode *e = &ds->episodes[mid];
        if (index < e->index_from) hi = mid - 1;
        else if (index >= e->index_from + (e->to - e->from)) lo = mid + 1;
        else return e->from + (index - e->index_from);
    }
    return -1;
}

/* loader.c — sample assembly, packing and background prefetch of training
 * batches (see loader.h). Job j goes to slot j % depth; workers claim jobs
 * in order (asking the index source under the lock, so the source sees a
 * sequential caller) and build them in parallel; the consumer takes them in
 * order. A slot is reused only after the consumer released it, so at most
 * `depth` batches exist at once. */
#include "train/loader.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/rng.h"
#include "base/timer.h"

#define MAX_CAMS 8
#define MAX_SKEYS 8
#define MAX_OBS_STEPS 64

enum { SLOT_FREE, SLOT_BUILDING, SLOT_READY };

typedef struct {
    vla_loader_batch pub; /* first: release maps the public pointer back */
    int state;
    vla_status st;
    char err[1024];
    int64_t n; /* samples */
    int32_t *cu_seqlens, *cu_images, *positions, *groups, *token_ids, *real_action_dim, *embodiment;
    uint8_t *roles, *is_pad;
    float *images, *state_buf, *actions;
    uint64_t *keys;
    int64_t *rows;
} slot;

/* One dataset of the loader (a mixture has several; a plain run one): its
 * features, cameras and normalisers, and its first row in the global row
 * space the index source speaks (dataset d's row r is row0 + r). */
typedef struct {
    const vla_lerobot *ds;
    int32_t embodiment;
    int64_t row0;
    const vla_lr_feature *fsk[MAX_SKEYS], *faction; /* state features, concatenated in order */
    const vla_lr_feature *fref; /* relative actions: observation.state, subtracted from the chunk */
    int64_t fw, sw, aw; /* one frame's state width (the features side by side); sw = fw · K; action width */
    int ncam, cams[MAX_CAMS];
    double tol_s;
    vla_normalizer ns, na;
} source;

struct vla_loader {
    vla_loader_opts o;
    const char *action_key;
    source src[VLA_LOADER_MAX_DATASETS];
    int nsrc;
    int nsk, K;     /* state features (the same keys in every dataset); frames of history (n_obs_steps) */
    char state_keys[512];
    int64_t n_rows; /* all datasets together */
    int64_t sw_max, aw_max; /* the widest dataset's state and action (build's scratch) */
    int64_t S_dim, A_dim, H, img;
    bool per_step;  /* action statistics per step of the chunk (opts.action_stats_per_step) */
    int ncam_max;
    int64_t max_text, max_tok; /* text tokens; the longest sample's layout */
    int64_t tok_cap;            /* tokens a job may hold */
    int depth;
    slot *slots;
    slot sync; /* vla_loader_build */
    pthread_t *threads;
    int nthreads;
    pthread_mutex_t mu;
    pthread_cond_t cv_ready, cv_free;
    int64_t next_job, next_consume;
    bool stop, started;
    vla_lr_reader *reader0[VLA_LOADER_MAX_DATASETS]; /* caller-thread readers (0 workers, build) */
};

/* ---- normalisers ------------------------------------------------------------ */

vla_status vla_norm_from_stats(const vla_lerobot *ds, const char *key, vla_norm_mode mode, vla_normalizer *n) {
    const vla_lr_feature *f = vla_lerobot_feature(ds, key);
    if (!f) return vla_error(VLA_ERR_NOT_FOUND, "%s: dataset has no feature '%s'", ds->root, key);
    if (mode == VLA_NORM_IDENTITY) return vla_normalizer_init(n, mode, VLA_NORM_EPS_LEROBOT, f->width, NULL, NULL, 0);
    const vla_lr_stats *s = vla_lerobot_stats(ds, key);
    if (!s)
        return vla_error(VLA_ERR_NOT_FOUND, "%s/meta/stats.json: no statistics for '%s' (needed for %s normalisation)",
                         ds->root, key, vla_norm_mode_name(mode));
    if (s->n != f->width)
        return vla_error(VLA_ERR_FORMAT, "%s/meta/stats.json: '%s' has %d values per statistic, feature width %lld",
                         ds->root, key, s->n, (long long)f->width);
    if (mode == VLA_NORM_QUANTILES && (!s->q01 || !s->q99)) {
        VLA_WARN("%s: stats of '%s' have no q01/q99; normalising with min/max instead of quantiles", ds->root, key);
        mode = VLA_NORM_MIN_MAX;
    }
    const double *a = mode == VLA_NORM_MEAN_STD ? s->mean : mode == VLA_NORM_MIN_MAX ? s->min : s->q01;
    const double *b = mode == VLA_NORM_MEAN_STD ? s->std : mode == VLA_NORM_MIN_MAX ? s->max : s->q99;
    if (!a || !b)
        return vla_error(VLA_ERR_NOT_FOUND, "%s/meta/stats.json: '%s' lacks the statistics of %s normalisation",
                         ds->root, key, vla_norm_mode_name(mode));
    float *fa = malloc((size_t)s->n * sizeof *fa), *fb = malloc((size_t)s->n * sizeof *fb);
    if (!fa || !fb) {
        free(fa), free(fb);
        return vla_error(VLA_ERR_NOMEM, "loader: out of memory");
    }
    for (int i = 0; i < s->n; i++) fa[i] = (float)a[i], fb[i] = (float)b[i];
    vla_status st = vla_normalizer_init(n, mode, VLA_NORM_EPS_LEROBOT, s->n, fa, fb, 0);
    free(fa), free(fb);
    if (st != VLA_OK) return vla_error_context(st, "%s: statistics of '%s'", ds->root, key);
    return VLA_OK;
}


/* ---- slots -------------------------------------------------------------------- */

static void slot_free(slot *s) {
    free(s->cu_seqlens), free(s->cu_images), free(s->positions), free(s->groups), free(s->token_ids);
    free(s->real_action_dim), free(s->embodiment), free(s->roles), free(s->is_pad), free(s->images), free(s->state_buf);
    free(s->actions), free(s->keys), free(s->rows);
    memset(s, 0, sizeof *s);
}

static vla_status slot_alloc(const vla_loader *L, slot *s) {
    int64_t B = L->o.batch_size, T = L->tok_cap;
    s->cu_seqlens = calloc((size_t)B + 1, sizeof(int32_t));
    s->cu_images = calloc((size_t)B + 1, sizeof(int32_t));
    s->positions = calloc((size_t)T, sizeof(int32_t));
    s->groups = calloc((size_t)T, sizeof(int32_t));
    s->token_ids = calloc((size_t)T, sizeof(int32_t));
    s->roles = calloc((size_t)T, 1);
    s->real_action_dim = calloc((size_t)B, sizeof(int32_t));
    s->embodiment = calloc((size_t)B, sizeof(int32_t));
    s->is_pad = calloc((size_t)(B * L->H), 1);
    s->images = calloc((size_t)(B * L->ncam_max * 3 * L->img * L->img) + 1, sizeof(float));
    s->state_buf = calloc((size_t)(B * L->S_dim), sizeof(float));
    s->actions = calloc((size_t)(B * L->H * L->A_dim), sizeof(float));
    s->keys = calloc((size_t)B, sizeof(uint64_t));
    s->rows = calloc((size_t)B, sizeof(int64_t));
    if (!s->cu_seqlens || !s->cu_images || !s->positions || !s->groups || !s->token_ids || !s->roles ||
        !s->real_action_dim || !s->embodiment || !s->is_pad || !s->images || !s->state_buf || !s->actions || !s->keys || !s->rows) {
        slot_free(s);
        return vla_error(VLA_ERR_NOMEM, "loader: out of memory for a batch of %lld samples", (long long)B);
    }
    return VLA_OK;
}

/* The dataset holding global row `row` (sources are in row order). */
static const source *source_of(const vla_loader *L, int64_t row) {
    int d = 0;
    while (d + 1 < L->nsrc && row >= L->src[d + 1].row0) d++;
    return &L->src[d];
}

/* The state of local row `row` of a dataset: its state features side by
 * side, as eval builds it from the env, for each of the frames t−K+1..t
 * (oldest first, clamped to the episode's first row), normalised: sw floats. */
static void assemble_state(const vla_loader *L, const source *src, int64_t row, float *out) {
    int hoff[MAX_OBS_STEPS];
    int64_t hrows[MAX_OBS_STEPS];
    for (int f = 0; f < L->K; f++) hoff[f] = f - (L->K - 1);
    vla_lerobot_window_rows(src->ds, row, hoff, L->K, hrows, NULL);
    for (int f = 0; f < L->K; f++)
        for (int k = 0, off = 0; k < L->nsk; off += (int)src->fsk[k]->width, k++)
            memcpy(out + f * src->fw + off, src->fsk[k]->values + hrows[f] * src->fsk[k]->width,
                   (size_t)src->fsk[k]->width * sizeof(float));
    vla_normalize(&src->ns, out, out, 1);
}

/* The prompt tokens of local row `row` (its task, and the normalised state
 * `state` for a policy that writes it into the prompt). */
static vla_status prompt_tokens(const vla_loader *L, const source *src, int64_t row, const float *state, int32_t *ids,
                                int64_t *ntext) {
    const vla_lerobot *ds = src->ds;
    int64_t tidx = ds->task_index ? ds->task_index[row] : 0;
    const char *task = (tidx >= 0 && tidx < ds->n_tasks) ? ds->tasks[tidx] : "";
    return vla_policy_tokenize(L->o.policy, task, state, src->sw, (int32_t)src->ncam, ids, L->max_text, ntext);
}

vla_status vla_loader_sample_tokens(const vla_loader *L, int64_t row, int64_t *tokens) {
    if (row < 0 || row >= L->n_rows)
        return vla_error(VLA_ERR_INVALID_ARG, "loader: row %lld out of range", (long long)row);
    const source *src = source_of(L, row);
    float *st = malloc((size_t)(src->sw + 1) * sizeof *st);
    int32_t *ids = malloc((size_t)(L->max_text + 1) * sizeof *ids);
    vla_status s = VLA_OK;
    int64_t ntext = 0;
    if (!st || !ids) s = vla_error(VLA_ERR_NOMEM, "loader: out of memory");
    if (s == VLA_OK) {
        assemble_state(L, src, row - src->row0, st);
        s = prompt_tokens(L, src, row - src->row0, st, ids, &ntext);
    }
    free(st), free(ids);
    if (s == VLA_OK)
        *tokens = vla_policy_sample_layout(L->o.policy, (int32_t)src->ncam, NULL, (int32_t)ntext, NULL, NULL, NULL);
    return s;
}

void vla_loader_shift_offset(uint64_t seed, uint64_t key, int camera, int pad, int *dy, int *dx) {
    /* a stream of its own per camera, so the brightness/contrast draws (and every run without a shift) stay as
     * they were, and one camera's draws never depend on how many another took */
    vla_rng r = vla_rng_stream((seed ^ 0x73686674ULL) + (uint64_t)camera * 0x9E3779B97F4A7C15ULL, key);
    *dy = (int)vla_rng_int(&r, 0, 2 * (int64_t)pad + 1);
    *dx = (int)vla_rng_int(&r, 0, 2 * (int64_t)pad + 1);
}

static int clamp_index(int v, int n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }

void vla_loader_shift_rgb8(const uint8_t *in, int h, int w, int pad, int dy, int dx, uint8_t *out) {
    for (int y = 0; y < h; y++) {
        const uint8_t *src_row = in + (size_t)clamp_index(y + dy - pad, h) * (size_t)w * 3;
        for (int x = 0; x < w; x++) memcpy(out + ((size_t)y * w + x) * 3, src_row + (size_t)clamp_index(x + dx - pad, w) * 3, 3);
    }
}

/* Assemble samples 0..n-1 of a slot whose rows/keys are set; readers[d]
 * reads dataset d's frames. */
static vla_status build(vla_loader *L, slot *s, vla_lr_reader *const *readers) {
    double t0 = vla_now_s();
    int64_t n = s->n, H = L->H, img = L->img, plane = img * img;
    int offsets[1024];
    float *st_tmp = malloc((size_t)(L->sw_max + 1) * sizeof(float));
    float *act_tmp = malloc((size_t)(H * L->aw_max + 1) * sizeof(float));
    int32_t *ids = malloc((size_t)(L->max_text + 1) * sizeof(int32_t));
    uint8_t *rgb = malloc((size_t)(plane * 3 + 1));
    uint8_t *shifted = L->o.augment_shift > 0 ? malloc((size_t)(plane * 3 + 1)) : NULL;
    vla_status st = VLA_OK;
    if (!st_tmp || !act_tmp || !ids || !rgb || (L->o.augment_shift > 0 && !shifted)) {
        st = vla_error(VLA_ERR_NOMEM, "loader: out of memory");
        goto done;
    }
    for (int64_t k = 0; k < H; k++) offsets[k] = (int)k;
    int64_t T = 0;
    int32_t nimg = 0;
    s->cu_seqlens[0] = 0, s->cu_images[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (s->rows[i] < 0 || s->rows[i] >= L->n_rows) {
            st = vla_error(VLA_ERR_INVALID_ARG, "loader: row %lld out of range", (long long)s->rows[i]);
            goto done;
        }
        const source *src = source_of(L, s->rows[i]);
        const vla_lerobot *ds = src->ds;
        int64_t row = s->rows[i] - src->row0;
        assemble_state(L, src, row, st_tmp);
        float *sd = s->state_buf + i * L->S_dim;
        memset(sd, 0, (size_t)L->S_dim * sizeof(float));
        memcpy(sd, st_tmp, (size_t)src->sw * sizeof(float));
        /* action chunk, zero-padded to the policy's width; the padded dims are
         * out of the loss (real_action_dim) */
        st = vla_lerobot_window(ds, L->action_key, row, offsets, (int)H, act_tmp, s->is_pad + i * H);
        if (st != VLA_OK) goto done;
        if (src->fref)
            for (int64_t k = 0; k < H; k++)
                for (int64_t d = 0; d < src->aw; d++) act_tmp[k * src->aw + d] -= src->fref->values[row * src->aw + d];
        vla_normalize_chunk(&src->na, act_tmp, H, src->aw, src->aw);
        float *ad = s->actions + i * H * L->A_dim;
        memset(ad, 0, (size_t)(H * L->A_dim) * sizeof(float));
        for (int64_t k = 0; k < H; k++)
            memcpy(ad + k * L->A_dim, act_tmp + k * src->aw, (size_t)src->aw * sizeof(float));
        s->real_action_dim[i] = (int32_t)src->aw;
        s->embodiment[i] = src->embodiment;
        /* images */
        vla_rng r = vla_rng_stream(L->o.seed ^ 0x6175676dULL, s->keys[i]);
        float gain = 1.0f, bias = 0.0f;
        if (L->o.augment) {
            gain = 0.9f + 0.2f * vla_rng_uniform(&r);
            bias = -0.05f + 0.1f * vla_rng_uniform(&r);
        }
        for (int c = 0; c < src->ncam; c++) {
            st = vla_lr_reader_frame(readers[src - L->src], src->cams[c], row, (int)img, (int)img, src->tol_s, rgb);
            if (st != VLA_OK) goto done;
            const uint8_t *px = rgb;
            if (L->o.augment_shift > 0) {
                int dy, dx;
                vla_loader_shift_offset(L->o.seed, s->keys[i], c, L->o.augment_shift, &dy, &dx);
                vla_loader_shift_rgb8(rgb, (int)img, (int)img, L->o.augment_shift, dy, dx, shifted);
                px = shifted;
            }
            float *dst = s->images + (int64_t)(nimg + c) * 3 * plane;
            for (int64_t p = 0; p < plane; p++)
                for (int ch = 0; ch < 3; ch++) {
                    float v = px[p * 3 + ch] * (1.0f / 255.0f);
                    if (L->o.augment) v = fminf(1.0f, fmaxf(0.0f, v * gain + bias));
                    dst[ch * plane + p] = v;
                }
        }
        nimg += src->ncam;
        s->cu_images[i + 1] = nimg;
        /* prompt */
        int64_t ntext = 0;
        st = prompt_tokens(L, src, row, st_tmp, ids, &ntext);
        if (st != VLA_OK) goto done;
        int64_t len = vla_policy_sample_layout(L->o.policy, (int32_t)src->ncam, ids, (int32_t)ntext, s->roles + T,
                                               s->groups + T, s->positions + T);
        if (len < 0 || len > L->max_tok || T + len > L->tok_cap) {
            st = vla_error(VLA_ERR_INTERNAL, "loader: sample layout of %lld tokens exceeds %lld (or the job's %lld)",
                           (long long)len, (long long)L->max_tok, (long long)L->tok_cap);
            goto done;
        }
        for (int64_t k = 0, t = 0; k < len; k++) {
            s->token_ids[T + k] = 0;
            if (s->roles[T + k] == VLA_ROLE_TEXT) s->token_ids[T + k] = t < ntext ? ids[t++] : 0;
        }
        T += len;
        s->cu_seqlens[i + 1] = (int32_t)T;
    }
    vla_batch *b = &s->pub.batch;
    memset(b, 0, sizeof *b);
    b->n_samples = (int32_t)n;
    b->n_tokens = T;
    b->cu_seqlens = s->cu_seqlens;
    b->roles = s->roles;
    b->positions = s->positions;
    b->groups = s->groups;
    b->token_ids = s->token_ids;
    b->n_images = nimg;
    b->cu_images = s->cu_images;
    b->images = s->images;
    b->state = s->state_buf;
    b->actions = s->actions;
    b->action_is_pad = s->is_pad;
    b->real_action_dim = s->real_action_dim;
    b->embodiment = s->embodiment;
    b->seed = L->o.seed;
    b->sample_keys = s->keys;
    s->pub.rows = s->rows;
done:
    free(st_tmp), free(act_tmp), free(ids), free(rgb), free(shifted);
    s->pub.build_s = vla_now_s() - t0;
    return st;
}

/* A reader for each dataset that feeds cameras (NULL for the others). */
static vla_status open_readers(const vla_loader *L, vla_lr_reader **readers) {
    for (int d = 0; d < L->nsrc; d++)
        if (L->src[d].ncam > 0 && !readers[d]) VLA_TRY(vla_lr_reader_open(L->src[d].ds, &readers[d]));
    return VLA_OK;
}

static void close_readers(const vla_loader *L, vla_lr_reader **readers) {
    for (int d = 0; d < L->nsrc; d++) vla_lr_reader_close(readers[d]), readers[d] = NULL;
}

/* ---- threads ------------------------------------------------------------------ */

/* The source's rows and keys for job j into a slot (under the lock with workers). */
static vla_status call_source(vla_loader *L, int64_t j, slot *s) {
    bool last = true;
    s->n = 0;
    VLA_TRY(L->o.source(L->o.source_user, j, L->o.batch_size, s->rows, s->keys, &s->n, &last));
    if (s->n < 1 || s->n > L->o.batch_size)
        return vla_error(VLA_ERR_INTERNAL, "loader: the source gave job %lld %lld samples (1 to %lld)", (long long)j,
                         (long long)s->n, (long long)L->o.batch_size);
    s->pub.last_of_step = last;
    return VLA_OK;
}

static void *worker(void *arg) {
    vla_loader *L = arg;
    vla_lr_reader *readers[VLA_LOADER_MAX_DATASETS] = {0};
    vla_status rst = open_readers(L, readers);
    char rerr[1024] = "";
    if (rst != VLA_OK) snprintf(rerr, sizeof rerr, "%s", vla_error_message());
    pthread_mutex_lock(&L->mu);
    for (;;) {
        while (!L->stop && L->slots[L->next_job % L->depth].state != SLOT_FREE) pthread_cond_wait(&L->cv_free, &L->mu);
        if (L->stop) break;
        int64_t j = L->next_job++;
        slot *s = &L->slots[j % L->depth];
        s->state = SLOT_BUILDING;
        s->pub.job = j;
        vla_status st = call_source(L, j, s);
        if (st != VLA_OK) snprintf(s->err, sizeof s->err, "%s", vla_error_message());
        pthread_mutex_unlock(&L->mu);
        if (st == VLA_OK && rst != VLA_OK) {
            st = rst;
            snprintf(s->err, sizeof s->err, "%s", rerr);
        } else if (st == VLA_OK) {
            st = build(L, s, readers);
            if (st != VLA_OK) snprintf(s->err, sizeof s->err, "%s", vla_error_message());
        }
        pthread_mutex_lock(&L->mu);
        s->st = st;
        s->state = SLOT_READY;
        pthread_cond_broadcast(&L->cv_ready);
    }
    pthread_mutex_unlock(&L->mu);
    close_readers(L, readers);
    return NULL;
}

/* ---- public --------------------------------------------------------------- */

/* Split "a,b,c" into at most `max` trimmed keys of < 128 bytes in buf[]. */
static vla_status split_keys(const char *keys, char buf[][128], int max, int *n) {
    *n = 0;
    for (const char *p = keys; *p;) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        size_t len = strcspn(p, ",");
        while (len > 0 && p[len - 1] == ' ') len--;
        if (*n >= max) return vla_error(VLA_ERR_INVALID_ARG, "loader: more than %d keys in '%s'", max, keys);
        if (len >= 128) return vla_error(VLA_ERR_INVALID_ARG, "loader: key too long in '%s'", keys);
        memcpy(buf[*n], p, len);
        buf[(*n)++][len] = 0;
        p += len;
        while (*p && *p != ',') p++;
    }
    return VLA_OK;
}

/* The dataset's numeric features (cameras: its camera keys), ", "-separated, for messages. */
static const char *feature_names(const vla_lerobot *ds, bool cameras, char *buf, size_t cap) {
    buf[0] = 0;
    for (int i = 0; i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        if (cameras ? f->camera < 0 : !f->values) continue;
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", f->key);
    }
    return buf[0] ? buf : "none";
}

vla_status vla_loader_keys_width(const vla_lerobot *ds, const char *keys, int64_t *width) {
    char k[MAX_SKEYS][128];
    int n = 0;
    *width = 0;
    VLA_TRY(split_keys(keys ? keys : "observation.state", k, MAX_SKEYS, &n));
    if (n == 0) return vla_error(VLA_ERR_INVALID_ARG, "loader: no state keys given");
    for (int i = 0; i < n; i++) {
        const vla_lr_feature *f = vla_lerobot_feature(ds, k[i]);
        if (!f || !f->values) {
            char names[2048];
            return vla_error(VLA_ERR_NOT_FOUND, "%s: dataset has no numeric feature '%s' (state keys '%s'); its numeric "
                             "features are: %s", ds->root, k[i], keys, feature_names(ds, false, names, sizeof names));
        }
        *width += f->width;
    }
    return VLA_OK;
}

/* One normaliser over the concatenated state features, each with its own
 * statistics in one mode (QUANTILES falls back to MIN_MAX for all of them
 * when any feature lacks quantiles, so the modes agree), repeated for each
 * of the K frames of history. */
/* A given normaliser in place of the one built from the dataset (same width). */
static vla_status replace_norm(vla_normalizer *n, const vla_normalizer *given, const char *what) {
    if (given->dim != n->dim)
        return vla_error(VLA_ERR_INVALID_ARG, "loader: the given %s normaliser has %lld dims, the data %lld", what,
                         (long long)given->dim, (long long)n->dim);
    vla_normalizer copy;
    VLA_TRY(vla_normalizer_init(&copy, given->mode, given->style, given->dim, given->lo, given->hi, given->eps));
    vla_normalizer_free(n);
    *n = copy;
    return VLA_OK;
}

static vla_status state_norm(const vla_loader *L, source *src, vla_norm_mode mode) {
    const vla_lerobot *ds = src->ds;
    vla_normalizer parts[MAX_SKEYS];
    memset(parts, 0, sizeof parts);
    vla_status st = VLA_OK;
    if (mode == VLA_NORM_QUANTILES)
        for (int k = 0; k < L->nsk; k++) {
            const vla_lr_stats *s = vla_lerobot_stats(ds, src->fsk[k]->key);
            if (s && (!s->q01 || !s->q99)) mode = VLA_NORM_MIN_MAX;
        }
    for (int k = 0; k < L->nsk && st == VLA_OK; k++) st = vla_norm_from_stats(ds, src->fsk[k]->key, mode, &parts[k]);
    float *a = calloc((size_t)src->sw + 1, sizeof *a), *b = calloc((size_t)src->sw + 1, sizeof *b);
    if (st == VLA_OK && (!a || !b)) st = vla_error(VLA_ERR_NOMEM, "loader: out of memory");
    if (st == VLA_OK) {
        for (int f = 0; f < L->K; f++)
            for (int k = 0, off = (int)(f * src->fw); k < L->nsk; off += (int)parts[k].dim, k++)
                for (int64_t i = 0; parts[k].lo && i < parts[k].dim; i++)
                    a[off + i] = parts[k].lo[i], b[off + i] = parts[k].hi[i];
        st = vla_normalizer_init(&src->ns, parts[0].mode, parts[0].style, src->sw, mode == VLA_NORM_IDENTITY ? NULL : a,
                                 mode == VLA_NORM_IDENTITY ? NULL : b, parts[0].eps);
    }
    for (int k = 0; k < L->nsk; k++) vla_normalizer_free(&parts[k]);
    free(a), free(b);
    return st;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The action normaliser from the data itself: statistics of action[t+h]
 * (− observation.state[t] for relative actions) over every row t and
 * h = 0..H−1, clamped to the episode as the chunks the loader builds. Pooled
 * over h (aw channels), or per step (H·aw channels, channel h·aw + d: the
 * statistics of step h alone). */
static vla_status chunk_action_norm(const vla_loader *L, source *src, vla_norm_mode mode) {
    const vla_lerobot *ds = src->ds;
    int64_t aw = src->aw, steps = L->per_step ? L->H : 1, per = L->per_step ? 1 : L->H;
    int64_t n = ds->n_rows * per, channels = steps * aw;
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v), *a = calloc((size_t)channels, sizeof *a),
          *b = calloc((size_t)channels, sizeof *b);
    int *offsets = malloc((size_t)L->H * sizeof *offsets);
    int64_t *rows = malloc((size_t)L->H * sizeof *rows);
    vla_status st = VLA_OK;
    if (!v || !a || !b || !offsets || !rows) {
        st = vla_error(VLA_ERR_NOMEM, "loader: out of memory");
        goto done;
    }
    for (int64_t k = 0; k < L->H; k++) offsets[k] = (int)k;
    for (int64_t c = 0; c < channels; c++) {
        int64_t d = c % aw, h0 = L->per_step ? c / aw : 0;
        double sum = 0, sum2 = 0;
        for (int64_t r = 0, m = 0; r < ds->n_rows; r++) {
            /* only the steps this channel pools (one when per step) */
            vla_lerobot_window_rows(ds, r, offsets + h0, (int)per, rows, NULL);
            float ref = src->fref ? src->fref->values[r * aw + d] : 0.0f;
            for (int64_t k = 0; k < per; k++, m++) {
                v[m] = src->faction->values[rows[k] * aw + d] - ref;
                sum += v[m], sum2 += (double)v[m] * v[m];
            }
        }
        if (mode == VLA_NORM_MEAN_STD) {
            double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
            a[c] = (float)mean, b[c] = (float)sqrt(var > 0 ? var : 0);
        } else {
            qsort(v, (size_t)n, sizeof *v, cmp_float);
            bool q = mode == VLA_NORM_QUANTILES;
            a[c] = q ? v[(int64_t)(0.01 * (double)(n - 1))] : v[0];
            b[c] = q ? v[(int64_t)(0.99 * (double)(n - 1))] : v[n - 1];
        }
    }
    st = vla_normalizer_init(&src->na, mode, VLA_NORM_EPS_LEROBOT, channels, mode == VLA_NORM_IDENTITY ? NULL : a,
                             mode == VLA_NORM_IDENTITY ? NULL : b, 0);
done:
    free(v), free(a), free(b), free(offsets), free(rows);
    return st;
}

/* One dataset's features, cameras and normalisers, checked against the
 * policy (L's keys, K, dims and image size are set). */
static vla_status source_init(const vla_loader *L, source *src, char keys[][128]) {
    const vla_loader_opts *opts = &L->o;
    const vla_lerobot *ds = src->ds;
    const vla_policy_config *cfg = &opts->policy->cfg;
    if (ds->n_nonfinite > 0)
        return vla_error(VLA_ERR_NUMERIC,
                         "%s: dataset holds %lld non-finite (NaN/Inf) values in its numeric features; refusing to "
                         "train on it (run `vla dataset validate %s` to list them)",
                         ds->root, (long long)ds->n_nonfinite, ds->root);
    src->fw = 0;
    for (int i = 0; i < L->nsk; i++) {
        src->fsk[i] = vla_lerobot_feature(ds, keys[i]);
        if (!src->fsk[i] || !src->fsk[i]->values) {
            char names[2048];
            return vla_error(VLA_ERR_NOT_FOUND, "%s: dataset has no numeric feature '%s' (state keys '%s'); its numeric "
                             "features are: %s", ds->root, keys[i], L->state_keys,
                             feature_names(ds, false, names, sizeof names));
        }
        src->fw += src->fsk[i]->width;
    }
    src->sw = src->fw * L->K;
    src->faction = vla_lerobot_feature(ds, L->action_key);
    if (!src->faction || !src->faction->values)
        return vla_error(VLA_ERR_NOT_FOUND, "%s: dataset needs a numeric feature '%s'", ds->root, L->action_key);
    src->aw = src->faction->width;
    if (src->sw > L->S_dim || src->aw > L->A_dim)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "%s: '%s' has %lld dims and '%s' %lld, but policy '%s' takes at most %lld state and %lld "
                         "action dims",
                         ds->root, L->state_keys, (long long)src->sw, L->action_key, (long long)src->aw, cfg->name,
                         (long long)L->S_dim, (long long)L->A_dim);
    if (opts->image_keys) {
        char k[MAX_CAMS][128];
        VLA_TRY(split_keys(opts->image_keys, k, MAX_CAMS, &src->ncam));
        for (int c = 0; c < src->ncam; c++)
            if ((src->cams[c] = vla_lerobot_camera(ds, k[c])) < 0) {
                char names[2048];
                return vla_error(VLA_ERR_NOT_FOUND, "%s: dataset has no camera '%s' (image keys '%s'); its cameras "
                                 "are: %s", ds->root, k[c], opts->image_keys, feature_names(ds, true, names, sizeof names));
            }
        if (src->ncam > cfg->vision.cameras)
            return vla_error(VLA_ERR_INVALID_ARG, "loader: %d image keys but policy '%s' takes %lld cameras", src->ncam,
                             cfg->name, (long long)cfg->vision.cameras);
    } else {
        src->ncam = (int)(ds->n_cameras < cfg->vision.cameras ? ds->n_cameras : cfg->vision.cameras);
        if (src->ncam > MAX_CAMS) src->ncam = MAX_CAMS;
        for (int c = 0; c < src->ncam; c++) src->cams[c] = c;
    }
    for (int c = 0; ds->shards && c < src->ncam; c++) { /* shards hold frames at one size: say so now, not at the first batch */
        const vla_lr_feature *f = &ds->features[ds->camera_feature[src->cams[c]]];
        if (f->height != L->img || f->width_px != L->img)
            return vla_error(VLA_ERR_INVALID_ARG,
                             "%s: camera '%s' is stored at %dx%d in these shards but policy '%s' takes %lldx%lld; "
                             "prepare them with --image_size=%lld,%lld",
                             ds->root, f->key, f->width_px, f->height, cfg->name, (long long)L->img, (long long)L->img,
                             (long long)L->img, (long long)L->img);
    }
    src->tol_s = opts->tol_s > 0 ? opts->tol_s : 0.5 / (ds->fps > 0 ? ds->fps : 10);
    VLA_TRY(state_norm(L, src, cfg->norm_state));
    if (opts->relative_actions) {
        src->fref = vla_lerobot_feature(ds, "observation.state");
        if (!src->fref || !src->fref->values || src->fref->width != src->aw)
            return vla_error(VLA_ERR_INVALID_ARG,
                             "%s: relative actions need a numeric observation.state as wide as '%s' (%lld dims)",
                             ds->root, L->action_key, (long long)src->aw);
    }
    if (opts->relative_actions || L->per_step) return chunk_action_norm(L, src, cfg->norm_action);
    return vla_norm_from_stats(ds, L->action_key, cfg->norm_action, &src->na);
}

vla_status vla_loader_create(const vla_loader_opts *opts, vla_loader **out) {
    *out = NULL;
    const vla_policy_config *cfg = &opts->policy->cfg;
    const vla_lerobot *const *dss = opts->n_datasets > 0 ? opts->datasets : &opts->ds;
    int nds = opts->n_datasets > 0 ? opts->n_datasets : 1;
    if (opts->batch_size < 1) return vla_error(VLA_ERR_INVALID_ARG, "loader: batch size must be at least 1");
    if (opts->augment_shift < 0 || opts->augment_shift > cfg->vision.image_size / 2)
        return vla_error(VLA_ERR_INVALID_ARG, "loader: a random shift of %d pixels (0 to half the %lld-pixel image)",
                         opts->augment_shift, (long long)cfg->vision.image_size);
    if (nds > VLA_LOADER_MAX_DATASETS)
        return vla_error(VLA_ERR_INVALID_ARG, "loader: %d datasets (at most %d in a mixture)", nds,
                         VLA_LOADER_MAX_DATASETS);
    if (nds > 1 && (opts->fixed_state_norm || opts->fixed_action_norm))
        return vla_error(VLA_ERR_INVALID_ARG, "loader: given normalisers serve one dataset, not a mixture of %d", nds);
    if (opts->n_obs_steps > MAX_OBS_STEPS)
        return vla_error(VLA_ERR_INVALID_ARG, "loader: n_obs_steps %d exceeds %d", opts->n_obs_steps, MAX_OBS_STEPS);
    if (cfg->action.horizon > 1024)
        return vla_error(VLA_ERR_UNSUPPORTED, "loader: horizon %lld too long", (long long)cfg->action.horizon);
    vla_loader *L = calloc(1, sizeof *L);
    if (!L) return vla_error(VLA_ERR_NOMEM, "loader: out of memory");
    L->o = *opts;
    L->action_key = opts->action_key ? opts->action_key : "action";
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv_ready, NULL);
    pthread_cond_init(&L->cv_free, NULL);
    L->K = opts->n_obs_steps > 1 ? opts->n_obs_steps : 1;
    L->S_dim = cfg->action.state_dim, L->A_dim = cfg->action.action_dim, L->H = cfg->action.horizon;
    L->per_step = opts->action_stats_per_step;
    L->img = cfg->vision.image_size;
    char k[MAX_SKEYS][128];
    const char *keys = opts->state_keys ? opts->state_keys : opts->state_key ? opts->state_key : "observation.state";
    vla_status st = split_keys(keys, k, MAX_SKEYS, &L->nsk);
    if (st == VLA_OK && L->nsk == 0) st = vla_error(VLA_ERR_INVALID_ARG, "loader: no state keys given");
    if (st != VLA_OK) goto fail;
    for (int i = 0; i < L->nsk; i++) {
        size_t used = strlen(L->state_keys);
        snprintf(L->state_keys + used, sizeof L->state_keys - used, "%s%s", i ? "," : "", k[i]);
    }
    for (int d = 0; d < nds; d++) {
        source *src = &L->src[d];
        src->ds = dss[d];
        src->embodiment = opts->embodiments ? opts->embodiments[d] : d;
        src->row0 = L->n_rows;
        L->nsrc = d + 1; /* freed by vla_loader_free from here on */
        if ((st = source_init(L, src, k)) != VLA_OK) goto fail;
        L->n_rows += src->ds->n_rows;
        if (src->ncam > L->ncam_max) L->ncam_max = src->ncam;
        if (src->sw > L->sw_max) L->sw_max = src->sw;
        if (src->aw > L->aw_max) L->aw_max = src->aw;
    }
    if (opts->fixed_state_norm && (st = replace_norm(&L->src[0].ns, opts->fixed_state_norm, "state")) != VLA_OK)
        goto fail;
    if (opts->fixed_action_norm && (st = replace_norm(&L->src[0].na, opts->fixed_action_norm, "action")) != VLA_OK)
        goto fail;
    L->max_text = cfg->language.max_tokens > 0 ? cfg->language.max_tokens : 1;
    L->max_tok = vla_policy_sample_layout(opts->policy, L->ncam_max, NULL, (int32_t)L->max_text, NULL, NULL, NULL);
    if (L->max_tok <= 0) {
        st = vla_error(VLA_ERR_INTERNAL, "loader: policy layout gives %lld tokens", (long long)L->max_tok);
        goto fail;
    }
    L->tok_cap = opts->max_tokens > 0 ? (opts->max_tokens > L->max_tok ? opts->max_tokens : L->max_tok)
                                      : opts->batch_size * L->max_tok;
    L->nthreads = opts->num_workers > 0 ? opts->num_workers : 0;
    L->depth = opts->queue_depth > 0 ? opts->queue_depth : 2 * L->nthreads + 2;
    L->slots = calloc((size_t)L->depth, sizeof *L->slots);
    if (!L->slots) {
        st = vla_error(VLA_ERR_NOMEM, "loader: out of memory");
        goto fail;
    }
    for (int i = 0; i < L->depth; i++)
        if ((st = slot_alloc(L, &L->slots[i])) != VLA_OK) goto fail;
    if ((st = slot_alloc(L, &L->sync)) != VLA_OK) goto fail;
    *out = L;
    return VLA_OK;
fail:
    vla_loader_free(L);
    return st;
}

void vla_loader_free(vla_loader *L) {
    if (!L) return;
    if (L->started && L->nthreads > 0) {
        pthread_mutex_lock(&L->mu);
        L->stop = true;
        pthread_cond_broadcast(&L->cv_free);
        pthread_mutex_unlock(&L->mu);
        for (int i = 0; i < L->nthreads; i++) pthread_join(L->threads[i], NULL);
    }
    free(L->threads);
    for (int i = 0; L->slots && i < L->depth; i++) slot_free(&L->slots[i]);
    free(L->slots);
    slot_free(&L->sync);
    close_readers(L, L->reader0);
    for (int d = 0; d < L->nsrc; d++) vla_normalizer_free(&L->src[d].ns), vla_normalizer_free(&L->src[d].na);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->cv_ready);
    pthread_cond_destroy(&L->cv_free);
    free(L);
}

vla_status vla_loader_start(vla_loader *L) {
    if (L->started) return vla_error(VLA_ERR_INVALID_ARG, "loader: already started");
    if (!L->o.source) return vla_error(VLA_ERR_INVALID_ARG, "loader: no index source");
    L->started = true;
    L->next_job = L->next_consume = 0;
    if (L->nthreads == 0) return VLA_OK;
    L->threads = calloc((size_t)L->nthreads, sizeof *L->threads);
    if (!L->threads) return vla_error(VLA_ERR_NOMEM, "loader: out of memory");
    for (int i = 0; i < L->nthreads; i++)
        if (pthread_create(&L->threads[i], NULL, worker, L) != 0) {
            L->nthreads = i;
            return vla_error(VLA_ERR_INTERNAL, "loader: cannot start worker thread %d", i);
        }
    return VLA_OK;
}

vla_status vla_loader_next(vla_loader *L, vla_loader_batch **out, double *wait_s) {
    *out = NULL;
    double t0 = vla_now_s();
    if (!L->started) return vla_error(VLA_ERR_INVALID_ARG, "loader: not started");
    if (L->nthreads == 0) {
        slot *s = &L->slots[0];
        if (s->state != SLOT_FREE) return vla_error(VLA_ERR_INVALID_ARG, "loader: previous batch not released");
        int64_t j = L->next_job++;
        L->next_consume++;
        s->pub.job = j;
        VLA_TRY(call_source(L, j, s));
        VLA_TRY(open_readers(L, L->reader0));
        s->state = SLOT_BUILDING;
        vla_status st = build(L, s, L->reader0);
        if (st != VLA_OK) {
            s->state = SLOT_FREE;
            return st;
        }
        s->state = SLOT_READY;
        *out = &s->pub;
        if (wait_s) *wait_s = vla_now_s() - t0;
        return VLA_OK;
    }
    pthread_mutex_lock(&L->mu);
    int64_t j = L->next_consume;
    slot *s = &L->slots[j % L->depth];
    while (!(s->state == SLOT_READY && s->pub.job == j)) pthread_cond_wait(&L->cv_ready, &L->mu);
    L->next_consume++;
    vla_status st = s->st;
    pthread_mutex_unlock(&L->mu);
    if (wait_s) *wait_s = vla_now_s() - t0;
    if (st != VLA_OK) {
        vla_error(st, "%s", s->err);
        vla_loader_release(L, &s->pub);
        return st;
    }
    *out = &s->pub;
    return VLA_OK;
}

void vla_loader_release(vla_loader *L, vla_loader_batch *b) {
    if (!b) return;
    slot *s = (slot *)b;
    if (s == &L->sync) {
        s->state = SLOT_FREE;
        return;
    }
    pthread_mutex_lock(&L->mu);
    s->state = SLOT_FREE;
    pthread_cond_broadcast(&L->cv_free);
    pthread_mutex_unlock(&L->mu);
}

vla_status vla_loader_build(vla_loader *L, const int64_t *rows, const uint64_t *keys, int64_t n,
                            vla_loader_batch **out) {
    *out = NULL;
    if (n < 1 || n > L->o.batch_size)
        return vla_error(VLA_ERR_INVALID_ARG, "loader: %lld samples (batch size %lld)", (long long)n,
                         (long long)L->o.batch_size);
    slot *s = &L->sync;
    memcpy(s->rows, rows, (size_t)n * sizeof *rows);
    memcpy(s->keys, keys, (size_t)n * sizeof *keys);
    s->n = n;
    s->pub.last_of_step = true;
    VLA_TRY(open_readers(L, L->reader0));
    VLA_TRY(build(L, s, L->reader0));
    s->state = SLOT_READY;
    *out = &s->pub;
    return VLA_OK;
}

int64_t vla_loader_num_samples(const vla_loader *L) { return L->n_rows; }
const vla_normalizer *vla_loader_state_norm(const vla_loader *L) { return &L->src[0].ns; }
const vla_normalizer *vla_loader_action_norm(const vla_loader *L) { return &L->src[0].na; }
int64_t vla_loader_state_width(const vla_loader *L) { return L->src[0].sw; }
int vla_loader_n_obs_steps(const vla_loader *L) { return L->K; }
bool vla_loader_relative_actions(const vla_loader *L) { return L->src[0].fref != NULL; }
bool vla_loader_action_stats_per_step(const vla_loader *L) { return L->per_step; }
int64_t vla_loader_action_width(const vla_loader *L) { return L->src[0].aw; }
int vla_loader_n_cameras(const vla_loader *L) { return L->src[0].ncam; }
const char *vla_loader_state_keys(const vla_loader *L) { return L->state_keys; }
int vla_loader_n_datasets(const vla_loader *L) { return L->nsrc; }

void vla_loader_image_keys(const vla_loader *L, int d, char *out, size_t cap) {
    const source *s = &L->src[d];
    size_t used = 0;
    out[0] = 0;
    for (int c = 0; c < s->ncam && used < cap; c++) {
        int n = snprintf(out + used, cap - used, "%s%s", c ? "," : "", s->ds->features[s->ds->camera_feature[s->cams[c]]].key);
        if (n > 0) used += (size_t)n;
    }
}

vla_loader_dataset vla_loader_dataset_info(const vla_loader *L, int d) {
    const source *s = &L->src[d];
    return (vla_loader_dataset){.ds = s->ds, .embodiment = s->embodiment, .first_row = s->row0,
                                .state_width = s->sw, .action_width = s->aw, .cameras = s->ncam,
                                .state_norm = &s->ns, .action_norm = &s->na};
}

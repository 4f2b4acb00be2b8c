/* loader.h — training batches for a policy from a LeRobot dataset (in train/,
 * above policy/: it needs the policy's tokenizer and token layout, while
 * dataset I/O in data/ depends only on base and io): sample
 * assembly (state at t — the state features (state_keys, default
 * observation.state) side by side, each normalised with its own stats, as
 * eval rebuilds it from the env; with n_obs_steps K > 1 the frames t−K+1..t
 * of that vector, oldest first, clamped at the episode start —, the action chunk at offsets 0..horizon−1 with
 * is_pad, camera frames resized to the policy's image size as f32 [0,1]
 * NCHW, task → prompt tokens through the policy), normalisation with the
 * dataset's stats in the policy's modes, packing of a micro-batch into one
 * vla_batch, and background worker threads that fill a bounded queue of
 * ready batches ahead of the training step.
 *
 * Determinism: the caller's index source (the trainer wraps the distributed
 * sampler of distributed/sampler.h, a layer below this one) is called in job order,
 * one job = one micro-batch, and gives rows and global keys; a sample's content and its randomness (augmentation, and the
 * flow-matching key handed to the policy) depend only on (seed, its global
 * position in the sampler's stream), never on the worker count, the thread
 * that built it, or the rank count. So a resumed run (seek to the saved
 * sampler position) sees exactly the batches the uninterrupted one saw.
 *
 * Normalisation statistics come from the dataset's meta/stats.json (relative
 * actions: computed at create from every chunk of the dataset); a mode
 * the stats cannot serve (QUANTILES without q01/q99, v2.1) falls back to
 * MIN_MAX with a warning. The normalisers are exposed so a checkpoint can
 * store them and evaluation can rebuild them (policy/normalize.h: vla_norm_to_json,
 * vla_norm_from_json).
 *
 * Mixtures (issue 12): given several datasets, the loader holds each one's
 * features, cameras and normalisers (statistics stay per dataset), and the
 * index source speaks global rows: dataset d's row r is first_row(d) + r, in
 * the order given. Every dataset must have the state keys and the action
 * feature (widths may differ: state and action are zero-padded to the
 * policy's dims and real_action_dim keeps the padded action dims out of the
 * loss); cameras are each dataset's own (a sample sends only its dataset's);
 * each sample carries its dataset's embodiment id (GR00T's per-embodiment
 * encoders and decoders pick their slice by it). data/mixture.h turns
 * sampling weights into the global row each sampler index stands for. */
#ifndef VLA_TRAIN_LOADER_H
#define VLA_TRAIN_LOADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "data/lerobot.h"
#include "policy/normalize.h"
#include "policy/policy.h"

/* Rows and global keys of job `job` (0, 1, 2, … from start): *n samples,
 * 1 ≤ *n ≤ cap, and whether the job is the last micro-batch of its
 * optimizer step (a token-budget plan makes the count per step vary). Called
 * from one thread at a time, in job order. */
typedef vla_status (*vla_loader_source_fn)(void *user, int64_t job, int64_t cap, int64_t *rows, uint64_t *keys,
                                           int64_t *n, bool *last_of_step);

#define VLA_LOADER_MAX_DATASETS 16

typedef struct {
    const vla_lerobot *ds;     /* one dataset, or: */
    const vla_lerobot *const *datasets; /* a mixture of n_datasets (> 0), rows global in this order */
    int n_datasets;
    const int32_t *embodiments; /* [n_datasets] embodiment id of each dataset (NULL: 0, 1, 2, …) */
    const vla_policy *policy;  /* used for tokenize/sample_layout only (const, thread-safe) */
    int64_t batch_size;        /* samples per micro-batch on this rank (the most a job may hold) */
    int64_t max_tokens;        /* > 0: a job's samples may hold up to max(max_tokens, the longest sample) tokens
                                  (a token-budget plan); 0: batch_size × the longest sample */
    vla_loader_source_fn source;
    void *source_user;
    uint64_t seed;
    int num_workers;           /* background threads; 0 = assemble on the caller's thread */
    int queue_depth;           /* ready batches kept ahead (0: 2·workers + 2) */
    const char *state_key;     /* NULL: "observation.state" (ignored when state_keys is set) */
    const char *state_keys;    /* comma-separated numeric features concatenated in this order into the
                                  policy's state, each normalised with its own stats (NULL: state_key) */
    const char *image_keys;    /* comma-separated camera keys fed to the policy (NULL: the dataset's
                                  cameras in order, up to the policy's count; "": no images) */
    const char *action_key;    /* NULL: "action" */
    bool augment;              /* small random brightness/contrast per sample */
    int augment_shift;         /* > 0: random shift by up to this many pixels (at the policy's image size),
                                  as DrQ / Diffusion Policy train: each camera frame padded by N replicating
                                  its edge and cropped back at a random offset; one offset per sample and
                                  camera (cameras differ), drawn from the sample's key (vla_loader_shift_offset);
                                  0: off, the frames exactly as read */
    double tol_s;              /* frame timestamp tolerance (≤ 0: 1/(2·fps)) */
    int n_obs_steps;           /* frames of state history K (≤ 1: the current frame only): the state is the
                                  state keys' vector at rows t−K+1..t, oldest first, each clamped to the
                                  episode's first row (Diffusion Policy's n_obs_steps; eval rebuilds it) */
    bool relative_actions;     /* the chunk's actions minus observation.state at t (same width as the
                                  action: a position-controlled robot's current position), normalised with
                                  statistics of those differences over the dataset (openpi's delta
                                  actions); eval adds the current observation.state back */
    bool action_stats_per_step; /* normalise step h of the chunk with statistics of step h alone
                                  (H × action-width statistics, computed from the data) instead of
                                  statistics pooled over the chunk: relative actions grow with h, so
                                  pooled statistics squash the near steps, the ones executed first */
    /* Use these normalisers (copied) instead of the dataset's statistics: a warm start that
     * must see its inputs and targets scaled as its weights learnt them (`vla dagger`). Each
     * must have the width the loader builds; NULL: from the dataset. */
    const vla_normalizer *fixed_state_norm, *fixed_action_norm;
} vla_loader_opts;

/* One micro-batch, owned by the loader until vla_loader_release. */
typedef struct {
    vla_batch batch;
    int64_t job;                 /* sequence number since start */
    bool last_of_step;           /* the source's word: the step's last micro-batch */
    const int64_t *rows;         /* [S] dataset rows */
    double build_s;              /* worker seconds spent assembling it */
} vla_loader_batch;

typedef struct vla_loader vla_loader;

/* Validates the dataset against the policy (features present and finite,
 * widths fit the padded dims) and builds the normalisers. Does not start
 * threads. */
vla_status vla_loader_create(const vla_loader_opts *opts, vla_loader **out);
void vla_loader_free(vla_loader *L);

/* Start producing jobs 0, 1, 2, … from the source (workers start now). */
vla_status vla_loader_start(vla_loader *L);
/* The next micro-batch in order; *wait_s receives the seconds the caller was
 * blocked waiting for it. Errors of the worker that built it come back here. */
vla_status vla_loader_next(vla_loader *L, vla_loader_batch **out, double *wait_s);
void vla_loader_release(vla_loader *L, vla_loader_batch *b);

int64_t vla_loader_num_samples(const vla_loader *L); /* rows of all datasets together */
/* The accessors below describe dataset 0 (the only one outside a mixture). */
const vla_normalizer *vla_loader_state_norm(const vla_loader *L);
const vla_normalizer *vla_loader_action_norm(const vla_loader *L);
int64_t vla_loader_state_width(const vla_loader *L);  /* real state dims fed: frame width × n_obs_steps */
int vla_loader_n_obs_steps(const vla_loader *L);       /* K ≥ 1 */
bool vla_loader_relative_actions(const vla_loader *L);
bool vla_loader_action_stats_per_step(const vla_loader *L); /* action_norm has H × action-width channels */
int64_t vla_loader_action_width(const vla_loader *L);
int vla_loader_n_cameras(const vla_loader *L);         /* cameras fed to the policy */
/* The state features concatenated, comma-separated ("observation.state"). */
const char *vla_loader_state_keys(const vla_loader *L);

/* A mixture's datasets: how many, and what the loader made of each. */
typedef struct {
    const vla_lerobot *ds;
    int32_t embodiment;
    int64_t first_row;                /* its row 0 in the global row space */
    int64_t state_width, action_width; /* real dims (state: × n_obs_steps) */
    int cameras;                      /* images fed per sample */
    const vla_normalizer *state_norm, *action_norm;
} vla_loader_dataset;
int vla_loader_n_datasets(const vla_loader *L);
vla_loader_dataset vla_loader_dataset_info(const vla_loader *L, int d);
/* Dataset d's camera keys fed to the policy, in image-slot order, comma-separated into out ("" for none). */
void vla_loader_image_keys(const vla_loader *L, int d, char *out, size_t cap);

/* Tokens of the packed layout of global row `row` (what build lays out:
 * its dataset's cameras, its prompt with the normalised state). Thread-safe;
 * the source may call it to plan jobs by a token budget. */
vla_status vla_loader_sample_tokens(const vla_loader *L, int64_t row, int64_t *tokens);

/* Total width of the comma-separated numeric features `keys` (NULL:
 * "observation.state"); fails naming a missing feature. */
vla_status vla_loader_keys_width(const vla_lerobot *ds, const char *keys, int64_t *width);

/* Build one micro-batch synchronously from explicit rows (tests, tools);
 * keys[i] is sample i's global key. The result is released with
 * vla_loader_release. */
vla_status vla_loader_build(vla_loader *L, const int64_t *rows, const uint64_t *keys, int64_t n,
                            vla_loader_batch **out);

/* Random shift (augment_shift): camera `camera`'s crop offset for the sample with global key `key`,
 * each of *dy, *dx in [0, 2·pad] (pad, pad: the frame unchanged). Depends only on (seed, key, camera). */
void vla_loader_shift_offset(uint64_t seed, uint64_t key, int camera, int pad, int *dy, int *dx);
/* An h × w RGB8 frame padded by `pad` pixels replicating its edge, cropped back to h × w at (dy, dx) of the
 * padded frame: out(y, x) = in(clamp(y + dy − pad), clamp(x + dx − pad)). in and out must not overlap. */
void vla_loader_shift_rgb8(const uint8_t *in, int h, int w, int pad, int dy, int dx, uint8_t *out);

/* Build a normaliser for `key` from the dataset's stats in `mode`
 * (QUANTILES falls back to MIN_MAX when the stats have no quantiles). */
vla_status vla_norm_from_stats(const vla_lerobot *ds, const char *key, vla_norm_mode mode, vla_normalizer *n);

#endif

/* env.h — the simulator interface: one vtable that every environment (PushT,
 * Reach, …) implements, plus scripted policies and the episode runner.
 *
 * The shape follows Gymnasium as LeRobot uses it: reset(seed) → step(action)
 * → observation of a requested type, reward, terminated/truncated and an
 * info record (coverage, success). Rollout, eval and the CLI only ever call
 * vla_env_* and vla_sim_policy_*; a new environment is one .c file that fills
 * a vla_env_vtable and one line in the registry in env.c.
 *
 * Everything an environment computes is a pure function of (seed, actions):
 * the same seed and the same actions give a bit-identical trajectory. An env
 * is not thread-safe; parallel rollouts make one env per thread. */
#ifndef VLA_SIM_ENV_H
#define VLA_SIM_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define VLA_ENV_MAX_DIM 64 /* largest state / environment_state / action vector */
#define VLA_ENV_MAX_CAMERAS 4

/* Observation types, named as gym-pusht's obs_type. */
typedef enum {
    VLA_OBS_STATE,                       /* low-dim full state (PushT: agent x,y, block x,y, angle mod 2π) */
    VLA_OBS_ENVIRONMENT_STATE_AGENT_POS, /* environment_state (PushT: 16-D keypoints) + agent_pos */
    VLA_OBS_PIXELS,                      /* H×W×3 uint8 */
    VLA_OBS_PIXELS_AGENT_POS,            /* pixels + agent_pos */
} vla_obs_type;

/* "state", "environment_state_agent_pos", "pixels", "pixels_agent_pos". */
vla_status vla_obs_type_parse(const char *name, vla_obs_type *out);
const char *vla_obs_type_name(vla_obs_type t);

/* One observation. The caller sets type (and width, height, pixels for the
 * pixel types: pixels is caller-owned, width*height*3 bytes, rows packed);
 * vla_env_observe fills the rest (the vectors are filled for every type). */
typedef struct {
    vla_obs_type type;
    int width, height;
    uint8_t *pixels;
    int state_dim;
    double state[VLA_ENV_MAX_DIM];     /* VLA_OBS_STATE */
    int env_state_dim;
    double env_state[VLA_ENV_MAX_DIM]; /* environment_state (LeRobot observation.environment_state) */
    int agent_pos_dim;
    double agent_pos[VLA_ENV_MAX_DIM]; /* agent_pos (LeRobot observation.state) */
} vla_env_obs;

/* The info record of reset/step (gym-pusht's info dict). Environments other
 * than PushT fill what applies: "coverage" is task progress in [0, 1],
 * object_pose the thing being manipulated (or the target). */
typedef struct {
    double coverage;
    bool is_success;
    int n_contacts;
    double agent_pos[2], agent_vel[2];
    double object_pose[3]; /* PushT block_pose: x, y, angle */
    double goal_pose[3];
} vla_env_info;

typedef struct {
    double reward;
    bool terminated; /* success: the episode ends */
    bool truncated;  /* step limit reached (the env counts steps) */
    vla_env_info info;
} vla_env_step_result;

/* Static facts about an environment. */
typedef struct {
    const char *name;        /* "pusht" */
    const char *gym_id;      /* "gym_pusht/PushT-v0" */
    const char *task;        /* language instruction used in datasets */
    int action_dim;
    double action_low[VLA_ENV_MAX_DIM], action_high[VLA_ENV_MAX_DIM];
    int state_dim, env_state_dim, agent_pos_dim;
    int max_episode_steps;   /* truncation */
    int fps;
    double world_size;       /* drawing extent (world units), for renderers and overlays */
    /* Cameras (3-D envs; a 2-D env has one, its drawing): names as the env's
     * model calls them and the LeRobot dataset key each is recorded under.
     * Camera 0 is the default (observations, videos). */
    int n_cameras;
    const char *camera_names[VLA_ENV_MAX_CAMERAS];
    const char *image_keys[VLA_ENV_MAX_CAMERAS];
    int default_height, default_width; /* recorded image size when none is asked (LeRobot's for the task) */
    const char *robot_type;  /* the dataset's robot_type (NULL: name) */
    const char *const *state_names;  /* names of agent_pos's entries (LeRobot observation.state/action names), or NULL */
    const char *const *action_names; /* names of the action's entries, or NULL */
    const char *const *tasks;        /* task names `--env.task` accepts (NULL-terminated; NULL: any/none) */
} vla_env_spec;

/* ---- shared drawing (render.c, cairo) -------------------------------------- */

/* A scene in world units (y down, as pygame), drawn by render.c. Environments
 * describe what to draw; render.c owns colours, tints and line widths. */
typedef enum { VLA_DRAW_GOAL, VLA_DRAW_BLOCK, VLA_DRAW_AGENT, VLA_DRAW_WALL } vla_draw_role;

typedef struct {
    vla_draw_role role;
    int kind;          /* 0 polygon, 1 circle, 2 segment */
    int n;             /* polygon vertex count (≤ 8) */
    double pts[8][2];  /* polygon vertices; circle centre in pts[0]; segment ends in pts[0..1] */
    double radius;     /* circle radius or segment half-width */
} vla_draw_item;

typedef struct {
    double world_size;
    int n_items;
    vla_draw_item items[24];
    bool has_marker;
    double marker[2]; /* red cross (last action) */
} vla_draw_scene;

/* How pixels are made.
 *  GYM: as gym-pusht: drawn without antialiasing on a world-sized (512×512)
 *       canvas at integer coordinates, as pygame does, then resized with
 *       bilinear interpolation as cv2.resize(INTER_LINEAR) — the look of the
 *       lerobot/pusht images that policies are trained on. The default.
 *  SMOOTH: drawn directly at the requested size, antialiased; several times
 *       faster at 96×96. */
typedef enum { VLA_RENDER_GYM, VLA_RENDER_SMOOTH } vla_render_style;

/* scratch (may be NULL) keeps the canvas between calls: buf is malloc'd (cap
 * bytes) and freed by the owner (vla_env_free for an env's). */
typedef struct {
    void *buf;
    size_t cap;
} vla_draw_scratch;
vla_status vla_sim_draw(const vla_draw_scene *scene, vla_render_style style, int width, int height, uint8_t *rgb,
                        int stride, vla_draw_scratch *scratch);
/* Write a PNG of an RGB24 buffer through cairo (debugging, docs). */
vla_status vla_sim_write_png(const char *path, const uint8_t *rgb, int width, int height, int stride);

typedef struct vla_env vla_env;

/* What an environment implements. `self` is the env's private state. */
typedef struct {
    const vla_env_spec *spec;
    vla_status (*create)(void **self);
    void (*destroy)(void *self);
    vla_status (*reset)(void *self, uint64_t seed, vla_env_info *info);
    /* action has spec->action_dim entries (already finite-checked; the env clips); fails only when the
     * physics cannot go on (a 3-D engine's error or instability) */
    vla_status (*step)(void *self, const double *action, double *reward, bool *terminated, vla_env_info *info);
    void (*observe)(void *self, vla_env_obs *obs);   /* vectors only; pixels go through render */
    /* Describe what to draw, in world units; env.c and render.c make pixels. */
    void (*draw)(void *self, vla_draw_scene *scene);
    /* Opaque full physical state (for scripted experts and replay): copy out/in. */
    int (*state_size)(void);
    void (*get_state)(void *self, void *state);
    void (*set_state)(void *self, const void *state);
    /* Optional: render camera `camera` (< spec->n_cameras) itself, rows top
     * first (3-D envs render offscreen; NULL: draw + render.c, one camera). */
    vla_status (*render)(void *self, int camera, int width, int height, uint8_t *rgb, int stride);
    /* Optional: use the model in `path` (NULL: the built-in) for envs made from now on (vla_env_set_model_file). */
    vla_status (*set_model_file)(const char *path);
    /* Optional: seconds spent inside the physics engine's step and renderer alone since create (bench sim). */
    void (*engine_seconds)(void *self, double *step_s, double *render_s);
} vla_env_vtable;

struct vla_env {
    const vla_env_vtable *vt;
    void *self;
    int steps;              /* steps since reset */
    uint64_t seed;
    double last_action[VLA_ENV_MAX_DIM];
    bool has_last_action;
    vla_render_style render_style;
    vla_draw_scratch scratch;
};

/* ---- registry and generic calls ------------------------------------------ */

/* Names of the registered environments, NULL-terminated. */
const char *const *vla_env_names(void);
const vla_env_vtable *vla_env_find(const char *name);
vla_status vla_env_make(const char *name, vla_env **out);
void vla_env_free(vla_env *env);
const vla_env_spec *vla_env_get_spec(const vla_env *env);

vla_status vla_env_reset(vla_env *env, uint64_t seed, vla_env_info *info);
/* Fails (without stepping) on a non-finite action. truncated is set when
 * the step count reaches spec->max_episode_steps. */
vla_status vla_env_step(vla_env *env, const double *action, vla_env_step_result *out);
/* The same for an action of `width` entries from outside (a policy, a file):
 * a width other than the env's action_dim fails naming both. */
vla_status vla_env_step_width(vla_env *env, const double *action, int width, vla_env_step_result *out);
/* Seconds spent in the engine's own step and render calls since the env was
 * made (0 for envs that do not measure them): the floor vla.c's overhead is
 * measured against (vla bench sim). */
void vla_env_engine_seconds(vla_env *env, double *step_s, double *render_s);
vla_status vla_env_observe(vla_env *env, vla_env_obs *obs);
/* Render at any size; stride 0 means width*3. draw_action adds a red cross at
 * the last action, as gym-pusht's render() (observations never show it). */
vla_status vla_env_render(vla_env *env, int width, int height, uint8_t *rgb, int stride, bool draw_action);
/* Render camera `camera` (an index into spec->camera_names; 0 is what
 * vla_env_render shows). */
vla_status vla_env_render_camera(vla_env *env, int camera, int width, int height, uint8_t *rgb, int stride);
/* The index of a camera by name ("top") or by its LeRobot key
 * ("observation.images.top"); an unknown one fails naming the cameras. */
vla_status vla_env_camera_index(const vla_env_spec *spec, const char *name, int *index);
/* A comma-separated list of camera names or keys → indices (at most
 * VLA_ENV_MAX_CAMERAS, none twice, none empty); fails naming the bad one. */
vla_status vla_env_parse_cameras(const vla_env_spec *spec, const char *list, int *index, int *n);
/* The registered env for a LeRobot-style (type, task) pair: ("aloha",
 * "transfer_cube" or "AlohaTransferCube-v0") → "aloha"; task NULL or "" is
 * the type's default task. An unknown type or task fails listing the known ones. */
vla_status vla_env_resolve(const char *type, const char *task, const char **name);
/* Load an env's model from `path` instead of its built-in one (3-D envs:
 * an MJCF file), for every env of that name made afterwards in this process;
 * NULL goes back to the built-in. The file is loaded and checked now: a
 * missing or malformed file, or one without the bodies, joints, geoms and
 * cameras the env needs, fails with the loader's message (file and line). */
vla_status vla_env_set_model_file(const char *name, const char *path);
void vla_env_set_render_style(vla_env *env, vla_render_style style);
/* The full physical state (vt->state_size() bytes; vla_pusht_state for
 * PushT): to save, restore or clone. Setting it starts a fresh physics world
 * holding exactly those body states; a copy taken at reset continues bit for
 * bit, a copy taken mid-contact may drift (see pusht.c). */
void vla_env_get_state(vla_env *env, void *state);
void vla_env_set_state(vla_env *env, const void *state);

/* ---- scripted policies ----------------------------------------------------- */

/* A policy that acts in an env with privileged access to its true state
 * (experts) or none (random). One instance per thread. */
typedef struct vla_sim_policy vla_sim_policy;
typedef struct {
    const char *name;      /* "expert", "random" */
    const char *env_name;  /* NULL: any environment */
    vla_status (*create)(const vla_env_spec *spec, void **self);
    void (*destroy)(void *self);
    void (*reset)(void *self, vla_env *env, uint64_t seed);
    vla_status (*act)(void *self, vla_env *env, double *action);
} vla_sim_policy_vtable;

struct vla_sim_policy {
    const vla_sim_policy_vtable *vt;
    void *self;
};

vla_status vla_sim_policy_make(const char *name, const vla_env_spec *spec, vla_sim_policy **out);
void vla_sim_policy_free(vla_sim_policy *p);
void vla_sim_policy_reset(vla_sim_policy *p, vla_env *env, uint64_t seed);
vla_status vla_sim_policy_act(vla_sim_policy *p, vla_env *env, double *action);

/* ---- episodes -------------------------------------------------------------- */

/* One step as a dataset recorder needs it: the observation before the action
 * (LeRobot observation.*), the action, and what the step returned
 * (next.reward, next.done, next.success). */
typedef struct {
    int episode;            /* index within the run */
    uint64_t seed;
    int frame;              /* step index within the episode */
    const vla_env_obs *obs; /* agent_pos, env_state and, when requested, pixels */
    const double *action;
    double reward;
    bool done, success;
    double coverage;
} vla_sim_frame;

typedef vla_status (*vla_sim_frame_fn)(void *user, const vla_sim_frame *f);

typedef struct {
    int steps;
    bool success;
    double max_coverage, sum_reward, max_reward;
    double seconds;          /* wall time of this episode (env + policy) */
    double *actions;         /* steps × action_dim for the first keep_actions episodes, else NULL (malloc'd) */
    double *labels;          /* with action_noise > 0: the policy's own (noise-free) actions beside the
                                executed ones in `actions`, same shape; else NULL (malloc'd) */
} vla_sim_episode;

typedef struct {
    const char *env;         /* registry name */
    const char *policy;      /* "expert" | "random" */
    int episodes;
    uint64_t seed;           /* episode i uses seed + i */
    int max_steps;           /* 0: the env's max_episode_steps */
    int jobs;                /* threads; 0: OpenMP default */
    int keep_actions;        /* fill vla_sim_episode.actions for the first N episodes (videos, replays) */
    /* Optional per-frame callback, called in episode order from one thread
     * (episodes with a callback run sequentially). */
    vla_sim_frame_fn on_frame;
    void *user;
    int image_width, image_height; /* > 0: render obs pixels for on_frame */
    /* > 0: noise injection (DART, Laskey et al. 2017): each executed action is the policy's plus
     * Gaussian noise of this std per dim (action units; PushT: px), keyed by the episode seed, so
     * the episodes visit states just off the policy's path; the policy's own action is kept as
     * the label (vla_sim_episode.labels). */
    double action_noise;
} vla_sim_run_opts;

typedef struct {
    int episodes;
    double success_rate, mean_max_coverage, mean_steps, mean_sum_reward, mean_max_reward;
    double seconds, env_steps_per_s;
    vla_sim_episode *per_episode; /* episodes entries (malloc'd) */
} vla_sim_run_result;

vla_status vla_sim_run(const vla_sim_run_opts *opts, vla_sim_run_result *out);
void vla_sim_run_result_free(vla_sim_run_result *r);

/* Reset `env` to `seed` and execute actions[0..steps) rounded to f32, as a
 * dataset stores them and as its replay executes them (record.h, relabel.h);
 * fails if the episode ends before the last of them. */
vla_status vla_sim_replay_prefix(vla_env *env, uint64_t seed, const double *actions, int steps);

/* Replay recorded actions from a seed, calling fn with each rendered frame
 * (width×height RGB of camera `camera`, 0: the default). Used to write videos
 * of runs that happened in parallel: trajectories are deterministic, so the
 * replay is the same episode. */
typedef vla_status (*vla_sim_image_fn)(void *user, const uint8_t *rgb, int width, int height);
vla_status vla_sim_replay(const char *env_name, uint64_t seed, const double *actions, int steps, int camera,
                          int width, int height, vla_render_style style, vla_sim_image_fn fn, void *user);

/* ---- PushT specifics (pusht.c) --------------------------------------------- */

/* Full physical state of PushT, enough to continue a trajectory exactly. */
typedef struct {
    double agent_p[2], agent_v[2];
    double block_p[2]; /* centre of gravity in world coordinates (Chipmunk's body->p) */
    double block_a, block_v[2], block_w;
} vla_pusht_state;

/* Coverage of the block at pose (x, y, angle of the body origin) over the
 * goal, exactly, by convex polygon clipping. */
double vla_pusht_coverage_at(double x, double y, double angle);
/* The 8 T vertices (16 values) of a block at pose, in gym-pusht's order. */
void vla_pusht_keypoints_at(double x, double y, double angle, double out[16]);
/* Block body origin pose from an env's state. */
void vla_pusht_block_pose(const vla_pusht_state *s, double pose[3]);
/* gym-pusht's reset draws for a seed (numpy legacy RandomState): agent x,y,
 * block x,y, angle — before they are applied. */
void vla_pusht_reset_draw(uint32_t seed, double state[5]);
/* gym-pusht's options["reset_to_state"]: agent pos, block pos, then angle
 * (legacy order), then one physics step. Fails if env is not PushT. */
vla_status vla_pusht_reset_to_state(vla_env *env, const double state[5]);

/* PushT geometry, shared with the expert. */
#define VLA_PUSHT_AGENT_RADIUS 15.0
#define VLA_PUSHT_SUCCESS 0.95
extern const double vla_pusht_goal_pose[3];
/* The two shapes' vertices in body coordinates (bar, stem), as given. */
extern const double vla_pusht_shape_verts[2][4][2];
/* Centre of gravity in body coordinates. */
extern const double vla_pusht_cog[2];

#endif

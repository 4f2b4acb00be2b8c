/* vla.h — libvla's public C API: run a trained vla.c policy in a robot's own
 * control loop (no server, no Python), and the simulators to try it on.
 *
 *   vla_robot *r;
 *   if (vla_robot_open("outputs/train/checkpoints/last/pretrained_model", NULL, &r) != VLA_RC_OK)
 *       fprintf(stderr, "%s\n", vla_last_error());
 *   vla_robot_info info;  vla_robot_get_info(r, &info);      // horizon, action_dim, what to feed
 *   float chunk[info.horizon * info.action_dim];
 *   for each re-plan:
 *       vla_feature f[] = {{"observation.state", state, n_state},           // LeRobot keys
 *                          {"observation.environment_state", keypoints, 16}};
 *       vla_robot_obs obs = {f, 2, NULL, -1};
 *       vla_robot_act(r, &obs, NULL, chunk);                    // a chunk in the robot's units
 *       execute chunk[0 .. info.n_action_steps) …
 *   vla_robot_close(r);
 *
 * Errors: every call that can fail returns a vla_rc; anything but VLA_RC_OK
 * leaves a message on the calling thread, read with vla_last_error() (it
 * names what and where: the key, the expected shape, the file). Bad input
 * never crashes the library.
 *
 * Threads: one vla_robot is used by one thread at a time (it parallelises
 * inside with OpenMP); separate vla_robots may run on separate threads.
 *
 * Build: cc loop.c $(pkg-config --cflags --libs vla)   (docs/serve.md, "The C API")
 * examples/robot_loop.c drives the PushT simulator through this API. */
#ifndef VLA_H
#define VLA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VLA_API_VERSION 1

/* Status codes (the same numbers vla.c uses inside). */
typedef enum {
    VLA_RC_OK = 0,
    VLA_RC_INVALID_ARG = 1, /* the caller asked for something impossible (a wrong key, shape, value) */
    VLA_RC_IO = 2,          /* the operating system refused (open, read) */
    VLA_RC_FORMAT = 3,      /* a checkpoint's bytes do not follow its format */
    VLA_RC_NOT_FOUND = 4,   /* a named file or key does not exist */
    VLA_RC_UNSUPPORTED = 5, /* valid, but this build cannot do it */
    VLA_RC_NOMEM = 6,       /* an allocation failed */
    VLA_RC_NUMERIC = 7,     /* NaN or Inf where a finite number was needed */
    VLA_RC_INTERNAL = 8     /* a library vla.c calls failed */
} vla_rc;

/* The message of the last failure on this thread ("" if none). */
const char *vla_last_error(void);
/* "ok", "invalid_arg", "io", … */
const char *vla_rc_name(vla_rc rc);
/* "0.1.0" */
const char *vla_version_string(void);

/* ---- a policy ------------------------------------------------------------------------------- */

typedef struct vla_robot vla_robot;

typedef struct {
    const char *embodiment;  /* a mixture-trained checkpoint's embodiment, by name or id (NULL: its only one) */
    int flow_steps;          /* Euler steps of flow sampling (0: the checkpoint's) */
    uint64_t seed;           /* the flow noise's seed */
    double rtc_max_guidance; /* real-time chunking's guidance cap beta (0: 5) */
} vla_robot_options;

#define VLA_MAX_STATE_KEYS 8

typedef struct {
    const char *family;      /* "groot", "pi05" */
    const char *config;      /* the architecture preset, e.g. "groot-pusht" */
    const char *task;        /* the instruction it was trained with (used when an observation gives none) */
    int horizon;             /* actions per chunk */
    int action_dim;          /* values per action */
    int state_dim;           /* state values per control step (all state keys together) */
    int n_state_keys;
    const char *state_keys[VLA_MAX_STATE_KEYS]; /* LeRobot keys the state is made of, in order */
    int n_obs_steps;         /* steps of state history the policy sees (the library keeps them) */
    int n_cameras;           /* images per observation */
    int image_size;          /* each image_size × image_size × 3 (RGB, uint8) */
    double fps;              /* the control rate it was trained at */
    int relative_actions;    /* 1: predicted relative to observation.state, returned absolute */
    int rtc;                 /* 1: real-time chunking available */
    int n_action_steps;      /* actions of each chunk to execute before asking again (the checkpoint's) */
} vla_robot_info;

/* One observation feature, under its LeRobot key: a vector of numbers
 * ("observation.state", "observation.environment_state") or an image
 * ("observation.image", "observation.images.<camera>": height × width × 3
 * RGB bytes, rows packed). */
typedef struct {
    const char *key;
    const float *values;
    int n;
    const uint8_t *pixels;
    int height, width;
} vla_feature;

typedef struct {
    const vla_feature *features;
    int n_features;
    const char *task;  /* NULL: the checkpoint's */
    int64_t noise_key; /* < 0: the next of the robot's own sequence; else the flow noise's key (reproducible chunks) */
} vla_robot_obs;

/* Real-time chunking (Black et al. 2025): the robot keeps executing while
 * the next chunk is computed, so that chunk must continue what it has
 * committed to. committed: the n actions (n × action_dim, the robot's
 * units) of the previous chunk still to run from this observation's step
 * on; delay: how many of them will have run before the new chunk can start
 * (the inference delay, in control steps); end: where the blending ends
 * (0: n). The new chunk's first `delay` actions then match committed[0 ..
 * delay), and the rest join the old chunk smoothly. */
typedef struct {
    const float *committed;
    int n, delay, end;
} vla_robot_rtc;

/* Load a checkpoint: a pretrained_model directory, a checkpoint step
 * directory, a training output directory (its newest valid checkpoint) or a
 * published fine-tune. opt may be NULL. The policy runs on $VLA_DEVICE (else
 * a usable GPU, else the CPU) in $VLA_PRECISION (fp32 or bf16; else bf16 on
 * a GPU, its weights cast once and kept on the device, and fp32 on the CPU). */
vla_rc vla_robot_open(const char *checkpoint, const vla_robot_options *opt, vla_robot **out);
void vla_robot_close(vla_robot *r);
/* What the policy needs and gives (the strings live as long as r). */
vla_rc vla_robot_get_info(const vla_robot *r, vla_robot_info *info);
/* A new episode: forget the state history. */
vla_rc vla_robot_reset(vla_robot *r);
/* Record this control step's observation in the state history without
 * computing a chunk (for policies with n_obs_steps > 1, call it on the steps
 * between re-plans, as the policy saw consecutive steps in training). */
vla_rc vla_robot_observe(vla_robot *r, const vla_robot_obs *obs);
/* This step's observation (recorded in the history too) → the next chunk,
 * horizon × action_dim floats into `actions`, in the robot's units
 * (unnormalised, absolute). rtc may be NULL. */
vla_rc vla_robot_act(vla_robot *r, const vla_robot_obs *obs, const vla_robot_rtc *rtc, float *actions);

/* ---- simulators ------------------------------------------------------------------------------ */

typedef struct vla_simulator vla_simulator;

/* "pusht" (LeRobot's gym-pusht on Chipmunk2D) or "reach". */
vla_rc vla_simulator_open(const char *env, vla_simulator **out);
void vla_simulator_close(vla_simulator *s);
vla_rc vla_simulator_reset(vla_simulator *s, uint64_t seed);
/* The current observation as LeRobot features (observation.state: the
 * agent's position; observation.environment_state; observation.image
 * rendered at image_size² when image_size > 0), pointing into the
 * simulator's own buffers until its next call. */
vla_rc vla_simulator_observe(vla_simulator *s, int image_size, vla_robot_obs *obs);
/* One control step; done is set when the episode ends (success or step limit). */
vla_rc vla_simulator_step(vla_simulator *s, const float *action, int *done, int *success, double *coverage);
int vla_simulator_action_dim(const vla_simulator *s);
int vla_simulator_max_steps(const vla_simulator *s);

#ifdef __cplusplus
}
#endif

#endif

/* engine.h — a checkpoint served to robots: requests in (openpi-style maps
 * of LeRobot observation keys, msgpack_np.h), action chunks in the robot's
 * units out, many requests per policy call. The server (server.h) and the
 * robot API (include/vla.h) both run on it, so a request is read, checked
 * and answered by one piece of code whichever way it arrives.
 *
 * A request (keys after --serve.keys mapping; docs/serve.md has the table):
 *   observation.state, observation.environment_state, …   the checkpoint's
 *       state keys (features.state_keys), numbers of any NumPy number dtype,
 *       shape [w] (this control step; the session keeps the history a
 *       checkpoint trained with n_obs_steps > 1 needs) or [K, w] (the last K
 *       frames, oldest first); their widths add up to the trained frame width
 *   observation.image, observation.images.<camera>        H×W×3 uint8 at the
 *       policy's image size, as many as the checkpoint was trained with, taken
 *       in the order of their keys
 *   task | prompt        the instruction (default: the checkpoint's task)
 *   seed                 optional int: the flow's noise key (default: one
 *                        per session and request)
 *   prev_chunk_left_over optional [n, action_dim]: actions the robot will
 *                        still execute from the previous chunk, from the
 *                        step this observation was taken on (env units)
 *   inference_delay      optional int d: how many of them run before this
 *                        reply can (real-time chunking, policy/rtc.h)
 *   execution_horizon    optional int: where the guidance ends (default n)
 * Anything else is ignored. Errors name the key, what was expected and what
 * came.
 *
 * Threads: vla_request_prepare may run on any thread (it reads the engine,
 * writes only its session); vla_engine_run on one thread at a time. */
#ifndef VLA_SERVE_ENGINE_H
#define VLA_SERVE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/rtc.h"
#include "serve/msgpack_np.h"

typedef struct {
    const char *policy_path;   /* pretrained_model dir, checkpoint step dir, training output dir, or published */
    const char *policy_config; /* a published checkpoint's preset (NULL: the family's full size) */
    const char *embodiment;    /* a mixture's embodiment (NULL: the only one) */
    const char *keys;          /* "client_key:our_key,…" (NULL: none) */
    int flow_steps;            /* Euler steps (≤ 0: the checkpoint's) */
    const char *device;        /* the backend that runs the policy (tensor/backend.h; NULL: $VLA_DEVICE, else cpu) */
    uint64_t seed;             /* the flow noise's seed */
    vla_rtc_schedule rtc_schedule;
    double rtc_beta;           /* max guidance weight β (≤ 0: 5, the paper's) */
    bool rtc_no_jacobian;      /* guidance without the VJP (an ablation) */
    /* how the blocks' large linears run (policy/precision.h): "fp32", "bf16",
     * or NULL/"auto": $VLA_PRECISION, else bf16 on a GPU and fp32 on the CPU
     * (the CPU emulates bf16, slower than f32; a GPU runs it at twice f32's
     * tensor-core rate). The engine holds its weights for its whole life, so a
     * GPU casts each weight to bf16 once, at the first chunk, and keeps the
     * cast resident. FP8 is refused: its scales are calibrated in training. */
    const char *precision;
} vla_engine_opts;

void vla_engine_opts_default(vla_engine_opts *o);

#define VLA_ENGINE_MAX_KEYS 8

typedef struct {
    char family[16], config[64];
    int64_t horizon;            /* H: actions per chunk */
    int n_action_steps;         /* of each chunk, how many the robot should execute before asking again: the
                                   checkpoint's (as training decided; else min(H, 8), as vla eval) */
    int64_t action_dim;         /* real action dims in env units */
    int64_t state_frame;        /* one frame's state width (all state keys) */
    int n_state_keys;
    char state_keys[VLA_ENGINE_MAX_KEYS][64];
    int n_obs_steps;            /* K */
    int cameras;                /* images per request */
    int64_t image_size;         /* images are image_size × image_size × 3 */
    double fps;
    bool relative_actions;
    bool rtc;                   /* the family can sample with guidance */
    char precision[8];          /* what the engine runs: fp32 or bf16 */
    char device[16];            /* on which backend (tensor/backend.h) */
    char task[512];
    char dir[4096];             /* the pretrained_model directory */
} vla_engine_info;

typedef struct vla_engine vla_engine;
typedef struct vla_session vla_session;
typedef struct vla_request vla_request;

vla_status vla_engine_open(const vla_engine_opts *o, vla_engine **out);
void vla_engine_free(vla_engine *e);
const vla_engine_info *vla_engine_get_info(const vla_engine *e);
/* On a backend with a free-memory figure (a device; checked given a capacity): log what serving batches of up to max_batch observations holds there (the policy
 * measured on the meta backend, policy/memory.h) beside what is free now, a warning when the rest (the
 * weights' casts, the sampling arenas) does not fit. A backend with no free-memory figure: nothing. */
void vla_engine_log_memory(const vla_engine *e, int max_batch);
/* The metadata map sent when a client connects (docs/serve.md). */
void vla_engine_write_metadata(const vla_engine *e, vla_np_writer *w);

/* One robot's connection: its state history and request counter. */
vla_status vla_session_create(const vla_engine *e, uint64_t id, vla_session **out);
void vla_session_free(vla_session *s);
void vla_session_reset(vla_session *s); /* a new episode: forget the history */

/* Read and check one request; with one-frame state the session's history
 * takes the frame. On failure nothing is kept and the message names the key. */
vla_status vla_request_prepare(const vla_engine *e, vla_session *s, const vla_np_map *m, vla_request **out);
void vla_request_free(vla_request *r);
bool vla_request_uses_rtc(const vla_request *r);
/* After vla_engine_run: H × action_dim floats, env units (absolute). */
const float *vla_request_actions(const vla_request *r);

/* Answer n prepared requests with one batched policy call (two when some
 * use real-time chunking and others do not). */
vla_status vla_engine_run(vla_engine *e, vla_request *const *reqs, int n);

#endif

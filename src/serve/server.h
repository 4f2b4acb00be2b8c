/* server.h — `vla serve`: a websocket server that speaks openpi's protocol
 * (openpi/serving/websocket_policy_server.py; docs/serve.md has it byte by
 * byte) in front of an engine (engine.h), with libwebsockets.
 *
 *   connect  → the server sends one binary frame: the metadata map
 *   request  → one binary frame: a msgpack map of the observation
 *   reply    ← one binary frame: {"actions": float32 [H, action_dim],
 *              "server_timing": {"infer_ms", "prev_total_ms" (from the second
 *              reply on), "queue_ms", "batch_size"}}
 *   error    ← one text frame with the message, then close code 1011
 *   GET /healthz → 200 "OK\n"; any other plain HTTP request → 400 with a
 *              line that says how to connect
 *   --api_key: a websocket handshake without "Authorization: Api-Key <key>"
 *              is refused with 401 (as openpi_client sends the header)
 *
 * Dynamic batching: requests from all connections go into one bounded queue;
 * one worker thread takes them in order and starts a batch as soon as the
 * oldest has waited batch_window_ms, or max_batch are waiting, or every open
 * connection has a request waiting (nobody else could join, so a lone robot
 * never waits for the window), answering the batch with one policy call
 * (with a window of 0, the requests that arrived while the previous batch
 * ran go together). A
 * full queue refuses the request (an error frame, that client only). The
 * network thread never runs the policy and the worker never touches a
 * socket, so a slow or stalled client — one that stops reading, or sends
 * half a frame — holds only its own connection. A client sends its next
 * request after the reply to the last (openpi's clients do); one that does
 * not is told so and closed. */
#ifndef VLA_SERVE_SERVER_H
#define VLA_SERVE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "serve/engine.h"

typedef struct {
    const char *host;        /* address to bind (default 127.0.0.1) */
    int port;                /* 0: any free port (vla_server_port says which) */
    const char *api_key;     /* NULL: no key needed */
    double batch_window_ms;  /* how long the oldest request may wait for company */
    int max_batch;           /* largest batch (1: no batching) */
    int max_queue;           /* requests waiting at most; more are refused */
    size_t max_frame_bytes;  /* a request frame larger than this is refused */
} vla_server_opts;

void vla_server_opts_default(vla_server_opts *o);

typedef struct {
    uint64_t connections, requests, replies, errors, refused_busy, batches, http;
    int largest_batch;
} vla_server_stats;

typedef struct vla_server vla_server;

/* Bind and listen (the engine must outlive the server). */
vla_status vla_server_create(const vla_server_opts *o, vla_engine *e, vla_server **out);
int vla_server_port(const vla_server *s);
/* Serve on the calling thread until vla_server_stop. */
vla_status vla_server_run(vla_server *s);
/* From any thread (and from a signal handler: it only sets a flag and writes a pipe). */
void vla_server_stop(vla_server *s);
void vla_server_get_stats(vla_server *s, vla_server_stats *out);
void vla_server_free(vla_server *s);

#endif

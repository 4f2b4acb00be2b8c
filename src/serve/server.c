/* server.c — openpi's websocket protocol on libwebsockets, with a
 * batching worker thread (see server.h).
 *
 * Two threads. The service thread runs libwebsockets' event loop: it
 * assembles request frames, parses and checks them (engine.h), queues
 * them, and writes replies. The worker takes batches off the queue, runs
 * the policy, and hands the results back through a "done" list, waking the
 * event loop with lws_cancel_service(). Connection objects are touched by
 * the service thread only; the two threads share the queue and the done
 * list under one mutex. A connection that closes while its request is in
 * the worker's hands is freed when the result comes back. */
#include "serve/server.h"

#include <libwebsockets.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/timer.h"
#include "serve/msgpack_np.h"

typedef struct conn conn;
typedef struct job job;

struct job {
    conn *c;
    vla_request *req;
    double t_queued, t_start, infer_ms;
    int batch;
    vla_status st;
    char msg[1024];
    job *next;
};

struct conn {
    struct lws *wsi;
    uint64_t id;
    vla_session *session;
    uint8_t *rx;        /* the request frame being assembled */
    size_t rx_len, rx_cap;
    bool rx_text, rx_over;
    bool meta_pending;
    uint8_t *out;       /* a reply to write (LWS_PRE bytes of headroom first) */
    size_t out_len;
    char *err;          /* an error to send as a text frame, then close */
    int err_stage;      /* 0 none, 1 text to send, 2 close to send */
    bool busy;          /* a request is with the worker */
    bool closed;        /* the socket is gone; free when the worker is done with it */
    double t_frame;     /* when the current request's last byte arrived */
    double prev_total_ms;
    bool has_prev;
};

struct vla_server {
    vla_server_opts o;
    vla_engine *engine;
    struct lws_context *ctx;
    struct lws_protocols protocols[2];
    int port;
    volatile int stop;
    uint64_t next_id;
    vla_np_writer w; /* service thread's */
    /* shared with the worker */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t worker;
    bool worker_started;
    job *q_head, *q_tail, *done;
    int q_len;
    int n_open; /* open websocket connections: when all have a request queued, nobody can join a batch */
    vla_server_stats stats;
};

void vla_server_opts_default(vla_server_opts *o) {
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 8000;
    o->batch_window_ms = 5;
    o->max_batch = 8;
    o->max_queue = 64;
    o->max_frame_bytes = 16u << 20;
}

static void stat_add(vla_server *s, uint64_t *field, uint64_t n) {
    pthread_mutex_lock(&s->mu);
    *field += n;
    pthread_mutex_unlock(&s->mu);
}

static void job_free(job *j) {
    if (!j) return;
    vla_request_free(j->req);
    free(j);
}

static void conn_free(conn *c) {
    if (!c) return;
    vla_session_free(c->session);
    free(c->rx), free(c->out), free(c->err), free(c);
}

/* ---- the worker ------------------------------------------------------------------------------- */

static void timed_wait(vla_server *s, double until_s) {
    /* the queue's clock is CLOCK_MONOTONIC (vla_now_s); the condition variable's too */
    double now = vla_now_s(), left = until_s - now;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long ns = ts.tv_nsec + (long)(left * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

static void *worker_main(void *arg) {
    vla_server *s = arg;
    int maxb = s->o.max_batch > 0 ? s->o.max_batch : 1;
    job **batch = calloc((size_t)maxb, sizeof *batch);
    vla_request **reqs = calloc((size_t)maxb, sizeof *reqs);
    pthread_mutex_lock(&s->mu);
    while (!s->stop && batch && reqs) {
        if (!s->q_head) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        /* the batching rule: the oldest has waited the window, or a full batch
         * waits, or every open connection has its request queued (no one else
         * could join: a lone robot is never kept waiting) */
        double deadline = s->q_head->t_queued + s->o.batch_window_ms * 1e-3;
        if (s->q_len < maxb && s->q_len < s->n_open && vla_now_s() < deadline) {
            timed_wait(s, deadline);
            continue;
        }
        int n = 0;
        while (s->q_head && n < maxb) {
            job *j = s->q_head;
            s->q_head = j->next;
            if (!s->q_head) s->q_tail = NULL;
            s->q_len--;
            j->next = NULL;
            batch[n] = j, reqs[n] = j->req;
            n++;
        }
        pthread_mutex_unlock(&s->mu);
        double t0 = vla_now_s();
        vla_status st = vla_engine_run(s->engine, reqs, n);
        double ms = (vla_now_s() - t0) * 1e3;
        for (int i = 0; i < n; i++) {
            batch[i]->st = st, batch[i]->t_start = t0, batch[i]->infer_ms = ms, batch[i]->batch = n;
            if (st != VLA_OK) snprintf(batch[i]->msg, sizeof batch[i]->msg, "inference failed: %s", vla_error_message());
        }
        pthread_mutex_lock(&s->mu);
        for (int i = n - 1; i >= 0; i--) batch[i]->next = s->done, s->done = batch[i];
        s->stats.batches++;
        if (n > s->stats.largest_batch) s->stats.largest_batch = n;
        pthread_mutex_unlock(&s->mu);
        lws_cancel_service(s->ctx); /* the service thread writes the replies */
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    free(batch), free(reqs);
    return NULL;
}

/* ---- the service thread ---------------------------------------------------------------------- */

static void fail_conn(conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_conn(conn *c, const char *fmt, ...) {
    if (c->err_stage) return; /* the first error is the one the client hears */
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(c->err);
    c->err = strdup(buf);
    c->err_stage = 1;
    VLA_WARN("serve: connection %llu: %s", (unsigned long long)c->id, buf);
    lws_callback_on_writable(c->wsi);
}

/* Copy msgpack bytes behind LWS_PRE bytes of headroom, as lws_write wants. */
static bool stage_out(conn *c, const vla_np_writer *w) {
    size_t n;
    const uint8_t *d = vla_np_writer_data(w, &n);
    uint8_t *buf = malloc(LWS_PRE + n);
    if (!buf) return false;
    memcpy(buf + LWS_PRE, d, n);
    free(c->out);
    c->out = buf, c->out_len = n;
    return true;
}

static void frame_complete(vla_server *s, conn *c) {
    c->t_frame = vla_now_s();
    stat_add(s, &s->stats.requests, 1);
    if (c->rx_over) {
        fail_conn(c, "request frame larger than the server's limit of %zu bytes (vla serve --serve.max_frame_mb)",
                  s->o.max_frame_bytes);
        return;
    }
    if (c->rx_text) {
        fail_conn(c, "requests are binary frames holding a msgpack map (openpi protocol), not text");
        return;
    }
    if (c->busy) {
        fail_conn(c, "a request arrived before the reply to the previous one: send one request at a time and wait "
                  "for its reply (openpi protocol)");
        return;
    }
    vla_np_map m;
    vla_status st = vla_np_parse(c->rx, c->rx_len, &m);
    vla_request *req = NULL;
    if (st == VLA_OK) {
        st = vla_request_prepare(s->engine, c->session, &m, &req);
        vla_np_map_free(&m);
    }
    if (st != VLA_OK) {
        fail_conn(c, "bad request: %s", vla_error_message());
        return;
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        vla_request_free(req);
        fail_conn(c, "server out of memory");
        return;
    }
    j->c = c, j->req = req, j->t_queued = vla_now_s();
    pthread_mutex_lock(&s->mu);
    bool full = s->q_len >= s->o.max_queue;
    if (!full) {
        if (s->q_tail) s->q_tail->next = j;
        else s->q_head = j;
        s->q_tail = j;
        s->q_len++;
        pthread_cond_signal(&s->cv);
    } else {
        s->stats.refused_busy++;
    }
    int qlen = s->q_len;
    pthread_mutex_unlock(&s->mu);
    if (full) {
        job_free(j);
        fail_conn(c, "server busy: %d requests already wait (--serve.max_queue); retry later", qlen);
        return;
    }
    c->busy = true;
    lws_rx_flow_control(c->wsi, 0); /* nothing more from this client until it has its reply */
}

/* Results from the worker: replies staged, connections asked to write. */
static void collect_done(vla_server *s) {
    pthread_mutex_lock(&s->mu);
    job *list = s->done;
    s->done = NULL;
    pthread_mutex_unlock(&s->mu);
    while (list) {
        job *j = list;
        list = j->next;
        conn *c = j->c;
        c->busy = false;
        if (c->closed) {
            conn_free(c);
        } else if (j->st != VLA_OK) {
            fail_conn(c, "%s", j->msg);
        } else {
            const vla_engine_info *in = vla_engine_get_info(s->engine);
            int64_t shape[2] = {in->horizon, in->action_dim};
            vla_np_writer_reset(&s->w);
            vla_np_put_map(&s->w, 2);
            vla_np_put_str(&s->w, "actions");
            vla_np_put_f32_array(&s->w, vla_request_actions(j->req), shape, 2);
            vla_np_put_str(&s->w, "server_timing");
            vla_np_put_map(&s->w, c->has_prev ? 4 : 3);
            vla_np_put_str(&s->w, "infer_ms"), vla_np_put_float(&s->w, j->infer_ms);
            if (c->has_prev) vla_np_put_str(&s->w, "prev_total_ms"), vla_np_put_float(&s->w, c->prev_total_ms);
            vla_np_put_str(&s->w, "queue_ms"), vla_np_put_float(&s->w, (j->t_start - j->t_queued) * 1e3);
            vla_np_put_str(&s->w, "batch_size"), vla_np_put_int(&s->w, j->batch);
            if (!stage_out(c, &s->w)) fail_conn(c, "server out of memory");
            else lws_callback_on_writable(c->wsi);
        }
        job_free(j);
    }
}

static int write_frame(struct lws *wsi, uint8_t *buf, size_t n, enum lws_write_protocol kind) {
    int w = lws_write(wsi, buf + LWS_PRE, n, kind);
    return w < (int)n ? -1 : 0;
}

static int on_writable(vla_server *s, conn *c) {
    if (c->meta_pending) {
        c->meta_pending = false;
        vla_np_writer_reset(&s->w);
        vla_engine_write_metadata(s->engine, &s->w);
        if (!stage_out(c, &s->w) || write_frame(c->wsi, c->out, c->out_len, LWS_WRITE_BINARY)) return -1;
        free(c->out), c->out = NULL;
        if (c->err_stage) lws_callback_on_writable(c->wsi);
        return 0;
    }
    if (c->err_stage == 1) {
        size_t n = strlen(c->err);
        uint8_t *buf = malloc(LWS_PRE + n + 1);
        if (!buf) return -1;
        memcpy(buf + LWS_PRE, c->err, n);
        int r = write_frame(c->wsi, buf, n, LWS_WRITE_TEXT);
        free(buf);
        if (r) return -1;
        c->err_stage = 2;
        stat_add(s, &s->stats.errors, 1);
        lws_callback_on_writable(c->wsi);
        return 0;
    }
    if (c->err_stage == 2) {
        static const char reason[] = "Internal server error. Message in the previous frame.";
        lws_close_reason(c->wsi, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, (unsigned char *)reason, sizeof reason - 1);
        return -1;
    }
    if (c->out) {
        int r = write_frame(c->wsi, c->out, c->out_len, LWS_WRITE_BINARY);
        free(c->out), c->out = NULL;
        if (r) return -1;
        c->prev_total_ms = (vla_now_s() - c->t_frame) * 1e3, c->has_prev = true;
        stat_add(s, &s->stats.replies, 1);
        lws_rx_flow_control(c->wsi, 1);
    }
    return 0;
}

static int http_reply(struct lws *wsi, unsigned code, const char *body) {
    uint8_t buf[LWS_PRE + 1024];
    uint8_t *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
    size_t n = strlen(body);
    if (lws_add_http_common_headers(wsi, code, "text/plain", n, &p, end) || lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    uint8_t out[LWS_PRE + 512];
    if (n > sizeof out - LWS_PRE) n = sizeof out - LWS_PRE;
    memcpy(out + LWS_PRE, body, n);
    if (lws_write(wsi, out + LWS_PRE, n, LWS_WRITE_HTTP_FINAL) < (int)n) return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* Constant-time comparison of the Authorization header with "Api-Key <key>". */
static bool key_ok(struct lws *wsi, const char *key) {
    char want[600], got[600];
    int wn = snprintf(want, sizeof want, "Api-Key %s", key);
    int len = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
    if (len <= 0 || len >= (int)sizeof got || wn <= 0 || wn >= (int)sizeof want) return false;
    if (lws_hdr_copy(wsi, got, sizeof got, WSI_TOKEN_HTTP_AUTHORIZATION) != len) return false;
    unsigned diff = (unsigned)(len ^ wn);
    for (int i = 0; i < wn; i++) diff |= (unsigned char)want[i] ^ (unsigned char)(i < len ? got[i] : 0);
    return diff == 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    vla_server *s = lws_context_user(lws_get_context(wsi));
    conn **pc = user, *c = pc ? *pc : NULL;
    switch (reason) {
    case LWS_CALLBACK_HTTP: {
        stat_add(s, &s->stats.http, 1);
        const char *uri = in ? (const char *)in : "";
        if (!strcmp(uri, "/healthz")) return http_reply(wsi, HTTP_STATUS_OK, "OK\n");
        return http_reply(wsi, HTTP_STATUS_BAD_REQUEST,
                          "vla serve speaks the openpi websocket protocol: connect with a websocket client (e.g. "
                          "openpi_client.WebsocketClientPolicy) to ws://HOST:PORT/; GET /healthz answers OK\n");
    }
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        if (s->o.api_key && s->o.api_key[0] && !key_ok(wsi, s->o.api_key)) {
            VLA_WARN("serve: refused a websocket handshake without the right 'Authorization: Api-Key' header");
            lws_return_http_status(wsi, HTTP_STATUS_UNAUTHORIZED,
                                   "missing or wrong API key: send the header 'Authorization: Api-Key KEY'");
            return -1;
        }
        return 0;
    case LWS_CALLBACK_ESTABLISHED: {
        conn *nc = calloc(1, sizeof *nc);
        if (!nc) return -1;
        nc->wsi = wsi, nc->id = ++s->next_id, nc->meta_pending = true;
        if (vla_session_create(s->engine, nc->id, &nc->session) != VLA_OK) {
            free(nc);
            return -1;
        }
        *pc = nc;
        pthread_mutex_lock(&s->mu);
        s->stats.connections++;
        s->n_open++;
        pthread_mutex_unlock(&s->mu);
        VLA_INFO("serve: connection %llu opened", (unsigned long long)nc->id);
        lws_callback_on_writable(wsi);
        return 0;
    }
    case LWS_CALLBACK_RECEIVE:
        if (!c) return -1;
        if (lws_is_first_fragment(wsi)) c->rx_len = 0, c->rx_over = false, c->rx_text = !lws_frame_is_binary(wsi);
        if (!c->rx_over && c->rx_len + len > s->o.max_frame_bytes) {
            c->rx_over = true; /* read on to the frame's end, keep nothing */
            free(c->rx), c->rx = NULL, c->rx_cap = 0;
        }
        if (!c->rx_over && len > 0) {
            if (c->rx_len + len > c->rx_cap) {
                size_t cap = c->rx_cap ? c->rx_cap : 4096;
                while (cap < c->rx_len + len) cap *= 2;
                if (cap > s->o.max_frame_bytes) cap = s->o.max_frame_bytes;
                uint8_t *nb = realloc(c->rx, cap);
                if (!nb) return -1;
                c->rx = nb, c->rx_cap = cap;
            }
            memcpy(c->rx + c->rx_len, in, len);
            c->rx_len += len;
        }
        if (lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0) frame_complete(s, c);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return c ? on_writable(s, c) : 0;
    case LWS_CALLBACK_CLOSED:
        if (c) {
            VLA_INFO("serve: connection %llu closed", (unsigned long long)c->id);
            *pc = NULL;
            pthread_mutex_lock(&s->mu);
            s->n_open--;
            pthread_cond_signal(&s->cv); /* a batch waiting for this one need not */
            pthread_mutex_unlock(&s->mu);
            if (c->busy) c->closed = true, c->wsi = NULL; /* the worker holds its request: freed on return */
            else conn_free(c);
        }
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        collect_done(s);
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

static void lws_log_emit(int level, const char *line) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (level & LLL_ERR) VLA_WARN("libwebsockets: %.*s", (int)n, line);
    else VLA_DEBUG("libwebsockets: %.*s", (int)n, line);
}

vla_status vla_server_create(const vla_server_opts *o, vla_engine *e, vla_server **out) {
    *out = NULL;
    if (o->max_batch < 1 || o->max_queue < 1 || o->batch_window_ms < 0 || o->max_frame_bytes < 64)
        return vla_error(VLA_ERR_INVALID_ARG, "serve: max_batch and max_queue must be at least 1, the batch window "
                         "at least 0 ms, the frame limit at least 64 bytes");
    vla_server *s = calloc(1, sizeof *s);
    if (!s) return vla_error(VLA_ERR_NOMEM, "serve: out of memory");
    s->o = *o, s->engine = e;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    vla_status st = vla_np_writer_init(&s->w);
    if (st != VLA_OK) {
        vla_server_free(s);
        return st;
    }
    lws_set_log_level(LLL_ERR, lws_log_emit);
    s->protocols[0] = (struct lws_protocols){"openpi", callback, sizeof(conn *), 64 * 1024, 0, NULL, 0};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = o->port;
    info.iface = o->host && o->host[0] ? o->host : "127.0.0.1";
    info.protocols = s->protocols;
    info.user = s;
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    info.timeout_secs = 30; /* handshakes and HTTP requests that stall */
    s->ctx = lws_create_context(&info);
    if (!s->ctx) {
        vla_server_free(s);
        return vla_error(VLA_ERR_IO, "serve: cannot listen on %s:%d (is the port in use, or the address not this "
                         "machine's?)", info.iface, o->port);
    }
    struct lws_vhost *vh = lws_get_vhost_by_name(s->ctx, "default");
    s->port = vh ? lws_get_vhost_listen_port(vh) : o->port;
    if (pthread_create(&s->worker, NULL, worker_main, s) != 0) {
        vla_server_free(s);
        return vla_error(VLA_ERR_INTERNAL, "serve: cannot start the inference thread");
    }
    s->worker_started = true;
    *out = s;
    return VLA_OK;
}

int vla_server_port(const vla_server *s) { return s->port; }

vla_status vla_server_run(vla_server *s) {
    while (!s->stop)
        if (lws_service(s->ctx, 0) < 0) break;
    return VLA_OK;
}

void vla_server_stop(vla_server *s) {
    s->stop = 1;
    if (s->ctx) lws_cancel_service(s->ctx);
}

void vla_server_get_stats(vla_server *s, vla_server_stats *out) {
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    pthread_mutex_unlock(&s->mu);
}

void vla_server_free(vla_server *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->worker_started) pthread_join(s->worker, NULL);
    /* requests still queued or answered but unsent: their connections close below */
    job *lists[2] = {s->q_head, s->done};
    for (int l = 0; l < 2; l++)
        for (job *j = lists[l], *nx; j; j = nx) {
            nx = j->next;
            j->c->busy = false;
            if (j->c->closed) conn_free(j->c);
            job_free(j);
        }
    s->q_head = s->q_tail = s->done = NULL;
    if (s->ctx) lws_context_destroy(s->ctx); /* closes every connection (CLOSED frees each) */
    vla_np_writer_free(&s->w);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

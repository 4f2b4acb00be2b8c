/* graph.cu — captured regions as CUDA graphs (tensor/ops.h, run_captured).
 *
 * A key's first call runs its body plainly: it warms what a recording must
 * not do (attention plans and cuBLASLt descriptors built, weight copies
 * made, scratch pools and arenas at their size). The second call records
 * the body's ops on the compute stream (stream capture, relaxed mode) and
 * instantiates the graph; that call and every later one launch it — one
 * launch for an action chunk's thousands of kernels and copies, no host work
 * per op. VLA_CUDA_GRAPHS=0 runs every body plainly.
 *
 * What changes while recording (context.cu and attention.cu ask
 * vla_cuda_capturing()):
 *  - host data the body uploads (to_device, per-op metadata, attention
 *    plans) is placed in device memory the recording owns (1 MiB chunks,
 *    filled from host mirrors once the recording ends); the graph copies
 *    from there (to_device) or the kernels read it (metadata): a replay
 *    sees the recording's bytes, which the caller's key promises are the
 *    bytes it would upload;
 *  - backend scratch (an op's own temporary) is allocated and freed inside
 *    the graph (memory nodes);
 *  - memory the body allocates through the table is real (made outside the
 *    graph): if the body frees it again, the recording keeps it (replays
 *    reuse it at the same address; released with the recording), as
 *    `checked` allows a region's own allocations;
 *  - what a recording cannot hold fails it, and the key then runs plainly
 *    from then on: a wait for results (to_host, a host reduction, sync),
 *    memory the caller keeps past the region (it stays the caller's), a
 *    free of older memory (deferred, then done for real after the
 *    recording), or any CUDA error. The body is then run again, plainly: a failed
 *    recording executed nothing.
 * Recordings are kept per key (tensor/key_cache.h: a few, the least
 * recently used dropped — its graph and memory released after the stream
 * drains). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/cuda/internal.cuh"
extern "C" {
#include "tensor/key_cache.h"
}

/* A served robot fleet batches 1..8 observations (8 layouts), and each chunk is two regions (prefix and
 * flow steps): 16 keys in use at once, more with several prompts. 16 slots then churned — every key
 * re-recorded before it replayed (three calls each); 64 hold a fleet's. */
#define GRAPH_KEYS 64

typedef struct {
    int state; /* SEEN, RECORDED or PLAIN */
    cudaGraphExec_t exec;
    void **mem; /* device memory the recording's uploads live in (cudaMalloc) */
    int n_mem;
    void **owned; /* the body's own table allocations, freed inside it (pool memory) */
    int n_owned;
} graph_entry;
enum { SEEN, RECORDED, PLAIN };

static vla_key_cache *graphs; /* key → graph_entry (tensor/key_cache.h) */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t replays;
static int enabled = -1;

/* the recording in progress (one at a time: graph_lock is held across it) */
#define UPLOAD_CHUNK ((size_t)1 << 20)
static struct {
    bool on;
    pthread_t thread; /* the recording thread: another thread's ops are not the region's */
    bool failed;
    char why[256];
    void **mem;    /* device chunks of the uploads */
    char **mirror; /* their contents on the host, copied in when the recording ends */
    size_t *used, *cap;
    int n_mem, cap_mem;
    void **frees; /* the table's frees of older memory, done after the recording */
    int n_frees, cap_frees;
    void **allocs; /* the table's allocations inside the recording, not freed yet */
    int n_allocs, cap_allocs;
    void **owned; /* those freed inside it: the recording keeps them */
    int n_owned, cap_owned;
} rec;

static bool grow_list(void ***list, int *cap, int n) {
    if (n < *cap) return true;
    int c = *cap ? 2 * *cap : 16;
    void **l = (void **)realloc(*list, (size_t)c * sizeof *l);
    if (!l) return false;
    *list = l, *cap = c;
    return true;
}

bool vla_cuda_capturing(void) { return rec.on && pthread_equal(rec.thread, pthread_self()); }

void vla_cuda_capture_fail(const char *why) {
    if (!vla_cuda_capturing() || rec.failed) return;
    rec.failed = true;
    snprintf(rec.why, sizeof rec.why, "%s", why);
}

void *vla_cuda_capture_upload(const void *host, size_t bytes) {
    if (!bytes) bytes = 1;
    size_t at = rec.n_mem ? (rec.used[rec.n_mem - 1] + 255) & ~(size_t)255 : 0;
    if (!rec.n_mem || at + bytes > rec.cap[rec.n_mem - 1]) { /* a new chunk */
        if (rec.n_mem == rec.cap_mem) {
            int c = rec.cap_mem ? 2 * rec.cap_mem : 8;
            void **m = (void **)realloc(rec.mem, (size_t)c * sizeof *m);
            if (m) rec.mem = m;
            char **h = m ? (char **)realloc(rec.mirror, (size_t)c * sizeof *h) : NULL;
            if (h) rec.mirror = h;
            size_t *u = h ? (size_t *)realloc(rec.used, (size_t)c * sizeof *u) : NULL;
            if (u) rec.used = u;
            size_t *k = u ? (size_t *)realloc(rec.cap, (size_t)c * sizeof *k) : NULL;
            if (!k) {
                vla_cuda_capture_fail("out of host memory for a recording's uploads");
                return NULL;
            }
            rec.cap = k, rec.cap_mem = c;
        }
        size_t cap = bytes > UPLOAD_CHUNK ? (bytes + 255) & ~(size_t)255 : UPLOAD_CHUNK;
        void *d = NULL;
        char *h = (char *)malloc(cap);
        if (!h || cudaMalloc(&d, cap) != cudaSuccess) {
            cudaGetLastError();
            free(h);
            vla_cuda_capture_fail("out of memory for a recording's uploads");
            return NULL;
        }
        rec.mem[rec.n_mem] = d, rec.mirror[rec.n_mem] = h, rec.used[rec.n_mem] = 0, rec.cap[rec.n_mem] = cap;
        rec.n_mem++;
        at = 0;
    }
    int i = rec.n_mem - 1;
    memcpy(rec.mirror[i] + at, host, bytes);
    rec.used[i] = at + bytes;
    return (char *)rec.mem[i] + at;
}

/* the recording's upload chunks filled from their mirrors on the compute stream, no longer recording:
 * ordered before the graph's first launch (a pageable source is staged before the call returns, so the
 * mirrors may go at once); false on failure */
static bool fill_uploads(void) {
    for (int i = 0; i < rec.n_mem; i++)
        if (cudaMemcpyAsync(rec.mem[i], rec.mirror[i], rec.used[i], cudaMemcpyHostToDevice, vla_cuda_stream()) !=
            cudaSuccess) {
            cudaGetLastError();
            return false;
        }
    return true;
}

/* the mirrors freed; the device chunks handed over (keep) or freed */
static void end_uploads(bool keep) {
    for (int i = 0; i < rec.n_mem; i++) {
        free(rec.mirror[i]);
        if (!keep) cudaFree(rec.mem[i]);
    }
    if (!keep) free(rec.mem);
    free(rec.mirror), free(rec.used), free(rec.cap);
    rec.mem = NULL, rec.mirror = NULL, rec.used = rec.cap = NULL, rec.n_mem = rec.cap_mem = 0;
}

void vla_cuda_capture_note_alloc(void *p) {
    if (!vla_cuda_capturing() || !p) return;
    if (!grow_list(&rec.allocs, &rec.cap_allocs, rec.n_allocs)) return vla_cuda_capture_fail("out of host memory");
    rec.allocs[rec.n_allocs++] = p;
}

bool vla_cuda_capture_defer_free(void *p) {
    if (!vla_cuda_capturing()) return false;
    for (int i = 0; i < rec.n_allocs; i++)
        if (rec.allocs[i] == p) { /* the region's own: kept by the recording, the replays reuse it */
            rec.allocs[i] = rec.allocs[--rec.n_allocs];
            if (!grow_list(&rec.owned, &rec.cap_owned, rec.n_owned)) {
                vla_cuda_capture_fail("out of host memory");
                return false; /* freed now: the recording is lost anyway */
            }
            rec.owned[rec.n_owned++] = p;
            return true;
        }
    vla_cuda_capture_fail("the region freed memory it did not allocate");
    if (!grow_list(&rec.frees, &rec.cap_frees, rec.n_frees)) return false; /* freed now: the recording is lost anyway */
    rec.frees[rec.n_frees++] = p;
    return true;
}

static bool graphs_enabled(void) {
    if (enabled < 0) {
        const char *e = getenv("VLA_CUDA_GRAPHS");
        enabled = !(e && !strcmp(e, "0"));
    }
    return enabled;
}

/* -1 with graphs off: this backend then replays nothing, and says so (ops.h, stat) */
int64_t vla_cuda_graph_replays(void) { return graphs_enabled() ? __atomic_load_n(&replays, __ATOMIC_RELAXED) : -1; }

static void release_mem(void **mem, int n) {
    for (int i = 0; i < n; i++) cudaFree(mem[i]);
    free(mem);
}

/* pool memory back to the pool, in stream order */
static void release_owned(void **owned, int n) {
    for (int i = 0; i < n; i++) VLA_CUDA_OK(cudaFreeAsync(owned[i], vla_cuda_stream()), "free");
    free(owned);
}

/* an entry dropped from the cache: its graph and memory released once nothing may still run them */
static void graph_destroy(void *v) {
    graph_entry *g = (graph_entry *)v;
    if (g->exec) {
        VLA_CUDA_OK(cudaStreamSynchronize(vla_cuda_stream()), "releasing a recorded region");
        cudaGraphExecDestroy(g->exec);
        release_mem(g->mem, g->n_mem);
        release_owned(g->owned, g->n_owned);
    }
    free(g);
}

static void say_plain(const char *why) {
    static bool said;
    if (said) return;
    said = true;
    fprintf(stderr, "vla: cuda: a region could not be recorded as a CUDA graph (%s): it runs op by op\n", why);
}

extern "C" vla_status vla_cuda_run_captured(const void *key, size_t key_bytes, vla_status (*body)(void *ctx),
                                            void *ctx) {
    if (!graphs_enabled() || vla_cuda_capturing()) return body(ctx); /* (a region inside a recording is recorded with it) */
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    pthread_mutex_lock(&graph_lock);
    if (!graphs) graphs = vla_key_cache_new(GRAPH_KEYS, graph_destroy);
    graph_entry *g = graphs ? (graph_entry *)vla_key_cache_get(graphs, key, key_bytes) : NULL;
    if (!g || g->state != RECORDED) {
        if (!g) { /* the first call: remembered (if memory allows), run plainly */
            graph_entry *seen = (graph_entry *)calloc(1, sizeof *seen);
            if (seen && !(graphs && vla_key_cache_put(graphs, key, key_bytes, seen))) free(seen);
            pthread_mutex_unlock(&graph_lock);
            return body(ctx);
        }
        if (g->state == PLAIN) {
            pthread_mutex_unlock(&graph_lock);
            return body(ctx);
        }
        /* the second call: record (graph_lock held: one recording at a time, and no slot replaced meanwhile) */
        rec.thread = pthread_self();
        rec.on = true, rec.failed = false, rec.why[0] = 0, rec.n_frees = 0, rec.n_allocs = 0;
        rec.owned = NULL, rec.n_owned = rec.cap_owned = 0;
        cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed);
        if (e != cudaSuccess) {
            cudaGetLastError();
            vla_cuda_capture_fail("cudaStreamBeginCapture refused");
        }
        vla_status st = e == cudaSuccess ? body(ctx) : VLA_OK;
        cudaGraph_t graph = NULL;
        if (e == cudaSuccess) {
            cudaError_t ee = cudaStreamEndCapture(c->stream, &graph);
            if (ee != cudaSuccess) {
                cudaGetLastError();
                if (!rec.failed) vla_cuda_capture_fail(cudaGetErrorString(ee));
            }
        }
        if (rec.n_allocs > 0) vla_cuda_capture_fail("the region allocated memory it keeps"); /* it stays the caller's */
        rec.on = false;
        for (int i = 0; i < rec.n_frees; i++) VLA_CUDA_OK(cudaFreeAsync(rec.frees[i], c->stream), "free");
        cudaGraphExec_t exec = NULL;
        if (st == VLA_OK && !rec.failed && graph && !fill_uploads()) {
            rec.failed = true; /* (no longer recording: set here, not through vla_cuda_capture_fail) */
            snprintf(rec.why, sizeof rec.why, "filling the recording's uploads failed");
        }
        if (st == VLA_OK && !rec.failed && graph) {
            cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0);
            if (ie != cudaSuccess) {
                cudaGetLastError();
                exec = NULL;
                rec.failed = true;
                snprintf(rec.why, sizeof rec.why, "cudaGraphInstantiate: %s", cudaGetErrorString(ie));
            }
        }
        if (graph) cudaGraphDestroy(graph);
        if (st != VLA_OK || rec.failed || !exec) {
            if (exec) cudaGraphExecDestroy(exec);
            end_uploads(false);
            release_owned(rec.owned, rec.n_owned); /* the body freed them: now for real */
            rec.owned = NULL;
            if (st != VLA_OK) { /* the body's own error: it would fail plainly too */
                pthread_mutex_unlock(&graph_lock);
                return st;
            }
            g->state = PLAIN;
            say_plain(rec.why[0] ? rec.why : "no graph");
            pthread_mutex_unlock(&graph_lock);
            return body(ctx); /* nothing ran: run it now */
        }
        g->exec = exec, g->mem = rec.mem, g->n_mem = rec.n_mem, g->state = RECORDED;
        g->owned = rec.owned, g->n_owned = rec.n_owned;
        rec.owned = NULL;
        end_uploads(true);
    }
    VLA_CUDA_OK(cudaGraphLaunch(g->exec, c->stream), "launching a recorded region");
    __atomic_fetch_add(&replays, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&graph_lock);
    vla_cuda_check("recorded region");
    return VLA_OK;
}

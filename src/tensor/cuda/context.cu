/* context.cu — the cuda backend's context and memory: device selection
 * (local MPI rank mod device count), one compute stream and one
 * communication stream per process (= per rank), the stream-ordered memory
 * pool (cudaMallocAsync, release threshold at its maximum so freed blocks
 * stay in the pool), the pinned staging ring that uploads host metadata,
 * host results of reductions, error reporting, and the op table itself.
 *
 * Errors. Ops return void (the table's contract), so a CUDA error is fatal:
 * "vla: cuda: <op>: <error>" and abort — a device fault is a broken
 * invariant, not bad input. Launches are checked with cudaGetLastError (no
 * synchronisation); faults inside kernels surface at the next
 * synchronising op, which names itself — VLA_CUDA_SYNC=1 synchronises after
 * every op so the message names the op that faulted. Out of memory in
 * `alloc` returns NULL (the caller reports it), anywhere else it is fatal. */
#include "tensor/cuda/internal.cuh"
#include "tensor/cuda/attn_kernels.cuh" /* VLA_ATTN_STAGE_* */

#include <cublasLt.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "tensor/attn_plan.h"
#include "tensor/cuda/gemm_plan.h"
#include "tensor/cuda/stage_ring.h"
}

#define RING_CHUNK ((size_t)4 << 20)
#define RING_CHUNKS 8
#define RESULT_BYTES VLA_CUDA_RESULT_BYTES
/* host → device copies up to this size go through the pinned ring */
#define SMALL_COPY ((size_t)256 << 10)

static vla_cuda_ctx ctx;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char init_error[512];
static bool init_ok;
static __thread bool thread_bound; /* cudaSetDevice is per host thread */

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static vla_stage_ring ring;
static char *ring_host, *ring_dev;
static cudaEvent_t ring_event[RING_CHUNKS];
static bool ring_recorded[RING_CHUNKS];

static pthread_mutex_t result_lock = PTHREAD_MUTEX_INITIALIZER;
static void *result_dev, *result_host;

static char device_info[512] = "no CUDA device";

static int env_int(const char *name, int dflt) {
    const char *e = getenv(name);
    return e && *e ? atoi(e) : dflt;
}

/* the rank on this node, as the launchers export it */
static int local_rank(void) {
    const char *names[] = {"VLA_CUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                           "LOCAL_RANK"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *e = getenv(names[i]);
        if (e && *e) return atoi(e);
    }
    return 0;
}

static void init_fail(const char *what, cudaError_t e) {
    snprintf(init_error, sizeof init_error, "cuda: %s: %s", what, cudaGetErrorString(e));
    cudaGetLastError();
}

/* Is there an NVIDIA device node or driver library here at all? Without
 * either, the runtime's "CUDA driver version is insufficient for CUDA
 * runtime version" (cudaErrorInsufficientDriver) and cudaErrorNoDevice
 * mean this machine has no GPU, not an old driver. */
static bool nvidia_present(void) {
    bool node = access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0 ||
                access("/dev/dxg", F_OK) == 0; /* WSL: the driver over /dev/dxg */
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_LAZY);
    if (lib) dlclose(lib);
    return node && lib != NULL;
}

static void init_once(void) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if ((e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) && !nvidia_present()) {
        snprintf(init_error, sizeof init_error,
                 "cuda: there is no usable NVIDIA GPU or driver on this machine (no /dev/nvidia* device or no libcuda.so.1; the CUDA "
                 "runtime says: %s); run on the CPU with --device=cpu (the default where no GPU is usable)",
                 cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    if (e != cudaSuccess) return init_fail("no usable CUDA device (cudaGetDeviceCount)", e);
    if (count < 1) {
        snprintf(init_error, sizeof init_error, "cuda: no CUDA device is visible (CUDA_VISIBLE_DEVICES?)");
        return;
    }
    ctx.device = local_rank() % count;
    if ((e = cudaSetDevice(ctx.device)) != cudaSuccess) return init_fail("cudaSetDevice", e);
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, ctx.device)) != cudaSuccess) return init_fail("cudaGetDeviceProperties", e);
    ctx.cc_major = prop.major, ctx.cc_minor = prop.minor, ctx.sm_count = prop.multiProcessorCount;
    ctx.smem_optin = prop.sharedMemPerBlockOptin;
    snprintf(device_info, sizeof device_info, "%s, cc %d.%d, %d SMs, %.1f GiB, device %d of %d", prop.name,
             prop.major, prop.minor, prop.multiProcessorCount, (double)prop.totalGlobalMem / (1 << 30), ctx.device,
             count);
    if (prop.major < 8) {
        snprintf(init_error, sizeof init_error,
                 "cuda: %s has compute capability %d.%d; this backend needs 8.0 or newer (built for sm_90a)",
                 prop.name, prop.major, prop.minor);
        return;
    }
    if ((e = cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking)) != cudaSuccess)
        return init_fail("creating the compute stream", e);
    if ((e = cudaStreamCreateWithFlags(&ctx.comm, cudaStreamNonBlocking)) != cudaSuccess)
        return init_fail("creating the communication stream", e);
    cudaMemPool_t pool;
    if ((e = cudaDeviceGetDefaultMemPool(&pool, ctx.device)) != cudaSuccess) return init_fail("memory pool", e);
    uint64_t keep = UINT64_MAX; /* freed memory stays in the pool: no return to the driver at each sync */
    if ((e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep)) != cudaSuccess)
        return init_fail("memory pool release threshold", e);
    cublasLtHandle_t lt;
    cublasStatus_t cs = cublasLtCreate(&lt);
    if (cs != CUBLAS_STATUS_SUCCESS) {
        snprintf(init_error, sizeof init_error, "cuda: cublasLtCreate failed (status %d)", (int)cs);
        return;
    }
    ctx.lt = lt;
    ctx.lt_ws_bytes = vla_lt_workspace_bytes(ctx.cc_major);
    if ((e = cudaMalloc(&ctx.lt_ws, ctx.lt_ws_bytes)) != cudaSuccess) return init_fail("cuBLASLt workspace", e);
    vla_stage_ring_init(&ring, RING_CHUNK, RING_CHUNKS);
    if ((e = cudaHostAlloc((void **)&ring_host, RING_CHUNK * RING_CHUNKS, cudaHostAllocDefault)) != cudaSuccess)
        return init_fail("pinned staging ring", e);
    if ((e = cudaMalloc((void **)&ring_dev, RING_CHUNK * RING_CHUNKS)) != cudaSuccess)
        return init_fail("device staging ring", e);
    for (int i = 0; i < RING_CHUNKS; i++)
        if ((e = cudaEventCreateWithFlags(&ring_event[i], cudaEventDisableTiming)) != cudaSuccess)
            return init_fail("staging events", e);
    if ((e = cudaHostAlloc(&result_host, RESULT_BYTES, cudaHostAllocDefault)) != cudaSuccess)
        return init_fail("pinned result area", e);
    if ((e = cudaMalloc(&result_dev, RESULT_BYTES)) != cudaSuccess) return init_fail("device result area", e);
    ctx.tf32 = env_int("VLA_CUDA_TF32", 0) != 0;
    ctx.sync_each = env_int("VLA_CUDA_SYNC", 0) != 0;
    const char *attn = getenv("VLA_CUDA_ATTN");
    ctx.attn_impl = attn && !strcmp(attn, "simt") ? 1 : 0;
    ctx.attn_q_splits = env_int("VLA_CUDA_ATTN_Q_SPLITS", 0);
    if (ctx.attn_q_splits < 0) ctx.attn_q_splits = 0;
    if (ctx.attn_q_splits > VLA_ATTN_MAX_SPLITS) ctx.attn_q_splits = VLA_ATTN_MAX_SPLITS;
    ctx.attn_kv_splits = env_int("VLA_CUDA_ATTN_KV_SPLITS", 0);
    if (ctx.attn_kv_splits < 0) ctx.attn_kv_splits = 0;
    if (ctx.attn_kv_splits > VLA_ATTN_MAX_SPLITS) ctx.attn_kv_splits = VLA_ATTN_MAX_SPLITS;
    const char *bwd = getenv("VLA_CUDA_ATTN_BACKWARD");
    ctx.attn_fused_dq = bwd && !strcmp(bwd, "fused");
    if (bwd && *bwd && strcmp(bwd, "fused") && strcmp(bwd, "two_pass"))
        fprintf(stderr, "vla: cuda: VLA_CUDA_ATTN_BACKWARD=%s is not two_pass or fused: two_pass it is\n", bwd);
    const char *staging = getenv("VLA_CUDA_ATTN_STAGING");
    ctx.attn_staging = VLA_ATTN_STAGE_AUTO;
    if (staging && !strcmp(staging, "f32")) ctx.attn_staging = VLA_ATTN_STAGE_F32;
    else if (staging && !strcmp(staging, "bf16")) ctx.attn_staging = VLA_ATTN_STAGE_BF16;
    else if (staging && !strcmp(staging, "prefetch")) ctx.attn_staging = VLA_ATTN_STAGE_PREFETCH;
    else if (staging && *staging && strcmp(staging, "auto"))
        fprintf(stderr, "vla: cuda: VLA_CUDA_ATTN_STAGING=%s is not auto, f32, bf16 or prefetch: auto it is\n", staging);
    thread_bound = true;
    init_ok = true;
}

extern "C" vla_status vla_cuda_probe(void) {
    pthread_once(&once, init_once);
    if (!init_ok) return vla_error(VLA_ERR_UNSUPPORTED, "%s", init_error);
    return VLA_OK;
}

extern "C" const char *vla_cuda_device_info(void) {
    pthread_once(&once, init_once);
    return init_ok ? device_info : init_error;
}

vla_cuda_ctx *vla_cuda_ctx_get(void) {
    pthread_once(&once, init_once);
    if (!init_ok) {
        fprintf(stderr, "vla: %s (the cuda backend was used without a device; check with `vla version`)\n",
                init_error);
        abort();
    }
    if (!thread_bound) {
        cudaSetDevice(ctx.device);
        thread_bound = true;
    }
    return &ctx;
}

extern "C" int vla_cuda_device_index(void) { return vla_cuda_ctx_get()->device; }
extern "C" void *vla_cuda_compute_stream(void) { return (void *)vla_cuda_ctx_get()->stream; }
extern "C" void *vla_cuda_comm_stream(void) { return (void *)vla_cuda_ctx_get()->comm; }
extern "C" void vla_cuda_note_comm_use(void) { vla_cuda_ctx_get()->comm_used = true; }

void vla_cuda_fatal(const char *what, cudaError_t e) {
    fprintf(stderr, "vla: cuda: %s: %s (%s)%s\n", what, cudaGetErrorString(e), cudaGetErrorName(e),
            ctx.sync_each ? "" : "; an error from an earlier kernel surfaces at the next synchronising op: rerun "
                                 "with VLA_CUDA_SYNC=1 to name the op that failed");
    fflush(stderr);
    abort();
}

void vla_cuda_error(const char *what, cudaError_t e) {
    if (!vla_cuda_capturing()) vla_cuda_fatal(what, e);
    cudaGetLastError();
    char why[200];
    snprintf(why, sizeof why, "%s: %s", what, cudaGetErrorName(e));
    vla_cuda_capture_fail(why);
}

/* every launch site checks right after its launch: counted there (ops.h, launches) */
static int64_t launch_count;
static int64_t cu_launches(void) { return __atomic_load_n(&launch_count, __ATOMIC_RELAXED); }
static int64_t cu_stat(vla_ops_stat what) {
    switch (what) {
    case VLA_STAT_ATTN_PLAN_BUILDS: return vla_cuda_attn_plan_builds();
    case VLA_STAT_GEMM_EMULATED: return vla_cuda_gemm_emulated();
    case VLA_STAT_ATTN_LAST_KV_SPLITS: return vla_cuda_attn_last_kv_splits();
    case VLA_STAT_ATTN_LAST_STAGING: return vla_cuda_attn_last_staging();
    case VLA_STAT_ATTN_LAST_Q_SPLITS: return vla_cuda_attn_last_q_splits();
    case VLA_STAT_ATTN_LAST_BACKWARD_PASSES: return vla_cuda_attn_last_backward_passes();
    case VLA_STAT_CAPTURED_REPLAYS: return vla_cuda_graph_replays();
    case VLA_STAT_OPERAND_CASTS: return vla_cuda_operand_casts();
    case VLA_STAT_DEVICE_USED_BYTES: {
        size_t free_b = 0, total_b = 0;
        return cudaMemGetInfo(&free_b, &total_b) == cudaSuccess ? (int64_t)(total_b - free_b) : -1;
    }
    case VLA_STAT_DEVICE_FREE_BYTES: {
        size_t free_b = 0, total_b = 0;
        return cudaMemGetInfo(&free_b, &total_b) == cudaSuccess ? (int64_t)free_b : -1;
    }
    default: break; /* the meta backend's figures */
    }
    return -1;
}

void vla_cuda_check(const char *what) {
    __atomic_fetch_add(&launch_count, 1, __ATOMIC_RELAXED);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) vla_cuda_error(what, e);
    if (ctx.sync_each && !vla_cuda_capturing()) {
        e = cudaStreamSynchronize(ctx.stream);
        if (e != cudaSuccess) vla_cuda_fatal(what, e);
    }
}

/* ---- memory ------------------------------------------------------------------- */

/* stream-ordered memory from the pool; while recording a region, memory the graph owns (memory nodes) */
static void *pool_alloc(size_t bytes, cudaStream_t s) {
    void *p = NULL;
    size_t rounded = (bytes + 255) & ~(size_t)255;
    cudaError_t e = cudaMallocAsync(&p, rounded ? rounded : 256, s);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

/* The table's alloc: memory the caller keeps. While recording it cannot be the graph's (it would not
 * outlive a launch): allocated for real, on a stream not being recorded; the recording keeps it if the
 * region frees it again, and fails if the region keeps it (graph.cu). */
static void *cu_alloc(size_t bytes) {
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    if (!vla_cuda_capturing()) return pool_alloc(bytes, c->stream);
    void *p = pool_alloc(bytes, c->comm);
    if (p && cudaStreamSynchronize(c->comm) != cudaSuccess) cudaGetLastError();
    vla_cuda_capture_note_alloc(p);
    return p;
}

/* NCCL may still read or write memory on the comm stream: freeing a tensor
 * (the table's free) waits for it. Only tensors from `alloc` reach NCCL
 * (gradient buckets, ZeRO-1's shards, the amaxes); the backend's own
 * scratch never does, so its frees skip the wait — they happen many times
 * per step, and each wait made the compute stream stop for every
 * all-reduce queued so far, so backward could not overlap the buckets
 * (issue 40). */
static void comm_fence(vla_cuda_ctx *c) {
    if (!c->comm_used) return;
    cudaEvent_t ev;
    VLA_CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "free: event");
    VLA_CUDA_OK(cudaEventRecord(ev, c->comm), "free: event record");
    VLA_CUDA_OK(cudaStreamWaitEvent(c->stream, ev, 0), "free: wait for communication");
    cudaEventDestroy(ev);
}

static void cu_free(void *p) {
    if (!p) return;
    if (vla_cuda_capture_defer_free(p)) return; /* recording: freed after it */
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    comm_fence(c);
    VLA_CUDA_OK(cudaFreeAsync(p, c->stream), "free");
}

void *vla_cuda_scratch(size_t bytes) {
    void *p = pool_alloc(bytes, vla_cuda_ctx_get()->stream);
    if (!p && vla_cuda_capturing()) { /* (a capture an earlier error invalidated refuses every call): the
                                       * recording fails and the body runs again plainly, where a real
                                       * shortage says so below */
        vla_cuda_capture_fail("scratch refused while recording");
        return NULL;
    }
    if (!p) {
        size_t f = 0, t = 0;
        cudaMemGetInfo(&f, &t);
        fprintf(stderr, "vla: cuda: out of device memory for %zu bytes of scratch (%.2f GiB free of %.2f); training: "
                        "--gradient_checkpointing keeps one layer's activations instead of every layer's, or a smaller "
                        "--batch_size with --gradient_accumulation_steps (`vla plan --config=NAME --batch=B --gpus=1` "
                        "budgets the memory)\n", bytes, (double)f / (1 << 30), (double)t / (1 << 30));
        abort();
    }
    return p;
}

void vla_cuda_scratch_free(void *p) {
    if (p) VLA_CUDA_OK(cudaFreeAsync(p, vla_cuda_ctx_get()->stream), "free (scratch)");
}

/* A region of the ring, or -1 (callers then go another way). */
static int64_t ring_take(vla_cuda_ctx *c, size_t bytes) {
    vla_stage_take t = vla_stage_ring_take(&ring, bytes);
    if (t.offset < 0) return -1;
    if (t.left >= 0) {
        VLA_CUDA_OK(cudaEventRecord(ring_event[t.left], c->stream), "staging ring: event");
        ring_recorded[t.left] = true;
    }
    if (t.entered >= 0 && ring_recorded[t.entered])
        VLA_CUDA_OK(cudaEventSynchronize(ring_event[t.entered]), "staging ring: waiting for a chunk");
    return t.offset;
}

static void cu_to_device(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    if (vla_cuda_capturing()) { /* the bytes kept with the recording; each launch copies them into dst */
        void *kept = vla_cuda_capture_upload(src, bytes);
        if (kept) VLA_CUDA_OK(cudaMemcpyAsync(dst, kept, bytes, cudaMemcpyDeviceToDevice, c->stream), "to_device");
        vla_cuda_check("to_device");
        return;
    }
    if (bytes <= SMALL_COPY) { /* through pinned memory: asynchronous, no staging inside the driver */
        pthread_mutex_lock(&ring_lock);
        int64_t off = ring_take(c, bytes);
        if (off >= 0) {
            memcpy(ring_host + off, src, bytes);
            VLA_CUDA_OK(cudaMemcpyAsync(dst, ring_host + off, bytes, cudaMemcpyHostToDevice, c->stream), "to_device");
            pthread_mutex_unlock(&ring_lock);
            vla_cuda_check("to_device");
            return;
        }
        pthread_mutex_unlock(&ring_lock);
    }
    /* Larger copies (a batch's images, weights at load) go through the ring a
     * chunk at a time too: a pageable cudaMemcpyAsync may wait for the
     * stream before the driver stages it (the CUDA runtime's "API
     * synchronization behavior"), so a step's image upload would wait for
     * the previous step's kernels. Re-entering a chunk waits for the copies
     * of eight chunks ago, which pipelines the host memcpy with the DMA. The
     * caller may reuse its buffer at once either way. */
    pthread_mutex_lock(&ring_lock);
    for (size_t done = 0; done < bytes;) {
        size_t piece = bytes - done < RING_CHUNK ? bytes - done : RING_CHUNK;
        int64_t off = ring_take(c, piece);
        if (off < 0) { /* cannot happen (a piece fits a chunk); the driver's way, to be safe */
            VLA_CUDA_OK(cudaMemcpyAsync((char *)dst + done, (const char *)src + done, bytes - done,
                                        cudaMemcpyHostToDevice, c->stream), "to_device");
            break;
        }
        memcpy(ring_host + off, (const char *)src + done, piece);
        VLA_CUDA_OK(cudaMemcpyAsync((char *)dst + done, ring_host + off, piece, cudaMemcpyHostToDevice, c->stream),
                    "to_device");
        done += piece;
    }
    pthread_mutex_unlock(&ring_lock);
    vla_cuda_check("to_device");
}

/* Every wait of an op for its results goes through here and is counted
 * (ops.h, host_waits); the explicit `sync` slot is the caller's and is not. */
static int64_t host_waits; /* atomic builtins: the file is C++ */
void vla_cuda_host_wait(const char *what) {
    if (vla_cuda_capturing()) { /* a recording cannot wait: it fails, and the region runs again plainly */
        vla_cuda_capture_fail("the region waits for results");
        return;
    }
    __atomic_fetch_add(&host_waits, 1, __ATOMIC_RELAXED);
    VLA_CUDA_OK(cudaStreamSynchronize(vla_cuda_ctx_get()->stream), what);
}
static int64_t cu_host_waits(void) { return __atomic_load_n(&host_waits, __ATOMIC_RELAXED); }

static void cu_to_host(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    if (vla_cuda_capturing()) { /* a copy into pageable memory would invalidate the capture itself: not issued */
        vla_cuda_capture_fail("the region reads results back (to_host)");
        return;
    }
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    VLA_CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), "to_host");
    vla_cuda_host_wait("to_host (waiting for the ops before it)");
}

/* Deferred reads (ops.h, read_later): a pinned slot per ticket, copied into in stream order with an
 * event after it; collecting waits for that event only, so the ops issued since keep the device busy.
 * Made at first use. */
static struct {
    unsigned char *pinned; /* VLA_READS_IN_FLIGHT slots of VLA_READ_LATER_BYTES */
    cudaEvent_t done[VLA_READS_IN_FLIGHT];
    size_t n[VLA_READS_IN_FLIGHT];
    bool open[VLA_READS_IN_FLIGHT], ready;
} later;
static pthread_mutex_t later_lock = PTHREAD_MUTEX_INITIALIZER;

static int cu_read_later(const void *src, size_t bytes) {
    if (vla_cuda_capturing()) { /* a recording reads nothing back: it fails, the body runs again plainly */
        vla_cuda_capture_fail("the region reads results back (read_later)");
        return -1;
    }
    if (bytes > VLA_READ_LATER_BYTES) return -1;
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    pthread_mutex_lock(&later_lock);
    if (!later.ready) {
        void *h = NULL;
        if (cudaMallocHost(&h, (size_t)VLA_READS_IN_FLIGHT * VLA_READ_LATER_BYTES) != cudaSuccess) {
            cudaGetLastError();
            pthread_mutex_unlock(&later_lock);
            return -1; /* no pinned memory: the caller reads with to_host */
        }
        later.pinned = (unsigned char *)h;
        for (int i = 0; i < VLA_READS_IN_FLIGHT; i++)
            VLA_CUDA_OK(cudaEventCreateWithFlags(&later.done[i], cudaEventDisableTiming | cudaEventBlockingSync),
                        "read_later's events");
        later.ready = true;
    }
    int t = 0;
    while (t < VLA_READS_IN_FLIGHT && later.open[t]) t++;
    if (t < VLA_READS_IN_FLIGHT) {
        VLA_CUDA_OK(cudaMemcpyAsync(later.pinned + (size_t)t * VLA_READ_LATER_BYTES, src, bytes,
                                    cudaMemcpyDeviceToHost, c->stream), "read_later");
        VLA_CUDA_OK(cudaEventRecord(later.done[t], c->stream), "read_later");
        later.open[t] = true, later.n[t] = bytes;
    } else
        t = -1;
    pthread_mutex_unlock(&later_lock);
    if (t >= 0) vla_cuda_check("read_later");
    return t;
}

static void cu_read_collect(int t, void *host_dst) {
    pthread_mutex_lock(&later_lock);
    if (t < 0 || t >= VLA_READS_IN_FLIGHT || !later.open[t]) {
        fprintf(stderr, "vla: cuda: read_collect of ticket %d, which is not open\n", t);
        abort();
    }
    VLA_CUDA_OK(cudaEventSynchronize(later.done[t]), "read_collect (waiting for the ops before its read)");
    memcpy(host_dst, later.pinned + (size_t)t * VLA_READ_LATER_BYTES, later.n[t]);
    later.open[t] = false;
    pthread_mutex_unlock(&later_lock);
}

static void cu_copy_bytes(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return;
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    VLA_CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream), "copy_bytes");
    vla_cuda_check("copy_bytes");
}

static void cu_sync(void) {
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    if (vla_cuda_capturing()) return vla_cuda_capture_fail("the region synchronises");
    VLA_CUDA_OK(cudaStreamSynchronize(c->stream), "sync");
}

/* ---- profiling marks (ops.h, mark): CUDA events on the compute stream ------------------------ */

/* A pool that grows and is reused after marks_reset; a profiled training
 * step places two marks per op (a few thousand). Not while recording a
 * region: the profiler runs regions op by op (tensor/profile.h). */
static cudaEvent_t *mark_ev;
static int64_t mark_used, mark_cap;
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t cu_mark(void) {
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    if (vla_cuda_capturing()) return -1;
    pthread_mutex_lock(&mark_lock);
    if (mark_used == mark_cap) {
        int64_t cap = mark_cap ? 2 * mark_cap : 4096;
        cudaEvent_t *ev = (cudaEvent_t *)realloc(mark_ev, sizeof *ev * (size_t)cap);
        if (!ev) {
            pthread_mutex_unlock(&mark_lock);
            return -1;
        }
        for (int64_t i = mark_cap; i < cap; i++)
            if (cudaEventCreate(&ev[i]) != cudaSuccess) {
                cudaGetLastError();
                cap = i;
                break;
            }
        mark_ev = ev, mark_cap = cap;
        if (mark_used == mark_cap) {
            pthread_mutex_unlock(&mark_lock);
            return -1;
        }
    }
    int64_t h = mark_used++;
    VLA_CUDA_OK(cudaEventRecord(mark_ev[h], c->stream), "profiling mark");
    pthread_mutex_unlock(&mark_lock);
    return h;
}

static double cu_mark_ms(int64_t a, int64_t b) {
    if (a < 0 || b < 0 || a >= mark_used || b >= mark_used) return 0;
    float ms = 0;
    VLA_CUDA_OK(cudaEventSynchronize(mark_ev[b]), "profiling mark");
    VLA_CUDA_OK(cudaEventElapsedTime(&ms, mark_ev[a], mark_ev[b]), "profiling mark");
    return ms;
}

static void cu_marks_reset(void) {
    pthread_mutex_lock(&mark_lock);
    mark_used = 0;
    pthread_mutex_unlock(&mark_lock);
}

vla_cuda_upload_t vla_cuda_upload(const void *host, size_t bytes) {
    vla_cuda_upload_t u = {NULL, false};
    if (!host) return u;
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    if (!bytes) bytes = 1;
    if (vla_cuda_capturing()) { /* kept with the recording: its kernels read it at every launch */
        u.dev = vla_cuda_capture_upload(host, bytes);
        if (!u.dev) u.dev = ring_dev; /* the recording has failed; something readable meanwhile */
        return u;
    }
    pthread_mutex_lock(&ring_lock);
    int64_t off = ring_take(c, bytes);
    if (off >= 0) {
        memcpy(ring_host + off, host, bytes);
        VLA_CUDA_OK(cudaMemcpyAsync(ring_dev + off, ring_host + off, bytes, cudaMemcpyHostToDevice, c->stream),
                    "upload of host metadata");
        pthread_mutex_unlock(&ring_lock);
        u.dev = ring_dev + off;
        return u;
    }
    pthread_mutex_unlock(&ring_lock);
    u.dev = vla_cuda_scratch(bytes); /* larger than a chunk: a buffer of its own */
    u.temp = true;
    VLA_CUDA_OK(cudaMemcpyAsync(u.dev, host, bytes, cudaMemcpyHostToDevice, c->stream), "upload of host metadata");
    return u;
}

void vla_cuda_upload_release(vla_cuda_upload_t *u) {
    if (u->temp) vla_cuda_scratch_free(u->dev);
    u->dev = NULL;
    u->temp = false;
}

void *vla_cuda_result_dev(void) { return result_dev; }
void *vla_cuda_result_host(void) { return result_host; }
void vla_cuda_result_lock(void) { pthread_mutex_lock(&result_lock); }
void vla_cuda_result_unlock(void) { pthread_mutex_unlock(&result_lock); }

void vla_cuda_result_fetch(size_t bytes, const char *what) {
    vla_cuda_ctx *c = vla_cuda_ctx_get();
    VLA_CUDA_OK(cudaGetLastError(), what);
    VLA_CUDA_OK(cudaMemcpyAsync(result_host, result_dev, bytes, cudaMemcpyDeviceToHost, c->stream), what);
    vla_cuda_host_wait(what);
}

/* ---- the table ------------------------------------------------------------------- */

#define SLOT(name) tbl.name = vla_cuda_##name

static vla_ops tbl;
static pthread_once_t tbl_once = PTHREAD_ONCE_INIT;

static void tbl_init(void) {
    tbl.name = "cuda";
    tbl.device = VLA_DEVICE_CUDA;
    tbl.host_memory = false;
    /* The policy suites' largest relative difference from cpu in f32 (TF32
     * off): cuBLASLt's and the kernels' summation orders differ from
     * OpenBLAS's and the CPU's fixed lanes; docs/cuda.md, "Tolerance". */
    tbl.rtol = 2e-4;
    tbl.sync = cu_sync;
    tbl.host_waits = cu_host_waits;
    tbl.launches = cu_launches;
    tbl.stat = cu_stat;
    tbl.run_captured = vla_cuda_run_captured;
    tbl.mark = cu_mark;
    tbl.mark_ms = cu_mark_ms;
    tbl.marks_reset = cu_marks_reset;
    tbl.alloc = cu_alloc;
    tbl.free = cu_free;
    tbl.to_device = cu_to_device;
    tbl.to_host = cu_to_host;
    tbl.read_later = cu_read_later;
    tbl.read_collect = cu_read_collect;
    tbl.copy_bytes = cu_copy_bytes;
    SLOT(sgemm);
    SLOT(sgemm_strided_batched);
    SLOT(sgemm_q);
    SLOT(sgemm_epi);
    SLOT(ready_bytes);
    SLOT(prepare_operand);
    SLOT(prepare_operand_pair);
    SLOT(fp8_scale_update);
    SLOT(fill);
    SLOT(copy);
    SLOT(add);
    SLOT(sub);
    SLOT(mul);
    SLOT(axpy);
    SLOT(scale);
    SLOT(affine);
    SLOT(scale_to);
    SLOT(add_row_vector);
    SLOT(copy_rows);
    SLOT(add_rows);
    SLOT(copy2d);
    SLOT(im2col);
    SLOT(col2im_add);
    SLOT(sum);
    SLOT(dot);
    SLOT(sum_squares);
    SLOT(segment_linear_forward);
    SLOT(segment_linear_backward);
    SLOT(sum_squares_multi);
    SLOT(sum_squares_total);
    SLOT(max_abs);
    SLOT(count_nonfinite);
    SLOT(find_nonfinite);
    SLOT(sum_rows);
    SLOT(softmax_rows);
    SLOT(softmax_rows_backward);
    SLOT(attention_mask);
    SLOT(act_forward);
    SLOT(act_backward);
    SLOT(glu_forward);
    SLOT(glu_backward);
    SLOT(layernorm_forward);
    SLOT(layernorm_backward);
    SLOT(rmsnorm_forward);
    SLOT(rmsnorm_backward);
    SLOT(adaln_forward);
    SLOT(adaln_backward);
    SLOT(adarms_forward);
    SLOT(adarms_backward);
    SLOT(gated_residual_forward);
    SLOT(gated_residual_backward);
    SLOT(rope_forward);
    SLOT(rope_backward);
    SLOT(time_embedding_forward);
    SLOT(time_embedding_backward);
    SLOT(attention_forward);
    SLOT(attention_backward);
    SLOT(attention_forward_cached);
    SLOT(flow_interpolate);
    SLOT(masked_mse);
    SLOT(masked_mse_acc);
    SLOT(adamw);
    SLOT(ema);
    SLOT(clip_coef);
    SLOT(adamw_multi);
    SLOT(ema_multi);
    SLOT(convert);
}

/* The table needs no device: it is returned (and listed by `vla version`)
 * on any machine; the first op initialises the device. */
extern "C" const vla_ops *vla_cuda_backend_table(void) {
    pthread_once(&tbl_once, tbl_init);
    return &tbl;
}

/* synthetic.c — test helper: a synthetic MLP regression trained data-parallel
 * with the whole distributed layer (see synthetic.h). */
#include "synthetic.h"

#include "base/flags.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"
#include "base/rng.h"
#include "base/timer.h"
#include "distributed/comm.h"
#include "distributed/grad_buckets.h"
#include "distributed/sampler.h"
#include "distributed/zero1.h"
#include "tensor/backend.h"
#include "io/safetensors.h"
#include "tensor/ops.h"

#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LAYERS 16

void vla_synth_defaults(vla_synth_opts *o) {
    *o = (vla_synth_opts){0};
    o->dims = "16,32,32,4";
    o->samples = 256;
    o->seed = 1;
    o->batch = 8;
    o->accum = 1;
    o->steps = 5;
    o->lr = 1e-2;
    o->wd = 0.01;
    o->max_grad_norm = 1.0;
    o->bucket_bytes = 0;
    o->mode = "buckets";
    o->die_rank = o->die_step = o->hang_rank = o->hang_step = -1;
    o->warmup = 0;
}

int vla_synth_parse(vla_synth_opts *o, const char *command, int argc, char **argv) {
    const vla_flag flags[] = {
        {"dims", VLA_FLAG_STRING, &o->dims, "D0,D1,…", "layer widths: input, hidden…, output"},
        {"samples", VLA_FLAG_INT, &o->samples, "N", "synthetic dataset size"},
        {"seed", VLA_FLAG_INT, &o->seed, "S", "seed of init, data and sampler order"},
        {"batch", VLA_FLAG_INT, &o->batch, "B", "per-rank micro-batch"},
        {"accum", VLA_FLAG_INT, &o->accum, "A", "gradient accumulation steps"},
        {"steps", VLA_FLAG_INT, &o->steps, "N", "optimizer steps to run"},
        {"lr", VLA_FLAG_FLOAT, &o->lr, "X", "AdamW learning rate"},
        {"wd", VLA_FLAG_FLOAT, &o->wd, "X", "AdamW decoupled weight decay"},
        {"max-grad-norm", VLA_FLAG_FLOAT, &o->max_grad_norm, "X", "global-norm clipping (0: off)"},
        {"bucket-bytes", VLA_FLAG_INT, &o->bucket_bytes, "BYTES", "gradient bucket size (0: 25 MiB)"},
        {"mode", VLA_FLAG_STRING, &o->mode, "M", "buckets (overlapped all-reduce) | reduce-scatter"},
        {"save", VLA_FLAG_STRING, &o->save, "DIR", "write a checkpoint after the last step"},
        {"resume", VLA_FLAG_STRING, &o->resume, "DIR", "resume from a checkpoint (any world size)"},
        {"out-params", VLA_FLAG_STRING, &o->out_params, "FILE", "rank 0 writes final parameters (raw f32)"},
        {"die-rank", VLA_FLAG_INT, &o->die_rank, "R", "fault injection: this rank SIGKILLs itself"},
        {"die-step", VLA_FLAG_INT, &o->die_step, "S", "… at this step"},
        {"hang-rank", VLA_FLAG_INT, &o->hang_rank, "R", "fault injection: this rank hangs"},
        {"hang-step", VLA_FLAG_INT, &o->hang_step, "S", "… at this step"},
        {"timeout", VLA_FLAG_FLOAT, &o->timeout_s, "S", "collective watchdog timeout (0: default)"},
        {"threads", VLA_FLAG_INT, &o->threads, "N", "OpenMP threads per rank (0: unchanged)"},
        {"warmup", VLA_FLAG_INT, &o->warmup, "N", "steps excluded from timing"},
        {"compute-ms", VLA_FLAG_FLOAT, &o->compute_ms, "MS", "extra busy time per layer in backward"},
        {"json", VLA_FLAG_BOOL, &o->json, NULL, "one JSON line per step"},
        {"bench", VLA_FLAG_BOOL, &o->bench, NULL, "print a throughput summary"},
    };
    const vla_command_spec spec = {command, NULL, "Train a synthetic MLP data-parallel (dist layer check).",
                                   NULL, flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    vla_status st = vla_flags_parse(&spec, argc, argv, &res);
    if (res.help) {
        vla_flags_print_help(&spec, stdout);
        return 0;
    }
    if (st != VLA_OK) {
        fprintf(stderr, "%s: error: %s\n", command, vla_error_message());
        return 2;
    }
    return -1;
}

typedef struct {
    int L;
    int64_t d[MAX_LAYERS + 1];
    int64_t woff[MAX_LAYERS], boff[MAX_LAYERS];
    int64_t numel, sizes[2 * MAX_LAYERS];
    float *teacher; /* [d_L, d_0] */
    uint64_t data_seed;
} model;

static vla_status parse_dims(const char *s, model *m) {
    m->L = -1;
    const char *p = s;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 20 || m->L + 1 > MAX_LAYERS)
            return vla_error(VLA_ERR_INVALID_ARG, "--dims '%s': expected up to %d positive widths", s,
                             MAX_LAYERS + 1);
        m->d[++m->L] = v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return vla_error(VLA_ERR_INVALID_ARG, "--dims '%s': bad character", s);
    }
    if (m->L < 1) return vla_error(VLA_ERR_INVALID_ARG, "--dims '%s': need at least input and output", s);
    int64_t off = 0;
    for (int l = 0; l < m->L; l++) {
        m->woff[l] = off, m->sizes[2 * l] = m->d[l + 1] * m->d[l], off += m->sizes[2 * l];
        m->boff[l] = off, m->sizes[2 * l + 1] = m->d[l + 1], off += m->sizes[2 * l + 1];
    }
    m->numel = off;
    return VLA_OK;
}

static void init_params(const model *m, uint64_t seed, float *p) {
    for (int l = 0; l < m->L; l++) {
        vla_rng r = vla_rng_stream(seed, 1000 + (uint64_t)l);
        float sc = 1.0f / sqrtf((float)m->d[l]);
        for (int64_t i = 0; i < m->sizes[2 * l]; i++) p[m->woff[l] + i] = (float)vla_rng_normal(&r) * sc;
        for (int64_t i = 0; i < m->sizes[2 * l + 1]; i++) p[m->boff[l] + i] = 0;
    }
}

static void make_sample(const model *m, int64_t idx, float *x, float *t) {
    int64_t d0 = m->d[0], dl = m->d[m->L];
    vla_rng r = vla_rng_stream(m->data_seed, (uint64_t)idx);
    for (int64_t k = 0; k < d0; k++) x[k] = (float)vla_rng_normal(&r);
    for (int64_t j = 0; j < dl; j++) {
        double s = 0;
        for (int64_t k = 0; k < d0; k++) s += (double)m->teacher[j * d0 + k] * x[k];
        t[j] = (float)sin(s);
    }
}

/* Stand-in for more backward kernels: busy for `ms`, polling the buckets in
 * flight about every 0.5 ms as a trainer does between kernels (OpenMPI's
 * non-blocking collectives advance only inside MPI calls). */
static vla_status busy_ms(double ms, vla_grad_buckets *buckets) {
    if (ms <= 0) return VLA_OK;
    double now = vla_now_s(), end = now + ms * 1e-3, next = now;
    while ((now = vla_now_s()) < end) {
        if (buckets && now >= next) {
            VLA_TRY(vla_grad_buckets_progress(buckets));
            next = now + 0.5e-3;
        }
    }
    return VLA_OK;
}

typedef struct {
    float **h;     /* activations per layer, h[0] = x, [B, d_l] */
    float *target;
    float *dh, *dz;
} workspace;

/* Forward + backward of one micro-batch; grads accumulate (scaled by
 * `scale`); returns the batch's mean loss. Marks params ready when `buckets`. */
static vla_status fwd_bwd(const vla_ops *ops, const model *m, const float *P, float *G, workspace *w, int64_t B,
                          float scale, vla_grad_buckets *buckets, double compute_ms, double *loss) {
    int L = m->L;
    for (int l = 0; l < L; l++) {
        int64_t din = m->d[l], dout = m->d[l + 1];
        float *z = w->h[l + 1];
        ops->sgemm(false, true, B, dout, din, 1.0f, w->h[l], din, P + m->woff[l], din, 0.0f, z, dout);
        ops->add_row_vector(z, P + m->boff[l], B, dout);
        if (l < L - 1)
            for (int64_t i = 0; i < B * dout; i++) z[i] = tanhf(z[i]);
    }
    int64_t dl = m->d[L];
    double ls = 0;
    float *y = w->h[L], *dz = w->dz;
    float g = 2.0f / (float)(B * dl) * scale;
    for (int64_t i = 0; i < B * dl; i++) {
        float e = y[i] - w->target[i];
        ls += (double)e * e;
        dz[i] = g * e;
    }
    *loss = ls / (double)(B * dl);
    for (int l = L - 1; l >= 0; l--) {
        int64_t din = m->d[l], dout = m->d[l + 1];
        /* dz holds dL/dz_l [B, dout] */
        ops->sgemm(true, false, dout, din, B, 1.0f, dz, dout, w->h[l], din, 1.0f, G + m->woff[l], din);
        ops->sum_rows(G + m->boff[l], dz, B, dout, 1.0f);
        VLA_TRY(busy_ms(compute_ms, buckets));
        if (buckets) {
            VLA_TRY(vla_grad_buckets_mark_ready(buckets, 2 * l + 1));
            VLA_TRY(vla_grad_buckets_mark_ready(buckets, 2 * l));
        }
        if (l > 0) {
            ops->sgemm(false, false, B, din, dout, 1.0f, dz, dout, P + m->woff[l], din, 0.0f, w->dh, din);
            const float *h = w->h[l];
            for (int64_t i = 0; i < B * din; i++) dz[i] = w->dh[i] * (1.0f - h[i] * h[i]);
        }
    }
    return VLA_OK;
}

static vla_status save_checkpoint(vla_comm *comm, const model *m, const float *P, vla_zero1 *z,
                                  const vla_sampler *s, int64_t step, const char *dir) {
    int rank = vla_comm_rank(comm);
    vla_status st = vla_mkdirs(dir);
    char path[4096];
    if (st == VLA_OK && rank == 0) {
        snprintf(path, sizeof path, "%s/params.safetensors", dir);
        vla_safetensors_writer *w;
        st = vla_safetensors_writer_new(&w);
        if (st == VLA_OK) {
            int64_t shape[1] = {m->numel};
            st = vla_safetensors_writer_add(w, "params", VLA_F32, 1, shape, P);
            if (st == VLA_OK) st = vla_safetensors_writer_write(w, path);
            vla_safetensors_writer_free(w);
        }
    }
    VLA_TRY(vla_comm_agree(comm, st, "checkpoint: writing params"));
    VLA_TRY(vla_zero1_save(z, dir)); /* OK on every rank only if every shard was written */
    if (rank == 0) {
        vla_sampler_pos pos = vla_sampler_tell(s);
        json_t *j = json_pack("{s:s,s:I,s:I,s:I,s:i,s:I,s:I}", "format", "vla-synth-ckpt-v1", "step",
                              (json_int_t)step, "epoch", (json_int_t)pos.epoch, "cursor", (json_int_t)pos.cursor,
                              "world", vla_comm_world(comm), "global_batch",
                              (json_int_t)vla_sampler_global_batch(s), "numel", (json_int_t)m->numel);
        snprintf(path, sizeof path, "%s/manifest.json", dir);
        st = j ? vla_json_write_file(path, j) : vla_error(VLA_ERR_NOMEM, "checkpoint: manifest");
        json_decref(j);
    }
    return vla_comm_agree(comm, st, "checkpoint: writing manifest.json");
}

static vla_status load_checkpoint(vla_comm *comm, const model *m, float *P, vla_zero1 *z, vla_sampler *s,
                                  const char *dir, int64_t *step) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (!vla_path_exists(path))
        return vla_error(VLA_ERR_NOT_FOUND, "checkpoint %s is incomplete: %s is missing", dir, path);
    json_t *j;
    VLA_TRY(vla_json_load_file(path, &j));
    int64_t epoch, cursor, gb, numel, world;
    vla_status st = vla_json_get_int(path, j, "step", step);
    if (st == VLA_OK) st = vla_json_get_int(path, j, "epoch", &epoch);
    if (st == VLA_OK) st = vla_json_get_int(path, j, "cursor", &cursor);
    if (st == VLA_OK) st = vla_json_get_int(path, j, "global_batch", &gb);
    if (st == VLA_OK) st = vla_json_get_int(path, j, "numel", &numel);
    if (st == VLA_OK) st = vla_json_get_int(path, j, "world", &world);
    json_decref(j);
    VLA_TRY(st);
    if (numel != m->numel)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: %lld parameters, the model has %lld", path, (long long)numel,
                         (long long)m->numel);
    if (gb != vla_sampler_global_batch(s))
        return vla_error(VLA_ERR_INVALID_ARG,
                         "%s: written with global batch %lld, this run has %lld (per-rank batch × ranks × "
                         "accumulation must match to resume)", path, (long long)gb,
                         (long long)vla_sampler_global_batch(s));
    snprintf(path, sizeof path, "%s/params.safetensors", dir);
    vla_safetensors f;
    VLA_TRY(vla_safetensors_open(path, &f));
    st = vla_safetensors_load_f32(&f, "params", P, (size_t)m->numel);
    vla_safetensors_close(&f);
    VLA_TRY(st);
    VLA_TRY(vla_zero1_load(z, dir));
    VLA_TRY(vla_sampler_seek(s, (vla_sampler_pos){epoch, cursor}));
    if (vla_comm_rank(comm) == 0)
        VLA_INFO("resumed %s at step %lld (written by %lld ranks, now %d)", dir, (long long)*step,
                 (long long)world, vla_comm_world(comm));
    return VLA_OK;
}

typedef struct {
    vla_comm *comm;
    model m;
    float *P, *G;
    workspace w;
    float *x;
    int64_t *idx;
    vla_grad_buckets *buckets;
    vla_zero1 *z;
    vla_sampler s;
} run_state;

static void run_free(run_state *r) {
    vla_grad_buckets_free(r->buckets);
    vla_zero1_free(r->z);
    vla_sampler_free(&r->s);
    if (r->w.h)
        for (int l = 1; l <= r->m.L; l++) free(r->w.h[l]);
    free(r->w.h);
    free(r->w.target), free(r->w.dh), free(r->w.dz);
    free(r->x), free(r->idx), free(r->P), free(r->G), free(r->m.teacher);
    vla_comm_finalize(r->comm);
}

static vla_status train(run_state *r, const vla_synth_opts *o, FILE *out) {
    const vla_ops *ops = vla_backend_find("cpu");
    model *m = &r->m;
    VLA_TRY(parse_dims(o->dims, m));
    bool use_buckets = !strcmp(o->mode, "buckets");
    if (!use_buckets && strcmp(o->mode, "reduce-scatter"))
        return vla_error(VLA_ERR_INVALID_ARG, "--mode '%s': expected buckets or reduce-scatter", o->mode);
    if (o->threads > 0) omp_set_num_threads((int)o->threads);
    vla_comm_options co = {VLA_COMM_AUTO, o->timeout_s};
    VLA_TRY(vla_comm_init(&co, &r->comm));
    int rank = vla_comm_rank(r->comm), world = vla_comm_world(r->comm);

    int64_t B = o->batch, d0 = m->d[0], dl = m->d[m->L], dmax = 0;
    for (int l = 0; l <= m->L; l++) dmax = m->d[l] > dmax ? m->d[l] : dmax;
    m->data_seed = (uint64_t)o->seed * 0x9E3779B97F4A7C15ull + 17;
    m->teacher = malloc(sizeof(float) * (size_t)(dl * d0));
    r->P = malloc(sizeof(float) * (size_t)m->numel);
    r->G = malloc(sizeof(float) * (size_t)m->numel);
    r->w.h = calloc((size_t)m->L + 1, sizeof(float *));
    r->w.target = malloc(sizeof(float) * (size_t)(B * dl));
    r->w.dh = malloc(sizeof(float) * (size_t)(B * dmax));
    r->w.dz = malloc(sizeof(float) * (size_t)(B * dmax));
    r->x = malloc(sizeof(float) * (size_t)(B * d0));
    r->idx = malloc(sizeof(int64_t) * (size_t)B);
    if (!m->teacher || !r->P || !r->G || !r->w.h || !r->w.target || !r->w.dh || !r->w.dz || !r->x || !r->idx)
        return vla_error(VLA_ERR_NOMEM, "synthetic: out of memory");
    r->w.h[0] = r->x;
    for (int l = 1; l <= m->L; l++)
        if (!(r->w.h[l] = malloc(sizeof(float) * (size_t)(B * m->d[l]))))
            return vla_error(VLA_ERR_NOMEM, "synthetic: out of memory");
    vla_rng tr = vla_rng_stream(m->data_seed, UINT64_MAX);
    for (int64_t i = 0; i < dl * d0; i++) m->teacher[i] = (float)vla_rng_normal(&tr) / sqrtf((float)d0);
    init_params(m, (uint64_t)o->seed, r->P);

    VLA_TRY(vla_sampler_init(&r->s, o->samples, (uint64_t)o->seed, true, rank, world, B, o->accum));
    VLA_TRY(vla_zero1_create(r->comm, vla_backend_find("cpu"), m->numel, &r->z));
    if (use_buckets)
        VLA_TRY(vla_grad_buckets_create(r->comm, vla_backend_find("cpu"), r->G, m->sizes, 2 * m->L, (size_t)o->bucket_bytes, &r->buckets));
    int64_t step0 = 0;
    if (o->resume) VLA_TRY(load_checkpoint(r->comm, m, r->P, r->z, &r->s, o->resume, &step0));

    vla_adamw_hparams hp = {.lr = o->lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = o->wd,
                            .max_grad_norm = (float)o->max_grad_norm, .grad_mul = 1.0};
    double t_timed = 0, blocked_timed = 0;
    int64_t timed_steps = 0, started_bw = 0, completed_bw = 0;
    for (int64_t k = 0; k < o->steps; k++) {
        int64_t step = step0 + k + 1;
        if (rank == o->die_rank && step == o->die_step) {
            fprintf(stderr, "synthetic: rank %d: fault injection, SIGKILL at step %lld\n", rank, (long long)step);
            fflush(stderr);
            raise(SIGKILL);
        }
        if (rank == o->hang_rank && step == o->hang_step) {
            fprintf(stderr, "synthetic: rank %d: fault injection, hanging at step %lld\n", rank, (long long)step);
            fflush(stderr);
            for (;;) sleep(1);
        }
        double t0 = vla_now_s(), b0 = vla_comm_blocked_s(r->comm);
        memset(r->G, 0, sizeof(float) * (size_t)m->numel);
        if (r->buckets) VLA_TRY(vla_grad_buckets_begin(r->buckets));
        double loss = 0;
        for (int64_t mb = 0; mb < o->accum; mb++) {
            VLA_TRY(vla_sampler_indices(&r->s, mb, r->idx));
            for (int64_t i = 0; i < B; i++) make_sample(m, r->idx[i], r->x + i * d0, r->w.target + i * dl);
            double l1;
            bool last = mb == o->accum - 1;
            VLA_TRY(fwd_bwd(ops, m, r->P, r->G, &r->w, B, 1.0f / (float)o->accum, last ? r->buckets : NULL,
                            o->compute_ms, &l1));
            loss += l1 / (double)o->accum;
        }
        double gnorm = 0;
        VLA_TRY(vla_zero1_step(r->z, r->P, r->G, use_buckets ? VLA_ZERO1_GRADS_AVERAGED : VLA_ZERO1_REDUCE_SCATTER,
                               &hp, r->buckets, &gnorm));
        double t1 = vla_now_s(), b1 = vla_comm_blocked_s(r->comm);
        VLA_TRY(vla_sampler_advance(&r->s));
        VLA_TRY(vla_comm_allreduce(r->comm, &loss, &loss, 1, VLA_COMM_F64, VLA_COMM_MEAN));
        if (k >= o->warmup) {
            t_timed += t1 - t0, blocked_timed += b1 - b0, timed_steps++;
            if (r->buckets) {
                vla_grad_buckets_stats bs = vla_grad_buckets_get_stats(r->buckets);
                started_bw += bs.started_before_wait, completed_bw += bs.completed_before_wait;
            }
        }
        if (rank == 0 && o->json) {
            fprintf(out, "{\"step\":%lld,\"loss\":%.9g,\"grad_norm\":%.9g,\"ms\":%.3f}\n", (long long)step, loss,
                    gnorm, (t1 - t0) * 1e3);
            fflush(out);
        }
    }
    int64_t final_step = step0 + o->steps;
    if (o->save) VLA_TRY(save_checkpoint(r->comm, m, r->P, r->z, &r->s, final_step, o->save));
    if (rank == 0 && o->out_params)
        VLA_TRY(vla_write_file_atomic(o->out_params, r->P, sizeof(float) * (size_t)m->numel));
    if (o->bench && timed_steps > 0) {
        /* the slowest rank sets the pace; report rank-maxima */
        double v[2] = {t_timed, blocked_timed};
        VLA_TRY(vla_comm_allreduce(r->comm, v, v, 2, VLA_COMM_F64, VLA_COMM_MAX));
        int64_t G = vla_sampler_global_batch(&r->s);
        int nb = r->buckets ? vla_grad_buckets_count(r->buckets) : 0;
        if (rank == 0)
            fprintf(out,
                    "{\"bench\":\"dist\",\"ranks\":%d,\"threads\":%d,\"mode\":\"%s\",\"params\":%lld,"
                    "\"global_batch\":%lld,\"steps\":%lld,\"step_ms\":%.3f,\"samples_per_s\":%.1f,"
                    "\"exposed_comm_ms\":%.3f,\"exposed_comm_frac\":%.4f,\"buckets\":%d,"
                    "\"buckets_started_during_backward\":%.2f,\"buckets_done_during_backward\":%.2f,"
                    "\"opt_state_bytes_per_rank\":%zu}\n",
                    world, omp_get_max_threads(), o->mode, (long long)m->numel, (long long)G,
                    (long long)timed_steps, v[0] / timed_steps * 1e3, (double)G * timed_steps / v[0],
                    v[1] / timed_steps * 1e3, v[1] / v[0], nb, (double)started_bw / timed_steps,
                    (double)completed_bw / timed_steps, vla_zero1_state_bytes(r->z));
    }
    if (rank == 0 && o->json) {
        fprintf(out, "{\"done\":true,\"ranks\":%d,\"step\":%lld,\"buckets\":%d,\"started_during_backward\":%lld,"
                     "\"completed_during_backward\":%lld,\"opt_state_bytes\":%zu}\n",
                world, (long long)final_step, r->buckets ? vla_grad_buckets_count(r->buckets) : 0,
                (long long)started_bw, (long long)completed_bw, vla_zero1_state_bytes(r->z));
        fflush(out);
    }
    return VLA_OK;
}

vla_status vla_synth_train(const vla_synth_opts *o, FILE *out) {
    run_state r = {0};
    vla_status st = train(&r, o, out);
    if (st != VLA_OK) {
        /* keep the message: finalize may clobber nothing, but be explicit */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", vla_error_message());
        int rank = r.comm ? vla_comm_rank(r.comm) : 0;
        fprintf(stderr, "synthetic: rank %d: %s\n", rank, msg);
        /* other ranks may be blocked in a collective waiting for this one */
        if (r.comm && vla_comm_world(r.comm) > 1) vla_comm_abort(r.comm, vla_status_exit_code(st));
        run_free(&r);
        return vla_error(st, "%s", msg);
    }
    run_free(&r);
    return VLA_OK;
}

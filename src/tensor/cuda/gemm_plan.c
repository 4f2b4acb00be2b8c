/* gemm_plan.c — row-major GEMMs as cuBLASLt products, quantized-GEMM
 * decisions and the descriptor cache (gemm_plan.h). */
#include "tensor/cuda/gemm_plan.h"

#include <stdlib.h>
#include <string.h>

vla_lt_gemm vla_lt_from_rowmajor(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                 int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c) {
    vla_lt_gemm g;
    memset(&g, 0, sizeof g);
    g.trans_a = tb, g.trans_b = ta;
    g.m = n, g.n = m, g.k = k;
    /* cuBLASLt's A = caller's B, stored column-major as (tb ? k×n : n×k) */
    g.a_rows = tb ? k : n, g.a_cols = tb ? n : k, g.lda = ldb;
    /* cuBLASLt's B = caller's A, stored as (ta ? m×k : k×m) */
    g.b_rows = ta ? m : k, g.b_cols = ta ? k : m, g.ldb = lda;
    g.c_rows = n, g.c_cols = m, g.ldc = ldc;
    g.batch = batch < 1 ? 1 : batch;
    g.stride_a = stride_b, g.stride_b = stride_a, g.stride_c = stride_c;
    return g;
}

static vla_lt_type fp8_type(vla_fp8_format f) { return f == VLA_FP8_E5M2 ? VLA_LT_E5M2 : VLA_LT_E4M3; }

vla_q_plan vla_q_plan_make(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t ldc,
                           uintptr_t c_addr) {
    vla_q_plan p;
    memset(&p, 0, sizeof p);
    if (q->mode != VLA_PREC_FP8) { /* bf16: copies in the stored layouts, the caller's transposes */
        p.a_type = p.b_type = VLA_LT_BF16;
        p.kp = k;
        p.a_rows = ta ? k : m, p.a_cols = ta ? m : k, p.a_ld = vla_q_bf16_ld(p.a_cols);
        p.b_rows = tb ? n : k, p.b_cols = tb ? k : n, p.b_ld = vla_q_bf16_ld(p.b_cols);
        p.use_lt = true;
        p.lt = vla_lt_from_rowmajor(ta, tb, m, n, k, p.a_ld, p.b_ld, ldc, 1, 0, 0, 0);
        return p;
    }
    /* FP8: K-major copies, TN */
    p.a_transpose = ta, p.b_transpose = !tb;
    p.a_type = fp8_type(q->a.fmt), p.b_type = fp8_type(q->b.fmt);
    p.kp = vla_q_fp8_ld(k);
    bool types_ok = !(p.a_type == VLA_LT_E5M2 && p.b_type == VLA_LT_E5M2);
    /* column-major D is n×m f32: n·4 and ldc·4 multiples of 16, pointer 16-byte aligned */
    bool c_ok = n % 4 == 0 && ldc % 4 == 0 && c_addr % 16 == 0;
    p.use_lt = types_ok && c_ok;
    p.fast_accum = p.a_type == VLA_LT_E4M3 && p.b_type == VLA_LT_E4M3;
    p.a_rows = m, p.a_cols = k, p.a_ld = p.kp, p.b_rows = n, p.b_cols = k, p.b_ld = p.kp;
    /* the copies: op(A) as [m][kp] (row-major, not transposed), op(B) as [n][kp] (transposed) */
    p.lt = vla_lt_from_rowmajor(false, true, m, n, p.kp, p.kp, p.kp, ldc, 1, 0, 0, 0);
    return p;
}

size_t vla_lt_workspace_bytes(int cc_major) { return cc_major >= 9 ? (size_t)32 << 20 : (size_t)4 << 20; }

int vla_lt_alignment(uintptr_t addr) {
    int a = 1;
    while (a < 256 && addr % (uintptr_t)(a * 2) == 0) a *= 2;
    return a;
}

vla_lt_key vla_lt_key_make(const vla_lt_gemm *g, vla_lt_type a, vla_lt_type b, vla_lt_type c, int compute,
                           int align_a, int align_b, int align_c, bool fast_accum) {
    vla_lt_key k;
    memset(&k, 0, sizeof k);
    int64_t *w = k.w;
    w[0] = g->trans_a | (int64_t)g->trans_b << 1 | (int64_t)fast_accum << 2;
    w[1] = g->m, w[2] = g->n, w[3] = g->k;
    w[4] = g->a_rows, w[5] = g->a_cols, w[6] = g->lda;
    w[7] = g->b_rows, w[8] = g->b_cols, w[9] = g->ldb;
    w[10] = g->c_rows, w[11] = g->c_cols, w[12] = g->ldc;
    w[13] = g->batch, w[14] = g->batch > 1 ? g->stride_a : 0;
    w[15] = g->batch > 1 ? g->stride_b : 0, w[16] = g->batch > 1 ? g->stride_c : 0;
    w[17] = a | b << 4 | c << 8 | (int64_t)compute << 12;
    w[18] = align_a, w[19] = align_b, w[20] = align_c;
    return k;
}

/* ---- open-addressing hash table --------------------------------------------------- */

typedef struct {
    bool used;
    vla_lt_key key;
    void *payload;
} slot;

struct vla_lt_cache {
    slot *slots;
    int cap, n, limit;
    void (*destroy)(void *);
};

static uint64_t key_hash(const vla_lt_key *k) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 24; i++) {
        h ^= (uint64_t)k->w[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

vla_lt_cache *vla_lt_cache_new(int capacity, void (*destroy)(void *payload)) {
    vla_lt_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->limit = capacity < 1 ? 1 : capacity;
    c->cap = 16;
    while (c->cap < 2 * c->limit) c->cap *= 2; /* load factor <= 1/2 */
    c->slots = calloc((size_t)c->cap, sizeof *c->slots);
    c->destroy = destroy;
    if (!c->slots) {
        free(c);
        return NULL;
    }
    return c;
}

static void clear_all(vla_lt_cache *c) {
    for (int i = 0; i < c->cap; i++)
        if (c->slots[i].used) {
            if (c->destroy) c->destroy(c->slots[i].payload);
            c->slots[i].used = false;
        }
    c->n = 0;
}

void vla_lt_cache_free(vla_lt_cache *c) {
    if (!c) return;
    clear_all(c);
    free(c->slots);
    free(c);
}

void *vla_lt_cache_get(vla_lt_cache *c, const vla_lt_key *k) {
    uint64_t i = key_hash(k) & (uint64_t)(c->cap - 1);
    while (c->slots[i].used) {
        if (!memcmp(&c->slots[i].key, k, sizeof *k)) return c->slots[i].payload;
        i = (i + 1) & (uint64_t)(c->cap - 1);
    }
    return NULL;
}

void vla_lt_cache_put(vla_lt_cache *c, const vla_lt_key *k, void *payload) {
    uint64_t i = key_hash(k) & (uint64_t)(c->cap - 1);
    while (c->slots[i].used) {
        if (!memcmp(&c->slots[i].key, k, sizeof *k)) { /* replace */
            if (c->destroy && c->slots[i].payload != payload) c->destroy(c->slots[i].payload);
            c->slots[i].payload = payload;
            return;
        }
        i = (i + 1) & (uint64_t)(c->cap - 1);
    }
    if (c->n >= c->limit) { /* full: start over (the slot found above is free again too) */
        clear_all(c);
        i = key_hash(k) & (uint64_t)(c->cap - 1);
    }
    c->slots[i].used = true;
    c->slots[i].key = *k;
    c->slots[i].payload = payload;
    c->n++;
}

int vla_lt_cache_count(const vla_lt_cache *c) { return c->n; }

static size_t ready_size(const vla_q_plan *p) {
    return vla_q_ready_sinv_offset(p->b_rows, p->b_ld, p->b_type == VLA_LT_BF16 ? 2 : 1) + 256;
}

size_t vla_q_ready_bytes(const vla_gemm_q *q, int64_t n, int64_t k) {
    if (!q || q->mode == VLA_PREC_FP32 || n <= 0 || k <= 0) return 0;
    vla_q_plan p0 = vla_q_plan_make(q, false, false, 1, n, k, n, 0), p1 = vla_q_plan_make(q, false, true, 1, n, k, n, 0);
    size_t s0 = ready_size(&p0), s1 = ready_size(&p1);
    return s0 > s1 ? s0 : s1;
}

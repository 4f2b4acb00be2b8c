/* rng.c — Philox-4x32-10 and distributions on top of it (see rng.h). */
#include "base/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void vla_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

vla_rng vla_rng_stream(uint64_t seed, uint64_t stream) {
    vla_rng r = {.seed = seed, .stream = stream, .offset = 0, .buf_used = 4};
    return r;
}

uint32_t vla_rng_u32(vla_rng *r) {
    if (r->buf_used >= 4) {
        uint32_t ctr[4] = {(uint32_t)r->offset, (uint32_t)(r->offset >> 32), (uint32_t)r->stream,
                           (uint32_t)(r->stream >> 32)};
        uint32_t key[2] = {(uint32_t)r->seed, (uint32_t)(r->seed >> 32)};
        vla_philox4x32_10(ctr, key, r->buf);
        r->offset++;
        r->buf_used = 0;
    }
    return r->buf[r->buf_used++];
}

uint64_t vla_rng_u64(vla_rng *r) {
    uint64_t hi = vla_rng_u32(r);
    return (hi << 32) | vla_rng_u32(r);
}

float vla_rng_uniform(vla_rng *r) { return (float)(vla_rng_u32(r) >> 8) * (1.0f / 16777216.0f); }

double vla_rng_uniform_f64(vla_rng *r) {
    return (double)(vla_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

int64_t vla_rng_int(vla_rng *r, int64_t lo, int64_t hi) {
    uint64_t range = (uint64_t)(hi - lo);
    if (hi <= lo) return lo;
    /* rejection of the biased tail: threshold = 2^64 mod range */
    uint64_t threshold = (0 - range) % range;
    for (;;) {
        uint64_t x = vla_rng_u64(r);
        if (x >= threshold) return lo + (int64_t)(x % range);
    }
}

double vla_rng_normal(vla_rng *r) {
    double u1 = vla_rng_uniform_f64(r);
    double u2 = vla_rng_uniform_f64(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double vla_rng_gamma(vla_rng *r, double shape) {
    if (shape < 1.0) {
        /* Gamma(a) = Gamma(a+1) * U^(1/a) */
        double u = vla_rng_uniform_f64(r);
        return vla_rng_gamma(r, shape + 1.0) * pow(u > 0 ? u : 1e-300, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = vla_rng_normal(r), v = 1.0 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = vla_rng_uniform_f64(r);
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (u > 0 && log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
}

double vla_rng_beta(vla_rng *r, double a, double b) {
    double x = vla_rng_gamma(r, a), y = vla_rng_gamma(r, b);
    return x / (x + y);
}

void vla_rng_shuffle_i64(vla_rng *r, int64_t *v, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = vla_rng_int(r, 0, i + 1);
        int64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

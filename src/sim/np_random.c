/* np_random.c — numpy's legacy RandomState: MT19937 (Matsumoto & Nishimura's
 * init_genrand / genrand_int32), numpy's masked-rejection randint and its
 * polar-method gauss, transcribed from numpy/random/src (mt19937.c,
 * distributions.c, legacy-distributions.c). Checked against numpy's output in
 * tests/sim/test_sim_pusht.c. */
#include "sim/np_random.h"

#include <math.h>

#define MT_N 624
#define MT_M 397

void vla_np_random_seed(vla_np_random *r, uint32_t seed) {
    for (int pos = 0; pos < MT_N; pos++) {
        r->key[pos] = seed;
        seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)pos + 1u;
    }
    r->pos = MT_N;
    r->has_gauss = false;
    r->gauss = 0.0;
}

static void mt_generate(vla_np_random *r) {
    const uint32_t upper = 0x80000000u, lower = 0x7fffffffu, matrix_a = 0x9908b0dfu;
    int i;
    uint32_t y;
    for (i = 0; i < MT_N - MT_M; i++) {
        y = (r->key[i] & upper) | (r->key[i + 1] & lower);
        r->key[i] = r->key[i + MT_M] ^ (y >> 1) ^ (-(y & 1u) & matrix_a);
    }
    for (; i < MT_N - 1; i++) {
        y = (r->key[i] & upper) | (r->key[i + 1] & lower);
        r->key[i] = r->key[i + (MT_M - MT_N)] ^ (y >> 1) ^ (-(y & 1u) & matrix_a);
    }
    y = (r->key[MT_N - 1] & upper) | (r->key[0] & lower);
    r->key[MT_N - 1] = r->key[MT_M - 1] ^ (y >> 1) ^ (-(y & 1u) & matrix_a);
    r->pos = 0;
}

uint32_t vla_np_random_u32(vla_np_random *r) {
    if (r->pos == MT_N) mt_generate(r);
    uint32_t y = r->key[r->pos++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

double vla_np_random_double(vla_np_random *r) {
    int32_t a = (int32_t)(vla_np_random_u32(r) >> 5), b = (int32_t)(vla_np_random_u32(r) >> 6);
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

int64_t vla_np_random_randint(vla_np_random *r, int64_t low, int64_t high) {
    /* _rand_int64(low, high - 1): rng = high - 1 - low; masked rejection on
     * 32-bit draws when rng fits in 32 bits (always the case here). */
    uint64_t rng = (uint64_t)(high - 1 - low);
    if (rng == 0) return low;
    uint64_t mask = rng;
    mask |= mask >> 1, mask |= mask >> 2, mask |= mask >> 4, mask |= mask >> 8, mask |= mask >> 16,
        mask |= mask >> 32;
    if (rng <= 0xffffffffu) {
        if (rng == 0xffffffffu) return low + (int64_t)vla_np_random_u32(r);
        uint32_t v;
        while ((v = (vla_np_random_u32(r) & (uint32_t)mask)) > rng) {
        }
        return low + (int64_t)v;
    }
    uint64_t v;
    do {
        uint64_t hi = vla_np_random_u32(r), lo = vla_np_random_u32(r);
        v = ((hi << 32) | lo) & mask;
    } while (v > rng);
    return low + (int64_t)v;
}

double vla_np_random_randn(vla_np_random *r) {
    if (r->has_gauss) {
        double t = r->gauss;
        r->has_gauss = false;
        r->gauss = 0.0;
        return t;
    }
    double f, x1, x2, r2;
    do {
        x1 = 2.0 * vla_np_random_double(r) - 1.0;
        x2 = 2.0 * vla_np_random_double(r) - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    f = sqrt(-2.0 * log(r2) / r2);
    r->gauss = f * x1;
    r->has_gauss = true;
    return f * x2;
}

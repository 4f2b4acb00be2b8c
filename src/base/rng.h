/* rng.h — counter-based random numbers (Philox-4x32-10).
 *
 * A counter-based generator turns (key, counter) into random bits with no
 * hidden state, so the stream for "sample i of epoch e" is a pure function of
 * (seed, i, e): it is the same whatever the number of threads or ranks that
 * split the work. vla_rng is a small cursor over one such stream:
 *   vla_rng r = vla_rng_stream(seed, stream_id);   // e.g. stream_id = sample index
 *   float u = vla_rng_uniform(&r);
 * Philox-4x32-10 is the generator of Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3" (SC'11); tests check it against the paper's known-answer
 * vectors (Random123 kat_vectors). */
#ifndef VLA_BASE_RNG_H
#define VLA_BASE_RNG_H

#include <stdint.h>

/* One Philox-4x32-10 block: 4 counter words and 2 key words in, 4 words out. */
void vla_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

typedef struct {
    uint64_t seed;     /* key */
    uint64_t stream;   /* counter words 2–3: which independent stream */
    uint64_t offset;   /* counter words 0–1: block index within the stream */
    uint32_t buf[4];
    int buf_used;      /* words of buf already consumed (4 = empty) */
} vla_rng;

vla_rng vla_rng_stream(uint64_t seed, uint64_t stream);
uint32_t vla_rng_u32(vla_rng *r);
uint64_t vla_rng_u64(vla_rng *r);
/* Uniform in [0, 1) with 24 random bits (float) or 53 (double). */
float vla_rng_uniform(vla_rng *r);
double vla_rng_uniform_f64(vla_rng *r);
/* Uniform integer in [lo, hi) without modulo bias. */
int64_t vla_rng_int(vla_rng *r, int64_t lo, int64_t hi);
/* Standard normal (Box–Muller, both values used in turn is avoided so the
 * draw count per call is fixed: 2 uniforms per normal). */
double vla_rng_normal(vla_rng *r);
/* Gamma(shape, 1) by Marsaglia–Tsang; Beta(a, b) from two gammas. */
double vla_rng_gamma(vla_rng *r, double shape);
double vla_rng_beta(vla_rng *r, double a, double b);
/* Fisher–Yates shuffle of n indices. */
void vla_rng_shuffle_i64(vla_rng *r, int64_t *v, int64_t n);

#endif

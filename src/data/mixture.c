/* mixture.c — weighted mixtures as one sampler index space (see mixture.h). */
#include "data/mixture.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

vla_status vla_mixture_init(vla_mixture *m, int n, const int64_t *rows, const double *weights, uint64_t seed) {
    memset(m, 0, sizeof *m);
    if (n < 1 || n > VLA_MIXTURE_MAX)
        return vla_error(VLA_ERR_INVALID_ARG, "mixture: %d datasets (1 to %d)", n, VLA_MIXTURE_MAX);
    m->n = n, m->seed = seed;
    double wsum = 0;
    for (int d = 0; d < n; d++) {
        if (rows[d] < 1) return vla_error(VLA_ERR_INVALID_ARG, "mixture: dataset %d has no rows", d);
        double w = weights ? weights[d] : (double)rows[d];
        if (!(w > 0) || !isfinite(w))
            return vla_error(VLA_ERR_INVALID_ARG,
                             "--dataset.weights: weight %d is %g; each must be a positive number (leave a dataset "
                             "out of --dataset.root to give it none)", d + 1, w);
        m->first_row[d] = m->total, m->rows[d] = rows[d], m->weight[d] = w;
        m->total += rows[d], wsum += w;
    }
    /* largest remainder: floor every share, then hand the indices left to the
     * largest fractional parts (ties to the earlier dataset) */
    double frac[VLA_MIXTURE_MAX];
    int64_t given = 0;
    for (int d = 0; d < n; d++) {
        m->weight[d] /= wsum;
        double share = m->weight[d] * (double)m->total;
        m->quota[d] = (int64_t)floor(share);
        frac[d] = share - (double)m->quota[d];
        given += m->quota[d];
    }
    for (; given < m->total; given++) {
        int best = 0;
        for (int d = 1; d < n; d++)
            if (frac[d] > frac[best]) best = d;
        m->quota[best]++, frac[best] = -1;
    }
    for (int d = 0; d < n; d++) {
        if (m->quota[d] < 1)
            return vla_error(VLA_ERR_INVALID_ARG,
                             "--dataset.weights: dataset %d's weight %.3g gets no sample of an epoch of %lld; raise it",
                             d + 1, m->weight[d], (long long)m->total);
        m->start[d + 1] = m->start[d] + m->quota[d];
    }
    return VLA_OK;
}

int64_t vla_mixture_row(const vla_mixture *m, int64_t epoch, int64_t v, int *dataset) {
    int d = 0;
    while (d + 1 < m->n && v >= m->start[d + 1]) d++;
    if (dataset) *dataset = d;
    /* (v − start) · rows / quota without overflow: both are below 2^40 for any dataset that fits in memory */
    int64_t k = v - m->start[d], r = (int64_t)(((__int128)k * m->rows[d]) / m->quota[d]);
    int64_t shift = 0;
    if (m->quota[d] != m->rows[d]) { /* concatenation (quota = rows) keeps every row in place */
        vla_rng g = vla_rng_stream(m->seed ^ 0x6d697874ULL, (uint64_t)epoch * VLA_MIXTURE_MAX + (uint64_t)d);
        shift = (int64_t)(vla_rng_u64(&g) % (uint64_t)m->rows[d]);
    }
    return m->first_row[d] + (r + shift) % m->rows[d];
}

vla_status vla_mixture_parse_weights(const char *text, int n, double *weights) {
    int k = 0;
    for (const char *p = text;;) {
        char *end;
        errno = 0;
        double w = strtod(p, &end);
        if (end == p || errno)
            return vla_error(VLA_ERR_INVALID_ARG, "--dataset.weights=%s: '%s' is not a number", text, p);
        if (k < n) weights[k] = w;
        k++;
        while (*end == ' ') end++;
        if (!*end) break;
        if (*end != ',') return vla_error(VLA_ERR_INVALID_ARG, "--dataset.weights=%s: expected ',' at '%s'", text, end);
        p = end + 1;
    }
    if (k != n)
        return vla_error(VLA_ERR_INVALID_ARG, "--dataset.weights=%s: %d weights for %d datasets", text, k, n);
    return VLA_OK;
}

/* seqlens.h — host helpers for packed batches: samples lie end to end on one
 * token axis, delimited by cu_seqlens (int32, n_seg+1 entries, cu[0] = 0,
 * non-decreasing, cu[n_seg] = total tokens). Layers that apply a per-sample
 * quantity (AdaLN's modulation, a per-embodiment weight) use these. */
#ifndef VLA_TENSOR_SEQLENS_H
#define VLA_TENSOR_SEQLENS_H

#include <stdint.h>

#include "base/status.h"
#include "base/hd.h"

/* Checks the cu_seqlens invariants above; n_tokens < 0 skips the total check.
 * `what` names the array in the message. */
vla_status vla_seqlens_check(const int32_t *cu_seqlens, int32_t n_seg, int64_t n_tokens, const char *what);

/* The segment that holds token t (binary search; cu_seqlens already checked):
 * the largest s with cu[s] <= t, skipping empty segments. Host and device
 * (the cuda backend's kernels find a token's sample the same way). */
VLA_HD int32_t vla_seqlens_find(const int32_t *cu, int32_t n_seg, int64_t t) {
    int32_t lo = 0, hi = n_seg - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (cu[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

#endif

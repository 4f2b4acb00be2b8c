/* seqlens.c — cu_seqlens checks (the token → segment lookup is inline in seqlens.h). */
#include "tensor/seqlens.h"

vla_status vla_seqlens_check(const int32_t *cu, int32_t n_seg, int64_t n_tokens, const char *what) {
    if (n_seg < 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: negative segment count %d", what, n_seg);
    if (!cu) return vla_error(VLA_ERR_INVALID_ARG, "%s: cu_seqlens is NULL", what);
    if (cu[0] != 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: cu_seqlens[0] = %d, expected 0", what, cu[0]);
    for (int32_t s = 0; s < n_seg; s++)
        if (cu[s + 1] < cu[s])
            return vla_error(VLA_ERR_INVALID_ARG, "%s: cu_seqlens decreases at %d (%d > %d)", what, s + 1, cu[s],
                             cu[s + 1]);
    if (n_tokens >= 0 && cu[n_seg] != n_tokens)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: cu_seqlens[%d] = %d but there are %lld tokens", what, n_seg,
                         cu[n_seg], (long long)n_tokens);
    return VLA_OK;
}

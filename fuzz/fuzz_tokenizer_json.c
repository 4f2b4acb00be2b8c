/* fuzz_tokenizer_json.c — libFuzzer target for loading tokenizer.json
 * (policy/tokenizer.h, tokenizer_hf.c): any bytes must load or fail with a
 * status, never crash or allocate without bound. A file that loads is used:
 * a fixed text and the input itself are encoded (every id inside the
 * vocabulary) and decoded again with and without specials. Seeds are small
 * synthetic files in the shapes of Gemma's and Qwen3's (fuzz/corpus/). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use(const vla_tokenizer *tok, const char *text, size_t len) {
    int32_t *ids = NULL;
    int64_t n = 0;
    if (vla_tokenizer_encode_alloc(tok, text, len, &ids, &n) != VLA_OK) return;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tok->vocab_size) abort();
    for (int skip = 0; skip < 2; skip++) {
        char *s = NULL;
        size_t sl = 0;
        if (vla_tokenizer_hf_decode(tok, ids, n, skip, &s, &sl) == VLA_OK && strlen(s) > sl) abort();
        free(s);
    }
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vla_tokenizer *tok = NULL;
    if (vla_tokenizer_hf_parse("fuzz", (const char *)data, size, &tok) != VLA_OK) {
        if (tok) abort(); /* a failed load hands nothing back */
        return 0;
    }
    if (tok->vocab_size <= 0 || tok->bos_id >= tok->vocab_size) abort();
    static const char text[] = "Hello, world! <bos>  pick_up\tthe 🤖 cube\n\n12345 né";
    use(tok, text, sizeof text - 1);
    use(tok, (const char *)data, size < 4096 ? size : 4096);
    vla_tokenizer_free(tok);
    return 0;
}

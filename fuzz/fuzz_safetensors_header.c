/* fuzz_safetensors_header.c — libFuzzer target for the safetensors reader:
 * parses the input as a whole file, then touches every byte it hands out
 * (tensor data, names, metadata) and converts each tensor to f32, so an
 * out-of-range pointer or size shows up under ASan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vla_safetensors st;
    if (vla_safetensors_parse(data, size, "fuzz", &st) != VLA_OK) return 0;
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < vla_safetensors_count(&st); i++) {
        const vla_safetensors_tensor *t = vla_safetensors_at(&st, i);
        const uint8_t *p = t->data;
        for (size_t k = 0; k < t->nbytes; k++) sink ^= p[k];
        sink ^= (uint8_t)strlen(t->name);
        if (vla_safetensors_find(&st, t->name) != t) abort();
        if (t->numel <= 4096) {
            float buf[4096];
            if (vla_safetensors_load_f32(&st, t->name, buf, (size_t)t->numel) != VLA_OK) abort();
        }
    }
    for (size_t i = 0; i < vla_safetensors_meta_count(&st); i++) {
        const char *k, *v;
        if (vla_safetensors_meta_at(&st, i, &k, &v) != VLA_OK) abort();
        sink ^= (uint8_t)(strlen(k) + strlen(v));
        if (vla_safetensors_meta_get(&st, k) != v) abort();
    }
    (void)sink;
    vla_safetensors_close(&st);
    return 0;
}

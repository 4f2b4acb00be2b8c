/* fuzz_shard.c — libFuzzer target for the training-shard reader
 * (data/shards_internal.h): the input is a whole shard file. The harness
 * first makes the header CRC and the trailer's CRC of CRCs agree with the
 * bytes (so mutations reach the JSON header, the section bounds and the
 * padding checks instead of stopping at a checksum), parses it with and
 * without the data CRCs, and touches every byte of every section it
 * accepts, so an out-of-range bound shows up under ASan. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/shards_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fix_crcs(uint8_t *d, size_t size) {
    if (size < 16) return;
    uint32_t hlen = vla_shard_get32(d + 8);
    if (hlen > size - 16) return;
    vla_shard_put32(d + 12, vla_shard_crc(d + 16, hlen));
    json_t *j = json_loadb((const char *)d + 16, hlen, 0, NULL);
    size_t n = json_array_size(json_object_get(j, "sections"));
    json_decref(j);
    if (n > VLA_SHARD_MAX_SECTIONS || 4 * n + 12 > size - 16) return;
    uint8_t *t = d + size - (4 * n + 12);
    vla_shard_put32(t + 4 * n, vla_shard_crc(t, 4 * (uint64_t)n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *d = malloc(size ? size : 1);
    if (!d) return 0;
    memcpy(d, data, size);
    fix_crcs(d, size);
    for (int verify = 0; verify < 2; verify++) {
        vla_shard_header h;
        if (vla_shard_parse("fuzz", d, size, verify != 0, &h) != VLA_OK) continue;
        volatile uint8_t sink = 0;
        for (int i = 0; i < h.n_sections; i++)
            for (uint64_t b = 0; b < h.sec[i].bytes; b++) sink ^= d[h.sec[i].offset + b];
        for (int64_t e = 0; e < h.n_episodes; e++) sink ^= (uint8_t)h.episodes[2 * e + 1];
        (void)sink;
        vla_shard_header_free(&h);
    }
    free(d);
    return 0;
}

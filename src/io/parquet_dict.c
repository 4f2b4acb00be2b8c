/* parquet_dict.c — dictionary encoding: the chunk's dictionary page (PLAIN
 * values, kept by the chunk reader) and the data pages' indices into it
 * (PLAIN_DICTIONARY / RLE_DICTIONARY: a bit width, then the RLE/bit-packed
 * hybrid), each checked against the dictionary's size. */
#include <stdlib.h>
#include <string.h>

#include "io/parquet_internal.h"

vla_status vla_pq_read_dictionary(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, int enc) {
    if (cr->has_dict) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "second dictionary page");
    if (enc != PQ_ENC_PLAIN && enc != PQ_ENC_PLAIN_DICTIONARY)
        return vla_pq_cfail(cr, VLA_ERR_UNSUPPORTED, "dictionary page encoding %d", enc);
    if (count < 0 || count > cr->pq->limits.max_chunk_values || (cr->info->type != VLA_PQ_BOOLEAN && (uint64_t)count > n))
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "dictionary of %lld values in a %zu-byte page", (long long)count, n);
    cr->has_dict = 1;
    cr->dict_n = count;
    if (cr->width) {
        cr->dict = malloc((size_t)(count ? count : 1) * (size_t)cr->width);
        if (!cr->dict) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
        return vla_pq_plain_fixed(cr, p, n, count, cr->dict);
    }
    vla_pq_buf b = {0};
    int64_t *lens = malloc((size_t)(count + 1) * sizeof *lens);
    cr->dict_off = malloc((size_t)(count + 1) * sizeof *cr->dict_off);
    if (!lens || !cr->dict_off) {
        free(lens);
        return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
    }
    vla_status st = vla_pq_plain_bytes(cr, p, n, count, &b, lens);
    if (st == VLA_OK) {
        cr->dict_off[0] = 0;
        for (int64_t i = 0; i < count; i++) cr->dict_off[i + 1] = cr->dict_off[i] + lens[i];
        cr->dict_data = b.data;
    } else {
        vla_pq_buf_free(&b);
    }
    free(lens);
    return st;
}

vla_status vla_pq_dict_decode(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, uint8_t *dst, int64_t *lens) {
    if (!cr->has_dict) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "dictionary-encoded page without a dictionary page");
    if (count == 0) return VLA_OK;
    if (n < 1) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "dictionary indices: empty page");
    int bw = p[0];
    if (bw > 32) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "dictionary index bit width %d", bw);
    int w = cr->width;
    vla_pq_rle d;
    vla_pq_rle_init(&d, p + 1, n - 1, bw);
    uint32_t idx[1024];
    for (int64_t i = 0; i < count;) {
        int64_t k = count - i < 1024 ? count - i : 1024;
        VLA_TRY(vla_pq_cwrap(cr, vla_pq_rle_get(&d, idx, k)));
        for (int64_t j = 0; j < k; j++) {
            uint32_t x = idx[j];
            if ((int64_t)x >= cr->dict_n)
                return vla_pq_cfail(cr, VLA_ERR_FORMAT, "dictionary index %u out of range (dictionary has %lld values)",
                                    x, (long long)cr->dict_n);
            if (w) {
                memcpy(dst + (i + j) * w, cr->dict + (int64_t)x * w, (size_t)w);
            } else {
                int64_t len = cr->dict_off[x + 1] - cr->dict_off[x];
                /* a dictionary of empty values has no data buffer (NULL): form
                 * dict_data + off only when there are bytes to copy */
                if (len) vla_pq_buf_put(&cr->bytes, cr->dict_data + cr->dict_off[x], (size_t)len);
                lens[i + j] = len;
            }
        }
        i += k;
    }
    if (cr->bytes.oom) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
    return VLA_OK;
}

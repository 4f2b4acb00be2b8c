/* parquet_values.c — the values of one data page, by encoding: PLAIN,
 * RLE (booleans), DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT, DELTA_LENGTH_BYTE_ARRAY
 * and DELTA_BYTE_ARRAY here, dictionary indices in parquet_dict.c; the
 * non-null values are appended densely to the chunk reader. */
#include <stdlib.h>
#include <string.h>

#include "io/parquet_internal.h"

static vla_status reserve_vals(vla_pq_chunk_reader *cr, int64_t n) {
    int64_t need = cr->nvals + n;
    if (need < 1) need = 1; /* never hand out pointers into a NULL buffer */
    if (need <= cr->cap_vals) return VLA_OK;
    if (cr->width) return vla_pq_grow(cr, (void **)&cr->vals, &cr->cap_vals, need, (size_t)cr->width);
    return vla_pq_grow(cr, (void **)&cr->lens, &cr->cap_vals, need, sizeof(int64_t));
}

vla_status vla_pq_plain_fixed(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, uint8_t *dst) {
    if (count == 0) return VLA_OK;
    if (cr->info->type == VLA_PQ_BOOLEAN) {
        if ((uint64_t)count > (uint64_t)n * 8) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "PLAIN booleans: %lld values in %zu bytes", (long long)count, n);
        for (int64_t i = 0; i < count; i++) dst[i] = (p[i >> 3] >> (i & 7)) & 1;
        return VLA_OK;
    }
    uint64_t need = (uint64_t)count * (uint64_t)cr->width;
    if (need > n)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "PLAIN values: %lld values need %llu bytes, page has %zu",
                            (long long)count, (unsigned long long)need, n);
    memcpy(dst, p, (size_t)need);
    return VLA_OK;
}

vla_status vla_pq_plain_bytes(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, vla_pq_buf *bytes, int64_t *lens) {
    size_t pos = 0;
    for (int64_t i = 0; i < count; i++) {
        if (n - pos < 4) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "PLAIN byte array %lld: length past the end of the page", (long long)i);
        uint32_t len;
        memcpy(&len, p + pos, 4);
        pos += 4;
        if (len > n - pos) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "PLAIN byte array %lld: %u bytes past the end of the page", (long long)i, len);
        vla_pq_buf_put(bytes, p + pos, len);
        lens[i] = len;
        pos += len;
    }
    if (bytes->oom) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
    return VLA_OK;
}

/* RLE booleans: a 4-byte length, then the RLE/bit-packed hybrid at width 1. */
static vla_status rle_booleans(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, uint8_t *dst) {
    if (cr->info->type != VLA_PQ_BOOLEAN) return vla_pq_cfail(cr, VLA_ERR_UNSUPPORTED, "RLE encoding for a non-boolean column");
    if (n < 4) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "RLE booleans: missing length");
    uint32_t len;
    memcpy(&len, p, 4);
    if (len > n - 4) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "RLE booleans: length %u past the end of the page", len);
    vla_pq_rle d;
    vla_pq_rle_init(&d, p + 4, len, 1);
    uint32_t b[1024];
    for (int64_t i = 0; i < count;) {
        int64_t k = count - i < 1024 ? count - i : 1024;
        VLA_TRY(vla_pq_cwrap(cr, vla_pq_rle_get(&d, b, k)));
        for (int64_t j = 0; j < k; j++) dst[i + j] = (uint8_t)(b[j] & 1);
        i += k;
    }
    return VLA_OK;
}

/* BYTE_STREAM_SPLIT: byte b of every value in stream b. */
static vla_status byte_stream_split(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, uint8_t *dst) {
    int w = cr->width;
    if (!w || cr->info->type == VLA_PQ_BOOLEAN)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "BYTE_STREAM_SPLIT for a %d column", cr->info->type);
    /* The page holds exactly the non-null values: w streams of n/w bytes. */
    if (n % (size_t)w != 0 || (uint64_t)count > n / (size_t)w)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "BYTE_STREAM_SPLIT: %zu bytes for %lld values of %d bytes", n, (long long)count, w);
    size_t stride = n / (size_t)w;
    for (int b = 0; b < w; b++) {
        const uint8_t *s = p + (size_t)b * stride;
        for (int64_t i = 0; i < count; i++) dst[i * w + b] = s[i];
    }
    return VLA_OK;
}

/* DELTA_LENGTH_BYTE_ARRAY (delta-packed lengths, then the bytes) and
 * DELTA_BYTE_ARRAY (also delta-packed prefix lengths shared with the
 * previous value): append to cr->bytes, lengths to lens. */
static vla_status delta_byte_arrays(vla_pq_chunk_reader *cr, int enc, const uint8_t *p, size_t n, int64_t count, int64_t *lens) {
    if (cr->width)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "%s for a fixed-size column",
                            enc == PQ_ENC_DELTA_BYTE_ARRAY ? "DELTA_BYTE_ARRAY" : "DELTA_LENGTH_BYTE_ARRAY");
    if (count == 0) return VLA_OK;
    size_t used = 0, pos = 0;
    int64_t *prefix = calloc((size_t)count, sizeof *prefix);
    int64_t *slen = malloc((size_t)count * sizeof *slen);
    vla_status st = VLA_OK;
    if (!prefix || !slen) st = vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
    if (st == VLA_OK && enc == PQ_ENC_DELTA_BYTE_ARRAY) {
        st = vla_pq_cwrap(cr, vla_pq_delta_decode(p, n, 0, count, prefix, &used));
        pos = used;
    }
    if (st == VLA_OK) {
        st = vla_pq_cwrap(cr, vla_pq_delta_decode(p + pos, n - pos, 0, count, slen, &used));
        pos += used;
    }
    int64_t prev_start = -1, prev_len = 0;
    for (int64_t i = 0; st == VLA_OK && i < count; i++) {
        if (slen[i] < 0 || (uint64_t)slen[i] > n - pos || prefix[i] < 0 || prefix[i] > prev_len) {
            st = vla_pq_cfail(cr, VLA_ERR_FORMAT, "delta byte array %lld: bad prefix %lld or length %lld", (long long)i,
                              (long long)prefix[i], (long long)slen[i]);
            break;
        }
        int64_t start = (int64_t)cr->bytes.len;
        if (prefix[i] > 0) {
            /* copy through a temporary: the buffer may move while appending */
            uint8_t tmp[256];
            int64_t left = prefix[i], from = prev_start;
            while (left > 0) {
                int64_t k = left < 256 ? left : 256;
                memcpy(tmp, cr->bytes.data + from, (size_t)k);
                vla_pq_buf_put(&cr->bytes, tmp, (size_t)k);
                if (cr->bytes.oom) break;
                from += k;
                left -= k;
            }
        }
        vla_pq_buf_put(&cr->bytes, p + pos, (size_t)slen[i]);
        pos += (size_t)slen[i];
        if (cr->bytes.oom) st = vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
        lens[i] = prefix[i] + slen[i];
        prev_start = start;
        prev_len = lens[i];
    }
    free(prefix);
    free(slen);
    return st;
}

vla_status vla_pq_decode_values(vla_pq_chunk_reader *cr, int enc, const uint8_t *p, size_t n, int64_t count) {
    VLA_TRY(reserve_vals(cr, count));
    int type = cr->info->type;
    int w = cr->width;
    uint8_t *dst = w ? cr->vals + cr->nvals * w : NULL;
    int64_t *lens = w ? NULL : cr->lens + cr->nvals;
    switch (enc) {
    case PQ_ENC_PLAIN:
        if (w) VLA_TRY(vla_pq_plain_fixed(cr, p, n, count, dst));
        else VLA_TRY(vla_pq_plain_bytes(cr, p, n, count, &cr->bytes, lens));
        break;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: VLA_TRY(vla_pq_dict_decode(cr, p, n, count, dst, lens)); break;
    case PQ_ENC_RLE: VLA_TRY(rle_booleans(cr, p, n, count, dst)); break;
    case PQ_ENC_DELTA_BINARY_PACKED:
        if (type != VLA_PQ_INT32 && type != VLA_PQ_INT64)
            return vla_pq_cfail(cr, VLA_ERR_FORMAT, "DELTA_BINARY_PACKED for a non-integer column");
        VLA_TRY(vla_pq_cwrap(cr, vla_pq_delta_decode(p, n, type == VLA_PQ_INT32, count, dst, NULL)));
        break;
    case PQ_ENC_BYTE_STREAM_SPLIT: VLA_TRY(byte_stream_split(cr, p, n, count, dst)); break;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY: VLA_TRY(delta_byte_arrays(cr, enc, p, n, count, lens)); break;
    default: return vla_pq_cfail(cr, VLA_ERR_UNSUPPORTED, "value encoding %d", enc);
    }
    cr->nvals += count;
    return VLA_OK;
}

/* parquet_encoding.c — Parquet's bit-level encodings and page codecs: the
 * RLE/bit-packed hybrid (levels, dictionary indices, booleans),
 * DELTA_BINARY_PACKED, and SNAPPY/GZIP/ZSTD (de)compression through Debian's
 * libsnappy, zlib and libzstd. Decoders are bounded by their input length;
 * the callers add file/column/offset context to the messages. */
#include "io/parquet_internal.h"

#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

int vla_pq_type_width(int type, int type_length) {
    switch (type) {
    case VLA_PQ_BOOLEAN: return 1;
    case VLA_PQ_INT32:
    case VLA_PQ_FLOAT: return 4;
    case VLA_PQ_INT64:
    case VLA_PQ_DOUBLE: return 8;
    case VLA_PQ_INT96: return 12;
    case VLA_PQ_FIXED_LEN_BYTE_ARRAY: return type_length;
    default: return 0;
    }
}

int vla_pq_bit_width(uint64_t v) {
    int w = 0;
    while (v) {
        w++;
        v >>= 1;
    }
    return w;
}

static int uleb(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t x = 0;
    for (int s = 0; s < 64; s += 7) {
        if (*p >= end) return -1;
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* `bw` bits (≤ 64) at bit position `pos` of buf, LSB first. The caller has
 * checked that pos + bw ≤ 8 * n. */
static inline uint64_t get_bits(const uint8_t *buf, size_t n, uint64_t pos, int bw) {
    if (bw == 0) return 0;
    size_t byte = (size_t)(pos >> 3);
    int shift = (int)(pos & 7);
    uint64_t lo;
    if (byte + 8 <= n) {
        memcpy(&lo, buf + byte, 8);
    } else {
        lo = 0;
        for (size_t i = 0; byte + i < n && i < 8; i++) lo |= (uint64_t)buf[byte + i] << (8 * i);
    }
    uint64_t v = lo >> shift;
    if (shift + bw > 64) v |= (uint64_t)buf[byte + 8] << (64 - shift);
    return bw == 64 ? v : v & ((UINT64_C(1) << bw) - 1);
}

void vla_pq_rle_init(vla_pq_rle *d, const uint8_t *p, size_t n, int bit_width) {
    memset(d, 0, sizeof *d);
    d->p = p;
    d->end = p + n;
    d->bit_width = bit_width;
}

static vla_status rle_next_run(vla_pq_rle *d) {
    uint64_t h;
    if (uleb(&d->p, d->end, &h) != 0) return vla_error(VLA_ERR_FORMAT, "RLE run header past the end");
    if (h & 1) {
        uint64_t groups = h >> 1;
        if (groups == 0 || groups > (UINT64_C(1) << 40)) return vla_error(VLA_ERR_FORMAT, "bad bit-packed run");
        uint64_t want = groups * (uint64_t)d->bit_width;  /* bytes: 8 values × bw bits */
        size_t have = (size_t)(d->end - d->p);
        size_t bytes = want < have ? (size_t)want : have; /* a short last run is tolerated */
        d->bp = d->p;
        d->bp_bytes = bytes;
        d->bp_pos = 0;
        d->bp_left = d->bit_width ? (int64_t)(bytes * 8 / (size_t)d->bit_width) : (int64_t)(groups * 8);
        if ((uint64_t)d->bp_left > groups * 8) d->bp_left = (int64_t)(groups * 8);
        d->p += bytes;
        if (d->bp_left == 0) return vla_error(VLA_ERR_FORMAT, "bit-packed run past the end");
    } else {
        uint64_t count = h >> 1;
        if (count == 0 || count > (UINT64_C(1) << 40)) return vla_error(VLA_ERR_FORMAT, "bad RLE run length");
        int nb = (d->bit_width + 7) / 8;
        if (d->end - d->p < nb) return vla_error(VLA_ERR_FORMAT, "RLE value past the end");
        uint64_t v = 0;
        for (int i = 0; i < nb; i++) v |= (uint64_t)d->p[i] << (8 * i);
        d->p += nb;
        d->rle_value = v;
        d->rle_left = (int64_t)count;
    }
    return VLA_OK;
}

vla_status vla_pq_rle_get(vla_pq_rle *d, uint32_t *out, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        if (d->rle_left > 0) {
            int64_t k = d->rle_left < n - i ? d->rle_left : n - i;
            uint32_t v = (uint32_t)d->rle_value;
            for (int64_t j = 0; j < k; j++) out[i + j] = v;
            i += k;
            d->rle_left -= k;
        } else if (d->bp_left > 0) {
            int64_t k = d->bp_left < n - i ? d->bp_left : n - i;
            int bw = d->bit_width;
            int64_t j = 0;
            /* whole groups of 8 values (bw bytes each) at a byte boundary */
            if (bw > 0 && bw <= 8 && (d->bp_pos & 7) == 0) {
                uint64_t mask = (UINT64_C(1) << bw) - 1;
                while (j + 8 <= k && (d->bp_pos >> 3) + (uint64_t)bw <= d->bp_bytes) {
                    uint64_t g = 0;
                    memcpy(&g, d->bp + (d->bp_pos >> 3), (size_t)bw);
                    for (int q = 0; q < 8; q++) out[i + j + q] = (uint32_t)((g >> (q * bw)) & mask);
                    d->bp_pos += (uint64_t)bw * 8;
                    j += 8;
                }
            }
            for (; j < k; j++) {
                out[i + j] = (uint32_t)get_bits(d->bp, d->bp_bytes, d->bp_pos, bw);
                d->bp_pos += (uint64_t)bw;
            }
            i += k;
            d->bp_left -= k;
        } else {
            if (d->p >= d->end) return vla_error(VLA_ERR_FORMAT, "RLE data ends after %lld of %lld values",
                                                 (long long)i, (long long)n);
            VLA_TRY(rle_next_run(d));
        }
    }
    return VLA_OK;
}

vla_status vla_pq_decode_levels(const uint8_t *p, size_t len, int max_level, int64_t n, uint8_t *out) {
    vla_pq_rle d;
    vla_pq_rle_init(&d, p, len, vla_pq_bit_width((uint64_t)max_level));
    uint32_t buf[1024];
    for (int64_t i = 0; i < n;) {
        int64_t k = n - i < 1024 ? n - i : 1024;
        VLA_TRY(vla_pq_rle_get(&d, buf, k));
        for (int64_t j = 0; j < k; j++) {
            if (buf[j] > (uint32_t)max_level)
                return vla_error(VLA_ERR_FORMAT, "level %u above the maximum %d", buf[j], max_level);
            out[i + j] = (uint8_t)buf[j];
        }
        i += k;
    }
    return VLA_OK;
}

static vla_status delta_header(const uint8_t **p, const uint8_t *end, uint64_t *block, uint64_t *mbs,
                               uint64_t *total, int64_t *first) {
    uint64_t f;
    if (uleb(p, end, block) || uleb(p, end, mbs) || uleb(p, end, total) || uleb(p, end, &f))
        return vla_error(VLA_ERR_FORMAT, "DELTA_BINARY_PACKED header past the end");
    *first = (int64_t)(f >> 1) ^ -(int64_t)(f & 1);
    if (*block == 0 || *block % 128 != 0 || *block > (1u << 20) || *mbs == 0 || *block % *mbs != 0 ||
        (*block / *mbs) % 32 != 0)
        return vla_error(VLA_ERR_FORMAT, "bad DELTA_BINARY_PACKED block size %llu / %llu miniblocks",
                         (unsigned long long)*block, (unsigned long long)*mbs);
    return VLA_OK;
}

vla_status vla_pq_delta_count(const uint8_t *p, size_t len, int64_t *n) {
    uint64_t block, mbs, total;
    int64_t first;
    VLA_TRY(delta_header(&p, p + len, &block, &mbs, &total, &first));
    if (total > (UINT64_C(1) << 40)) return vla_error(VLA_ERR_FORMAT, "DELTA_BINARY_PACKED count too large");
    *n = (int64_t)total;
    return VLA_OK;
}

vla_status vla_pq_delta_decode(const uint8_t *p, size_t len, int is32, int64_t n, void *out, size_t *used) {
    const uint8_t *start = p, *end = p + len;
    uint64_t block, mbs, total;
    int64_t first;
    VLA_TRY(delta_header(&p, end, &block, &mbs, &total, &first));
    if ((int64_t)total < n)
        return vla_error(VLA_ERR_FORMAT, "DELTA_BINARY_PACKED holds %llu values, %lld needed",
                         (unsigned long long)total, (long long)n);
    uint64_t vpm = block / mbs;
    uint64_t cur = (uint64_t)first;
    int64_t i = 0;
#define PUT(v)                                                     \
    do {                                                           \
        if (is32) ((int32_t *)out)[i] = (int32_t)(uint32_t)(v);    \
        else ((int64_t *)out)[i] = (int64_t)(v);                   \
    } while (0)
    if (n > 0) {
        PUT(cur);
        i = 1;
    }
    while (i < n) {
        uint64_t md;
        if (uleb(&p, end, &md)) return vla_error(VLA_ERR_FORMAT, "DELTA_BINARY_PACKED block past the end");
        int64_t min_delta = (int64_t)(md >> 1) ^ -(int64_t)(md & 1);
        if ((uint64_t)(end - p) < mbs) return vla_error(VLA_ERR_FORMAT, "DELTA_BINARY_PACKED widths past the end");
        const uint8_t *widths = p;
        p += mbs;
        for (uint64_t m = 0; m < mbs && i < n; m++) {
            int bw = widths[m];
            if (bw > (is32 ? 32 : 64)) return vla_error(VLA_ERR_FORMAT, "DELTA_BINARY_PACKED bit width %d", bw);
            size_t bytes = (size_t)(vpm * (uint64_t)bw / 8);
            if ((size_t)(end - p) < bytes) return vla_error(VLA_ERR_FORMAT, "DELTA_BINARY_PACKED miniblock past the end");
            uint64_t pos = 0;
            for (uint64_t j = 0; j < vpm && i < n; j++) {
                uint64_t d = get_bits(p, bytes, pos, bw);
                pos += (uint64_t)bw;
                cur += (uint64_t)min_delta + d;
                if (is32) cur = (uint32_t)cur;
                PUT(cur);
                i++;
            }
            p += bytes;
        }
    }
#undef PUT
    if (used) *used = (size_t)(p - start);
    return VLA_OK;
}

vla_status vla_pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n) {
    switch (codec) {
    case VLA_PQ_UNCOMPRESSED:
        if (n != dst_n) return vla_error(VLA_ERR_FORMAT, "uncompressed page: %zu bytes stored, %zu declared", n, dst_n);
        memcpy(dst, src, n);
        return VLA_OK;
    case VLA_PQ_SNAPPY: {
        size_t ulen;
        if (snappy_uncompressed_length((const char *)src, n, &ulen) != SNAPPY_OK || ulen != dst_n)
            return vla_error(VLA_ERR_FORMAT, "snappy: bad length header (expected %zu bytes)", dst_n);
        size_t out_n = dst_n;
        if (snappy_uncompress((const char *)src, n, (char *)dst, &out_n) != SNAPPY_OK || out_n != dst_n)
            return vla_error(VLA_ERR_FORMAT, "snappy: corrupt compressed data");
        return VLA_OK;
    }
    case VLA_PQ_ZSTD: {
        size_t r = ZSTD_decompress(dst, dst_n, src, n);
        if (ZSTD_isError(r)) return vla_error(VLA_ERR_FORMAT, "zstd: %s", ZSTD_getErrorName(r));
        if (r != dst_n) return vla_error(VLA_ERR_FORMAT, "zstd: %zu bytes, %zu declared", r, dst_n);
        return VLA_OK;
    }
    case VLA_PQ_GZIP: {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 15 + 32) != Z_OK) return vla_error(VLA_ERR_INTERNAL, "zlib: inflateInit failed");
        z.next_in = (Bytef *)src;
        z.avail_in = (uInt)n;
        z.next_out = dst;
        z.avail_out = (uInt)dst_n;
        int r = inflate(&z, Z_FINISH);
        size_t got = dst_n - z.avail_out;
        inflateEnd(&z);
        if (r != Z_STREAM_END) return vla_error(VLA_ERR_FORMAT, "gzip: corrupt data (%s)", z.msg ? z.msg : "truncated");
        if (got != dst_n) return vla_error(VLA_ERR_FORMAT, "gzip: %zu bytes, %zu declared", got, dst_n);
        return VLA_OK;
    }
    default: return vla_error(VLA_ERR_UNSUPPORTED, "unsupported codec %d", codec);
    }
}

/* ---- encoding ---- */

void vla_pq_buf_put(vla_pq_buf *b, const void *d, size_t n) {
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *nd = realloc(b->data, cap);
        if (!nd) {
            b->oom = 1;
            return;
        }
        b->data = nd;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, d, n);
    b->len += n;
}

void vla_pq_buf_u32(vla_pq_buf *b, uint32_t v) { vla_pq_buf_put(b, &v, 4); }

void vla_pq_buf_free(vla_pq_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

static void put_uleb(vla_pq_buf *b, uint64_t v) {
    uint8_t t[10];
    int k = 0;
    while (v >= 0x80) {
        t[k++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[k++] = (uint8_t)v;
    vla_pq_buf_put(b, t, (size_t)k);
}

/* Runs of ≥ 8 equal values become RLE runs; everything else is bit-packed in
 * groups of 8 (a trailing partial group is padded with zeros). */
void vla_pq_rle_encode(vla_pq_buf *b, const uint32_t *v, int64_t n, int bw) {
    int nb = (bw + 7) / 8;
    int64_t i = 0;
    while (i < n) {
        int64_t run = 1;
        while (i + run < n && v[i + run] == v[i]) run++;
        if (run >= 8) {
            put_uleb(b, (uint64_t)run << 1);
            uint8_t t[4] = {(uint8_t)v[i], (uint8_t)(v[i] >> 8), (uint8_t)(v[i] >> 16), (uint8_t)(v[i] >> 24)};
            vla_pq_buf_put(b, t, (size_t)nb);
            i += run;
            continue;
        }
        /* Bit-pack until the next run of ≥ 8 that starts on a group boundary. */
        int64_t j = i;
        while (j < n) {
            int64_t r = 1;
            while (j + r < n && v[j + r] == v[j] && r < 8) r++;
            if (r >= 8 && (j - i) % 8 == 0 && j > i) break;
            j += (j + 8 <= n) ? 8 : n - j;
        }
        int64_t count = j - i;
        int64_t groups = (count + 7) / 8;
        put_uleb(b, (uint64_t)groups << 1 | 1);
        size_t bytes = (size_t)(groups * bw);
        uint8_t *tmp = calloc(bytes ? bytes : 1, 1);
        if (!tmp) {
            b->oom = 1;
            return;
        }
        uint64_t pos = 0;
        for (int64_t k = 0; k < count; k++, pos += (uint64_t)bw)
            for (int bit = 0; bit < bw; bit++)
                if (v[i + k] >> bit & 1) tmp[(pos + bit) >> 3] |= (uint8_t)(1u << ((pos + bit) & 7));
        vla_pq_buf_put(b, tmp, bytes);
        free(tmp);
        i = j;
    }
}

vla_status vla_pq_compress(int codec, const uint8_t *src, size_t n, uint8_t **out, size_t *out_n) {
    switch (codec) {
    case VLA_PQ_UNCOMPRESSED:
        *out = malloc(n ? n : 1);
        if (!*out) return vla_error(VLA_ERR_NOMEM, "out of memory");
        memcpy(*out, src, n);
        *out_n = n;
        return VLA_OK;
    case VLA_PQ_SNAPPY: {
        size_t cap = snappy_max_compressed_length(n);
        *out = malloc(cap);
        if (!*out) return vla_error(VLA_ERR_NOMEM, "out of memory");
        *out_n = cap;
        if (snappy_compress((const char *)src, n, (char *)*out, out_n) != SNAPPY_OK)
            return vla_error(VLA_ERR_INTERNAL, "snappy_compress failed");
        return VLA_OK;
    }
    case VLA_PQ_ZSTD: {
        size_t cap = ZSTD_compressBound(n);
        *out = malloc(cap);
        if (!*out) return vla_error(VLA_ERR_NOMEM, "out of memory");
        size_t r = ZSTD_compress(*out, cap, src, n, 3);
        if (ZSTD_isError(r)) return vla_error(VLA_ERR_INTERNAL, "zstd: %s", ZSTD_getErrorName(r));
        *out_n = r;
        return VLA_OK;
    }
    case VLA_PQ_GZIP: {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return vla_error(VLA_ERR_INTERNAL, "zlib: deflateInit failed");
        size_t cap = deflateBound(&z, (uLong)n);
        *out = malloc(cap);
        if (!*out) {
            deflateEnd(&z);
            return vla_error(VLA_ERR_NOMEM, "out of memory");
        }
        z.next_in = (Bytef *)src;
        z.avail_in = (uInt)n;
        z.next_out = *out;
        z.avail_out = (uInt)cap;
        int r = deflate(&z, Z_FINISH);
        *out_n = cap - z.avail_out;
        deflateEnd(&z);
        if (r != Z_STREAM_END) return vla_error(VLA_ERR_INTERNAL, "zlib: deflate failed");
        return VLA_OK;
    }
    default: return vla_error(VLA_ERR_UNSUPPORTED, "unsupported codec %d", codec);
    }
}

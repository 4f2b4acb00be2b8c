/* test_parquet_bad.c — the Thrift compact codec and the RLE/bit-packed
 * hybrid on their own, and bad Parquet
 * input: truncated files, bad magic, corrupt Thrift, flipped footer bytes,
 * page sizes past the end, an unknown or wrong codec, dictionary indices out
 * of range. Every case must fail with a message naming the file and the
 * reason (and, for page-level damage, column, row group and byte offset),
 * never crash (the ASan build runs this too). No DuckDB needed here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/rng.h"
#include "io/parquet.h"
#include "io/parquet_internal.h"
#include "io/thrift_compact.h"
#include "test_util.h"

/* ---- Thrift compact ---- */

static void test_thrift_roundtrip(void **state) {
    (void)state;
    vla_thrift_writer w;
    vla_thrift_writer_init(&w);
    vla_thrift_w_struct_begin(&w);
    vla_thrift_w_i32_field(&w, 1, INT32_MIN);
    vla_thrift_w_i64_field(&w, 2, INT64_MAX);
    vla_thrift_w_bool_field(&w, 3, 1);
    vla_thrift_w_string_field(&w, 40, "far field"); /* delta > 15: long form */
    vla_thrift_w_field(&w, VLA_TC_LIST, 41);
    vla_thrift_w_list_begin(&w, VLA_TC_I64, 20);
    for (int i = 0; i < 20; i++) vla_thrift_w_zigzag(&w, -i * 1000003LL);
    vla_thrift_w_field(&w, VLA_TC_STRUCT, 42);
    vla_thrift_w_struct_begin(&w);
    vla_thrift_w_i32_field(&w, 1, 7);
    vla_thrift_w_struct_end(&w);
    vla_thrift_w_i32_field(&w, 43, -1);
    vla_thrift_w_struct_end(&w);
    assert_int_equal(vla_thrift_writer_status(&w), VLA_OK);

    vla_thrift_reader r;
    vla_thrift_reader_init(&r, w.data, w.len, 0);
    assert_int_equal(vla_thrift_struct_begin(&r), VLA_OK);
    int t, id, seen = 0;
    for (;;) {
        assert_int_equal(vla_thrift_field(&r, &t, &id), VLA_OK);
        if (t == VLA_TC_STOP) break;
        int32_t i32;
        int64_t i64, n;
        int b, et;
        const uint8_t *s;
        uint32_t sn;
        switch (id) {
        case 1: assert_int_equal(vla_thrift_i32(&r, t, &i32), VLA_OK); assert_true(i32 == INT32_MIN); break;
        case 2: assert_int_equal(vla_thrift_i64(&r, t, &i64), VLA_OK); assert_true(i64 == INT64_MAX); break;
        case 3: assert_int_equal(vla_thrift_bool(&r, t, &b), VLA_OK); assert_true(b); break;
        case 40:
            assert_int_equal(vla_thrift_binary(&r, t, &s, &sn), VLA_OK);
            assert_int_equal(sn, 9);
            assert_memory_equal(s, "far field", 9);
            break;
        case 41:
            assert_int_equal(vla_thrift_list(&r, t, &et, &n), VLA_OK);
            assert_int_equal(n, 20);
            for (int i = 0; i < 20; i++) {
                assert_int_equal(vla_thrift_i64(&r, et, &i64), VLA_OK);
                assert_true(i64 == -i * 1000003LL);
            }
            break;
        case 42: assert_int_equal(vla_thrift_skip(&r, t), VLA_OK); break;
        case 43: assert_int_equal(vla_thrift_i32(&r, t, &i32), VLA_OK); assert_int_equal(i32, -1); break;
        default: fail_msg("unexpected field %d", id);
        }
        seen++;
    }
    assert_int_equal(seen, 7);
    assert_int_equal(vla_thrift_struct_end(&r), VLA_OK);
    assert_ptr_equal(r.p, r.end);
    /* Every truncation of it fails cleanly when skipped as a struct. */
    for (size_t n = 0; n < w.len; n++) {
        vla_thrift_reader_init(&r, w.data, n, 100);
        assert_int_not_equal(vla_thrift_skip(&r, VLA_TC_STRUCT), VLA_OK);
        assert_non_null(strstr(vla_error_message(), "corrupt thrift"));
    }
    vla_thrift_writer_free(&w);
}

static void test_thrift_limits(void **state) {
    (void)state;
    /* 100 nested structs: field 1 of type struct, again and again */
    uint8_t deep[101];
    memset(deep, 0x1c, 100);
    deep[100] = 0;
    vla_thrift_reader r;
    vla_thrift_reader_init(&r, deep, sizeof deep, 0);
    assert_int_equal(vla_thrift_skip(&r, VLA_TC_STRUCT), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "nested too deeply"));
    /* a varint that never ends */
    uint8_t endless[16];
    memset(endless, 0xff, sizeof endless);
    int64_t v;
    vla_thrift_reader_init(&r, endless, sizeof endless, 0);
    assert_int_equal(vla_thrift_i64(&r, VLA_TC_I64, &v), VLA_ERR_FORMAT);
    /* a list that claims more elements than there are bytes */
    uint8_t biglist[] = {0xf5, 0xff, 0xff, 0xff, 0x7f, 0x00};
    int et;
    int64_t n;
    vla_thrift_reader_init(&r, biglist, sizeof biglist, 1000);
    assert_int_equal(vla_thrift_list(&r, VLA_TC_LIST, &et, &n), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "at byte 100"));
    /* a string longer than the buffer */
    uint8_t bigstr[] = {0x90, 0x4e, 'a'};
    const uint8_t *s;
    uint32_t sn;
    vla_thrift_reader_init(&r, bigstr, sizeof bigstr, 0);
    assert_int_equal(vla_thrift_binary(&r, VLA_TC_BINARY, &s, &sn), VLA_ERR_FORMAT);
    /* an unknown field type */
    uint8_t badtype[] = {0x1d, 0x00};
    int t, id;
    vla_thrift_reader_init(&r, badtype, sizeof badtype, 0);
    assert_int_equal(vla_thrift_struct_begin(&r), VLA_OK);
    assert_int_equal(vla_thrift_field(&r, &t, &id), VLA_ERR_FORMAT);
}

/* Runs, short runs and noise at every bit width, encoded by the writer's
 * encoder and decoded in uneven batches by the reader's decoder. */
static void test_rle_roundtrip(void **state) {
    (void)state;
    enum { N = 5000 };
    uint32_t *v = malloc(N * sizeof *v), *got = malloc(N * sizeof *got);
    vla_rng g = vla_rng_stream(3, 0);
    for (int bw = 0; bw <= 32; bw++) {
        uint64_t mask = bw == 32 ? 0xffffffffu : (UINT64_C(1) << bw) - 1;
        for (int i = 0; i < N;) {
            int len = 1 + (int)(vla_rng_u32(&g) % 40);
            uint32_t x = (uint32_t)(vla_rng_u32(&g) & mask);
            int run = vla_rng_u32(&g) % 2;
            for (int k = 0; k < len && i < N; k++, i++) v[i] = run ? x : (uint32_t)(vla_rng_u32(&g) & mask);
        }
        vla_pq_buf b = {0};
        vla_pq_rle_encode(&b, v, N, bw);
        assert_false(b.oom);
        vla_pq_rle d;
        vla_pq_rle_init(&d, b.data, b.len, bw);
        for (int i = 0; i < N;) {
            int k = 1 + (int)(vla_rng_u32(&g) % 700);
            if (k > N - i) k = N - i;
            assert_int_equal(vla_pq_rle_get(&d, got + i, k), VLA_OK);
            i += k;
        }
        for (int i = 0; i < N; i++)
            if (got[i] != v[i]) fail_msg("bit width %d, value %d: %u != %u", bw, i, got[i], v[i]);
        /* asking for more than was encoded fails cleanly (padding aside) */
        uint32_t extra[64];
        vla_status st = vla_pq_rle_get(&d, extra, 64);
        assert_true(st == VLA_OK || st == VLA_ERR_FORMAT);
        vla_pq_buf_free(&b);
    }
    free(v);
    free(got);
}

/* ---- damaged Parquet files ---- */

/* A small valid file: one row group, column "v" (int64, required, 10 rows,
 * alternating 0/1 so a dictionary of 2 pays) and "s" (strings). */
static uint8_t *make_file(int codec, int dictionary, size_t *n) {
    const char *path = test_tmp_path("base.parquet");
    vla_parquet_field f[] = {{"v", VLA_PQW_INT64, 0, 0}, {"s", VLA_PQW_STRING, 1, 1}};
    int64_t v[10], so[11], lo[11];
    char sb[64];
    so[0] = lo[0] = 0;
    for (int i = 0; i < 10; i++) {
        v[i] = i & 1;
        sb[i] = (char)('a' + i);
        so[i + 1] = i + 1;
        lo[i + 1] = i + 1;
    }
    vla_parquet_wcolumn c[] = {{.values = v}, {.byte_offsets = so, .bytes = (const uint8_t *)sb, .list_offsets = lo}};
    vla_parquet_write_options o = vla_parquet_write_defaults();
    o.codec = codec;
    o.dictionary = dictionary;
    o.statistics = 0;
    vla_parquet_writer *w;
    assert_int_equal(vla_parquet_writer_open(path, f, 2, &o, &w), VLA_OK);
    assert_int_equal(vla_parquet_writer_write_row_group(w, 10, c), VLA_OK);
    assert_int_equal(vla_parquet_writer_close(w), VLA_OK);
    char *data;
    assert_int_equal(vla_read_file(path, &data, n), VLA_OK);
    return (uint8_t *)data;
}

/* Open and decode every column; returns the first failure (or VLA_OK). */
static vla_status read_all(const uint8_t *data, size_t n, const char *name) {
    vla_parquet_file *pq;
    vla_status st = vla_parquet_open_memory(data, n, name, NULL, &pq);
    if (st != VLA_OK) return st;
    for (int g = 0; g < vla_parquet_num_row_groups(pq) && st == VLA_OK; g++)
        for (int c = 0; c < vla_parquet_num_columns(pq) && st == VLA_OK; c++) {
            vla_parquet_column col;
            st = vla_parquet_read_column(pq, g, c, &col);
            vla_parquet_column_free(&col);
        }
    vla_parquet_close(pq);
    return st;
}

static size_t find(const uint8_t *hay, size_t n, const void *needle, size_t m, size_t from) {
    for (size_t i = from; i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0) return i;
    return (size_t)-1;
}

static void test_valid_base_file(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = make_file(VLA_PQ_UNCOMPRESSED, 1, &n);
    assert_int_equal(read_all(d, n, "base.parquet"), VLA_OK);
    free(d);
}

static void test_truncated(void **state) {
    (void)state;
    const char *fixtures[] = {"tests/fixtures/lerobot/so101-record-test-v3.0/meta/tasks.parquet", NULL};
    for (int k = 0; k < 2; k++) {
        size_t n;
        uint8_t *d;
        if (fixtures[k]) {
            char *c;
            assert_int_equal(vla_read_file(test_source_path(fixtures[k]), &c, &n), VLA_OK);
            d = (uint8_t *)c;
        } else {
            d = make_file(VLA_PQ_SNAPPY, 1, &n);
        }
        /* every prefix */
        for (size_t len = 0; len < n; len++) {
            vla_status st = read_all(d, len, "trunc.parquet");
            if (st == VLA_OK) fail_msg("prefix of %zu of %zu bytes was accepted", len, n);
            assert_non_null(strstr(vla_error_message(), "trunc.parquet"));
        }
        /* the data section cut short under an intact footer */
        uint32_t flen;
        memcpy(&flen, d + n - 8, 4);
        size_t tail = flen + 8, data_end = n - tail;
        uint8_t *cut = malloc(n);
        int failed = 0;
        for (size_t keep = 4; keep < data_end; keep++) {
            memcpy(cut, d, keep);
            memcpy(cut + keep, d + data_end, tail);
            vla_status st = read_all(cut, keep + tail, "cut.parquet");
            if (st != VLA_OK) {
                failed++;
                const char *msg = vla_error_message();
                assert_non_null(strstr(msg, "cut.parquet"));
                if (!strstr(msg, "footer")) {
                    assert_non_null(strstr(msg, "column '"));
                    assert_non_null(strstr(msg, "row group"));
                    assert_non_null(strstr(msg, "byte"));
                }
            }
        }
        assert_int_equal(failed, (int)(data_end - 4));
        free(cut);
        free(d);
    }
}

/* Reader for the sweeps: a failure must name the file. */
static vla_status read_sample(const uint8_t *d, size_t n, void *user) {
    (void)user;
    vla_status st = read_all(d, n, "sample.parquet");
    if (st != VLA_OK && !strstr(vla_error_message(), "sample.parquet"))
        fail_msg("message does not name the file: %s", vla_error_message());
    return st;
}

/* A LeRobot-like file written by vla.c (lists, nulls, dictionaries, several
 * pages and row groups), snappy with v1 pages and uncompressed with v2
 * pages: every prefix is refused; of 1500 single-bit flips anywhere, each
 * is refused or reads (page bodies carry CRCs, test_page_crcs; a flip in
 * footer statistics or an unused header field can still read), and none
 * crashes or reads out of bounds (ASan build). */
static void test_sample_file_sweeps(void **state) {
    (void)state;
    const struct { int codec, page_version; } kinds[] = {{VLA_PQ_SNAPPY, 1}, {VLA_PQ_UNCOMPRESSED, 2}};
    for (int k = 0; k < 2; k++) {
        const char *path = test_tmp_path("sample.parquet");
        test_write_sample_parquet(path, kinds[k].codec, kinds[k].page_version);
        size_t n;
        uint8_t *d = (uint8_t *)test_slurp(path, &n);
        assert_int_equal(read_sample(d, n, NULL), VLA_OK);
        test_sweep_prefixes("sample.parquet", d, n, 1, NULL, 0, read_sample, NULL);
        int rejected = test_sweep_bit_flips("sample.parquet", d, n, 0, 1500, 17 + (uint64_t)k, read_sample, NULL);
        printf("# codec %d, v%d pages, %zu bytes: every prefix refused; %d of 1500 bit flips refused, the rest read\n",
               kinds[k].codec, kinds[k].page_version, n, rejected);
        free(d);
    }
}

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320) bit by bit: a second algorithm
 * against zlib's table-driven one that the writer and reader use. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Every page vla.c writes (dictionary, v1 and v2 data, snappy and
 * uncompressed) carries PageHeader.crc = CRC-32 of the bytes after its
 * header; a bit flipped anywhere in a page body is refused naming the CRC. */
static void test_page_crcs(void **state) {
    (void)state;
    const struct { int codec, page_version; } kinds[] = {{VLA_PQ_SNAPPY, 1}, {VLA_PQ_UNCOMPRESSED, 2}};
    for (int k = 0; k < 2; k++) {
        const char *path = test_tmp_path("crc.parquet");
        test_write_sample_parquet(path, kinds[k].codec, kinds[k].page_version);
        size_t n;
        uint8_t *d = (uint8_t *)test_slurp(path, &n);
        vla_parquet_file *pq;
        assert_int_equal(vla_parquet_open_memory(d, n, "crc.parquet", NULL, &pq), VLA_OK);
        int64_t pos = 4, end = pq->footer_start;
        vla_parquet_close(pq);
        int pages = 0, dict_pages = 0, flipped = 0;
        while (pos < end) { /* vla.c writes the chunks' pages back to back */
            vla_thrift_reader r;
            vla_thrift_reader_init(&r, d + pos, (size_t)(end - pos), pos);
            vla_pq_page_header h;
            assert_int_equal(vla_pq_read_page_header(&r, &h), VLA_OK);
            int64_t body = vla_thrift_offset(&r);
            assert_true(h.has_crc);
            assert_int_equal(h.crc, crc32_bitwise(d + body, (size_t)h.csize));
            pages++;
            dict_pages += h.type == PQ_PAGE_DICTIONARY;
            for (int64_t b = body; b < body + h.csize; b += 1 + h.csize / 5, flipped++) { /* ~5 flips per page */
                d[b] ^= (uint8_t)(1u << (b % 8));
                if (read_all(d, n, "crc.parquet") != VLA_ERR_FORMAT || !strstr(vla_error_message(), "CRC mismatch"))
                    fail_msg("flip at byte %lld (page body %lld+%d) not refused: %s", (long long)b, (long long)body,
                             h.csize, vla_error_message());
                d[b] ^= (uint8_t)(1u << (b % 8));
            }
            pos = body + h.csize;
        }
        assert_int_equal(pos, end);
        assert_true(pages >= 6 && dict_pages >= 1);
        printf("# codec %d, v%d pages: %d pages (%d dictionary) carry the CRC; %d body flips all refused\n",
               kinds[k].codec, kinds[k].page_version, pages, dict_pages, flipped);
        free(d);
    }
}

static void test_footer_flips(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = make_file(VLA_PQ_SNAPPY, 1, &n);
    uint32_t flen;
    memcpy(&flen, d + n - 8, 4);
    int errors = 0, runs = 0;
    const uint8_t xors[] = {0x01, 0x02, 0x10, 0x80, 0xff};
    for (size_t i = n - 8 - flen; i < n; i++)
        for (size_t x = 0; x < sizeof xors; x++) {
            d[i] ^= xors[x];
            vla_status st = read_all(d, n, "flip.parquet");
            d[i] ^= xors[x];
            runs++;
            if (st != VLA_OK) {
                errors++;
                assert_non_null(strstr(vla_error_message(), "flip.parquet"));
            }
        }
    printf("# %d footer byte flips, %d rejected with a message, none crashed\n", runs, errors);
    assert_true(errors > runs / 4);
    free(d);
}

static void test_bad_magic_and_missing(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = make_file(VLA_PQ_SNAPPY, 0, &n);
    d[0] = 'X';
    assert_int_equal(read_all(d, n, "m.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "m.parquet: bad magic at byte 0"));
    d[0] = 'P';
    d[n - 1] = 'X';
    assert_int_equal(read_all(d, n, "m.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "bad magic at byte"));
    d[n - 1] = '1';
    /* footer length pointing before the start */
    uint32_t big = (uint32_t)n;
    memcpy(d + n - 8, &big, 4);
    assert_int_equal(read_all(d, n, "m.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "footer length"));
    free(d);
    vla_parquet_file *pq;
    assert_int_equal(vla_parquet_open(test_tmp_path("does-not-exist.parquet"), &pq), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "does-not-exist.parquet"));
    /* corrupt Thrift: the footer replaced with 0xff */
    d = make_file(VLA_PQ_SNAPPY, 0, &n);
    uint32_t flen;
    memcpy(&flen, d + n - 8, 4);
    memset(d + n - 8 - flen, 0xff, flen);
    assert_int_equal(read_all(d, n, "t.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "t.parquet: footer"));
    assert_non_null(strstr(vla_error_message(), "corrupt thrift"));
    free(d);
}

/* The first page header of column "v" starts at byte 4: type (0x15 zz), then
 * uncompressed size and compressed size as i32 fields (0x15 varint). */
static void test_page_size_past_end(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = make_file(VLA_PQ_UNCOMPRESSED, 0, &n);
    /* 10 int64 = 80 bytes: zigzag 160 = varint a0 01 */
    const uint8_t sz[] = {0x15, 0xa0, 0x01};
    size_t u = find(d, 40, sz, 3, 4);
    assert_true(u != (size_t)-1);
    size_t c = find(d, 40, sz, 3, u + 3);
    assert_true(c != (size_t)-1);
    d[c + 1] = 0xfe; /* compressed size 8191: far past the column chunk */
    d[c + 2] = 0x7f;
    assert_int_equal(read_all(d, n, "p.parquet"), VLA_ERR_FORMAT);
    const char *msg = vla_error_message();
    assert_non_null(strstr(msg, "p.parquet: column 'v', row group 0, page at byte 4"));
    assert_non_null(strstr(msg, "past the end of the column chunk"));
    d[c + 1] = 0xa0;
    d[c + 2] = 0x01;
    d[u + 1] = 0xfe; /* uncompressed size that disagrees with the stored bytes */
    d[u + 2] = 0x7f;
    assert_int_equal(read_all(d, n, "p.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "uncompressed page"));
    free(d);
}

static void test_codecs(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = make_file(VLA_PQ_UNCOMPRESSED, 0, &n);
    /* ColumnMetaData of "v": path list ends with "v", then field 4 codec (0x15, zz 0) */
    const uint8_t pat[] = {'v', 0x15, 0x00};
    uint32_t flen;
    memcpy(&flen, d + n - 8, 4);
    size_t at = find(d, n, pat, 3, n - 8 - flen);
    assert_true(at != (size_t)-1);
    d[at + 2] = 0x0a; /* LZ4 (5): not supported */
    assert_int_equal(read_all(d, n, "c.parquet"), VLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(vla_error_message(), "c.parquet: column 'v', row group 0"));
    assert_non_null(strstr(vla_error_message(), "unsupported compression codec 5"));
    d[at + 2] = 0x02; /* SNAPPY declared over uncompressed bytes */
    assert_int_equal(read_all(d, n, "c.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "snappy"));
    d[at + 2] = 0x0c; /* ZSTD */
    assert_int_equal(read_all(d, n, "c.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "zstd"));
    d[at + 2] = 0x04; /* GZIP */
    assert_int_equal(read_all(d, n, "c.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "gzip"));
    d[at + 2] = 0x7e; /* 63: no such codec */
    assert_int_equal(read_all(d, n, "c.parquet"), VLA_ERR_UNSUPPORTED);
    free(d);
}

static void test_dictionary_index_out_of_range(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = make_file(VLA_PQ_UNCOMPRESSED, 1, &n);
    /* dictionary page header of "v" at byte 4: ... field 4 crc, field 7 struct (delta 3: 0x3c), num_values 2
     * (0x15 0x04); the CRC covers the bytes after the header, so it still holds */
    const uint8_t pat[] = {0x3c, 0x15, 0x04};
    size_t at = find(d, 40, pat, 3, 4);
    assert_true(at != (size_t)-1);
    d[at + 2] = 0x02; /* the dictionary now claims 1 value; index 1 is out of range */
    assert_int_equal(read_all(d, n, "dict.parquet"), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "dict.parquet: column 'v', row group 0, page at byte"));
    assert_non_null(strstr(vla_error_message(), "dictionary index 1 out of range"));
    free(d);
}

static void test_api_misuse(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = make_file(VLA_PQ_SNAPPY, 1, &n);
    vla_parquet_file *pq;
    assert_int_equal(vla_parquet_open_memory(d, n, "api.parquet", NULL, &pq), VLA_OK);
    vla_parquet_column col;
    assert_int_equal(vla_parquet_read_column(pq, 1, 0, &col), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_parquet_read_column(pq, 0, 2, &col), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_parquet_read_column_by_name(pq, 0, "nope", &col), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "no column 'nope'"));
    assert_int_equal(vla_parquet_find_column(pq, "s"), 1);
    assert_int_equal(vla_parquet_find_column(pq, "s.list.element"), 1);
    float *m;
    int64_t rows;
    int width;
    assert_int_equal(vla_parquet_read_f32_matrix(pq, 0, "s", &m, &rows, &width), VLA_ERR_FORMAT);
    int64_t *v;
    assert_int_equal(vla_parquet_read_i64(pq, 0, "v", &v, &rows), VLA_OK);
    assert_int_equal(rows, 10);
    assert_int_equal(v[3], 1);
    free(v);
    vla_parquet_close(pq);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thrift_roundtrip),
        cmocka_unit_test(test_thrift_limits),
        cmocka_unit_test(test_rle_roundtrip),
        cmocka_unit_test(test_valid_base_file),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_sample_file_sweeps),
        cmocka_unit_test(test_page_crcs),
        cmocka_unit_test(test_footer_flips),
        cmocka_unit_test(test_bad_magic_and_missing),
        cmocka_unit_test(test_page_size_past_end),
        cmocka_unit_test(test_codecs),
        cmocka_unit_test(test_dictionary_index_out_of_range),
        cmocka_unit_test(test_api_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

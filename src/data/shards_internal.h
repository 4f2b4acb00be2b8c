/* shards_internal.h — one shard file, parsed and checked (shards.h gives the
 * layout); shared by the writer (shards_write.c: resume checks) and the
 * reader (shards_read.c), and the fuzz target. Not API. */
#ifndef VLA_DATA_SHARDS_INTERNAL_H
#define VLA_DATA_SHARDS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/fsutil.h"
#include "base/status.h"

#define VLA_SHARD_MAGIC "VLASHRD1"
#define VLA_SHARD_END "VLASHEND"
#define VLA_SHARD_ALIGN 4096       /* camera sections start on a page (mapped frames) */
#define VLA_SHARD_SECTION_ALIGN 64 /* every section starts on a cache line */
#define VLA_SHARD_MAX_SECTIONS 256

typedef enum { VLA_SHARD_F32, VLA_SHARD_I64, VLA_SHARD_RGB8 } vla_shard_kind;

/* The index columns' sections, after the numeric features: "#timestamp"
 * (f32), then "#frame_index", "#episode_index", "#index", "#task_index"
 * (i64), one value per row. */
extern const char *const vla_shard_index_sections[5];

typedef struct {
    char name[128];
    vla_shard_kind kind;
    int64_t width;         /* values per row (rgb8: height × width_px × 3 bytes) */
    int height, width_px;  /* rgb8 only */
    uint64_t offset, bytes;
    uint32_t crc;          /* from the trailer */
} vla_shard_section;

typedef struct {
    int64_t shard, rows;
    int64_t n_episodes;
    int64_t *episodes;     /* [n_episodes × 2]: episode_index, length */
    int n_sections;
    vla_shard_section sec[VLA_SHARD_MAX_SECTIONS];
    uint32_t header_len, header_crc; /* of the JSON header at byte 16 */
    uint64_t file_bytes;
} vla_shard_header;

/* Parse and check a whole shard file held in memory: magic, header CRC and
 * JSON, section bounds and sizes against the rows, file size, trailer; with
 * verify_data also every section's CRC. `what` names it in errors. */
vla_status vla_shard_parse(const char *what, const uint8_t *data, size_t size, bool verify_data, vla_shard_header *h);
void vla_shard_header_free(vla_shard_header *h);
/* Bytes per value of a section kind. */
int vla_shard_kind_size(vla_shard_kind k);
const char *vla_shard_kind_name(vla_shard_kind k);
/* Little-endian u32 fields of the prefix and trailer. */
static inline uint32_t vla_shard_get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void vla_shard_put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}
/* CRC-32 (zlib's) of n bytes, any n. */
uint32_t vla_shard_crc(const void *data, uint64_t n);
/* "shard-00003.vshard" */
void vla_shard_file_name(int64_t shard, char *buf, size_t cap);

#endif

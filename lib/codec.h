/* The snapshot's byte codec (codec.c; docs/snapshot.md): a growing little-endian writer, a
 * bounded reader, CRC-32C and FNV-1a. Base layer: it knows no record. The modules that save a
 * part of the ledger (snapshot.c, locality.c, exclude.c) write and read through these.
 *
 * Errors are sticky: a writer that could not grow, or a reader that ran past its end or met a
 * value out of range, sets its flag and every later call does nothing (reads return 0), so a
 * caller checks once at the end of a record or section.
 */
#ifndef TL_CODEC_H
#define TL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A writer. The buffer comes from the process allocator (tl__raw_*), not from a scheduler's
 * counted memory: a snapshot is built under the lock and written out after it. */
typedef struct tl__wbuf {
  uint8_t *buf;
  size_t len;  /* bytes written */
  size_t cap;  /* bytes of buf */
  bool failed; /* an allocation failed: the image is incomplete (TL_ENOMEM) */
} tl__wbuf;

void tl__put_u8(tl__wbuf *w, uint8_t v);
void tl__put_u16(tl__wbuf *w, uint16_t v);
void tl__put_u32(tl__wbuf *w, uint32_t v);
void tl__put_u64(tl__wbuf *w, uint64_t v);
void tl__put_bytes(tl__wbuf *w, const void *p, size_t n);
/* A string of n bytes (may be 0): u32 length, then the bytes, no NUL. */
void tl__put_str(tl__wbuf *w, const char *p, size_t n);
/* Reserves a u32 at the current end and returns its offset, for a count or length written
 * later with tl__patch_u32 (SIZE_MAX when the writer has failed). */
size_t tl__put_u32_later(tl__wbuf *w);
void tl__patch_u32(tl__wbuf *w, size_t at, uint32_t v);
void tl__wbuf_free(tl__wbuf *w);

/* A reader over len bytes. Times are rebased as they are read (tl__get_time): a saved time t
 * becomes t - saved_now + now, saturating at 0 and below UINT64_MAX, and UINT64_MAX ("never")
 * stays itself. */
typedef struct tl__rbuf {
  const uint8_t *p;
  size_t len;
  size_t at;          /* bytes read */
  bool bad;           /* ran past the end, or a value was out of range */
  uint64_t saved_now; /* the clock when the snapshot was taken */
  uint64_t now;       /* the clock when it is restored */
} tl__rbuf;

uint8_t tl__get_u8(tl__rbuf *r);
uint16_t tl__get_u16(tl__rbuf *r);
uint32_t tl__get_u32(tl__rbuf *r);
uint64_t tl__get_u64(tl__rbuf *r);
/* A saved clock time, rebased. */
uint64_t tl__get_time(tl__rbuf *r);
/* A u8 that must be below limit; u8 0 or 1 as a bool. Anything else marks the reader bad. */
uint8_t tl__get_enum(tl__rbuf *r, uint8_t limit);
bool tl__get_bool(tl__rbuf *r);
/* A u32 that must be below limit. */
uint32_t tl__get_below(tl__rbuf *r, uint32_t limit);
/* A count of records each at least min_bytes long: a count the remaining bytes cannot hold
 * marks the reader bad, so nothing is ever allocated to the size of a corrupt count. */
uint32_t tl__get_count(tl__rbuf *r, size_t min_bytes);
/* A string as tl__put_str wrote it, of min to max bytes: *len its length, the bytes returned
 * point into the reader's buffer (not NUL-terminated); NULL and bad when out of range. */
const char *tl__get_str(tl__rbuf *r, size_t min, size_t max, size_t *len);
/* The same, copied into dst (cap bytes) and NUL-terminated: its length must be below cap, and
 * it may hold no NUL. */
bool tl__get_cstr(tl__rbuf *r, size_t min, char *dst, size_t cap, size_t *len);
/* n raw bytes, pointing into the buffer; NULL and bad past the end. */
const uint8_t *tl__get_bytes(tl__rbuf *r, size_t n);
/* Whether the reader is good and at its end (a section read whole). */
static inline bool tl__rbuf_done(const tl__rbuf *r) { return !r->bad && r->at == r->len; }

/* CRC-32C (Castagnoli), reflected, as iSCSI and ext4 use it: crc 0 to start. */
uint32_t tl__crc32c(uint32_t crc, const void *p, size_t n);
/* 64-bit FNV-1a over n bytes, from h (0 to start: the offset basis is used). */
uint64_t tl__fnv1a(uint64_t h, const void *p, size_t n);

#endif /* TL_CODEC_H */

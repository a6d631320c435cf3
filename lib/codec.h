/* The project's one byte codec (codec.c): little-endian integers, a writer (growing, or into a
 * buffer already sized), a bounded reader that never reads past its end, CRC-32C and FNV-1a.
 * Base layer: it knows no record, and it includes nothing of the library, so the cluster example
 * links it too (the CMake object library tl_codec): the snapshot (snapshot.c, locality.c,
 * exclude.c), the wire protocol (examples/cluster/proto.c), the driver's state files (state.c)
 * and the executor write and read through these, and through nothing else.
 *
 * Errors are sticky: a writer that could not grow, or a reader that ran past its end or met a
 * value out of range, sets its flag and every later call does nothing (reads return 0), so a
 * caller checks once at the end of a record or section. A reader also keeps its first fault,
 * which a caller with error codes of its own maps to them (the wire's TLC_ETRUNCATED for a
 * field past the end, TLC_ELENGTH for a length out of bounds).
 *
 * The calls made per field are inline, here; what is rare (growing, strings copied out, times)
 * is in codec.c. No function keeps state but CRC-32C's table, built once (uv_once); a writer or
 * a reader is used by one thread at a time.
 */
#ifndef TL_CODEC_H
#define TL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Little-endian integers at a pointer
 * ------------------------------------------------------------------------------------------- */

/* v's n low bytes (1..8) at p, least significant first, a byte at a time: no alignment or byte
 * order of the host is assumed. The widths of the fields are written out, not looped over, so
 * that compilers merge them into one load or store (gcc does not unroll the loop at -O2). */
static inline void tl__le_put(uint8_t *p, uint64_t v, size_t n) {
  switch (n) {
  case 1:
    p[0] = (uint8_t)v;
    break;
  case 2:
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    break;
  case 4:
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
    break;
  case 8:
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
    p[4] = (uint8_t)(v >> 32);
    p[5] = (uint8_t)(v >> 40);
    p[6] = (uint8_t)(v >> 48);
    p[7] = (uint8_t)(v >> 56);
    break;
  default:
    for (size_t i = 0; i < n; i++)
      p[i] = (uint8_t)(v >> (8 * i));
  }
}

/* The n bytes (1..8) at p as a little-endian integer. */
static inline uint64_t tl__le_get(const uint8_t *p, size_t n) {
  switch (n) {
  case 1:
    return p[0];
  case 2:
    return (uint64_t)p[0] | (uint64_t)p[1] << 8;
  case 4:
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
  case 8:
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
  default: {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
      v |= (uint64_t)p[i] << (8 * i);
    return v;
  }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Writer
 * ------------------------------------------------------------------------------------------- */

/* A writer appends to buf. A growing one (tl__wbuf_init) grows buf through the functions it was
 * given: the library passes its process allocator (tl__raw_realloc, never counted: a snapshot is
 * built under the lock and written out after it), a program realloc and free. A fixed one
 * (tl__wbuf_init_fixed) writes into the caller's buffer and never grows: a write past its end
 * fails it. The caller may read buf[0..len) at any time, and patch what it reserved. */
typedef struct tl__wbuf {
  uint8_t *buf;                        /* the bytes; owned by a growing writer, NULL until the
                                          first write */
  size_t len;                          /* bytes written */
  size_t cap;                          /* bytes of buf */
  bool failed;                         /* a write did not fit (an allocation failed, a fixed buffer
                                          was full, a length too large for its field): buf is
                                          incomplete and every later write does nothing */
  void *(*realloc_fn)(void *, size_t); /* grows buf; NULL for a fixed writer */
  void (*free_fn)(void *);             /* frees buf (tl__wbuf_free); NULL for a fixed writer */
} tl__wbuf;

/* An empty growing writer, which holds no memory until its first write. */
void tl__wbuf_init(tl__wbuf *w, void *(*realloc_fn)(void *, size_t), void (*free_fn)(void *));
/* A fixed writer over buf[0..cap), the caller's. */
void tl__wbuf_init_fixed(tl__wbuf *w, void *buf, size_t cap);
/* Empties the writer (len 0, not failed) and keeps its buffer, to write the next record. */
void tl__wbuf_reset(tl__wbuf *w);
/* Frees a growing writer's buffer (a fixed one's is the caller's) and empties it; it may be
 * written to again. */
void tl__wbuf_free(tl__wbuf *w);
/* The slow path of tl__wbuf_room: grows buf, or fails the writer and returns false. */
bool tl__wbuf_grow(tl__wbuf *w, size_t n);

/* Makes room for n more bytes: false when the writer has failed or fails now. */
static inline bool tl__wbuf_room(tl__wbuf *w, size_t n) {
  return (!w->failed && w->cap - w->len >= n) || tl__wbuf_grow(w, n);
}

/* v's n low bytes (1..8), little-endian. */
static inline void tl__put_le(tl__wbuf *w, uint64_t v, size_t n) {
  if (tl__wbuf_room(w, n)) {
    tl__le_put(w->buf + w->len, v, n);
    w->len += n;
  }
}

static inline void tl__put_u8(tl__wbuf *w, uint8_t v) { tl__put_le(w, v, 1); }
static inline void tl__put_u16(tl__wbuf *w, uint16_t v) { tl__put_le(w, v, 2); }
static inline void tl__put_u32(tl__wbuf *w, uint32_t v) { tl__put_le(w, v, 4); }
static inline void tl__put_u64(tl__wbuf *w, uint64_t v) { tl__put_le(w, v, 8); }

/* n raw bytes (p may be NULL when n is 0). */
static inline void tl__put_bytes(tl__wbuf *w, const void *p, size_t n) {
  if (n != 0 && tl__wbuf_room(w, n)) {
    memcpy(w->buf + w->len, p, n);
    w->len += n;
  }
}

/* A string of n bytes (may be 0; any bytes, no NUL added): its length as a u32, then the bytes
 * (the snapshot's strings and the wire's `bytes` fields). A length over UINT32_MAX fails the
 * writer. */
static inline void tl__put_str(tl__wbuf *w, const void *p, size_t n) {
  if (n > UINT32_MAX) {
    w->failed = true;
    return;
  }
  tl__put_u32(w, (uint32_t)n);
  tl__put_bytes(w, p, n);
}

/* The same with a u16 length (the wire's `string` fields, the driver's record): a length over
 * UINT16_MAX fails the writer. */
static inline void tl__put_str16(tl__wbuf *w, const void *p, size_t n) {
  if (n > UINT16_MAX) {
    w->failed = true;
    return;
  }
  tl__put_u16(w, (uint16_t)n);
  tl__put_bytes(w, p, n);
}

/* Reserves a u32 at the current end and returns its offset, for a count or length written
 * later with tl__patch_u32 (SIZE_MAX when the writer has failed). */
size_t tl__put_u32_later(tl__wbuf *w);
/* Writes v over the 4 or 8 bytes at offset at, written before; nothing when the writer has
 * failed or they are not all written. */
void tl__patch_u32(tl__wbuf *w, size_t at, uint32_t v);
void tl__patch_u64(tl__wbuf *w, size_t at, uint64_t v);

/* ---------------------------------------------------------------------------------------------
 * Reader
 * ------------------------------------------------------------------------------------------- */

/* Why a reader went bad: the first fault it met (later ones do not replace it). */
typedef enum tl__rfault {
  TL__RFAULT_NONE = 0,  /* not bad */
  TL__RFAULT_SHORT = 1, /* a field runs past the end */
  TL__RFAULT_RANGE = 2, /* a value or a length outside its bounds (found before the bytes a
                           length announces are looked for) */
  TL__RFAULT_NUL = 3    /* a string copied out as a C string holds a NUL */
} tl__rfault;

/* A reader over len bytes at p. Times are rebased as they are read (tl__get_time): a saved time
 * t becomes t - saved_now + now, saturating at 0 and below UINT64_MAX, and UINT64_MAX ("never")
 * stays itself. */
typedef struct tl__rbuf {
  const uint8_t *p;   /* the bytes; not owned */
  size_t len;         /* bytes at p */
  size_t at;          /* bytes read: at <= len */
  bool bad;           /* ran past the end, or a value was out of range (fault says which) */
  uint8_t fault;      /* a tl__rfault: NONE exactly while bad is false */
  uint64_t saved_now; /* the clock when the snapshot was taken */
  uint64_t now;       /* the clock when it is restored */
} tl__rbuf;

/* A good reader over p[0..len), its clocks 0 (times are read as they were saved). */
static inline tl__rbuf tl__rbuf_over(const void *p, size_t len) {
  tl__rbuf r = {(const uint8_t *)p, len, 0, false, TL__RFAULT_NONE, 0, 0};
  return r;
}

/* Marks r bad with fault, unless it is bad already (then its first fault stays): the way a
 * caller refuses a value it has read. */
static inline void tl__rbuf_fail(tl__rbuf *r, tl__rfault fault) {
  if (!r->bad) {
    r->bad = true;
    r->fault = (uint8_t)fault;
  }
}

/* Bytes not read yet. */
static inline size_t tl__rbuf_left(const tl__rbuf *r) { return r->len - r->at; }

/* Whether the reader is good and at its end (a section read whole). */
static inline bool tl__rbuf_done(const tl__rbuf *r) { return !r->bad && r->at == r->len; }

/* n raw bytes, pointing into the buffer; NULL and bad (SHORT) past the end. */
static inline const uint8_t *tl__get_bytes(tl__rbuf *r, size_t n) {
  if (r->bad || r->len - r->at < n) {
    tl__rbuf_fail(r, TL__RFAULT_SHORT);
    return NULL;
  }
  const uint8_t *p = r->p + r->at;
  r->at += n;
  return p;
}

/* An n-byte (1..8) little-endian integer; 0 when bad. */
static inline uint64_t tl__get_le(tl__rbuf *r, size_t n) {
  if (r->bad || r->len - r->at < n) {
    tl__rbuf_fail(r, TL__RFAULT_SHORT);
    return 0;
  }
  uint64_t v = tl__le_get(r->p + r->at, n);
  r->at += n;
  return v;
}

static inline uint8_t tl__get_u8(tl__rbuf *r) { return (uint8_t)tl__get_le(r, 1); }
static inline uint16_t tl__get_u16(tl__rbuf *r) { return (uint16_t)tl__get_le(r, 2); }
static inline uint32_t tl__get_u32(tl__rbuf *r) { return (uint32_t)tl__get_le(r, 4); }
static inline uint64_t tl__get_u64(tl__rbuf *r) { return tl__get_le(r, 8); }

/* A length of width bytes (2 or 4), then that many bytes: the length must be min..max (else
 * RANGE, before the bytes are looked for: a length over its bound is RANGE even where the input
 * is also too short for it), then the bytes must be there (else SHORT). Returns them, pointing
 * into the buffer, with *len; NULL and *len 0 when bad. */
static inline const uint8_t *tl__get_sized(tl__rbuf *r, size_t width, size_t min, size_t max,
                                           size_t *len) {
  uint64_t n = tl__get_le(r, width);
  if (!r->bad && (n < min || n > max))
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  const uint8_t *p = tl__get_bytes(r, r->bad ? 0 : (size_t)n);
  *len = r->bad ? 0 : (size_t)n;
  return p;
}

/* A string as tl__put_str (u32 length) or tl__put_str16 (u16 length) wrote it, of min to max
 * bytes: *len its length, the bytes returned point into the reader's buffer (not
 * NUL-terminated, and may hold a NUL); NULL and bad when out of range or past the end. */
static inline const char *tl__get_str(tl__rbuf *r, size_t min, size_t max, size_t *len) {
  return (const char *)tl__get_sized(r, 4, min, max, len);
}
static inline const char *tl__get_str16(tl__rbuf *r, size_t min, size_t max, size_t *len) {
  return (const char *)tl__get_sized(r, 2, min, max, len);
}

/* The same, copied into dst (cap >= 1 bytes) and NUL-terminated: its length must be min and
 * below cap (RANGE), and it may hold no NUL (NUL). False, dst "" and *len 0 when bad. len may
 * be NULL. */
bool tl__get_cstr(tl__rbuf *r, size_t min, char *dst, size_t cap, size_t *len);
bool tl__get_cstr16(tl__rbuf *r, size_t min, char *dst, size_t cap, size_t *len);

/* A saved clock time, rebased. */
uint64_t tl__get_time(tl__rbuf *r);
/* A u8 that must be below limit; u8 0 or 1 as a bool. Anything else marks the reader bad
 * (RANGE) and reads 0. */
uint8_t tl__get_enum(tl__rbuf *r, uint8_t limit);
bool tl__get_bool(tl__rbuf *r);
/* A u32 that must be below limit (RANGE). */
uint32_t tl__get_below(tl__rbuf *r, uint32_t limit);
/* A u32 count of records each at least min_bytes long: a count the remaining bytes cannot hold
 * marks the reader bad (RANGE), so nothing is ever allocated to the size of a corrupt count. */
uint32_t tl__get_count(tl__rbuf *r, size_t min_bytes);

/* ---------------------------------------------------------------------------------------------
 * Checksums
 * ------------------------------------------------------------------------------------------- */

/* CRC-32C (Castagnoli), reflected, as iSCSI and ext4 use it: crc 0 to start. */
uint32_t tl__crc32c(uint32_t crc, const void *p, size_t n);

/* 64-bit FNV-1a over n bytes, going on from h: TL__FNV1A_INIT (the offset basis) to start, a
 * previous result to hash more bytes after those. */
#define TL__FNV1A_INIT UINT64_C(0xcbf29ce484222325)
uint64_t tl__fnv1a(uint64_t h, const void *p, size_t n);

#endif /* TL_CODEC_H */

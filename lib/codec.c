/* The project's byte codec (codec.h): the writer's growth, the reader's rarer fields, CRC-32C
 * and FNV-1a. Base layer; it includes nothing of the library but codec.h, so that the cluster
 * example links it as it is.
 */
#include "codec.h"

#include <uv.h>

/* ---------------------------------------------------------------------------------------------
 * Writer
 * ------------------------------------------------------------------------------------------- */

void tl__wbuf_init(tl__wbuf *w, void *(*realloc_fn)(void *, size_t), void (*free_fn)(void *)) {
  tl__wbuf empty = {NULL, 0, 0, false, realloc_fn, free_fn};
  *w = empty;
}

void tl__wbuf_init_fixed(tl__wbuf *w, void *buf, size_t cap) {
  tl__wbuf fixed = {buf, 0, cap, false, NULL, NULL};
  *w = fixed;
}

void tl__wbuf_reset(tl__wbuf *w) {
  w->len = 0;
  w->failed = false;
}

void tl__wbuf_free(tl__wbuf *w) {
  if (w->free_fn != NULL) {
    w->free_fn(w->buf);
    w->buf = NULL;
    w->cap = 0;
  }
  tl__wbuf_reset(w);
}

/* Doubles from 4 KiB until n more bytes fit. */
bool tl__wbuf_grow(tl__wbuf *w, size_t n) {
  if (w->failed)
    return false;
  if (w->cap - w->len >= n)
    return true;
  if (w->realloc_fn == NULL) {
    w->failed = true;
    return false;
  }
  size_t cap = w->cap != 0 ? w->cap : 4096;
  while (cap - w->len < n) {
    if (cap > SIZE_MAX / 2) {
      w->failed = true;
      return false;
    }
    cap *= 2;
  }
  uint8_t *p = w->realloc_fn(w->buf, cap);
  if (p == NULL) {
    w->failed = true;
    return false;
  }
  w->buf = p;
  w->cap = cap;
  return true;
}

size_t tl__put_u32_later(tl__wbuf *w) {
  size_t at = w->len;
  tl__put_u32(w, 0);
  return w->failed ? SIZE_MAX : at;
}

static void patch(tl__wbuf *w, size_t at, uint64_t v, size_t n) {
  if (!w->failed && at <= w->len && w->len - at >= n)
    tl__le_put(w->buf + at, v, n);
}

void tl__patch_u32(tl__wbuf *w, size_t at, uint32_t v) { patch(w, at, v, 4); }
void tl__patch_u64(tl__wbuf *w, size_t at, uint64_t v) { patch(w, at, v, 8); }

/* ---------------------------------------------------------------------------------------------
 * Reader
 * ------------------------------------------------------------------------------------------- */

static bool get_cstr(tl__rbuf *r, size_t width, size_t min, char *dst, size_t cap, size_t *len) {
  size_t n;
  const uint8_t *p = tl__get_sized(r, width, min, cap - 1, &n);
  if (p != NULL && memchr(p, '\0', n) != NULL)
    tl__rbuf_fail(r, TL__RFAULT_NUL);
  if (r->bad)
    n = 0;
  else
    memcpy(dst, p, n);
  dst[n] = '\0';
  if (len != NULL)
    *len = n;
  return !r->bad;
}

bool tl__get_cstr(tl__rbuf *r, size_t min, char *dst, size_t cap, size_t *len) {
  return get_cstr(r, 4, min, dst, cap, len);
}

bool tl__get_cstr16(tl__rbuf *r, size_t min, char *dst, size_t cap, size_t *len) {
  return get_cstr(r, 2, min, dst, cap, len);
}

uint64_t tl__get_time(tl__rbuf *r) {
  uint64_t t = tl__get_u64(r);
  if (t == UINT64_MAX)
    return t;
  if (r->now >= r->saved_now) {
    uint64_t ahead = r->now - r->saved_now; /* t + ahead, saturating below "never" */
    return ahead < UINT64_MAX - 1 - t ? t + ahead : UINT64_MAX - 1;
  }
  uint64_t back = r->saved_now - r->now;
  return t > back ? t - back : 0;
}

uint8_t tl__get_enum(tl__rbuf *r, uint8_t limit) {
  uint8_t v = tl__get_u8(r);
  if (v >= limit) {
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
    return 0;
  }
  return v;
}

bool tl__get_bool(tl__rbuf *r) { return tl__get_enum(r, 2) != 0; }

uint32_t tl__get_below(tl__rbuf *r, uint32_t limit) {
  uint32_t v = tl__get_u32(r);
  if (v >= limit) {
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
    return 0;
  }
  return v;
}

uint32_t tl__get_count(tl__rbuf *r, size_t min_bytes) {
  uint32_t n = tl__get_u32(r);
  if (r->bad)
    return 0;
  if (min_bytes == 0)
    min_bytes = 1;
  if (n > tl__rbuf_left(r) / min_bytes) {
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
    return 0;
  }
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * Checksums
 * ------------------------------------------------------------------------------------------- */

static uint32_t crc_table[8][256];
static uv_once_t crc_once = UV_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

/* Slicing-by-8: eight bytes a step. */
uint32_t tl__crc32c(uint32_t crc, const void *p, size_t n) {
  uv_once(&crc_once, crc_init);
  const uint8_t *b = p;
  crc = ~crc;
  while (n >= 8) {
    uint32_t lo =
        crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
    crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
          crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^ crc_table[3][b[4]] ^
          crc_table[2][b[5]] ^ crc_table[1][b[6]] ^ crc_table[0][b[7]];
    b += 8;
    n -= 8;
  }
  while (n-- != 0)
    crc = (crc >> 8) ^ crc_table[0][(crc ^ *b++) & 0xFF];
  return ~crc;
}

uint64_t tl__fnv1a(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

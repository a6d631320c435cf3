/* The snapshot's byte codec: little-endian fields, a writer that grows, a reader that never
 * reads past its end, CRC-32C and FNV-1a (codec.h). Base layer. */
#include "codec.h"

#include "internal.h"

/* ---------------------------------------------------------------------------------------------
 * Writer
 * ------------------------------------------------------------------------------------------- */

static bool room(tl__wbuf *w, size_t n) {
  if (w->failed)
    return false;
  if (w->cap - w->len >= n)
    return true;
  size_t cap = w->cap != 0 ? w->cap : 4096;
  while (cap - w->len < n) {
    if (cap > SIZE_MAX / 2) {
      w->failed = true;
      return false;
    }
    cap *= 2;
  }
  uint8_t *p = tl__raw_realloc(w->buf, cap);
  if (p == NULL) {
    w->failed = true;
    return false;
  }
  w->buf = p;
  w->cap = cap;
  return true;
}

void tl__put_bytes(tl__wbuf *w, const void *p, size_t n) {
  if (n != 0 && room(w, n)) {
    memcpy(w->buf + w->len, p, n);
    w->len += n;
  }
}

static void put_le(tl__wbuf *w, uint64_t v, size_t n) {
  if (!room(w, n))
    return;
  for (size_t i = 0; i < n; i++)
    w->buf[w->len + i] = (uint8_t)(v >> (8 * i));
  w->len += n;
}

void tl__put_u8(tl__wbuf *w, uint8_t v) { put_le(w, v, 1); }
void tl__put_u16(tl__wbuf *w, uint16_t v) { put_le(w, v, 2); }
void tl__put_u32(tl__wbuf *w, uint32_t v) { put_le(w, v, 4); }
void tl__put_u64(tl__wbuf *w, uint64_t v) { put_le(w, v, 8); }

void tl__put_str(tl__wbuf *w, const char *p, size_t n) {
  if (n > UINT32_MAX) {
    w->failed = true;
    return;
  }
  tl__put_u32(w, (uint32_t)n);
  tl__put_bytes(w, p, n);
}

size_t tl__put_u32_later(tl__wbuf *w) {
  size_t at = w->len;
  tl__put_u32(w, 0);
  return w->failed ? SIZE_MAX : at;
}

void tl__patch_u32(tl__wbuf *w, size_t at, uint32_t v) {
  if (w->failed || at > w->len || w->len - at < 4)
    return;
  for (size_t i = 0; i < 4; i++)
    w->buf[at + i] = (uint8_t)(v >> (8 * i));
}

void tl__wbuf_free(tl__wbuf *w) {
  tl__raw_free(w->buf);
  w->buf = NULL;
  w->len = w->cap = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Reader
 * ------------------------------------------------------------------------------------------- */

const uint8_t *tl__get_bytes(tl__rbuf *r, size_t n) {
  if (r->bad || r->len - r->at < n) {
    r->bad = true;
    return NULL;
  }
  const uint8_t *p = r->p + r->at;
  r->at += n;
  return p;
}

static uint64_t get_le(tl__rbuf *r, size_t n) {
  const uint8_t *p = tl__get_bytes(r, n);
  uint64_t v = 0;
  if (p != NULL)
    for (size_t i = 0; i < n; i++)
      v |= (uint64_t)p[i] << (8 * i);
  return v;
}

uint8_t tl__get_u8(tl__rbuf *r) { return (uint8_t)get_le(r, 1); }
uint16_t tl__get_u16(tl__rbuf *r) { return (uint16_t)get_le(r, 2); }
uint32_t tl__get_u32(tl__rbuf *r) { return (uint32_t)get_le(r, 4); }
uint64_t tl__get_u64(tl__rbuf *r) { return get_le(r, 8); }

uint64_t tl__get_time(tl__rbuf *r) {
  uint64_t t = tl__get_u64(r);
  if (t == UINT64_MAX)
    return t;
  if (r->now >= r->saved_now) {
    uint64_t v = tl__add_sat(t, r->now - r->saved_now);
    return v == UINT64_MAX ? UINT64_MAX - 1 : v;
  }
  uint64_t back = r->saved_now - r->now;
  return t > back ? t - back : 0;
}

uint8_t tl__get_enum(tl__rbuf *r, uint8_t limit) {
  uint8_t v = tl__get_u8(r);
  if (v >= limit) {
    r->bad = true;
    return 0;
  }
  return v;
}

bool tl__get_bool(tl__rbuf *r) { return tl__get_enum(r, 2) != 0; }

uint32_t tl__get_below(tl__rbuf *r, uint32_t limit) {
  uint32_t v = tl__get_u32(r);
  if (v >= limit) {
    r->bad = true;
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
  if (n > (r->len - r->at) / min_bytes) {
    r->bad = true;
    return 0;
  }
  return n;
}

const char *tl__get_str(tl__rbuf *r, size_t min, size_t max, size_t *len) {
  uint32_t n = tl__get_u32(r);
  if (!r->bad && (n < min || n > max))
    r->bad = true;
  const uint8_t *p = tl__get_bytes(r, r->bad ? 0 : n);
  if (r->bad) {
    *len = 0;
    return NULL;
  }
  *len = n;
  return (const char *)p;
}

bool tl__get_cstr(tl__rbuf *r, size_t min, char *dst, size_t cap, size_t *len) {
  size_t n;
  const char *p = tl__get_str(r, min, cap - 1, &n);
  if (p == NULL || memchr(p, '\0', n) != NULL) {
    r->bad = true;
    dst[0] = '\0';
    *len = 0;
    return false;
  }
  memcpy(dst, p, n);
  dst[n] = '\0';
  *len = n;
  return true;
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
  if (h == 0)
    h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

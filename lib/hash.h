/* The one place that includes uthash. It turns on HASH_NONFATAL_OOM, so a failed add leaves
 * the element out of the table with elt->hh.tbl == NULL instead of exiting, and routes uthash's
 * allocations through the scheduler's accounted allocator.
 *
 * uthash's macros expand in the caller, so every function that adds to or deletes from a table
 * must have the scheduler in scope under the name `s` (a compile error otherwise). That is the
 * whole trick: the bucket arrays and table headers are counted in s->mem_bytes like any record.
 */
#ifndef TL_HASH_H
#define TL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The hash of every table: a word at a time, finished with MurmurHash3's 64-bit mixer. Keys are
 * tids, ids and pointers made by the library, and names given by the runtime (executor, host,
 * rack and pool names): none comes from an adversary, so speed matters more than resistance to
 * chosen collisions. An 8-byte key (a tid, a pointer) is one load and the mixer; an id of under
 * 16 bytes is two or three words. uthash's own default (Bob Jenkins' lookup2, twelve bytes a
 * round) cost a tenth of a task's lifecycle. */
static inline uint64_t tl__hash_mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static inline unsigned tl__hash(const void *key, size_t len) {
  const unsigned char *p = key;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;
  if (len == sizeof w) {
    memcpy(&w, p, sizeof w);
    return (unsigned)tl__hash_mix(h ^ w);
  }
  for (; len >= sizeof w; p += sizeof w, len -= sizeof w) {
    memcpy(&w, p, sizeof w);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  w = 0; /* the last 0 to 7 bytes, without a call to memcpy of a variable length */
  switch (len) {
  case 7:
    w |= (uint64_t)p[6] << 48; /* fall through */
  case 6:
    w |= (uint64_t)p[5] << 40; /* fall through */
  case 5:
    w |= (uint64_t)p[4] << 32; /* fall through */
  case 4:
    w |= (uint64_t)p[3] << 24; /* fall through */
  case 3:
    w |= (uint64_t)p[2] << 16; /* fall through */
  case 2:
    w |= (uint64_t)p[1] << 8; /* fall through */
  case 1:
    w |= (uint64_t)p[0];
    break;
  default:
    break;
  }
  return (unsigned)tl__hash_mix(h ^ w);
}

#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = tl__hash((keyptr), (size_t)(keylen)))
#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) tl__malloc(s, (sz))
#define uthash_free(ptr, sz) tl__free(s, (ptr), (sz))
#define uthash_nonfatal_oom(elt) ((void)0)

#include <uthash.h>

/* True when the last HASH_ADD of elt into the table of handle hh succeeded. */
#define TL__HASH_ADDED(elt, hh) ((elt)->hh.tbl != NULL)

/* Bytes and blocks a table's header and buckets take (for tl_check's memory balance). */
#define TL__HASH_TABLE_BYTES(tbl)                                                                  \
  (sizeof(UT_hash_table) + (size_t)(tbl)->num_buckets * sizeof(UT_hash_bucket))
#define TL__HASH_TABLE_BLOCKS 2

#endif /* TL_HASH_H */

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

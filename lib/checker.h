/* The checking kit (checker.c): what every module's check of its own records shares. tl_check
 * (inspect.c) makes one checker, hands it to each module's tl__*_check in turn, and stops at the
 * first violation; each check writes the violation it finds into the checker's why, adds the
 * memory of the records it reaches to bytes and blocks, and may call only its own layer or lower
 * ones (docs/design.md "Files and layers"). For the files that own records and inspect.c. (Not
 * "check.h": lib/ is on the include path of code that includes the Check framework's <check.h>.)
 */
#ifndef TL_CHECKER_H
#define TL_CHECKER_H

#include "internal.h"

/* One run of tl_check, under the scheduler's lock. */
struct tl__checker {
  struct tl_scheduler *s; /* the scheduler checked */
  char *why;              /* the caller's buffer for the first violation, or NULL */
  size_t len;             /* bytes of why */
  size_t bytes;           /* memory the records reached so far account for */
  size_t blocks;          /* and their number of blocks */
  bool failed;            /* a check made through a callback (tl__check_str_refs) failed; its
                             message is in why */
};

/* Writes a violation into why (cut to len) and returns TL_ECORRUPT. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int tl__check_violated(tl__checker *c, const char *fmt, ...);

/* Returns the violation from the calling check when cond does not hold. */
#define TL__CHECK(c, cond, ...)                                                                    \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      return tl__check_violated((c), __VA_ARGS__);                                                 \
  } while (0)

/* Counts one block of bytes, or n records of size bytes each, as reachable. */
static inline void tl__check_account(tl__checker *c, size_t bytes) {
  c->bytes += bytes;
  c->blocks++;
}
static inline void tl__check_account_n(tl__checker *c, size_t n, size_t size) {
  c->bytes += n * size;
  c->blocks += n;
}
/* Counts a uthash table's header and bucket array (tbl NULL: an empty map, nothing). */
static inline void tl__check_account_table(tl__checker *c, const UT_hash_table *tbl) {
  if (tbl != NULL) {
    c->bytes += TL__HASH_TABLE_BYTES(tbl);
    c->blocks += TL__HASH_TABLE_BLOCKS;
  }
}

/* Shared strings. A module that holds strings walks every one it holds with a tl__str_fn
 * (tl__*_each_str); tl_check walks all holders twice: first with tl__check_visit_str, which
 * counts each string's memory once however many holders it has and counts its holders, then
 * with tl__check_str_refs, which compares each reference count with the holders found (the
 * first that disagrees sets failed and writes why). holder names the holder in the message. */
typedef void tl__str_fn(tl__checker *c, tl__str *str, const char *holder);
void tl__check_visit_str(tl__checker *c, tl__str *str, const char *holder);
void tl__check_str_refs(tl__checker *c, tl__str *str, const char *holder);

#endif /* TL_CHECKER_H */

/* Locality's records (locality.c; docs/locality.md), private to locality.c and to the check and
 * explain code beside it (inspect.c). The rest of the library sees the functions in internal.h.
 */
#ifndef TL_LOCALITY_H
#define TL_LOCALITY_H

#include "internal.h"

/* ---------------------------------------------------------------------------------------------
 * Locality (locality.c). A place is an executor id or a host name that some task set prefers;
 * each task set with preferences has one key per place it prefers (plus one for its indices
 * without preferences), and each (index, key) a pair on the key's list while the index is
 * pending. Everything is allocated at submission: no later call allocates for locality.
 * ------------------------------------------------------------------------------------------- */

typedef struct tl__place {
  UT_hash_handle hh_by_key; /* scheduler's places_by_key */
  tl__link keys;            /* the task sets' keys for it (tl__tskey.on_place); never empty */
  uint32_t nkeys;           /* length of keys */
  uint32_t stamp;           /* tl_submit's scratch: the submission that last numbered it */
  uint32_t scratch;         /* and the key number it got there */
  uint32_t mark;            /* and the last index that named it there */
  uint64_t offer_round;     /* the offer round that last offered its executor or one of its
                               host's (offers.c's scratch) */
  bool alive;               /* executor: ALIVE; host: has an ALIVE executor */
  bool racked;              /* host: alive, and its host is in a rack */
  uint32_t key_len;         /* bytes of key */
  char key[];               /* kind (TL__PLACE_*), then the name; NUL-terminated */
} tl__place;

static inline const char *tl__place_name(const tl__place *p) { return p->key + 1; }

/* One list of a task set's pending indices: those preferring one place, or (place NULL) those
 * without preferences. */
typedef struct tl__tskey {
  UT_hash_handle hh_by_place;  /* its locality's keys_by_place (not the no-preference key) */
  tl__link on_place;           /* place's keys */
  struct tl__place *place;     /* NULL for the no-preference key */
  struct tl__taskset *taskset; /* whose key it is */
  uint32_t head;               /* its first pair, or TL__NONE */
  uint32_t count;              /* pairs on its list: pending indices preferring the place */
} tl__tskey;

/* An (index, key) preference: on the key's list while the index is pending. */
typedef struct tl__pair {
  uint32_t key;   /* its key (tl__locality.keys) */
  uint32_t index; /* the task index */
  uint32_t prev;  /* the key's list, TL__NONE at the ends */
  uint32_t next;
} tl__pair;

/* Levels with counts of live keys: tl__locality.nlive. */
enum { TL__LIVE_PROCESS = 0, TL__LIVE_NODE = 1, TL__LIVE_RACK = 2 };

/* A task set's locality: one block, NULL for task sets without any preference. */
typedef struct tl__locality {
  tl__tskey *keys_by_place; /* its keys, by place pointer (keys[0] excluded) */
  tl__link on_scheduler;    /* scheduler's locality_tasksets while not zombie */
  uint64_t reset_time;      /* delay scheduling: when the wait at level began (Spark's
                               lastLocalityWaitResetTime) */
  uint32_t ntasks;          /* entries of first_pair, less one */
  uint32_t nkeys;           /* entries of keys; keys[0] is the no-preference key */
  uint32_t npairs;          /* entries of pairs */
  uint32_t nlive[3];        /* TL__LIVE_*: keys with pending pairs whose place is alive (rack:
                               host keys whose host is alive and in a rack) */
  uint8_t levels;           /* valid levels, bit (1 << tl_locality) (Spark's myLocalityLevels),
                               recomputed at submission and when a place it prefers changes */
  uint8_t level;            /* the level delay scheduling holds it at (currentLocalityIndex) */
  bool no_rejects;          /* no offer was rejected for locality since the timer was reset
                               (Spark's noRejectsSinceLastReset) */
  uint64_t push_seq;        /* numbers the pushes of indices onto its lists */
  uint64_t *pushed;         /* ntasks: when each index was last pushed (its place in the order
                               Spark's per-rack list would have) */
  uint32_t *first_pair;     /* index i's pairs are pairs[first_pair[i] .. first_pair[i + 1]) */
  tl__pair *pairs;          /* npairs */
  tl__tskey keys[];         /* nkeys */
} tl__locality;

#endif /* TL_LOCALITY_H */

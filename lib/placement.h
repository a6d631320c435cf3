/* Hard placement's records (placement.c; docs/api.md "Hard placement"): per task set, the
 * executors and hosts its tasks may run on, its spread (anti-affinity) and, with a spread, the
 * count of its running attempts per host or executor. Private to placement.c but for the
 * functions in internal.h's placement section. */
#ifndef TL_PLACEMENT_H
#define TL_PLACEMENT_H

#include "internal.h"

/* One host or executor some running attempt of the task set is on (spread only). */
typedef struct tl__pcount {
  tl__str *names; /* the names of the executor of the attempt that made the slot: the key is its
                     id (TL_SPREAD_EXECUTOR) or its host (TL_SPREAD_HOST); one reference; NULL:
                     a free slot */
  uint32_t hash;  /* the key's hash */
  uint32_t count; /* running attempts of the task set there (attempts_by_tid's, not frozen) */
} tl__pcount;

/* A task set's placement: one block, freed with the task set. */
typedef struct tl__placement {
  struct tl__taskset *ts; /* whose it is */
  tl__link on_scheduler;  /* s->place_tasksets */
  tl__link on_timer;      /* s->place_timers while no live executor satisfies it */
  uint64_t deadline;      /* while on a timer: when tl_tick aborts it */
  size_t bytes;           /* of this block */
  uint64_t cap;           /* slots of counts: 0 without spread, else a power of two, at least
                             three halves of the most running attempts the task set can have */
  uint64_t nkeys;         /* slots in use */
  uint64_t running;       /* their counts summed */
  uint32_t nexec;         /* allowed executor ids: name[0 .. nexec) */
  uint32_t nhost;         /* allowed host names: name[nexec .. nexec + nhost) */
  uint8_t spread;         /* tl_spread */
  bool timer;             /* on s->place_timers */
  tl__pcount *counts;     /* cap slots, in this block */
  const char **name;      /* nexec + nhost names, into text */
  uint32_t *len;          /* and their lengths */
  char text[];            /* the names, each NUL-terminated */
} tl__placement;

#endif /* TL_PLACEMENT_H */

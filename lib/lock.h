/* The scheduler's lock (lock.c): one compare-and-swap when free, back-off, then sleep. Part of
 * base: it knows nothing of the scheduler it protects.
 */
#ifndef TL_LOCK_H
#define TL_LOCK_H

#include <stdatomic.h>
#include <uv.h>

/* The scheduler's lock (lock.c). */
typedef struct tl__mutex {
  atomic_uint state; /* 0 free, 1 held, 2 held and a thread may be asleep waiting */
  uv_mutex_t wait;   /* what sleepers hold while they decide to sleep */
  uv_cond_t wakeup;  /* signalled, under wait, by an unlock that found state 2 */
} tl__mutex;

int tl__mutex_init(tl__mutex *m);
void tl__mutex_destroy(tl__mutex *m);
void tl__mutex_lock_slow(tl__mutex *m);
void tl__mutex_wake(tl__mutex *m);

static inline void tl__mutex_lock(tl__mutex *m) {
  unsigned expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&m->state, &expected, 1u, memory_order_acquire,
                                               memory_order_relaxed))
    tl__mutex_lock_slow(m);
}

static inline void tl__mutex_unlock(tl__mutex *m) {
  if (atomic_exchange_explicit(&m->state, 0u, memory_order_release) == 2)
    tl__mutex_wake(m);
}

#endif /* TL_LOCK_H */

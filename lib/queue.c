/* The event queue: the ledger's half of the events. A public call makes its events under the
 * scheduler's lock, into s->events, with room reserved before it changes anything
 * (tl__events_reserve), so a push cannot fail halfway through a transition; dispatch.c delivers
 * them after the lock is released. Each transition reserves its room next to the calls that
 * push (the TL__*_EVENTS counts beside the functions that make them).
 *
 * Everything here runs under the scheduler's lock.
 */
#include "internal.h"

#include <stdlib.h>

int tl__events_grow(struct tl_scheduler *s, size_t n) {
  tl__event_array *q = &s->events;
  if (q->cap - q->n >= n)
    return TL_OK;
  if (n > SIZE_MAX / sizeof(tl__event) - q->n)
    return TL_ENOMEM;
  size_t cap = q->cap * 2;
  if (cap < q->n + n)
    cap = q->n + n;
  if (cap > SIZE_MAX / sizeof(tl__event))
    cap = SIZE_MAX / sizeof(tl__event);
  tl__event *ev = tl__realloc(s, q->ev, q->cap * sizeof(tl__event), cap * sizeof(tl__event));
  if (ev == NULL)
    return TL_ENOMEM;
  q->ev = ev;
  q->cap = cap;
  return TL_OK;
}

tl__event *tl__event_push(struct tl_scheduler *s, tl__event_kind kind) {
  tl__event_array *q = &s->events;
  /* Room was reserved by the call before it changed anything; running out here is a bug in
   * that call's count, and writing past the array would be worse than stopping. */
  if (q->n == q->cap)
    abort();
  tl__event *ev = &q->ev[q->n++];
  memset(ev, 0, sizeof *ev);
  ev->kind = (uint8_t)kind;
  return ev;
}

void tl__event_push_revive(struct tl_scheduler *s) {
  if (s->revive_wanted) {
    s->revive_wanted = false;
    if (s->cb.revive_offers != NULL) /* an event nobody listens to is not made */
      tl__event_push(s, TL__EV_REVIVE_OFFERS);
  }
}

void tl__events_clear(struct tl_scheduler *s, tl__event_array *a, size_t from) {
  for (size_t i = 0; i < a->n; i++) {
    tl__event *ev = &a->ev[i];
    /* A result of an event not delivered still belongs to the library: give it back. */
    if (i >= from && ev->kind == TL__EV_TASK_ENDED && ev->u.task.result != NULL &&
        ev->u.task.result_free != NULL)
      ev->u.task.result_free(ev->u.task.result);
    tl__str_unref(s, ev->names);
    tl__str_unref(s, ev->msg);
  }
  a->n = 0;
}

void tl__events_shrink(struct tl_scheduler *s, tl__event_array *a) {
  if (a->n != 0 || a->cap <= TL__EVENTS_INITIAL)
    return;
  tl__event *ev =
      tl__realloc(s, a->ev, a->cap * sizeof(tl__event), TL__EVENTS_INITIAL * sizeof(tl__event));
  if (ev != NULL) { /* a failed shrink keeps the larger array: nothing is lost */
    a->ev = ev;
    a->cap = TL__EVENTS_INITIAL;
  }
}

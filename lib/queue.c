/* The event queue: the ledger's half of the events. A public call makes its events under the
 * scheduler's lock, into s->events, with room reserved before it changes anything
 * (tl__events_reserve), so a push cannot fail halfway through a transition; dispatch.c delivers
 * them after the lock is released. Each transition reserves its room next to the calls that
 * push (the TL__*_EVENTS counts beside the functions that make them). tl_check's part here
 * accounts both arrays and walks the strings queued events hold.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "checker.h"
#include "resource.h"

#include <inttypes.h>
#include <stdlib.h>

int tl__events_grow(struct tl_scheduler *s, size_t n) {
  tl__event_array *q = &s->events;
  if (s->demand_on) /* the demand events' room (demand.c) */
    n += tl__demand_room(s);
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

const tl__event tl__event_blank = {0};

void tl__events_overrun(void) { abort(); }

void tl__events_clear(struct tl_scheduler *s, tl__event_array *a, size_t from) {
  for (size_t i = 0; i < a->n; i++) {
    tl__event *ev = &a->ev[i];
    /* A result of an event not delivered still belongs to the library: give it back. */
    if (i >= from && ev->kind == TL__EV_TASK_ENDED && ev->u.task.result != NULL &&
        ev->u.task.result_free != NULL)
      ev->u.task.result_free(ev->u.task.result);
    if (ev->kind > TL__EV_TASK_ENDED) /* a task event's names are its executor's */
      tl__str_unref(s, ev->names);
    tl__str_unref(s, ev->msg);
    if (ev->grants != NULL)
      tl__grants_unref(s, ev->grants);
  }
  s->ev_settled += a->n;
  a->n = 0;
  a->refs = false;
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

void tl__events_settled(struct tl_scheduler *s, size_t used) {
  size_t cap = s->batch.cap > s->events.cap ? s->batch.cap : s->events.cap;
  if (cap <= TL__EVENTS_INITIAL)
    return;
  if (used > cap / 4)
    s->events_quiet = 0;
  else
    s->events_quiet++;
  if (s->events_quiet < TL__EVENTS_KEEP * cap && !tl__idle(s))
    return;
  tl__events_shrink(s, &s->batch);
  tl__events_shrink(s, &s->events); /* stays as it is while it holds events (deferred delivery) */
  s->events_quiet = 0;
}

/* ---------------------------------------------------------------------------------------------
 * tl_check's part: both event arrays (by capacity) and the strings their events hold.
 * ------------------------------------------------------------------------------------------- */

/* An array whose refs flag is clear holds no reference: no message, no grants, nothing but task
 * events. */
static bool holds_none(const tl__event_array *a) {
  for (size_t i = 0; i < a->n; i++)
    if (a->ev[i].kind > TL__EV_TASK_ENDED || a->ev[i].msg != NULL || a->ev[i].grants != NULL)
      return false;
  return true;
}

int tl__queue_check(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  TL__CHECK(c, s->events.n <= s->events.cap && s->batch.n <= s->batch.cap,
            "event queue: %zu events in %zu slots, batch %zu in %zu", s->events.n, s->events.cap,
            s->batch.n, s->batch.cap);
  TL__CHECK(c, s->ev_pushed - s->ev_settled == s->events.n + s->batch.n,
            "event queue: %" PRIu64 " events pushed, %" PRIu64 " settled, but %zu queued and %zu "
            "in the batch",
            s->ev_pushed, s->ev_settled, s->events.n, s->batch.n);
  TL__CHECK(c,
            (s->events.refs || holds_none(&s->events)) && (s->batch.refs || holds_none(&s->batch)),
            "event queue: an array says its events hold no reference, but one does");
  tl__check_account(c, s->events.cap * sizeof(tl__event));
  tl__check_account(c, s->batch.cap * sizeof(tl__event));
  return TL_OK;
}

static void events_each_str(tl__checker *c, const tl__event_array *a, tl__str_fn *fn) {
  for (size_t i = 0; i < a->n; i++) {
    if (a->ev[i].kind > TL__EV_TASK_ENDED) /* a task event's names are its executor's */
      fn(c, a->ev[i].names, "an event");
    fn(c, a->ev[i].msg, "an event");
  }
}

/* Each task event's executor holds its names (it is alive, a tombstone or retired, and its
 * ev_stamp covers the event): the strings' first walk has visited them. */
static int events_names_held(tl__checker *c, const tl__event_array *a, uint64_t first) {
  for (size_t i = 0; i < a->n; i++) {
    const tl__event *ev = &a->ev[i];
    if (ev->kind <= TL__EV_TASK_ENDED)
      TL__CHECK(c, ev->names != NULL && ev->names->mark == c->s->check_epoch,
                "event queue: task event %" PRIu64 " names an executor nobody holds",
                first + i + 1);
  }
  return TL_OK;
}

int tl__events_check_names(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  int err = events_names_held(c, &s->batch, s->ev_settled);
  if (err == TL_OK)
    err = events_names_held(c, &s->events, s->ev_settled + s->batch.n);
  return err;
}

void tl__events_each_str(tl__checker *c, tl__str_fn *fn) {
  events_each_str(c, &c->s->events, fn);
  events_each_str(c, &c->s->batch, fn);
}

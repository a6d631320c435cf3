/* Demand events (docs/api.md "Demand events"): what dynamic allocation needs, pushed instead of
 * polled. A task set's unschedulable states (exclusion's, resources', placement's)
 * are bits in tl__taskset.unsched that their sources set and clear through
 * tl__unsched_enter and tl__unsched_leave; this file turns the first bit set into a
 * taskset_unschedulable event and the last one cleared into a taskset_schedulable, and, at the
 * end of each public call, the totals into at most one demand_changed event.
 *
 * The bits are kept whether or not a callback listens (a few stores per transition, none per
 * task), so tl_check can hold them against their sources; the events are made only while
 * demand_on, and their room is every reservation's (tl__demand_room, tl__events_reserve), so a
 * push here never fails. Everything here runs under the scheduler's lock.
 */
#include "checker.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const reasons[] = {
    "excluded from every live executor (exclude on failure)",
    "no live executor could run its tasks (profile, cores or resources)",
    "no live executor satisfies its placement (allowed executors and hosts)",
};

/* tl__event_push's work, without queue.c's symbols: resource.c, which queue.c calls, calls this
 * file, and the layers allow no cycle (docs/design.md). The room is reserved (tl__demand_room). */
static tl__event *push(struct tl_scheduler *s, tl__event_kind kind) {
  tl__event_array *q = &s->events;
  if (q->n == q->cap)
    abort(); /* a call reserved less than it pushes: a bug, as tl__events_overrun says */
  tl__event *ev = &q->ev[q->n++];
  s->ev_pushed++;
  memset(ev, 0, sizeof *ev);
  ev->kind = (uint8_t)kind;
  q->refs = true; /* kinds above TL__EV_TASK_ENDED: settling reads them (their names are NULL) */
  return ev;
}

static void push_taskset(struct tl_scheduler *s, tl__event_kind kind, const tl__taskset *ts,
                         const char *reason) {
  tl__event *ev = push(s, kind);
  ev->u.ts.info.id = ts->id;
  ev->u.ts.info.stage_id = ts->stage_id;
  ev->u.ts.info.stage_attempt = ts->stage_attempt;
  ev->u.ts.info.ntasks = ts->ntasks;
  ev->static_msg = reason;
}

static const char *reason_of(uint8_t state) {
  for (unsigned i = 0; i < TL__UNSCHED_SOURCES; i++)
    if (state & (1u << i))
      return reasons[i];
  return "unschedulable";
}

void tl__unsched_enter(struct tl_scheduler *s, tl__taskset *ts, uint8_t state) {
  if (ts->zombie || (ts->unsched & state) != 0)
    return;
  if (ts->unsched == 0) {
    s->nunsched++;
    if (s->cb.taskset_unschedulable != NULL)
      push_taskset(s, TL__EV_TASKSET_UNSCHEDULABLE, ts, reason_of(state));
  }
  ts->unsched |= state;
}

void tl__unsched_leave(struct tl_scheduler *s, tl__taskset *ts, uint8_t state) {
  if ((ts->unsched & state) == 0)
    return;
  ts->unsched &= (uint8_t)~state;
  if (ts->unsched == 0) {
    s->nunsched--;
    if (s->cb.taskset_schedulable != NULL)
      push_taskset(s, TL__EV_TASKSET_SCHEDULABLE, ts, NULL);
  }
}

void tl__unsched_zombie(struct tl_scheduler *s, tl__taskset *ts) {
  if (ts->unsched != 0)
    tl__unsched_leave(s, ts, ts->unsched);
}

void tl__unsched_mark(struct tl_scheduler *s, tl__taskset *ts, uint8_t state) {
  if (ts->zombie || (ts->unsched & state) != 0)
    return;
  if (ts->unsched == 0)
    s->nunsched++;
  ts->unsched |= state;
}

void tl__unsched_restored(struct tl_scheduler *s) {
  if (s->nunsched == 0 || s->cb.taskset_unschedulable == NULL)
    return;
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next)
    if (ts->unsched != 0)
      push_taskset(s, TL__EV_TASKSET_UNSCHEDULABLE, ts, reason_of(ts->unsched));
}

/* The totals as tl_stats_get gives them, and the unschedulable count. */
static tl_demand demand_now(const struct tl_scheduler *s) {
  tl_demand d = {s->npending_tasks, s->nspeculatable, s->attempts_by_tid.n, s->nactive,
                 s->nunsched};
  return d;
}

void tl__demand_end(struct tl_scheduler *s) {
  if (s->cb.demand_changed == NULL)
    return;
  tl_demand d = demand_now(s);
  if (memcmp(&d, &s->demand_told, sizeof d) == 0)
    return;
  /* The room is every reservation's (tl__demand_room). A call that reserved nothing and still
   * changed the totals (none does today) would find none only while deferred delivery holds a
   * full queue: the event is then left to the next call that has room (the totals are not lost,
   * only late). */
  if (s->events.cap == s->events.n)
    return;
  s->demand_told = d;
  tl__event *ev = push(s, TL__EV_DEMAND);
  ev->u.demand = d;
}

int tl__demand_check(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  size_t n = 0;
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    TL__CHECK(c, ts->unsched < (1u << TL__UNSCHED_SOURCES),
              "demand: task set %" PRIu64 " is in unknown unschedulable states %#x", ts->id,
              (unsigned)ts->unsched);
    TL__CHECK(c, !ts->zombie || ts->unsched == 0,
              "demand: zombie task set %" PRIu64 " is still unschedulable", ts->id);
    TL__CHECK(c, (ts->unsched & TL__UNSCHED_RESOURCES) == 0 || ts->req != NULL,
              "demand: task set %" PRIu64 " asks for no resource but waits for one", ts->id);
    n += ts->unsched != 0;
  }
  TL__CHECK(c, n == s->nunsched, "demand: %zu task sets unschedulable, count says %zu", n,
            s->nunsched);
  TL__CHECK(c,
            s->demand_on == (s->cb.taskset_unschedulable != NULL ||
                             s->cb.taskset_schedulable != NULL || s->cb.demand_changed != NULL),
            "demand: demand_on does not follow the callbacks");
  return TL_OK;
}

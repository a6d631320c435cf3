/* The tick: every part's deadlines, run when due (tl_tick), and the time to the next one.
 *
 * Each part keeps its deadlines in the order they come, so a tick costs O(what is due): the
 * executors' timelines (membership.c), the speculation check (here, on speculation.c's
 * measures), the locality waits (locality.c), exclusion's expiries (exclude.c) and its
 * unschedulable task sets, which this file aborts. A part that cannot get room for its events
 * answers 0 and the next tick retries it.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "internal.h"
#include "placement.h"
#include "resource.h"

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

uint64_t tl__next_deadline(struct tl_scheduler *s, uint64_t now) {
  uint64_t next = tl__executors_next_deadline(s, now);
  next = min_u64(next, tl__speculation_next(s, now));
  next = min_u64(next, tl__locality_next(s, now));
  next = min_u64(next, tl__res_next(s, now));
  next = min_u64(next, tl__placement_next(s, now));
  return min_u64(next, tl__exclude_next(s, now));
}

/* Marks slow tasks speculatable when the check is due; returns ns until the next check
 * (TL_TICK_NEVER when speculation is off). Fails only for lack of memory: then it does nothing
 * and returns 0. */
static uint64_t speculation_tick(struct tl_scheduler *s, uint64_t now) {
  if (!s->cfg.speculation || s->speculation_past_end)
    return TL_TICK_NEVER;
  if (now < s->next_speculation)
    return tl__speculation_next(s, now);

  /* Count first, to reserve the events: nothing changes unless all of them fit. */
  size_t found = 0;
  tl__spec_cores cores = {0};
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    tl__spec_rule rule;
    if (!tl__speculation_rule(s, ts, &rule, &cores))
      continue;
    for (tl__link *l = ts->running.next; l != &ts->running; l = l->next)
      found += tl__speculation_slow(s, ts, tl__container_of(l, tl__attempt, on_taskset), &rule,
                                    now) != TL__SLOW_NOT;
  }
  if (tl__events_reserve(s, found + TL__REVIVE_EVENTS) != TL_OK)
    return 0; /* the next tick tries again */
  for (tl__taskset *ts = s->tasksets_by_id; found > 0 && ts != NULL; ts = ts->hh_by_id.next) {
    tl__spec_rule rule;
    if (!tl__speculation_rule(s, ts, &rule, &cores))
      continue;
    for (tl__link *l = ts->running.next; l != &ts->running; l = l->next) {
      tl__attempt *a = tl__container_of(l, tl__attempt, on_taskset);
      if (tl__speculation_slow(s, ts, a, &rule, now) == TL__SLOW_NOT)
        continue;
      tl__taskset_speculate(s, ts, a->index);
      tl__event *ev = tl__event_push(s, TL__EV_SPECULATIVE_SUBMITTED);
      ev->u.ts.info.id = ts->id;
      ev->u.ts.info.stage_id = ts->stage_id;
      ev->u.ts.info.stage_attempt = ts->stage_attempt;
      ev->u.ts.info.ntasks = ts->ntasks;
      ev->u.ts.index = a->index;
      s->revive_wanted = true;
    }
  }
  tl__event_push_revive(s);
  /* A check due at or after the end of time (UINT64_MAX) never comes, like every deadline that
   * saturates there. */
  if (now >= UINT64_MAX - s->cfg.speculation_interval_ns)
    s->speculation_past_end = true;
  else
    s->next_speculation = now + s->cfg.speculation_interval_ns;
  return tl__speculation_next(s, now);
}

/* Aborts the task sets whose unschedulable deadline came; 0 when one could not get room for its
 * events. */
static uint64_t exclude_tick(struct tl_scheduler *s, uint64_t now) {
  tl__exclude_tick(s, now);
  for (tl__exclude_abort ab; tl__exclude_due_abort(s, now, &ab);) {
    if (tl__events_reserve(s, TL__TASKSET_ABORT_EVENTS) != TL_OK)
      return 0;
    tl__exclude_aborting(s, &ab);
    tl__taskset_abort(s, ab.ts, TL__FAIL_UNSCHEDULABLE, ab.index, 0, ab.msg, ab.static_msg);
  }
  return tl__exclude_next(s, now);
}

/* Aborts the task sets whose requests no live executor could run, at their deadline; 0 when one
 * could not get room for its events. */
static uint64_t resource_tick(struct tl_scheduler *s, uint64_t now) {
  if (tl__list_empty(&s->res_timers))
    return TL_TICK_NEVER;
  if (tl__events_reserve(s, TL__TASKSET_ABORT_EVENTS) != TL_OK)
    return 0;
  for (tl__taskset *ts; (ts = tl__res_due(s, now)) != NULL;) {
    tl__taskset_abort(s, ts, TL__FAIL_NO_RESOURCES, ts->profile, 0, NULL, NULL);
    if (tl__events_reserve(s, TL__TASKSET_ABORT_EVENTS) != TL_OK)
      return 0;
  }
  return tl__res_next(s, now);
}

/* Aborts the task sets whose hard placement no live executor satisfied until their deadline,
 * each with its explanation; 0 when one could not get room for its events or its message. */
static uint64_t placement_tick(struct tl_scheduler *s, uint64_t now) {
  if (s->nplace_timers == 0)
    return TL_TICK_NEVER;
  for (tl__taskset *ts; (ts = tl__placement_due(s, now)) != NULL;) {
    tl__str *msg;
    if (tl__events_reserve(s, TL__TASKSET_ABORT_EVENTS) != TL_OK ||
        tl__placement_aborting(s, ts, &msg) != TL_OK)
      return 0;
    tl__taskset_abort(s, ts, TL__FAIL_PLACEMENT, 0, 0, msg, NULL); /* may release ts */
    tl__str_unref(s, msg);
  }
  return tl__placement_next(s, now);
}

uint64_t tl__tick_run(struct tl_scheduler *s, uint64_t now) {
  uint64_t next = tl__executors_tick(s, now);
  next = min_u64(next, speculation_tick(s, now));
  next = min_u64(next, tl__locality_tick(s, now));
  next = min_u64(next, resource_tick(s, now));
  next = min_u64(next, placement_tick(s, now));
  return min_u64(next, exclude_tick(s, now));
}

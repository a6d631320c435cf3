/* Demand events in the randomized runs (docs/api.md "Demand events"): two programs in five, chosen
 * from their header bytes alone (no program's bytes change, so stored programs replay as they
 * did), run with taskset_unschedulable, taskset_schedulable and demand_changed set. The events
 * change nothing the model sees; after each operation, its events all delivered, the run checks:
 *   - at most one demand event per library call the operation made;
 *   - no demand event repeats the totals of the one before it (none when nothing changed);
 *   - the last demand event's totals are tl_stats' now (the calls after it changed none), and
 *     its unschedulable count is the balance of the unschedulable and schedulable events, which
 *     never goes below zero, nor above the deadlines tl_stats counts.
 * A failover's tl_scheduler_free forgets the old scheduler's: the restored one starts afresh.
 * The model does not predict these events, so inside a callback tl_stats.events_queued is only
 * held to at least the model's count (ops_compare.c).
 */
#include "ops_internal.h"

#include <string.h>

bool tlo_demand_chosen(const uint8_t header[TLO_HEADER_BYTES]) {
  uint32_t h = 2166136261u;
  for (unsigned k = 0; k < TLO_HEADER_BYTES; k++)
    h = (h ^ header[k]) * 16777619u;
  return (h >> 8) % 5 < 2;
}

static void on_unsched(void *ud, const tl_taskset_info *ts, const char *reason) {
  tlo_run *r = ud;
  if (r->failed)
    return;
  if (reason == NULL || reason[0] == '\0')
    tlo_fail(r, "taskset_unschedulable(%" PRIu64 ") without a reason", ts->id);
  r->d_balance++;
  r->f_d_unsched++;
}

static void on_sched(void *ud, const tl_taskset_info *ts) {
  tlo_run *r = ud;
  if (r->failed)
    return;
  if (r->d_balance == 0)
    tlo_fail(r, "taskset_schedulable(%" PRIu64 ") with no task set unschedulable", ts->id);
  else
    r->d_balance--;
}

static void on_demand(void *ud, const tl_demand *d) {
  tlo_run *r = ud;
  if (r->failed)
    return;
  if (r->d_seen && memcmp(d, &r->d_last, sizeof *d) == 0)
    tlo_fail(r, "demand_changed with the totals of the one before it");
  r->d_last = *d;
  r->d_seen = true;
  r->d_op_events++;
  r->f_d_demand++;
}

void tlo_demand_callbacks(tlo_run *r, tl_callbacks *cb) {
  if (!r->demand)
    return;
  cb->taskset_unschedulable = on_unsched;
  cb->taskset_schedulable = on_sched;
  cb->demand_changed = on_demand;
}

void tlo_demand_reset(tlo_run *r) {
  r->d_seen = false;
  memset(&r->d_last, 0, sizeof r->d_last);
  r->d_balance = 0;
}

void tlo_demand_op_begin(tlo_run *r) {
  r->d_op_events = 0;
  r->d_op_calls = r->calls;
}

void tlo_demand_check(tlo_run *r) {
  if (!r->demand || r->failed || r->s == NULL)
    return;
  if (r->d_op_events > r->calls - r->d_op_calls)
    tlo_fail(r, "%" PRIu64 " demand events for %" PRIu64 " calls", r->d_op_events,
             r->calls - r->d_op_calls);
  tl_stats st;
  tl_stats_get(r->s, &st);
  tl_demand zero = {0};
  const tl_demand *d = r->d_seen ? &r->d_last : &zero;
  if (d->tasks_pending != st.tasks_pending || d->tasks_speculatable != st.tasks_speculatable ||
      d->attempts_running != st.attempts_running || d->tasksets_active != st.tasksets_active)
    tlo_fail(r,
             "the last demand event says pending %zu speculatable %zu running %zu active %zu, "
             "tl_stats %zu %zu %zu %zu",
             d->tasks_pending, d->tasks_speculatable, d->attempts_running, d->tasksets_active,
             st.tasks_pending, st.tasks_speculatable, st.attempts_running, st.tasksets_active);
  else if (d->unschedulable_tasksets != r->d_balance)
    tlo_fail(r, "the last demand event counts %zu unschedulable task sets, the events %zu",
             d->unschedulable_tasksets, r->d_balance);
  else if (r->d_balance > st.tasksets_unschedulable || r->d_balance > st.tasksets_active)
    tlo_fail(r, "%zu task sets unschedulable, but %zu deadlines and %zu active", r->d_balance,
             st.tasksets_unschedulable, st.tasksets_active);
}

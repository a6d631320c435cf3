/* Demand events (docs/api.md "Demand events"): taskset_unschedulable and taskset_schedulable for
 * both unschedulable states (exclusion's, SPARK-22148; resources'), and demand_changed, at most
 * one per call with the totals tl_stats gives. Ported from TaskSchedulerImplSuite's
 * unschedulable task set tests and SPARK-22148's interplay with dynamic allocation (Spark tells
 * ExecutorAllocationManager through unschedulableTaskSetAdded / Removed), with real failures
 * instead of Spark's mocks.
 */
#include "harness.h"

#include <stdatomic.h>

#include "../examples/replay/replay.h"

/* What the three callbacks delivered, in order, with the harness's event count at the time (so
 * a test can say what came before which of the recorder's events). */
typedef enum { D_UNSCHED, D_SCHED, D_DEMAND } d_type;
typedef struct d_event {
  d_type type;
  tl_taskset_id ts; /* unsched, sched */
  char reason[160]; /* unsched */
  tl_demand demand; /* demand */
  tl_stats stats;   /* demand: tl_stats_get from inside the callback */
  size_t at;        /* the recorder's events delivered before it */
} d_event;

#define D_MAX 256
static d_event dlog[D_MAX];
static size_t nd;

static void record(tlt_env *e, d_type type, tl_taskset_id ts, const char *reason,
                   const tl_demand *d) {
  ck_assert_uint_lt(nd, D_MAX);
  d_event *x = &dlog[nd++];
  memset(x, 0, sizeof *x);
  x->type = type;
  x->ts = ts;
  if (reason != NULL)
    snprintf(x->reason, sizeof x->reason, "%s", reason);
  if (d != NULL) {
    x->demand = *d;
    tl_stats_get(e->s, &x->stats);
  }
  x->at = e->nev;
}

static void on_unsched(void *ud, const tl_taskset_info *ts, const char *reason) {
  ck_assert_ptr_nonnull(reason);
  record(ud, D_UNSCHED, ts->id, reason, NULL);
}
static void on_sched(void *ud, const tl_taskset_info *ts) {
  record(ud, D_SCHED, ts->id, NULL, NULL);
}
static void on_demand(void *ud, const tl_demand *d) { record(ud, D_DEMAND, 0, NULL, d); }

static void with_demand(tl_callbacks *cb) {
  cb->taskset_unschedulable = on_unsched;
  cb->taskset_schedulable = on_sched;
  cb->demand_changed = on_demand;
}

static tlt_env *demand_env(const tl_config *cfg) {
  nd = 0;
  return tlt_new_edit(cfg, with_demand);
}

static tl_config exclude_config(void) {
  tl_config cfg = tlt_config();
  cfg.exclude_on_failure = true;
  return cfg;
}

/* Events of type since mark (a dlog position). */
static size_t count(size_t mark, d_type type) {
  size_t n = 0;
  for (size_t i = mark; i < nd; i++)
    n += dlog[i].type == type;
  return n;
}

/* The one demand event since mark: asserts there is exactly one, that it is the last of the
 * three kinds, and that its totals are tl_stats' as seen from inside it and now. */
static const tl_demand *one_demand(tlt_env *e, size_t mark) {
  ck_assert_uint_eq(count(mark, D_DEMAND), 1);
  const d_event *x = &dlog[nd - 1];
  ck_assert_int_eq(x->type, D_DEMAND);
  tl_stats now = tlt_stats(e);
  ck_assert_uint_eq(x->demand.tasks_pending, x->stats.tasks_pending);
  ck_assert_uint_eq(x->demand.tasks_speculatable, x->stats.tasks_speculatable);
  ck_assert_uint_eq(x->demand.attempts_running, x->stats.attempts_running);
  ck_assert_uint_eq(x->demand.tasksets_active, x->stats.tasksets_active);
  ck_assert_uint_eq(x->demand.tasks_pending, now.tasks_pending);
  ck_assert_uint_eq(x->demand.attempts_running, now.attempts_running);
  ck_assert_uint_eq(x->demand.tasksets_active, now.tasksets_active);
  return &x->demand;
}

/* The last unschedulable task set count the events say: added minus removed, never below 0. */
static size_t unsched_balance(void) {
  size_t n = 0;
  for (size_t i = 0; i < nd; i++) {
    if (dlog[i].type == D_UNSCHED)
      n++;
    else if (dlog[i].type == D_SCHED) {
      ck_assert_uint_gt(n, 0);
      n--;
    }
  }
  return n;
}

/* Ends a test: every unschedulable event was answered, and the last demand is all zeros. */
static void demand_end(tlt_env *e) {
  tlt_end(e);
  ck_assert_uint_eq(unsched_balance(), 0);
  for (size_t i = nd; i-- > 0;)
    if (dlog[i].type == D_DEMAND) {
      ck_assert_uint_eq(dlog[i].demand.tasks_pending, 0);
      ck_assert_uint_eq(dlog[i].demand.attempts_running, 0);
      ck_assert_uint_eq(dlog[i].demand.tasksets_active, 0);
      ck_assert_uint_eq(dlog[i].demand.unschedulable_tasksets, 0);
      break;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Demand: coalesced, and only on a change.
 * ------------------------------------------------------------------------------------------- */

/* One submission, one round that launches eight tasks, one batch of eight ends: one demand
 * event each, with the totals after the call; an update that changes nothing makes none. */
START_TEST(one_demand_event_per_call) {
  tlt_env *e = demand_env(NULL);
  tlt_add(e, "e0", "h0", NULL, 8);
  ck_assert_uint_eq(nd, 0); /* an executor is no demand */
  size_t mark = nd;
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 8);
  const tl_demand *d = one_demand(e, mark);
  ck_assert_uint_eq(d->tasks_pending, 8);
  ck_assert_uint_eq(d->tasksets_active, 1);
  ck_assert_uint_eq(d->attempts_running, 0);

  mark = nd;
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e0", 8, l, 8), 8);
  d = one_demand(e, mark); /* eight launches, one event */
  ck_assert_uint_eq(d->tasks_pending, 0);
  ck_assert_uint_eq(d->attempts_running, 8);
  ck_assert_uint_gt(dlog[nd - 1].at, 7); /* after the eight task_started */

  mark = nd;
  tlt_run(e, "e0", l[0].tid);
  ck_assert_uint_eq(nd, mark); /* RUNNING changes no total */

  tl_tid tids[8];
  tl_update u[8];
  for (int i = 0; i < 8; i++) {
    tids[i] = l[i].tid;
    u[i] = (tl_update){.state = TL_TASK_FAILED, .failure = TL_END_EXCEPTION};
  }
  /* Four fail (pending again), in one batch of four. */
  int rcs[8];
  TLT_OK(e, tl_status_updates(e->s, "e0", tids, u, 4, rcs));
  d = one_demand(e, mark);
  ck_assert_uint_eq(d->tasks_pending, 4);
  ck_assert_uint_eq(d->attempts_running, 4);
  mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "e0", 4, l, 8), 4);
  d = one_demand(e, mark);
  ck_assert_uint_eq(d->tasks_pending, 0);
  ck_assert_uint_eq(d->attempts_running, 8);
  ck_assert_uint_eq(tlt_released(e, ts), 0);
  demand_end(e);
}
END_TEST

/* Calls that change no total make no demand event: a heartbeat, a failed call, an offer with
 * nothing to launch, a tick with nothing due, a second executor. */
START_TEST(no_demand_event_when_nothing_changed) {
  tlt_env *e = demand_env(NULL);
  tlt_add(e, "e0", "h0", NULL, 2);
  TLT_OK(e, tl_executor_heartbeat(e->s, "e0"));
  ck_assert_int_eq(tl_executor_heartbeat(e->s, "nobody"), TL_ENOENT);
  TLT_CHECK(e);
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, NULL, 0), 0);
  tlt_advance_tick(e, TLT_SEC);
  tlt_add(e, "e1", "h1", NULL, 2);
  ck_assert_uint_eq(nd, 0);
  /* A task set that comes and goes within... two calls: two events, back to zeros. */
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "no"));
  ck_assert_uint_eq(count(0, D_DEMAND), 2);
  ck_assert_uint_eq(dlog[nd - 1].demand.tasksets_active, 0);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  size_t mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, NULL, 0), 0);
  ck_assert_uint_eq(nd, mark);
  demand_end(e);
}
END_TEST

/* NULL callbacks: nothing is made (the recorder sees the same events as without the members),
 * and a scheduler with only demand_changed gets no unschedulable events. */
START_TEST(only_the_callbacks_set_are_made) {
  nd = 0;
  tl_config cfg = exclude_config();
  tlt_env *e = tlt_new_edit(&cfg, NULL);
  tl_callbacks cb = tlt_callbacks(e);
  ck_assert(cb.demand_changed == NULL && cb.taskset_unschedulable == NULL);
  tlt_add(e, "e0", "h0", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 1);
  ck_assert_uint_eq(nd, 0);
  TLT_OK(e, tl_cancel_stage(e->s, 0, NULL));
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Exclusion's unschedulable state (TaskSchedulerImplSuite, SPARK-22148 and SPARK-31418).
 * ------------------------------------------------------------------------------------------- */

/* The single task of a task set fails on the only executor, which then offers again: an
 * unschedulable event in that round, and a demand event after it that counts it. */
static tl_taskset_id one_task_excluded_on_e0(tlt_env *e) {
  tlt_add(e, "e0", "h0", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  size_t mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  ck_assert_uint_eq(count(mark, D_UNSCHED), 1);
  ck_assert_uint_eq(dlog[mark].ts, ts);
  ck_assert_ptr_nonnull(strstr(dlog[mark].reason, "excluded"));
  const tl_demand *d = one_demand(e, mark);
  ck_assert_uint_eq(d->unschedulable_tasksets, 1);
  ck_assert_uint_eq(d->tasks_pending, 1);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 1);
  /* A second round that launches nothing again: the state holds, nothing new is said. */
  mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  ck_assert_uint_eq(nd, mark);
  return ts;
}

/* TSIS "SPARK-22148 try to acquire a new executor when task is unschedulable with 1 executor"
 * and SPARK-31418: the allocation manager hears of the task set, brings an executor, and hears
 * that it is schedulable again; the task runs there. */
START_TEST(unschedulable_then_a_new_executor) {
  tl_config cfg = exclude_config();
  tlt_env *e = demand_env(&cfg);
  tl_taskset_id ts = one_task_excluded_on_e0(e);
  size_t mark = nd;
  tlt_add(e, "e1", "h1", NULL, 1);
  ck_assert_uint_eq(count(mark, D_SCHED), 1);
  ck_assert_uint_eq(dlog[mark].ts, ts);
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 0);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l, 1), 1);
  ck_assert_uint_eq(l.taskset, ts);
  tlt_succeed(e, "e1", l.tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(count(0, D_UNSCHED), 1);
  demand_end(e);
}
END_TEST

/* TSIS "SPARK-22148 abort timer should kick in when task is completely excluded & no new
 * executor can be acquired" (and SPARK-31418's timeout with allocation on): the tick aborts;
 * the schedulable event comes in that call, before taskset_failed and taskset_released. */
START_TEST(unschedulable_then_aborted_at_its_deadline) {
  tl_config cfg = exclude_config();
  cfg.unschedulable_timeout_ns = 10 * TLT_SEC;
  tlt_env *e = demand_env(&cfg);
  tl_taskset_id ts = one_task_excluded_on_e0(e);
  size_t mark = nd;
  tlt_advance_tick(e, 5 * TLT_SEC);
  ck_assert_uint_eq(nd, mark);
  size_t evmark = tlt_mark(e);
  tlt_advance_tick(e, 5 * TLT_SEC);
  ck_assert_uint_eq(count(mark, D_SCHED), 1);
  ck_assert_uint_eq(dlog[mark].ts, ts);
  ck_assert_uint_eq(tlt_count(e, evmark, TLT_EV_FAILED), 1);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_le(dlog[mark].at, tlt_sub(e, ts)->released_at);
  const tl_demand *d = one_demand(e, mark);
  ck_assert_uint_eq(d->tasksets_active, 0);
  ck_assert_uint_eq(d->unschedulable_tasksets, 0);
  demand_end(e);
}
END_TEST

/* TSIS "SPARK-22148 abort timer should clear unschedulableTaskSetToExpiryTime for all
 * TaskSets": two unschedulable task sets; a launch of a third makes both schedulable, in one
 * call with one demand event. */
START_TEST(a_launch_makes_every_task_set_schedulable) {
  tl_config cfg = exclude_config();
  tlt_env *e = demand_env(&cfg);
  tlt_add(e, "e0", "h0", NULL, 1);
  tl_taskset_id ts1 = tlt_submit(e, 0, 0, 0, 1);
  tl_taskset_id ts2 = tlt_submit(e, 1, 0, 0, 1);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
  ck_assert_uint_eq(l.taskset, ts2);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  size_t mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  ck_assert_uint_eq(count(mark, D_UNSCHED), 2);
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 2);

  tl_taskset_id ts3 = tlt_submit(e, 2, 0, 0, 1);
  mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
  ck_assert_uint_eq(l.taskset, ts3);
  ck_assert_uint_eq(count(mark, D_SCHED), 2);
  tl_taskset_id a = dlog[mark].ts, b = dlog[mark + 1].ts;
  ck_assert((a == ts1 && b == ts2) || (a == ts2 && b == ts1));
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 0);
  tlt_succeed(e, "e0", l.tid);
  demand_end(e);
}
END_TEST

/* TSIS "SPARK-22148 Ensure we don't abort the taskSet if we haven't been completely
 * excluded": e1 may still run the task: no event at all about it. */
START_TEST(not_completely_excluded_is_not_unschedulable) {
  tl_config cfg = exclude_config();
  tlt_env *e = demand_env(&cfg);
  tlt_add(e, "e0", "h0", NULL, 1);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  ck_assert_uint_eq(count(0, D_UNSCHED), 0);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l, 1), 1);
  tlt_succeed(e, "e1", l.tid);
  ck_assert_uint_eq(count(0, D_UNSCHED) + count(0, D_SCHED), 0);
  demand_end(e);
}
END_TEST

/* A task set cancelled while unschedulable: its schedulable event comes in the cancel's call,
 * before its taskset_released (Spark's listener drops it when the stage ends). */
START_TEST(cancelled_while_unschedulable) {
  tl_config cfg = exclude_config();
  tlt_env *e = demand_env(&cfg);
  tl_taskset_id ts = one_task_excluded_on_e0(e);
  size_t mark = nd;
  TLT_OK(e, tl_cancel_stage(e->s, 0, "user"));
  ck_assert_uint_eq(count(mark, D_SCHED), 1);
  ck_assert_uint_eq(dlog[mark].ts, ts);
  ck_assert_uint_le(dlog[mark].at, tlt_sub(e, ts)->released_at);
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 0);
  demand_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Resources' unschedulable state.
 * ------------------------------------------------------------------------------------------- */

static const char *const gpus2[] = {"0", "1"};

static void add_gpus_on(tlt_env *e, const char *id, const char *host, uint32_t ngpus) {
  tl_resource r = {.name = "gpu", .addresses = gpus2, .naddresses = ngpus};
  tl_executor_desc d = {.id = id, .host = host, .cores = 4, .resources = &r, .nresources = 1};
  tlt_add_desc(e, d);
}

static void add_gpus(tlt_env *e, const char *id, uint32_t ngpus) {
  tl_resource r = {.name = "gpu", .addresses = gpus2, .naddresses = ngpus};
  tl_executor_desc d = {.id = id, .host = id, .cores = 4, .resources = &r, .nresources = 1};
  tlt_add_desc(e, d);
}

/* A task set asking for two GPUs where every executor has one: unschedulable after the round
 * (reason: resources), schedulable in the round that launches it on a two-GPU executor. */
START_TEST(resources_unschedulable_until_an_executor_fits) {
  tlt_env *e = demand_env(NULL);
  add_gpus(e, "g1", 1);
  tl_resource_request q = {.name = "gpu", .amount = 2};
  tl_taskset_desc td = {.stage_id = 0, .ntasks = 1, .resources = &q, .nresources = 1};
  tl_taskset_id ts = tlt_submit_desc(e, &td);
  size_t mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "g1", 4, NULL, 0), 0);
  ck_assert_uint_eq(count(mark, D_UNSCHED), 1);
  ck_assert_ptr_nonnull(strstr(dlog[mark].reason, "resources"));
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 1);
  add_gpus(e, "g2", 2);
  mark = nd;
  tl_launch l;
  tl_offer o[2] = {{"g1", 4}, {"g2", 4}};
  ck_assert_uint_eq(tlt_offers(e, o, 2, &l, 1), 1);
  ck_assert_uint_eq(count(mark, D_SCHED), 1);
  ck_assert_uint_eq(dlog[mark].ts, ts);
  const tl_demand *d = one_demand(e, mark);
  ck_assert_uint_eq(d->unschedulable_tasksets, 0);
  ck_assert_uint_eq(d->attempts_running, 1);
  tlt_succeed(e, "g2", l.tid);
  demand_end(e);
}
END_TEST

/* Hard placement's state: a task set allowed only on "p2", which does not exist, launches
 * nothing in a round on p1 and is unschedulable, with placement's reason; p2 joining ends it at
 * once (one schedulable event, before any round), and the next round launches it there. */
START_TEST(placement_unschedulable_until_an_allowed_executor_joins) {
  tlt_env *e = demand_env(NULL);
  tlt_add(e, "p1", "hp", NULL, 2);
  tl_taskset_desc td = {.stage_id = 0,
                        .ntasks = 1,
                        .allowed_executors = (const char *const[]){"p2"},
                        .nallowed_executors = 1};
  tl_taskset_id ts = tlt_submit_desc(e, &td);
  size_t mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "p1", 2, NULL, 0), 0);
  ck_assert_uint_eq(count(mark, D_UNSCHED), 1);
  ck_assert_uint_eq(dlog[mark].ts, ts);
  ck_assert_ptr_nonnull(strstr(dlog[mark].reason, "placement"));
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 1);
  mark = nd;
  tlt_add(e, "p2", "hq", NULL, 2);
  ck_assert_uint_eq(count(mark, D_SCHED), 1);
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 0);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "p2", 2, &l, 1), 1);
  tlt_succeed(e, "p2", l.tid);
  demand_end(e);
}
END_TEST

/* Both states at once: one unschedulable event when the first begins, one schedulable when the
 * last ends. A task needing two GPUs fails on g2, the one executor that has them, and its node
 * h is excluded for it (one failure per node is enough here); g2 is lost. The next round on g1
 * (h too, one GPU) finds it in both states: one event. A new two-GPU executor elsewhere ends
 * exclusion's state at once (a new executor ends it) and resources' at the next round, which
 * launches it: one schedulable event then. */
START_TEST(both_states_make_one_pair_of_events) {
  tl_config cfg = exclude_config();
  cfg.exclude_max_task_attempts_per_node = 1;
  tlt_env *e = demand_env(&cfg);
  add_gpus_on(e, "g2", "h", 2);
  add_gpus_on(e, "g1", "h", 1);
  tl_resource_request q = {.name = "gpu", .amount = 2};
  tl_taskset_desc td = {.stage_id = 0, .ntasks = 1, .resources = &q, .nresources = 1};
  tl_taskset_id ts = tlt_submit_desc(e, &td);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "g2", 4, &l, 1), 1);
  tlt_fail(e, "g2", l.tid, TL_END_EXCEPTION);
  tlt_lose(e, "g2", TL_LOSS_KILLED, false);
  size_t mark = nd;
  ck_assert_uint_eq(tlt_offer(e, "g1", 4, NULL, 0), 0);
  ck_assert_uint_eq(count(mark, D_UNSCHED), 1);
  ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 1);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 2); /* two deadlines, one task set */
  mark = nd;
  add_gpus(e, "g3", 2);
  ck_assert_uint_eq(count(mark, D_SCHED), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 1);
  ck_assert_uint_eq(tlt_offer(e, "g3", 4, &l, 1), 1);
  ck_assert_uint_eq(count(mark, D_SCHED), 1);
  ck_assert_uint_eq(dlog[nd - 2].ts, ts);
  tlt_succeed(e, "g3", l.tid);
  demand_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Speculation's demand, restore, and deferred delivery.
 * ------------------------------------------------------------------------------------------- */

/* A speculatable copy waiting is demand: the tick that finds it makes one demand event
 * counting it. */
START_TEST(speculatable_tasks_are_demand) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.5;
  tlt_env *e = demand_env(&cfg);
  tlt_add(e, "e0", "h0", NULL, 2);
  tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, l, 2), 2);
  tlt_advance_tick(e, TLT_SEC);
  tlt_succeed(e, "e0", l[0].tid);
  size_t mark = nd;
  tlt_advance_tick(e, 10 * TLT_SEC);
  const tl_demand *d = one_demand(e, mark);
  ck_assert_uint_eq(d->tasks_speculatable, 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  tlt_succeed(e, "e0", l[1].tid);
  demand_end(e);
}
END_TEST

/* An image in memory (tl_snapshot's writer, tl_scheduler_restore's reader). */
/* A restored scheduler announces its unschedulable task sets (its image's exclusion deadline),
 * then its demand, before tl_scheduler_restore returns. */
START_TEST(restore_announces_unschedulable_task_sets) {
  tl_config cfg = exclude_config();
  tlt_env *e = demand_env(&cfg);
  tl_taskset_id ts = one_task_excluded_on_e0(e);
  tlt_image im = {NULL, 0, 0, 0};
  ck_assert_int_eq(tl_snapshot(e->s, tlt_image_write, &im), TL_OK);
  size_t mark = nd, restored = nd;
  tl_callbacks cb = {.ud = e};
  with_demand(&cb);
  tl_scheduler *s2 = NULL;
  ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, tlt_image_read, &im, &s2), TL_OK);
  ck_assert_int_eq(tl_check(s2, NULL, 0), TL_OK);
  ck_assert_uint_eq(count(mark, D_UNSCHED), 1);
  ck_assert_uint_eq(dlog[mark].ts, ts);
  ck_assert_uint_eq(count(mark, D_DEMAND), 1);
  ck_assert_uint_eq(dlog[nd - 1].demand.unschedulable_tasksets, 1);
  ck_assert_uint_eq(dlog[nd - 1].demand.tasksets_active, 1);
  /* A scheduler that is freed owes no schedulable event (tl_scheduler_free makes releases). */
  mark = nd;
  ck_assert_int_eq(tl_scheduler_free(s2), TL_OK);
  ck_assert_uint_eq(nd, mark);
  free(im.p);
  nd = restored; /* the restored scheduler's events are not e's */
  TLT_OK(e, tl_cancel_stage(e->s, 0, NULL));
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  demand_end(e);
}
END_TEST

/* The journal's text, one line after another (journal sink). */
typedef struct jtext {
  char *p;
  size_t n, cap;
} jtext;

static void jtext_line(void *ud, const char *line) {
  jtext *j = ud;
  size_t len = strlen(line);
  if (j->n + len + 2 > j->cap) {
    j->cap = (j->n + len + 2) * 2;
    j->p = realloc(j->p, j->cap);
    ck_assert_ptr_nonnull(j->p);
  }
  memcpy(j->p + j->n, line, len);
  j->n += len;
  j->p[j->n++] = '\n';
  j->p[j->n] = '\0';
}

/* Events are not journaled: a replay of the calls makes them again. A journaled run with both
 * unschedulable states, an abort at the deadline, a cancel and a drain, replayed by tl-replay's
 * replayer (which sets the three callbacks): the same number of each event, the same last
 * totals. */
START_TEST(a_replay_makes_the_same_demand_events) {
  jtext j = {NULL, 0, 0};
  tl_config cfg = exclude_config();
  cfg.unschedulable_timeout_ns = 10 * TLT_SEC;
  cfg.journal = jtext_line;
  cfg.journal_ud = &j;
  tlt_env *e = demand_env(&cfg);
  one_task_excluded_on_e0(e); /* stage 0: exclusion's state */
  add_gpus(e, "g1", 1);
  tl_resource_request q = {.name = "gpu", .amount = 2};
  tl_taskset_desc td = {.stage_id = 1, .ntasks = 2, .resources = &q, .nresources = 1};
  tlt_submit_desc(e, &td);
  ck_assert_uint_eq(tlt_offer(e, "g1", 4, NULL, 0), 0); /* stage 1: resources' */
  tlt_advance_tick(e, 10 * TLT_SEC);                    /* both aborted at their deadlines */
  tlt_submit(e, 2, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "g1", 3, l, 3), 3);
  tlt_succeed(e, "g1", l[0].tid);
  TLT_OK(e, tl_cancel_stage(e->s, 2, "done"));
  demand_end(e);
  tl_demand last = {0};
  for (size_t i = nd; i-- > 0;)
    if (dlog[i].type == D_DEMAND) {
      last = dlog[i].demand;
      break;
    }
  ck_assert_uint_eq(count(0, D_UNSCHED), 2);

  tlr_report rep;
  ck_assert_int_eq(tlr_replay_text(j.p, NULL, &rep), TLR_OK);
  ck_assert_uint_eq(rep.unschedulable, count(0, D_UNSCHED));
  ck_assert_uint_eq(rep.schedulable, count(0, D_SCHED));
  ck_assert_uint_eq(rep.demand_events, count(0, D_DEMAND));
  ck_assert_mem_eq(&rep.last_demand, &last, sizeof last);
  free(j.p);
}
END_TEST

/* Threads: two threads drive their own executor and task sets through the whole lifecycle at
 * once, with deferred delivery, while the main thread delivers (the only thread that runs
 * callbacks). The events stay one per changing call: never more demand events than calls, and
 * the last one's totals are the end's, all zeros. A scheduler of its own (no recorder: the
 * threads may not assert). */
typedef struct threaded {
  tl_scheduler *s;
  _Atomic unsigned calls;    /* mutating calls the threads made */
  _Atomic unsigned failures; /* of which answered other than expected */
  _Atomic unsigned done;     /* threads finished */
  unsigned demand_events;    /* delivered (main thread only) */
  tl_demand last;
} threaded;

static void th_demand(void *ud, const tl_demand *d) {
  threaded *t = ud;
  t->demand_events++;
  t->last = *d;
}

typedef struct th_arg {
  threaded *t;
  const char *exec;
  uint32_t stage0;
} th_arg;

static void *th_run(void *p) {
  th_arg *a = p;
  threaded *t = a->t;
  tl_executor_desc d = {.id = a->exec, .host = a->exec, .cores = 4};
  unsigned bad = tl_executor_add(t->s, &d) != TL_OK;
  unsigned calls = 1;
  for (uint32_t k = 0; k < 50; k++) {
    tl_taskset_desc td = {.stage_id = a->stage0 + k, .ntasks = 4};
    bad += tl_submit(t->s, &td, NULL) != TL_OK;
    calls++;
    for (int left = 4; left > 0;) {
      tl_offer o = {a->exec, 4};
      tl_launch l[4];
      size_t n = 0;
      bad += tl_resource_offers(t->s, &o, 1, l, 4, &n) != TL_OK;
      calls++;
      for (size_t i = 0; i < n; i++) {
        tl_update u = {.state = TL_TASK_FINISHED};
        bad += tl_status_update(t->s, a->exec, l[i].tid, &u) != TL_OK;
        calls++;
        left--;
      }
    }
  }
  tl_loss_reason why = {.kind = TL_LOSS_KILLED, .message = "done"};
  bad += tl_executor_lost(t->s, a->exec, &why) != TL_OK;
  calls++;
  atomic_fetch_add(&t->calls, calls);
  atomic_fetch_add(&t->failures, bad);
  atomic_fetch_add(&t->done, 1);
  return NULL;
}

START_TEST(threads_with_deferred_delivery) {
  threaded t = {0};
  tl_config cfg = tlt_config();
  cfg.delivery = TL_DELIVER_DEFERRED;
  tl_callbacks cb = {.ud = &t, .demand_changed = th_demand};
  ck_assert_int_eq(tl_scheduler_new(&cfg, &cb, &t.s), TL_OK);
  th_arg a[2] = {{&t, "a", 0}, {&t, "b", 1000}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, th_run, &a[i]), 0);
  while (atomic_load(&t.done) < 2)
    ck_assert_int_ge(tl_dispatch(t.s), 0);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  while (tl_dispatch(t.s) > 0)
    ;
  ck_assert_uint_eq(atomic_load(&t.failures), 0);
  ck_assert_int_eq(tl_check(t.s, NULL, 0), TL_OK);
  ck_assert_uint_gt(t.demand_events, 2);
  ck_assert_uint_le(t.demand_events, atomic_load(&t.calls));
  tl_stats st;
  tl_stats_get(t.s, &st);
  ck_assert_uint_eq(st.tasksets_active + st.attempts_running + st.tasks_pending, 0);
  tl_demand zero = {0};
  ck_assert_mem_eq(&t.last, &zero, sizeof zero);
  ck_assert_uint_eq(st.tasksets_released, 100);
  ck_assert_int_eq(tl_scheduler_free(t.s), TL_OK);
}
END_TEST

/* Deferred delivery: the events wait for tl_dispatch, still one demand event per call. */
START_TEST(deferred_delivery_keeps_one_demand_event_per_call) {
  tl_config cfg = tlt_config();
  cfg.delivery = TL_DELIVER_DEFERRED;
  tlt_env *e = demand_env(&cfg);
  tlt_add(e, "e0", "h0", NULL, 4);
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e0", 4, l, 4), 4);
  ck_assert_uint_eq(nd, 0);
  tlt_dispatch_all(e);
  ck_assert_uint_eq(count(0, D_DEMAND), 2); /* the submit's and the round's */
  ck_assert_uint_eq(dlog[0].demand.tasks_pending, 4);
  ck_assert_uint_eq(dlog[1].demand.attempts_running, 4);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "e0", l[i].tid);
  tlt_dispatch_all(e);
  demand_end(e);
}
END_TEST

/* The state the out-of-memory sweeps start from: two task sets unschedulable on e0 (exclusion),
 * a third with 30 tasks pending; with_e1: e1 (64 cores) registered, which ended that. */
static tlt_env *oom_build(bool with_e1) {
  tl_config cfg = exclude_config();
  tlt_env *e = demand_env(&cfg);
  tlt_add(e, "e0", "h0", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tlt_submit(e, 1, 0, 0, 1);
  tl_launch l;
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
    tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  }
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  tlt_submit(e, 2, 0, 0, 30);
  if (with_e1)
    tlt_add(e, "e1", "h1", NULL, 64);
  return e;
}

/* Out of memory: each call under test with its k-th allocation failing, transiently or from
 * then on, until it succeeds without a failure: TL_ENOMEM has changed nothing and made no event;
 * then the call again, which does what it does without failures. The calls: e1's registration
 * (both task sets schedulable, one demand event), and a round that launches 32 tasks on it (one
 * demand event). The events' room is every reservation's (tl__demand_room): nothing is
 * allocated once a call has begun to change things. */
START_TEST(out_of_memory_changes_nothing) {
  for (int call = 0; call < 2; call++)
    for (int persistent = 0; persistent < 2; persistent++) {
      bool done = false;
      for (uint64_t k = 1; !done && k < 200; k++) {
        tlt_alloc_install();
        tlt_env *e = oom_build(call == 1);
        tl_stats before = tlt_stats(e);
        size_t mark = nd, evmark = tlt_mark(e);
        tl_launch l[64];
        size_t n = 0;
        tl_offer o = {"e1", 64};
        tl_executor_desc d = {.id = "e1", .host = "h1", .cores = 64};
        if (persistent)
          tlt_alloc_fail_from(k);
        else
          tlt_alloc_fail_at(k);
        int rc = call == 0 ? tl_executor_add(e->s, &d) : tl_resource_offers(e->s, &o, 1, l, 64, &n);
        bool failed = tlt_alloc_failed();
        tlt_alloc_fail_at(0);
        TLT_CHECK(e);
        if (rc == TL_ENOMEM) {
          ck_assert(failed);
          ck_assert_uint_eq(nd, mark);
          ck_assert_uint_eq(tlt_mark(e), evmark);
          tl_stats after = tlt_stats(e);
          tlt_assert_stats_same_but_memory(&before, &after, "a failed call");
          if (call == 0)
            tlt_add(e, "e1", "h1", NULL, 64);
          else
            ck_assert_int_eq(tl_resource_offers(e->s, &o, 1, l, 64, &n), TL_OK);
          TLT_CHECK(e);
        } else {
          ck_assert_int_eq(rc, TL_OK);
          done = !failed;
        }
        if (call == 0) {
          ck_assert_uint_eq(count(mark, D_SCHED), 2);
          ck_assert_uint_eq(one_demand(e, mark)->unschedulable_tasksets, 0);
          n = tlt_offer(e, "e1", 64, l, 64);
        } else {
          ck_assert_uint_eq(one_demand(e, mark)->attempts_running, 32);
        }
        ck_assert_uint_eq(n, 32);
        for (size_t i = 0; i < n; i++)
          tlt_succeed(e, "e1", l[i].tid);
        demand_end(e);
        tlt_alloc_restore();
      }
      ck_assert(done);
    }
}
END_TEST

Suite *tl_demand_suite(void) {
  Suite *suite = suite_create("demand");
  TCase *tc = tlt_tcase(suite, "demand");
  tcase_add_test(tc, one_demand_event_per_call);
  tcase_add_test(tc, no_demand_event_when_nothing_changed);
  tcase_add_test(tc, only_the_callbacks_set_are_made);
  tcase_add_test(tc, unschedulable_then_a_new_executor);
  tcase_add_test(tc, unschedulable_then_aborted_at_its_deadline);
  tcase_add_test(tc, a_launch_makes_every_task_set_schedulable);
  tcase_add_test(tc, not_completely_excluded_is_not_unschedulable);
  tcase_add_test(tc, cancelled_while_unschedulable);
  tcase_add_test(tc, resources_unschedulable_until_an_executor_fits);
  tcase_add_test(tc, placement_unschedulable_until_an_allowed_executor_joins);
  tcase_add_test(tc, both_states_make_one_pair_of_events);
  tcase_add_test(tc, speculatable_tasks_are_demand);
  tcase_add_test(tc, restore_announces_unschedulable_task_sets);
  tcase_add_test(tc, a_replay_makes_the_same_demand_events);
  tcase_add_test(tc, deferred_delivery_keeps_one_demand_event_per_call);
  tcase_add_test(tc, threads_with_deferred_delivery);
  tcase_add_test(tc, out_of_memory_changes_nothing);
  return suite;
}

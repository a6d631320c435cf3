/* Locality: preferred locations, valid levels, delay scheduling and its SPARK-18886 timer rule.
 * Each test ports the Spark scenario named in its comment (TaskSchedulerImplSuite = TSIS,
 * TaskSetManagerSuite = TSMS). Spark's TSMS tests call TaskSetManager.resourceOffer with one
 * maximum level at a time; here the unit is an offer round, which (as Spark's
 * TaskSchedulerImpl.resourceOffers does) walks the task set's levels, most local first, so the
 * ports assert what a whole round launches. A round that names every ALIVE executor is Spark's
 * isAllFreeResources = true; any other round is a partial one.
 */
#include "harness.h"

#include <inttypes.h>

#define WAIT (3 * TLT_SEC) /* the default locality_wait_ns */

static const tl_location H1[] = {{"host1", NULL}};
static const tl_location H2[] = {{"host2", NULL}};
static const tl_location H3[] = {{"host3", NULL}};

/* Submits stage with ntasks tasks, task i preferring prefs[i] (nprefs[i] entries). */
static tl_taskset_id submit_prefs(tlt_env *e, uint32_t stage, uint32_t ntasks,
                                  const tl_location *const *prefs, const uint32_t *nprefs) {
  tl_task_desc tasks[16];
  ck_assert_uint_le(ntasks, 16);
  for (uint32_t i = 0; i < ntasks; i++) {
    tasks[i].prefs = prefs[i];
    tasks[i].nprefs = nprefs[i];
  }
  tl_taskset_desc d = {.stage_id = stage, .ntasks = ntasks, .tasks = tasks};
  return tlt_submit_desc(e, &d);
}

/* n tasks that all prefer (host, executor). */
static tl_taskset_id submit_all_on(tlt_env *e, uint32_t stage, uint32_t n, const char *host,
                                   const char *exec) {
  tl_location loc = {host, exec};
  const tl_location *prefs[16];
  uint32_t nprefs[16];
  for (uint32_t i = 0; i < n; i++) {
    prefs[i] = &loc;
    nprefs[i] = 1;
  }
  return submit_prefs(e, stage, n, prefs, nprefs);
}

static unsigned bit(tl_locality l) { return 1u << l; }

/* One offer of a round: executor and cores. */
static size_t offer2(tlt_env *e, const char *a, uint32_t ca, const char *b, uint32_t cb,
                     tl_launch *out) {
  tl_offer o[2] = {{a, ca}, {b, cb}};
  return tlt_offers(e, o, b != NULL ? 2 : 1, out, 8);
}

/* ---------------------------------------------------------------------------------------------
 * Valid levels
 * ------------------------------------------------------------------------------------------- */

/* TSMS "new executors get added and lost": the set of levels grows and shrinks with the
 * executors the tasks prefer. */
START_TEST(levels_follow_executors_added_and_lost) {
  tlt_env *e = tlt_new(NULL);
  const tl_location a[] = {{"host1", "execA"}}, b[] = {{"host1", "execB"}},
                    c[] = {{"host2", "execC"}};
  const tl_location *prefs[] = {a, b, c, NULL};
  const uint32_t nprefs[] = {1, 1, 1, 0};
  tl_taskset_id ts = submit_prefs(e, 0, 4, prefs, nprefs);
  ck_assert_uint_eq(tlt_stats(e).places, 5); /* execA, execB, execC, host1, host2 */
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_NO_PREF) | bit(TL_ANY));
  tlt_add(e, "execD", "host1", NULL, 1);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels,
                    bit(TL_NODE_LOCAL) | bit(TL_NO_PREF) | bit(TL_ANY));
  tlt_add(e, "execC", "host2", "rack2", 1);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_PROCESS_LOCAL) | bit(TL_NODE_LOCAL) |
                                                       bit(TL_NO_PREF) | bit(TL_RACK_LOCAL) |
                                                       bit(TL_ANY));
  /* A level appeared below the current one: the task set moves to it (SPARK-31837). */
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_PROCESS_LOCAL);
  tlt_lose(e, "execC", TL_LOSS_PROCESS_LOST, false);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels,
                    bit(TL_NODE_LOCAL) | bit(TL_NO_PREF) | bit(TL_ANY));
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_NODE_LOCAL);
  tlt_lose(e, "execD", TL_LOSS_PROCESS_LOST, false);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_NO_PREF) | bit(TL_ANY));
  tlt_end(e);
}
END_TEST

/* A decommissioning executor takes no task: it no longer makes its level valid. */
START_TEST(decommissioning_removes_a_level) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", NULL, 2);
  tl_taskset_id ts = submit_all_on(e, 0, 2, "host1", "e1");
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels,
                    bit(TL_PROCESS_LOCAL) | bit(TL_NODE_LOCAL) | bit(TL_ANY));
  TLT_OK(e, tl_executor_decommission(e->s, "e1", NULL));
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_ANY));
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_ANY);
  tlt_end(e);
}
END_TEST

/* TSMS "skip unsatisfiable locality levels": the preferred executor is not alive, so the task
 * set starts at NODE_LOCAL and launches on its host at once. */
START_TEST(unsatisfiable_levels_are_skipped) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "execA", "host1", NULL, 1);
  tlt_add(e, "execC", "host2", NULL, 1);
  const tl_location b[] = {{"host1", "execB"}};
  const tl_location *prefs[] = {b};
  const uint32_t nprefs[] = {1};
  tl_taskset_id ts = submit_prefs(e, 0, 1, prefs, nprefs);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_NODE_LOCAL) | bit(TL_ANY));
  tl_launch l[8];
  char why[512];
  TLT_OK(e, tl_explain_taskset(e->s, ts, why, sizeof why));
  ck_assert_ptr_nonnull(
      strstr(why, "locality: at NODE_LOCAL, its wait began at 1.000 s; levels NODE_LOCAL ANY\n"));
  ck_assert_uint_eq(offer2(e, "execC", 1, NULL, 0, l), 0); /* not NODE_LOCAL: rejected */
  ck_assert_uint_eq(offer2(e, "execA", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].index, 0);
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  ck_assert_int_eq(tlt_nth(e, 0, TLT_EV_STARTED, 0)->task.locality, TL_NODE_LOCAL);
  tlt_end(e);
}
END_TEST

/* TSIS "SPARK-16106 locality levels updated if executor added to existing host". */
START_TEST(levels_updated_when_an_executor_joins_a_known_host) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tlt_add(e, "executor1", "host1", NULL, 1);
  tl_taskset_id ts = submit_all_on(e, 0, 2, "host0", "executor2");
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_NODE_LOCAL) | bit(TL_ANY));
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "executor0", 1, "executor1", 1, l), 1);
  ck_assert_str_eq(l[0].executor_id, "executor0");
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  tlt_add(e, "executor2", "host0", NULL, 1);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels,
                    bit(TL_PROCESS_LOCAL) | bit(TL_NODE_LOCAL) | bit(TL_ANY));
  ck_assert_uint_eq(offer2(e, "executor2", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  tlt_add(e, "executor3", "host1", NULL, 1);
  ck_assert_uint_eq(offer2(e, "executor3", 1, NULL, 0, l), 0);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Delay scheduling
 * ------------------------------------------------------------------------------------------- */

/* TSMS "basic delay scheduling", as offer rounds. In a round the NO_PREF pass lets a node-local
 * task go before a task without preferences, without waiting (Spark's dequeueTask looks at the
 * host's list before the no-preference list at every level from NO_PREF on). */
START_TEST(basic_delay_scheduling) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "exec1", "host1", NULL, 4);
  tlt_add(e, "exec2", "host2", NULL, 4);
  const tl_location p0[] = {{"host1", "exec1"}}, p1[] = {{"host2", "exec2"}},
                    p2[] = {{"host1", NULL}, {"host2", "exec2"}};
  const tl_location *prefs[] = {p0, p1, p2, NULL};
  const uint32_t nprefs[] = {1, 1, 2, 0};
  submit_prefs(e, 0, 4, prefs, nprefs);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].index, 0);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1); /* node-local before no-pref */
  ck_assert_uint_eq(l[0].index, 2);
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].index, 1);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1); /* then the no-pref task */
  ck_assert_uint_eq(l[0].index, 3);
  ck_assert_int_eq(l[0].locality, TL_NO_PREF);
  tlt_end(e);
}
END_TEST

/* TSMS "delay scheduling with failed hosts": a task whose host died waits only as long as the
 * others that still wait for theirs, then runs anywhere. */
START_TEST(delay_scheduling_with_failed_hosts) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "exec1", "host1", NULL, 4);
  tlt_add(e, "exec2", "host2", NULL, 4);
  tlt_add(e, "exec3", "host3", NULL, 4);
  const tl_location *prefs[] = {H1, H2, H3};
  const uint32_t nprefs[] = {1, 1, 1};
  tl_taskset_id ts = submit_prefs(e, 0, 3, prefs, nprefs);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].index, 0);
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 0);
  tlt_lose(e, "exec2", TL_LOSS_PROCESS_LOST, false);
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 0); /* task 2 still waits for host3 */
  e->now += 2 * WAIT;
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].index, 1);
  ck_assert_int_eq(l[0].locality, TL_ANY);
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].index, 2);
  ck_assert_int_eq(l[0].locality, TL_ANY);
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 0);
  ck_assert_uint_eq(offer2(e, "exec3", 1, NULL, 0, l), 0);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 0);
  tlt_end(e);
}
END_TEST

/* A level whose preferred places are all dead is skipped at once (SPARK-4939: nothing there to
 * wait for), where Spark would wait out its timer. */
START_TEST(a_level_with_only_dead_places_does_not_wait) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "exec1", "host1", NULL, 4);
  tlt_add(e, "exec2", "host2", NULL, 4);
  const tl_location *prefs[] = {H2, H2};
  const uint32_t nprefs[] = {1, 1};
  submit_prefs(e, 0, 2, prefs, nprefs);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 0); /* held for host2 */
  tlt_lose(e, "exec2", TL_LOSS_PROCESS_LOST, false);
  ck_assert_uint_eq(offer2(e, "exec1", 2, NULL, 0, l), 2); /* host2 is gone: no wait */
  ck_assert_int_eq(l[0].locality, TL_ANY);
  tlt_end(e);
}
END_TEST

/* RACK_LOCAL: after the node wait, a task goes to another host of its preferred host's rack
 * before it may go anywhere. */
START_TEST(rack_local_before_any) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", "rackA", 1);
  tlt_add(e, "e2", "host2", "rackA", 1);
  tlt_add(e, "e3", "host3", "rackB", 1);
  const tl_location *prefs[] = {H1, H1};
  const uint32_t nprefs[] = {1, 1};
  tl_taskset_id ts = submit_prefs(e, 0, 2, prefs, nprefs);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels,
                    bit(TL_NODE_LOCAL) | bit(TL_RACK_LOCAL) | bit(TL_ANY));
  tl_launch l[8];
  tl_offer all[3] = {{"e1", 1}, {"e2", 1}, {"e3", 1}};
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 8), 1); /* host1's one core */
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 8), 0);
  e->now += WAIT; /* the node wait is over: the rack's other host */
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 8), 1);
  ck_assert_str_eq(l[0].executor_id, "e2");
  ck_assert_int_eq(l[0].locality, TL_RACK_LOCAL);
  tlt_end(e);
}
END_TEST

/* TSIS "Locality should be used for bulk offers even with delay scheduling off" and "With delay
 * scheduling off, tasks can be run at any locality level immediately". */
START_TEST(locality_in_bulk_offers_without_delay) {
  tl_config cfg = tlt_config();
  cfg.locality_wait_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tlt_add(e, "executor1", "host1", NULL, 1);
  const tl_location *prefs[] = {H1};
  const uint32_t nprefs[] = {1};
  for (int order = 0; order < 2; order++) {
    submit_prefs(e, (uint32_t)order, 1, prefs, nprefs);
    tl_launch l[8];
    size_t n = order == 0 ? offer2(e, "executor0", 1, "executor1", 1, l)
                          : offer2(e, "executor1", 1, "executor0", 1, l);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(l[0].executor_id, "executor1");
    ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
    tlt_succeed(e, "executor1", l[0].tid);
  }
  /* Only a non-local offer: taken at once. */
  submit_prefs(e, 2, 1, prefs, nprefs);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "executor0", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_ANY);
  tlt_end(e);
}
END_TEST

/* tl_tick says when a wait runs out, and asks for offers (revive_offers) when it has. */
START_TEST(tick_revives_when_a_wait_runs_out) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 0; /* no other deadline */
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "host1", NULL, 1);
  tlt_add(e, "e2", "host2", NULL, 1);
  submit_all_on(e, 0, 2, "host1", NULL);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e1", 1, "e2", 1, l), 1);
  uint64_t next = tlt_advance_tick(e, 0);
  ck_assert_uint_eq(next, WAIT);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, WAIT - 1), 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 0);
  ck_assert_uint_eq(tlt_advance_tick(e, 1), TL_TICK_NEVER);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  ck_assert_uint_eq(tlt_advance_tick(e, 1), TL_TICK_NEVER); /* once per wait */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  ck_assert_uint_eq(offer2(e, "e2", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_ANY);
  tlt_end(e);
}
END_TEST

/* Per-level waits override locality_wait_ns. */
START_TEST(per_level_waits) {
  tl_config cfg = tlt_config();
  cfg.locality_wait_process_ns = 1 * TLT_SEC;
  cfg.locality_wait_node_ns = 10 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "host1", NULL, 1);
  tlt_add(e, "e2", "host1", NULL, 1);
  tlt_add(e, "e3", "host2", NULL, 1);
  tl_taskset_id ts = submit_all_on(e, 0, 3, "host1", "e1");
  tl_launch l[8];
  tl_offer all[3] = {{"e1", 1}, {"e2", 1}, {"e3", 1}};
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 8), 1);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  e->now += 1 * TLT_SEC; /* the process wait is over */
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 8), 1);
  ck_assert_str_eq(l[0].executor_id, "e2");
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_NODE_LOCAL); /* e3 was turned down: no reset */
  e->now += 1 * TLT_SEC;
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 8), 0); /* e3 waits for the 10 s node wait */
  e->now += 10 * TLT_SEC;
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 8), 1);
  ck_assert_str_eq(l[0].executor_id, "e3");
  ck_assert_int_eq(l[0].locality, TL_ANY);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The SPARK-18886 timer rule (TSIS, five tests). Eight tasks local to (host1, exec1); exec1 and
 * exec2 both on host1, so an offer naming only one of them is a partial round.
 * ------------------------------------------------------------------------------------------- */

static tlt_env *timer_env(tl_taskset_id *ts) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "exec1", "host1", NULL, 8);
  tlt_add(e, "exec2", "host1", NULL, 8);
  *ts = submit_all_on(e, 1, 8, "host1", "exec1");
  return e;
}

/* "partial offers (isAllFreeResources = false) reset timer before any resources have been
 * rejected" */
START_TEST(spark_18886_partial_offers_reset_before_any_reject) {
  tl_taskset_id ts;
  tlt_env *e = timer_env(&ts);
  tl_launch l[8];
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1); /* resets: no reject so far */
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 0); /* NODE_LOCAL not accepted */
  tlt_end(e);
}
END_TEST

/* "delay scheduling timer is reset when it accepts all resources offered when
 * isAllFreeResources = true" */
START_TEST(spark_18886_full_offer_accepted_resets) {
  tl_taskset_id ts;
  tlt_env *e = timer_env(&ts);
  tl_launch l[8];
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "exec1", 1, "exec2", 0, l), 1);
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 0);
  tlt_end(e);
}
END_TEST

/* "task set with no locality requirements should not starve one with them" */
START_TEST(spark_18886_no_locality_set_does_not_starve) {
  tl_taskset_id ts1;
  tlt_env *e = timer_env(&ts1);
  tl_taskset_id ts2 = tlt_submit(e, 2, 0, 0, 8);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].taskset, ts2);
  e->now += 2 * TLT_SEC;
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].taskset, ts2);
  ck_assert_uint_eq(offer2(e, "exec1", 0, "exec2", 0, l), 0); /* full, nothing: no reset */
  e->now += 2 * TLT_SEC;
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].taskset, ts1);
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  tlt_end(e);
}
END_TEST

/* "partial resource offers (isAllFreeResources = false) reset time if last full resource offer
 * (isAllResources = true) was accepted as well as any following partial resource offers" */
START_TEST(spark_18886_partial_offers_reset_after_an_accepted_full_offer) {
  tl_taskset_id ts;
  tlt_env *e = timer_env(&ts);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "exec1", 0, "exec2", 0, l), 0);
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 0);
  tlt_end(e);
}
END_TEST

/* "partial resource offers (isAllFreeResources = false) do not reset time if any offer was
 * rejected since last full offer was fully accepted" */
START_TEST(spark_18886_partial_offers_after_a_reject_do_not_reset) {
  tl_taskset_id ts;
  tlt_env *e = timer_env(&ts);
  tl_launch l[8];
  /* Case 1: a full offer with a NODE_LOCAL rejection. */
  ck_assert_uint_eq(offer2(e, "exec1", 0, "exec2", 1, l), 0);
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1); /* no reset */
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_NODE_LOCAL);
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1); /* exec2 is used all the same */
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  /* Case 2: a full offer accepted resets; a partial one with a reject stops later resets. */
  ck_assert_uint_eq(offer2(e, "exec1", 1, "exec2", 0, l), 1);
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_PROCESS_LOCAL);
  ck_assert_uint_eq(offer2(e, "exec2", 1, "exec1", 1, l), 1);
  ck_assert_str_eq(l[0].executor_id, "exec1");
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Retries, barrier, speculation, arguments
 * ------------------------------------------------------------------------------------------- */

/* A failed task goes back on its preferred lists and runs there again. */
START_TEST(a_retry_keeps_its_preferences) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", NULL, 1);
  tlt_add(e, "e2", "host2", NULL, 1);
  const tl_location *prefs[] = {H1, H2};
  const uint32_t nprefs[] = {1, 1};
  submit_prefs(e, 0, 2, prefs, nprefs);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e1", 1, "e2", 1, l), 2);
  ck_assert_str_eq(l[0].executor_id, "e1");
  ck_assert_uint_eq(l[0].index, 0);
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);
  tlt_succeed(e, "e2", l[1].tid);
  ck_assert_uint_eq(offer2(e, "e2", 1, NULL, 0, l), 0); /* held for host1 */
  ck_assert_uint_eq(offer2(e, "e1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(l[0].index, 0);
  ck_assert_uint_eq(l[0].attempt, 1);
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  tlt_end(e);
}
END_TEST

/* A barrier task set never waits for locality: all its tasks launch in one round, the local
 * ones where they prefer. */
START_TEST(a_barrier_set_launches_all_at_once_local_first) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", NULL, 1);
  tlt_add(e, "e2", "host2", NULL, 1);
  tl_task_desc tasks[2] = {{H2, 1}, {H2, 1}};
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 2, .tasks = tasks, .barrier = true};
  tlt_submit_desc(e, &d);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e1", 1, "e2", 1, l), 2);
  ck_assert_str_eq(l[0].executor_id, "e2");
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  ck_assert_str_eq(l[1].executor_id, "e1");
  ck_assert_int_eq(l[1].locality, TL_ANY);
  tlt_end(e);
}
END_TEST

/* A speculative copy obeys its task's preferences (TSMS "SPARK-26755 ... obeys original
 * locality preferences"): it waits like the task does, and goes where it is most local. */
START_TEST(a_speculative_copy_obeys_locality) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.5;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "host1", NULL, 1);
  tlt_add(e, "e2", "host1", NULL, 1);
  tlt_add(e, "e3", "host2", NULL, 1);
  const tl_location *prefs[] = {H1, H1};
  const uint32_t nprefs[] = {1, 1};
  submit_prefs(e, 0, 2, prefs, nprefs);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e1", 1, "e2", 1, l), 2);
  tl_tid slow = l[1].tid;
  e->now += 1 * TLT_SEC;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_advance_tick(e, 10 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  /* host1 was tried: only e3 can take the copy, and only once the waits allow ANY. */
  ck_assert_uint_eq(offer2(e, "e3", 1, NULL, 0, l), 1);
  ck_assert(l[0].speculative);
  ck_assert_int_eq(l[0].locality, TL_ANY);
  tlt_succeed(e, "e3", l[0].tid);
  tlt_killed(e, "e2", slow);
  tlt_end(e);
}
END_TEST

START_TEST(preferences_are_checked) {
  tlt_env *e = tlt_new(NULL);
  char long_id[TL_ID_MAX + 1];
  memset(long_id, 'x', TL_ID_MAX);
  long_id[TL_ID_MAX] = '\0';
  tl_location bad_host[] = {{NULL, NULL}}, empty_host[] = {{"", NULL}},
              long_exec[] = {{"h", long_id}}, empty_exec[] = {{"h", ""}};
  tl_task_desc t[1];
  tl_taskset_desc d = {.ntasks = 1, .tasks = t};
  const tl_location *bad[] = {bad_host, empty_host, long_exec, empty_exec};
  for (size_t k = 0; k < 4; k++) {
    t[0].prefs = bad[k];
    t[0].nprefs = 1;
    TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  }
  t[0].prefs = NULL;
  t[0].nprefs = 1;
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  /* Empty preferences everywhere: a task set like any other, no place made. */
  t[0].nprefs = 0;
  tlt_submit_desc(e, &d);
  ck_assert_uint_eq(tlt_stats(e).places, 0);
  /* A place named twice by one task, and by two task sets, is one place. */
  tl_location twice[] = {{"h", "x"}, {"h", "x"}, {"h", NULL}};
  t[0].prefs = twice;
  t[0].nprefs = 3;
  d.stage_id = 1;
  tlt_submit_desc(e, &d);
  d.stage_id = 2;
  tlt_submit_desc(e, &d);
  ck_assert_uint_eq(tlt_stats(e).places, 2);
  /* One byte shorter, TL_ID_MAX - 1, the id is valid: a place of its own. */
  long_id[TL_ID_MAX - 1] = '\0';
  t[0].prefs = long_exec;
  t[0].nprefs = 1;
  d.stage_id = 3;
  tlt_submit_desc(e, &d);
  ck_assert_uint_eq(tlt_stats(e).places, 3);
  tlt_end(e);
}
END_TEST

/* TSMS "executors should be excluded after task failure, in spite of locality preferences":
 * with exclusion on and no locality wait, a task that prefers exec1 fails there, then on the
 * other executor of its host, then elsewhere; exclusion keeps it from every place it failed, at
 * every level, and the fourth failure aborts the task set. */
START_TEST(exclusion_wins_over_locality) {
  tl_config cfg = tlt_config();
  cfg.exclude_on_failure = true;
  cfg.locality_wait_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "exec1", "host1", NULL, 1);
  tlt_add(e, "exec1.1", "host1", NULL, 1);
  tlt_add(e, "exec2", "host2", NULL, 1);
  tl_taskset_id ts = submit_all_on(e, 0, 1, "host1", "exec1");
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  tlt_fail(e, "exec1", l[0].tid, TL_END_RESULT_LOST); /* failure 1 */
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 0);
  ck_assert_uint_eq(offer2(e, "exec1.1", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  tlt_fail(e, "exec1.1", l[0].tid, TL_END_RESULT_LOST); /* failure 2: host1 excluded for it */
  ck_assert_uint_eq(offer2(e, "exec1.1", 1, "exec1", 1, l), 0);
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_ANY);
  tlt_fail(e, "exec2", l[0].tid, TL_END_RESULT_LOST); /* failure 3 */
  ck_assert_uint_eq(offer2(e, "exec2", 1, NULL, 0, l), 0);
  e->now += 2 * TLT_SEC; /* exclusion within a task set never expires */
  ck_assert_uint_eq(offer2(e, "exec1", 1, NULL, 0, l), 0);
  tlt_add(e, "exec3", "host3", NULL, 1);
  ck_assert_uint_eq(offer2(e, "exec3", 1, NULL, 0, l), 1);
  tlt_fail(e, "exec3", l[0].tid, TL_END_RESULT_LOST); /* failure 4: aborted */
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 1);
  tlt_end(e);
}
END_TEST

/* Levels are recomputed when any executor of a preferred host comes or goes, not only when
 * the host gains its first or loses its last: here the task that preferred host1 has launched,
 * and a second executor on host1 leaves nothing to wait for (found by the randomized model). */
START_TEST(levels_recomputed_when_another_executor_joins_a_preferred_host) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", NULL, 1);
  tl_taskset_id ts = submit_all_on(e, 0, 1, "host1", NULL);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_NODE_LOCAL) | bit(TL_ANY));
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e1", 1, NULL, 0, l), 1);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_NODE_LOCAL) | bit(TL_ANY));
  tlt_add(e, "e2", "host1", NULL, 1);
  ck_assert_uint_eq(tlt_ts(e, ts).locality_levels, bit(TL_ANY));
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_ANY);
  tlt_end(e);
}
END_TEST

/* RACK_LOCAL takes, among the tasks that prefer another live host of the rack, the one that
 * went pending last (Spark keeps one list per rack), whatever the order the hosts joined the
 * rack; a host whose executors are all decommissioning is not live (found by the randomized
 * model). */
START_TEST(rack_local_follows_pending_order_over_live_hosts) {
  tl_config cfg = tlt_config();
  cfg.locality_wait_node_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e2", "host2", "rackA", 1); /* the rack's hosts in this order: 2, 1, 3 */
  tlt_add(e, "e1", "host1", "rackA", 1);
  tlt_add(e, "e3", "host3", "rackA", 1);
  tlt_add(e, "e4", "host4", "rackA", 1);
  /* Index 0 prefers host2, 1 host3, 2 host1; index 0 is on top of the pending order. */
  const tl_location *prefs[] = {H2, H3, H1};
  const uint32_t nprefs[] = {1, 1, 1};
  submit_prefs(e, 0, 3, prefs, nprefs);
  TLT_OK(e, tl_executor_decommission(e->s, "e2", NULL)); /* host2: no ALIVE executor left */
  /* host4 is preferred by nobody: at RACK_LOCAL it gets index 1 (host3), the topmost task
   * preferring a live host of the rack; not index 0 (host2 is not live), nor index 2 (host1
   * joined the rack before host3). */
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e4", 1, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_RACK_LOCAL);
  ck_assert_uint_eq(l[0].index, 1);
  tlt_end(e);
}
END_TEST

/* A level with nothing left to launch sets no deadline: the next offer skips it and only then
 * does the next level's wait begin, so tl_tick does not wake the runtime a wait too early. */
START_TEST(tick_sets_no_deadline_past_an_empty_level) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "host1", NULL, 1);
  tlt_add(e, "e2", "host2", NULL, 1);
  tlt_add(e, "e3", "host3", NULL, 1);
  const tl_location p0[] = {{"host1", "e1"}};
  const tl_location *prefs[] = {p0, H2};
  const uint32_t nprefs[] = {1, 1};
  tl_taskset_id ts = submit_prefs(e, 0, 2, prefs, nprefs);
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e1", 1, NULL, 0, l), 1); /* index 0, PROCESS_LOCAL: reset */
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_PROCESS_LOCAL);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER); /* nothing waits at PROCESS */
  e->now += 2 * WAIT;
  ck_assert_uint_eq(offer2(e, "e3", 1, NULL, 0, l), 0); /* skips PROCESS; waits at NODE now */
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_NODE_LOCAL);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), WAIT);
  tlt_end(e);
}
END_TEST

/* A task set held by its wait, offered only executors it does not prefer, launches nothing and
 * takes its turn in O(its places) rather than a pass per level over the offers; it still turns
 * the offers down (SPARK-18886), unless none of them fits one of its tasks. */
START_TEST(a_held_task_set_rejects_offers_it_cannot_use) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", NULL, 8);
  tlt_add(e, "e8", "host9", NULL, 8);
  tlt_add(e, "e9", "host9", NULL, 8);
  tl_taskset_id ts = submit_all_on(e, 0, 8, "host1", "e1");
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e8", 1, "e9", 1, l), 0); /* a partial round, rejected */
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "e1", 1, NULL, 0, l), 1); /* no reset: a rejection since */
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_NODE_LOCAL);
  tlt_end(e);

  /* Two cores per task, offers of one core: nothing fits, nothing is turned down. */
  e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", NULL, 8);
  tlt_add(e, "e8", "host9", NULL, 1);
  tlt_add(e, "e9", "host9", NULL, 1);
  tl_location pref = {"host1", "e1"};
  tl_task_desc tasks[2] = {{&pref, 1}, {&pref, 1}};
  tl_taskset_desc d = {.stage_id = 1, .ntasks = 2, .cpus_per_task = 2, .tasks = tasks};
  tl_taskset_id wide = tlt_submit_desc(e, &d);
  ck_assert_uint_eq(offer2(e, "e8", 1, "e9", 1, l), 0);
  e->now += WAIT;
  ck_assert_uint_eq(offer2(e, "e1", 2, NULL, 0, l), 1);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  ck_assert_int_eq(tlt_ts(e, wide).locality, TL_PROCESS_LOCAL); /* no rejection: reset */
  tlt_end(e);
}
END_TEST

/* A round whose tasks all wait for locality launches nothing; the next round finds them waiting
 * again and needs as many attempt records: the first round's records stay spare while tasks
 * wait, so the rounds after it allocate nothing (they were allocated and freed by every round),
 * and the launch that comes takes them. Idle at the end, the scheduler holds what an empty one
 * does (tlt_end). */
START_TEST(rounds_whose_tasks_all_wait_allocate_nothing) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "host1", NULL, 8);
  tlt_add(e, "e8", "host9", NULL, 8);
  tlt_add(e, "e9", "host9", NULL, 8);
  submit_all_on(e, 0, 8, "host1", "e1");
  tl_launch l[8];
  ck_assert_uint_eq(offer2(e, "e8", 8, "e9", 8, l), 0);
  size_t blocks = tlt_stats(e).mem_live_blocks;
  for (int round = 0; round < 4; round++) {
    uint64_t calls = tlt_alloc_calls();
    ck_assert_uint_eq(offer2(e, "e8", 8, "e9", 8, l), 0);
    ck_assert_msg(tlt_alloc_calls() == calls, "a waiting round allocated %" PRIu64 " times",
                  tlt_alloc_calls() - calls);
    ck_assert_uint_eq(tlt_stats(e).mem_live_blocks, blocks);
  }
  ck_assert_uint_eq(offer2(e, "e1", 8, NULL, 0, l), 8);
  for (size_t i = 0; i < 8; i++) {
    ck_assert_int_eq(l[i].locality, TL_PROCESS_LOCAL);
    tlt_succeed(e, "e1", l[i].tid);
  }
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 0);
  tlt_end(e);
  tlt_alloc_restore();
}
END_TEST

Suite *tl_locality_suite(void) {
  Suite *s = suite_create("locality");
  TCase *tc = tlt_tcase(s, "locality");
  tcase_add_test(tc, levels_follow_executors_added_and_lost);
  tcase_add_test(tc, decommissioning_removes_a_level);
  tcase_add_test(tc, unsatisfiable_levels_are_skipped);
  tcase_add_test(tc, levels_updated_when_an_executor_joins_a_known_host);
  tcase_add_test(tc, basic_delay_scheduling);
  tcase_add_test(tc, delay_scheduling_with_failed_hosts);
  tcase_add_test(tc, a_level_with_only_dead_places_does_not_wait);
  tcase_add_test(tc, rack_local_before_any);
  tcase_add_test(tc, locality_in_bulk_offers_without_delay);
  tcase_add_test(tc, tick_revives_when_a_wait_runs_out);
  tcase_add_test(tc, per_level_waits);
  tcase_add_test(tc, spark_18886_partial_offers_reset_before_any_reject);
  tcase_add_test(tc, spark_18886_full_offer_accepted_resets);
  tcase_add_test(tc, spark_18886_no_locality_set_does_not_starve);
  tcase_add_test(tc, spark_18886_partial_offers_reset_after_an_accepted_full_offer);
  tcase_add_test(tc, spark_18886_partial_offers_after_a_reject_do_not_reset);
  tcase_add_test(tc, a_retry_keeps_its_preferences);
  tcase_add_test(tc, a_barrier_set_launches_all_at_once_local_first);
  tcase_add_test(tc, a_speculative_copy_obeys_locality);
  tcase_add_test(tc, preferences_are_checked);
  tcase_add_test(tc, exclusion_wins_over_locality);
  tcase_add_test(tc, levels_recomputed_when_another_executor_joins_a_preferred_host);
  tcase_add_test(tc, rack_local_follows_pending_order_over_live_hosts);
  tcase_add_test(tc, tick_sets_no_deadline_past_an_empty_level);
  tcase_add_test(tc, a_held_task_set_rejects_offers_it_cannot_use);
  tcase_add_test(tc, rounds_whose_tasks_all_wait_allocate_nothing);
  return s;
}

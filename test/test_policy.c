/* Scheduling policy beyond FIFO, the smaller features: the result-size limit
 * (max_result_bytes), barrier task sets, shuffle-map resubmission, and decommissioning. Each test
 * ports the Spark scenario named in its comment (TaskSchedulerImplSuite = TSIS, TaskSetManagerSuite
 * = TSMS).
 */
#include "harness.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

/* A FINISHED update carrying a result of the given size; returns the result. */
static tlt_result *finish_sized(tlt_env *e, const char *exec, tl_tid tid, size_t size) {
  tlt_result *r = tlt_result_new(e, size);
  tl_update u = {
      .state = TL_TASK_FINISHED, .result = r, .result_size = size, .result_free = tlt_result_free};
  TLT_OK(e, tl_status_update(e->s, exec, tid, &u));
  return r;
}

static tl_taskset_id submit_flags(tlt_env *e, uint32_t stage, uint32_t ntasks, uint32_t cpus,
                                  bool shuffle_map, bool barrier) {
  tl_taskset_desc d = {.stage_id = stage,
                       .ntasks = ntasks,
                       .cpus_per_task = cpus,
                       .shuffle_map = shuffle_map,
                       .barrier = barrier};
  return tlt_submit_desc(e, &d);
}

/* ---------------------------------------------------------------------------------------------
 * Result size (TSMS "abort the job if total size of results is too large", SPARK-32470)
 * ------------------------------------------------------------------------------------------- */

static tlt_env *result_env(size_t limit) {
  tl_config cfg = tlt_config();
  cfg.max_result_bytes = limit;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 10);
  return e;
}

START_TEST(small_results_under_the_limit_are_taken) {
  tlt_env *e = result_env(2 * MIB);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 10);
  tl_launch l[10];
  ck_assert_uint_eq(tlt_offer(e, "e1", 10, l, 10), 10);
  for (int i = 0; i < 10; i++) {
    tlt_result *r = finish_sized(e, "e1", l[i].tid, KIB);
    ck_assert_ptr_eq(tlt_ended_of(e, l[i].tid)->result, r); /* handed over */
    ck_assert_int_eq(tlt_ended_of(e, l[i].tid)->end_kind, TL_END_SUCCESS);
  }
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(one_result_past_the_limit_aborts_and_is_given_back) {
  tlt_env *e = result_env(2 * MIB);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_result *big = finish_sized(e, "e1", l[0].tid, 10 * MIB);
  const tlt_event *end = tlt_ended_of(e, l[0].tid);
  ck_assert_int_eq(end->end_kind, TL_END_RESULT_TOO_LARGE);
  ck_assert(!end->counts);
  ck_assert_ptr_null(end->result); /* not handed over: the library freed it */
  ck_assert_uint_eq(big->frees, 1);
  const tlt_event *failed = tlt_last(e, TLT_EV_FAILED);
  ck_assert_ptr_nonnull(failed);
  ck_assert_ptr_nonnull(strstr(failed->text, "bigger than max_result_bytes"));
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie && st.failed);
  ck_assert_uint_eq(st.succeeded, 0);
  /* The other attempt's result also counts toward the limit: dropped too. */
  tlt_result *late = finish_sized(e, "e1", l[1].tid, KIB);
  ck_assert_int_eq(tlt_ended_of(e, l[1].tid)->end_kind, TL_END_RESULT_TOO_LARGE);
  ck_assert_uint_eq(late->frees, 1);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 1);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(many_results_that_add_up_past_the_limit_abort) {
  tlt_env *e = result_env(2 * MIB);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 10);
  tl_launch l[10];
  ck_assert_uint_eq(tlt_offer(e, "e1", 10, l, 10), 10);
  finish_sized(e, "e1", l[0].tid, MIB);
  finish_sized(e, "e1", l[1].tid, MIB); /* exactly the limit: still taken */
  ck_assert_int_eq(tlt_ended_of(e, l[1].tid)->end_kind, TL_END_SUCCESS);
  ck_assert(!tlt_ts(e, ts).zombie);
  finish_sized(e, "e1", l[2].tid, MIB);
  ck_assert_int_eq(tlt_ended_of(e, l[2].tid)->end_kind, TL_END_RESULT_TOO_LARGE);
  ck_assert(tlt_ts(e, ts).failed);
  ck_assert_ptr_nonnull(strstr(tlt_last(e, TLT_EV_FAILED)->text, "3 tasks"));
  for (int i = 3; i < 10; i++)
    finish_sized(e, "e1", l[i].tid, MIB);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(shuffle_map_results_are_never_limited) {
  tlt_env *e = result_env(20 * KIB);
  tl_taskset_id ts = submit_flags(e, 0, 10, 0, true, false);
  tl_launch l[10];
  ck_assert_uint_eq(tlt_offer(e, "e1", 10, l, 10), 10);
  for (int i = 0; i < 10; i++)
    finish_sized(e, "e1", l[i].tid, 10 * KIB);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  /* The same results in a result stage pass the 20 KiB limit at the third. */
  ts = tlt_submit(e, 1, 0, 0, 10);
  ck_assert_uint_eq(tlt_offer(e, "e1", 10, l, 10), 10);
  for (int i = 0; i < 10; i++)
    finish_sized(e, "e1", l[i].tid, 10 * KIB);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 1);
  tlt_end(e);
}
END_TEST

START_TEST(no_limit_when_max_result_bytes_is_zero) {
  tlt_env *e = result_env(0);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  finish_sized(e, "e1", l[0].tid, SIZE_MAX / 2);
  ck_assert_int_eq(tlt_ended_of(e, l[0].tid)->end_kind, TL_END_SUCCESS);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Barrier task sets (TSIS barrier slot tests, SPARK-29263, "mark taskset for a barrier stage
 * as zombie in case a task fails")
 * ------------------------------------------------------------------------------------------- */

static tlt_env *barrier_env(int nexec) {
  tlt_env *e = tlt_new(NULL);
  char id[16], host[16]; /* "e" or "h" and an int */
  for (int i = 0; i < nexec; i++) {
    snprintf(id, sizeof id, "e%d", i);
    snprintf(host, sizeof host, "h%d", i);
    tlt_add(e, id, host, NULL, 3);
  }
  return e;
}

START_TEST(a_barrier_set_waits_for_enough_slots) {
  tlt_env *e = barrier_env(3);
  tl_taskset_id ts = submit_flags(e, 0, 3, 2, false, true);
  tl_offer two[2] = {{"e0", 3}, {"e1", 3}};
  tl_launch l[6];
  ck_assert_uint_eq(tlt_offers(e, two, 2, l, 6), 0); /* 2 slots of 2 cores for 3 tasks */
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 3);
  tl_offer three[3] = {{"e0", 3}, {"e1", 3}, {"e2", 3}};
  ck_assert_uint_eq(tlt_offers(e, three, 3, l, 6), 3);
  ck_assert_str_eq(l[0].executor_id, "e0");
  ck_assert_str_eq(l[1].executor_id, "e1");
  ck_assert_str_eq(l[2].executor_id, "e2");
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  tlt_end(e);
}
END_TEST

START_TEST(a_barrier_set_needs_every_slot_in_one_round) {
  tlt_env *e = barrier_env(3);
  /* Duplicate offers of one executor do not make more slots than it has cores. */
  tl_taskset_id ts = submit_flags(e, 0, 3, 2, false, true);
  tl_offer dup[3] = {{"e0", 3}, {"e0", 3}, {"e1", 3}};
  tl_launch l[6];
  ck_assert_uint_eq(tlt_offers(e, dup, 3, l, 6), 0);
  /* The cap counts too: three slots, but room for two launches. */
  tl_offer three[3] = {{"e0", 3}, {"e1", 3}, {"e2", 3}};
  ck_assert_uint_eq(tlt_offers(e, three, 3, l, 2), 0);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 3);
  ck_assert_uint_eq(tlt_offers(e, three, 3, l, 6), 3);
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  tlt_end(e);
}
END_TEST

/* SPARK-29263: a higher-priority one-task set takes a slot first; the barrier set then has two
 * slots for its three tasks and launches nothing. */
START_TEST(a_barrier_set_counts_only_the_slots_left_by_earlier_task_sets) {
  tlt_env *e = barrier_env(3);
  tl_taskset_desc first = {.stage_id = 0, .priority = 0, .ntasks = 1, .cpus_per_task = 2};
  tl_taskset_id one = tlt_submit_desc(e, &first);
  tl_taskset_desc barrier = {
      .stage_id = 1, .priority = 1, .ntasks = 3, .cpus_per_task = 2, .barrier = true};
  tl_taskset_id bar = tlt_submit_desc(e, &barrier);
  tl_offer three[3] = {{"e0", 3}, {"e1", 3}, {"e2", 3}};
  tl_launch l[6];
  ck_assert_uint_eq(tlt_offers(e, three, 3, l, 6), 1);
  ck_assert_uint_eq(l[0].taskset, one);
  ck_assert_uint_eq(tlt_ts(e, bar).pending, 3);
  tlt_succeed(e, l[0].executor_id, l[0].tid);
  ck_assert_uint_eq(tlt_offers(e, three, 3, l, 6), 3);
  ck_assert_uint_eq(l[0].taskset, bar);
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  tlt_end(e);
}
END_TEST

START_TEST(a_failed_barrier_task_makes_the_set_zombie) {
  tlt_env *e = barrier_env(3);
  tl_taskset_id ts = submit_flags(e, 0, 3, 1, false, true);
  tl_offer three[3] = {{"e0", 3}, {"e1", 3}, {"e2", 3}};
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offers(e, three, 3, l, 3), 3);
  tlt_killed(e, l[1].executor_id, l[1].tid); /* even a kill, which never counts */
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert(!st.failed); /* the DAG layer resubmits the stage; nothing is retried here */
  ck_assert_uint_eq(st.pending, 0);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_REVIVE), 1); /* the submission's only */
  tlt_succeed(e, l[0].executor_id, l[0].tid);
  tlt_succeed(e, l[2].executor_id, l[2].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* Spark's handleFailedTask makes a barrier task set zombie before it looks at the failure
 * count, so a barrier failure counts nothing: with max_task_failures 1 a counted failure would
 * abort the set, and task_ended says counts_toward_failures false. The loss of an executor
 * caused by the app counts nothing either. */
START_TEST(a_failed_barrier_task_counts_nothing) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e0", "h0", NULL, 3);
  tlt_add(e, "e1", "h1", NULL, 3);
  tl_taskset_id ts = submit_flags(e, 0, 2, 1, false, true);
  tl_offer two[2] = {{"e0", 3}, {"e1", 3}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, two, 2, l, 2), 2);
  tlt_run(e, l[0].executor_id, l[0].tid);
  tlt_run(e, l[1].executor_id, l[1].tid);
  tlt_fail(e, l[0].executor_id, l[0].tid, TL_END_EXCEPTION);
  ck_assert(!tlt_ended_of(e, l[0].tid)->counts);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert(!st.failed);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  tlt_lose(e, l[1].executor_id, TL_LOSS_EXITED, true);
  ck_assert(!tlt_ended_of(e, l[1].tid)->counts);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Decommissioning (TSIS "test full decommissioning flow")
 * ------------------------------------------------------------------------------------------- */

START_TEST(full_decommissioning_flow) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1; /* a counted failure would fail the set at once */
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tlt_add(e, "executor1", "host1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_offer o[2] = {{"executor0", 1}, {"executor1", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  tlt_run(e, "executor0", l[0].tid);
  tlt_run(e, "executor1", l[1].tid);

  /* executor0 exits (not the app's fault) and only then is decommissioned: it is gone. */
  tlt_lose(e, "executor0", TL_LOSS_EXITED, false);
  TLT_ERR(e, TL_EGONE, tl_executor_decommission(e->s, "executor0", "too late"));
  ck_assert_uint_eq(tlt_ts(e, ts).running, 1);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 1);

  /* executor1 is decommissioned: it keeps its attempt, takes no new one. */
  TLT_OK(e, tl_executor_decommission(e->s, "executor1", "scale down"));
  ck_assert_int_eq(tlt_ex(e, "executor1").state, TL_EXECUTOR_DECOMMISSIONING);
  ck_assert_uint_eq(tlt_offer(e, "executor1", 1, l, 2), 0);
  /* Its loss, even reported as the app's, does not count. */
  tlt_lose(e, "executor1", TL_LOSS_EXITED, true);
  ck_assert(!tlt_ended_of(e, l[1].tid)->counts);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(!st.failed);
  ck_assert_uint_eq(st.running, 0);
  ck_assert_uint_eq(st.pending, 2);

  /* New executors run both indices again. */
  tlt_add(e, "executor2", "host2", NULL, 1);
  tlt_add(e, "executor3", "host3", NULL, 1);
  tl_offer again[2] = {{"executor2", 1}, {"executor3", 1}};
  ck_assert_uint_eq(tlt_offers(e, again, 2, l, 2), 2);
  ck_assert_uint_eq(tlt_ts(e, ts).running, 2);
  tlt_succeed(e, "executor2", l[0].tid);
  tlt_succeed(e, "executor3", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Shuffle-map resubmission (TaskSetManager.executorLost; SPARK-13931 for zombies)
 * ------------------------------------------------------------------------------------------- */

/* Two executors of two cores; a 4-task shuffle-map set with indices 0 and 2 done on e1, 1 done
 * on e2 and 3 running on e2. */
static tl_taskset_id map_stage_three_done(tlt_env *e, tl_launch *l) {
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id ts = submit_flags(e, 0, 4, 0, true, false);
  tl_offer o[2] = {{"e1", 2}, {"e2", 2}};
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 4), 4);
  ck_assert_str_eq(l[0].executor_id, "e1");
  ck_assert_str_eq(l[2].executor_id, "e1");
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(tlt_ts(e, ts).succeeded, 3);
  return ts;
}

START_TEST(lost_map_outputs_run_again) {
  tlt_env *e = tlt_new(NULL);
  tl_launch l[4];
  tl_taskset_id ts = map_stage_three_done(e, l);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  /* Both outputs of e1 come back as RESUBMITTED, in the order they were written. */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  const tlt_event *r0 = tlt_nth(e, mark, TLT_EV_ENDED, 0), *r1 = tlt_nth(e, mark, TLT_EV_ENDED, 1);
  ck_assert_int_eq(r0->end_kind, TL_END_RESUBMITTED);
  ck_assert_uint_eq(r0->task.tid, l[0].tid);
  ck_assert_uint_eq(r0->task.index, 0);
  ck_assert(!r0->counts);
  ck_assert_int_eq(r1->end_kind, TL_END_RESUBMITTED);
  ck_assert_uint_eq(r1->task.index, 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.succeeded, 1);
  ck_assert_uint_eq(st.pending, 2);
  ck_assert_uint_eq(st.running, 1);
  /* They run again, as attempt 1, on the survivor. */
  tl_launch again[2];
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, again, 2), 1);
  ck_assert_uint_eq(again[0].attempt, 1);
  tlt_succeed(e, "e2", again[0].tid);
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, again, 2), 1);
  tlt_succeed(e, "e2", again[0].tid);
  tlt_succeed(e, "e2", l[3].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(map_outputs_are_resubmitted_at_the_second_phase_only) {
  tlt_env *e = tlt_new(NULL);
  tl_launch l[4];
  tl_taskset_id ts = map_stage_three_done(e, l);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 0);
  ck_assert_uint_eq(tlt_ts(e, ts).succeeded, 3);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 2);
  tlt_end(e);
}
END_TEST

/* Outputs of a zombie are the DAG layer's business (SPARK-13931): a superseded attempt and a
 * completed stage resubmit nothing; nor does a result stage. */
START_TEST(zombies_and_result_stages_resubmit_nothing) {
  tlt_env *e = tlt_new(NULL);
  tl_launch l[4];
  tl_taskset_id ts = map_stage_three_done(e, l);
  /* Priority 5: the result stage below goes first, so e3 runs only result tasks. */
  tl_taskset_desc next = {
      .stage_id = 0, .stage_attempt = 1, .priority = 5, .ntasks = 4, .shuffle_map = true};
  tlt_submit_desc(e, &next); /* attempt 0 is zombie now */
  ck_assert(tlt_ts(e, ts).zombie);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 0);

  tl_taskset_id result = submit_flags(e, 1, 2, 0, false, false);
  tlt_add(e, "e3", "h3", NULL, 2);
  tl_offer o[1] = {{"e3", 2}};
  tl_launch r[4];
  size_t n = tlt_offers(e, o, 1, r, 4);
  ck_assert_uint_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_eq(r[i].taskset, result);
    tlt_succeed(e, "e3", r[i].tid);
  }
  mark = tlt_mark(e);
  tlt_lose(e, "e3", TL_LOSS_EXITED, false);
  for (size_t i = 0; i < tlt_count(e, mark, TLT_EV_ENDED); i++)
    ck_assert_int_ne(tlt_nth(e, mark, TLT_EV_ENDED, i)->end_kind, TL_END_RESUBMITTED);
  tlt_end(e);
}
END_TEST

Suite *tl_policy_suite(void) {
  Suite *s = suite_create("policy");
  TCase *tc = tlt_tcase(s, "results");
  tcase_add_test(tc, small_results_under_the_limit_are_taken);
  tcase_add_test(tc, one_result_past_the_limit_aborts_and_is_given_back);
  tcase_add_test(tc, many_results_that_add_up_past_the_limit_abort);
  tcase_add_test(tc, shuffle_map_results_are_never_limited);
  tcase_add_test(tc, no_limit_when_max_result_bytes_is_zero);
  tc = tlt_tcase(s, "barrier");
  tcase_add_test(tc, a_barrier_set_waits_for_enough_slots);
  tcase_add_test(tc, a_barrier_set_needs_every_slot_in_one_round);
  tcase_add_test(tc, a_barrier_set_counts_only_the_slots_left_by_earlier_task_sets);
  tcase_add_test(tc, a_failed_barrier_task_makes_the_set_zombie);
  tcase_add_test(tc, a_failed_barrier_task_counts_nothing);
  tc = tlt_tcase(s, "resubmission");
  tcase_add_test(tc, lost_map_outputs_run_again);
  tcase_add_test(tc, map_outputs_are_resubmitted_at_the_second_phase_only);
  tcase_add_test(tc, zombies_and_result_stages_resubmit_nothing);
  tc = tlt_tcase(s, "decommission");
  tcase_add_test(tc, full_decommissioning_flow);
  return s;
}

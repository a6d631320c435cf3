/* Scenarios ported from Spark's TaskSchedulerImplSuite (TSIS) and TaskSetManagerSuite (TSMS),
 * as listed in section 4 of shared/reference/spark-scheduler.md (items 1, 2, 5-10, 28, 29), with
 * tl_check after every step and the scheduler drained to empty at the end of each.
 */
#include "harness.h"

/* TSIS "if an executor is lost then the state for its running tasks is cleaned up
 * (SPARK-18553)". */
START_TEST(spark_18553_lost_executor_state_is_cleaned_up) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "executor0", 1, l, 1), 1);
  ck_assert_uint_eq(tlt_ex(e, "executor0").running, 1);
  /* ExecutorProcessLost() is caused by the app by default. */
  tlt_lose(e, "executor0", TL_LOSS_PROCESS_LOST, true);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_alive, 0);
  ck_assert_uint_eq(st.hosts, 0); /* host0 has no alive executor */
  ck_assert_uint_eq(st.attempts_running, 0);
  ck_assert_uint_eq(st.attempts_frozen, 0);
  tl_executor_status ex;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "executor0", &ex));
  /* The attempt's state is gone everywhere: its task set runs nothing and a late update from
   * the executor is refused. */
  tl_taskset_status t = tlt_ts(e, ts);
  ck_assert_uint_eq(t.running, 0);
  ck_assert_uint_eq(t.pending, 1);
  const tlt_event *ended = tlt_ended_of(e, l[0].tid);
  ck_assert_ptr_nonnull(ended);
  ck_assert_int_eq(ended->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert(!ended->counts); /* it was still launching */
  tl_update fin = {.state = TL_TASK_FINISHED};
  TLT_UPDATE_ERR(e, TL_EGONE, tl_status_update(e->s, "executor0", l[0].tid, &fin));
  TLT_ERR(e, TL_ESTALE, tl_kill_task(e->s, l[0].tid, false, NULL));
  tlt_end(e);
}
END_TEST

/* TSIS "tasks are not re-scheduled while executor loss reason is pending". */
START_TEST(tasks_are_not_rescheduled_while_executor_loss_reason_is_pending) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tlt_add(e, "executor1", "host0", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "executor0", 1, l, 1), 1);
  tlt_lose(e, "executor0", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(tlt_offer(e, "executor1", 1, l, 1), 0);
  tlt_lose(e, "executor0", TL_LOSS_PROCESS_LOST, true); /* "oops" */
  ck_assert_uint_eq(tlt_offer(e, "executor1", 1, l, 1), 1);
  ck_assert_str_eq(l[0].executor_id, "executor1");
  ck_assert_uint_eq(l[0].index, 0);
  ck_assert_uint_eq(l[0].attempt, 1);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert(!tlt_ts(e, ts).failed);
  tlt_succeed(e, "executor1", l[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* TSIS "SPARK-39955: executor lost could fail task set if task is running" and "... should not
 * fail task set if task is launching". */
static void spark_39955(bool running) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "executor0", 1, l, 1), 1);
  ck_assert_uint_eq(tlt_ex(e, "executor0").running, 1);
  if (running)
    tlt_run(e, "executor0", l[0].tid);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "executor0", TL_LOSS_PROCESS_LOST, true);
  const tlt_event *ended = tlt_ended_of(e, l[0].tid);
  ck_assert_int_eq(ended->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert_int_eq(ended->counts, running);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), running ? 1 : 0);
  if (running) {
    /* Zombie with nothing running: released. */
    ck_assert_uint_eq(tlt_released(e, ts), 1);
  } else {
    tl_taskset_status st = tlt_ts(e, ts);
    ck_assert(!st.zombie);
    ck_assert_uint_eq(st.pending, 1);
  }
  tlt_end(e);
}

START_TEST(spark_39955_executor_lost_fails_the_set_if_the_task_is_running) { spark_39955(true); }
END_TEST

START_TEST(spark_39955_executor_lost_does_not_fail_the_set_if_the_task_is_launching) {
  spark_39955(false);
}
END_TEST

/* TSIS "concurrent attempts for the same stage only have one active taskset". Each attempt runs
 * a task so the older ones stay, as zombies, to be looked at. */
START_TEST(concurrent_attempts_for_the_same_stage_only_have_one_active_taskset) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 3);
  tl_taskset_id ids[3];
  tl_launch l[3];
  for (uint32_t a = 0; a < 3; a++) {
    ids[a] = tlt_submit(e, 0, a, 0, 2);
    for (uint32_t b = 0; b <= a; b++) {
      tl_taskset_status st = tlt_ts(e, ids[b]);
      ck_assert_msg(st.zombie == (b != a), "attempt %u zombie=%d after submitting %u", b, st.zombie,
                    a);
    }
    ck_assert_uint_eq(tlt_stats(e).tasksets_active, 1);
    ck_assert_uint_eq(tlt_stats(e).tasksets_zombie, a);
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, l + a, 1), 1);
    ck_assert_uint_eq(l[a].taskset, ids[a]);
    ck_assert_uint_eq(l[a].stage_attempt, a);
  }
  for (int a = 0; a < 3; a++)
    tlt_succeed(e, "e1", l[a].tid);
  ck_assert_uint_eq(tlt_released(e, ids[0]), 1);
  ck_assert_uint_eq(tlt_released(e, ids[1]), 1);
  ck_assert_uint_eq(tlt_released(e, ids[2]), 0);
  tlt_end(e);
}
END_TEST

/* TSIS "don't schedule more tasks after a taskset is zombie". A fetch failure makes the
 * attempt zombie while one of its tasks still runs. */
START_TEST(dont_schedule_more_tasks_after_a_taskset_is_zombie) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 2);
  tl_taskset_id a0 = tlt_submit(e, 0, 0, 0, 10);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "executor0", 1, l, 2), 1);
  ck_assert_uint_eq(tlt_offer(e, "executor0", 1, l + 1, 1), 1);
  tlt_fail(e, "executor0", l[0].tid, TL_END_FETCH_FAILED);
  ck_assert(tlt_ts(e, a0).zombie);
  tl_launch m[2];
  ck_assert_uint_eq(tlt_offer(e, "executor0", 1, m, 2), 0);
  tl_taskset_id a1 = tlt_submit(e, 0, 1, 0, 10);
  ck_assert_uint_eq(tlt_offer(e, "executor0", 1, m, 2), 1);
  ck_assert_uint_eq(m[0].taskset, a1);
  ck_assert_uint_eq(m[0].stage_attempt, 1);
  tlt_succeed(e, "executor0", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, a0), 1);
  tlt_end(e);
}
END_TEST

/* TSIS "if a zombie attempt finishes, continue scheduling tasks for non-zombie attempts". */
START_TEST(if_a_zombie_attempt_finishes_continue_scheduling_non_zombie_attempts) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 10);
  tl_taskset_id a0 = tlt_submit(e, 0, 0, 0, 10);
  tl_launch l[10];
  ck_assert_uint_eq(tlt_offer(e, "executor0", 10, l, 10), 10);
  tl_taskset_id a1 = tlt_submit(e, 0, 1, 0, 10);
  ck_assert(tlt_ts(e, a0).zombie);
  ck_assert_uint_eq(tlt_ts(e, a0).pending, 0);
  tl_launch m[10];
  ck_assert_uint_eq(tlt_offer(e, "executor0", 10, m, 10), 0);
  /* The zombie's attempts finish and their results are delivered; then it is released. */
  for (int i = 0; i < 10; i++) {
    tlt_succeed(e, "executor0", l[i].tid);
    ck_assert_int_eq(tlt_ended_of(e, l[i].tid)->end_kind, TL_END_SUCCESS);
  }
  ck_assert_uint_eq(tlt_released(e, a0), 1);
  ck_assert_uint_eq(tlt_offer(e, "executor0", 10, m, 10), 10);
  for (int i = 0; i < 10; i++) {
    ck_assert_uint_eq(m[i].taskset, a1);
    ck_assert_uint_eq(m[i].stage_attempt, 1);
  }
  tlt_end(e);
}
END_TEST

/* TSIS "cancelTasks shall kill all the running tasks and fail the stage": the kill_task
 * callback reports each attempt KILLED at once, as an executor would. */
START_TEST(cancel_tasks_kills_all_running_tasks_and_fails_the_stage) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tlt_add(e, "executor1", "host1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 10);
  tl_offer o[2] = {{"executor0", 1}, {"executor1", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  ck_assert_uint_eq(tlt_ts(e, ts).running, 2);
  e->auto_kill = true;
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "cancelled by the user"));
  e->auto_kill = false;
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  for (int i = 0; i < 2; i++) {
    const tlt_event *ev = tlt_ended_of(e, l[i].tid);
    ck_assert_int_eq(ev->end_kind, TL_END_KILLED);
    ck_assert(!ev->counts);
    ck_assert(!tlt_nth(e, mark, TLT_EV_KILL, (size_t)i)->interrupt);
  }
  /* Released last, once nothing of it runs. */
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(e->ev[e->nev - 1].type, TLT_EV_RELEASED);
  ck_assert_uint_lt(tlt_nth(e, mark, TLT_EV_FAILED, 0) - e->ev, e->nev - 1);
  tl_taskset_status st;
  TLT_ERR(e, TL_ENOENT, tl_taskset_get(e->s, ts, &st));
  tl_stats s = tlt_stats(e);
  ck_assert_uint_eq(s.attempts_running, 0);
  ck_assert_uint_eq(s.killed, 2);
  ck_assert_uint_eq(s.tasksets_zombie, 0);
  tlt_end(e);
}
END_TEST

/* The same, with the test (not the callback) reporting the KILLED updates, to observe the
 * zombie state in between. */
START_TEST(cancel_tasks_leaves_a_zombie_until_the_kills_are_reported) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tlt_add(e, "executor1", "host1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 10);
  tl_offer o[2] = {{"executor0", 1}, {"executor1", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  TLT_OK(e, tl_cancel_stage(e->s, 0, NULL));
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert(st.failed);
  ck_assert_uint_eq(st.running, 2);
  ck_assert_uint_eq(st.pending, 0);
  ck_assert_uint_eq(tlt_offers(e, o, 2, l + 0, 0), 0);
  tlt_killed(e, "executor0", l[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 0);
  tlt_killed(e, "executor1", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 0);
  tlt_end(e);
}
END_TEST

/* TSIS "killAllTaskAttempts shall kill all the running tasks and not fail the stage" (3.x
 * semantics, as tl_kill_stage documents). */
START_TEST(kill_all_task_attempts_kills_running_tasks_and_does_not_fail_the_stage) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "executor0", "host0", NULL, 1);
  tlt_add(e, "executor1", "host1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 10);
  tl_offer o[2] = {{"executor0", 1}, {"executor1", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_kill_stage(e->s, 0, true, "kill all"));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  for (size_t i = 0; i < 2; i++)
    ck_assert(tlt_nth(e, mark, TLT_EV_KILL, i)->interrupt);
  tlt_killed(e, "executor0", l[0].tid);
  tlt_killed(e, "executor1", l[1].tid);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.running, 0);
  ck_assert(!st.zombie);
  ck_assert(!st.failed);
  ck_assert_uint_eq(st.pending, 10);
  ck_assert_uint_eq(tlt_released(e, ts), 0);
  /* Killed tasks are retried. */
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_le(l[i].index, 1);
    ck_assert_uint_eq(l[i].attempt, 1);
  }
  tlt_end(e);
}
END_TEST

/* TSMS "Executors exit for reason unrelated to currently running tasks", with a task placed on
 * the executor that exits for an unrelated reason (as section 4 item 28 asks). */
START_TEST(executors_exit_for_reason_unrelated_to_currently_running_tasks) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "execA", "host1", NULL, 1);
  tlt_add(e, "execB", "host1", NULL, 1);
  tlt_add(e, "execC", "host2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_launch a[1], b[1], c[1];
  ck_assert_uint_eq(tlt_offer(e, "execA", 1, a, 1), 1);
  tlt_run(e, "execA", a[0].tid);
  /* ExecutorExited(143, exitCausedByApp = false): preempted. */
  tl_loss_reason preempted = {.kind = TL_LOSS_EXITED, .caused_by_app = false, .exit_code = 143};
  TLT_OK(e, tl_executor_lost(e->s, "execA", &preempted));
  const tlt_event *ev = tlt_ended_of(e, a[0].tid);
  ck_assert_int_eq(ev->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert(!ev->counts);
  ck_assert(!tlt_ts(e, ts).failed);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_offer(e, "execB", 1, b, 1), 1);
  ck_assert_uint_eq(b[0].index, a[0].index); /* the failed index goes first */
  ck_assert_uint_eq(b[0].attempt, 1);
  ck_assert_uint_eq(tlt_offer(e, "execC", 1, c, 1), 1);
  tlt_run(e, "execC", c[0].tid);
  /* ExecutorExited(1, exitCausedByApp = true): one counting failure = max_task_failures. */
  size_t mark = tlt_mark(e);
  tl_loss_reason crashed = {.kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 1};
  TLT_OK(e, tl_executor_lost(e->s, "execC", &crashed));
  ck_assert(tlt_ended_of(e, c[0].tid)->counts);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 1);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.failed);
  ck_assert(st.zombie);
  ck_assert_uint_eq(st.running, 1); /* execB's attempt runs on */
  tlt_succeed(e, "execB", b[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* TSMS "task result lost" and "repeated failures lead to task set abortion". */
START_TEST(repeated_failures_lead_to_task_set_abortion) {
  tlt_env *e = tlt_new(NULL); /* max_task_failures 4 */
  tlt_add(e, "exec1", "host1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  for (uint32_t i = 0; i < 4; i++) {
    tl_launch l[1];
    ck_assert_uint_eq(tlt_offer(e, "exec1", 1, l, 1), 1);
    ck_assert_uint_eq(l[0].index, 0);
    ck_assert_uint_eq(l[0].attempt, i);
    tlt_run(e, "exec1", l[0].tid);
    size_t mark = tlt_mark(e);
    tlt_fail(e, "exec1", l[0].tid, i == 0 ? TL_END_RESULT_LOST : TL_END_EXCEPTION);
    const tlt_event *ev = tlt_ended_of(e, l[0].tid);
    ck_assert_int_eq(ev->end_kind, i == 0 ? TL_END_RESULT_LOST : TL_END_EXCEPTION);
    ck_assert(ev->counts);
    if (i < 3) {
      ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
      tl_taskset_status st = tlt_ts(e, ts);
      ck_assert(!st.zombie);
      ck_assert_uint_eq(st.pending, 1);
    } else {
      ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 1);
      ck_assert_uint_eq(tlt_released(e, ts), 1);
      const tlt_event *f = tlt_last(e, TLT_EV_FAILED);
      ck_assert_uint_eq(f->ts.id, ts);
    }
  }
  ck_assert_uint_eq(tlt_stats(e).failed, 4);
  tlt_end(e);
}
END_TEST

/* Failures of different indices do not add up. */
START_TEST(failures_are_counted_per_index) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 2;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "exec1", "host1", NULL, 3);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "exec1", 3, l, 3), 3);
  for (int i = 0; i < 3; i++)
    tlt_fail(e, "exec1", l[i].tid, TL_END_EXCEPTION);
  ck_assert(!tlt_ts(e, ts).failed);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 3);
  tlt_end(e);
}
END_TEST

Suite *tl_spark_suite(void) {
  Suite *s = suite_create("spark");
  TCase *tc = tlt_tcase(s, "TaskSchedulerImplSuite");
  tcase_add_test(tc, spark_18553_lost_executor_state_is_cleaned_up);
  tcase_add_test(tc, tasks_are_not_rescheduled_while_executor_loss_reason_is_pending);
  tcase_add_test(tc, spark_39955_executor_lost_fails_the_set_if_the_task_is_running);
  tcase_add_test(tc, spark_39955_executor_lost_does_not_fail_the_set_if_the_task_is_launching);
  tcase_add_test(tc, concurrent_attempts_for_the_same_stage_only_have_one_active_taskset);
  tcase_add_test(tc, dont_schedule_more_tasks_after_a_taskset_is_zombie);
  tcase_add_test(tc, if_a_zombie_attempt_finishes_continue_scheduling_non_zombie_attempts);
  tcase_add_test(tc, cancel_tasks_kills_all_running_tasks_and_fails_the_stage);
  tcase_add_test(tc, cancel_tasks_leaves_a_zombie_until_the_kills_are_reported);
  tcase_add_test(tc, kill_all_task_attempts_kills_running_tasks_and_does_not_fail_the_stage);
  tc = tlt_tcase(s, "TaskSetManagerSuite");
  tcase_add_test(tc, executors_exit_for_reason_unrelated_to_currently_running_tasks);
  tcase_add_test(tc, repeated_failures_lead_to_task_set_abortion);
  tcase_add_test(tc, failures_are_counted_per_index);
  return s;
}

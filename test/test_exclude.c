/* Exclude on failure: per-task-set exclusion of indices, executors and nodes (Spark's
 * TaskSetExcludelist), application-level exclusion and its expiry (HealthTracker), and the
 * abort of task sets no executor may run (SPARK-22148); the TaskSchedulerImplSuite and
 * TaskSetManagerSuite scenarios, with real failures instead of Spark's mocks.
 */
#include "harness.h"

static tl_config exclude_config(void) {
  tl_config cfg = tlt_config();
  cfg.exclude_on_failure = true;
  return cfg;
}

static tlt_env *exclude_env(void) {
  tl_config cfg = exclude_config();
  return tlt_new(&cfg);
}

static const char *explain(tlt_env *e, tl_taskset_id id) {
  static char buf[4096];
  ck_assert_int_eq(tl_explain_taskset(e->s, id, buf, sizeof buf), TL_OK);
  return buf;
}

/* One offer of one core on exec; the launch it made (asserted to be one) in *l. */
static void launch_one(tlt_env *e, const char *exec, tl_launch *l) {
  ck_assert_uint_eq(tlt_offer(e, exec, 1, l, 1), 1);
}

static const tlt_event *last_failed(tlt_env *e) {
  const tlt_event *ev = tlt_last(e, TLT_EV_FAILED);
  ck_assert_ptr_nonnull(ev);
  return ev;
}

/* TSIS "scheduled tasks obey task and stage excludelist", with the exclusions made by failures:
 * stage 0 excluded on host h1 (both its executors failed two indices) and index 0 excluded on
 * e0; stage 1 excluded on e3; stage 2 free. All six tasks launch where they may; stages 0 and 1
 * succeed and their failures move to the application level, stage 2 fails and its do not. */
START_TEST(scheduled_tasks_obey_task_and_stage_exclusion) {
  tlt_env *e = exclude_env();
  tlt_add(e, "e0", "h0", NULL, 1);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h1", NULL, 1);
  tlt_add(e, "e3", "h2", NULL, 10);
  tl_launch l[10];

  /* Stage 1 (job 1) alone first: both its indices fail on e3, which excludes e3 for it. */
  tl_taskset_id ts1 = tlt_submit(e, 1, 0, 1, 2);
  ck_assert_uint_eq(tlt_offer(e, "e3", 2, l, 2), 2);
  tlt_fail(e, "e3", l[0].tid, TL_END_EXCEPTION);
  tlt_fail(e, "e3", l[1].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_stats(e).tasksets_with_failures, 1);
  ck_assert_uint_eq(tlt_offer(e, "e3", 2, l, 2), 0); /* excluded for the whole task set */
  ck_assert_ptr_nonnull(strstr(explain(e, ts1), "executor e3 on h2: 2 indices failed, excluded"));

  /* Stage 0 (job 0) goes first in every round: both indices fail on e1, then on e2. */
  tl_taskset_id ts0 = tlt_submit(e, 0, 0, 0, 2);
  for (int k = 0; k < 2; k++) {
    launch_one(e, "e1", l);
    ck_assert_uint_eq(l[0].stage_id, 0);
    tlt_fail(e, "e1", l[0].tid, TL_END_RESULT_LOST);
  }
  for (int k = 0; k < 2; k++) {
    launch_one(e, "e2", l);
    ck_assert_uint_eq(l[0].stage_id, 0);
    tlt_fail(e, "e2", l[0].tid, TL_END_RESULT_LOST);
  }
  ck_assert_ptr_nonnull(strstr(explain(e, ts0), "host h1: excluded for the task set"));
  /* e0 runs both of stage 0's indices; index 0 fails there, index 1 is killed (no count). */
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, l, 2), 1); /* e0 has one core */
  tl_launch first = l[0];
  ck_assert_uint_eq(tlt_offer(e, "e3", 1, l + 1, 1), 1); /* stage 0 may still run on e3 */
  tl_launch second = l[1];
  ck_assert_uint_eq(second.stage_id, 0);
  const tl_launch *zero = first.index == 0 ? &first : &second;
  const tl_launch *one = first.index == 0 ? &second : &first;
  tlt_fail(e, zero->executor_id, zero->tid, TL_END_EXCEPTION);
  tlt_killed(e, one->executor_id, one->tid);
  tl_taskset_id ts2 = tlt_submit(e, 2, 0, 2, 2);

  /* The round of the Spark test. */
  tl_offer offers[] = {{"e0", 1}, {"e1", 1}, {"e2", 1}, {"e3", 10}};
  size_t n = tlt_offers(e, offers, 4, l, 10);
  ck_assert_uint_eq(n, 6);
  tl_launch stage2[2];
  size_t n2 = 0;
  for (size_t i = 0; i < n; i++) {
    if (l[i].stage_id == 0 && l[i].index == 0)
      ck_assert_str_eq(l[i].executor_id, "e3"); /* e0 excluded for it, h1 for the stage */
    if (l[i].stage_id == 0 && l[i].index == 1)
      ck_assert(strcmp(l[i].executor_id, "e0") == 0 || strcmp(l[i].executor_id, "e3") == 0);
    if (l[i].stage_id == 1)
      ck_assert_str_ne(l[i].executor_id, "e3");
    if (l[i].stage_id == 2)
      stage2[n2++] = l[i];
  }
  ck_assert_uint_eq(n2, 2);

  /* Stages 0 and 1 succeed. */
  for (size_t i = 0; i < n; i++)
    if (l[i].stage_id != 2)
      tlt_succeed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(tlt_released(e, ts0), 1);
  ck_assert_uint_eq(tlt_released(e, ts1), 1);
  /* e1, e2 (two failures each in stage 0) and e3 (two in stage 1) are excluded for the
   * application, and h1 with its two; e0 (one failure) is not. */
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_excluded, 3);
  ck_assert_uint_eq(st.nodes_excluded, 1);

  /* Stage 2 fails one task four times (on new executors: one failure excludes an index from an
   * executor), then its other task ends: nothing of it reaches the application level. */
  tl_launch t = stage2[0];
  const char *more[] = {"e4", "e5", "e6", "e7"};
  const char *hosts[] = {"h4", "h5", "h6", "h7"};
  for (int k = 0; k < 4; k++) {
    tlt_fail(e, t.executor_id, t.tid, TL_END_RESULT_LOST);
    tlt_add(e, more[k], hosts[k], NULL, 1);
    if (k < 3) {
      launch_one(e, more[k], &t);
      ck_assert_uint_eq(t.index, stage2[0].index);
      ck_assert_uint_eq(t.attempt, (uint32_t)k + 1);
    } else {
      ck_assert_uint_eq(tlt_offer(e, more[k], 1, l, 1), 0);
    }
  }
  ck_assert(tlt_ts(e, ts2).failed);
  tlt_succeed(e, stage2[1].executor_id, stage2[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts2), 1);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_excluded, 3);
  ck_assert_uint_eq(st.tasksets_with_failures, 0);
  tlt_end(e);
}
END_TEST

/* TSIS "abort stage if executor loss results in unschedulability from previously failed
 * tasks": index 0 fails on e0 (may still run on e1), then e1 is lost; index 1 runs on e0, and
 * the next round finds index 0 unschedulable with every executor busy: abort now, naming it. */
START_TEST(abort_if_executor_loss_leaves_a_failed_task_nowhere_to_run) {
  tlt_env *e = exclude_env();
  tlt_add(e, "e0", "h0", NULL, 1);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  tl_offer both[] = {{"e0", 1}, {"e1", 1}};
  ck_assert_uint_eq(tlt_offers(e, both, 2, l, 2), 2);
  const tl_launch *on0 = strcmp(l[0].executor_id, "e0") == 0 ? &l[0] : &l[1];
  uint32_t failed_index = on0->index;
  tl_update u = {.state = TL_TASK_FAILED, .failure = TL_END_RESULT_LOST, .message = "lost it"};
  TLT_OK(e, tl_status_update(e->s, "e0", on0->tid, &u));
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);

  tlt_lose(e, "e1", TL_LOSS_PROCESS_LOST, true); /* its attempt was launching: no count */
  tl_launch next;
  launch_one(e, "e0", &next);
  ck_assert_uint_ne(next.index, failed_index);
  ck_assert_uint_eq(next.attempt, 1);
  ck_assert(!tlt_ts(e, ts).zombie);

  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, l, 1), 0);
  ck_assert(tlt_ts(e, ts).zombie);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 1);
  char want[128];
  snprintf(want, sizeof want, "task %u cannot run anywhere", failed_index);
  ck_assert_ptr_nonnull(strstr(last_failed(e)->text, want));
  ck_assert_ptr_nonnull(strstr(last_failed(e)->text, "most recent failure: lost it"));
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable_aborted, 1);
  tlt_succeed(e, "e0", next.tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 0); /* a failed task set promotes nothing */
  tlt_end(e);
}
END_TEST

/* TSIS "don't abort if there is an executor available, though it hasn't had scheduled tasks
 * yet" (SPARK-15865 with SPARK-16106): both tasks ran and failed on e0, which is excluded for
 * the task set; e1 never ran anything but may: no abort, no deadline. */
START_TEST(no_abort_while_an_unused_executor_may_run_the_task) {
  tlt_env *e = exclude_env();
  tlt_add(e, "e0", "h0", NULL, 4);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e0", 4, l, 4), 2);
  tlt_fail(e, "e0", l[0].tid, TL_END_RESULT_LOST);
  tlt_fail(e, "e0", l[1].tid, TL_END_RESULT_LOST);
  ck_assert_uint_eq(tlt_offer(e, "e0", 4, l, 4), 0);
  ck_assert(!tlt_ts(e, ts).zombie);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 2);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  /* The task set succeeded: e0's two failures exclude it for the application. */
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 1);
  tlt_end(e);
}
END_TEST

/* The single task of a task set fails on the only executor, which then offers again. */
static tl_taskset_id one_task_excluded_on_e0(tlt_env *e) {
  tlt_add(e, "e0", "h0", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l;
  launch_one(e, "e0", &l);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  return ts;
}

/* TSIS "SPARK-22148 abort timer should kick in when task is completely excluded & no new
 * executor can be acquired": with unschedulable_timeout_ns 0 the next tick aborts. */
START_TEST(unschedulable_abort_at_zero_timeout) {
  tl_config cfg = exclude_config();
  cfg.unschedulable_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tl_taskset_id ts = one_task_excluded_on_e0(e);
  ck_assert(!tlt_ts(e, ts).zombie); /* e0 is idle: a deadline, not an abort */
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 1);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), e->cfg.heartbeat_timeout_ns);
  ck_assert_uint_eq(last_failed(e)->ts.id, ts); /* aborted and, nothing running, released */
  ck_assert_ptr_nonnull(strstr(last_failed(e)->text, "task 0 cannot run anywhere"));
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* The deadline: unschedulable_timeout_ns after the round, counted by tl_tick's answer. */
START_TEST(unschedulable_abort_when_the_deadline_passes) {
  tl_config cfg = exclude_config();
  cfg.unschedulable_timeout_ns = 10 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tl_taskset_id ts = one_task_excluded_on_e0(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), 10 * TLT_SEC);
  ck_assert_ptr_nonnull(strstr(explain(e, ts), "unschedulable: no live executor may run task 0"));
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, NULL, 0), 0); /* a second round keeps the deadline */
  ck_assert_uint_eq(tlt_advance_tick(e, 4 * TLT_SEC), 6 * TLT_SEC);
  ck_assert(!tlt_ts(e, ts).zombie);
  tlt_advance_tick(e, 6 * TLT_SEC);
  ck_assert_uint_eq(last_failed(e)->ts.id, ts);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  tlt_end(e);
}
END_TEST

/* TSIS "SPARK-22148 try to acquire a new executor when task is unschedulable with 1 executor":
 * a deadline starts; a new executor clears it and runs the task. */
START_TEST(unschedulable_then_a_new_executor) {
  tlt_env *e = exclude_env();
  tl_taskset_id ts = one_task_excluded_on_e0(e);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 1);
  ck_assert(!tlt_ts(e, ts).zombie);
  tlt_add(e, "e1", "h0", NULL, 1);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  tl_launch l;
  launch_one(e, "e1", &l);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  ck_assert(!tlt_ts(e, ts).zombie);
  tlt_succeed(e, "e1", l.tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* TSIS "SPARK-22148 abort timer should clear unschedulableTaskSetToExpiryTime for all
 * TaskSets": two task sets each excluded on e0 get deadlines; a launch of a third one clears
 * both; a new executor then runs the first. */
START_TEST(a_launch_clears_every_unschedulable_deadline) {
  tlt_env *e = exclude_env();
  tlt_add(e, "e0", "h0", NULL, 1);
  tl_taskset_id ts1 = tlt_submit(e, 0, 0, 0, 1);
  tl_taskset_id ts2 = tlt_submit(e, 1, 0, 0, 1);
  tl_launch l;
  launch_one(e, "e0", &l);
  ck_assert_uint_eq(l.taskset, ts1);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  /* ts2 launches (ts1 may not run on e0): no deadline for ts1. */
  launch_one(e, "e0", &l);
  ck_assert_uint_eq(l.taskset, ts2);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 2);

  tl_taskset_id ts3 = tlt_submit(e, 2, 0, 0, 1);
  launch_one(e, "e0", &l);
  ck_assert_uint_eq(l.taskset, ts3);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  tlt_succeed(e, "e0", l.tid);

  tlt_add(e, "e1", "h1", NULL, 1);
  launch_one(e, "e1", &l);
  ck_assert_uint_eq(l.taskset, ts1);
  ck_assert(!tlt_ts(e, ts1).zombie && !tlt_ts(e, ts2).zombie);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  tlt_end(e);
}
END_TEST

/* TSMS "don't update excludelist for shuffle-fetch failures, preemption, denied commits, or
 * killed tasks", and the other failures that do not count: a decommissioned executor's loss, a
 * losing speculative copy. None of them makes an exclusion record; a counted one does. */
START_TEST(failures_that_do_not_count_exclude_nothing) {
  tl_config cfg = exclude_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.5;
  cfg.speculation_multiplier = 1.0;
  cfg.speculation_min_runtime_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e0", "h0", NULL, 8);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 6);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);     /* index 0: preempted */
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, l + 1, 1), 1); /* index 1: decommissioned */
  ck_assert_uint_eq(tlt_offer(e, "e0", 8, l + 2, 8), 4); /* indices 2-5 */
  for (int i = 0; i < 6; i++)
    tlt_run(e, l[i].executor_id, l[i].tid);
  tlt_killed(e, "e0", l[2].tid);
  tlt_fail(e, "e0", l[3].tid, TL_END_COMMIT_DENIED);
  tlt_fail(e, "e0", l[4].tid, TL_END_KILLED);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  TLT_OK(e, tl_executor_decommission(e->s, "e2", "scale down"));
  tlt_lose(e, "e2", TL_LOSS_PROCESS_LOST, true);
  ck_assert_uint_eq(tlt_stats(e).tasksets_with_failures, 0);
  ck_assert_ptr_null(strstr(explain(e, ts), "exclusions"));

  /* A losing speculative copy: index 5 runs long, gets a copy once half the tasks are done. */
  tl_launch r[8];
  ck_assert_uint_eq(tlt_offer(e, "e0", 8, r, 8), 5);
  for (int i = 0; i < 5; i++)
    tlt_succeed(e, "e0", r[i].tid);
  tlt_add(e, "e3", "h3", NULL, 1);
  tlt_advance_tick(e, cfg.speculation_interval_ns);
  tl_launch copy;
  launch_one(e, "e3", &copy);
  ck_assert(copy.speculative);
  tlt_succeed(e, "e3", copy.tid); /* the copy wins; the original is asked to die */
  tlt_fail(e, "e0", l[5].tid, TL_END_EXCEPTION);
  ck_assert(!tlt_ended_of(e, l[5].tid)->counts);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 0);

  /* A fetch failure makes the task set zombie and counts nothing. */
  tl_taskset_id ts2 = tlt_submit(e, 1, 0, 0, 2);
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, l, 2), 2);
  tlt_fail(e, "e0", l[0].tid, TL_END_FETCH_FAILED);
  ck_assert_uint_eq(tlt_stats(e).tasksets_with_failures, 0);
  /* The control: a counted failure makes a record. */
  tlt_fail(e, "e0", l[1].tid, TL_END_EXCEPTION); /* zombie: does not count either */
  ck_assert_uint_eq(tlt_stats(e).tasksets_with_failures, 0);
  ck_assert_uint_eq(tlt_released(e, ts2), 1);
  tl_taskset_id ts3 = tlt_submit(e, 2, 0, 0, 1);
  launch_one(e, "e0", l);
  tlt_fail(e, "e0", l[0].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_stats(e).tasksets_with_failures, 1);
  ck_assert_ptr_nonnull(strstr(explain(e, ts3), "executor e0 on h0: 1 indices failed; excluded "
                                                "for index 0"));
  tlt_end(e);
}
END_TEST

/* Application level: two executors of h0 each fail two indices of a task set that then
 * succeeds: both are excluded for the application, and h0 with them (new executors there
 * too); offers from them launch nothing until exclude_timeout_ns has passed, which tl_tick's
 * answer counts down to. A lost excluded executor stays counted until then. */
START_TEST(application_exclusion_and_its_expiry) {
  tl_config cfg = exclude_config();
  cfg.heartbeat_timeout_ns = 0;
  cfg.exclude_timeout_ns = 60 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e0", "h0", NULL, 2);
  tlt_add(e, "e1", "h0", NULL, 2);
  tlt_add(e, "e2", "h1", NULL, 4);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, l, 2), 2);
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l + 2, 2), 2);
  for (int i = 0; i < 4; i++)
    tlt_fail(e, l[i].executor_id, l[i].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, NULL, 0), 0);
  ck_assert_uint_eq(tlt_offer(e, "e2", 4, l, 4), 4);
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 0);
  e->now += 5 * TLT_SEC;
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "e2", l[i].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_excluded, 2);
  ck_assert_uint_eq(st.nodes_excluded, 1);
  ck_assert_uint_eq(st.tasksets_with_failures, 0);

  /* Offers from h0 launch nothing; they are counted. */
  tl_taskset_id ts1 = tlt_submit(e, 1, 0, 0, 2);
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, l, 2), 0);
  tlt_add(e, "e3", "h0", NULL, 2);
  ck_assert_uint_eq(tlt_offer(e, "e3", 2, l, 2), 0);
  ck_assert_uint_eq(tlt_stats(e).excluded_offers, 2);
  ck_assert(!tlt_ts(e, ts1).zombie); /* e2 may run it: not unschedulable */
  tlt_lose(e, "e1", TL_LOSS_KILLED, false);
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 2);

  ck_assert_uint_eq(tlt_advance_tick(e, 59 * TLT_SEC), TLT_SEC);
  ck_assert_uint_eq(tlt_offer(e, "e0", 2, l, 2), 0);
  tlt_advance_tick(e, TLT_SEC);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_excluded, 0);
  ck_assert_uint_eq(st.nodes_excluded, 0);
  ck_assert_uint_eq(tlt_offer(e, "e3", 2, l, 2), 2);
  for (int i = 0; i < 2; i++)
    tlt_succeed(e, "e3", l[i].tid);
  tlt_end(e);
}
END_TEST

/* Three successful one-task stages, each failing once on e0 before it succeeds on e1 (60 s
 * exclude_timeout_ns); gap passes after the first. Returns executors_excluded after the second
 * stage; the caller reads it after the third. */
static size_t three_stages_failing_on_e0(tlt_env *e, uint64_t gap) {
  size_t after_second = 0;
  tlt_add(e, "e0", "h0", NULL, 1);
  tlt_add(e, "e1", "h1", NULL, 1);
  for (uint32_t stage = 0; stage < 3; stage++) {
    tlt_submit(e, stage, 0, 0, 1);
    tl_launch l;
    launch_one(e, "e0", &l);
    tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
    launch_one(e, "e1", &l);
    tlt_succeed(e, "e1", l.tid);
    if (stage == 0)
      e->now += gap;
    if (stage == 1)
      after_second = tlt_stats(e).executors_excluded;
  }
  return after_second;
}

static tlt_env *sixty_second_env(void) {
  tl_config cfg = exclude_config();
  cfg.heartbeat_timeout_ns = 0;
  cfg.exclude_timeout_ns = 60 * TLT_SEC;
  return tlt_new(&cfg);
}

/* Failures of successful task sets add up per executor while they are younger than
 * exclude_timeout_ns: one in each of two task sets excludes; one that expired does not count. */
START_TEST(application_failures_add_up_and_expire) {
  tlt_env *e = sixty_second_env();
  three_stages_failing_on_e0(e, 61 * TLT_SEC); /* the first expires before the second comes */
  /* Stage 0's failure expired; stages 1 and 2 made two. */
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 1);
  ck_assert_uint_eq(tlt_stats(e).nodes_excluded, 0);
  tlt_end(e);
}
END_TEST

/* Configuration: thresholds are checked only with exclusion on. */
START_TEST(exclusion_config_is_validated) {
  tl_config cfg = exclude_config();
  tl_scheduler *s = NULL;
  cfg.exclude_max_task_attempts_per_node = cfg.max_task_failures;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  cfg = exclude_config();
  cfg.exclude_timeout_ns = 0;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  cfg = exclude_config();
  cfg.exclude_app_max_failed_executors_per_node = 0;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  cfg.exclude_on_failure = false;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_OK);
  ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
  tl_config_init(&cfg);
  ck_assert(!cfg.exclude_on_failure);
  ck_assert_uint_eq(cfg.exclude_max_task_attempts_per_executor, 1);
  ck_assert_uint_eq(cfg.exclude_max_task_attempts_per_node, 2);
  ck_assert_uint_eq(cfg.exclude_stage_max_failed_tasks_per_executor, 2);
  ck_assert_uint_eq(cfg.exclude_stage_max_failed_executors_per_node, 2);
  ck_assert_uint_eq(cfg.exclude_app_max_failed_tasks_per_executor, 2);
  ck_assert_uint_eq(cfg.exclude_app_max_failed_executors_per_node, 2);
  ck_assert_uint_eq(cfg.exclude_timeout_ns, 3600 * TLT_SEC);
  ck_assert_uint_eq(cfg.unschedulable_timeout_ns, 120 * TLT_SEC);
}
END_TEST

/* An application-level failure ends when the time reaches its expiry, as every deadline does
 * (it was kept until the time passed it; found by the randomized model). */
START_TEST(an_application_failure_ends_when_its_expiry_comes) {
  tlt_env *e = sixty_second_env();
  /* Exactly 60 s: stage 0's failure ends as stage 1's comes. */
  ck_assert_uint_eq(three_stages_failing_on_e0(e, 60 * TLT_SEC), 0);
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 1); /* stages 1 and 2 */
  tlt_end(e);
}
END_TEST

/* A round that names every ALIVE executor is a full offer for delay scheduling's timer, also
 * when one of them is excluded for the application and launches nothing (found by the
 * randomized model: such a round was never full). */
START_TEST(a_round_naming_an_excluded_executor_is_full) {
  tl_config cfg = exclude_config();
  cfg.exclude_app_max_failed_tasks_per_executor = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e0", "h0", NULL, 1);
  tlt_add(e, "e1", "h1", NULL, 8);
  tlt_add(e, "e2", "h1", NULL, 8);
  tl_launch l[4];
  tlt_submit(e, 0, 0, 0, 1); /* one failure on e0 in a successful task set: e0 excluded */
  launch_one(e, "e0", l);
  tlt_fail(e, "e0", l[0].tid, TL_END_EXCEPTION);
  launch_one(e, "e1", l);
  tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_stats(e).executors_excluded, 1);

  tl_location pref = {"h1", "e1"};
  tl_task_desc tasks[8];
  for (int i = 0; i < 8; i++)
    tasks[i] = (tl_task_desc){&pref, 1};
  tl_taskset_desc d = {.stage_id = 1, .ntasks = 8, .tasks = tasks};
  tl_taskset_id ts = tlt_submit_desc(e, &d);
  tl_offer partial[] = {{"e2", 1}};
  ck_assert_uint_eq(tlt_offers(e, partial, 1, l, 4), 0); /* e2 is only NODE_LOCAL: rejected */
  e->now += 3 * TLT_SEC;
  tl_offer all[] = {{"e0", 1}, {"e1", 1}, {"e2", 0}};
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 4), 1);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_PROCESS_LOCAL); /* full, no reject: reset */
  tlt_end(e);
}
END_TEST

/* An executor id forgotten with its tombstone can be registered again on another host while a
 * task set still holds its failures (found by the randomized model). An index excluded on a
 * node is kept off the executors that are on that node now; the id's exclusion for the task set
 * counts toward the node it first failed on, and tl_check agrees. */
START_TEST(an_id_registered_again_elsewhere_keeps_exclusion_consistent) {
  tl_config cfg = exclude_config();
  cfg.max_tombstones = 0; /* a lost id is forgotten at once */
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "x", "hA", NULL, 2);
  tlt_add(e, "y", "hB", NULL, 1);
  tlt_add(e, "z", "hB", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "x", 2, l, 4), 2); /* indices 0 and 1 on x */
  tlt_fail(e, "x", l[1].tid, TL_END_EXCEPTION);     /* x: index 1 failed, on hA */
  tlt_lose(e, "x", TL_LOSS_KILLED, false);          /* index 0 back, not counted */
  tlt_add(e, "x", "hB", NULL, 2);                   /* the same id, now on hB */
  launch_one(e, "y", l);
  ck_assert_uint_eq(l[0].index, 0);
  tlt_fail(e, "y", l[0].tid, TL_END_EXCEPTION);
  launch_one(e, "z", l);
  ck_assert_uint_eq(l[0].index, 0);
  tlt_fail(e, "z", l[0].tid, TL_END_EXCEPTION); /* index 0: two failures on hB, excluded there */
  /* x is on hB now: index 0 is excluded there, index 1 on x itself; index 2 runs. */
  ck_assert_uint_eq(tlt_offer(e, "x", 2, l, 4), 1);
  ck_assert_uint_eq(l[0].index, 2);
  tlt_fail(e, "x", l[0].tid, TL_END_EXCEPTION); /* x: a second index: excluded for the set */
  ck_assert_uint_eq(tlt_offer(e, "x", 2, l, 4), 0);
  ck_assert_ptr_nonnull(strstr(explain(e, ts), "executor x on hA: 2 indices failed, excluded"));
  tlt_end(e);
}
END_TEST

Suite *tl_exclude_suite(void) {
  Suite *suite = suite_create("exclude");
  TCase *tc = tlt_tcase(suite, "exclude");
  tcase_add_test(tc, scheduled_tasks_obey_task_and_stage_exclusion);
  tcase_add_test(tc, abort_if_executor_loss_leaves_a_failed_task_nowhere_to_run);
  tcase_add_test(tc, no_abort_while_an_unused_executor_may_run_the_task);
  tcase_add_test(tc, unschedulable_abort_at_zero_timeout);
  tcase_add_test(tc, unschedulable_abort_when_the_deadline_passes);
  tcase_add_test(tc, unschedulable_then_a_new_executor);
  tcase_add_test(tc, a_launch_clears_every_unschedulable_deadline);
  tcase_add_test(tc, failures_that_do_not_count_exclude_nothing);
  tcase_add_test(tc, application_exclusion_and_its_expiry);
  tcase_add_test(tc, application_failures_add_up_and_expire);
  tcase_add_test(tc, exclusion_config_is_validated);
  tcase_add_test(tc, an_application_failure_ends_when_its_expiry_comes);
  tcase_add_test(tc, a_round_naming_an_excluded_executor_is_full);
  tcase_add_test(tc, an_id_registered_again_elsewhere_keeps_exclusion_consistent);
  return suite;
}

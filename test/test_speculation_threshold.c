/* Speculation where one straggler costs most: the duration threshold of task sets whose tasks
 * all fit on one executor (SPARK-29976, SPARK-30417), and tasks on a decommissioning executor
 * that is to be killed before they would end (SPARK-21040). Ports of TaskSetManagerSuite's
 * cases, the settings' checks, their journal lines and replay, and their snapshot.
 */
#include "harness.h"

#include "../examples/replay/replay.h"

#define MS (TLT_SEC / 1000)
#define MINUTE (60 * TLT_SEC)

/* A speculating scheduler (interval 100 ms, no minimum run time: Spark's tests pass
 * checkSpeculatableTasks(0); no heartbeat timeout) with the quantile and multiplier given, and the
 * new settings. */
static tl_config spec_config(double quantile, double multiplier, uint64_t threshold,
                             uint64_t kill_interval) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = quantile;
  cfg.speculation_multiplier = multiplier;
  cfg.speculation_min_runtime_ns = 0;
  cfg.speculation_task_duration_threshold_ns = threshold;
  cfg.decommission_kill_interval_ns = kill_interval;
  cfg.heartbeat_timeout_ns = 0; /* the hours these runs take are no silence */
  return cfg;
}

/* tl_explain_taskset's text of a task set (a static buffer). */
static const char *explain(tlt_env *e, tl_taskset_id id) {
  static char buf[4096];
  ck_assert_int_eq(tl_explain_taskset(e->s, id, buf, sizeof buf), TL_OK);
  return buf;
}

/* Whether the text has a line holding both a and b. */
static bool line_has(const char *text, const char *a, const char *b) {
  for (const char *p = text; *p != '\0';) {
    const char *end = strchr(p, '\n');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    if (strstr(line, a) != NULL && strstr(line, b) != NULL)
      return true;
    p += n + (end != NULL);
  }
  return false;
}

/* TSMS testSpeculationDurationThreshold: two executors of `slots` cores, a task set of ntasks
 * tasks, task i launched on executor i + 1 (quantile 1.0, so the median never applies); 60 min
 * in nothing is slow, 1 s later every task is when a threshold of 60 min is set and the tasks
 * fit on one executor, and a second check adds nothing. */
static void duration_threshold(bool provided, uint32_t ntasks, uint32_t slots) {
  tl_config cfg = spec_config(1.0, 1.5, provided ? 60 * MINUTE : 0, 0);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, slots);
  tlt_add(e, "e2", "h2", NULL, slots);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, ntasks);
  tl_launch l[2];
  for (uint32_t i = 0; i < ntasks; i++) {
    ck_assert_uint_eq(tlt_offer(e, i == 0 ? "e1" : "e2", 1, &l[i], 1), 1);
    ck_assert_uint_eq(l[i].index, i);
  }
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 60 * MINUTE); /* exactly the threshold: not past it */
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  tlt_advance_tick(e, TLT_SEC);
  if (provided && slots >= ntasks) {
    ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, ntasks);
    ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), ntasks);
    for (uint32_t i = 0; i < ntasks; i++)
      ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_SPECULATIVE, i)->index, i);
    const char *text = explain(e, ts);
    ck_assert_msg(strstr(text, "its tasks fit on one executor: slow past the duration threshold, "
                               "3600.000 s") != NULL,
                  "%s", text);
    ck_assert_msg(
        line_has(text, "(index 0,", "speculatable: ran longer than the duration threshold"), "%s",
        text);
    /* No duplicate: a speculatable index is not submitted again. */
    tlt_advance_tick(e, TLT_SEC);
    ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), ntasks);
    ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, ntasks);
  } else {
    ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
    ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
    const char *text = explain(e, ts);
    ck_assert_msg(strstr(text, "speculation: not yet (0 run times recorded)") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "speculatable") == NULL, "%s", text);
  }
  /* The originals end; the copies still waiting for an offer go with their indices. */
  for (uint32_t i = 0; i < ntasks; i++)
    tlt_succeed(e, i == 0 ? "e1" : "e2", l[i].tid);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}

/* "SPARK-29976 when a speculation time threshold is provided, should speculative run the task
 * even if there are not enough successful runs, total tasks: 1" and ": 2". */
START_TEST(spark_29976_a_threshold_speculates_before_the_quantile_one_task) {
  duration_threshold(true, 1, 1);
}
END_TEST

START_TEST(spark_29976_a_threshold_speculates_before_the_quantile_two_tasks) {
  duration_threshold(true, 2, 2);
}
END_TEST

/* "SPARK-29976: when the speculation time threshold is not provided, don't speculative run if
 * there are not enough successful runs, total tasks: 1" and ": 2". */
START_TEST(spark_29976_without_a_threshold_nothing_before_the_quantile_one_task) {
  duration_threshold(false, 1, 1);
}
END_TEST

START_TEST(spark_29976_without_a_threshold_nothing_before_the_quantile_two_tasks) {
  duration_threshold(false, 2, 2);
}
END_TEST

/* "SPARK-29976 when a speculation time threshold is provided, should not speculative if there
 * are too many tasks in the stage even though time threshold is provided": 2 tasks, 1 core. */
START_TEST(spark_29976_too_many_tasks_for_one_executor_are_not_speculated) {
  duration_threshold(true, 2, 1);
}
END_TEST

/* "SPARK-29976 Regular speculation configs should still take effect even when a threshold is
 * provided": once the quantile is reached the median decides, long before the 60 min. */
START_TEST(spark_29976_the_median_still_decides_with_a_threshold) {
  tl_config cfg = spec_config(0.5, 1.5, 60 * MINUTE, 0);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l[0], 1), 1);
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, &l[1], 1), 1);
  tlt_advance_tick(e, TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  tlt_succeed(e, "e1", l[0].tid); /* ran 1 s: the quantile is reached */
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, TLT_SEC); /* the other ran 2 s > 1.5 x 1 s */
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_SPECULATIVE)->index, 1);
  /* The copy launches on the host that has not run index 1, and wins. */
  tl_launch c[1];
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, c, 1), 0);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, c, 1), 1);
  ck_assert(c[0].speculative);
  tlt_succeed(e, "e1", c[0].tid);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_KILL)->kill_tid, l[1].tid);
  tlt_killed(e, "e2", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* "SPARK-30417 when spark.task.cpus is greater than spark.executor.cores due to standalone
 * settings, speculate if there is only one task in the stage": two cores per task on executors
 * of 3 cores is one slot per executor (the floor of 3 / 2), and one task fits. */
START_TEST(spark_30417_one_wide_task_is_speculated) {
  tl_config cfg = spec_config(1.0, 1.5, 60 * MINUTE, 0);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_add(e, "e2", "h2", NULL, 3);
  tl_taskset_id ts = tlt_submit_cpus(e, 0, 0, 0, 1, 2);
  tl_launch l[1], c[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 1), 1);
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 60 * MINUTE);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  tlt_advance_tick(e, TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  ck_assert_uint_eq(tlt_offer(e, "e2", 3, c, 1), 1);
  ck_assert(c[0].speculative);
  ck_assert_uint_eq(c[0].cpus, 2);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_killed(e, "e2", c[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* Slots are the largest live executor's cores of the task set's profile over its cores per
 * task: two tasks of 2 cores do not fit on executors of 3 cores, and do once one of 4 cores
 * joins; an executor of another profile does not count. */
START_TEST(slots_follow_the_largest_live_executor_of_the_profile) {
  tl_config cfg = spec_config(1.0, 1.5, 60 * MINUTE, 0);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_add(e, "e2", "h2", NULL, 3);
  tlt_add_desc(e, ((tl_executor_desc){.id = "p1", .host = "h3", .cores = 16, .profile = 1}));
  tl_taskset_id ts = tlt_submit_cpus(e, 0, 0, 0, 2, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, &l[0], 1), 1);
  ck_assert_uint_eq(tlt_offer(e, "e2", 3, &l[1], 1), 1);
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 61 * MINUTE);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  tlt_add(e, "e3", "h4", NULL, 4);
  tlt_advance_tick(e, TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 2);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e2", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* "SPARK-21040: Check speculative tasks are launched when an executor is decommissioned and the
 * tasks running on it cannot finish within EXECUTOR_DECOMMISSION_KILL_INTERVAL". Times are from
 * the first launch (t = 0); the check runs every nanosecond here, so each tick checks. */
START_TEST(spark_21040_tasks_that_cannot_end_before_the_kill_are_speculated) {
  tl_config cfg = spec_config(0.5, 1.5, 0, 5 * TLT_SEC);
  cfg.speculation_interval_ns = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "exec1", "host1", NULL, 2);
  tlt_add(e, "exec2", "host2", NULL, 2);
  tlt_add(e, "exec3", "host3", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  /* Tasks 0 and 1 on exec1, task 2 on exec2 at t = 0, task 3 on exec2 at t = 6 s. */
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "exec1", 2, l, 2), 2);
  ck_assert_uint_eq(tlt_offer(e, "exec2", 1, &l[2], 1), 1);
  e->now += 6 * TLT_SEC;
  ck_assert_uint_eq(tlt_offer(e, "exec2", 1, &l[3], 1), 1);
  for (uint32_t i = 0; i < 4; i++) {
    ck_assert_uint_eq(l[i].index, i);
    ck_assert_uint_eq(l[i].tid, i + 1);
  }
  /* t = 10 s: tasks 0 and 1 succeed; the median is 10 s, so slow is past 15 s. */
  e->now += 4 * TLT_SEC;
  tlt_succeed(e, "exec1", l[0].tid);
  tlt_succeed(e, "exec1", l[1].tid);
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 0);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  /* exec2 is decommissioned at t = 10 s, to be killed at 15 s. Task 2 (launched at 0) would end
   * at 10 s and goes on; task 3 (launched at 6 s) would end at 16 s: speculatable. */
  TLT_OK(e, tl_executor_decommission(e->s, "exec2", "spot reclaim"));
  tlt_advance_tick(e, 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_SPECULATIVE)->index, 3);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  /* tl_explain_taskset says why, and when the kill is expected. */
  const char *text = explain(e, ts);
  ck_assert_msg(strstr(text, "speculation: slow past 15.000 s (the median of 2 run times: "
                             "10.000 s); on a decommissioning executor, also when its kill "
                             "comes first") != NULL,
                "%s", text);
  ck_assert_msg(line_has(text, "tid 4 (index 3", "to be killed in 5.000 s"), "%s", text);
  ck_assert_msg(line_has(text, "tid 4 (index 3", "speculatable: its executor's kill comes before"),
                "%s", text);
  ck_assert_msg(!line_has(text, "tid 3 (index 2", "speculatable"), "%s", text);
  /* Its copy launches on exec3 (tid 5, attempt 1); nothing else does. */
  tl_launch c3[2], c2[2];
  ck_assert_uint_eq(tlt_offer(e, "exec3", 2, c3, 2), 1);
  ck_assert_uint_eq(c3[0].index, 3);
  ck_assert_uint_eq(c3[0].tid, 5);
  ck_assert_uint_eq(c3[0].attempt, 1);
  ck_assert(c3[0].speculative);
  ck_assert_str_eq(c3[0].executor_id, "exec3");
  /* t = 11 s: nothing new; index 2 has one copy running, index 3 two. */
  tlt_advance_tick(e, TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
  ck_assert_uint_eq(tlt_ts(e, ts).running, 3);
  /* t = 16 s: task 2 ran 16 s > 1.5 x 10 s: the median rule still applies beside the kill. */
  tlt_advance_tick(e, 5 * TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 2);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_SPECULATIVE)->index, 2);
  text = explain(e, ts);
  ck_assert_msg(line_has(text, "tid 3 (index 2", "speculatable: ran longer than the median allows"),
                "%s", text);
  ck_assert_msg(line_has(text, "tid 3 (index 2", "its kill was due 1.000 s ago"), "%s", text);
  ck_assert_uint_eq(tlt_offer(e, "exec3", 1, c2, 2), 1);
  ck_assert_uint_eq(c2[0].index, 2);
  ck_assert_uint_eq(c2[0].tid, 6);
  ck_assert_uint_eq(c2[0].attempt, 1);
  ck_assert(c2[0].speculative);
  ck_assert_uint_eq(tlt_ts(e, ts).running, 4);
  /* Nothing more launches anywhere. */
  ck_assert_uint_eq(tlt_offer(e, "exec1", 2, c2 + 1, 1), 0);
  /* The copies win; the originals on exec2 are killed and count nothing. */
  tlt_succeed(e, "exec3", c3[0].tid);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_KILL)->kill_tid, l[3].tid);
  tlt_succeed(e, "exec3", c2[0].tid);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_KILL)->kill_tid, l[2].tid);
  tlt_killed(e, "exec2", l[3].tid);
  tlt_killed(e, "exec2", l[2].tid);
  ck_assert(!tlt_ended_of(e, l[2].tid)->counts);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* The same run without the kill interval: decommissioning alone speculates nothing; and a
 * decommissioning executor's task that will end before the kill is left alone. */
START_TEST(without_a_kill_interval_decommissioning_speculates_nothing) {
  for (int with = 0; with < 2; with++) {
    /* with: a kill interval of 20 s, long enough for task 3 to end (at 16 s, kill at 30 s). */
    tl_config cfg = spec_config(0.5, 1.5, 0, with ? 20 * TLT_SEC : 0);
    cfg.speculation_interval_ns = 1;
    tlt_env *e = tlt_new(&cfg);
    tlt_add(e, "exec1", "host1", NULL, 2);
    tlt_add(e, "exec2", "host2", NULL, 2);
    tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
    tl_launch l[3];
    ck_assert_uint_eq(tlt_offer(e, "exec1", 2, l, 2), 2);
    e->now += 6 * TLT_SEC;
    ck_assert_uint_eq(tlt_offer(e, "exec2", 1, &l[2], 1), 1);
    e->now += 4 * TLT_SEC;
    tlt_succeed(e, "exec1", l[0].tid);
    tlt_succeed(e, "exec1", l[1].tid);
    TLT_OK(e, tl_executor_decommission(e->s, "exec2", NULL));
    size_t mark = tlt_mark(e);
    tlt_advance_tick(e, 1);
    ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
    ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
    tlt_succeed(e, "exec2", l[2].tid);
    ck_assert_uint_eq(tlt_released(e, ts), 1);
    tlt_end(e);
  }
}
END_TEST

/* The kill rule needs the median: below the quantile (the threshold's path or none) a
 * decommissioning executor's task is judged by run time alone. */
START_TEST(the_kill_rule_waits_for_the_quantile) {
  tl_config cfg = spec_config(0.5, 1.5, 60 * MINUTE, TLT_SEC);
  cfg.speculation_interval_ns = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "exec1", "host1", NULL, 2);
  tlt_add(e, "exec2", "host2", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "exec1", 2, l, 2), 2);
  TLT_OK(e, tl_executor_decommission(e->s, "exec1", NULL));
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 30 * MINUTE); /* the kill came long ago; no median, threshold not passed */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  tlt_advance_tick(e, 31 * MINUTE); /* past the threshold: both, by run time */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 2);
  tlt_succeed(e, "exec1", l[0].tid);
  tlt_succeed(e, "exec1", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* The new settings act only through speculation: set without it, TL_EINVAL and no scheduler;
 * their defaults are 0 (off), and any value is taken with speculation on. */
START_TEST(the_settings_are_checked) {
  tl_config cfg;
  tl_config_init(&cfg);
  ck_assert_uint_eq(cfg.speculation_task_duration_threshold_ns, 0);
  ck_assert_uint_eq(cfg.decommission_kill_interval_ns, 0);
  tl_scheduler *s = NULL;
  cfg.speculation_task_duration_threshold_ns = TLT_SEC;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  ck_assert_ptr_null(s);
  cfg.speculation_task_duration_threshold_ns = 0;
  cfg.decommission_kill_interval_ns = TLT_SEC;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  ck_assert_ptr_null(s);
  cfg.speculation = true;
  cfg.speculation_task_duration_threshold_ns = UINT64_MAX;
  cfg.decommission_kill_interval_ns = UINT64_MAX;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_OK);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(tl_check(s, NULL, 0), TL_OK);
  ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
}
END_TEST

/* Sums at the end of time saturate: a kill interval or a median that reaches UINT64_MAX never
 * makes a task speculatable, a threshold of UINT64_MAX never passes. */
START_TEST(the_rules_hold_at_the_end_of_time) {
  tl_config cfg = spec_config(0.5, 1e30, UINT64_MAX, UINT64_MAX);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "exec1", "host1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "exec1", 2, l, 2), 2);
  e->now += TLT_SEC;
  tlt_succeed(e, "exec1", l[0].tid);
  TLT_OK(e, tl_executor_decommission(e->s, "exec1", NULL));
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, UINT64_MAX / 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  tlt_succeed(e, "exec1", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Journal and replay
 * ------------------------------------------------------------------------------------------- */

/* The config line names the settings only when they are set, and a run that speculates by both
 * rules replays clean and drained to the same counts. */
START_TEST(the_journal_carries_the_settings_and_replays) {
  for (int set = 0; set < 2; set++) {
    tlt_journal c = {0};
    tl_config cfg = spec_config(0.5, 1.5, set ? 60 * MINUTE : 0, set ? 5 * TLT_SEC : 0);
    cfg.journal = tlt_journal_line;
    cfg.journal_ud = &c;
    tlt_env *e = tlt_new(&cfg);
    ck_assert((strstr(c.text, " speculation_task_duration_threshold_ns=3600000000000") != NULL) ==
              (set != 0));
    ck_assert((strstr(c.text, " decommission_kill_interval_ns=5000000000") != NULL) == (set != 0));
    tlt_add(e, "exec1", "host1", NULL, 2);
    tlt_add(e, "exec2", "host2", NULL, 2);
    tlt_add(e, "exec3", "host3", NULL, 2);
    tl_taskset_id small = tlt_submit(e, 0, 0, 0, 1);
    tl_taskset_id ts = tlt_submit(e, 1, 0, 1, 4);
    tl_launch l[5];
    ck_assert_uint_eq(tlt_offer(e, "exec1", 2, l, 2), 2);     /* small's task, ts's 0 */
    ck_assert_uint_eq(tlt_offer(e, "exec2", 1, &l[2], 1), 1); /* ts's 1 */
    ck_assert_uint_eq(tlt_offer(e, "exec3", 1, &l[3], 1), 1); /* ts's 2 */
    e->now += 6 * TLT_SEC;
    ck_assert_uint_eq(tlt_offer(e, "exec2", 1, &l[4], 1), 1); /* ts's 3 */
    e->now += 4 * TLT_SEC;
    tlt_succeed(e, "exec1", l[1].tid); /* the median is 10 s */
    tlt_succeed(e, "exec3", l[3].tid);
    TLT_OK(e, tl_executor_decommission(e->s, "exec2", NULL));
    tlt_advance_tick(e, 1);
    /* With the settings: ts's index 3 (launched at 6 s, on exec2) cannot end before the kill. */
    ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, set ? 1 : 0);
    tlt_advance_tick(e, 61 * MINUTE);
    /* Then everything is slow by the median, and small's one task by the threshold. */
    ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, set ? 3 : 2);
    tl_stats mid = tlt_stats(e);
    tlr_report r;
    int verdict = tlr_replay_text(c.text, NULL, &r);
    ck_assert_msg(verdict == TLR_NOT_DRAINED, "%d at line %zu: %s", verdict, r.bad_line, r.why);
    tlt_assert_stats_same_but_memory(&mid, &r.final, "replayed state");
    tlt_succeed(e, "exec1", l[0].tid);
    tlt_succeed(e, "exec2", l[2].tid);
    tlt_succeed(e, "exec2", l[4].tid);
    ck_assert_uint_eq(tlt_released(e, small), 1);
    ck_assert_uint_eq(tlt_released(e, ts), 1);
    tlt_end(e);
    verdict = tlr_replay_text(c.text, NULL, &r);
    ck_assert_msg(verdict == TLR_OK, "%d at line %zu: %s", verdict, r.bad_line, r.why);
    free(c.text);
  }
}
END_TEST

Suite *tl_speculation_threshold_suite(void) {
  Suite *s = suite_create("speculation_threshold");
  TCase *tc = tlt_tcase(s, "speculation_threshold");
  tcase_add_test(tc, spark_29976_a_threshold_speculates_before_the_quantile_one_task);
  tcase_add_test(tc, spark_29976_a_threshold_speculates_before_the_quantile_two_tasks);
  tcase_add_test(tc, spark_29976_without_a_threshold_nothing_before_the_quantile_one_task);
  tcase_add_test(tc, spark_29976_without_a_threshold_nothing_before_the_quantile_two_tasks);
  tcase_add_test(tc, spark_29976_too_many_tasks_for_one_executor_are_not_speculated);
  tcase_add_test(tc, spark_29976_the_median_still_decides_with_a_threshold);
  tcase_add_test(tc, spark_30417_one_wide_task_is_speculated);
  tcase_add_test(tc, slots_follow_the_largest_live_executor_of_the_profile);
  tcase_add_test(tc, spark_21040_tasks_that_cannot_end_before_the_kill_are_speculated);
  tcase_add_test(tc, without_a_kill_interval_decommissioning_speculates_nothing);
  tcase_add_test(tc, the_kill_rule_waits_for_the_quantile);
  tcase_add_test(tc, the_settings_are_checked);
  tcase_add_test(tc, the_rules_hold_at_the_end_of_time);
  tcase_add_test(tc, the_journal_carries_the_settings_and_replays);
  return s;
}

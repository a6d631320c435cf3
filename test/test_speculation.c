/* Speculation: slow tasks get a second copy (Spark's checkSpeculatableTasks), at most one, never
 * on a host that ran the index; when a copy succeeds the other is killed and what it reports
 * counts for nothing; and the TaskSetManagerSuite scenarios on resubmission with speculation.
 */
#include "harness.h"

#define MS (TLT_SEC / 1000)

/* A speculating scheduler: interval 100 ms; quantile and multiplier as given; no minimum run
 * time unless given. */
static tlt_env *spec_env(double quantile, double multiplier, uint64_t min_runtime) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = quantile;
  cfg.speculation_multiplier = multiplier;
  cfg.speculation_min_runtime_ns = min_runtime;
  return tlt_new(&cfg);
}

static tl_taskset_id submit_map(tlt_env *e, uint32_t stage, uint32_t ntasks) {
  tl_taskset_desc d = {.stage_id = stage, .ntasks = ntasks, .shuffle_map = true};
  return tlt_submit_desc(e, &d);
}

static size_t offer1(tlt_env *e, const char *exec, uint32_t cores, tl_launch *l) {
  return tlt_offer(e, exec, cores, l, cores);
}

/* The kill_task events since mark, as (tid, executor). */
static const tlt_event *nth_kill(tlt_env *e, size_t mark, size_t n) {
  return tlt_nth(e, mark, TLT_EV_KILL, n);
}

START_TEST(a_slow_task_gets_one_copy_elsewhere) {
  tlt_env *e = spec_env(0.5, 1.5, 0);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(offer1(e, "e1", 2, l), 2);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid); /* ran 10 ms: the median */
  /* Not slow yet at 14 ms (1.5 x 10 = 15), slow at 16 ms. */
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 4 * MS);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  tlt_advance_tick(e, 100 * MS); /* the next check */
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_SPECULATIVE)->index, 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  /* Never on the host that runs the original; once, on another host. */
  tl_launch c[2];
  ck_assert_uint_eq(offer1(e, "e1", 1, c), 0);
  ck_assert_uint_eq(offer1(e, "e2", 2, c), 1);
  ck_assert(c[0].speculative);
  ck_assert_uint_eq(c[0].index, 1);
  ck_assert_uint_eq(c[0].attempt, 1);
  ck_assert(tlt_last(e, TLT_EV_STARTED)->task.speculative);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  ck_assert_uint_eq(offer1(e, "e2", 1, c + 1), 0); /* SPARK-26755: one copy, no more */
  tlt_advance_tick(e, 100 * MS);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0); /* two copies: not speculatable */
  /* The copy wins: the original is asked to die, and its KILLED does not count. */
  mark = tlt_mark(e);
  tlt_succeed(e, "e2", c[0].tid);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 1);
  ck_assert_uint_eq(nth_kill(e, mark, 0)->kill_tid, l[1].tid);
  ck_assert_str_eq(nth_kill(e, mark, 0)->executor, "e1");
  ck_assert(nth_kill(e, mark, 0)->interrupt);
  ck_assert(tlt_ts(e, ts).zombie);
  tlt_killed(e, "e1", l[1].tid);
  ck_assert(!tlt_ended_of(e, l[1].tid)->counts);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* TSMS "Kill other task attempts when one attempt belonging to the same task succeeds" and
 * SPARK-13343: the killed copy reporting success anyway is recorded as killed, its result freed
 * and not counted toward max_result_bytes. */
START_TEST(a_losing_copy_that_finishes_anyway_is_killed) {
  tlt_env *e = spec_env(0.5, 1.0, 0);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2], c[1];
  ck_assert_uint_eq(offer1(e, "e1", 2, l), 2);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_advance_tick(e, 100 * MS);
  ck_assert_uint_eq(offer1(e, "e2", 1, c), 1);
  tlt_succeed(e, "e1", l[1].tid); /* the original wins this time */
  ck_assert_uint_eq(tlt_last(e, TLT_EV_KILL)->kill_tid, c[0].tid);
  tlt_result *late = tlt_succeed(e, "e2", c[0].tid);
  const tlt_event *end = tlt_ended_of(e, c[0].tid);
  ck_assert_int_eq(end->end_kind, TL_END_KILLED);
  ck_assert(!end->counts);
  ck_assert(end->task.speculative);
  ck_assert_ptr_null(end->result);
  ck_assert_uint_eq(late->frees, 1);
  ck_assert_ptr_nonnull(strstr(end->text, "another attempt succeeded"));
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* A losing copy that reports a failure while its task set is still active counts nothing: with
 * max_task_failures 1 a counted failure would abort the set. */
START_TEST(a_losing_copy_failing_counts_nothing) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.3;
  cfg.speculation_multiplier = 1.0;
  cfg.speculation_min_runtime_ns = 0;
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3], c[1];
  ck_assert_uint_eq(offer1(e, "e1", 3, l), 3);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_advance_tick(e, 100 * MS);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  ck_assert_uint_eq(offer1(e, "e2", 1, c), 1);
  tlt_succeed(e, "e2", c[0].tid); /* the copy wins index c[0].index */
  tl_tid loser = l[1].index == c[0].index ? l[1].tid : l[2].tid;
  tl_tid other = l[1].index == c[0].index ? l[2].tid : l[1].tid;
  ck_assert(!tlt_ts(e, ts).zombie);
  tlt_fail(e, "e1", loser, TL_END_EXCEPTION);
  ck_assert(!tlt_ended_of(e, loser)->counts);
  ck_assert(!tlt_ts(e, ts).failed);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 0); /* the index is done: nothing to retry */
  tlt_succeed(e, "e1", other);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  tlt_end(e);
}
END_TEST

/* TSMS "Killing speculative tasks does not count towards aborting the taskset". */
START_TEST(killing_a_losing_copy_does_not_count_toward_aborting) {
  tlt_env *e = spec_env(0.6, 1.0, 0);
  tlt_add(e, "e1", "h1", NULL, 5);
  tlt_add(e, "e2", "h2", NULL, 5);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 5);
  tl_launch l[5];
  ck_assert_uint_eq(offer1(e, "e1", 5, l), 5);
  e->now += 10 * MS;
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, "e1", l[i].tid);
  /* Tasks 3 and 4 fail three times each (max_task_failures is 4); their 4th attempts run. */
  tl_tid t3 = l[3].tid, t4 = l[4].tid;
  for (int round = 0; round < 3; round++) {
    tlt_fail(e, "e1", t3, TL_END_EXCEPTION);
    tlt_fail(e, "e1", t4, TL_END_EXCEPTION);
    tl_launch r[2];
    ck_assert_uint_eq(offer1(e, "e1", 2, r), 2);
    t3 = r[0].index == 3 ? r[0].tid : r[1].tid;
    t4 = r[0].index == 3 ? r[1].tid : r[0].tid;
  }
  ck_assert(!tlt_ts(e, ts).zombie);
  tlt_advance_tick(e, 100 * MS);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  tl_launch c[2];
  ck_assert_uint_eq(offer1(e, "e2", 2, c), 2);
  tl_tid copy3 = c[0].index == 3 ? c[0].tid : c[1].tid;
  tl_tid copy4 = c[0].index == 3 ? c[1].tid : c[0].tid;
  tlt_succeed(e, "e2", copy3);
  tlt_killed(e, "e1", t3); /* not the 4th counting failure */
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.succeeded, 4);
  ck_assert(!st.zombie && !st.failed);
  tlt_succeed(e, "e2", copy4);
  ck_assert(tlt_ts(e, ts).zombie);
  ck_assert(!tlt_ts(e, ts).failed);
  tlt_fail(e, "e1", t4, TL_END_EXCEPTION); /* a losing copy's failure counts for nothing */
  ck_assert(!tlt_ended_of(e, t4)->counts);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* TSMS "[SPARK-22074] Task killed by other attempt task should not be resubmitted" and
 * "SPARK-24755 Executor loss can cause task to not be resubmitted". */
START_TEST(a_killed_copy_is_not_resubmitted_but_the_winner_is) {
  tlt_env *e = spec_env(0.5, 0.0, 0);
  tlt_add(e, "exec1", "host1", NULL, 2);
  tlt_add(e, "exec2", "host2", NULL, 2);
  tlt_add(e, "exec3", "host3", NULL, 1);
  tl_taskset_id ts = submit_map(e, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(offer1(e, "exec1", 2, l), 2);     /* indices 0, 1 */
  ck_assert_uint_eq(offer1(e, "exec3", 1, l + 2), 1); /* index 2 */
  ck_assert_uint_eq(offer1(e, "exec2", 1, l + 3), 1); /* index 3 */
  e->now += 1 * MS;
  tlt_succeed(e, "exec1", l[0].tid);
  tlt_succeed(e, "exec1", l[1].tid);
  tlt_advance_tick(e, 100 * MS); /* multiplier 0: every running task is slow */
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  /* exec2 already runs index 3: the copy it gets is index 2's. */
  tl_launch c[1];
  ck_assert_uint_eq(offer1(e, "exec2", 1, c), 1);
  ck_assert_uint_eq(c[0].index, 2);
  size_t mark = tlt_mark(e);
  tlt_succeed(e, "exec2", c[0].tid);
  ck_assert_uint_eq(nth_kill(e, mark, 0)->kill_tid, l[2].tid);
  ck_assert_str_eq(nth_kill(e, mark, 0)->executor, "exec3");
  /* Losing exec3 (the killed copy's) resubmits nothing: index 2's output is on exec2. */
  mark = tlt_mark(e);
  tlt_lose(e, "exec3", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 1);
  ck_assert_int_eq(tlt_nth(e, mark, TLT_EV_ENDED, 0)->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert_uint_eq(tlt_ts(e, ts).succeeded, 3);
  /* Losing exec2 resubmits index 2, whose winning output was there, and fails index 3. */
  mark = tlt_mark(e);
  tlt_lose(e, "exec2", TL_LOSS_EXITED, false);
  const tlt_event *first = tlt_nth(e, mark, TLT_EV_ENDED, 0);
  ck_assert_int_eq(first->end_kind, TL_END_RESUBMITTED);
  ck_assert_uint_eq(first->task.index, 2);
  ck_assert_uint_eq(first->task.tid, c[0].tid);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 2);
  tl_launch r[2];
  ck_assert_uint_eq(offer1(e, "exec1", 2, r), 2);
  tlt_succeed(e, "exec1", r[0].tid);
  tlt_succeed(e, "exec1", r[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* TL_END_RESUBMITTED describes the attempt that wrote the lost output: a speculative copy's
 * says speculative, an original's does not. */
START_TEST(a_resubmitted_output_says_whether_a_copy_wrote_it) {
  tlt_env *e = spec_env(0.25, 0.0, 0);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = submit_map(e, 0, 4);
  tl_launch l[4], c[1];
  ck_assert_uint_eq(offer1(e, "e1", 4, l), 4);
  e->now += 1 * MS;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_advance_tick(e, 100 * MS); /* multiplier 0: indices 1-3 are slow */
  ck_assert_uint_eq(offer1(e, "e2", 1, c), 1);
  ck_assert(c[0].speculative);
  tlt_succeed(e, "e2", c[0].tid); /* the copy wins: its output is on e2 */
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  const tlt_event *resub = tlt_nth(e, mark, TLT_EV_ENDED, 0);
  ck_assert_int_eq(resub->end_kind, TL_END_RESUBMITTED);
  ck_assert_uint_eq(resub->task.tid, c[0].tid);
  ck_assert(resub->task.speculative);
  /* The original of index 0, on e1, is resubmitted as not speculative. */
  mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  resub = tlt_nth(e, mark, TLT_EV_ENDED, 0);
  ck_assert_int_eq(resub->end_kind, TL_END_RESUBMITTED);
  ck_assert_uint_eq(resub->task.tid, l[0].tid);
  ck_assert(!resub->task.speculative);
  ck_assert(!tlt_ts(e, ts).zombie);
  tlt_end(e);
}
END_TEST

/* TSMS "[SPARK-13931] taskSetManager should not send Resubmitted tasks after being a zombie". */
START_TEST(a_zombie_sends_no_resubmission_when_its_copy_is_lost) {
  tlt_env *e = spec_env(0.5, 0.0, 0);
  tlt_add(e, "execA", "hostA", NULL, 2);
  tlt_add(e, "execB", "hostB", NULL, 1);
  tl_taskset_id ts = submit_map(e, 0, 2);
  tl_launch l[2], c[1];
  ck_assert_uint_eq(offer1(e, "execA", 2, l), 2);
  e->now += 1 * MS;
  tlt_succeed(e, "execA", l[0].tid);
  tlt_advance_tick(e, 100 * MS);
  ck_assert_uint_eq(offer1(e, "execB", 1, c), 1);
  tlt_succeed(e, "execA", l[1].tid); /* the original wins: zombie, the copy still runs */
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert_uint_eq(st.running, 1);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "execB", TL_LOSS_EXITED, false);
  for (size_t i = 0; i < tlt_count(e, mark, TLT_EV_ENDED); i++)
    ck_assert_int_ne(tlt_nth(e, mark, TLT_EV_ENDED, i)->end_kind, TL_END_RESUBMITTED);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* No speculation before quantile x ntasks successes, nor for a task that has not run the
 * minimum time, nor in zombie, barrier or single-task sets; SPARK-24677: completions from
 * another attempt record no run time, and the check copes with none at all. */
START_TEST(speculation_waits_for_its_conditions) {
  tlt_env *e = spec_env(0.75, 1.0, 500 * MS);
  tlt_add(e, "e1", "h1", NULL, 8);
  tlt_add(e, "e2", "h2", NULL, 8);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_taskset_desc one = {.stage_id = 1, .ntasks = 1};
  tl_taskset_id single = tlt_submit_desc(e, &one);
  tl_taskset_desc bar = {.stage_id = 2, .ntasks = 2, .barrier = true};
  tl_taskset_id barrier = tlt_submit_desc(e, &bar);
  tl_launch l[8];
  ck_assert_uint_eq(offer1(e, "e1", 8, l), 7);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  tlt_advance_tick(e, 400 * MS); /* 2 of 4 done: quantile 0.75 wants 3 */
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  TLT_OK(e, tl_partition_completed(e->s, 0, 2)); /* done, but with no run time */
  tlt_advance_tick(e, 200 * MS);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  tlt_succeed(e, "e1", l[3].tid); /* 3 run times now; index 2's copy still runs */
  /* Slow past max(1 x 10 ms, 500 ms): only the sets that may speculate have candidates. */
  tlt_advance_tick(e, 1000 * MS);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0); /* index 2 is done, 3 of 4 succeeded */
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_SPECULATIVE), 0);
  for (int i = 4; i < 7; i++)
    tlt_succeed(e, "e1", l[i].tid);
  tlt_succeed(e, "e1", l[2].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_released(e, single), 1);
  ck_assert_uint_eq(tlt_released(e, barrier), 1);
  tlt_end(e);
}
END_TEST

/* The median: run times 10, 20, 30 ms -> 20; multiplier 2 -> slow past 40 ms. */
START_TEST(the_threshold_follows_the_median) {
  tlt_env *e = spec_env(0.5, 2.0, 0);
  tlt_add(e, "e1", "h1", NULL, 6);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit(e, 0, 0, 0, 6);
  tl_launch l[6];
  ck_assert_uint_eq(offer1(e, "e1", 6, l), 6);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[1].tid);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[2].tid);
  /* Now 30 ms in: the others have run 30 ms, not past 40. */
  tlt_advance_tick(e, 0);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  e->now += 11 * MS;
  /* A check runs at most every interval: the next one is 100 ms after the last. */
  uint64_t next = tl_tick(e->s);
  TLT_CHECK(e);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  ck_assert_uint_le(next, 100 * MS);
  tlt_advance_tick(e, next);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 3);
  tl_launch c[1];
  ck_assert_uint_eq(offer1(e, "e2", 1, c), 1);
  for (int i = 3; i < 6; i++)
    tlt_succeed(e, "e1", l[i].tid);
  tlt_killed(e, "e2", c[0].tid);
  tlt_end(e);
}
END_TEST

/* With multiplier 0 and no minimum run time the threshold is 0 ns: a task that has run 1 ns has
 * run longer than that, and is slow. */
START_TEST(a_zero_threshold_makes_a_task_slow_after_one_nanosecond) {
  tlt_env *e = spec_env(0.3, 0.0, 0);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(offer1(e, "e1", 2, l), 2); /* indices 0 and 1 */
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  ck_assert_uint_eq(offer1(e, "e1", 1, l + 2), 1); /* index 2, launched now */
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 1); /* the first check: index 2 has run 1 ns */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  tl_launch c[1];
  ck_assert_uint_eq(offer1(e, "e2", 1, c), 1);
  ck_assert(c[0].speculative);
  tlt_succeed(e, "e2", c[0].tid);
  tlt_killed(e, "e1", l[2].tid);
  tlt_end(e);
}
END_TEST

/* Every first success records its run time, as in Spark's MedianHeap, an index run again after
 * its map output was lost included, so a task set can record more run times than it has tasks.
 * Here four tasks record five: 10, 10, 1000 ms, then the resubmitted 1000 and 10 ms. The median
 * of all five is 10 ms; of the first four it would be 505 ms. */
START_TEST(run_times_of_resubmitted_indices_count_toward_the_median) {
  tlt_env *e = spec_env(0.25, 1.0, 0);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tlt_add(e, "e3", "h3", NULL, 1);
  tl_taskset_id ts = submit_map(e, 0, 4);
  tl_launch l[2], m[1];
  ck_assert_uint_eq(offer1(e, "e1", 2, l), 2);
  ck_assert_uint_eq(offer1(e, "e2", 1, m), 1);
  ck_assert_uint_eq(m[0].index, 2);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  e->now += 990 * MS;
  tlt_succeed(e, "e2", m[0].tid);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false); /* indices 0 and 1 run again */
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 3);
  tl_launch r[1];
  ck_assert_uint_eq(offer1(e, "e2", 1, r), 1);
  ck_assert_uint_eq(r[0].index, 1);
  e->now += 1000 * MS;
  tlt_succeed(e, "e2", r[0].tid); /* the 4th run time */
  ck_assert_uint_eq(offer1(e, "e2", 1, r), 1);
  ck_assert_uint_eq(r[0].index, 0);
  e->now += 10 * MS;
  tlt_succeed(e, "e2", r[0].tid); /* the 5th */
  tl_launch probe[1];
  ck_assert_uint_eq(offer1(e, "e2", 1, probe), 1);
  ck_assert_uint_eq(probe[0].index, 3);
  /* It has run 20 ms at the first check: slow past the median of all five (10 ms). */
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 20 * MS);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  tl_launch c[1];
  ck_assert_uint_eq(offer1(e, "e3", 1, c), 1);
  ck_assert(c[0].speculative);
  tlt_succeed(e, "e3", c[0].tid);
  tlt_killed(e, "e2", probe[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* A speculating scheduler for run times near the end of time: nothing else is due there
 * (no heartbeat expiry, no tombstones to expire at the drain). */
static tlt_env *spec_env_long(double quantile, double multiplier) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = quantile;
  cfg.speculation_multiplier = multiplier;
  cfg.speculation_min_runtime_ns = 0;
  cfg.heartbeat_timeout_ns = 0;
  cfg.max_tombstones = 0;
  return tlt_new(&cfg);
}

/* Two tasks from 1 s on e1; index 0 finishes after median ns; e2 is there for a copy. */
static void one_done_after(tlt_env *e, uint64_t median, tl_launch *l) {
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit(e, 0, 0, 0, 2);
  ck_assert_uint_eq(offer1(e, "e1", 2, l), 2);
  e->now += median;
  tlt_succeed(e, "e1", l[0].tid);
}

/* Index 1 has run exactly threshold ns at the first check (not slow), and 100 ms more at the
 * next (slow); then its copy wins. */
static void slow_exactly_past(tlt_env *e, const tl_launch *l, uint64_t threshold) {
  e->now = TLT_SEC + threshold;
  tlt_advance_tick(e, 0);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 0);
  tlt_advance_tick(e, 100 * MS);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  tl_launch c[1];
  ck_assert_uint_eq(offer1(e, "e2", 1, c), 1);
  tlt_succeed(e, "e2", c[0].tid);
  tlt_killed(e, "e1", l[1].tid);
}

/* multiplier x median is computed exactly: 3 x (2^60 + 1) ns is 2^60 x 3 + 3, which doubles
 * would round to 2^60 x 3 (and then a run 3 ns too short would be slow). */
START_TEST(the_threshold_is_not_rounded) {
  tlt_env *e = spec_env_long(0.5, 3.0);
  tl_launch l[2];
  uint64_t median = (UINT64_C(1) << 60) + 1;
  one_done_after(e, median, l);
  slow_exactly_past(e, l, 3 * median);
  tlt_end(e);
}
END_TEST

/* And it holds up to 2^64 ns: 1.5 x 1.2e19 = 1.8e19 ns is a threshold like any other (a task
 * that runs past it is slow), not "never". */
START_TEST(the_threshold_holds_up_to_the_end_of_time) {
  tlt_env *e = spec_env_long(0.5, 1.5);
  tl_launch l[2];
  one_done_after(e, UINT64_C(12000000000000000000), l);
  slow_exactly_past(e, l, UINT64_C(18000000000000000000));
  tlt_end(e);
}
END_TEST

/* A check made less than one interval before the end of time has no next one: the sum would
 * pass UINT64_MAX. Like every deadline that saturates there, the next check never comes, and
 * tl_tick says so (TL_TICK_NEVER, not 0 over and over). */
START_TEST(the_check_after_the_end_of_time_never_comes) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.3;
  cfg.speculation_multiplier = 1.0;
  cfg.speculation_min_runtime_ns = 0;
  cfg.heartbeat_timeout_ns = 0; /* nothing else is due at the end of time */
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(offer1(e, "e1", 3, l), 3);
  e->now += 10 * MS;
  tlt_succeed(e, "e1", l[0].tid); /* the median: 10 ms */
  e->now = UINT64_MAX - 50 * MS;
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  /* Index 2 fails and runs again: slow after 10 ms, but no check looks at it any more. */
  tlt_fail(e, "e1", l[2].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  tl_launch again[1];
  ck_assert_uint_eq(offer1(e, "e1", 1, again), 1);
  ck_assert_uint_eq(again[0].index, 2);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 20 * MS), TL_TICK_NEVER);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  tlt_succeed(e, "e1", again[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  tlt_end(e);
}
END_TEST

START_TEST(speculation_settings_are_checked) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  tl_scheduler *s = NULL;
  cfg.speculation_interval_ns = 0;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  tl_config_init(&cfg);
  cfg.speculation = true;
  cfg.speculation_quantile = 0.0;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  cfg.speculation_quantile = 1.5;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  cfg.speculation_quantile = 0.9;
  cfg.speculation_multiplier = -1.0;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  ck_assert_ptr_null(s);
  tl_config_init(&cfg);
  ck_assert(!cfg.speculation);
  ck_assert_uint_eq(cfg.speculation_interval_ns, 100 * MS);
  ck_assert(cfg.speculation_multiplier == 3.0 && cfg.speculation_quantile == 0.9);
  ck_assert_uint_eq(cfg.speculation_min_runtime_ns, 100 * MS);
}
END_TEST

Suite *tl_speculation_suite(void) {
  Suite *s = suite_create("speculation");
  TCase *tc = tlt_tcase(s, "speculation");
  tcase_add_test(tc, a_slow_task_gets_one_copy_elsewhere);
  tcase_add_test(tc, a_losing_copy_that_finishes_anyway_is_killed);
  tcase_add_test(tc, a_losing_copy_failing_counts_nothing);
  tcase_add_test(tc, killing_a_losing_copy_does_not_count_toward_aborting);
  tcase_add_test(tc, a_killed_copy_is_not_resubmitted_but_the_winner_is);
  tcase_add_test(tc, a_resubmitted_output_says_whether_a_copy_wrote_it);
  tcase_add_test(tc, a_zombie_sends_no_resubmission_when_its_copy_is_lost);
  tcase_add_test(tc, speculation_waits_for_its_conditions);
  tcase_add_test(tc, the_threshold_follows_the_median);
  tcase_add_test(tc, a_zero_threshold_makes_a_task_slow_after_one_nanosecond);
  tcase_add_test(tc, run_times_of_resubmitted_indices_count_toward_the_median);
  tcase_add_test(tc, the_threshold_is_not_rounded);
  tcase_add_test(tc, the_threshold_holds_up_to_the_end_of_time);
  tcase_add_test(tc, the_check_after_the_end_of_time_never_comes);
  tcase_add_test(tc, speculation_settings_are_checked);
  return s;
}

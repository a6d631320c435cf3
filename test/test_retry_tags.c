/* Retry policy beyond a count, and task set tags: a failure that must not be retried
 * (tl_update.no_retry), a task set's own max_task_failures, tags, and cancelling or killing every
 * task set of a tag (tl_cancel_tag, tl_kill_tag). Each test ports the Spark scenario named in its
 * comment (TaskSetManagerSuite = TSMS, SparkContextSuite = SCS, JobCancellationSuite = JCS), with
 * tl_check after every step (the harness's helpers and TLT_OK run it) and a drained end.
 */
#include "harness.h"
#include "oom_sweep.h"

#include "../examples/replay/replay.h"

/* A FAILED update of kind with the message, no_retry as given. */
static int fail_with(tlt_env *e, const char *exec, tl_tid tid, tl_end_kind kind, const char *msg,
                     bool no_retry) {
  tl_update u = {.state = TL_TASK_FAILED, .failure = kind, .message = msg, .no_retry = no_retry};
  return tl_status_update(e->s, exec, tid, &u);
}

static tl_taskset_id submit_tagged(tlt_env *e, uint32_t stage, uint32_t ntasks,
                                   const char *const *tags, uint32_t ntags) {
  tl_taskset_desc d = {.stage_id = stage, .ntasks = ntasks, .tags = tags, .ntags = ntags};
  return tlt_submit_desc(e, &d);
}

static tl_taskset_id submit_max(tlt_env *e, uint32_t stage, uint32_t ntasks, uint32_t max) {
  tl_taskset_desc d = {.stage_id = stage, .ntasks = ntasks, .max_task_failures = max};
  return tlt_submit_desc(e, &d);
}

/* ---------------------------------------------------------------------------------------------
 * A failure that is not retried (TSMS "TaskOutputFileAlreadyExistException lead to task set
 * abortion")
 * ------------------------------------------------------------------------------------------- */

START_TEST(a_no_retry_failure_aborts_at_the_first) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 4;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  ck_assert_uint_eq(tlt_ts(e, ts).max_task_failures, 4);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  TLT_OK(e, fail_with(e, "e1", l[0].tid, TL_END_EXCEPTION, "file already exists", true));
  const tlt_event *end = tlt_ended_of(e, l[0].tid);
  ck_assert_int_eq(end->end_kind, TL_END_EXCEPTION);
  ck_assert(end->counts);
  const tlt_event *failed = tlt_last(e, TLT_EV_FAILED);
  ck_assert_ptr_nonnull(failed);
  ck_assert_uint_eq(failed->ts.id, ts);
  ck_assert_str_eq(failed->text, "Task 0 in stage 0.0 failed and is not retried: "
                                 "file already exists");
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie && st.failed);
  ck_assert_uint_eq(st.pending, 0); /* index 0 is not retried */
  ck_assert_uint_eq(st.running, 1);
  /* The other task runs on; its end releases the task set, and no second abort comes. */
  tlt_fail(e, "e1", l[1].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 1);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, 0);
  tlt_end(e);
}
END_TEST

/* The same failure without no_retry is retried, up to max_task_failures (TSMS "repeated
 * failures lead to task set abortion"): the flag is what aborts. RESULT_LOST may carry it too. */
START_TEST(without_the_flag_the_same_failure_is_retried) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 3;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  for (int k = 0; k < 2; k++) {
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
    TLT_OK(e, fail_with(e, "e1", l[0].tid, TL_END_EXCEPTION, "file already exists", false));
    ck_assert(!tlt_ts(e, ts).zombie);
    ck_assert_uint_eq(tlt_ts(e, ts).pending, 1);
  }
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  TLT_OK(e, fail_with(e, "e1", l[0].tid, TL_END_RESULT_LOST, "result gone", true));
  ck_assert_str_eq(tlt_last(e, TLT_EV_FAILED)->text,
                   "Task 0 in stage 0.0 failed and is not retried: result gone");
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* Only a counted failure aborts: not in a zombie (a superseded attempt), not for an index done
 * elsewhere, not from a barrier task set (which only turns zombie). */
START_TEST(a_no_retry_failure_that_does_not_count_aborts_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 8);
  tl_taskset_id old = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 8), 2);
  tl_tid zombie_tid = l[0].tid, done_tid = 0;
  /* A newer attempt of stage 0 makes the first one zombie (not failed). */
  tl_taskset_id newer = tlt_submit(e, 0, 1, 0, 2);
  ck_assert(tlt_ts(e, old).zombie && !tlt_ts(e, old).failed);
  TLT_OK(e, fail_with(e, "e1", zombie_tid, TL_END_EXCEPTION, "late", true));
  ck_assert(!tlt_ended_of(e, zombie_tid)->counts);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  /* An index completed by another attempt: its own failure does not count. */
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 8), 2);
  done_tid = l[0].index == 0 ? l[0].tid : l[1].tid;
  TLT_OK(e, tl_partition_completed(e->s, 0, 0));
  TLT_OK(e, fail_with(e, "e1", done_tid, TL_END_EXCEPTION, "already done", true));
  ck_assert(!tlt_ended_of(e, done_tid)->counts);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert(!tlt_ts(e, newer).zombie);
  /* A barrier task set's failure makes it zombie and counts nothing: no abort. */
  tl_taskset_desc bd = {.stage_id = 1, .ntasks = 2, .barrier = true};
  tl_taskset_id barrier = tlt_submit_desc(e, &bd);
  size_t mark = tlt_mark(e);
  size_t n = tlt_offer(e, "e1", 8, l, 8);
  size_t k = 0;
  while (k < n && l[k].taskset != barrier)
    k++;
  ck_assert_uint_lt(k, n);
  TLT_OK(e, fail_with(e, "e1", l[k].tid, TL_END_EXCEPTION, "barrier", true));
  ck_assert(tlt_ts(e, barrier).zombie && !tlt_ts(e, barrier).failed);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  tlt_end(e);
}
END_TEST

/* The copy that lost the race to its speculative sibling reports a no_retry failure: it counts for
 * nothing (SPARK-13343) and aborts nothing; the task set runs on. */
START_TEST(a_no_retry_failure_of_a_copy_that_lost_the_race_aborts_nothing) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.3;
  cfg.speculation_multiplier = 1.5;
  cfg.speculation_min_runtime_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_add(e, "e2", "h2", NULL, 3);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3], c[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 3), 3);
  e->now += 10 * (TLT_SEC / 1000);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_advance_tick(e, 200 * (TLT_SEC / 1000)); /* indices 1 and 2 are slow now */
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, c, 1), 1);
  ck_assert(c[0].speculative);
  tl_tid loser = c[0].index == l[1].index ? l[1].tid : l[2].tid;
  size_t mark = tlt_mark(e);
  tlt_succeed(e, "e2", c[0].tid); /* the copy wins: the original is asked to die */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 1);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_KILL, 0)->kill_tid, loser);
  TLT_OK(e, fail_with(e, "e1", loser, TL_END_EXCEPTION, "output exists", true));
  ck_assert(!tlt_ended_of(e, loser)->counts);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(!st.zombie && !st.failed);
  ck_assert_uint_eq(st.succeeded, 2);
  tlt_end(e);
}
END_TEST

START_TEST(no_retry_is_refused_where_nothing_could_count) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  const tl_task_state states[] = {TL_TASK_RUNNING, TL_TASK_FINISHED, TL_TASK_KILLED};
  for (size_t i = 0; i < 3; i++) {
    tl_update u = {.state = states[i], .no_retry = true};
    TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "e1", l[0].tid, &u));
    TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_updates(e->s, "e1", &l[0].tid, &u, 1, NULL));
  }
  const tl_end_kind kinds[] = {TL_END_FETCH_FAILED, TL_END_KILLED, TL_END_COMMIT_DENIED};
  for (size_t i = 0; i < 3; i++)
    TLT_UPDATE_ERR(e, TL_EINVAL, fail_with(e, "e1", l[0].tid, kinds[i], NULL, true));
  /* A batch with one such update is refused as a whole. */
  tl_update batch[2] = {{.state = TL_TASK_RUNNING},
                        {.state = TL_TASK_FAILED, .failure = TL_END_KILLED, .no_retry = true}};
  tl_tid tids[2] = {l[0].tid, l[0].tid};
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_updates(e->s, "e1", tids, batch, 2, NULL));
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * A task set's own max_task_failures
 * ------------------------------------------------------------------------------------------- */

/* Fails index 0 of ts on e1 until the task set aborts; returns the failures it took. */
static unsigned fail_until_aborted(tlt_env *e, tl_taskset_id ts, unsigned limit) {
  tl_launch l[1];
  size_t failed = tlt_count(e, 0, TLT_EV_FAILED);
  for (unsigned k = 1; k <= limit; k++) {
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
    ck_assert_uint_eq(l[0].taskset, ts);
    tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);
    if (tlt_count(e, 0, TLT_EV_FAILED) > failed) {
      ck_assert_uint_eq(tlt_last(e, TLT_EV_FAILED)->ts.id, ts);
      ck_assert_uint_eq(tlt_released(e, ts), 1);
      return k;
    }
    ck_assert_uint_eq(tlt_ts(e, ts).pending, 1);
  }
  return 0;
}

START_TEST(a_task_set_overrides_max_task_failures) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 4;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  /* Fewer than the config's. */
  tl_taskset_id low = submit_max(e, 0, 1, 2);
  ck_assert_uint_eq(tlt_ts(e, low).max_task_failures, 2);
  ck_assert_uint_eq(fail_until_aborted(e, low, 10), 2);
  ck_assert_ptr_nonnull(strstr(tlt_last(e, TLT_EV_FAILED)->text, "failed 2 times"));
  /* More than the config's. */
  tl_taskset_id high = submit_max(e, 1, 1, 7);
  char buf[1024];
  TLT_OK(e, tl_explain_taskset(e->s, high, buf, sizeof buf));
  ck_assert_ptr_nonnull(strstr(buf, "max_task_failures: 7 (the config's 4)"));
  ck_assert_uint_eq(fail_until_aborted(e, high, 10), 7);
  /* 0: the config's; and exactly one failure allowed. */
  tl_taskset_id dflt = submit_max(e, 2, 1, 0);
  ck_assert_uint_eq(tlt_ts(e, dflt).max_task_failures, 4);
  TLT_OK(e, tl_explain_taskset(e->s, dflt, buf, sizeof buf));
  ck_assert_ptr_null(strstr(buf, "max_task_failures"));
  ck_assert_uint_eq(fail_until_aborted(e, dflt, 10), 4);
  tl_taskset_id one = submit_max(e, 3, 1, 1);
  ck_assert_uint_eq(fail_until_aborted(e, one, 10), 1);
  tl_taskset_id most = submit_max(e, 4, 1, UINT16_MAX);
  ck_assert_uint_eq(tlt_ts(e, most).max_task_failures, UINT16_MAX);
  TLT_OK(e, tl_cancel_stage(e->s, 4, NULL));
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 5);
  tlt_end(e);
}
END_TEST

START_TEST(max_task_failures_past_65535_is_refused) {
  tlt_env *e = tlt_new(NULL);
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 1, .max_task_failures = UINT16_MAX + 1u};
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  d.max_task_failures = UINT32_MAX;
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Tags
 * ------------------------------------------------------------------------------------------- */

START_TEST(tags_are_copied_and_listed) {
  tlt_env *e = tlt_new(NULL);
  char one[8] = "one", two[TL_TAG_MAX];
  memset(two, 'x', sizeof two - 1);
  two[sizeof two - 1] = '\0'; /* the longest */
  const char *tags[2] = {one, two};
  tl_taskset_id ts = submit_tagged(e, 0, 1, tags, 2);
  strcpy(one, "ONE"); /* the caller's copy changes; the task set's does not */
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.ntags, 2);
  tl_tag_info out[3];
  size_t n = 99;
  TLT_OK(e, tl_taskset_tags(e->s, ts, out, 3, &n));
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(out[0].tag, "one");
  ck_assert_str_eq(out[1].tag, two);
  TLT_OK(e, tl_taskset_tags(e->s, ts, out, 1, &n)); /* cut: the count is the whole */
  ck_assert_uint_eq(n, 2);
  TLT_OK(e, tl_taskset_tags(e->s, ts, NULL, 0, &n));
  ck_assert_uint_eq(n, 2);
  char buf[1024];
  TLT_OK(e, tl_explain_taskset(e->s, ts, buf, sizeof buf));
  ck_assert_ptr_nonnull(strstr(buf, "tags: one xxx"));
  tl_taskset_list(e->s, &st, 1, &n);
  ck_assert_uint_eq(st.ntags, 2);
  /* No tags. */
  tl_taskset_id plain = tlt_submit(e, 1, 0, 0, 1);
  ck_assert_uint_eq(tlt_ts(e, plain).ntags, 0);
  TLT_OK(e, tl_taskset_tags(e->s, plain, out, 3, &n));
  ck_assert_uint_eq(n, 0);
  TLT_ERR(e, TL_EINVAL, tl_taskset_tags(e->s, ts, NULL, 1, &n));
  TLT_ERR(e, TL_EINVAL, tl_taskset_tags(e->s, ts, out, 1, NULL));
  TLT_ERR(e, TL_EINVAL, tl_taskset_tags(NULL, ts, out, 1, &n));
  TLT_ERR(e, TL_ENOENT, tl_taskset_tags(e->s, 999, out, 1, &n));
  ck_assert_uint_eq(n, 0);
  TLT_OK(e, tl_cancel_stage(e->s, 0, NULL));
  TLT_OK(e, tl_cancel_stage(e->s, 1, NULL));
  TLT_ERR(e, TL_ENOENT, tl_taskset_tags(e->s, ts, out, 1, &n));
  tlt_end(e);
}
END_TEST

START_TEST(bad_tags_are_refused) {
  tlt_env *e = tlt_new(NULL);
  char toolong[TL_TAG_MAX + 1];
  memset(toolong, 'y', TL_TAG_MAX);
  toolong[TL_TAG_MAX] = '\0';
  const char *bad[] = {"", "a,b", "a b", "q\"", "b\\", "tab\t", "\x7f", "\xc3\xa9", toolong, NULL};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *tags[2] = {"fine", bad[i]};
    tl_taskset_desc d = {.stage_id = 0, .ntasks = 1, .tags = tags, .ntags = 2};
    TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
    size_t n = 7;
    TLT_ERR(e, TL_EINVAL, tl_cancel_tag(e->s, bad[i], true, NULL, &n));
    ck_assert_uint_eq(n, 0);
    TLT_ERR(e, TL_EINVAL, tl_kill_tag(e->s, bad[i], true, NULL, &n));
  }
  const char *dup[2] = {"same", "same"};
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 1, .tags = dup, .ntags = 2};
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  d.tags = NULL; /* NULL with a count */
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  const char *many[TL_TAGS_MAX + 1];
  char names[TL_TAGS_MAX + 1][8];
  for (int i = 0; i <= TL_TAGS_MAX; i++) {
    snprintf(names[i], sizeof names[i], "t%d", i);
    many[i] = names[i];
  }
  d.tags = many;
  d.ntags = TL_TAGS_MAX + 1;
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  d.ntags = TL_TAGS_MAX; /* the most */
  tl_taskset_id ts = tlt_submit_desc(e, &d);
  ck_assert_uint_eq(tlt_ts(e, ts).ntags, TL_TAGS_MAX);
  size_t n;
  TLT_ERR(e, TL_EINVAL, tl_cancel_tag(NULL, "t0", false, NULL, &n));
  TLT_OK(e, tl_cancel_tag(e->s, "t15", false, NULL, NULL)); /* ntasksets may be NULL */
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Cancel and kill by tag (SCS "cancel jobs by tag", JCS "job group / interruptOnCancel")
 * ------------------------------------------------------------------------------------------- */

START_TEST(cancelling_a_tag_cancels_every_task_set_that_has_it) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  const char *one[1] = {"one"}, *both[2] = {"two", "one"}, *two[1] = {"two"};
  tl_taskset_id a = submit_tagged(e, 0, 2, one, 1);
  tl_taskset_id b = submit_tagged(e, 1, 2, both, 2);
  tl_taskset_id c = submit_tagged(e, 2, 2, two, 1);
  tl_taskset_id idle = submit_tagged(e, 3, 1, one, 1); /* nothing of it will run */
  tl_offer offers[2] = {{"e1", 2}, {"e2", 2}};
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offers(e, offers, 2, l, 4), 4); /* a's two and b's two */
  size_t mark = tlt_mark(e);
  size_t n = 0;
  TLT_OK(e, tl_cancel_tag(e->s, "one", true, "user asked", &n));
  ck_assert_uint_eq(n, 3); /* a, b (attempts killed, aborted) and idle (aborted) */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 4);
  for (size_t i = 0; i < 4; i++) {
    const tlt_event *k = tlt_nth(e, mark, TLT_EV_KILL, i);
    ck_assert(k->interrupt);
    ck_assert_str_eq(k->text, "part of cancelled job tag one: user asked");
  }
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 3);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_FAILED, 0)->ts.id, a);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_FAILED, 1)->ts.id, b);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_FAILED, 2)->ts.id, idle);
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_FAILED, 1)->text,
                   "Stage 1 cancelled: part of cancelled job tag one: user asked");
  ck_assert_uint_eq(tlt_released(e, idle), 1); /* nothing ran: released at once */
  ck_assert(tlt_ts(e, a).zombie && tlt_ts(e, b).failed);
  ck_assert(!tlt_ts(e, c).zombie); /* "two" alone is untouched */
  ck_assert_uint_eq(tlt_ts(e, c).pending, 2);
  /* Again: the zombies' attempts are asked to die again, nothing is aborted twice. */
  mark = tlt_mark(e);
  TLT_OK(e, tl_cancel_tag(e->s, "one", false, NULL, &n));
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 4);
  ck_assert(!tlt_nth(e, mark, TLT_EV_KILL, 0)->interrupt);
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_KILL, 0)->text, "part of cancelled job tag one");
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  for (size_t i = 0; i < 4; i++)
    tlt_killed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(tlt_released(e, a), 1);
  ck_assert_uint_eq(tlt_released(e, b), 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, 2); /* c's, which now runs */
  ck_assert_uint_eq(tlt_offers(e, offers, 2, l, 8), 2);
  /* A tag no task set has: nothing happens. */
  mark = tlt_mark(e);
  TLT_OK(e, tl_cancel_tag(e->s, "one", true, NULL, &n));
  ck_assert_uint_eq(n, 0);
  TLT_OK(e, tl_kill_tag(e->s, "three", true, NULL, &n));
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(tlt_mark(e), mark);
  tlt_succeed(e, l[0].executor_id, l[0].tid);
  tlt_succeed(e, l[1].executor_id, l[1].tid);
  ck_assert_uint_eq(tlt_released(e, c), 1);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 3);
  tlt_end(e);
}
END_TEST

/* Killing a tag kills the running attempts and keeps the task sets: the tasks run again, as
 * Spark's killAllTaskAttempts; attempts frozen on a pending-loss executor are left to its loss. */
START_TEST(killing_a_tag_kills_attempts_and_keeps_the_task_sets) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  const char *etl[1] = {"etl"};
  tl_taskset_id a = submit_tagged(e, 0, 2, etl, 1);
  tl_taskset_id b = submit_tagged(e, 1, 2, etl, 1);
  tl_taskset_id other = tlt_submit(e, 2, 0, 0, 1);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 8), 2);     /* a's two */
  ck_assert_uint_eq(tlt_offer(e, "e2", 2, l + 2, 8), 2); /* b's two */
  tl_loss_reason pending = {.kind = TL_LOSS_PENDING};
  TLT_OK(e, tl_executor_lost(e->s, "e2", &pending)); /* b's attempts frozen */
  size_t mark = tlt_mark(e);
  size_t n = 0;
  TLT_OK(e, tl_kill_tag(e->s, "etl", true, "speed", &n));
  ck_assert_uint_eq(n, 1); /* only a had an attempt to kill */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 2);
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_KILL, 0)->text, "speed");
  ck_assert(tlt_nth(e, mark, TLT_EV_KILL, 0)->interrupt);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  ck_assert(!tlt_ts(e, a).zombie && !tlt_ts(e, b).zombie);
  tlt_killed(e, "e1", l[0].tid);
  tlt_killed(e, "e1", l[1].tid);
  ck_assert_uint_eq(tlt_ts(e, a).pending, 2); /* retried, nothing counted */
  ck_assert_uint_eq(tlt_ts(e, other).pending, 1);
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_ts(e, b).pending, 2);
  /* Then the three run to the end. */
  for (int round = 0; round < 4 && tlt_stats(e).tasks_pending > 0; round++) {
    size_t got = tlt_offer(e, "e1", 2, l, 8);
    for (size_t i = 0; i < got; i++)
      tlt_succeed(e, "e1", l[i].tid);
  }
  ck_assert_uint_eq(tlt_released(e, a) + tlt_released(e, b) + tlt_released(e, other), 3);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The journal: the new fields and calls are written (docs/journal.md, version 3) and replay
 * ------------------------------------------------------------------------------------------- */

START_TEST(the_journal_records_the_policy_and_tags_and_replays) {
  tlt_journal c = {0};
  tl_config cfg = tlt_config();
  cfg.journal = tlt_journal_line;
  cfg.journal_ud = &c;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  const char *tags[2] = {"etl", "job \x01"}; /* refused: not journaled */
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 2, .tags = tags, .ntags = 2};
  unsigned before = c.lines;
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  tlt_dispatch_all(e);
  ck_assert_uint_eq(c.lines, before);
  tags[1] = "job-1";
  d.max_task_failures = 2;
  tl_taskset_id a = tlt_submit_desc(e, &d);
  ck_assert_ptr_nonnull(strstr(c.text, " max_failures=2 tags=2 \"etl\" \"job-1\" = OK ts=1"));
  tl_taskset_desc d2 = {.stage_id = 1, .ntasks = 2, .tags = tags, .ntags = 1};
  tl_taskset_id b = tlt_submit_desc(e, &d2);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  TLT_OK(e, fail_with(e, "e1", l[0].tid, TL_END_EXCEPTION, "exists", true));
  ck_assert_ptr_nonnull(
      strstr(c.text, "FAILED EXCEPTION \"exists\" result=0 size=0 no_retry=1 = OK"));
  size_t n;
  TLT_OK(e, tl_kill_tag(e->s, "etl", true, NULL, &n));
  ck_assert_uint_eq(n, 2);
  TLT_OK(e, tl_cancel_tag(e->s, "etl", false, "stop", &n));
  ck_assert_uint_eq(n, 2);
  tlt_dispatch_all(e);
  ck_assert_ptr_nonnull(strstr(c.text, " kill_tag \"etl\" interrupt=1 - = OK tasksets=2\n"));
  ck_assert_ptr_nonnull(
      strstr(c.text, " cancel_tag \"etl\" interrupt=0 \"stop\" = OK tasksets=2\n"));
  for (int i = 1; i < 4; i++)
    tlt_killed(e, "e1", l[i].tid);
  ck_assert_uint_eq(tlt_released(e, a) + tlt_released(e, b), 2);
  tlt_dispatch_all(e);
  ck_assert_int_eq(strncmp(c.text, "# taskledger journal v3\n", 24), 0);
  tlr_report r;
  int verdict = tlr_replay_text(c.text, NULL, &r);
  ck_assert_msg(verdict == TLR_OK, "%d at line %zu: %s", verdict, r.bad_line, r.why);
  tl_stats now = tlt_stats(e);
  tlt_assert_stats_same_but_memory(&now, &r.final, "replayed state");
  /* A replay that cancels differently is seen: the count is checked. */
  char *changed = strdup(c.text);
  ck_assert_ptr_nonnull(changed);
  char *at = strstr(changed, "cancel_tag \"etl\" interrupt=0 \"stop\" = OK tasksets=2");
  at[strlen("cancel_tag \"etl\" interrupt=0 \"stop\" = OK tasksets=")] = '3';
  ck_assert_int_eq(tlr_replay_text(changed, NULL, &r), TLR_BROKEN);
  free(changed);
  tlt_end(e);
  free(c.text);
}
END_TEST

START_TEST(malformed_policy_lines_are_refused_by_the_replayer) {
  static const char *const bad[] = {
      "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - tags=2 "
      "\"a\" = OK ts=1",
      "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - tags=17 "
      "\"a\" \"b\" \"c\" \"d\" \"e\" \"f\" \"g\" \"h\" \"i\" \"j\" \"k\" \"l\" \"m\" \"n\" \"o\" "
      "\"p\" \"q\" = OK ts=1",
      "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - tags=0 "
      "= OK ts=1",
      "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - tags=1 "
      "x = OK ts=1",
      "@0 update \"e\" tid=1 FAILED EXCEPTION - result=0 size=0 no_retry=x = ESTALE",
      "@0 cancel_tag \"t\" interrupt=1 = OK tasksets=0",
      "@0 kill_tag t interrupt=1 - = OK tasksets=0",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text, "# taskledger journal v3\nconfig start=0\n%s\n", bad[i]);
    tlr_report r;
    ck_assert_msg(tlr_replay_text(text, NULL, &r) == TLR_BAD_INPUT, "line %zu replayed", i);
  }
  /* And a well-formed one of each replays. */
  const char *good = "# taskledger journal v3\nconfig start=0\n"
                     "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 "
                     "barrier=0 - max_failures=9 tags=1 \"t\" = OK ts=1\n"
                     "@0 kill_tag \"t\" interrupt=1 - = OK tasksets=0\n"
                     "@0 cancel_tag \"t\" interrupt=1 - = OK tasksets=1\n";
  tlr_report r;
  int verdict = tlr_replay_text(good, NULL, &r);
  ck_assert_msg(verdict == TLR_OK, "%d at line %zu: %s", verdict, r.bad_line, r.why);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Out of memory (oom_sweep.c): every allocation of each call fails in turn, transiently and
 * persistently, with and without a journal; a failed call changed nothing.
 * ------------------------------------------------------------------------------------------- */

static const char *const tag_etl[2] = {"etl", "nightly"};
static const char *const tag_adhoc[1] = {"adhoc"};

static int oom_submit_desc(tlt_env *e, uint32_t stage, uint32_t ntasks, uint32_t max,
                           const char *const *tags, uint32_t ntags) {
  tl_taskset_desc d = {
      .stage_id = stage, .ntasks = ntasks, .max_task_failures = max, .tags = tags, .ntags = ntags};
  return tlt_submit_desc_rc(e, &d, NULL);
}

static int oom_offer(tlt_env *e, oom_ctx *c, const char *exec, uint32_t cores) {
  tl_offer o = {.executor_id = exec, .cores = cores};
  c->nout = 0;
  int rc = tl_resource_offers(e->s, &o, 1, c->out, cores, &c->nout);
  if (rc == TL_OK) {
    memcpy(&c->log[c->nlog], c->out, c->nout * sizeof *c->out);
    c->nlog += c->nout;
  }
  return rc;
}

static int oom_add(tlt_env *e, const char *id, const char *host, uint32_t cores) {
  tl_executor_desc d = {.id = id, .host = host, .cores = cores};
  return tl_executor_add(e->s, &d);
}

static void build_one_executor(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(oom_add(e, "e1", "h1", 4));
}

static int call_submit_tagged(tlt_env *e, oom_ctx *c) {
  (void)c;
  return oom_submit_desc(e, 0, 3, 2, tag_etl, 2);
}

static int call_submit_max_only(tlt_env *e, oom_ctx *c) {
  (void)c;
  return oom_submit_desc(e, 0, 3, 9, NULL, 0);
}

/* Stage 0 (etl, nightly; max 2) runs 3 on e1, 1 frozen on e2 (pending loss); stage 1 (adhoc)
 * runs 2 on e1; stage 2 (etl) waits, nothing running. */
static void build_tagged_sets(tlt_env *e, oom_ctx *c) {
  B_OK(oom_add(e, "e1", "h1", 5));
  B_OK(oom_add(e, "e2", "h2", 1));
  B_OK(oom_submit_desc(e, 0, 4, 2, tag_etl, 2));
  B_OK(oom_offer(e, c, "e2", 1));
  B_OK(oom_offer(e, c, "e1", 3));
  B_OK(oom_submit_desc(e, 1, 2, 0, tag_adhoc, 1));
  B_OK(oom_offer(e, c, "e1", 2));
  tl_loss_reason why = {.kind = TL_LOSS_PENDING};
  B_OK(tl_executor_lost(e->s, "e2", &why));
  B_OK(oom_submit_desc(e, 2, 2, 0, tag_etl, 1));
}

static int call_cancel_etl(tlt_env *e, oom_ctx *c) {
  (void)c;
  size_t n;
  return tl_cancel_tag(e->s, "etl", true, "user cancelled", &n);
}

static int call_cancel_etl_no_reason(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_cancel_tag(e->s, "etl", false, NULL, NULL);
}

static int call_kill_etl(tlt_env *e, oom_ctx *c) {
  (void)c;
  size_t n;
  return tl_kill_tag(e->s, "etl", true, "speed", &n);
}

static int call_kill_adhoc_no_reason(tlt_env *e, oom_ctx *c) {
  (void)c;
  size_t n;
  return tl_kill_tag(e->s, "adhoc", false, NULL, &n);
}

static int call_cancel_unknown(tlt_env *e, oom_ctx *c) {
  (void)c;
  size_t n;
  return tl_cancel_tag(e->s, "none", true, "x", &n);
}

/* A no_retry failure of stage 0's first launch on e1: its task set is aborted. */
static int call_no_retry_failure(tlt_env *e, oom_ctx *c) {
  tl_update u = {.state = TL_TASK_FAILED,
                 .failure = TL_END_EXCEPTION,
                 .message = "output file exists",
                 .no_retry = true};
  return tl_status_update(e->s, "e1", c->log[1].tid, &u);
}

START_TEST(oom_retry_policy_and_tags) {
  const oom_scenario sc[] = {
      {"tl_submit", "with tags and max_task_failures", NULL, build_one_executor, call_submit_tagged,
       OOM_ALLOCATES, 0},
      {"tl_submit", "with max_task_failures only", NULL, build_one_executor, call_submit_max_only,
       OOM_ALLOCATES, 0},
      {"tl_status_update", "a no_retry failure aborts", NULL, build_tagged_sets,
       call_no_retry_failure, OOM_ALLOCATES, 0},
      {"tl_cancel_tag", "two task sets, running, frozen and idle", NULL, build_tagged_sets,
       call_cancel_etl, OOM_ALLOCATES, 0},
      {"tl_cancel_tag", "the same without a reason", NULL, build_tagged_sets,
       call_cancel_etl_no_reason, OOM_ALLOCATES, 0},
      {"tl_cancel_tag", "a tag no task set has", NULL, build_tagged_sets, call_cancel_unknown, 0,
       0},
      {"tl_kill_tag", "running attempts killed, frozen left", NULL, build_tagged_sets,
       call_kill_etl, OOM_ALLOCATES, 0},
      {"tl_kill_tag", "without a reason", NULL, build_tagged_sets, call_kill_adhoc_no_reason, 0, 0},
  };
  SWEEP_ALL("retry policy and tags", sc);
}
END_TEST

Suite *tl_retry_tags_suite(void) {
  Suite *s = suite_create("retry_tags");
  TCase *tc = tlt_tcase(s, "no_retry");
  tcase_add_test(tc, a_no_retry_failure_aborts_at_the_first);
  tcase_add_test(tc, without_the_flag_the_same_failure_is_retried);
  tcase_add_test(tc, a_no_retry_failure_that_does_not_count_aborts_nothing);
  tcase_add_test(tc, a_no_retry_failure_of_a_copy_that_lost_the_race_aborts_nothing);
  tcase_add_test(tc, no_retry_is_refused_where_nothing_could_count);
  tc = tlt_tcase(s, "max_task_failures");
  tcase_add_test(tc, a_task_set_overrides_max_task_failures);
  tcase_add_test(tc, max_task_failures_past_65535_is_refused);
  tc = tlt_tcase(s, "tags");
  tcase_add_test(tc, tags_are_copied_and_listed);
  tcase_add_test(tc, bad_tags_are_refused);
  tcase_add_test(tc, cancelling_a_tag_cancels_every_task_set_that_has_it);
  tcase_add_test(tc, killing_a_tag_kills_attempts_and_keeps_the_task_sets);
  tc = tlt_tcase(s, "journal");
  tcase_add_test(tc, the_journal_records_the_policy_and_tags_and_replays);
  tcase_add_test(tc, malformed_policy_lines_are_refused_by_the_replayer);
  tc = tlt_tcase(s, "oom");
  tcase_add_test(tc, oom_retry_policy_and_tags);
  return s;
}

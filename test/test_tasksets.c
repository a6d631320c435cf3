/* Task sets: submission and its validation, zombie on a newer attempt, the release rules
 * (exactly once, with the payload, when zombie with nothing running), failure counting and
 * abort, tl_kill_task, tl_kill_stage, tl_cancel_stage and tl_partition_completed.
 */
#include "harness.h"

#include <string.h>

static int submit_raw(tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t ntasks,
                      tl_taskset_id *out) {
  static int payload; /* stays the caller's on error */
  tl_taskset_desc d = {
      .stage_id = stage, .stage_attempt = attempt, .ntasks = ntasks, .payload = &payload};
  return tl_submit(e->s, &d, out);
}

START_TEST(submit_assigns_ids_from_one_and_revives_offers) {
  tlt_env *e = tlt_new(NULL);
  size_t mark = tlt_mark(e);
  tl_taskset_id a = tlt_submit(e, 3, 0, 0, 5);
  ck_assert_uint_eq(a, 1);
  ck_assert_str_eq(tlt_seq_all(e, mark), "revive");
  tl_taskset_id b = tlt_submit(e, 4, 0, 0, 2);
  ck_assert_uint_eq(b, 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 2);
  tl_taskset_status st = tlt_ts(e, a);
  ck_assert_uint_eq(st.info.stage_id, 3);
  ck_assert_uint_eq(st.info.stage_attempt, 0);
  ck_assert_uint_eq(st.info.ntasks, 5);
  ck_assert(!st.zombie);
  ck_assert(!st.failed);
  ck_assert_uint_eq(st.running, 0);
  ck_assert_uint_eq(st.pending, 5);
  ck_assert_uint_eq(st.succeeded, 0);
  ck_assert_uint_eq(st.cpus_per_task, 1);
  tl_stats s = tlt_stats(e);
  ck_assert_uint_eq(s.tasksets_active, 2);
  ck_assert_uint_eq(s.tasks_pending, 7);
  tlt_end(e);
}
END_TEST

START_TEST(submit_out_may_be_null) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  TLT_OK(e, tlt_submit_null_out(e, 1, 0, 2));
  ck_assert_uint_eq(tlt_stats(e).tasksets_active, 1);
  /* It took id 1: the next one is 2, and its launches name 1. */
  ck_assert_uint_eq(tlt_submit(e, 2, 0, 1, 1), 2);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  ck_assert_uint_eq(l[0].taskset, 1);
  tlt_end(e);
}
END_TEST

START_TEST(submit_rejects_bad_descriptors) {
  tlt_env *e = tlt_new(NULL);
  static int payload;
  tl_taskset_desc d = {.stage_id = 1, .ntasks = 1, .payload = &payload};
  TLT_ERR(e, TL_EINVAL, tl_submit(NULL, &d, NULL));
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, NULL, NULL));
  tl_taskset_id id = 77;
  TLT_ERR(e, TL_EINVAL, submit_raw(e, 1, 0, 0, &id));
  TLT_ERR(e, TL_EINVAL, submit_raw(e, 1, 0, UINT32_MAX, &id));
  ck_assert_uint_eq(tlt_stats(e).tasksets_active, 0);
  /* The next good submission still gets id 1: failed calls consumed nothing. */
  ck_assert_uint_eq(tlt_submit(e, 1, 0, 0, 1), 1);
  tlt_end(e);
}
END_TEST

START_TEST(submit_of_a_live_stage_attempt_is_eexist) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id a0 = tlt_submit(e, 1, 0, 0, 2);
  TLT_ERR(e, TL_EEXIST, submit_raw(e, 1, 0, 2, NULL));
  /* Still live as a zombie (it runs a task): still EEXIST. */
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tl_taskset_id a1 = tlt_submit(e, 1, 1, 0, 2);
  ck_assert(tlt_ts(e, a0).zombie);
  TLT_ERR(e, TL_EEXIST, submit_raw(e, 1, 0, 2, NULL));
  TLT_ERR(e, TL_EEXIST, submit_raw(e, 1, 1, 2, NULL));
  /* The same attempt number of another stage is fine. */
  tlt_submit(e, 2, 0, 0, 1);
  tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_released(e, a0), 1);
  (void)a1;
  tlt_end(e);
}
END_TEST

START_TEST(newer_attempt_makes_the_older_zombie_and_releases_it_when_idle) {
  tlt_env *e = tlt_new(NULL);
  tl_taskset_id a0 = tlt_submit(e, 5, 0, 0, 3);
  size_t mark = tlt_mark(e);
  tl_taskset_id a1 = tlt_submit(e, 5, 1, 0, 3);
  /* Nothing of a0 ran: it is released at once, with its payload. */
  ck_assert_uint_eq(tlt_released(e, a0), 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_RELEASED), 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  tl_taskset_status st;
  TLT_ERR(e, TL_ENOENT, tl_taskset_get(e->s, a0, &st));
  tl_stats s = tlt_stats(e);
  ck_assert_uint_eq(s.tasksets_active, 1);
  ck_assert_uint_eq(s.tasksets_zombie, 0);
  ck_assert_uint_eq(s.tasks_pending, 3);
  ck_assert_uint_eq(s.tasksets_released, 1);
  ck_assert(!tlt_ts(e, a1).zombie);
  tlt_end(e);
}
END_TEST

START_TEST(zombie_attempts_keep_running_and_report) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id a0 = tlt_submit(e, 5, 0, 0, 4);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tl_taskset_id a1 = tlt_submit(e, 5, 1, 0, 4);
  tl_taskset_status st = tlt_ts(e, a0);
  ck_assert(st.zombie);
  ck_assert(!st.failed);
  ck_assert_uint_eq(st.running, 2);
  ck_assert_uint_eq(st.pending, 0);
  tl_stats s = tlt_stats(e);
  ck_assert_uint_eq(s.tasksets_zombie, 1);
  ck_assert_uint_eq(s.tasksets_active, 1);
  ck_assert_uint_eq(s.tasks_pending, 4); /* only the active attempt's */
  /* The zombie's attempts report as usual; a failure is neither retried nor counted in the
   * zombie (counts_toward_failures says whether it was counted; Spark counts only while not
   * zombie). */
  size_t mark = tlt_mark(e);
  tlt_run(e, "e1", l[0].tid);
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_ts(e, a0).pending, 0);
  ck_assert_uint_eq(tlt_ts(e, a0).running, 1);
  ck_assert_uint_eq(tlt_released(e, a0), 0);
  tlt_succeed(e, "e1", l[1].tid);
  char want[256];
  snprintf(want, sizeof want,
           "ended tid=%ju kind=EXCEPTION counts=0\nended tid=%ju kind=SUCCESS counts=0\n"
           "released ts=%ju",
           (uintmax_t)l[0].tid, (uintmax_t)l[1].tid, (uintmax_t)a0);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  /* The active attempt launches normally. */
  tl_launch m[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, m, 2), 2);
  ck_assert_uint_eq(m[0].taskset, a1);
  ck_assert_uint_eq(m[1].taskset, a1);
  tlt_end(e);
}
END_TEST

START_TEST(release_waits_for_the_last_running_attempt) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 3);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 3), 3);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 0);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.succeeded, 2);
  ck_assert_uint_eq(st.running, 1);
  ck_assert(!st.zombie);
  size_t mark = tlt_mark(e);
  tlt_succeed(e, "e1", l[2].tid);
  char want[128];
  snprintf(want, sizeof want, "ended tid=%ju kind=SUCCESS counts=0\nreleased ts=%ju",
           (uintmax_t)l[2].tid, (uintmax_t)ts);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  const tlt_event *rel = tlt_last(e, TLT_EV_RELEASED);
  ck_assert_ptr_eq(rel->payload, tlt_sub(e, ts)->payload);
  ck_assert_uint_eq(rel->ts.ntasks, 3);
  TLT_ERR(e, TL_ENOENT, tl_taskset_get(e->s, ts, &st));
  ck_assert_uint_eq(tlt_stats(e).succeeded, 3);
  tlt_end(e);
}
END_TEST

START_TEST(cpus_per_task_defaults_to_the_config) {
  tl_config cfg = tlt_config();
  cfg.cpus_per_task = 2;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 5);
  tl_taskset_id a = tlt_submit(e, 0, 0, 0, 4);
  tl_taskset_id b = tlt_submit_cpus(e, 1, 0, 1, 4, 3);
  ck_assert_uint_eq(tlt_ts(e, a).cpus_per_task, 2);
  ck_assert_uint_eq(tlt_ts(e, b).cpus_per_task, 3);
  tl_launch l[8];
  /* 5 cores: two tasks of a (2 + 2), then b's 3 cores do not fit in the 1 left. */
  ck_assert_uint_eq(tlt_offer(e, "e1", 5, l, 8), 2);
  ck_assert_uint_eq(l[0].cpus, 2);
  ck_assert_uint_eq(l[1].cpus, 2);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 1);
  tlt_end(e);
}
END_TEST

START_TEST(counting_failures_abort_at_max_task_failures) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 2;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  ck_assert_uint_eq(l[0].index, 0);
  tlt_fail(e, "e1", l[0].tid, TL_END_RESULT_LOST);
  ck_assert(!tlt_ts(e, ts).failed);
  tl_launch m[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, m, 1), 1);
  ck_assert_uint_eq(m[0].index, 0);
  ck_assert_uint_eq(m[0].attempt, 1);
  size_t mark = tlt_mark(e);
  tlt_fail(e, "e1", m[0].tid, TL_END_EXCEPTION);
  char want[128];
  snprintf(want, sizeof want, "ended tid=%ju kind=EXCEPTION counts=1\nfailed ts=%ju",
           (uintmax_t)m[0].tid, (uintmax_t)ts);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  const tlt_event *f = tlt_last(e, TLT_EV_FAILED);
  ck_assert(f->has_text);
  ck_assert_uint_gt(strlen(f->text), 0);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert(st.failed);
  ck_assert_uint_eq(st.pending, 0);
  ck_assert_uint_eq(st.running, 1);
  /* The other attempt runs on; its end releases the set. */
  mark = tlt_mark(e);
  tlt_succeed(e, "e1", l[1].tid);
  snprintf(want, sizeof want, "ended tid=%ju kind=SUCCESS counts=0\nreleased ts=%ju",
           (uintmax_t)l[1].tid, (uintmax_t)ts);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  tlt_end(e);
}
END_TEST

START_TEST(non_counting_failures_never_abort) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  const tl_end_kind kinds[] = {TL_END_KILLED, TL_END_COMMIT_DENIED, TL_END_KILLED,
                               TL_END_COMMIT_DENIED};
  for (uint32_t i = 0; i < 4; i++) {
    tl_launch l[1];
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
    ck_assert_uint_eq(l[0].index, 0);
    ck_assert_uint_eq(l[0].attempt, i);
    tlt_run(e, "e1", l[0].tid);
    tlt_fail(e, "e1", l[0].tid, kinds[i]);
    const tlt_event *ev = tlt_ended_of(e, l[0].tid);
    ck_assert_int_eq(ev->end_kind, kinds[i]);
    ck_assert(!ev->counts);
    ck_assert(!tlt_ts(e, ts).failed);
  }
  /* A KILLED update is no failure either. */
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_killed(e, "e1", l[0].tid);
  ck_assert_int_eq(tlt_ended_of(e, l[0].tid)->end_kind, TL_END_KILLED);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  tl_stats st = tlt_stats(e);
  /* Two FAILED as TL_END_KILLED and one KILLED update are killed; two COMMIT_DENIED failed. */
  ck_assert_uint_eq(st.failed, 2);
  ck_assert_uint_eq(st.killed, 3);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 1);
  tlt_end(e);
}
END_TEST

START_TEST(fetch_failure_makes_the_set_zombie_without_failing_it) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 5);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  size_t mark = tlt_mark(e);
  tlt_fail(e, "e1", l[0].tid, TL_END_FETCH_FAILED);
  char want[128];
  snprintf(want, sizeof want, "ended tid=%ju kind=FETCH_FAILED counts=0", (uintmax_t)l[0].tid);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert(!st.failed);
  ck_assert_uint_eq(st.pending, 0);
  ck_assert_uint_eq(st.running, 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, 0);
  /* A zombie launches nothing. */
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 0);
  tlt_succeed(e, "e1", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  tlt_end(e);
}
END_TEST

START_TEST(kill_task_asks_the_executor_and_changes_nothing_else) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tl_stats before = tlt_stats(e);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_kill_task(e->s, l[1].tid, true, "speculation lost"));
  char want[64];
  snprintf(want, sizeof want, "kill tid=%ju exec=e1", (uintmax_t)l[1].tid);
  ck_assert_str_eq(tlt_seq_all(e, mark), want);
  const tlt_event *k = tlt_last(e, TLT_EV_KILL);
  ck_assert(k->interrupt);
  ck_assert(k->has_text);
  ck_assert_ptr_nonnull(strstr(k->text, "speculation lost"));
  tl_stats after = tlt_stats(e);
  tlt_assert_stats_same(&before, &after, "tl_kill_task");
  ck_assert_uint_eq(tlt_ts(e, ts).running, 2);
  /* The attempt ends when the executor reports it KILLED, and the index is retried. */
  tlt_killed(e, "e1", l[1].tid);
  ck_assert_int_eq(tlt_ended_of(e, l[1].tid)->end_kind, TL_END_KILLED);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 1);
  ck_assert_uint_eq(tlt_stats(e).killed, 1);
  /* Without interrupt and without a reason. */
  mark = tlt_mark(e);
  TLT_OK(e, tl_kill_task(e->s, l[0].tid, false, NULL));
  ck_assert(!tlt_last(e, TLT_EV_KILL)->interrupt);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 1);
  tlt_end(e);
}
END_TEST

START_TEST(kill_task_answers_every_documented_error) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tl_launch f[1];
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, f, 1), 1);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  TLT_ERR(e, TL_EINVAL, tl_kill_task(NULL, l[1].tid, false, NULL));
  TLT_ERR(e, TL_ESTALE, tl_kill_task(e->s, l[0].tid, false, NULL)); /* finished */
  TLT_ERR(e, TL_ESTALE, tl_kill_task(e->s, 9999, false, NULL));     /* never launched */
  TLT_ERR(e, TL_ESTALE, tl_kill_task(e->s, 0, false, NULL));
  TLT_ERR(e, TL_ESTALE, tl_kill_task(e->s, f[0].tid, false, NULL)); /* frozen */
  tlt_end(e);
}
END_TEST

START_TEST(kill_stage_kills_every_attempt_of_the_stage) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_taskset_id a0 = tlt_submit(e, 2, 0, 1, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 4), 2);
  tl_taskset_id a1 = tlt_submit(e, 2, 1, 1, 4);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l + 2, 2), 1);
  ck_assert_uint_eq(l[2].taskset, a1);
  tl_taskset_id other = tlt_submit(e, 3, 0, 0, 1); /* priority 0 goes first */
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l + 3, 1), 1);
  ck_assert_uint_eq(l[3].taskset, other);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_kill_stage(e->s, 2, true, "user asked"));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 3);
  bool seen[3] = {false, false, false};
  for (size_t i = 0; i < 3; i++) {
    const tlt_event *k = tlt_nth(e, mark, TLT_EV_KILL, i);
    ck_assert(k->interrupt);
    ck_assert_ptr_nonnull(strstr(k->text, "user asked"));
    for (size_t j = 0; j < 3; j++)
      if (k->kill_tid == l[j].tid)
        seen[j] = true;
    ck_assert_uint_ne(k->kill_tid, l[3].tid);
  }
  ck_assert(seen[0] && seen[1] && seen[2]);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  ck_assert(!tlt_ts(e, a1).zombie);
  ck_assert_uint_eq(tlt_ts(e, a0).running, 2);
  TLT_ERR(e, TL_ENOENT, tl_kill_stage(e->s, 99, false, NULL));
  TLT_ERR(e, TL_EINVAL, tl_kill_stage(NULL, 2, false, NULL));
  tlt_end(e);
}
END_TEST

/* Attempts frozen on a pending-loss executor are left out of tl_kill_stage. */
START_TEST(kill_stage_leaves_frozen_attempts_out) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_offer o[2] = {{"e1", 1}, {"e2", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_kill_stage(e->s, 0, false, NULL));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 1);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_KILL, 0)->kill_tid, l[0].tid);
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_KILL, 0)->executor, "e1");
  ck_assert_uint_eq(tlt_ts(e, ts).frozen, 1);
  /* Only frozen attempts running: nothing to kill, TL_OK, nothing changes. */
  tlt_killed(e, "e1", l[0].tid);
  TLT_ERR(e, TL_OK, tl_kill_stage(e->s, 0, false, NULL));
  tlt_end(e);
}
END_TEST

START_TEST(kill_stage_with_nothing_running_does_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_submit(e, 2, 0, 0, 4);
  TLT_ERR(e, TL_OK, tl_kill_stage(e->s, 2, false, "nothing to kill"));
  tlt_end(e);
}
END_TEST

START_TEST(cancel_stage_fails_the_active_attempt_and_releases_idle_sets) {
  tlt_env *e = tlt_new(NULL);
  tl_taskset_id ts = tlt_submit(e, 7, 0, 0, 4);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_cancel_stage(e->s, 7, "job aborted"));
  char want[64];
  snprintf(want, sizeof want, "failed ts=%ju\nreleased ts=%ju", (uintmax_t)ts, (uintmax_t)ts);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  const tlt_event *f = tlt_last(e, TLT_EV_FAILED);
  ck_assert_ptr_nonnull(strstr(f->text, "Stage 7 cancelled"));
  ck_assert_ptr_nonnull(strstr(f->text, "job aborted"));
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, 0);
  TLT_ERR(e, TL_ENOENT, tl_cancel_stage(e->s, 7, NULL));
  TLT_ERR(e, TL_EINVAL, tl_cancel_stage(NULL, 7, NULL));
  tlt_end(e);
}
END_TEST

START_TEST(cancel_stage_kills_zombie_attempts_but_fails_only_the_active_one) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_taskset_id a0 = tlt_submit(e, 4, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tl_taskset_id a1 = tlt_submit(e, 4, 1, 0, 2);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l + 1, 1), 1);
  ck_assert_uint_eq(l[1].taskset, a1);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_cancel_stage(e->s, 4, NULL));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 2);
  for (size_t i = 0; i < 2; i++)
    ck_assert(!tlt_nth(e, mark, TLT_EV_KILL, i)->interrupt);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 1);
  ck_assert_uint_eq(tlt_last(e, TLT_EV_FAILED)->ts.id, a1);
  ck_assert(tlt_ts(e, a0).zombie);
  ck_assert(tlt_ts(e, a1).zombie);
  ck_assert(tlt_ts(e, a1).failed);
  ck_assert(!tlt_ts(e, a0).failed);
  tlt_killed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_released(e, a0), 1);
  ck_assert_uint_eq(tlt_released(e, a1), 0);
  tlt_killed(e, "e1", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, a1), 1);
  tlt_end(e);
}
END_TEST

/* SPARK-18553 with a cancelled stage: attempts frozen on a pending-loss executor cannot be
 * killed, and they keep the zombie until the second phase of the loss ends them. */
START_TEST(cancel_stage_with_frozen_attempts_waits_for_the_second_phase) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_offer o[2] = {{"e1", 1}, {"e2", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "stop"));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 1);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_KILL, 0)->kill_tid, l[0].tid);
  tlt_killed(e, "e1", l[0].tid);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert_uint_eq(st.running, 1);
  ck_assert_uint_eq(st.frozen, 1);
  ck_assert_uint_eq(tlt_released(e, ts), 0);
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(partition_completed_marks_the_index_done) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 3, 1, 0, 3);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_partition_completed(e->s, 3, 0));
  ck_assert_str_eq(tlt_seq(e, mark), "");
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.succeeded, 1);
  ck_assert_uint_eq(st.pending, 2);
  ck_assert(!st.zombie);
  /* Index 0 is no longer launched. */
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  ck_assert_uint_eq(l[0].index, 1);
  /* Already done: TL_OK, nothing changes. */
  TLT_ERR(e, TL_OK, tl_partition_completed(e->s, 3, 0));
  TLT_ERR(e, TL_EINVAL, tl_partition_completed(e->s, 3, 3));
  TLT_ERR(e, TL_ENOENT, tl_partition_completed(e->s, 4, 0));
  TLT_ERR(e, TL_EINVAL, tl_partition_completed(NULL, 3, 0));
  /* The last pending index makes the set zombie; it is released after its running attempt. */
  TLT_OK(e, tl_partition_completed(e->s, 3, 2));
  st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.succeeded, 2);
  ck_assert_uint_eq(st.pending, 0);
  ck_assert(!st.zombie);
  TLT_OK(e, tl_partition_completed(e->s, 3, 1));
  st = tlt_ts(e, ts);
  ck_assert(st.zombie);
  ck_assert(!st.failed);
  ck_assert_uint_eq(st.running, 1);
  /* The running attempt of the completed index goes on and its result is still delivered. */
  tlt_succeed(e, "e1", l[0].tid);
  const tlt_event *ev = tlt_ended_of(e, l[0].tid);
  ck_assert_int_eq(ev->end_kind, TL_END_SUCCESS);
  ck_assert_ptr_nonnull(ev->result);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(partition_completed_of_the_last_index_releases_an_idle_set) {
  tlt_env *e = tlt_new(NULL);
  tl_taskset_id ts = tlt_submit(e, 3, 0, 0, 1);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_partition_completed(e->s, 3, 0));
  char want[32];
  snprintf(want, sizeof want, "released ts=%ju", (uintmax_t)ts);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  tlt_end(e);
}
END_TEST

START_TEST(partition_completed_with_only_zombie_attempts_changes_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 3, 0, 0, 3);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_fail(e, "e1", l[0].tid, TL_END_FETCH_FAILED);
  ck_assert(tlt_ts(e, ts).zombie);
  TLT_ERR(e, TL_OK, tl_partition_completed(e->s, 3, 2));
  ck_assert_uint_eq(tlt_ts(e, ts).running, 1);
  tlt_succeed(e, "e1", l[1].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  TLT_ERR(e, TL_ENOENT, tl_partition_completed(e->s, 3, 2));
  tlt_end(e);
}
END_TEST

/* tl_taskset_list: every task set the ledger holds, active and zombie, in submission order (not
 * by stage), each as tl_taskset_get gives it; a released one is gone; the count whatever cap
 * is. */
START_TEST(taskset_list_lists_active_and_zombie_sets_in_submission_order) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  size_t n = 99;
  tl_taskset_status list[4];
  TLT_OK(e, tl_taskset_list(e->s, list, 4, &n));
  ck_assert_uint_eq(n, 0);
  tl_taskset_id a = tlt_submit(e, 1, 0, 0, 1); /* runs and is released */
  tl_taskset_id b = tlt_submit(e, 2, 0, 0, 3); /* becomes zombie with an attempt running */
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  ck_assert_uint_eq(l[0].taskset, a);
  ck_assert_uint_eq(l[1].taskset, b);
  tl_taskset_id c = tlt_submit(e, 2, 1, 0, 3); /* b's stage again: b is zombie */
  tl_taskset_id d = tlt_submit(e, 0, 0, 7, 2); /* a lower stage, submitted last */
  tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_released(e, a), 1);
  TLT_OK(e, tl_taskset_list(e->s, NULL, 0, &n));
  ck_assert_uint_eq(n, 3);
  memset(list, 0xab, sizeof list);
  TLT_OK(e, tl_taskset_list(e->s, list, 2, &n));
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(list[0].info.id, b);
  ck_assert(list[0].zombie);
  ck_assert_uint_eq(list[0].running, 1);
  ck_assert_uint_eq(list[1].info.id, c);
  ck_assert_uint_eq(list[1].info.stage_id, 2);
  ck_assert_uint_eq(list[1].info.stage_attempt, 1);
  ck_assert_uint_eq(list[2].running, 0xabababab); /* past cap: untouched */
  TLT_OK(e, tl_taskset_list(e->s, list, 4, &n));
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(list[2].info.id, d);
  ck_assert_uint_eq(list[3].running, 0xabababab);
  for (size_t i = 0; i < 3; i++) { /* each as tl_taskset_get gives it */
    tl_taskset_status one = tlt_ts(e, list[i].info.id);
    ck_assert_uint_eq(one.info.stage_id, list[i].info.stage_id);
    ck_assert_uint_eq(one.info.stage_attempt, list[i].info.stage_attempt);
    ck_assert_uint_eq(one.info.ntasks, list[i].info.ntasks);
    ck_assert(one.zombie == list[i].zombie && one.failed == list[i].failed);
    ck_assert_uint_eq(one.running, list[i].running);
    ck_assert_uint_eq(one.frozen, list[i].frozen);
    ck_assert_uint_eq(one.pending, list[i].pending);
    ck_assert_uint_eq(one.succeeded, list[i].succeeded);
    ck_assert_uint_eq(one.cpus_per_task, list[i].cpus_per_task);
    ck_assert_uint_eq(one.locality_levels, list[i].locality_levels);
    ck_assert_int_eq(one.locality, list[i].locality);
  }
  ck_assert_int_eq(tl_taskset_list(NULL, list, 4, &n), TL_EINVAL);
  ck_assert_int_eq(tl_taskset_list(e->s, list, 4, NULL), TL_EINVAL);
  ck_assert_int_eq(tl_taskset_list(e->s, NULL, 1, &n), TL_EINVAL);
  tlt_succeed(e, "e1", l[1].tid); /* b's last attempt: released */
  TLT_OK(e, tl_taskset_list(e->s, list, 4, &n));
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(list[0].info.id, c);
  ck_assert_uint_eq(list[1].info.id, d);
  tlt_end(e);
}
END_TEST

Suite *tl_tasksets_suite(void) {
  Suite *s = suite_create("tasksets");
  TCase *tc = tlt_tcase(s, "submit");
  tcase_add_test(tc, submit_assigns_ids_from_one_and_revives_offers);
  tcase_add_test(tc, submit_out_may_be_null);
  tcase_add_test(tc, submit_rejects_bad_descriptors);
  tcase_add_test(tc, submit_of_a_live_stage_attempt_is_eexist);
  tcase_add_test(tc, newer_attempt_makes_the_older_zombie_and_releases_it_when_idle);
  tcase_add_test(tc, zombie_attempts_keep_running_and_report);
  tcase_add_test(tc, release_waits_for_the_last_running_attempt);
  tcase_add_test(tc, cpus_per_task_defaults_to_the_config);
  tcase_add_test(tc, taskset_list_lists_active_and_zombie_sets_in_submission_order);
  tc = tlt_tcase(s, "failures");
  tcase_add_test(tc, counting_failures_abort_at_max_task_failures);
  tcase_add_test(tc, non_counting_failures_never_abort);
  tcase_add_test(tc, fetch_failure_makes_the_set_zombie_without_failing_it);
  tc = tlt_tcase(s, "kill");
  tcase_add_test(tc, kill_task_asks_the_executor_and_changes_nothing_else);
  tcase_add_test(tc, kill_task_answers_every_documented_error);
  tcase_add_test(tc, kill_stage_kills_every_attempt_of_the_stage);
  tcase_add_test(tc, kill_stage_with_nothing_running_does_nothing);
  tcase_add_test(tc, kill_stage_leaves_frozen_attempts_out);
  tcase_add_test(tc, cancel_stage_fails_the_active_attempt_and_releases_idle_sets);
  tcase_add_test(tc, cancel_stage_kills_zombie_attempts_but_fails_only_the_active_one);
  tcase_add_test(tc, cancel_stage_with_frozen_attempts_waits_for_the_second_phase);
  tc = tlt_tcase(s, "partition");
  tcase_add_test(tc, partition_completed_marks_the_index_done);
  tcase_add_test(tc, partition_completed_of_the_last_index_releases_an_idle_set);
  tcase_add_test(tc, partition_completed_with_only_zombie_attempts_changes_nothing);
  return s;
}

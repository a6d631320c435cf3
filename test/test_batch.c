/* tl_status_updates: a batch of one executor's updates under one lock gives exactly the codes,
 * events and counts the same updates give one call each; a batch refused as a whole applies
 * nothing; callbacks come after the batch, in order; its journal replays.
 */
#include "harness.h"

/* Executors e1 and e2 (2 cores each) and "gone" (lost, a tombstone), a task set of 8 tasks;
 * two launches on e1, one on e2, one on gone before it went. tids[0..1] on e1, [2] on e2,
 * [3] gone's. */
static void setup(tlt_env *e, tl_tid tids[4]) {
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tlt_add(e, "gone", "h3", NULL, 2);
  tlt_submit(e, 0, 0, 0, 8);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tids[0] = l[0].tid;
  tids[1] = l[1].tid;
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, l, 1), 1);
  tids[2] = l[0].tid;
  ck_assert_uint_eq(tlt_offer(e, "gone", 1, l, 1), 1);
  tids[3] = l[0].tid;
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
}

/* One batch of e1's: RUNNING and FINISHED of its first attempt, FINISHED again (now stale), a
 * tid of e2 (foreign), gone's tid (ended with its executor), a tid never launched, a FAILED of
 * its second attempt (retried), and RUNNING of that ended attempt (stale). */
#define NBATCH 8
static void batch(const tl_tid tids[4], tl_tid out_tids[NBATCH], tl_update out[NBATCH]) {
  const tl_tid t[NBATCH] = {tids[0], tids[0], tids[0], tids[2], tids[3], 424242, tids[1], tids[1]};
  const tl_update u[NBATCH] = {
      {.state = TL_TASK_RUNNING},
      {.state = TL_TASK_FINISHED, .message = "ok"},
      {.state = TL_TASK_FINISHED},
      {.state = TL_TASK_FINISHED},
      {.state = TL_TASK_KILLED},
      {.state = TL_TASK_RUNNING},
      {.state = TL_TASK_FAILED, .failure = TL_END_EXCEPTION, .message = "boom"},
      {.state = TL_TASK_RUNNING},
  };
  memcpy(out_tids, t, sizeof t);
  memcpy(out, u, sizeof u);
}

static void drain(tlt_env *e, const tl_tid tids[4]) {
  /* What is still running: tids[2] on e2, and index 1 again on some executor after its retry. */
  tlt_succeed(e, "e2", tids[2]);
  tl_launch l[8];
  size_t n;
  while ((n = tlt_offer(e, "e1", 2, l, 8)) > 0)
    for (size_t i = 0; i < n; i++)
      tlt_succeed(e, "e1", l[i].tid);
}

START_TEST(a_batch_gives_the_codes_single_updates_give) {
  tlt_env *one = tlt_new(NULL), *each = tlt_new(NULL);
  tl_tid tids[4], tids2[4];
  setup(one, tids);
  setup(each, tids2);
  ck_assert_mem_eq(tids, tids2, sizeof tids); /* two schedulers, the same tids */
  tl_tid t[NBATCH];
  tl_update u[NBATCH];
  batch(tids, t, u);
  size_t mark_one = tlt_mark(one), mark_each = tlt_mark(each);
  int results[NBATCH];
  TLT_OK(one, tl_status_updates(one->s, "e1", t, u, NBATCH, results));
  int singles[NBATCH];
  for (size_t i = 0; i < NBATCH; i++) {
    singles[i] = tl_status_update(each->s, "e1", t[i], &u[i]);
    TLT_CHECK(each);
  }
  const int want[NBATCH] = {TL_OK,     TL_OK,     TL_ESTALE, TL_EOWNER,
                            TL_ESTALE, TL_ESTALE, TL_OK,     TL_ESTALE};
  for (size_t i = 0; i < NBATCH; i++) {
    ck_assert_msg(results[i] == want[i], "update %zu: %s, want %s", i, tl_err_name(results[i]),
                  tl_err_name(want[i]));
    ck_assert_int_eq(singles[i], want[i]);
  }
  /* The same callbacks in the same order, and the same counts. */
  ck_assert_str_eq(tlt_seq_all(one, mark_one), tlt_seq_all(each, mark_each));
  tl_stats a = tlt_stats(one), b = tlt_stats(each);
  tlt_assert_stats_same_but_memory(&a, &b, "batch against single updates");
  ck_assert_uint_eq(a.stale_updates, 4);
  ck_assert_uint_eq(a.rejected_updates, 1);
  ck_assert_uint_eq(a.succeeded, 1);
  ck_assert_uint_eq(a.failed, 2); /* gone's attempt, and the exception */
  drain(one, tids);
  drain(each, tids);
  tlt_end(one);
  tlt_end(each);
}
END_TEST

START_TEST(results_may_be_null) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tids[4], t[NBATCH];
  tl_update u[NBATCH];
  setup(e, tids);
  batch(tids, t, u);
  TLT_OK(e, tl_status_updates(e->s, "e1", t, u, NBATCH, NULL));
  ck_assert_uint_eq(tlt_stats(e).succeeded, 1);
  ck_assert_uint_eq(tlt_stats(e).stale_updates, 4);
  drain(e, tids);
  tlt_end(e);
}
END_TEST

/* Refused as a whole: nothing applied (TLT_ERR: no counter moved, no callback), no result
 * written, and a result passed in stays the caller's. */
START_TEST(a_batch_refused_as_a_whole_applies_nothing) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tids[4], t[NBATCH];
  tl_update u[NBATCH];
  setup(e, tids);
  batch(tids, t, u);
  tlt_result *r = tlt_result_new(e, 5);
  u[1].result = r;
  u[1].result_size = 5;
  u[1].result_free = tlt_result_free;
  int results[NBATCH];
  for (size_t i = 0; i < NBATCH; i++)
    results[i] = 12345;
  TLT_ERR(e, TL_ENOENT, tl_status_updates(e->s, "never", t, u, NBATCH, results));
  TLT_ERR(e, TL_EGONE, tl_status_updates(e->s, "gone", t, u, NBATCH, results));
  TLT_ERR(e, TL_EINVAL, tl_status_updates(NULL, "e1", t, u, NBATCH, results));
  TLT_ERR(e, TL_EINVAL, tl_status_updates(e->s, NULL, t, u, NBATCH, results));
  TLT_ERR(e, TL_EINVAL, tl_status_updates(e->s, "", t, u, NBATCH, results));
  TLT_ERR(e, TL_EINVAL, tl_status_updates(e->s, "e1", NULL, u, NBATCH, results));
  TLT_ERR(e, TL_EINVAL, tl_status_updates(e->s, "e1", t, NULL, NBATCH, results));
  /* One update tl_status_update would refuse with TL_EINVAL refuses the batch, even last. */
  tl_update bad = u[NBATCH - 1];
  u[NBATCH - 1] = (tl_update){.state = TL_TASK_FAILED, .failure = TL_END_EXECUTOR_LOST};
  TLT_ERR(e, TL_EINVAL, tl_status_updates(e->s, "e1", t, u, NBATCH, results));
  u[NBATCH - 1] = (tl_update){.state = TL_TASK_RUNNING, .result = r};
  TLT_ERR(e, TL_EINVAL, tl_status_updates(e->s, "e1", t, u, NBATCH, results));
  u[NBATCH - 1] = bad;
  for (size_t i = 0; i < NBATCH; i++)
    ck_assert_int_eq(results[i], 12345);
  ck_assert_uint_eq(r->frees, 0);
  /* Now applied: the result goes to task_ended's callee (the recorder frees it once). */
  TLT_OK(e, tl_status_updates(e->s, "e1", t, u, NBATCH, results));
  ck_assert_int_eq(results[1], TL_OK);
  ck_assert_ptr_eq(tlt_ended_of(e, tids[0])->result, r);
  ck_assert_uint_eq(r->frees, 1);
  drain(e, tids);
  tlt_end(e);
}
END_TEST

START_TEST(an_empty_batch_is_ok_and_changes_nothing) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tids[4];
  setup(e, tids);
  size_t mark = tlt_mark(e);
  tl_stats before = tlt_stats(e);
  TLT_OK(e, tl_status_updates(e->s, "e1", NULL, NULL, 0, NULL));
  tl_stats after = tlt_stats(e);
  tlt_assert_stats_same_but_memory(&before, &after, "empty batch");
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  /* Refused as a whole all the same when the executor is not one to report. */
  TLT_ERR(e, TL_ENOENT, tl_status_updates(e->s, "never", NULL, NULL, 0, NULL));
  TLT_ERR(e, TL_EGONE, tl_status_updates(e->s, "gone", NULL, NULL, 0, NULL));
  drain(e, tids);
  tlt_end(e);
}
END_TEST

/* Every update of a batch is made before any of its callbacks: a callback sees the ledger
 * after the whole batch. */
static tlt_env *seen_env;
static size_t running_seen[4];
static size_t nseen;
static void (*recorder_ended)(void *ud, const tl_task_info *t, const tl_task_end *end);
static void note_running(void *ud, const tl_task_info *t, const tl_task_end *end) {
  tlt_env *e = seen_env;
  tl_stats st;
  tl_stats_get(e->s, &st);
  if (nseen < 4)
    running_seen[nseen] = st.attempts_running;
  nseen++;
  recorder_ended(ud, t, end);
}
static void hook_ended(tl_callbacks *cb) {
  recorder_ended = cb->task_ended;
  cb->task_ended = note_running;
}

START_TEST(callbacks_come_after_the_whole_batch_in_order) {
  tlt_env *e = tlt_new_edit(NULL, hook_ended);
  seen_env = e;
  nseen = 0;
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  nseen = 0;
  size_t mark = tlt_mark(e);
  tl_tid t[3] = {l[2].tid, l[0].tid, l[1].tid};
  tl_update u[3] = {
      {.state = TL_TASK_FINISHED}, {.state = TL_TASK_KILLED}, {.state = TL_TASK_FINISHED}};
  int results[3];
  TLT_OK(e, tl_status_updates(e->s, "e1", t, u, 3, results));
  ck_assert_uint_eq(nseen, 3);
  for (size_t i = 0; i < 3; i++) {
    ck_assert_int_eq(results[i], TL_OK);
    ck_assert_uint_eq(running_seen[i], 1); /* only l[3] still runs, at every callback */
  }
  /* task_ended in the batch's order. */
  const char *seq = tlt_seq_all(e, mark);
  char tid_text[3][32];
  for (size_t i = 0; i < 3; i++)
    snprintf(tid_text[i], sizeof tid_text[i], "ended tid=%llu ", (unsigned long long)t[i]);
  const char *p0 = strstr(seq, tid_text[0]), *p1 = strstr(seq, tid_text[1]),
             *p2 = strstr(seq, tid_text[2]);
  ck_assert_msg(p0 != NULL && p1 != NULL && p2 != NULL && p0 < p1 && p1 < p2, "order: %s", seq);
  tl_launch more[4];
  size_t n = tlt_offer(e, "e1", 4, more, 4);
  ck_assert_uint_eq(n, 1); /* the killed index again */
  tlt_succeed(e, "e1", more[0].tid);
  tlt_succeed(e, "e1", l[3].tid);
  tlt_end(e);
}
END_TEST

Suite *tl_batch_suite(void) {
  Suite *s = suite_create("batch");
  TCase *tc = tcase_create("batch");
  tcase_add_test(tc, a_batch_gives_the_codes_single_updates_give);
  tcase_add_test(tc, results_may_be_null);
  tcase_add_test(tc, a_batch_refused_as_a_whole_applies_nothing);
  tcase_add_test(tc, an_empty_batch_is_ok_and_changes_nothing);
  tcase_add_test(tc, callbacks_come_after_the_whole_batch_in_order);
  suite_add_tcase(s, tc);
  return s;
}

/* tl_status_update: RUNNING, FINISHED, FAILED and KILLED; result ownership; duplicate and late
 * updates (TL_ESTALE, stale_updates), updates from a foreign executor (TL_EOWNER,
 * rejected_updates), and the documented order of errors when several apply.
 */
#include "harness.h"

/* One executor e1 with one running attempt; returns its tid. */
static tl_tid one_running(tlt_env *e, uint32_t cores) {
  tlt_add(e, "e1", "h1", NULL, cores);
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  return l[0].tid;
}

static int update(tlt_env *e, const char *exec, tl_tid tid, tl_task_state state,
                  tl_end_kind failure) {
  tl_update u = {.state = state, .failure = failure};
  return tl_status_update(e->s, exec, tid, &u);
}

START_TEST(running_then_finished_hands_the_result_over) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  size_t mark = tlt_mark(e);
  tlt_run(e, "e1", tid);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert_uint_eq(tlt_ex(e, "e1").running, 1);
  tlt_result *r = tlt_result_new(e, 4242);
  tl_update u = {.state = TL_TASK_FINISHED,
                 .message = "done",
                 .result = r,
                 .result_size = 4242,
                 .result_free = tlt_result_free};
  TLT_OK(e, tl_status_update(e->s, "e1", tid, &u));
  const tlt_event *ev = tlt_ended_of(e, tid);
  ck_assert_ptr_nonnull(ev);
  ck_assert_int_eq(ev->end_kind, TL_END_SUCCESS);
  ck_assert(!ev->counts);
  ck_assert_ptr_eq(ev->result, r);
  ck_assert_uint_eq(ev->result_size, 4242);
  ck_assert_str_eq(ev->executor, "e1");
  ck_assert_str_eq(ev->host, "h1");
  ck_assert_uint_eq(ev->task.index, 0);
  ck_assert_uint_eq(ev->task.attempt, 0);
  ck_assert_uint_eq(r->frees, 1); /* the recorder freed it, exactly once */
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_uint_eq(ex.running, 0);
  ck_assert_uint_eq(ex.free_cores, 1);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.succeeded, 1);
  ck_assert_uint_eq(st.attempts_running, 0);
  tlt_end(e);
}
END_TEST

START_TEST(finished_without_running_first_is_accepted) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_succeed(e, "e1", tid);
  ck_assert_int_eq(tlt_ended_of(e, tid)->end_kind, TL_END_SUCCESS);
  tlt_end(e);
}
END_TEST

START_TEST(finished_with_no_result_is_accepted) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  TLT_OK(e, update(e, "e1", tid, TL_TASK_FINISHED, 0));
  const tlt_event *ev = tlt_ended_of(e, tid);
  ck_assert_int_eq(ev->end_kind, TL_END_SUCCESS);
  ck_assert_ptr_null(ev->result);
  tlt_end(e);
}
END_TEST

/* A FINISHED update with no result still hands its size and free function on (a regression:
 * they were dropped when the result pointer was NULL; found by the randomized runs). */
START_TEST(finished_with_no_result_keeps_its_size_and_free_function) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tl_update u = {.state = TL_TASK_FINISHED, .result_size = 42, .result_free = tlt_result_free};
  TLT_OK(e, tl_status_update(e->s, "e1", tid, &u));
  const tlt_event *ev = tlt_ended_of(e, tid);
  ck_assert_int_eq(ev->end_kind, TL_END_SUCCESS);
  ck_assert_ptr_null(ev->result);
  ck_assert_uint_eq(ev->result_size, 42);
  ck_assert(ev->result_free == tlt_result_free);
  tlt_end(e);
}
END_TEST

START_TEST(a_result_without_result_free_is_passed_on_as_is) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_result *r = tlt_result_new(e, 7);
  tl_update u = {.state = TL_TASK_FINISHED, .result = r, .result_size = 7};
  TLT_OK(e, tl_status_update(e->s, "e1", tid, &u));
  /* The recorder owns it and freed it itself (result_free was NULL). */
  ck_assert_ptr_eq(tlt_ended_of(e, tid)->result, r);
  ck_assert_uint_eq(r->frees, 1);
  tlt_end(e);
}
END_TEST

START_TEST(running_twice_is_harmless) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_run(e, "e1", tid);
  TLT_ERR(e, TL_OK, update(e, "e1", tid, TL_TASK_RUNNING, 0));
  tlt_end(e);
}
END_TEST

START_TEST(failure_kinds_end_with_their_kind_and_message) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 8);
  tlt_submit(e, 0, 0, 0, 8);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 5, l, 8), 5);
  const tl_end_kind kinds[5] = {TL_END_EXCEPTION, TL_END_RESULT_LOST, TL_END_KILLED,
                                TL_END_COMMIT_DENIED, TL_END_FETCH_FAILED};
  const bool counts[5] = {true, true, false, false, false};
  for (int i = 0; i < 5; i++) {
    char msg[64];
    snprintf(msg, sizeof msg, "failure number %d", i);
    tl_update u = {.state = TL_TASK_FAILED, .failure = kinds[i], .message = msg};
    TLT_OK(e, tl_status_update(e->s, "e1", l[i].tid, &u));
    memset(msg, 0, sizeof msg); /* copied: the event must not see this */
    const tlt_event *ev = tlt_ended_of(e, l[i].tid);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(ev->end_kind, kinds[i]);
    ck_assert_int_eq(ev->counts, counts[i]);
    ck_assert(ev->has_text);
    char want[64];
    snprintf(want, sizeof want, "failure number %d", i);
    ck_assert_str_eq(ev->text, want);
  }
  tl_stats st = tlt_stats(e);
  /* A FAILED update of kind TL_END_KILLED is an attempt ended killed, not failed. */
  ck_assert_uint_eq(st.failed, 4);
  ck_assert_uint_eq(st.killed, 1);
  ck_assert_uint_eq(st.succeeded, 0);
  tlt_end(e);
}
END_TEST

START_TEST(killed_update_ends_the_attempt_without_counting) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tl_tid tid = one_running(e, 1);
  tlt_run(e, "e1", tid);
  size_t mark = tlt_mark(e);
  tlt_killed(e, "e1", tid);
  char want[64];
  snprintf(want, sizeof want, "ended tid=%ju kind=KILLED counts=0", (uintmax_t)tid);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  ck_assert_uint_eq(tlt_stats(e).killed, 1);
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, 4);
  tlt_end(e);
}
END_TEST

START_TEST(duplicate_finished_is_stale_and_the_result_stays_with_the_caller) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_succeed(e, "e1", tid);
  tlt_result *r = tlt_result_new(e, 9);
  tl_update u = {
      .state = TL_TASK_FINISHED, .result = r, .result_size = 9, .result_free = tlt_result_free};
  TLT_UPDATE_ERR(e, TL_ESTALE, tl_status_update(e->s, "e1", tid, &u));
  ck_assert_uint_eq(r->frees, 0);
  tlt_result_free(r); /* ours on error */
  ck_assert_uint_eq(tlt_stats(e).stale_updates, 1);
  /* Every later update of a finished tid is stale. */
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e1", tid, TL_TASK_RUNNING, 0));
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e1", tid, TL_TASK_FAILED, TL_END_EXCEPTION));
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e1", tid, TL_TASK_KILLED, 0));
  ck_assert_uint_eq(tlt_stats(e).stale_updates, 4);
  ck_assert_uint_eq(tlt_stats(e).succeeded, 1);
  tlt_end(e);
}
END_TEST

START_TEST(updates_after_an_attempt_ended_are_stale) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_fail(e, "e1", tid, TL_END_EXCEPTION);
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e1", tid, TL_TASK_FINISHED, 0));
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e1", 424242, TL_TASK_RUNNING, 0));
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e1", 0, TL_TASK_RUNNING, 0));
  ck_assert_uint_eq(tlt_stats(e).stale_updates, 3);
  tlt_end(e);
}
END_TEST

START_TEST(updates_from_a_removed_executor_are_egone) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  tlt_result *r = tlt_result_new(e, 3);
  tl_update u = {
      .state = TL_TASK_FINISHED, .result = r, .result_size = 3, .result_free = tlt_result_free};
  TLT_UPDATE_ERR(e, TL_EGONE, tl_status_update(e->s, "e1", tid, &u));
  ck_assert_uint_eq(r->frees, 0);
  tlt_result_free(r);
  ck_assert_uint_eq(tlt_stats(e).stale_updates, 0);
  tlt_end(e);
}
END_TEST

START_TEST(updates_for_frozen_attempts_are_stale) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_run(e, "e1", tid);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  tlt_result *r = tlt_result_new(e, 3);
  tl_update u = {
      .state = TL_TASK_FINISHED, .result = r, .result_size = 3, .result_free = tlt_result_free};
  TLT_UPDATE_ERR(e, TL_ESTALE, tl_status_update(e->s, "e1", tid, &u));
  tlt_result_free(r);
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e1", tid, TL_TASK_RUNNING, 0));
  ck_assert_uint_eq(tlt_ex(e, "e1").frozen, 1);
  ck_assert_uint_eq(tlt_stats(e).stale_updates, 2);
  tlt_end(e);
}
END_TEST

START_TEST(updates_from_a_foreign_executor_are_eowner) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_result *r = tlt_result_new(e, 3);
  tl_update u = {
      .state = TL_TASK_FINISHED, .result = r, .result_size = 3, .result_free = tlt_result_free};
  TLT_UPDATE_ERR(e, TL_EOWNER, tl_status_update(e->s, "e2", tid, &u));
  ck_assert_uint_eq(r->frees, 0);
  tlt_result_free(r);
  TLT_UPDATE_ERR(e, TL_EOWNER, update(e, "e2", tid, TL_TASK_RUNNING, 0));
  TLT_UPDATE_ERR(e, TL_EOWNER, update(e, "e2", tid, TL_TASK_KILLED, 0));
  ck_assert_uint_eq(tlt_stats(e).rejected_updates, 3);
  ck_assert_uint_eq(tlt_ex(e, "e1").running, 1);
  /* A decommissioning executor cannot finish someone else's task either. */
  TLT_OK(e, tl_executor_decommission(e->s, "e2", NULL));
  TLT_UPDATE_ERR(e, TL_EOWNER, update(e, "e2", tid, TL_TASK_FAILED, TL_END_EXCEPTION));
  /* The owner still can. */
  tlt_succeed(e, "e1", tid);
  tlt_end(e);
}
END_TEST

START_TEST(bad_arguments_are_einval) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  char id256[300];
  memset(id256, 'x', 256);
  id256[256] = '\0';
  tl_update running = {.state = TL_TASK_RUNNING};
  tlt_result *r = tlt_result_new(e, 3);
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(NULL, "e1", tid, &running));
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, NULL, tid, &running));
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "", tid, &running));
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, id256, tid, &running));
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "e1", tid, NULL));
  tl_update bad_state = {.state = (tl_task_state)4};
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "e1", tid, &bad_state));
  /* A result with any state but FINISHED. */
  const tl_task_state not_finished[3] = {TL_TASK_RUNNING, TL_TASK_FAILED, TL_TASK_KILLED};
  for (int i = 0; i < 3; i++) {
    tl_update u = {.state = not_finished[i],
                   .failure = TL_END_EXCEPTION,
                   .result = r,
                   .result_size = 3,
                   .result_free = tlt_result_free};
    TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "e1", tid, &u));
  }
  /* Failure kinds a FAILED update may not name. */
  const int bad_kinds[4] = {TL_END_SUCCESS, TL_END_EXECUTOR_LOST, TL_END_RESUBMITTED, 99};
  for (int i = 0; i < 4; i++) {
    tl_update u = {.state = TL_TASK_FAILED, .failure = (tl_end_kind)bad_kinds[i]};
    TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "e1", tid, &u));
  }
  ck_assert_uint_eq(r->frees, 0);
  tlt_result_free(r);
  ck_assert_uint_eq(tlt_ex(e, "e1").running, 1);
  tlt_succeed(e, "e1", tid);
  tlt_end(e);
}
END_TEST

/* "Errors, the first that applies": EINVAL, ENOENT, EGONE, ESTALE, EOWNER. */
START_TEST(errors_come_in_the_documented_order) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tlt_add(e, "gone", "h3", NULL, 2);
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  ck_assert_uint_eq(tlt_offer(e, "gone", 1, l + 1, 1), 1);
  tl_tid on_e1 = l[0].tid, on_gone = l[1].tid;
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  tlt_result *r = tlt_result_new(e, 3);
  /* EINVAL (a result with RUNNING) before ENOENT (never known), before everything else. */
  tl_update bad = {.state = TL_TASK_RUNNING, .result = r, .result_size = 3};
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "never", 424242, &bad));
  tl_update bad_kind = {.state = TL_TASK_FAILED, .failure = TL_END_EXECUTOR_LOST};
  TLT_UPDATE_ERR(e, TL_EINVAL, tl_status_update(e->s, "gone", on_gone, &bad_kind));
  /* ENOENT before ESTALE and EOWNER. */
  TLT_UPDATE_ERR(e, TL_ENOENT, update(e, "never", 424242, TL_TASK_RUNNING, 0));
  TLT_UPDATE_ERR(e, TL_ENOENT, update(e, "never", on_e1, TL_TASK_RUNNING, 0));
  /* EGONE before ESTALE (its own tid, now gone) and EOWNER (a tid running on e1). */
  TLT_UPDATE_ERR(e, TL_EGONE, update(e, "gone", on_gone, TL_TASK_FINISHED, 0));
  TLT_UPDATE_ERR(e, TL_EGONE, update(e, "gone", on_e1, TL_TASK_FINISHED, 0));
  TLT_UPDATE_ERR(e, TL_EGONE, update(e, "gone", 424242, TL_TASK_FINISHED, 0));
  /* ESTALE before EOWNER: e2 naming a tid that is no longer running anywhere. */
  TLT_UPDATE_ERR(e, TL_ESTALE, update(e, "e2", on_gone, TL_TASK_FINISHED, 0));
  TLT_UPDATE_ERR(e, TL_EOWNER, update(e, "e2", on_e1, TL_TASK_FINISHED, 0));
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.stale_updates, 1);
  ck_assert_uint_eq(st.rejected_updates, 1);
  tlt_result_free(r);
  tlt_end(e);
}
END_TEST

START_TEST(a_failure_retries_the_index_with_the_next_attempt_number) {
  tlt_env *e = tlt_new(NULL);
  tl_tid tid = one_running(e, 1);
  size_t mark = tlt_mark(e);
  tlt_fail(e, "e1", tid, TL_END_EXCEPTION);
  ck_assert_uint_ge(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  ck_assert_uint_eq(l[0].index, 0);
  ck_assert_uint_eq(l[0].attempt, 1);
  ck_assert_uint_gt(l[0].tid, tid);
  tlt_end(e);
}
END_TEST

Suite *tl_status_suite(void) {
  Suite *s = suite_create("status");
  TCase *tc = tlt_tcase(s, "states");
  tcase_add_test(tc, running_then_finished_hands_the_result_over);
  tcase_add_test(tc, finished_without_running_first_is_accepted);
  tcase_add_test(tc, finished_with_no_result_is_accepted);
  tcase_add_test(tc, finished_with_no_result_keeps_its_size_and_free_function);
  tcase_add_test(tc, a_result_without_result_free_is_passed_on_as_is);
  tcase_add_test(tc, running_twice_is_harmless);
  tcase_add_test(tc, failure_kinds_end_with_their_kind_and_message);
  tcase_add_test(tc, killed_update_ends_the_attempt_without_counting);
  tcase_add_test(tc, a_failure_retries_the_index_with_the_next_attempt_number);
  tc = tlt_tcase(s, "rejected");
  tcase_add_test(tc, duplicate_finished_is_stale_and_the_result_stays_with_the_caller);
  tcase_add_test(tc, updates_after_an_attempt_ended_are_stale);
  tcase_add_test(tc, updates_from_a_removed_executor_are_egone);
  tcase_add_test(tc, updates_for_frozen_attempts_are_stale);
  tcase_add_test(tc, updates_from_a_foreign_executor_are_eowner);
  tcase_add_test(tc, bad_arguments_are_einval);
  tcase_add_test(tc, errors_come_in_the_documented_order);
  return s;
}

/* Executor loss: the two phases (freeze, then end with TL_END_EXECUTOR_LOST), the counting rule
 * (caused by the app, reached RUNNING, not decommissioning), the pending-loss deadline and
 * heartbeat expiry driven by tl_tick with the manual clock, and what tl_tick answers.
 */
#include "harness.h"

/* e1 (2 cores) runs indices 0 and 1 of a 4-task set, index 0 RUNNING, index 1 launching; e2 (2
 * cores) is idle. Returns the task set; l gets the two launches. */
static tl_taskset_id two_on_e1(tlt_env *e, tl_launch l[2]) {
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  ck_assert_uint_eq(l[0].index, 0);
  ck_assert_uint_eq(l[1].index, 1);
  tlt_run(e, "e1", l[0].tid);
  return ts;
}

START_TEST(pending_loss_freezes_attempts_and_does_not_retry_them) {
  tlt_env *e = tlt_new(NULL);
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_str_eq(tlt_seq(e, mark), "lost e1 kind=PENDING");
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_int_eq(ex.state, TL_EXECUTOR_PENDING_LOSS);
  ck_assert_uint_eq(ex.running, 0);
  ck_assert_uint_eq(ex.frozen, 2);
  ck_assert_uint_eq(ex.free_cores, 2);
  ck_assert_str_eq(ex.host, "h1");
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_pending_loss, 1);
  ck_assert_uint_eq(st.executors_alive, 1);
  ck_assert_uint_eq(st.attempts_running, 0);
  ck_assert_uint_eq(st.attempts_frozen, 2);
  ck_assert_uint_eq(st.hosts, 1);
  ck_assert_uint_eq(st.executors_lost, 1);
  ck_assert_uint_eq(st.failed, 0);
  tl_taskset_status t = tlt_ts(e, ts);
  ck_assert_uint_eq(t.running, 2);
  ck_assert_uint_eq(t.frozen, 2);
  ck_assert_uint_eq(t.pending, 2);
  /* The frozen indices are not retried: e2 gets only indices 2 and 3. */
  tl_launch m[4];
  ck_assert_uint_eq(tlt_offer(e, "e2", 2, m, 4), 2);
  ck_assert_uint_ge(m[0].index, 2);
  ck_assert_uint_ge(m[1].index, 2);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 0);
  tlt_end(e);
}
END_TEST

START_TEST(pending_loss_again_changes_nothing) {
  tlt_env *e = tlt_new(NULL);
  tl_launch l[2];
  two_on_e1(e, l);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  tl_loss_reason again = {.kind = TL_LOSS_PENDING, .caused_by_app = true};
  TLT_ERR(e, TL_OK, tl_executor_lost(e->s, "e1", &again));
  ck_assert_uint_eq(tlt_ex(e, "e1").frozen, 2);
  tlt_end(e);
}
END_TEST

START_TEST(second_phase_ends_frozen_attempts_and_retries_their_indices) {
  tlt_env *e = tlt_new(NULL);
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  tl_loss_reason why = {
      .kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 1, .message = "exit 1"};
  TLT_OK(e, tl_executor_lost(e->s, "e1", &why));
  /* No second executor_lost; the RUNNING attempt counts, the launching one does not. */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 0);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  const tlt_event *a = tlt_ended_of(e, l[0].tid), *b = tlt_ended_of(e, l[1].tid);
  ck_assert_int_eq(a->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert_int_eq(b->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert(a->counts);
  ck_assert(!b->counts);
  ck_assert(a->has_text);
  ck_assert_ptr_nonnull(strstr(a->text, "exit 1"));
  ck_assert_uint_ge(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  tl_executor_status ex;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e1", &ex));
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_pending_loss, 0);
  ck_assert_uint_eq(st.attempts_frozen, 0);
  ck_assert_uint_eq(st.tombstones, 1);
  ck_assert_uint_eq(st.failed, 2);
  ck_assert_uint_eq(st.executors_lost, 1);
  ck_assert_uint_eq(st.pending_loss_timeouts, 0); /* the second phase came by a call */
  tl_taskset_status t = tlt_ts(e, ts);
  ck_assert_uint_eq(t.running, 0);
  ck_assert_uint_eq(t.frozen, 0);
  ck_assert_uint_eq(t.pending, 4);
  ck_assert(!t.failed);
  /* Both indices run again, with their next attempt numbers, first. */
  tl_launch m[2];
  ck_assert_uint_eq(tlt_offer(e, "e2", 2, m, 2), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_le(m[i].index, 1);
    ck_assert_uint_eq(m[i].attempt, 1);
  }
  ck_assert_uint_ne(m[0].index, m[1].index);
  tlt_end(e);
}
END_TEST

/* The second phase ends frozen attempts in launch order; once a counted failure aborts the task
 * set, the rest no longer count (the set is zombie). */
START_TEST(second_phase_ends_in_launch_order_and_stops_counting_after_an_abort) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 3), 3);
  for (int i = 2; i >= 0; i--)
    tlt_run(e, "e1", l[i].tid);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  char want[256];
  snprintf(want, sizeof want,
           "ended tid=%ju kind=EXECUTOR_LOST counts=1\nfailed ts=%ju\n"
           "ended tid=%ju kind=EXECUTOR_LOST counts=0\n"
           "ended tid=%ju kind=EXECUTOR_LOST counts=0\nreleased ts=%ju",
           (uintmax_t)l[0].tid, (uintmax_t)ts, (uintmax_t)l[1].tid, (uintmax_t)l[2].tid,
           (uintmax_t)ts);
  ck_assert_str_eq(tlt_seq(e, mark), want);
  tlt_end(e);
}
END_TEST

START_TEST(loss_not_caused_by_the_app_never_counts) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  tlt_run(e, "e1", l[1].tid);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false); /* e.g. preempted, exit 143 */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  ck_assert(!tlt_ended_of(e, l[0].tid)->counts);
  ck_assert(!tlt_ended_of(e, l[1].tid)->counts);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  ck_assert(!tlt_ts(e, ts).failed);
  tlt_end(e);
}
END_TEST

START_TEST(one_phase_loss_reports_the_loss_before_the_ended_attempts) {
  tlt_env *e = tlt_new(NULL);
  tl_launch l[2];
  two_on_e1(e, l);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_PROCESS_LOST, true);
  const char *seq = tlt_seq(e, mark);
  char a[64], b[64];
  snprintf(a, sizeof a, "ended tid=%ju kind=EXECUTOR_LOST counts=1", (uintmax_t)l[0].tid);
  snprintf(b, sizeof b, "ended tid=%ju kind=EXECUTOR_LOST counts=0", (uintmax_t)l[1].tid);
  const char *first = "lost e1 kind=PROCESS_LOST\n";
  ck_assert_msg(strncmp(seq, first, strlen(first)) == 0, "sequence: %s", seq);
  ck_assert_msg(strstr(seq, a) != NULL && strstr(seq, b) != NULL, "sequence: %s", seq);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  tlt_end(e);
}
END_TEST

/* Interpretation of "TL_LOSS_KILLED: never caused by the app" and "TL_LOSS_DECOMMISSIONED:
 * never caused by the app": a caller's caused_by_app = true does not make them count. */
START_TEST(killed_and_decommissioned_losses_never_count_even_if_flagged) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_offer o[2] = {{"e1", 1}, {"e2", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  tlt_run(e, "e1", l[0].tid);
  tlt_run(e, "e2", l[1].tid);
  tlt_lose(e, "e1", TL_LOSS_KILLED, true);
  tlt_lose(e, "e2", TL_LOSS_DECOMMISSIONED, true);
  ck_assert(!tlt_ended_of(e, l[0].tid)->counts);
  ck_assert(!tlt_ended_of(e, l[1].tid)->counts);
  ck_assert(!tlt_ts(e, ts).failed);
  tlt_end(e);
}
END_TEST

START_TEST(zombie_held_only_by_frozen_attempts_is_released_by_the_second_phase) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id a0 = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tl_taskset_id a1 = tlt_submit(e, 0, 1, 0, 2);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  /* SPARK-18553: nothing may pin a0 once its executor's loss is complete. */
  tl_taskset_status t = tlt_ts(e, a0);
  ck_assert(t.zombie);
  ck_assert_uint_eq(t.running, 2);
  ck_assert_uint_eq(t.frozen, 2);
  ck_assert_uint_eq(tlt_stats(e).tasksets_zombie, 1);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  ck_assert_uint_eq(tlt_released(e, a0), 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  ck_assert_uint_eq(tlt_stats(e).tasksets_zombie, 0);
  ck_assert_uint_eq(tlt_ts(e, a1).pending, 2);
  tlt_end(e);
}
END_TEST

START_TEST(pending_loss_ends_by_timeout_in_tick) {
  tl_config cfg = tlt_config();
  cfg.pending_loss_timeout_ns = 5 * TLT_SEC;
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  uint64_t next = tlt_advance_tick(e, 2 * TLT_SEC);
  ck_assert_msg(next >= 3 * TLT_SEC && next <= 3 * TLT_SEC + 1, "next deadline in %ju ns",
                (uintmax_t)next);
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 3 * TLT_SEC - 1);
  ck_assert_uint_eq(tlt_ex(e, "e1").frozen, 2);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert_uint_eq(tlt_stats(e).pending_loss_timeouts, 0);
  tlt_advance_tick(e, 2);
  /* Only the count in tl_stats says that the timeout, not a second call, ended it. */
  ck_assert_uint_eq(tlt_stats(e).pending_loss_timeouts, 1);
  ck_assert_uint_eq(tlt_stats(e).executors_lost, 1);
  /* The second phase with TL_LOSS_PENDING_TIMEOUT, caused by the app. */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 0);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  ck_assert(tlt_ended_of(e, l[0].tid)->counts);
  ck_assert(!tlt_ended_of(e, l[1].tid)->counts);
  ck_assert_int_eq(tlt_ended_of(e, l[0].tid)->end_kind, TL_END_EXECUTOR_LOST);
  tl_executor_status ex;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e1", &ex));
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 4);
  ck_assert_uint_eq(tlt_stats(e).executors_pending_loss, 0);
  tlt_end(e);
}
END_TEST

START_TEST(pending_loss_timeout_zero_waits_forever) {
  tl_config cfg = tlt_config();
  cfg.pending_loss_timeout_ns = 0;
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tl_launch l[2];
  two_on_e1(e, l);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 1000000 * TLT_SEC), TL_TICK_NEVER);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert_uint_eq(tlt_ex(e, "e1").frozen, 2);
  tlt_end(e);
}
END_TEST

START_TEST(silent_executor_expires_in_tick) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 10 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  /* Registration counts as a heartbeat; e2 keeps beating, e1 goes quiet. */
  size_t mark = tlt_mark(e);
  for (int i = 0; i < 3; i++) {
    tlt_advance_tick(e, 3 * TLT_SEC);
    TLT_OK(e, tl_executor_heartbeat(e->s, "e2"));
  }
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  tlt_advance_tick(e, TLT_SEC - 1); /* 10 s - 1 ns after registration */
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_ALIVE);
  tlt_advance_tick(e, 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 1);
  const tlt_event *lost = tlt_last(e, TLT_EV_LOST);
  ck_assert_str_eq(lost->executor, "e1");
  ck_assert_int_eq(lost->loss.kind, TL_LOSS_HEARTBEAT_TIMEOUT);
  ck_assert(lost->loss.caused_by_app);
  /* One phase: the attempts ended at once; the RUNNING one counts. */
  ck_assert(tlt_ended_of(e, l[0].tid)->counts);
  ck_assert(!tlt_ended_of(e, l[1].tid)->counts);
  tl_executor_status ex;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e1", &ex));
  ck_assert_int_eq(tlt_ex(e, "e2").state, TL_EXECUTOR_ALIVE);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 4);
  tlt_end(e);
}
END_TEST

START_TEST(tick_answers_the_time_to_the_next_heartbeat_deadline) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 10 * TLT_SEC;
  cfg.pending_loss_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  ck_assert_uint_eq(tl_tick(e->s), TL_TICK_NEVER);
  tlt_add(e, "e1", "h1", NULL, 1);
  uint64_t next = tlt_advance_tick(e, 4 * TLT_SEC);
  ck_assert_msg(next >= 6 * TLT_SEC && next <= 6 * TLT_SEC + 1, "next in %ju", (uintmax_t)next);
  TLT_OK(e, tl_executor_heartbeat(e->s, "e1"));
  next = tlt_advance_tick(e, TLT_SEC);
  ck_assert_msg(next >= 9 * TLT_SEC && next <= 9 * TLT_SEC + 1, "next in %ju", (uintmax_t)next);
  ck_assert_uint_eq(tl_tick(NULL), TL_TICK_NEVER);
  tlt_end(e);
}
END_TEST

START_TEST(heartbeat_timeout_zero_never_expires) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 1000000 * TLT_SEC), TL_TICK_NEVER);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_ALIVE);
  tlt_end(e);
}
END_TEST

START_TEST(a_pending_loss_executor_does_not_also_expire_by_heartbeat) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 2 * TLT_SEC;
  cfg.pending_loss_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 100 * TLT_SEC);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_PENDING_LOSS);
  tlt_end(e);
}
END_TEST

START_TEST(decommissioning_executors_expire_without_counting) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 2 * TLT_SEC;
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  TLT_OK(e, tl_executor_decommission(e->s, "e1", NULL));
  e->now += 3 * TLT_SEC / 2;
  TLT_OK(e, tl_executor_heartbeat(e->s, "e2"));
  tlt_advance_tick(e, TLT_SEC); /* e1 silent 2.5 s, e2 1 s */
  ck_assert_int_eq(tlt_last(e, TLT_EV_LOST)->loss.kind, TL_LOSS_HEARTBEAT_TIMEOUT);
  ck_assert_str_eq(tlt_last(e, TLT_EV_LOST)->executor, "e1");
  ck_assert(!tlt_ended_of(e, l[0].tid)->counts);
  ck_assert(!tlt_ts(e, ts).failed);
  tlt_end(e);
}
END_TEST

Suite *tl_loss_suite(void) {
  Suite *s = suite_create("loss");
  TCase *tc = tlt_tcase(s, "two-phase");
  tcase_add_test(tc, pending_loss_freezes_attempts_and_does_not_retry_them);
  tcase_add_test(tc, pending_loss_again_changes_nothing);
  tcase_add_test(tc, second_phase_ends_frozen_attempts_and_retries_their_indices);
  tcase_add_test(tc, second_phase_ends_in_launch_order_and_stops_counting_after_an_abort);
  tcase_add_test(tc, loss_not_caused_by_the_app_never_counts);
  tcase_add_test(tc, one_phase_loss_reports_the_loss_before_the_ended_attempts);
  tcase_add_test(tc, killed_and_decommissioned_losses_never_count_even_if_flagged);
  tcase_add_test(tc, zombie_held_only_by_frozen_attempts_is_released_by_the_second_phase);
  tc = tlt_tcase(s, "time");
  tcase_add_test(tc, pending_loss_ends_by_timeout_in_tick);
  tcase_add_test(tc, pending_loss_timeout_zero_waits_forever);
  tcase_add_test(tc, silent_executor_expires_in_tick);
  tcase_add_test(tc, tick_answers_the_time_to_the_next_heartbeat_deadline);
  tcase_add_test(tc, heartbeat_timeout_zero_never_expires);
  tcase_add_test(tc, a_pending_loss_executor_does_not_also_expire_by_heartbeat);
  tcase_add_test(tc, decommissioning_executors_expire_without_counting);
  return s;
}

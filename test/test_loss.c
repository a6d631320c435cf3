/* Executor loss: the two phases (freeze, then end with TL_END_EXECUTOR_LOST), the counting rule
 * (caused by the app, reached RUNNING, not decommissioning), the pending-loss deadline and
 * heartbeat expiry driven by tl_tick with the manual clock, and what tl_tick answers, up to the
 * end of time (where every part's deadlines are tried, since tl_tick gives one answer for all).
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

/* executor_lost hands back the executor's ud, once per executor: at the first phase of a
 * two-phase loss (the second phase makes no executor_lost, only the ends of what the executor
 * held), with the reason of a one-phase loss, and from tl_tick's heartbeat expiry. */
START_TEST(executor_lost_hands_back_the_ud_once_at_the_first_phase) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 10 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  int ud1, ud2;
  TLT_OK(e, tl_executor_add(e->s,
                            &(tl_executor_desc){
                                .id = "e1", .host = "h1", .rack = NULL, .cores = 2, .ud = &ud1}));
  TLT_OK(e, tl_executor_add(e->s,
                            &(tl_executor_desc){
                                .id = "e2", .host = "h2", .rack = NULL, .cores = 1, .ud = &ud2}));
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 3, .shuffle_map = true};
  tlt_submit_desc(e, &d);
  tl_offer o[2] = {{"e1", 2}, {"e2", 1}};
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 3), 3); /* e1 e2 e1 */
  tlt_succeed(e, "e1", l[0].tid);                  /* a map output on e1 */
  tlt_run(e, "e1", l[2].tid);

  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 1);
  const tlt_event *lost = tlt_nth(e, mark, TLT_EV_LOST, 0);
  ck_assert_str_eq(lost->executor, "e1");
  ck_assert_ptr_eq(lost->executor_ud, &ud1);
  ck_assert_int_eq(lost->loss.kind, TL_LOSS_PENDING);
  ck_assert_ptr_eq(tlt_ex(e, "e1").ud, &ud1); /* pending loss: still known */

  mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 0);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2); /* RESUBMITTED, EXECUTOR_LOST */
  ck_assert_int_eq(tlt_nth(e, mark, TLT_EV_ENDED, 0)->end_kind, TL_END_RESUBMITTED);
  ck_assert_int_eq(tlt_nth(e, mark, TLT_EV_ENDED, 1)->end_kind, TL_END_EXECUTOR_LOST);

  mark = tlt_mark(e);
  tlt_lose(e, "e2", TL_LOSS_PROCESS_LOST, true); /* one phase */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 1);
  ck_assert_ptr_eq(tlt_nth(e, mark, TLT_EV_LOST, 0)->executor_ud, &ud2);
  ck_assert_int_eq(tlt_nth(e, mark, TLT_EV_LOST, 0)->loss.kind, TL_LOSS_PROCESS_LOST);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 1);

  tlt_add(e, "e3", "h3", NULL, 1);
  mark = tlt_mark(e);
  tlt_advance_tick(e, 11 * TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 1);
  lost = tlt_nth(e, mark, TLT_EV_LOST, 0);
  ck_assert_int_eq(lost->loss.kind, TL_LOSS_HEARTBEAT_TIMEOUT);
  ck_assert_ptr_eq(lost->executor_ud, tlt_ud_for(e, "e3"));
  TLT_OK(e, tl_cancel_stage(e->s, 0, "done"));
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
  /* Without executor_removed (see the "removed" tests) only the count in tl_stats says that the
   * timeout, not a second call, ended it. */
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

/* ---------------------------------------------------------------------------------------------
 * executor_removed: the end of every loss, whichever call or timeout completes it, with the
 * final reason, after the executor's executor_lost and the ends of its second phase and before
 * revive_offers. These envs record it (the recorder also checks, for every event, that it comes
 * once per loss, after executor_lost, with the executor's ud and the executor no longer known,
 * and that no later event names the executor; tlt_end that every loss was completed).
 * ------------------------------------------------------------------------------------------- */

static tlt_env *recording(const tl_config *cfg) { return tlt_new_edit(cfg, tlt_record_removed); }

/* The events of a loss of e1 in two_on_e1: first, the ends of its second phase (l[0] counted
 * or not, l[1] never: it did not reach RUNNING), then the rest. */
static const char *ends_between(char *buf, size_t len, const char *first, const tl_launch l[2],
                                bool counts, const char *rest) {
  snprintf(buf, len,
           "%sended tid=%ju kind=EXECUTOR_LOST counts=%d\n"
           "ended tid=%ju kind=EXECUTOR_LOST counts=0\n%s",
           first, (uintmax_t)l[0].tid, counts ? 1 : 0, (uintmax_t)l[1].tid, rest);
  return buf;
}

START_TEST(removed_ends_a_two_phase_loss_with_the_real_reason) {
  tlt_env *e = recording(NULL);
  tl_launch l[2];
  two_on_e1(e, l);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_str_eq(tlt_seq_all(e, mark), "lost e1 kind=PENDING"); /* not removed yet */
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_PENDING_LOSS);

  mark = tlt_mark(e);
  char message[] = "container exited with code 137";
  tl_loss_reason why = {
      .kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 137, .message = message};
  TLT_OK(e, tl_executor_lost(e->s, "e1", &why));
  char want[256];
  ck_assert_str_eq(tlt_seq_all(e, mark),
                   ends_between(want, sizeof want, "", l, true,
                                "removed e1 kind=EXITED app=1 exit=137\nrevive"));
  const tlt_event *r = tlt_last(e, TLT_EV_REMOVED);
  ck_assert_ptr_eq(r->executor_ud, tlt_ud_for(e, "e1"));
  ck_assert(r->has_text);
  ck_assert_str_eq(r->text, message);
  ck_assert_str_eq(tlt_ended_of(e, l[0].tid)->text, message);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.tombstones, 1);
  ck_assert_uint_eq(st.executors_lost, 1);
  ck_assert_uint_eq(st.pending_loss_timeouts, 0);
  tlt_end(e);
}
END_TEST

/* A real reason for a live executor: both phases in one call, executor_lost first and
 * executor_removed last but for revive_offers, both with that reason. */
START_TEST(removed_follows_lost_in_the_call_of_a_one_phase_loss) {
  tlt_env *e = recording(NULL);
  tl_launch l[2];
  two_on_e1(e, l);
  size_t mark = tlt_mark(e);
  tl_loss_reason why = {.kind = TL_LOSS_PROCESS_LOST, .message = "connection reset"};
  TLT_OK(e, tl_executor_lost(e->s, "e1", &why));
  char want[256];
  ck_assert_str_eq(tlt_seq_all(e, mark),
                   ends_between(want, sizeof want, "lost e1 kind=PROCESS_LOST\n", l, false,
                                "removed e1 kind=PROCESS_LOST app=0 exit=0\nrevive"));
  ck_assert_str_eq(tlt_last(e, TLT_EV_LOST)->text, "connection reset");
  ck_assert_str_eq(tlt_last(e, TLT_EV_REMOVED)->text, "connection reset");
  ck_assert_ptr_eq(tlt_last(e, TLT_EV_REMOVED)->executor_ud, tlt_last(e, TLT_EV_LOST)->executor_ud);
  tlt_end(e);
}
END_TEST

/* The ends of e2's second phase, with nothing but them: e2 idle makes no revive_offers. */
START_TEST(removed_reports_the_pending_loss_timeout) {
  tl_config cfg = tlt_config();
  cfg.pending_loss_timeout_ns = 5 * TLT_SEC;
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = recording(&cfg);
  tl_launch l[2];
  two_on_e1(e, l);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 5 * TLT_SEC - 1);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  tlt_advance_tick(e, 1);
  char want[256];
  ck_assert_str_eq(tlt_seq_all(e, mark),
                   ends_between(want, sizeof want, "", l, true,
                                "removed e1 kind=PENDING_TIMEOUT app=1 exit=0\nrevive"));
  const tlt_event *r = tlt_last(e, TLT_EV_REMOVED);
  ck_assert_ptr_eq(r->executor_ud, tlt_ud_for(e, "e1"));
  ck_assert_str_eq(r->text, "No loss reason arrived within the pending-loss timeout.");
  ck_assert_uint_eq(tlt_stats(e).pending_loss_timeouts, 1);
  /* The real reason comes too late: refused, and nothing is reported again. */
  tl_loss_reason late = {.kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 1};
  TLT_ERR(e, TL_EGONE, tl_executor_lost(e->s, "e1", &late));
  tlt_end(e);
}
END_TEST

START_TEST(removed_reports_a_heartbeat_expiry) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 5 * TLT_SEC;
  tlt_env *e = recording(&cfg);
  tl_launch l[2];
  two_on_e1(e, l);
  tlt_advance_tick(e, 3 * TLT_SEC);
  TLT_OK(e, tl_executor_heartbeat(e->s, "e2"));
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, 2 * TLT_SEC); /* e1 silent 5 s, e2 2 s */
  char want[256];
  ck_assert_str_eq(tlt_seq_all(e, mark),
                   ends_between(want, sizeof want, "lost e1 kind=HEARTBEAT_TIMEOUT\n", l, true,
                                "removed e1 kind=HEARTBEAT_TIMEOUT app=1 exit=0\nrevive"));
  ck_assert_int_eq(tlt_last(e, TLT_EV_LOST)->loss.kind, TL_LOSS_HEARTBEAT_TIMEOUT);
  ck_assert_str_eq(tlt_last(e, TLT_EV_REMOVED)->text, "Executor heartbeat timed out.");
  tlt_end(e);
}
END_TEST

/* A decommissioned executor's loss is reported as any other: with the reason given (whether its
 * attempts count is the ends' business), one phase or two. */
START_TEST(removed_reports_the_loss_of_a_decommissioning_executor) {
  tlt_env *e = recording(NULL);
  tl_launch l[2];
  two_on_e1(e, l);
  TLT_OK(e, tl_executor_decommission(e->s, "e1", "scale-down"));
  TLT_OK(e, tl_executor_decommission(e->s, "e2", "scale-down"));
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  tl_loss_reason exited = {.kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 1};
  TLT_OK(e, tl_executor_lost(e->s, "e1", &exited));
  char want[256];
  ck_assert_str_eq(
      tlt_seq_all(e, mark),
      ends_between(want, sizeof want, "", l, false, "removed e1 kind=EXITED app=1 exit=1\nrevive"));
  ck_assert(!tlt_last(e, TLT_EV_REMOVED)->has_text); /* no message given */
  /* e2, idle: lost and removed in one call, nothing between, no revive_offers. */
  mark = tlt_mark(e);
  tl_loss_reason gone = {.kind = TL_LOSS_DECOMMISSIONED, .message = "decommissioned"};
  TLT_OK(e, tl_executor_lost(e->s, "e2", &gone));
  ck_assert_str_eq(tlt_seq_all(e, mark),
                   "lost e2 kind=DECOMMISSIONED\nremoved e2 kind=DECOMMISSIONED app=0 exit=0");
  ck_assert_str_eq(tlt_last(e, TLT_EV_REMOVED)->text, "decommissioned");
  tlt_end(e);
}
END_TEST

/* Neither a failed call, nor a report that leaves the loss pending, nor a heartbeat or
 * decommission refused in the pending state, makes executor_removed. */
START_TEST(removed_is_not_made_by_failed_or_pending_reports) {
  tlt_env *e = recording(NULL);
  tl_launch l[2];
  two_on_e1(e, l);
  tl_loss_reason exited = {.kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 1};
  tl_loss_reason pending = {.kind = TL_LOSS_PENDING};
  tl_loss_reason bad = {.kind = (tl_loss_kind)99};
  TLT_ERR(e, TL_ENOENT, tl_executor_lost(e->s, "nope", &exited));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "e1", &bad));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "e1", NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "", &exited));
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REMOVED), 0);
  TLT_ERR(e, TL_OK, tl_executor_lost(e->s, "e1", &pending)); /* again: nothing changes */
  TLT_ERR(e, TL_ESTATE, tl_executor_heartbeat(e->s, "e1"));
  TLT_ERR(e, TL_ESTATE, tl_executor_decommission(e->s, "e1", NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "e1", &bad));
  TLT_OK(e, tl_executor_lost(e->s, "e1", &exited));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REMOVED), 1);
  TLT_ERR(e, TL_EGONE, tl_executor_lost(e->s, "e1", &exited));
  TLT_ERR(e, TL_EGONE, tl_executor_lost(e->s, "e1", &pending));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REMOVED), 1);
  tlt_end(e);
}
END_TEST

/* With no tombstone kept the executor is forgotten as it is removed: the event still names it
 * (its strings outlive the record), and the id can be registered again, its next loss reported
 * again. */
START_TEST(removed_names_an_executor_forgotten_at_once) {
  tl_config cfg = tlt_config();
  cfg.max_tombstones = 0;
  tlt_env *e = recording(&cfg);
  tl_launch l[2];
  two_on_e1(e, l);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_KILLED, false);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REMOVED), 1);
  ck_assert_str_eq(tlt_last(e, TLT_EV_REMOVED)->executor, "e1");
  ck_assert_str_eq(tlt_last(e, TLT_EV_REMOVED)->text, "test loss");
  tl_executor_status st;
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "e1", &st));
  ck_assert_uint_eq(tlt_stats(e).tombstones, 0);
  tlt_add(e, "e1", "h1", NULL, 1);
  mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  ck_assert_str_eq(tlt_seq_all(e, mark),
                   "lost e1 kind=EXITED\nremoved e1 kind=EXITED app=1 exit=0");
  tlt_end(e);
}
END_TEST

/* Inside executor_lost, what the loss's call has made and not yet delivered (tl_stats counts
 * the event being delivered too). */
static void queued_at_lost(tlt_env *e, const tlt_event *ev) {
  if (ev->type == TLT_EV_LOST)
    *(size_t *)e->hook_ud = tlt_stats(e).events_queued;
}

/* The same loss with and without the callback: without it, the same events but
 * executor_removed, which is not made at all (not made and then dropped at delivery: the queue
 * is one event shorter). */
START_TEST(removed_without_its_callback_is_not_made) {
  size_t behind[2] = {0, 0};
  for (int with = 0; with < 2; with++) {
    tlt_env *e = with ? recording(NULL) : tlt_new(NULL);
    tl_launch l[2];
    two_on_e1(e, l);
    e->hook = queued_at_lost;
    e->hook_ud = &behind[with];
    size_t mark = tlt_mark(e);
    tlt_lose(e, "e1", TL_LOSS_PROCESS_LOST, false);
    char want[256];
    ck_assert_str_eq(
        tlt_seq_all(e, mark),
        ends_between(want, sizeof want, "lost e1 kind=PROCESS_LOST\n", l, false,
                     with ? "removed e1 kind=PROCESS_LOST app=0 exit=0\nrevive" : "revive"));
    ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
    tlt_end(e);
  }
  ck_assert_uint_eq(behind[0], 4); /* executor_lost, two ends, revive_offers */
  ck_assert_uint_eq(behind[1], 5); /* and executor_removed */
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The end of time. A deadline that would fall at or past UINT64_MAX saturates there and never
 * comes, not even with the clock at UINT64_MAX, and tl_tick answers TL_TICK_NEVER for it; one
 * that falls a nanosecond earlier comes like any other. An attacker-style review found tl_tick
 * answering TL_TICK_NEVER and then, at UINT64_MAX, running the deadline it had called never.
 * The drain of tlt_end runs at the end of time too, and every tombstone it makes would outlive
 * it, so these tests keep none (max_tombstones 0) unless a tombstone is what they look at
 * (tlt_end_keeping_tombstones).
 * ------------------------------------------------------------------------------------------- */

/* The review's case: registered at UINT64_MAX - 5 with a heartbeat timeout of UINT64_MAX - 1,
 * an executor's deadline saturates. tl_tick says TL_TICK_NEVER, and at UINT64_MAX nothing is
 * lost (it was lost by heartbeat timeout there, and its tombstone evicted at once). */
START_TEST(a_heartbeat_deadline_past_the_end_of_time_never_comes) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = UINT64_MAX - 1;
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 5;
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 5), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_int_eq(ex.state, TL_EXECUTOR_ALIVE);
  ck_assert_uint_eq(ex.running, 2);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_alive, 2);
  ck_assert_uint_eq(st.executors_lost, 0);
  ck_assert_uint_eq(tlt_ts(e, ts).running, 2);
  /* A heartbeat at the end of time starts a deadline that never comes either. */
  TLT_OK(e, tl_executor_heartbeat(e->s, "e1"));
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  tlt_end(e);
}
END_TEST

/* A heartbeat deadline at UINT64_MAX - 1 comes then, and tl_tick counts down to it; e2, heard
 * from later, has a deadline past the end of time and outlives it. */
START_TEST(a_heartbeat_deadline_just_before_the_end_of_time_comes) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 10;
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 11;
  tl_launch l[2];
  two_on_e1(e, l);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), 10);
  ck_assert_uint_eq(tlt_advance_tick(e, 9), 1);
  TLT_OK(e, tl_executor_heartbeat(e->s, "e2")); /* at UINT64_MAX - 2: due at UINT64_MAX + 8 */
  ck_assert_uint_eq(tlt_advance_tick(e, 0), 1);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 1), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX - 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 1);
  const tlt_event *lost = tlt_last(e, TLT_EV_LOST);
  ck_assert_str_eq(lost->executor, "e1");
  ck_assert_int_eq(lost->loss.kind, TL_LOSS_HEARTBEAT_TIMEOUT);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  ck_assert_int_eq(tlt_ex(e, "e2").state, TL_EXECUTOR_ALIVE);
  mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 1), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert_int_eq(tlt_ex(e, "e2").state, TL_EXECUTOR_ALIVE);
  tlt_end(e);
}
END_TEST

/* A pending loss begun at UINT64_MAX - 5 with a pending-loss timeout of UINT64_MAX - 1 waits
 * for its reason past UINT64_MAX: its attempts stay frozen. */
START_TEST(a_pending_loss_deadline_past_the_end_of_time_never_comes) {
  tl_config cfg = tlt_config();
  cfg.pending_loss_timeout_ns = UINT64_MAX - 1;
  cfg.heartbeat_timeout_ns = 0;
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 5;
  tl_launch l[2];
  two_on_e1(e, l);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 5), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_int_eq(ex.state, TL_EXECUTOR_PENDING_LOSS);
  ck_assert_uint_eq(ex.frozen, 2);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_pending_loss, 1);
  ck_assert_uint_eq(st.pending_loss_timeouts, 0);
  ck_assert_uint_eq(st.attempts_frozen, 2);
  tlt_end(e);
}
END_TEST

/* A pending-loss deadline at UINT64_MAX - 1 ends the loss then; one begun later waits on. */
START_TEST(a_pending_loss_deadline_just_before_the_end_of_time_comes) {
  tl_config cfg = tlt_config();
  cfg.pending_loss_timeout_ns = 10;
  cfg.heartbeat_timeout_ns = 0;
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 11;
  tl_launch l[2];
  tl_taskset_id ts = two_on_e1(e, l);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), 10);
  ck_assert_uint_eq(tlt_advance_tick(e, 9), 1);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false); /* at UINT64_MAX - 2: due at UINT64_MAX + 8 */
  ck_assert_uint_eq(tlt_advance_tick(e, 0), 1);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 1), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX - 1);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.pending_loss_timeouts, 1);
  ck_assert_uint_eq(st.executors_pending_loss, 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  ck_assert_int_eq(tlt_ended_of(e, l[0].tid)->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 4);
  tl_executor_status ex;
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "e1", &ex)); /* max_tombstones 0 */
  mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 1), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert_int_eq(tlt_ex(e, "e2").state, TL_EXECUTOR_PENDING_LOSS);
  ck_assert_uint_eq(tlt_stats(e).pending_loss_timeouts, 1);
  tlt_end(e);
}
END_TEST

/* A tombstone made at UINT64_MAX - 5 with a time to live of UINT64_MAX - 1 is still there at
 * UINT64_MAX (it was evicted there), so its id is still answered TL_EGONE. */
START_TEST(a_tombstone_ttl_past_the_end_of_time_never_ends) {
  tl_config cfg = tlt_config();
  cfg.tombstone_ttl_ns = UINT64_MAX - 1;
  cfg.heartbeat_timeout_ns = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 5;
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  ck_assert_uint_eq(tlt_advance_tick(e, 5), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
  tl_executor_status ex;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e1", &ex));
  tl_executor_desc again = {.id = "e1", .host = "h1", .cores = 1};
  TLT_ERR(e, TL_EGONE, tl_executor_add(e->s, &again));
  tlt_end_keeping_tombstones(e, 1);
  ck_assert_msg(tlt_alloc_live_blocks() == 0, "tl_scheduler_free left %zu blocks (%zu bytes)",
                tlt_alloc_live_blocks(), tlt_alloc_live_bytes());
  tlt_alloc_restore();
}
END_TEST

/* A tombstone whose time to live ends at UINT64_MAX - 1 is evicted then, counted down to. */
START_TEST(a_tombstone_ttl_just_before_the_end_of_time_ends) {
  tl_config cfg = tlt_config();
  cfg.tombstone_ttl_ns = 10;
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 11;
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), 10);
  ck_assert_uint_eq(tlt_advance_tick(e, 9), 1);
  tl_executor_status ex;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e1", &ex));
  ck_assert_uint_eq(tlt_advance_tick(e, 1), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX - 1);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 0);
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "e1", &ex));
  tlt_end(e);
}
END_TEST

/* Delay scheduling: a wait that would run out at UINT64_MAX never does. tl_tick makes no
 * revive_offers for it there and an offer keeps the task set at its level (it moved to ANY). */
START_TEST(a_locality_wait_ending_at_the_end_of_time_never_runs_out) {
  tl_config cfg = tlt_config();
  cfg.locality_wait_ns = 10;
  cfg.heartbeat_timeout_ns = 0;
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 10;
  tlt_add(e, "e1", "host1", NULL, 1);
  tlt_add(e, "e2", "host2", NULL, 1);
  const tl_location host1 = {"host1", NULL};
  tl_task_desc tasks[2] = {{.prefs = &host1, .nprefs = 1}, {.prefs = &host1, .nprefs = 1}};
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 2, .tasks = tasks};
  tl_taskset_id ts = tlt_submit_desc(e, &d);
  tl_offer both[2] = {{"e1", 1}, {"e2", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, both, 2, l, 2), 1); /* host1's one core; the wait restarts */
  ck_assert_int_eq(l[0].locality, TL_NODE_LOCAL);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 10), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 0);
  ck_assert_uint_eq(tlt_offers(e, both + 1, 1, l + 1, 1), 0); /* e2 is not on host1 */
  ck_assert_int_eq(tlt_ts(e, ts).locality, TL_NODE_LOCAL);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 1);
  tlt_end(e);
}
END_TEST

/* Exclusion: an unschedulable deadline set at UINT64_MAX - 5 with a timeout of UINT64_MAX - 1
 * never aborts the task set (it was aborted at UINT64_MAX). */
START_TEST(an_unschedulable_deadline_past_the_end_of_time_never_comes) {
  tl_config cfg = tlt_config();
  cfg.exclude_on_failure = true;
  cfg.unschedulable_timeout_ns = UINT64_MAX - 1;
  cfg.heartbeat_timeout_ns = 0;
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  e->now = UINT64_MAX - 5;
  tlt_add(e, "e0", "h0", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 1);
  tlt_fail(e, "e0", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e0", 1, &l, 1), 0); /* excluded on e0, the only executor */
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 1);
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, 5), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  ck_assert(!tlt_ts(e, ts).zombie);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.tasksets_unschedulable, 1);
  ck_assert_uint_eq(st.tasksets_unschedulable_aborted, 0);
  tlt_end(e);
}
END_TEST

/* Speculation: a check made exactly one interval before UINT64_MAX has no next one (it came at
 * UINT64_MAX, and tl_tick had answered the interval). */
START_TEST(a_speculation_check_due_at_the_end_of_time_never_comes) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.3;
  cfg.speculation_multiplier = 1.0;
  cfg.speculation_min_runtime_ns = 0;
  cfg.heartbeat_timeout_ns = 0;
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 3), 3);
  e->now += TLT_SEC / 100;
  tlt_succeed(e, "e1", l[0].tid); /* the median: 10 ms */
  e->now = UINT64_MAX - cfg.speculation_interval_ns;
  ck_assert_uint_eq(tlt_advance_tick(e, 0), TL_TICK_NEVER);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  /* Index 2 fails and runs again: slow after 10 ms, but no check looks at it any more. */
  tlt_fail(e, "e1", l[2].tid, TL_END_EXCEPTION);
  tl_launch again;
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &again, 1), 1);
  ck_assert_uint_eq(again.index, 2);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_advance_tick(e, cfg.speculation_interval_ns), TL_TICK_NEVER);
  ck_assert_uint_eq(e->now, UINT64_MAX);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  tlt_succeed(e, "e1", again.tid);
  tlt_succeed(e, "e1", l[1].tid);
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
  tcase_add_test(tc, executor_lost_hands_back_the_ud_once_at_the_first_phase);
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
  tc = tlt_tcase(s, "removed");
  tcase_add_test(tc, removed_ends_a_two_phase_loss_with_the_real_reason);
  tcase_add_test(tc, removed_follows_lost_in_the_call_of_a_one_phase_loss);
  tcase_add_test(tc, removed_reports_the_pending_loss_timeout);
  tcase_add_test(tc, removed_reports_a_heartbeat_expiry);
  tcase_add_test(tc, removed_reports_the_loss_of_a_decommissioning_executor);
  tcase_add_test(tc, removed_is_not_made_by_failed_or_pending_reports);
  tcase_add_test(tc, removed_names_an_executor_forgotten_at_once);
  tcase_add_test(tc, removed_without_its_callback_is_not_made);
  tc = tlt_tcase(s, "end-of-time");
  tcase_add_test(tc, a_heartbeat_deadline_past_the_end_of_time_never_comes);
  tcase_add_test(tc, a_heartbeat_deadline_just_before_the_end_of_time_comes);
  tcase_add_test(tc, a_pending_loss_deadline_past_the_end_of_time_never_comes);
  tcase_add_test(tc, a_pending_loss_deadline_just_before_the_end_of_time_comes);
  tcase_add_test(tc, a_tombstone_ttl_past_the_end_of_time_never_ends);
  tcase_add_test(tc, a_tombstone_ttl_just_before_the_end_of_time_ends);
  tcase_add_test(tc, a_locality_wait_ending_at_the_end_of_time_never_runs_out);
  tcase_add_test(tc, an_unschedulable_deadline_past_the_end_of_time_never_comes);
  tcase_add_test(tc, a_speculation_check_due_at_the_end_of_time_never_comes);
  return s;
}

/* Inspection: tl_check, tl_stats_get, tl_taskset_get, tl_executor_get and tl_explain_taskset
 * (which must name the attempts and executors keeping a task set alive, and truncate cleanly).
 */
#include "harness.h"

START_TEST(check_validates_its_arguments) {
  tlt_env *e = tlt_new(NULL);
  char why[64] = "untouched";
  ck_assert_int_eq(tl_check(NULL, why, sizeof why), TL_EINVAL);
  ck_assert_int_eq(tl_check(e->s, NULL, 0), TL_OK);
  ck_assert_int_eq(tl_check(e->s, NULL, 100), TL_OK);
  ck_assert_int_eq(tl_check(e->s, why, 1), TL_OK);
  tlt_end(e);
}
END_TEST

START_TEST(stats_of_null_are_zero) {
  tl_stats st;
  memset(&st, 0xff, sizeof st);
  tl_stats_get(NULL, &st);
  tl_stats zero;
  memset(&zero, 0, sizeof zero);
  tlt_assert_stats_same(&zero, &st, "tl_stats_get(NULL)");
}
END_TEST

START_TEST(stats_follow_a_lifecycle) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_alive + st.tasksets_active + st.launched + st.tombstones, 0);
  ck_assert_uint_eq(st.events_queued, 0);
  tlt_add(e, "e1", "h1", "r1", 4);
  tlt_add(e, "e2", "h2", "r1", 4);
  tl_taskset_id a = tlt_submit(e, 0, 0, 0, 6);
  tl_taskset_id b = tlt_submit(e, 1, 0, 1, 2);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_alive, 2);
  ck_assert_uint_eq(st.hosts, 2);
  ck_assert_uint_eq(st.racks, 1);
  ck_assert_uint_eq(st.tasksets_active, 2);
  ck_assert_uint_eq(st.tasks_pending, 8);
  ck_assert_uint_gt(st.mem_live_bytes, e->base_bytes);
  tl_offer o[2] = {{"e1", 4}, {"e2", 4}};
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 8), 8);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.launched, 8);
  ck_assert_uint_eq(st.attempts_running, 8);
  ck_assert_uint_eq(st.tasks_pending, 0);
  /* Finish a, fail b (aborted, zombie with one attempt left), kill nothing. */
  for (int i = 0; i < 8; i++)
    if (l[i].taskset == a)
      tlt_succeed(e, l[i].executor_id, l[i].tid);
  size_t bi = 0;
  while (l[bi].taskset != b)
    bi++;
  tlt_fail(e, l[bi].executor_id, l[bi].tid, TL_END_EXCEPTION);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.succeeded, 6);
  ck_assert_uint_eq(st.failed, 1);
  ck_assert_uint_eq(st.tasksets_released, 1);
  ck_assert_uint_eq(st.tasksets_active, 0);
  ck_assert_uint_eq(st.tasksets_zombie, 1);
  ck_assert_uint_eq(st.attempts_running, 1);
  /* The other attempt of b is on e1 or e2; lose that executor in two phases. */
  size_t bj = 0;
  while (l[bj].taskset != b || bj == bi)
    bj++;
  const char *holder = l[bj].executor_id;
  tlt_lose(e, holder, TL_LOSS_PENDING, false);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.attempts_running, 0);
  ck_assert_uint_eq(st.attempts_frozen, 1);
  ck_assert_uint_eq(st.executors_pending_loss, 1);
  ck_assert_uint_eq(st.executors_alive, 1);
  ck_assert_uint_eq(st.hosts, 1);
  ck_assert_uint_eq(st.executors_lost, 1);
  tlt_lose(e, holder, TL_LOSS_EXITED, false);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.attempts_frozen, 0);
  ck_assert_uint_eq(st.tasksets_zombie, 0);
  ck_assert_uint_eq(st.tasksets_released, 2);
  ck_assert_uint_eq(st.tombstones, 1);
  ck_assert_uint_eq(st.failed, 2);
  ck_assert_uint_eq(st.executors_lost, 1);
  tlt_end(e);
}
END_TEST

START_TEST(taskset_get_reports_every_field) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 8);
  tlt_add(e, "e2", "h2", NULL, 8);
  tl_taskset_id ts = tlt_submit_cpus(e, 6, 2, 0, 5, 2);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.info.id, ts);
  ck_assert_uint_eq(st.info.stage_id, 6);
  ck_assert_uint_eq(st.info.stage_attempt, 2);
  ck_assert_uint_eq(st.info.ntasks, 5);
  ck_assert_uint_eq(st.cpus_per_task, 2);
  ck_assert_uint_eq(st.pending, 5);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 2);
  ck_assert_uint_eq(tlt_offer(e, "e2", 4, l + 2, 2), 2);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.succeeded, 1);
  ck_assert_uint_eq(st.running, 3);
  ck_assert_uint_eq(st.frozen, 2);
  ck_assert_uint_eq(st.pending, 1);
  ck_assert(!st.zombie);
  ck_assert(!st.failed);
  tl_taskset_status out;
  TLT_ERR(e, TL_EINVAL, tl_taskset_get(NULL, ts, &out));
  TLT_ERR(e, TL_EINVAL, tl_taskset_get(e->s, ts, NULL));
  TLT_ERR(e, TL_ENOENT, tl_taskset_get(e->s, ts + 1, &out));
  tlt_end(e);
}
END_TEST

START_TEST(executor_get_follows_cores_and_attempts) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 5);
  tlt_submit_cpus(e, 0, 0, 0, 3, 2);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 5, l, 3), 2);
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_uint_eq(ex.cores, 5);
  ck_assert_uint_eq(ex.free_cores, 1);
  ck_assert_uint_eq(ex.running, 2);
  ck_assert_uint_eq(ex.frozen, 0);
  tlt_succeed(e, "e1", l[0].tid);
  ex = tlt_ex(e, "e1");
  ck_assert_uint_eq(ex.free_cores, 3);
  ck_assert_uint_eq(ex.running, 1);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ex = tlt_ex(e, "e1");
  ck_assert_int_eq(ex.state, TL_EXECUTOR_PENDING_LOSS);
  ck_assert_uint_eq(ex.running, 0);
  ck_assert_uint_eq(ex.frozen, 1);
  ck_assert_uint_eq(ex.free_cores, 5);
  ck_assert_str_eq(ex.host, "h1");
  tlt_end(e);
}
END_TEST

START_TEST(explain_names_the_attempts_and_executors_holding_a_task_set) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "exec-holder", "host-of-holder", NULL, 1);
  tlt_add(e, "exec-other", "host-other", NULL, 1);
  tl_taskset_id a0 = tlt_submit(e, 0, 0, 0, 8);
  tl_launch l[1];
  for (int i = 0; i < 6; i++) { /* make the holder's tid a distinctive number */
    ck_assert_uint_eq(tlt_offer(e, "exec-other", 1, l, 1), 1);
    tlt_succeed(e, "exec-other", l[0].tid);
  }
  ck_assert_uint_eq(tlt_offer(e, "exec-holder", 1, l, 1), 1);
  ck_assert_uint_eq(l[0].tid, 7);
  ck_assert_uint_eq(l[0].index, 6);
  tlt_submit(e, 0, 1, 0, 8); /* a0 is zombie now, held by tid 7 only */
  char buf[4096];
  TLT_OK(e, tl_explain_taskset(e->s, a0, buf, sizeof buf));
  ck_assert_msg(strstr(buf, "exec-holder") != NULL, "explain does not name the holder:\n%s", buf);
  ck_assert_msg(strstr(buf, "host-of-holder") != NULL, "explain does not name its host:\n%s", buf);
  ck_assert_msg(strstr(buf, "7") != NULL, "explain does not name tid 7:\n%s", buf);
  ck_assert_msg(strstr(buf, "exec-other") == NULL, "explain names an executor holding nothing:\n%s",
                buf);
  ck_assert_uint_lt(strlen(buf), sizeof buf);
  /* Frozen on a pending-loss executor: still named. */
  tlt_lose(e, "exec-holder", TL_LOSS_PENDING, false);
  TLT_OK(e, tl_explain_taskset(e->s, a0, buf, sizeof buf));
  ck_assert_msg(strstr(buf, "exec-holder") != NULL, "explain lost the frozen holder:\n%s", buf);
  /* Released: TL_ENOENT. */
  tlt_lose(e, "exec-holder", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_released(e, a0), 1);
  TLT_ERR(e, TL_ENOENT, tl_explain_taskset(e->s, a0, buf, sizeof buf));
  tlt_end(e);
}
END_TEST

START_TEST(explain_shows_the_decommission_message) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  char msg[64] = "node drained for kernel upgrade";
  TLT_OK(e, tl_executor_decommission(e->s, "e1", msg));
  strcpy(msg, "overwritten"); /* the message was copied */
  char buf[4096];
  TLT_OK(e, tl_explain_taskset(e->s, ts, buf, sizeof buf));
  ck_assert_msg(strstr(buf, "node drained for kernel upgrade") != NULL,
                "explain does not show the decommission message:\n%s", buf);
  tlt_end(e);
}
END_TEST

START_TEST(explain_truncates_with_an_ellipsis) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "a-rather-long-executor-name-for-truncation", "and-a-long-host-name", NULL, 4);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "a-rather-long-executor-name-for-truncation", 4, l, 4), 4);
  char full[8192];
  TLT_OK(e, tl_explain_taskset(e->s, ts, full, sizeof full));
  size_t n = strlen(full);
  ck_assert_uint_gt(n, 40);
  const size_t lens[] = {5, 16, 33, n / 2};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    char buf[8192];
    memset(buf, 'Z', sizeof buf);
    TLT_OK(e, tl_explain_taskset(e->s, ts, buf, lens[i]));
    size_t m = strlen(buf);
    ck_assert_uint_lt(m, lens[i]);
    ck_assert_uint_ge(m, 4);
    ck_assert_msg(strcmp(buf + m - 4, "...\n") == 0, "len %zu: cut text does not end in ...: %s",
                  lens[i], buf);
    ck_assert_msg(strncmp(buf, full, m - 4) == 0, "len %zu: cut text is not a prefix: %s", lens[i],
                  buf);
    ck_assert_int_eq(buf[lens[i]], 'Z'); /* nothing written past len */
  }
  char one[2] = {'Z', 'Z'};
  TLT_OK(e, tl_explain_taskset(e->s, ts, one, 1));
  ck_assert_int_eq(one[0], '\0');
  ck_assert_int_eq(one[1], 'Z');
  tlt_end(e);
}
END_TEST

START_TEST(explain_validates_its_arguments) {
  tlt_env *e = tlt_new(NULL);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  char buf[256];
  TLT_ERR(e, TL_EINVAL, tl_explain_taskset(NULL, ts, buf, sizeof buf));
  TLT_ERR(e, TL_EINVAL, tl_explain_taskset(e->s, ts, NULL, sizeof buf));
  TLT_ERR(e, TL_EINVAL, tl_explain_taskset(e->s, ts, buf, 0));
  TLT_ERR(e, TL_ENOENT, tl_explain_taskset(e->s, ts + 100, buf, sizeof buf));
  TLT_OK(e, tl_explain_taskset(e->s, ts, buf, sizeof buf));
  ck_assert_uint_gt(strlen(buf), 0);
  tlt_end(e);
}
END_TEST

Suite *tl_inspect_suite(void) {
  Suite *s = suite_create("inspect");
  TCase *tc = tlt_tcase(s, "check-and-stats");
  tcase_add_test(tc, check_validates_its_arguments);
  tcase_add_test(tc, stats_of_null_are_zero);
  tcase_add_test(tc, stats_follow_a_lifecycle);
  tc = tlt_tcase(s, "get");
  tcase_add_test(tc, taskset_get_reports_every_field);
  tcase_add_test(tc, executor_get_follows_cores_and_attempts);
  tc = tlt_tcase(s, "explain");
  tcase_add_test(tc, explain_names_the_attempts_and_executors_holding_a_task_set);
  tcase_add_test(tc, explain_shows_the_decommission_message);
  tcase_add_test(tc, explain_truncates_with_an_ellipsis);
  tcase_add_test(tc, explain_validates_its_arguments);
  return s;
}

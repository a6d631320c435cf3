/* tl_resource_offers: launch order (index order, failed index first), FIFO over task sets
 * (priority, then stage id), round-robin spread over offers, free-core accounting that an offer
 * can never exceed, the cap, rejected offers, and argument validation.
 */
#include "harness.h"

/* Asserts launch i is (task set, index, attempt) on executor. */
static void expect_launch(const tl_launch *l, size_t i, tl_taskset_id ts, uint32_t index,
                          uint32_t attempt, const char *exec) {
  ck_assert_msg(l[i].taskset == ts && l[i].index == index && l[i].attempt == attempt &&
                    strcmp(l[i].executor_id, exec) == 0,
                "launch %zu: ts %ju idx %u att %u on %s; want ts %ju idx %u att %u on %s", i,
                (uintmax_t)l[i].taskset, l[i].index, l[i].attempt, l[i].executor_id, (uintmax_t)ts,
                index, attempt, exec);
}

START_TEST(fresh_task_set_launches_in_index_order) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 8);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 5);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 8, l, 8), 5);
  for (uint32_t i = 0; i < 5; i++) {
    expect_launch(l, i, ts, i, 0, "e1");
    ck_assert_uint_eq(l[i].tid, i + 1);
    ck_assert_uint_eq(l[i].stage_id, 0);
    ck_assert_uint_eq(l[i].cpus, 1);
    ck_assert_ptr_eq(l[i].payload, tlt_sub(e, ts)->payload);
  }
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.launched, 5);
  ck_assert_uint_eq(st.attempts_running, 5);
  ck_assert_uint_eq(st.tasks_pending, 0);
  tl_taskset_status t = tlt_ts(e, ts);
  ck_assert_uint_eq(t.running, 5);
  ck_assert_uint_eq(t.pending, 0);
  tlt_end(e);
}
END_TEST

START_TEST(offers_are_filled_round_robin) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_offer o[2] = {{"e1", 2}, {"e2", 2}};
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 4), 4);
  expect_launch(l, 0, ts, 0, 0, "e1");
  expect_launch(l, 1, ts, 1, 0, "e2");
  expect_launch(l, 2, ts, 2, 0, "e1");
  expect_launch(l, 3, ts, 3, 0, "e2");
  tlt_end(e);
}
END_TEST

START_TEST(a_stage_spreads_over_executors) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tlt_add(e, "e3", "h3", NULL, 4);
  tlt_submit(e, 0, 0, 0, 6);
  tl_offer o[3] = {{"e1", 4}, {"e2", 4}, {"e3", 4}};
  tl_launch l[12];
  ck_assert_uint_eq(tlt_offers(e, o, 3, l, 12), 6);
  ck_assert_uint_eq(tlt_ex(e, "e1").running, 2);
  ck_assert_uint_eq(tlt_ex(e, "e2").running, 2);
  ck_assert_uint_eq(tlt_ex(e, "e3").running, 2);
  ck_assert_uint_eq(tlt_ex(e, "e3").free_cores, 2);
  tlt_end(e);
}
END_TEST

START_TEST(task_sets_go_in_fifo_order_priority_then_stage) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 3);
  /* Submitted in the opposite order of how they must run. */
  tl_taskset_id x = tlt_submit(e, 1, 0, 2, 1);
  tl_taskset_id y = tlt_submit(e, 5, 0, 1, 1);
  tl_taskset_id z = tlt_submit(e, 3, 0, 1, 1);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 3), 3);
  expect_launch(l, 0, z, 0, 0, "e1");
  expect_launch(l, 1, y, 0, 0, "e1");
  expect_launch(l, 2, x, 0, 0, "e1");
  tlt_end(e);
}
END_TEST

START_TEST(fifo_one_core_at_a_time) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id late = tlt_submit(e, 9, 0, 1, 2);
  tl_taskset_id early = tlt_submit(e, 20, 0, 0, 2);
  const tl_taskset_id want[4] = {early, early, late, late};
  for (int i = 0; i < 4; i++) {
    tl_launch l[1];
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
    ck_assert_uint_eq(l[0].taskset, want[i]);
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, l + 1, 0), 0); /* no free core */
    tlt_succeed(e, "e1", l[0].tid);
  }
  ck_assert_uint_eq(tlt_released(e, early), 1);
  ck_assert_uint_eq(tlt_released(e, late), 1);
  tlt_end(e);
}
END_TEST

START_TEST(the_first_task_set_fills_before_the_next) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id a = tlt_submit(e, 0, 0, 0, 1);
  tl_taskset_id b = tlt_submit(e, 1, 0, 1, 3);
  tl_offer o[2] = {{"e1", 2}, {"e2", 2}};
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 4), 4);
  expect_launch(l, 0, a, 0, 0, "e1");
  expect_launch(l, 1, b, 0, 0, "e1");
  expect_launch(l, 2, b, 1, 0, "e2");
  expect_launch(l, 3, b, 2, 0, "e2");
  tlt_end(e);
}
END_TEST

START_TEST(a_failed_index_is_retried_before_other_pending_ones) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  expect_launch(l, 0, ts, 0, 0, "e1");
  tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  expect_launch(l, 0, ts, 1, 0, "e1");
  size_t mark = tlt_mark(e);
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);
  ck_assert_uint_ge(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  expect_launch(l, 0, ts, 1, 1, "e1");
  tlt_killed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  expect_launch(l, 0, ts, 1, 2, "e1");
  tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  expect_launch(l, 0, ts, 2, 0, "e1");
  tlt_end(e);
}
END_TEST

START_TEST(tids_increase_across_task_sets_and_are_never_reused) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_tid last = 0;
  for (uint32_t stage = 0; stage < 4; stage++) {
    tlt_submit(e, stage, 0, 0, 2);
    tl_launch l[2];
    ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
    for (int i = 0; i < 2; i++) {
      ck_assert_uint_eq(l[i].tid, last + 1);
      last = l[i].tid;
      tlt_succeed(e, "e1", l[i].tid);
    }
  }
  ck_assert_uint_eq(last, 8);
  tlt_end(e);
}
END_TEST

START_TEST(free_cores_are_never_exceeded_whatever_the_offer_claims) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_submit(e, 0, 0, 0, 20);
  tl_launch l[20];
  /* An offer claiming more than the executor has. */
  ck_assert_uint_eq(tlt_offer(e, "e1", 100, l, 20), 4);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 0);
  /* The runtime believes cores are free; the ledger knows better. */
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l + 4, 16), 0);
  /* The same executor twice in one call. */
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  tl_offer twice[2] = {{"e1", 4}, {"e1", 4}};
  ck_assert_uint_eq(tlt_offers(e, twice, 2, l + 4, 16), 2);
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_uint_eq(ex.free_cores, 0);
  ck_assert_uint_eq(ex.running, 4);
  tlt_end(e);
}
END_TEST

START_TEST(an_offer_smaller_than_the_free_cores_is_honoured) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 8);
  tlt_submit(e, 0, 0, 0, 8);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 8), 3);
  ck_assert_uint_eq(tlt_offer(e, "e1", 0, l, 8), 0);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 5);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.rejected_offers, 0);
  tlt_end(e);
}
END_TEST

START_TEST(multi_core_tasks_take_their_cores) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 5);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit_cpus(e, 0, 0, 0, 4, 2);
  tl_offer o[2] = {{"e1", 5}, {"e2", 1}};
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 4), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_str_eq(l[i].executor_id, "e1");
    ck_assert_uint_eq(l[i].cpus, 2);
  }
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 1);
  ck_assert_uint_eq(tlt_ex(e, "e2").free_cores, 1);
  tlt_end(e);
}
END_TEST

START_TEST(cap_limits_the_launches) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 10);
  tl_offer o[2] = {{"e1", 4}, {"e2", 4}};
  tl_launch l[10];
  memset(l, 0xee, sizeof l);
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 3), 3);
  /* Nothing past cap is written. */
  unsigned char untouched[sizeof(tl_launch)];
  memset(untouched, 0xee, sizeof untouched);
  ck_assert_mem_eq(&l[3], untouched, sizeof untouched);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 7);
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, 7);
  /* Cap 0 with out NULL launches nothing and is valid. */
  ck_assert_uint_eq(tlt_offers(e, o, 2, NULL, 0), 0);
  ck_assert_uint_eq(tlt_stats(e).launched, 3);
  tlt_end(e);
}
END_TEST

START_TEST(offers_with_nothing_pending_launch_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  size_t mark = tlt_mark(e);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 0);
  ck_assert_uint_eq(tlt_offers(e, NULL, 0, l, 4), 0);
  ck_assert_str_eq(tlt_seq_all(e, mark), "");
  tlt_end(e);
}
END_TEST

START_TEST(offers_from_executors_that_cannot_take_tasks_are_rejected) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "alive", "h1", NULL, 1);
  tlt_add(e, "decom", "h1", NULL, 4);
  tlt_add(e, "pending", "h2", NULL, 4);
  tlt_add(e, "gone", "h3", NULL, 4);
  TLT_OK(e, tl_executor_decommission(e->s, "decom", NULL));
  tlt_lose(e, "pending", TL_LOSS_PENDING, false);
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  tlt_submit(e, 0, 0, 0, 10);
  tl_offer o[5] = {{"never", 4}, {"decom", 4}, {"pending", 4}, {"gone", 4}, {"alive", 4}};
  tl_stats before = tlt_stats(e);
  tl_launch l[10];
  ck_assert_uint_eq(tlt_offers(e, o, 5, l, 10), 1);
  ck_assert_str_eq(l[0].executor_id, "alive");
  tl_stats after = tlt_stats(e);
  ck_assert_uint_eq(after.rejected_offers, before.rejected_offers + 4);
  /* An unknown executor offering is not registered by it. */
  tl_executor_status ex;
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "never", &ex));
  ck_assert_uint_eq(after.executors_alive, 1);
  tlt_end(e);
}
END_TEST

START_TEST(offers_answer_every_documented_error) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_submit(e, 0, 0, 0, 4);
  char id256[300];
  memset(id256, 'x', 256);
  id256[256] = '\0';
  tl_offer good = {"e1", 4};
  tl_offer null_id[2] = {{"e1", 4}, {NULL, 4}};
  tl_offer empty_id[2] = {{"e1", 4}, {"", 4}};
  tl_offer long_id[2] = {{"e1", 4}, {id256, 4}};
  tl_launch l[4];
  size_t n = 12345;
  /* *nout is 0 on any error. */
  TLT_ERR(e, TL_EINVAL, tl_resource_offers(NULL, &good, 1, l, 4, &n));
  ck_assert_uint_eq(n, 0);
  TLT_ERR(e, TL_EINVAL, tl_resource_offers(e->s, &good, 1, l, 4, NULL));
  n = 12345;
  TLT_ERR(e, TL_EINVAL, tl_resource_offers(e->s, NULL, 1, l, 4, &n));
  ck_assert_uint_eq(n, 0);
  n = 12345;
  TLT_ERR(e, TL_EINVAL, tl_resource_offers(e->s, &good, 1, NULL, 4, &n));
  ck_assert_uint_eq(n, 0);
  /* A bad offer anywhere launches nothing, not even for the good ones before it. */
  const tl_offer *bad[3] = {null_id, empty_id, long_id};
  for (int i = 0; i < 3; i++) {
    n = 12345;
    TLT_ERR(e, TL_EINVAL, tl_resource_offers(e->s, bad[i], 2, l, 4, &n));
    ck_assert_uint_eq(n, 0);
  }
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 4);
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  tlt_end(e);
}
END_TEST

START_TEST(zombie_task_sets_launch_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 10);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 4), 2);
  tlt_fail(e, "e1", l[0].tid, TL_END_FETCH_FAILED);
  ck_assert(tlt_ts(e, ts).zombie);
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 0);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 3);
  tlt_end(e);
}
END_TEST

/* The queue of schedulable task sets keeps FIFO order while task sets leave it (their last
 * pending task launched) and come back in the middle of the order (a failure gives them a task
 * to retry), many times over: tl_check verifies the queue after every step, and every offer
 * must take the first task set in (priority, stage) order. */
START_TEST(task_sets_returning_to_the_queue_keep_fifo_order) {
  enum { N = 64 };
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, N);
  uint32_t priority[N];
  tl_taskset_id ids[N];
  for (uint32_t i = 0; i < N; i++)
    priority[i] = (i * 37u + 11u) % 16u; /* four stages share each priority */
  for (uint32_t i = 0; i < N; i++)
    ids[i] = tlt_submit(e, i, 0, priority[i], 1);

  /* Stage i's rank in FIFO order: by priority, then by stage id. */
  uint32_t order[N];
  for (uint32_t i = 0; i < N; i++)
    order[i] = i;
  for (uint32_t i = 1; i < N; i++)
    for (uint32_t j = i;
         j > 0 && (priority[order[j - 1]] > priority[order[j]] ||
                   (priority[order[j - 1]] == priority[order[j]] && order[j - 1] > order[j]));
         j--) {
      uint32_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }

  tl_launch l[N];
  ck_assert_uint_eq(tlt_offer(e, "e1", N, l, N), N);
  for (uint32_t k = 0; k < N; k++)
    ck_assert_uint_eq(l[k].stage_id, order[k]);
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, 0);

  /* Every task fails once, in a scrambled order: each task set re-enters the queue. */
  tl_tid tid_of_stage[N];
  for (uint32_t k = 0; k < N; k++)
    tid_of_stage[l[k].stage_id] = l[k].tid;
  for (uint32_t k = 0; k < N; k++)
    tlt_fail(e, "e1", tid_of_stage[(k * 29u + 5u) % N], TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_stats(e).tasks_pending, N);

  /* One core at a time: the retries come back in FIFO order, as attempt 1. */
  for (uint32_t k = 0; k < N; k++) {
    tl_launch one;
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, &one, 1), 1);
    ck_assert_uint_eq(one.stage_id, order[k]);
    ck_assert_uint_eq(one.taskset, ids[order[k]]);
    ck_assert_uint_eq(one.attempt, 1);
    tlt_succeed(e, "e1", one.tid);
  }
  for (uint32_t i = 0; i < N; i++)
    ck_assert_uint_eq(tlt_released(e, ids[i]), 1);
  tlt_end(e);
}
END_TEST

/* attempts_by_tid grows through several doublings as one round launches thousands of attempts,
 * then shrinks as they end in a scrambled order, which moves entries back over clusters that
 * wrap around the end of its array. tl_check (after every call) finds every entry by its tid and
 * recounts the table; a tid that ended is stale at once. */
START_TEST(the_tid_index_stays_whole_through_growth_churn_and_shrinking) {
  enum { N = 3000 };
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "big", "h1", NULL, N);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, N);
  tl_launch *l = malloc(N * sizeof *l);
  ck_assert_ptr_nonnull(l);
  ck_assert_uint_eq(tlt_offer(e, "big", N, l, N), N);
  ck_assert_uint_eq(tlt_stats(e).attempts_running, N);
  /* 1031 is prime to N: k * 1031 mod N visits every launch once, far from launch order. */
  for (size_t k = 0; k < N; k++) {
    tl_tid tid = l[k * 1031 % N].tid;
    tlt_succeed(e, "big", tid);
    tl_update again = {.state = TL_TASK_FINISHED};
    ck_assert_int_eq(tl_status_update(e->s, "big", tid, &again), TL_ESTALE);
    ck_assert_uint_eq(tlt_stats(e).attempts_running, N - 1 - k);
  }
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  free(l);
  tlt_end(e);
}
END_TEST

/* Launch rounds of a few tasks interleaved with ends in a scrambled order: new tids land among
 * the clusters that earlier ones left, so insertions pass entries and removals shift clusters
 * back (Robin Hood order). tl_check (after every call) checks that order and finds every entry
 * by its tid; an ended tid is stale at once. */
START_TEST(the_tid_index_keeps_its_order_through_interleaved_launches_and_ends) {
  enum { CORES = 600, STEPS = 6000 };
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "big", "h1", NULL, CORES);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, STEPS * 4);
  tl_tid running[CORES];
  size_t nrunning = 0;
  uint32_t x = 12345;
  for (int step = 0; step < STEPS; step++) {
    x = x * 1103515245u + 12345u;
    if (nrunning < CORES / 2 || (x >> 16) % 3 == 0) {
      tl_launch l[7];
      uint32_t want = 1 + (x >> 8) % 7;
      if (want > CORES - nrunning)
        want = (uint32_t)(CORES - nrunning);
      size_t n = tlt_offer(e, "big", want, l, 7);
      for (size_t k = 0; k < n; k++)
        running[nrunning++] = l[k].tid;
    } else {
      size_t k = (x >> 4) % nrunning;
      tl_tid tid = running[k];
      running[k] = running[--nrunning];
      tlt_succeed(e, "big", tid);
      tl_update again = {.state = TL_TASK_FINISHED};
      ck_assert_int_eq(tl_status_update(e->s, "big", tid, &again), TL_ESTALE);
    }
    ck_assert_uint_eq(tlt_stats(e).attempts_running, nrunning);
  }
  while (nrunning > 0)
    tlt_succeed(e, "big", running[--nrunning]);
  ck_assert_int_eq(tl_cancel_stage(e->s, 0, NULL), TL_OK);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* A record an attempt gives back is kept, while attempts run, for the next launch; once nothing
 * runs, every such spare is freed and the scheduler holds what it held before the first launch
 * (tlt_end: the drained scheduler holds what an empty one does). */
START_TEST(spare_attempt_records_are_reused_and_given_back_when_nothing_runs) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_submit(e, 0, 0, 0, 6);
  size_t idle = tlt_stats(e).mem_live_blocks;
  tl_launch l[4], one;
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  size_t busy = tlt_stats(e).mem_live_blocks;
  ck_assert_uint_gt(busy, idle);
  tlt_succeed(e, "e1", l[0].tid); /* its record stays, as a spare */
  ck_assert_uint_eq(tlt_stats(e).mem_live_blocks, busy);
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, &one, 1), 1); /* and is the launch's */
  ck_assert_uint_eq(tlt_stats(e).mem_live_blocks, busy);
  l[0] = one;
  tlt_succeed(e, "e1", l[1].tid);
  tlt_succeed(e, "e1", l[2].tid);
  /* Two spares, two free cores and one task left: the round takes one spare. */
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, &one, 4), 1);
  ck_assert_uint_eq(tlt_stats(e).mem_live_blocks, busy);
  tlt_succeed(e, "e1", one.tid);
  tlt_succeed(e, "e1", l[3].tid);
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 1);
  ck_assert_uint_eq(tlt_stats(e).mem_live_blocks, busy);
  tlt_succeed(e, "e1", l[0].tid); /* the last one: nothing runs, no spare is kept */
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 0);
  ck_assert_uint_lt(tlt_stats(e).mem_live_blocks, idle); /* the task set is released too */
  tlt_end(e);
}
END_TEST

/* Each launch names the offer it came from (its index in this call's array, the first offer
 * of its executor when several name it), points at that offer's own id string, and carries the
 * executor's ud as registered; rejected offers keep their place in the numbering. */
START_TEST(launches_name_their_offer_point_at_its_id_and_carry_the_ud) {
  tlt_env *e = tlt_new(NULL);
  int uds[3];
  const char *ids[3] = {"e1", "e2", "decom"};
  for (int i = 0; i < 3; i++) {
    tl_executor_desc d = {.id = ids[i], .host = "h1", .cores = i == 0 ? 4 : 2, .ud = &uds[i]};
    TLT_OK(e, tl_executor_add(e->s, &d));
  }
  tlt_add(e, "gone", "h2", NULL, 2);
  TLT_OK(e, tl_executor_decommission(e->s, "decom", NULL));
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 7);
  /* Two strings "e1": the launches must point at the first offer's, not the second's. */
  char e1_first[] = "e1", e1_again[] = "e1", e2[] = "e2";
  tl_offer o[6] = {{"never", 1}, {e1_first, 2}, {"decom", 2}, {e2, 2}, {e1_again, 1}, {"gone", 2}};
  tl_stats before = tlt_stats(e);
  size_t mark = tlt_mark(e);
  tl_launch l[8];
  /* e1's slot has 2 + 1 cores, e2's 2: passes e1 e2, e1 e2, e1. */
  ck_assert_uint_eq(tlt_offers(e, o, 6, l, 8), 5);
  const size_t want_offer[5] = {1, 3, 1, 3, 1};
  for (size_t k = 0; k < 5; k++) {
    ck_assert_uint_eq(l[k].index, k);
    ck_assert_uint_eq(l[k].offer, want_offer[k]);
    ck_assert_ptr_eq(l[k].executor_id, o[want_offer[k]].executor_id);
    ck_assert_ptr_eq(l[k].executor_ud, want_offer[k] == 1 ? &uds[0] : &uds[1]);
    const tlt_event *ev = tlt_nth(e, mark, TLT_EV_STARTED, k);
    ck_assert_uint_eq(ev->task.tid, l[k].tid);
    ck_assert_str_eq(ev->executor, want_offer[k] == 1 ? "e1" : "e2");
  }
  ck_assert_ptr_eq(l[0].executor_id, e1_first);
  ck_assert_uint_eq(tlt_stats(e).rejected_offers, before.rejected_offers + 3);
  ck_assert_ptr_eq(tlt_ex(e, "e1").ud, &uds[0]);
  ck_assert_ptr_eq(tlt_ex(e, "e2").ud, &uds[1]);
  ck_assert_ptr_eq(tlt_ex(e, "decom").ud, &uds[2]);

  /* The numbering is this call's: with e2 first and e1 last, the same executors get other
   * numbers. */
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e2", l[1].tid);
  tl_offer again[3] = {{e2, 1}, {"decom", 1}, {e1_again, 1}};
  tl_launch m[2];
  ck_assert_uint_eq(tlt_offers(e, again, 3, m, 2), 2);
  ck_assert_uint_eq(m[0].offer, 0);
  ck_assert_ptr_eq(m[0].executor_id, e2);
  ck_assert_ptr_eq(m[0].executor_ud, &uds[1]);
  ck_assert_uint_eq(m[1].offer, 2);
  ck_assert_ptr_eq(m[1].executor_id, e1_again);
  ck_assert_ptr_eq(m[1].executor_ud, &uds[0]);
  tlt_succeed(e, "e2", m[0].tid);
  tlt_fail(e, "e1", m[1].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_ts(e, ts).succeeded, 3);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "done"));
  tlt_end(e);
}
END_TEST

/* An executor registered without a ud hands back NULL everywhere; tlt_add's executors hand
 * back theirs, and the harness checks every launch against tl_executor_get. */
START_TEST(an_executor_without_ud_hands_back_null) {
  tlt_env *e = tlt_new(NULL);
  TLT_OK(e, tl_executor_add(e->s, &(tl_executor_desc){.id = "plain", .host = "h1", .cores = 1}));
  tlt_add(e, "mine", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 2);
  tl_offer o[2] = {{"plain", 1}, {"mine", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  ck_assert_ptr_null(l[0].executor_ud);
  ck_assert_ptr_null(tlt_ex(e, "plain").ud);
  ck_assert_ptr_eq(l[1].executor_ud, tlt_ud_for(e, "mine"));
  ck_assert_str_eq(((const tlt_exec_ud *)l[1].executor_ud)->id, "mine");
  size_t mark = tlt_mark(e);
  tlt_lose(e, "plain", TL_LOSS_EXITED, false);
  ck_assert_ptr_null(tlt_nth(e, mark, TLT_EV_LOST, 0)->executor_ud);
  tlt_end(e);
}
END_TEST

Suite *tl_offers_suite(void) {
  Suite *s = suite_create("offers");
  TCase *tc = tlt_tcase(s, "order");
  tcase_add_test(tc, fresh_task_set_launches_in_index_order);
  tcase_add_test(tc, offers_are_filled_round_robin);
  tcase_add_test(tc, a_stage_spreads_over_executors);
  tcase_add_test(tc, task_sets_go_in_fifo_order_priority_then_stage);
  tcase_add_test(tc, fifo_one_core_at_a_time);
  tcase_add_test(tc, the_first_task_set_fills_before_the_next);
  tcase_add_test(tc, a_failed_index_is_retried_before_other_pending_ones);
  tcase_add_test(tc, tids_increase_across_task_sets_and_are_never_reused);
  tc = tlt_tcase(s, "cores");
  tcase_add_test(tc, free_cores_are_never_exceeded_whatever_the_offer_claims);
  tcase_add_test(tc, an_offer_smaller_than_the_free_cores_is_honoured);
  tcase_add_test(tc, multi_core_tasks_take_their_cores);
  tcase_add_test(tc, cap_limits_the_launches);
  tc = tlt_tcase(s, "rejects");
  tcase_add_test(tc, offers_with_nothing_pending_launch_nothing);
  tcase_add_test(tc, offers_from_executors_that_cannot_take_tasks_are_rejected);
  tcase_add_test(tc, offers_answer_every_documented_error);
  tcase_add_test(tc, zombie_task_sets_launch_nothing);
  tcase_add_test(tc, task_sets_returning_to_the_queue_keep_fifo_order);
  tc = tlt_tcase(s, "launches");
  tcase_add_test(tc, launches_name_their_offer_point_at_its_id_and_carry_the_ud);
  tcase_add_test(tc, an_executor_without_ud_hands_back_null);
  tc = tlt_tcase(s, "records");
  tcase_add_test(tc, the_tid_index_stays_whole_through_growth_churn_and_shrinking);
  tcase_add_test(tc, the_tid_index_keeps_its_order_through_interleaved_launches_and_ends);
  tcase_add_test(tc, spare_attempt_records_are_reused_and_given_back_when_nothing_runs);
  return s;
}

/* Pools: FIFO and FAIR order, between pools and inside them (Spark's PoolSuite), pools'
 * running counts (zombies included), and tl_pool_add / tl_pool_get with their errors.
 */
#include "harness.h"

/* A TL_FAIR scheduler with the pools named (FIFO inside; weights and min shares as given),
 * then one executor. Pools live as long as the scheduler: the drain's baseline includes them. */
typedef struct pool_spec {
  const char *name;
  tl_sched_mode mode;
  uint32_t weight, min_share;
} pool_spec;

static tlt_env *fair_env_pools(uint32_t cores, const pool_spec *pools, int npools,
                               uint32_t max_failures) {
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  cfg.max_task_failures = max_failures;
  tlt_env *e = tlt_new(&cfg);
  for (int i = 0; i < npools; i++)
    TLT_OK(e, tl_pool_add(e->s, pools[i].name, pools[i].mode, pools[i].weight, pools[i].min_share));
  tlt_rebase(e);
  tlt_add(e, "e1", "h1", NULL, cores);
  return e;
}

static tlt_env *fair_env(uint32_t cores) { return fair_env_pools(cores, NULL, 0, 4); }

static tl_taskset_id submit_in(tlt_env *e, const char *pool, uint32_t stage, uint32_t ntasks) {
  tl_taskset_desc d = {.stage_id = stage, .ntasks = ntasks, .pool = pool};
  return tlt_submit_desc(e, &d);
}

/* Offers one core; asserts it launches a task of the stage expected; returns the launch. */
static tl_launch one_core_to(tlt_env *e, uint32_t want_stage) {
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l, 1), 1);
  ck_assert_msg(l.stage_id == want_stage, "launched stage %u, want %u", l.stage_id, want_stage);
  return l;
}

static void finish_all(tlt_env *e, const tl_launch *l, size_t n) {
  for (size_t i = 0; i < n; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
}

/* PoolSuite "FIFO Scheduler Test". */
START_TEST(fifo_scheduler_test) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 8);
  for (uint32_t stage = 0; stage < 3; stage++)
    tlt_submit(e, stage, 0, 0, 2);
  tl_launch l[6];
  const uint32_t want[6] = {0, 0, 1, 1, 2, 2};
  for (int i = 0; i < 6; i++)
    l[i] = one_core_to(e, want[i]);
  finish_all(e, l, 6);
  tlt_end(e);
}
END_TEST

/* PoolSuite "Fair Scheduler Test": pools 1 (min share 2) and 2 (min share 3), weight 1, FIFO
 * inside; the comments give Spark's reasoning at each step. */
START_TEST(fair_scheduler_test) {
  const pool_spec pools[3] = {{"1", TL_FIFO, 1, 2}, {"2", TL_FIFO, 1, 3}, {"3", TL_FIFO, 1, 0}};
  tlt_env *e = fair_env_pools(16, pools, 3, 4);
  submit_in(e, "1", 0, 1);
  submit_in(e, "1", 1, 1);
  submit_in(e, "1", 2, 2);
  submit_in(e, "2", 3, 2);
  submit_in(e, "2", 4, 2);
  tl_launch l[8];
  l[0] = one_core_to(e, 0); /* both needy, share ratios 0 and 0: pool "1" by name */
  l[1] = one_core_to(e, 3); /* 1/2 against 0 */
  l[2] = one_core_to(e, 3); /* 1/2 against 1/3 */
  l[3] = one_core_to(e, 1); /* 1/2 against 2/3 */
  l[4] = one_core_to(e, 4); /* pool "1" is not needy any more (2 of 2), pool "2" is (2 of 3) */
  l[5] = one_core_to(e, 2); /* neither needy: 2 running against 3 */
  l[6] = one_core_to(e, 2); /* 3 against 3: by name */
  l[7] = one_core_to(e, 4); /* 4 against 3 */
  tl_pool_status p;
  TLT_OK(e, tl_pool_get(e->s, "1", &p));
  ck_assert_uint_eq(p.running, 4);
  ck_assert_uint_eq(p.tasksets, 3);
  ck_assert_uint_eq(p.min_share, 2);
  TLT_OK(e, tl_pool_get(e->s, "2", &p));
  ck_assert_uint_eq(p.running, 4);
  finish_all(e, l, 8);
  TLT_OK(e, tl_pool_get(e->s, "2", &p));
  ck_assert_uint_eq(p.running, 0);
  ck_assert_uint_eq(p.tasksets, 0);
  tlt_end(e);
}
END_TEST

/* Between pools that are not needy, running / weight decides. */
START_TEST(weights_share_between_pools) {
  const pool_spec pools[2] = {{"a", TL_FIFO, 1, 0}, {"b", TL_FIFO, 3, 0}};
  tlt_env *e = fair_env_pools(16, pools, 2, 4);
  submit_in(e, "a", 0, 8);
  submit_in(e, "b", 1, 8);
  /* a: 0/1, b: 0/3 -> name; then a 1/1 vs b 0/3 -> b; b 1/3 -> b; b 2/3 -> b; b 3/3 = a 1/1 ->
   * name: a; a 2/1 vs b 3/3 -> b ... b gets three for each of a's. */
  const uint32_t want[8] = {0, 1, 1, 1, 0, 1, 1, 1};
  tl_launch l[8];
  for (int i = 0; i < 8; i++)
    l[i] = one_core_to(e, want[i]);
  finish_all(e, l, 8);
  tlt_end(e);
}
END_TEST

/* Inside a FAIR pool task sets take turns by running attempts; an attempt that ends moves its
 * task set forward at once. */
START_TEST(a_fair_pool_orders_task_sets_by_running_attempts) {
  const pool_spec pools[1] = {{"p", TL_FAIR, 1, 0}};
  tlt_env *e = fair_env_pools(16, pools, 1, 4);
  for (uint32_t stage = 0; stage < 3; stage++)
    submit_in(e, "p", stage, 4);
  tl_launch l[8];
  const uint32_t want[6] = {0, 1, 2, 0, 1, 2};
  for (int i = 0; i < 6; i++)
    l[i] = one_core_to(e, want[i]);
  /* Stage 2 finishes one of its two attempts: with one running it goes first. */
  tlt_succeed(e, l[5].executor_id, l[5].tid);
  l[5] = one_core_to(e, 2);
  l[6] = one_core_to(e, 0); /* all at 2 now: by stage */
  finish_all(e, l, 7);
  tlt_end(e);
}
END_TEST

/* Spark sorts once per round: the first task set takes what it can before the next one. */
START_TEST(a_round_keeps_the_order_it_started_with) {
  const pool_spec pools[1] = {{"p", TL_FAIR, 1, 0}};
  tlt_env *e = fair_env_pools(16, pools, 1, 4);
  submit_in(e, "p", 0, 4);
  submit_in(e, "p", 1, 4);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 8), 3);
  for (int i = 0; i < 3; i++)
    ck_assert_uint_eq(l[i].stage_id, 0);
  l[3] = one_core_to(e, 1); /* 3 running against 0 now */
  finish_all(e, l, 4);
  tlt_end(e);
}
END_TEST

/* A zombie's running attempts still count toward its pool's share (they hold cores). */
START_TEST(zombie_attempts_count_toward_their_pool) {
  const pool_spec pools[2] = {{"a", TL_FIFO, 1, 0}, {"b", TL_FIFO, 1, 0}};
  tlt_env *e = fair_env_pools(16, pools, 2, 1);
  tl_taskset_id za = submit_in(e, "a", 0, 3);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 8), 3);
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION); /* aborts stage 0: zombie with 2 running */
  ck_assert(tlt_ts(e, za).zombie);
  tl_pool_status p;
  TLT_OK(e, tl_pool_get(e->s, "a", &p));
  ck_assert_uint_eq(p.running, 2);
  submit_in(e, "a", 1, 4);
  submit_in(e, "b", 2, 4);
  l[0] = one_core_to(e, 2); /* a runs 2 (its zombie's), b none */
  l[3] = one_core_to(e, 2); /* 2 against 1 */
  l[4] = one_core_to(e, 1); /* 2 against 2: by name */
  tlt_succeed(e, "e1", l[1].tid);
  tlt_succeed(e, "e1", l[2].tid);
  ck_assert_uint_eq(tlt_released(e, za), 1);
  finish_all(e, &l[3], 2);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_end(e);
}
END_TEST

/* PoolSuite "FIFO scheduler uses root pool and not spark.scheduler.pool property". */
START_TEST(fifo_mode_ignores_pool_names) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  submit_in(e, "testPool", 0, 1);
  submit_in(e, NULL, 1, 1);
  TLT_ERR(e, TL_ENOENT, tl_pool_get(e->s, "testPool", &(tl_pool_status){0}));
  tl_pool_status p;
  TLT_OK(e, tl_pool_get(e->s, "default", &p));
  ck_assert_uint_eq(p.tasksets, 2);
  ck_assert_int_eq(p.mode, TL_FIFO);
  ck_assert_uint_eq(tlt_stats(e).pools, 1);
  TLT_ERR(e, TL_ESTATE, tl_pool_add(e->s, "testPool", TL_FIFO, 1, 0));
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  finish_all(e, l, 2);
  tlt_end(e);
}
END_TEST

/* PoolSuite "FAIR Scheduler uses default pool when spark.scheduler.pool property is not set";
 * unknown pools are refused (Spark would create them). */
START_TEST(fair_mode_uses_the_default_pool_and_refuses_unknown_ones) {
  tlt_env *e = fair_env(4);
  submit_in(e, NULL, 0, 1);
  submit_in(e, "default", 1, 1);
  tl_pool_status p;
  TLT_OK(e, tl_pool_get(e->s, "default", &p));
  ck_assert_uint_eq(p.tasksets, 2);
  ck_assert_uint_eq(p.weight, 1);
  ck_assert_uint_eq(p.min_share, 0);
  tl_taskset_desc d = {.stage_id = 2, .ntasks = 1, .pool = "testPool"};
  TLT_ERR(e, TL_ENOENT, tl_submit(e->s, &d, NULL));
  d.pool = "";
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &d, NULL));
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  finish_all(e, l, 2);
  tlt_end(e);
}
END_TEST

START_TEST(pool_add_answers_every_documented_error) {
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  tlt_env *e = tlt_new(&cfg);
  char long_name[TL_HOST_MAX + 1];
  memset(long_name, 'p', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  TLT_ERR(e, TL_EINVAL, tl_pool_add(NULL, "p", TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add(e->s, NULL, TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add(e->s, "", TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add(e->s, long_name, TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add(e->s, "p", (tl_sched_mode)7, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add(e->s, "p", TL_FAIR, 0, 0));
  TLT_ERR(e, TL_EEXIST, tl_pool_add(e->s, "default", TL_FAIR, 1, 0));
  TLT_OK(e, tl_pool_add(e->s, "p", TL_FAIR, 2, 5));
  TLT_ERR(e, TL_EEXIST, tl_pool_add(e->s, "p", TL_FAIR, 2, 5));
  tl_pool_status p;
  TLT_OK(e, tl_pool_get(e->s, "p", &p));
  ck_assert_int_eq(p.mode, TL_FAIR);
  ck_assert_uint_eq(p.weight, 2);
  ck_assert_uint_eq(p.min_share, 5);
  ck_assert_uint_eq(tlt_stats(e).pools, 2);
  TLT_ERR(e, TL_EINVAL, tl_pool_get(e->s, "p", NULL));
  TLT_ERR(e, TL_EINVAL, tl_pool_get(e->s, "", &p));
  tlt_rebase(e); /* the pool stays for the scheduler's life */
  tlt_end(e);
}
END_TEST

START_TEST(a_bad_scheduling_mode_is_refused) {
  tl_config cfg = tlt_config();
  cfg.mode = (tl_sched_mode)2;
  tl_scheduler *s = NULL;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  ck_assert_ptr_null(s);
}
END_TEST

Suite *tl_pools_suite(void) {
  Suite *s = suite_create("pools");
  TCase *tc = tlt_tcase(s, "pools");
  tcase_add_test(tc, fifo_scheduler_test);
  tcase_add_test(tc, fair_scheduler_test);
  tcase_add_test(tc, weights_share_between_pools);
  tcase_add_test(tc, a_fair_pool_orders_task_sets_by_running_attempts);
  tcase_add_test(tc, a_round_keeps_the_order_it_started_with);
  tcase_add_test(tc, zombie_attempts_count_toward_their_pool);
  tcase_add_test(tc, fifo_mode_ignores_pool_names);
  tcase_add_test(tc, fair_mode_uses_the_default_pool_and_refuses_unknown_ones);
  tcase_add_test(tc, pool_add_answers_every_documented_error);
  tcase_add_test(tc, a_bad_scheduling_mode_is_refused);
  return s;
}

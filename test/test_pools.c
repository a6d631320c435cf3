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

/* ---------------------------------------------------------------------------------------------
 * Nested pools (tl_pool_add_child)
 * ------------------------------------------------------------------------------------------- */

/* A pool spec with a parent (NULL: top level). */
typedef struct tree_spec {
  const char *parent, *name;
  tl_sched_mode mode;
  uint32_t weight, min_share;
} tree_spec;

static tlt_env *fair_env_tree(uint32_t cores, const tree_spec *pools, int npools) {
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  tlt_env *e = tlt_new(&cfg);
  for (int i = 0; i < npools; i++)
    TLT_OK(e, tl_pool_add_child(e->s, pools[i].parent, pools[i].name, pools[i].mode,
                                pools[i].weight, pools[i].min_share));
  tlt_rebase(e);
  tlt_add(e, "e1", "h1", NULL, cores);
  return e;
}

static tl_pool_status pool_of(tlt_env *e, const char *name) {
  tl_pool_status p;
  TLT_OK(e, tl_pool_get(e->s, name, &p));
  return p;
}

/* PoolSuite "Nested Pool Test": two FAIR pools at the top, each with two FAIR children, two task
 * sets in each leaf; min shares and weights at both levels decide (Spark's reasoning in the
 * comments: needy first by running / min share, then running / weight, then name). */
START_TEST(nested_pool_test) {
  const tree_spec pools[6] = {{NULL, "0", TL_FAIR, 1, 3}, {NULL, "1", TL_FAIR, 1, 4},
                              {"0", "00", TL_FAIR, 2, 2}, {"0", "01", TL_FAIR, 1, 1},
                              {"1", "10", TL_FAIR, 2, 2}, {"1", "11", TL_FAIR, 1, 2}};
  tlt_env *e = fair_env_tree(16, pools, 6);
  const char *leaf[8] = {"00", "00", "01", "01", "10", "10", "11", "11"};
  for (uint32_t stage = 0; stage < 8; stage++)
    submit_in(e, leaf[stage], stage, 5);
  tl_launch l[8];
  l[0] = one_core_to(e, 0); /* 0 and 1 needy at 0: by name "0"; in it 00 and 01 at 0: "00" */
  l[1] = one_core_to(e, 4); /* 0 at 1/3, 1 at 0/4: "1"; 10 and 11 at 0: "10" */
  l[2] = one_core_to(e, 6); /* 1/3 against 1/4: "1"; 10 at 1/2, 11 at 0/2: "11" */
  l[3] = one_core_to(e, 2); /* 1/3 against 2/4: "0"; 00 at 1/2, 01 at 0/1: "01" */
  ck_assert_uint_eq(pool_of(e, "0").running, 2);
  ck_assert_uint_eq(pool_of(e, "1").running, 2);
  ck_assert_uint_eq(pool_of(e, "01").running, 1);
  ck_assert_uint_eq(pool_of(e, "0").tasksets, 0);
  ck_assert_uint_eq(pool_of(e, "00").tasksets, 2);
  finish_all(e, l, 4);
  /* Drained: every task of every set, the order no longer asserted. */
  tl_launch rest[40];
  ck_assert_uint_eq(tlt_offer(e, "e1", 16, rest, 40), 16);
  finish_all(e, rest, 16);
  ck_assert_uint_eq(tlt_offer(e, "e1", 16, rest, 40), 16);
  finish_all(e, rest, 16);
  ck_assert_uint_eq(tlt_offer(e, "e1", 16, rest, 40), 4);
  finish_all(e, rest, 4);
  ck_assert_uint_eq(pool_of(e, "1").running, 0);
  tlt_end(e);
}
END_TEST

/* A FIFO parent visits its children in the order they were added, whatever they run; a FAIR
 * parent by their running attempts; FIFO and FAIR leaves order their own task sets. */
START_TEST(fifo_and_fair_parents_with_nested_pools) {
  const tree_spec pools[6] = {{NULL, "fifo", TL_FIFO, 1, 0}, {"fifo", "z", TL_FIFO, 1, 0},
                              {"fifo", "a", TL_FAIR, 1, 0},  {NULL, "fair", TL_FAIR, 1, 0},
                              {"fair", "x", TL_FIFO, 1, 0},  {"fair", "y", TL_FIFO, 1, 0}};
  tlt_env *e = fair_env_tree(16, pools, 6);
  submit_in(e, "a", 0, 2); /* "a" was added after "z": it waits for z under the FIFO parent */
  submit_in(e, "a", 1, 2);
  submit_in(e, "z", 2, 2);
  submit_in(e, "x", 3, 2);
  submit_in(e, "y", 4, 2);
  tl_launch l[10];
  /* Top: "fair" and "fifo" at 0: by name, "fair"; in it x and y at 0: "x". */
  l[0] = one_core_to(e, 3);
  l[1] = one_core_to(e, 2); /* fair 1, fifo 0: "fifo"; its first child, "z" */
  l[2] = one_core_to(e, 4); /* 1 against 1: "fair"; x 1, y 0: "y" */
  l[3] = one_core_to(e, 2); /* 2 against 1: "fifo"; "z" still first, though it runs more */
  l[4] = one_core_to(e, 3); /* 2 against 2: "fair"; x 1, y 1: by name "x" */
  l[5] = one_core_to(e, 0); /* 3 against 2: "fifo"; z is done: "a", FAIR: stage 0 first */
  l[6] = one_core_to(e, 4); /* 3 against 3: "fair"; "y" */
  l[7] = one_core_to(e, 1); /* "fifo"; in "a" stage 1 runs none, stage 0 one */
  l[8] = one_core_to(e, 0);
  l[9] = one_core_to(e, 1);
  tl_launch none;
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &none, 1), 0);
  ck_assert_uint_eq(pool_of(e, "fifo").running, 6);
  ck_assert_uint_eq(pool_of(e, "fair").running, 4);
  finish_all(e, l, 10);
  tlt_end(e);
}
END_TEST

/* Weight at the top level shares between subtrees, weight in a subtree between its leaves:
 * "big" (weight 3) takes three for each of "small"'s, and inside "big" leaf "b2" (weight 2)
 * two for each of "b1"'s. */
START_TEST(weight_applies_at_every_level) {
  const tree_spec pools[4] = {{NULL, "big", TL_FAIR, 3, 0},
                              {NULL, "small", TL_FIFO, 1, 0},
                              {"big", "b1", TL_FIFO, 1, 0},
                              {"big", "b2", TL_FIFO, 2, 0}};
  tlt_env *e = fair_env_tree(16, pools, 4);
  submit_in(e, "b1", 0, 8);
  submit_in(e, "b2", 1, 8);
  submit_in(e, "small", 2, 8);
  tl_launch l[12];
  for (int i = 0; i < 12; i++) {
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l[i], 1), 1);
  }
  ck_assert_uint_eq(pool_of(e, "big").running, 9);
  ck_assert_uint_eq(pool_of(e, "small").running, 3);
  ck_assert_uint_eq(pool_of(e, "b1").running, 3);
  ck_assert_uint_eq(pool_of(e, "b2").running, 6);
  finish_all(e, l, 12);
  tl_launch rest[16];
  ck_assert_uint_eq(tlt_offer(e, "e1", 16, rest, 16), 12);
  finish_all(e, rest, 12);
  tlt_end(e);
}
END_TEST

/* Min share at the inner level: a needy leaf goes before a busier sibling, though its parent's
 * weight and running are what the top level compares. */
START_TEST(min_share_applies_at_every_level) {
  const tree_spec pools[4] = {{NULL, "p", TL_FAIR, 1, 4},
                              {NULL, "q", TL_FIFO, 1, 0},
                              {"p", "needy", TL_FIFO, 1, 2},
                              {"p", "plain", TL_FIFO, 1, 0}};
  tlt_env *e = fair_env_tree(16, pools, 4);
  submit_in(e, "plain", 0, 8);
  submit_in(e, "needy", 1, 8);
  submit_in(e, "q", 2, 8);
  /* "p" is needy (below 4) until it runs 4: it takes the first four; in it "needy" is below
   * its min share 2 for its first two, "plain" never is. */
  tl_launch l[6];
  l[0] = one_core_to(e, 1); /* needy 0/2 against plain (not needy) */
  l[1] = one_core_to(e, 1); /* needy 1/2 */
  l[2] = one_core_to(e, 0); /* needy 2 is satisfied: 0 running against 2, "plain" */
  l[3] = one_core_to(e, 0); /* 1 against 2 */
  l[4] = one_core_to(e, 2); /* p runs 4, not needy: 4/1 against q 0/1: "q" */
  l[5] = one_core_to(e, 2);
  ck_assert_uint_eq(pool_of(e, "p").running, 4);
  finish_all(e, l, 6);
  tl_launch rest[24];
  ck_assert_uint_eq(tlt_offer(e, "e1", 16, rest, 24), 16);
  finish_all(e, rest, 16);
  ck_assert_uint_eq(tlt_offer(e, "e1", 16, rest, 24), 2);
  finish_all(e, rest, 2);
  tlt_end(e);
}
END_TEST

/* A pool holds task sets or pools; parents exist first and never change (no cycle); depth is
 * bounded; tl_pool_get tells the tree. */
START_TEST(pool_add_child_answers_every_documented_error) {
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  tlt_env *e = tlt_new(&cfg);
  char long_name[TL_HOST_MAX + 1];
  memset(long_name, 'p', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  TLT_ERR(e, TL_EINVAL, tl_pool_add_child(NULL, "a", "b", TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add_child(e->s, "", "b", TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add_child(e->s, long_name, "b", TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add_child(e->s, "a", NULL, TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add_child(e->s, "a", "b", (tl_sched_mode)3, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add_child(e->s, "a", "b", TL_FIFO, 0, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_add_child(e->s, "a", "a", TL_FIFO, 1, 0)); /* its own parent */
  TLT_ERR(e, TL_ENOENT, tl_pool_add_child(e->s, "a", "b", TL_FIFO, 1, 0));
  TLT_ERR(e, TL_ESTATE, tl_pool_add_child(e->s, "default", "b", TL_FIFO, 1, 0)); /* a leaf */
  TLT_OK(e, tl_pool_add_child(e->s, NULL, "a", TL_FAIR, 1, 0));
  TLT_OK(e, tl_pool_add_child(e->s, "a", "b", TL_FIFO, 2, 1));
  TLT_ERR(e, TL_EEXIST, tl_pool_add_child(e->s, "a", "b", TL_FIFO, 2, 1));
  TLT_ERR(e, TL_EEXIST, tl_pool_add_child(e->s, "b", "a", TL_FIFO, 1, 0)); /* no cycle */
  tl_pool_status p = pool_of(e, "b");
  ck_assert_uint_eq(p.depth, 2);
  ck_assert_str_eq(p.parent, "a");
  ck_assert_uint_eq(p.weight, 2);
  p = pool_of(e, "a");
  ck_assert_uint_eq(p.depth, 1);
  ck_assert_uint_eq(p.children, 1);
  ck_assert_str_eq(p.parent, "");
  /* The deepest chain: a (1), b (2), then c3 .. c8. */
  char name[16], parent[16] = "b";
  for (int depth = 3; depth <= TL_POOL_DEPTH_MAX; depth++) {
    snprintf(name, sizeof name, "c%d", depth);
    TLT_OK(e, tl_pool_add_child(e->s, parent, name, TL_FAIR, 1, 0));
    memcpy(parent, name, sizeof name);
  }
  ck_assert_uint_eq(pool_of(e, parent).depth, TL_POOL_DEPTH_MAX);
  TLT_ERR(e, TL_ESTATE, tl_pool_add_child(e->s, parent, "too-deep", TL_FIFO, 1, 0));
  /* A pool with task sets takes no child; a pool with children takes no task set. */
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 1, .pool = parent};
  tlt_submit_desc(e, &d);
  TLT_ERR(e, TL_ESTATE, tl_pool_add_child(e->s, parent, "under-tasks", TL_FIFO, 1, 0));
  d.stage_id = 1;
  d.pool = "a";
  TLT_ERR(e, TL_ESTATE, tl_submit(e->s, &d, NULL));
  TLT_OK(e, tl_cancel_stage(e->s, 0, "test"));
  /* Under TL_FIFO: refused as tl_pool_add is. */
  tlt_rebase(e);
  tlt_end(e);
  tlt_env *f = tlt_new(NULL);
  TLT_ERR(f, TL_ESTATE, tl_pool_add_child(f->s, "default", "b", TL_FIFO, 1, 0));
  TLT_ERR(f, TL_ESTATE, tl_pool_add_child(f->s, NULL, "b", TL_FIFO, 1, 0));
  tlt_end(f);
}
END_TEST

/* PoolSuite "FAIR Scheduler creates a new pool when spark.scheduler.pool property points to a
 * non-existent pool", with tl_config.pool_auto_create: the defaults (FIFO, weight 1, min share
 * 0, top level); a submission that fails takes its new pool away again. */
START_TEST(an_unknown_pool_is_created_with_defaults_when_the_config_says_so) {
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  cfg.pool_auto_create = true;
  tlt_env *e = tlt_new(&cfg);
  TLT_OK(e, tl_pool_add(e->s, "parent", TL_FAIR, 1, 0));
  TLT_OK(e, tl_pool_add_child(e->s, "parent", "leaf", TL_FAIR, 1, 0));
  size_t pools = tlt_stats(e).pools;
  submit_in(e, "testPool", 0, 1);
  tl_pool_status p = pool_of(e, "testPool");
  ck_assert_int_eq(p.mode, TL_FIFO);
  ck_assert_uint_eq(p.weight, 1);
  ck_assert_uint_eq(p.min_share, 0);
  ck_assert_uint_eq(p.depth, 1);
  ck_assert_uint_eq(p.tasksets, 1);
  ck_assert_uint_eq(tlt_stats(e).pools, pools + 1);
  /* The same stage attempt again, in another new pool: EEXIST, and no pool is left behind. */
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 1, .pool = "other"};
  TLT_ERR(e, TL_EEXIST, tl_submit(e->s, &d, NULL));
  TLT_ERR(e, TL_ENOENT, tl_pool_get(e->s, "other", &p));
  /* A pool with children is not made into a leaf. */
  d.stage_id = 1;
  d.pool = "parent";
  TLT_ERR(e, TL_ESTATE, tl_submit(e->s, &d, NULL));
  TLT_OK(e, tl_cancel_stage(e->s, 0, "test"));
  ck_assert_uint_eq(pool_of(e, "testPool").tasksets, 0);
  tlt_rebase(e); /* the created pool stays for the scheduler's life */
  tlt_add(e, "e1", "h1", NULL, 4);
  submit_in(e, "testPool", 1, 1);
  submit_in(e, "leaf", 2, 1);
  ck_assert_uint_eq(tlt_stats(e).pools, pools + 1);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  ck_assert_uint_eq(pool_of(e, "parent").running, 1);
  finish_all(e, l, 2);
  tlt_end(e);
}
END_TEST

/* tl_pool_set: a pool's mode orders its queued task sets at once (FIFO: stage 0 first; FAIR:
 * the one with fewer running), its weight and min share count from the next round; "default"
 * takes settings too. */
START_TEST(pool_set_changes_mode_weight_and_min_share) {
  const pool_spec pools[2] = {{"a", TL_FIFO, 1, 0}, {"b", TL_FIFO, 1, 0}};
  tlt_env *e = fair_env_pools(32, pools, 2, 4);
  submit_in(e, "a", 0, 3);
  submit_in(e, "a", 1, 3);
  tl_launch l[32];
  size_t n = 0;
  l[n++] = one_core_to(e, 0); /* FIFO inside "a": stage 0 first */
  l[n++] = one_core_to(e, 0);
  TLT_OK(e, tl_pool_set(e->s, "a", TL_FAIR, 1, 0));
  tl_pool_status p = pool_of(e, "a");
  ck_assert_int_eq(p.mode, TL_FAIR);
  ck_assert_uint_eq(p.running, 2);
  ck_assert_uint_eq(p.tasksets, 2);
  l[n++] = one_core_to(e, 1); /* FAIR: stage 1 runs none, stage 0 two */
  l[n++] = one_core_to(e, 1);
  l[n++] = one_core_to(e, 0); /* two each: by stage id */
  l[n++] = one_core_to(e, 1);
  finish_all(e, l, n);
  n = 0;
  /* Between pools: "b"'s weight 3 gives it three launches for each of "a"'s, then its min share
   * of 8 puts it first while it runs fewer than 8. */
  submit_in(e, "a", 2, 12);
  submit_in(e, "b", 3, 12);
  TLT_OK(e, tl_pool_set(e->s, "b", TL_FIFO, 3, 0));
  const uint32_t want[8] = {2, 3, 3, 3, 2, 3, 3, 3};
  for (int i = 0; i < 8; i++)
    l[n++] = one_core_to(e, want[i]);
  TLT_OK(e, tl_pool_set(e->s, "b", TL_FIFO, 3, 8)); /* b runs 6 of 8: needy */
  l[n++] = one_core_to(e, 3);
  l[n++] = one_core_to(e, 3);
  l[n++] = one_core_to(e, 2); /* b 8 of 8: not needy; a 2/1 against b 8/3 */
  p = pool_of(e, "b");
  ck_assert_uint_eq(p.weight, 3);
  ck_assert_uint_eq(p.min_share, 8);
  finish_all(e, l, n);
  TLT_OK(e, tl_pool_set(e->s, "default", TL_FAIR, 2, 1));
  p = pool_of(e, "default");
  ck_assert_int_eq(p.mode, TL_FAIR);
  ck_assert_uint_eq(p.weight, 2);
  ck_assert_uint_eq(p.min_share, 1);
  n = tlt_offer(e, "e1", 32, l, 32); /* what is left: 9 of stage 2, 4 of stage 3 */
  ck_assert_uint_eq(n, 13);
  finish_all(e, l, n);
  tlt_end(e);
}
END_TEST

/* tl_pool_set's errors change nothing; a NULL scheduler, a bad name, mode or weight are
 * TL_EINVAL before the lock, a TL_FIFO scheduler TL_ESTATE, an unknown pool TL_ENOENT. */
START_TEST(pool_set_answers_every_documented_error) {
  ck_assert_int_eq(tl_pool_set(NULL, "a", TL_FIFO, 1, 0), TL_EINVAL);
  tlt_env *e = tlt_new(NULL);
  TLT_ERR(e, TL_ESTATE, tl_pool_set(e->s, "default", TL_FAIR, 1, 0));
  tlt_end(e);
  const pool_spec pools[1] = {{"a", TL_FIFO, 2, 1}};
  e = fair_env_pools(2, pools, 1, 4);
  char long_name[TL_HOST_MAX + 1];
  memset(long_name, 'x', TL_HOST_MAX);
  long_name[TL_HOST_MAX] = '\0';
  TLT_ERR(e, TL_EINVAL, tl_pool_set(e->s, NULL, TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_set(e->s, "", TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_set(e->s, long_name, TL_FIFO, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_set(e->s, "a", (tl_sched_mode)7, 1, 0));
  TLT_ERR(e, TL_EINVAL, tl_pool_set(e->s, "a", TL_FIFO, 0, 0));
  TLT_ERR(e, TL_ENOENT, tl_pool_set(e->s, "b", TL_FIFO, 1, 0));
  tl_pool_status p = pool_of(e, "a");
  ck_assert_int_eq(p.mode, TL_FIFO);
  ck_assert_uint_eq(p.weight, 2);
  ck_assert_uint_eq(p.min_share, 1);
  TLT_OK(e, tl_pool_set(e->s, "a", TL_FIFO, 2, 1)); /* the same settings: nothing to do */
  tlt_end(e);
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
  tcase_add_test(tc, nested_pool_test);
  tcase_add_test(tc, fifo_and_fair_parents_with_nested_pools);
  tcase_add_test(tc, weight_applies_at_every_level);
  tcase_add_test(tc, min_share_applies_at_every_level);
  tcase_add_test(tc, pool_add_child_answers_every_documented_error);
  tcase_add_test(tc, an_unknown_pool_is_created_with_defaults_when_the_config_says_so);
  tcase_add_test(tc, pool_set_changes_mode_weight_and_min_share);
  tcase_add_test(tc, pool_set_answers_every_documented_error);
  return s;
}

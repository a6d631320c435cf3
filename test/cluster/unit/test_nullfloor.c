/* The null floor of `tl-driver --bench --null-ledger` (driver/nullfloor.c), alone: what it
 * answers in place of tl_resource_offers and tl_status_updates. A failed or killed attempt's
 * task goes back to the tail of the FIFO and runs again under a new tid, after the tasks that
 * waited before it; the task set is released once, when its last task succeeded, and nothing is
 * applied after; an update of a tid it does not run is refused (TL_ESTALE), of a tid another
 * connection runs too (TL_EOWNER), both changing nothing; a RUNNING update frees nothing; the
 * map of running tids finds every attempt through its growth and removals in any order, and
 * through removals inside a run of colliding tids; a
 * connection that closes with attempts running gives the run up. The bench itself never fails a
 * `noop` task, so cluster-bench-null cannot reach these paths. ctest runs it as
 * cluster-nullfloor, next to cluster-bench-null.
 */
#include "driver.h"

#include <check.h>

/* The driver's functions nullfloor.c calls, as the rest of the driver would be seen by it. */
static int released;                /* cb_taskset_released calls */
static tl_taskset_info released_ts; /* the last one's task set */
static const char *gave_up;         /* phase_give_up's reason, or NULL */

void die_oom(void) { abort(); }

void cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  (void)ud;
  released++;
  released_ts = *ts;
  free(payload); /* the stage_binary: released hands it over, as the ledger's callback does */
}

void phase_give_up(driver *d, const char *why) {
  (void)d;
  gave_up = why;
}

static driver d; /* large: static; only the fields nullfloor.c reads are set */
static conn c1, c2;

/* A bench of ntasks `noop` tasks, each connection with `cores` cores and --queue `queue`. */
static void setup_bench(uint32_t ntasks, uint32_t cores, uint32_t queue) {
  memset(&d, 0, sizeof d);
  memset(&c1, 0, sizeof c1);
  memset(&c2, 0, sizeof c2);
  released = 0;
  gave_up = NULL;
  d.nullfloor.on = true;
  d.run.queue = queue;
  d.jobs.njobs = 1;
  stage *st = &d.jobs.list[0].stages[0];
  st->job = &d.jobs.list[0];
  strcpy(st->kind, "noop");
  st->ntasks = ntasks;
  d.jobs.list[0].nstages = 1;
  c1.cores = c2.cores = cores;
  nullfloor_submit(&d);
}

static void teardown_bench(void) { nullfloor_free(&d); }

/* One update of tid by c; its result. */
static int update(conn *c, tl_tid tid, tl_task_state state) {
  tl_update up = {.state = state};
  int result = 1;
  ck_assert_int_eq(nullfloor_updates(&d, c, &tid, &up, 1, &result), TL_OK);
  return result;
}

static tl_launch out[256];

static size_t gcd(size_t a, size_t b) {
  while (b != 0) {
    size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

START_TEST(failed_attempt_runs_again_after_the_waiting_tasks) {
  setup_bench(4, 1, 1); /* 2 slots */
  stage *st = &d.jobs.list[0].stages[0];
  ck_assert_uint_eq(st->taskset, 1);
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 2);
  ck_assert_uint_eq(out[0].index, 0);
  ck_assert_uint_eq(out[1].index, 1);
  ck_assert_uint_eq(out[0].taskset, 1);
  tl_tid first = out[0].tid, second = out[1].tid;
  ck_assert_uint_ne(first, second);
  ck_assert_ptr_eq(((stage_binary *)out[0].payload)->stage, st);
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 0); /* both slots taken */

  ck_assert_int_eq(update(&c1, first, TL_TASK_FAILED), TL_OK);
  ck_assert_uint_eq(st->failed_attempts, 1);
  ck_assert_uint_eq(st->succeeded, 0);
  ck_assert_uint_eq(d.nullfloor.npending, 3);
  ck_assert_uint_eq(c1.floor_running, 1);
  ck_assert_int_eq(update(&c1, first, TL_TASK_FINISHED), TL_ESTALE); /* it ended */
  ck_assert_uint_eq(st->succeeded, 0);

  /* Task 0 waits behind 2 and 3, which waited before it failed. */
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 1);
  ck_assert_uint_eq(out[0].index, 2);
  ck_assert_int_eq(update(&c1, second, TL_TASK_FINISHED), TL_OK);
  ck_assert_int_eq(update(&c1, out[0].tid, TL_TASK_KILLED), TL_OK); /* task 2 goes back too */
  ck_assert_uint_eq(st->failed_attempts, 2);
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 2);
  ck_assert_uint_eq(out[0].index, 3);
  ck_assert_uint_eq(out[1].index, 0);
  tl_tid retry0 = out[1].tid;
  ck_assert_uint_ne(retry0, first); /* a new attempt, a new tid */
  ck_assert_int_eq(update(&c1, out[0].tid, TL_TASK_FINISHED), TL_OK);
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 1);
  ck_assert_uint_eq(out[0].index, 2);
  ck_assert_int_eq(update(&c1, out[0].tid, TL_TASK_FINISHED), TL_OK);
  ck_assert_int_eq(released, 0); /* task 0 still runs */
  ck_assert_int_eq(update(&c1, retry0, TL_TASK_FINISHED), TL_OK);

  ck_assert_int_eq(released, 1);
  ck_assert_uint_eq(released_ts.id, 1);
  ck_assert_uint_eq(released_ts.ntasks, 4);
  ck_assert_uint_eq(st->succeeded, 4);
  ck_assert_uint_eq(st->failed_attempts, 2);
  ck_assert_uint_eq(d.nullfloor.next_tid, 6); /* 4 tasks, 2 of them twice */
  ck_assert_uint_eq(d.nullfloor.nrunning, 0);
  ck_assert_uint_eq(c1.floor_running, 0);
  /* Released: nothing more is offered or applied. */
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 0);
  ck_assert_int_eq(update(&c1, retry0, TL_TASK_FINISHED), TL_ESTALE);
  ck_assert_int_eq(released, 1);
  teardown_bench();
}
END_TEST

START_TEST(refused_updates_change_nothing) {
  setup_bench(3, 1, 0); /* 1 slot each */
  stage *st = &d.jobs.list[0].stages[0];
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 1);
  tl_tid t1 = out[0].tid;
  ck_assert_uint_eq(nullfloor_offer(&d, &c2, out, 256), 1);
  tl_tid t2 = out[0].tid;

  ck_assert_int_eq(update(&c2, t1, TL_TASK_FAILED), TL_EOWNER);
  ck_assert_int_eq(update(&c1, t2 + 100, TL_TASK_FINISHED), TL_ESTALE);
  ck_assert_int_eq(update(&c1, t1, TL_TASK_RUNNING), TL_OK); /* frees nothing */
  ck_assert_uint_eq(st->failed_attempts, 0);
  ck_assert_uint_eq(st->succeeded, 0);
  ck_assert_uint_eq(d.nullfloor.npending, 1);
  ck_assert_uint_eq(d.nullfloor.nrunning, 2);
  ck_assert_uint_eq(c1.floor_running, 1);
  ck_assert_uint_eq(c2.floor_running, 1);
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 0);

  /* A batch: each update its own result, the good ones applied. */
  tl_tid tids[3] = {t1, t1, t2};
  tl_update ups[3] = {
      {.state = TL_TASK_FINISHED}, {.state = TL_TASK_FINISHED}, {.state = TL_TASK_FINISHED}};
  int results[3] = {1, 1, 1};
  ck_assert_int_eq(nullfloor_updates(&d, &c1, tids, ups, 3, results), TL_OK);
  ck_assert_int_eq(results[0], TL_OK);
  ck_assert_int_eq(results[1], TL_ESTALE);
  ck_assert_int_eq(results[2], TL_EOWNER);
  ck_assert_uint_eq(st->succeeded, 1);
  ck_assert_uint_eq(c2.floor_running, 1);
  teardown_bench();
}
END_TEST

START_TEST(map_finds_every_attempt_through_growth_and_removals) {
  setup_bench(1000, 200, 0); /* 200 slots on c1: the map grows from 64 to 512 slots */
  stage *st = &d.jobs.list[0].stages[0];
  uint32_t left = 1000, failures = 0;
  while (left > 0) {
    size_t n = nullfloor_offer(&d, &c1, out, 256);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, 200);
    ck_assert_uint_le(2 * d.nullfloor.nrunning, d.nullfloor.map_cap);
    /* End them in a scrambled order (a stride prime to n), the attempts of tids divisible by
     * 7 failing. */
    size_t stride = 1;
    for (size_t p = 97; p > 1; p--)
      if (gcd(p, n) == 1) {
        stride = p;
        break;
      }
    for (size_t k = 0, at = 0; k < n; k++, at = (at + stride) % n) {
      bool fail = out[at].tid % 7 == 0;
      ck_assert_int_eq(update(&c1, out[at].tid, fail ? TL_TASK_FAILED : TL_TASK_FINISHED), TL_OK);
      failures += fail;
      left -= !fail;
    }
    ck_assert_uint_eq(d.nullfloor.nrunning, 0);
  }
  ck_assert_uint_ge(d.nullfloor.map_cap, 256);
  ck_assert_uint_eq(st->succeeded, 1000);
  ck_assert_uint_eq(st->failed_attempts, failures);
  ck_assert_uint_gt(failures, 100);
  ck_assert_uint_eq(d.nullfloor.next_tid, 1000 + failures);
  ck_assert_int_eq(released, 1);
  teardown_bench();
}
END_TEST

/* The home slot of tid in a map of cap slots: nullfloor.c's hash (slot_of). */
static size_t home_of(tl_tid tid, size_t cap) {
  return (size_t)(tid * UINT64_C(0x9E3779B97F4A7C15) >> 32) & (cap - 1);
}

/* The slot that holds tid, or cap. */
static size_t held_at(tl_tid tid) {
  for (size_t i = 0; i < d.nullfloor.map_cap; i++)
    if (d.nullfloor.map[i].tid == tid)
      return i;
  return d.nullfloor.map_cap;
}

/* Launches the attempt whose tid is tid (the null floor gives the tid after next_tid). */
static void launch_tid(tl_tid tid) {
  d.nullfloor.next_tid = tid - 1;
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 1), 1);
  ck_assert_uint_eq(out[0].tid, tid);
}

/* Sequential tids seldom collide in the map (the hash spreads them), so the probe runs that
 * removals must mend are made on purpose: three tids of one home slot and a fourth whose home
 * is the slot after it, so that all four stand in one run. */
START_TEST(colliding_tids_stay_found_through_removals) {
  setup_bench(8, 8, 0);
  size_t cap = d.nullfloor.map_cap;
  ck_assert_uint_eq(cap, 64);
  tl_tid t[4] = {1000, 0, 0, 0};
  size_t h = home_of(t[0], cap);
  for (tl_tid x = t[0] + 1, k = 1; k < 4; x++)
    if (home_of(x, cap) == (k < 3 ? h : (h + 1) & (cap - 1)))
      t[k++] = x;
  for (int k = 0; k < 4; k++)
    launch_tid(t[k]);
  for (int k = 0; k < 4; k++)
    ck_assert_uint_eq(held_at(t[k]), (h + (size_t)k) & (cap - 1)); /* one run, in order */

  /* The first goes: the others move back and are all found. */
  ck_assert_int_eq(update(&c1, t[0], TL_TASK_FINISHED), TL_OK);
  ck_assert_uint_eq(held_at(t[1]), h);
  for (int k = 1; k < 4; k++)
    ck_assert_int_eq(update(&c1, t[k], TL_TASK_RUNNING), TL_OK);
  /* The middle one fails; its task waits again and the last two are still found. */
  ck_assert_int_eq(update(&c1, t[2], TL_TASK_FAILED), TL_OK);
  ck_assert_int_eq(update(&c1, t[3], TL_TASK_FINISHED), TL_OK);
  ck_assert_int_eq(update(&c1, t[1], TL_TASK_FINISHED), TL_OK);
  ck_assert_uint_eq(d.nullfloor.nrunning, 0);
  for (size_t i = 0; i < cap; i++)
    ck_assert_uint_eq(d.nullfloor.map[i].tid, 0);
  ck_assert_uint_eq(d.jobs.list[0].stages[0].succeeded, 3);
  ck_assert_uint_eq(d.jobs.list[0].stages[0].failed_attempts, 1);
  ck_assert_uint_eq(d.nullfloor.npending, 5);
  teardown_bench();
}
END_TEST

START_TEST(closing_with_attempts_running_gives_up) {
  setup_bench(2, 1, 0);
  nullfloor_closing(&d, &c1); /* nothing running on it */
  ck_assert_ptr_null(gave_up);
  ck_assert_uint_eq(nullfloor_offer(&d, &c1, out, 256), 1);
  nullfloor_closing(&d, &c2);
  ck_assert_ptr_null(gave_up);
  nullfloor_closing(&d, &c1);
  ck_assert_ptr_nonnull(gave_up);
  teardown_bench();
}
END_TEST

int main(void) {
  Suite *s = suite_create("nullfloor");
  TCase *tc = tcase_create("nullfloor");
  tcase_add_test(tc, failed_attempt_runs_again_after_the_waiting_tasks);
  tcase_add_test(tc, refused_updates_change_nothing);
  tcase_add_test(tc, map_finds_every_attempt_through_growth_and_removals);
  tcase_add_test(tc, colliding_tids_stay_found_through_removals);
  tcase_add_test(tc, closing_with_attempts_running_gives_up);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

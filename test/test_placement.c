/* Hard placement (docs/api.md "Hard placement"): a task set's allowed executors and hosts (Ray's
 * NodeAffinitySchedulingStrategy with soft=False), its spread per host or per executor (Ray's
 * STRICT_SPREAD), the counts of running attempts behind the spread across launches, ends,
 * losses, speculation, restores and reconciliations, and the unschedulable task set: no live
 * executor satisfies it, it is aborted with the explanation, or rescued by an executor that
 * joins. Each test runs tl_check after every step (the harness's helpers and TLT_OK do) and
 * ends drained (tlt_end).
 */
#include "harness.h"
#include "oom_sweep.h"

#include "../examples/replay/replay.h"

static const char *const only_e2[1] = {"e2"};
static const char *const only_h2[1] = {"h2"};

static tl_taskset_id submit_placed(tlt_env *e, uint32_t stage, uint32_t ntasks,
                                   const char *const *execs, uint32_t nexec,
                                   const char *const *hosts, uint32_t nhost, tl_spread spread) {
  tl_taskset_desc d = {.stage_id = stage,
                       .ntasks = ntasks,
                       .allowed_executors = execs,
                       .nallowed_executors = nexec,
                       .allowed_hosts = hosts,
                       .nallowed_hosts = nhost,
                       .spread = spread};
  return tlt_submit_desc(e, &d);
}

/* One offer round over every executor named, each with cores; returns the launches. */
static size_t offer_all(tlt_env *e, const char *const *ids, size_t n, uint32_t cores,
                        tl_launch *out, size_t cap) {
  tl_offer o[8];
  ck_assert_uint_le(n, 8);
  for (size_t i = 0; i < n; i++)
    o[i] = (tl_offer){.executor_id = ids[i], .cores = cores};
  return tlt_offers(e, o, n, out, cap);
}

static size_t launched_on(const tl_launch *l, size_t n, const char *exec) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += strcmp(l[i].executor_id, exec) == 0;
  return k;
}

/* ---------------------------------------------------------------------------------------------
 * Hard affinity
 * ------------------------------------------------------------------------------------------- */

START_TEST(allowed_executors_take_every_task) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 2);
  tlt_add(e, "e3", "h3", NULL, 4);
  tl_taskset_id ts = submit_placed(e, 0, 4, only_e2, 1, NULL, 0, TL_SPREAD_NONE);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.nallowed_executors, 1);
  ck_assert_uint_eq(st.nallowed_hosts, 0);
  ck_assert_int_eq(st.spread, TL_SPREAD_NONE);
  ck_assert(!st.unplaceable);
  tl_place_info names[2];
  size_t n;
  TLT_OK(e, tl_taskset_placement(e->s, ts, names, 2, &n));
  ck_assert_uint_eq(n, 1);
  ck_assert(!names[0].host);
  ck_assert_str_eq(names[0].name, "e2");
  const char *all[3] = {"e1", "e2", "e3"};
  tl_launch l[8];
  size_t got = offer_all(e, all, 3, 4, l, 8);
  ck_assert_uint_eq(got, 2); /* e2's two cores, nothing elsewhere */
  ck_assert_uint_eq(launched_on(l, got, "e2"), 2);
  ck_assert_uint_eq(offer_all(e, all, 3, 4, l + 2, 6), 0);
  /* No delay rejection: the other executors are simply not its. */
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 0);
  tlt_succeed(e, "e2", l[0].tid);
  ck_assert_uint_eq(offer_all(e, all, 3, 4, l + 2, 6), 1);
  ck_assert_str_eq(l[2].executor_id, "e2");
  tlt_succeed(e, "e2", l[1].tid);
  tlt_succeed(e, "e2", l[2].tid);
  ck_assert_uint_eq(offer_all(e, all, 3, 4, l + 3, 5), 1);
  ck_assert_str_eq(l[3].executor_id, "e2");
  char text[1024];
  TLT_OK(e, tl_explain_taskset(e->s, ts, text, sizeof text));
  ck_assert_ptr_nonnull(strstr(text, "placement: executor e2 (alive)"));
  tlt_succeed(e, "e2", l[3].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(allowed_hosts_take_every_executor_there) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2a", "h2", NULL, 1);
  tlt_add(e, "e2b", "h2", NULL, 1);
  const char *execs[1] = {"e1"};
  tl_taskset_id ts = submit_placed(e, 0, 3, NULL, 0, only_h2, 1, TL_SPREAD_NONE);
  tl_taskset_id other = submit_placed(e, 1, 1, execs, 1, only_h2, 1, TL_SPREAD_NONE);
  tl_place_info names[4];
  size_t n;
  TLT_OK(e, tl_taskset_placement(e->s, other, names, 1, &n)); /* cap below the count */
  ck_assert_uint_eq(n, 2);
  TLT_OK(e, tl_taskset_placement(e->s, other, names, 4, &n));
  ck_assert(!names[0].host && names[1].host);
  ck_assert_str_eq(names[1].name, "h2");
  const char *all[3] = {"e1", "e2a", "e2b"};
  tl_launch l[8];
  size_t got = offer_all(e, all, 3, 4, l, 8);
  /* ts (first in FIFO) takes h2's two cores; other takes e1, allowed by name. */
  ck_assert_uint_eq(got, 3);
  for (size_t i = 0; i < got; i++) {
    if (l[i].taskset == ts)
      ck_assert_str_ne(l[i].executor_id, "e1");
    else
      ck_assert_str_eq(l[i].executor_id, "e1");
  }
  for (size_t i = 0; i < got; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(offer_all(e, all, 3, 4, l, 8), 1);
  ck_assert_str_ne(l[0].executor_id, "e1");
  tlt_succeed(e, l[0].executor_id, l[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts) + tlt_released(e, other), 2);
  TLT_ERR(e, TL_ENOENT, tl_taskset_placement(e->s, ts, names, 4, &n));
  ck_assert_uint_eq(n, 0);
  tlt_end(e);
}
END_TEST

START_TEST(bad_placement_is_refused_and_changes_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_stats before = tlt_stats(e);
  const char *dup[2] = {"e1", "e1"};
  const char *empty[1] = {""};
  const char *null_name[1] = {NULL};
  static char long_name[TL_ID_MAX + 1];
  memset(long_name, 'x', TL_ID_MAX);
  const char *too_long[1] = {long_name};
  const char *many[TL_PLACE_MAX + 1];
  static char many_text[TL_PLACE_MAX + 1][8];
  for (int i = 0; i <= TL_PLACE_MAX; i++) {
    snprintf(many_text[i], sizeof many_text[i], "e%d", i);
    many[i] = many_text[i];
  }
  tl_taskset_desc bad[] = {
      {.ntasks = 1, .allowed_executors = dup, .nallowed_executors = 2},
      {.ntasks = 1, .allowed_hosts = dup, .nallowed_hosts = 2},
      {.ntasks = 1, .allowed_executors = empty, .nallowed_executors = 1},
      {.ntasks = 1, .allowed_hosts = null_name, .nallowed_hosts = 1},
      {.ntasks = 1, .allowed_executors = too_long, .nallowed_executors = 1},
      {.ntasks = 1, .allowed_executors = NULL, .nallowed_executors = 1},
      {.ntasks = 1, .allowed_hosts = NULL, .nallowed_hosts = 2},
      {.ntasks = 1, .allowed_executors = many, .nallowed_executors = TL_PLACE_MAX + 1},
      {.ntasks = 1, .spread = (tl_spread)3},
      {.ntasks = 1, .barrier = true, .spread = TL_SPREAD_HOST},
      {.ntasks = 1, .barrier = true, .allowed_hosts = only_h2, .nallowed_hosts = 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tl_taskset_id id = 0;
    ck_assert_msg(tl_submit(e->s, &bad[i], &id) == TL_EINVAL, "case %zu accepted", i);
    ck_assert_uint_eq(id, 0);
    TLT_CHECK(e);
  }
  tl_stats after = tlt_stats(e);
  tlt_assert_stats_same(&before, &after, "refused submissions");
  /* The limits themselves are fine: TL_PLACE_MAX names of TL_ID_MAX - 1 bytes. */
  long_name[TL_ID_MAX - 1] = '\0';
  many[0] = long_name;
  tl_taskset_desc ok = {.ntasks = 1,
                        .allowed_executors = many,
                        .nallowed_executors = TL_PLACE_MAX,
                        .allowed_hosts = many,
                        .nallowed_hosts = TL_PLACE_MAX,
                        .spread = TL_SPREAD_EXECUTOR};
  tl_taskset_id id = tlt_submit_desc(e, &ok);
  tl_place_info *names = calloc(2 * TL_PLACE_MAX, sizeof *names);
  ck_assert_ptr_nonnull(names);
  size_t n;
  TLT_OK(e, tl_taskset_placement(e->s, id, names, 2 * TL_PLACE_MAX, &n));
  ck_assert_uint_eq(n, 2 * TL_PLACE_MAX);
  ck_assert_str_eq(names[0].name, long_name);
  ck_assert_str_eq(names[TL_PLACE_MAX + 1].name, "e1");
  ck_assert(names[TL_PLACE_MAX + 1].host);
  free(names);
  TLT_ERR(e, TL_EINVAL, tl_taskset_placement(e->s, id, NULL, 1, &n));
  TLT_ERR(e, TL_EINVAL, tl_taskset_placement(e->s, id, NULL, 0, NULL));
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Anti-affinity
 * ------------------------------------------------------------------------------------------- */

START_TEST(spread_per_host_across_retries_kills_and_losses) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e1b", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tl_taskset_id ts = submit_placed(e, 0, 5, NULL, 0, NULL, 0, TL_SPREAD_HOST);
  ck_assert_int_eq(tlt_ts(e, ts).spread, TL_SPREAD_HOST);
  const char *all[3] = {"e1", "e1b", "e2"};
  tl_launch l[16];
  size_t got = offer_all(e, all, 3, 4, l, 16);
  ck_assert_uint_eq(got, 2); /* one per host, though 12 cores are free */
  ck_assert_uint_eq(launched_on(l, got, "e2"), 1);
  ck_assert_uint_eq(offer_all(e, all, 3, 4, l + 2, 14), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 0); /* capped, not impossible */
  char text[1024];
  TLT_OK(e, tl_explain_taskset(e->s, ts, text, sizeof text));
  ck_assert_ptr_nonnull(strstr(text, "spread per host: 2 hosts hold a running attempt of it"));
  /* A failure on h1 frees h1: the retry may go to either of its executors. */
  size_t on_h1 = strcmp(l[0].executor_id, "e2") == 0 ? 1 : 0, on_h2 = 1 - on_h1;
  tlt_fail(e, l[on_h1].executor_id, l[on_h1].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(offer_all(e, all, 3, 4, l + 2, 14), 1);
  ck_assert_str_ne(l[2].executor_id, "e2");
  /* A kill frees h2. */
  tlt_killed(e, "e2", l[on_h2].tid);
  ck_assert_uint_eq(offer_all(e, all, 3, 4, l + 3, 13), 1);
  ck_assert_str_eq(l[3].executor_id, "e2");
  /* The first phase of e2's loss frees h2 (its attempt is frozen, no longer running there); a
   * new executor on h2 takes a task while it is frozen. */
  tl_loss_reason pending = {.kind = TL_LOSS_PENDING};
  TLT_OK(e, tl_executor_lost(e->s, "e2", &pending));
  ck_assert_uint_eq(tlt_ts(e, ts).frozen, 1);
  tlt_add(e, "e2c", "h2", NULL, 4);
  const char *now[3] = {"e1", "e1b", "e2c"};
  ck_assert_uint_eq(offer_all(e, now, 3, 4, l + 4, 12), 1);
  ck_assert_str_eq(l[4].executor_id, "e2c");
  ck_assert_uint_eq(offer_all(e, now, 3, 4, l + 5, 11), 0);
  /* The second phase ends the frozen one: its index waits, h1 and h2 still hold one each. */
  tlt_lose(e, "e2", TL_LOSS_EXITED, true);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 3);
  ck_assert_uint_eq(offer_all(e, now, 3, 4, l + 5, 11), 0);
  tlt_succeed(e, "e2c", l[4].tid);
  ck_assert_uint_eq(offer_all(e, now, 3, 4, l + 5, 11), 1);
  tlt_succeed(e, l[2].executor_id, l[2].tid);
  ck_assert_uint_eq(offer_all(e, now, 3, 4, l + 6, 10), 1);
  tlt_succeed(e, l[5].executor_id, l[5].tid);
  tlt_succeed(e, l[6].executor_id, l[6].tid);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.succeeded, 4);
  ck_assert_uint_eq(offer_all(e, now, 3, 4, l + 7, 9), 1);
  tlt_succeed(e, l[7].executor_id, l[7].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(spread_per_executor_with_speculation) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.5;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tlt_add(e, "e3", "h2", NULL, 4);
  tl_taskset_id ts = submit_placed(e, 0, 2, NULL, 0, NULL, 0, TL_SPREAD_EXECUTOR);
  const char *two[2] = {"e1", "e2"};
  tl_launch l[8];
  ck_assert_uint_eq(offer_all(e, two, 2, 4, l, 8), 2); /* one per executor */
  ck_assert_uint_eq(launched_on(l, 2, "e1"), 1);
  size_t fast = strcmp(l[0].executor_id, "e1") == 0 ? 0 : 1, slow = 1 - fast;
  tlt_advance_tick(e, TLT_SEC);
  tlt_succeed(e, l[fast].executor_id, l[fast].tid);
  tlt_advance_tick(e, 10 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  /* The copy may not go beside its original (spread) nor on its host (speculation): e2 and e3
   * hold or share its place; e1 takes it. */
  const char *slow_exec = l[slow].executor_id;
  ck_assert_str_eq(slow_exec, "e2");
  const char *e23[2] = {"e2", "e3"};
  ck_assert_uint_eq(offer_all(e, e23, 2, 4, l + 2, 6), 0);
  const char *one[1] = {"e1"};
  ck_assert_uint_eq(offer_all(e, one, 1, 4, l + 2, 6), 1);
  ck_assert(l[2].speculative);
  ck_assert_uint_eq(offer_all(e, one, 1, 4, l + 3, 5), 0);
  /* The copy wins; the original is asked to die and its kill frees e2. */
  size_t mark = tlt_mark(e);
  tlt_succeed(e, "e1", l[2].tid);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 1);
  tlt_killed(e, "e2", l[slow].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* A kill that moves two entries of the table of counts back (16 slots for 5 tasks; the ids are
 * chosen by their homes: x1 and x16 at 5, x17 at 6, x7 at 7): the slot left at the end is taken
 * by x7 from a count of 0, not of the entry that left it. */
START_TEST(a_slot_left_by_a_move_counts_from_zero) {
  tlt_env *e = tlt_new(NULL);
  const char *ids[4] = {"x1", "x16", "x17", "x7"};
  for (int i = 0; i < 4; i++)
    tlt_add(e, ids[i], ids[i], NULL, 2);
  tl_taskset_id ts = submit_placed(e, 0, 5, NULL, 0, NULL, 0, TL_SPREAD_EXECUTOR);
  tl_launch l[4];
  for (int i = 0; i < 3; i++)
    ck_assert_uint_eq(tlt_offer(e, ids[i], 2, &l[i], 1), 1);
  tlt_killed(e, "x1", l[0].tid); /* x16 and x17 move back */
  ck_assert_uint_eq(tlt_offer(e, "x7", 2, &l[3], 1), 1);
  ck_assert_uint_eq(tlt_offer(e, "x7", 2, &l[0], 1), 0);
  ck_assert_uint_eq(tlt_offer(e, "x1", 2, &l[0], 1), 1);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(tlt_ts(e, ts).succeeded, 4);
  tlt_end(e);
}
END_TEST

/* Many executors through one small task set's table of counts (16 slots for 5 tasks): kills
 * end attempts in the middle of probe runs, which moves later entries back, and the slots they
 * leave are taken again, from a count of 0 (tl_check looks at every slot after every step). */
START_TEST(spread_counts_survive_churn_across_many_executors) {
  tlt_env *e = tlt_new(NULL);
  static char ids[24][8];
  for (int i = 0; i < 24; i++) {
    snprintf(ids[i], sizeof ids[i], "x%d", i);
    tlt_add(e, ids[i], ids[i], NULL, 2); /* a host each */
  }
  tl_taskset_id ts = submit_placed(e, 0, 5, NULL, 0, NULL, 0, TL_SPREAD_EXECUTOR);
  tl_launch l[5];
  for (int i = 0; i < 5; i++) {
    ck_assert_uint_eq(tlt_offer(e, ids[i], 2, &l[i], 1), 1);
    ck_assert_uint_eq(tlt_offer(e, ids[i], 2, &l[i], 1), 0); /* its place is taken */
  }
  /* Kill the attempt of slot k % 5 and launch it again on the next executor in turn. */
  int next = 5;
  for (int k = 0; k < 120; k++) {
    tl_launch *a = &l[k % 5];
    tlt_killed(e, a->executor_id, a->tid);
    const char *to = ids[next];
    next = (next + 1) % 24;
    tl_launch got;
    size_t m = tlt_offer(e, to, 2, &got, 1);
    if (m == 0) { /* to runs one already: the next one in turn */
      to = ids[next];
      next = (next + 1) % 24;
      m = tlt_offer(e, to, 2, &got, 1);
    }
    ck_assert_uint_eq(m, 1);
    ck_assert_uint_eq(tlt_offer(e, to, 2, &got + 1, 0), 0);
    *a = got;
  }
  ck_assert_uint_eq(tlt_ts(e, ts).running, 5);
  for (int i = 0; i < 5; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Unschedulable placement
 * ------------------------------------------------------------------------------------------- */

START_TEST(an_impossible_placement_is_aborted_with_its_explanation) {
  tl_config cfg = tlt_config();
  cfg.unschedulable_timeout_ns = 5 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_executor_desc gpu = {.id = "e2", .host = "h2", .cores = 4, .profile = 1};
  tlt_add_desc(e, gpu);
  const char *execs[2] = {"ghost", "e2"};
  const char *hosts[2] = {"h2", "h9"};
  tl_taskset_id ts = submit_placed(e, 0, 2, execs, 2, hosts, 2, TL_SPREAD_NONE);
  /* Nothing is said before a round has looked. */
  ck_assert(!tlt_ts(e, ts).unplaceable);
  const char *all[2] = {"e1", "e2"};
  tl_launch l[4];
  ck_assert_uint_eq(offer_all(e, all, 2, 4, l, 4), 0);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.tasksets_unplaceable, 1);
  ck_assert_uint_eq(st.tasksets_unschedulable, 1);
  ck_assert(tlt_ts(e, ts).unplaceable);
  char text[2048];
  TLT_OK(e, tl_explain_taskset(e->s, ts, text, sizeof text));
  ck_assert_ptr_nonnull(strstr(text, "unschedulable: no live executor satisfies its placement"));
  ck_assert_uint_eq(tl_tick(e->s), 5 * TLT_SEC);
  tlt_advance_tick(e, 4 * TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  size_t mark = tlt_mark(e);
  tlt_advance_tick(e, TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 1);
  const tlt_event *failed = tlt_last(e, TLT_EV_FAILED);
  ck_assert_str_eq(failed->text,
                   "Aborting task set 0.0 because no live executor satisfies its hard placement: "
                   "allowed executor ghost (unknown), executor e2 (alive, cannot run its tasks), "
                   "host h2 (1 alive, 0 can run its tasks), host h9 (no live executor); alive: 2 "
                   "executors on 2 hosts");
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.tasksets_unplaceable, 0);
  ck_assert_uint_eq(st.tasksets_unschedulable_aborted, 1);
  tlt_end(e);
}
END_TEST

START_TEST(an_executor_that_joins_rescues_it) {
  tl_config cfg = tlt_config();
  cfg.unschedulable_timeout_ns = 5 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_taskset_id ts = submit_placed(e, 0, 2, NULL, 0, only_h2, 1, TL_SPREAD_HOST);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 1);
  tlt_advance_tick(e, 3 * TLT_SEC);
  /* An executor on h2 joins: the timer stops at once, before any offer. */
  tlt_add(e, "e2", "h2", NULL, 4);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 0);
  ck_assert(!tlt_ts(e, ts).unplaceable);
  tlt_advance_tick(e, 10 * TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_offer(e, "e2", 4, l, 4), 1); /* spread: one on h2 */
  /* h2's executor is lost: with some executor alive and none on h2, it is unschedulable again
   * after the next round; its pending task waits on no live place. */
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 2);
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l + 1, 3), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 1);
  /* A second executor on h2 rescues it again; the tick finds nothing due. */
  tlt_add(e, "e3", "h2", NULL, 4);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 0);
  tlt_advance_tick(e, 10 * TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_offer(e, "e3", 4, l + 1, 3), 1);
  tlt_succeed(e, "e3", l[1].tid);
  ck_assert_uint_eq(tlt_offer(e, "e3", 4, l + 2, 2), 1);
  tlt_succeed(e, "e3", l[2].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* With no executor alive at all, nothing is unschedulable (as for resources): it waits. And a
 * task set that becomes zombie leaves its timer. */
START_TEST(nothing_alive_waits_and_a_zombie_leaves_the_timer) {
  tl_config cfg = tlt_config();
  cfg.unschedulable_timeout_ns = TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tl_taskset_id ts = submit_placed(e, 0, 1, only_e2, 1, NULL, 0, TL_SPREAD_NONE);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, NULL, 0, l, 2), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 0);
  tlt_add(e, "e1", "h1", NULL, 1);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 2), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 1);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "gone"));
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unplaceable, 0);
  tlt_advance_tick(e, 2 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable_aborted, 0);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Snapshot and reconciliation
 * ------------------------------------------------------------------------------------------- */

static bool resolve_taskset(void *ud, const tl_taskset_info *ts, void **payload) {
  tlt_env *e = ud;
  for (size_t i = 0; i < e->nsubs; i++)
    if (e->subs[i].id == ts->id) {
      *payload = e->subs[i].payload;
      return true;
    }
  ck_abort_msg("unknown task set");
  return false;
}

static void *resolve_executor(void *ud, const char *id, const char *host) {
  (void)host;
  return tlt_ud_for(ud, id);
}

/* e's scheduler, snapshotted, freed and restored in its place. */
static void snapshot_and_restore(tlt_env *e) {
  tlt_image im = {0};
  TLT_OK(e, tl_snapshot(e->s, tlt_image_write, &im));
  unsigned released[16];
  ck_assert_uint_le(e->nsubs, 16);
  for (size_t i = 0; i < e->nsubs; i++)
    released[i] = e->subs[i].released;
  size_t mark = e->nev;
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  for (size_t i = 0; i < e->nsubs; i++)
    e->subs[i].released = released[i];
  e->nev = mark;
  tl_callbacks cb = tlt_callbacks(e);
  cb.taskset_restored = resolve_taskset;
  cb.executor_restored = resolve_executor;
  e->s = NULL;
  int rc = tl_scheduler_restore(&e->cfg, &cb, tlt_image_read, &im, &e->s);
  ck_assert_msg(rc == TL_OK, "restore: %s", tl_err_name(rc));
  free(im.p);
  TLT_CHECK(e);
}

START_TEST(restore_and_reconcile_keep_the_counts) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  const char *execs[2] = {"e1", "e2"};
  tl_taskset_id ts = submit_placed(e, 0, 4, execs, 2, NULL, 0, TL_SPREAD_HOST);
  tl_launch l[8];
  ck_assert_uint_eq(offer_all(e, execs, 2, 4, l, 8), 2);
  tlt_run(e, l[0].executor_id, l[0].tid);
  snapshot_and_restore(e);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_int_eq(st.spread, TL_SPREAD_HOST);
  ck_assert_uint_eq(st.nallowed_executors, 2);
  ck_assert_uint_eq(st.frozen, 2); /* both recovering: their attempts hold no place yet */
  tl_place_info names[2];
  size_t n;
  TLT_OK(e, tl_taskset_placement(e->s, ts, names, 2, &n));
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(names[0].name, "e1");
  ck_assert_str_eq(names[1].name, "e2");
  /* e1 reconciles with its attempt: it runs there again, and holds h1 against new launches. */
  size_t i1 = strcmp(l[0].executor_id, "e1") == 0 ? 0 : 1, i2 = 1 - i1;
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &l[i1].tid, 1, NULL, 0, &nunknown));
  /* e2 reconciles without its attempt: it ends, and h2 is free again. */
  TLT_OK(e, tl_executor_reconcile(e->s, "e2", NULL, 0, NULL, 0, &nunknown));
  ck_assert_uint_eq(tlt_ts(e, ts).running, 1);
  tl_launch m[8];
  ck_assert_uint_eq(offer_all(e, execs, 2, 4, m, 8), 1);
  ck_assert_str_eq(m[0].executor_id, "e2");
  ck_assert_uint_eq(offer_all(e, execs, 2, 4, m + 1, 7), 0);
  tlt_succeed(e, "e1", l[i1].tid);
  (void)i2;
  ck_assert_uint_eq(offer_all(e, execs, 2, 4, m + 1, 7), 1);
  ck_assert_str_eq(m[1].executor_id, "e1");
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The journal and replay
 * ------------------------------------------------------------------------------------------- */

START_TEST(the_journal_records_placement_and_replays) {
  tlt_journal c = {0};
  tl_config cfg = tlt_config();
  cfg.journal = tlt_journal_line;
  cfg.journal_ud = &c;
  cfg.unschedulable_timeout_ns = TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  const char *execs[2] = {"e1", "e2"};
  submit_placed(e, 0, 3, execs, 2, only_h2, 1, TL_SPREAD_HOST);
  ck_assert_ptr_nonnull(
      strstr(c.text, " spread=1 allow_executors=2 \"e1\" \"e2\" allow_hosts=1 \"h2\" = OK ts=1"));
  tl_taskset_id gone =
      submit_placed(e, 1, 1, NULL, 0, (const char *const[]){"h7"}, 1, TL_SPREAD_NONE);
  tl_launch l[8];
  ck_assert_uint_eq(offer_all(e, execs, 2, 4, l, 8), 2);
  tlt_succeed(e, l[0].executor_id, l[0].tid);
  tlt_fail(e, l[1].executor_id, l[1].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(offer_all(e, execs, 2, 4, l + 2, 6), 2);
  tlt_advance_tick(e, 2 * TLT_SEC);
  ck_assert_uint_eq(tlt_released(e, gone), 1);
  tlt_succeed(e, l[2].executor_id, l[2].tid);
  tlt_succeed(e, l[3].executor_id, l[3].tid);
  tlt_dispatch_all(e);
  tlr_report r;
  int verdict = tlr_replay_text(c.text, NULL, &r);
  ck_assert_msg(verdict == TLR_OK, "%d at line %zu: %s", verdict, r.bad_line, r.why);
  tl_stats now = tlt_stats(e);
  ck_assert_uint_eq(now.tasksets_unschedulable_aborted, 1);
  tlt_assert_stats_same_but_memory(&now, &r.final, "replayed state");
  /* Without the placement the same calls launch differently: the replay sees it. */
  char *changed = strdup(c.text);
  ck_assert_ptr_nonnull(changed);
  char *at = strstr(changed, " spread=1");
  memcpy(at, "         ", 9);
  ck_assert_int_eq(tlr_replay_text(changed, NULL, &r), TLR_BROKEN);
  free(changed);
  tlt_end(e);
  free(c.text);
}
END_TEST

START_TEST(malformed_placement_lines_are_refused_by_the_replayer) {
  static const char *const bad[] = {
      "submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - "
      "allow_executors=2 \"e1\" = OK ts=1\n",
      "submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - "
      "allow_hosts=0 = OK ts=1\n",
      "submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - "
      "allow_hosts=65 \"h\" = OK ts=1\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "# taskledger journal v3\n0 new cfg=- = OK\n0 %s", bad[i]);
    tlr_report r;
    int v = tlr_replay_text(text, NULL, &r);
    ck_assert_msg(v == TLR_BAD_INPUT || v == TLR_BROKEN, "line %zu replayed: %d", i, v);
  }
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Out of memory
 * ------------------------------------------------------------------------------------------- */

static const char *const oom_execs[2] = {"e1", "e2"};
static const char *const oom_hosts[1] = {"h2"};

static int oom_submit_placed(tlt_env *e, uint32_t stage, tl_spread spread, uint32_t nexec) {
  tl_taskset_desc d = {.stage_id = stage,
                       .ntasks = 3,
                       .allowed_executors = oom_execs,
                       .nallowed_executors = nexec,
                       .allowed_hosts = oom_hosts,
                       .nallowed_hosts = 1,
                       .spread = spread};
  return tlt_submit_desc_rc(e, &d, NULL);
}

static int oom_add(tlt_env *e, const char *id, const char *host, uint32_t cores) {
  tl_executor_desc d = {.id = id, .host = host, .cores = cores};
  return tl_executor_add(e->s, &d);
}

static int oom_offer(tlt_env *e, oom_ctx *c, const char *exec, uint32_t cores) {
  tl_offer o = {.executor_id = exec, .cores = cores};
  c->nout = 0;
  int rc = tl_resource_offers(e->s, &o, 1, c->out, cores, &c->nout);
  if (rc == TL_OK) {
    memcpy(&c->log[c->nlog], c->out, c->nout * sizeof *c->out);
    c->nlog += c->nout;
  }
  return rc;
}

static void build_two_hosts(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(oom_add(e, "e1", "h1", 4));
  B_OK(oom_add(e, "e2", "h2", 4));
}

static int call_submit_spread_host(tlt_env *e, oom_ctx *c) {
  (void)c;
  return oom_submit_placed(e, 0, TL_SPREAD_HOST, 2);
}

static int call_submit_allowed_only(tlt_env *e, oom_ctx *c) {
  (void)c;
  return oom_submit_placed(e, 0, TL_SPREAD_NONE, 1);
}

/* A spread task set running on h1; another waits for an executor "e9" that does not exist. */
static void build_placed_sets(tlt_env *e, oom_ctx *c) {
  build_two_hosts(e, c);
  B_OK(oom_submit_placed(e, 0, TL_SPREAD_HOST, 2));
  B_OK(oom_offer(e, c, "e1", 4));
  tl_taskset_desc d = {.stage_id = 1,
                       .ntasks = 1,
                       .allowed_executors = (const char *const[]){"e9"},
                       .nallowed_executors = 1};
  B_OK(tlt_submit_desc_rc(e, &d, NULL));
  B_OK(oom_offer(e, c, "e1", 3));
}

/* A spread task set running on h1, launched by a round of one core (so no spare record is
 * left: a round keeps the records it did not use while tasks wait), and a task set waiting for
 * "e9", which does not exist, submitted since: the next round launches on h2, which needs a
 * record, and finds the other unschedulable. */
static void build_placed_sets_no_spare(tlt_env *e, oom_ctx *c) {
  build_two_hosts(e, c);
  B_OK(oom_submit_placed(e, 0, TL_SPREAD_HOST, 2));
  B_OK(oom_offer(e, c, "e1", 1));
  tl_taskset_desc d = {.stage_id = 1,
                       .ntasks = 1,
                       .allowed_executors = (const char *const[]){"e9"},
                       .nallowed_executors = 1};
  B_OK(tlt_submit_desc_rc(e, &d, NULL));
}

static int call_offer_spread(tlt_env *e, oom_ctx *c) { return oom_offer(e, c, "e2", 4); }

static void config_short_timeout(tl_config *cfg) { cfg->unschedulable_timeout_ns = TLT_SEC; }

/* The same, its timeout (config_short_timeout) passed. */
static void build_placed_sets_due(tlt_env *e, oom_ctx *c) {
  build_placed_sets(e, c);
  e->now += 2 * TLT_SEC;
}

static int call_tick_aborts(tlt_env *e, oom_ctx *c) {
  c->tick = tl_tick(e->s);
  return TL_OK;
}

static int call_lose_placed(tlt_env *e, oom_ctx *c) {
  (void)c;
  tl_loss_reason why = {.kind = TL_LOSS_EXITED, .caused_by_app = true};
  return tl_executor_lost(e->s, "e1", &why);
}

START_TEST(oom_placement) {
  const oom_scenario sc[] = {
      {"tl_submit", "with a spread, allowed executors and hosts", NULL, build_two_hosts,
       call_submit_spread_host, OOM_ALLOCATES, 0},
      {"tl_submit", "with allowed names only", NULL, build_two_hosts, call_submit_allowed_only,
       OOM_ALLOCATES, 0},
      {"tl_resource_offers", "a spread task set launches on the other host", NULL,
       build_placed_sets_no_spare, call_offer_spread, OOM_ALLOCATES, 0},
      {"tl_tick", "an unschedulable placement is aborted with its message", config_short_timeout,
       build_placed_sets_due, call_tick_aborts, OOM_TICK | OOM_ALLOCATES, 0},
      {"tl_executor_lost", "the loss of a spread task set's host", NULL, build_placed_sets,
       call_lose_placed, 0, 0},
  };
  SWEEP_ALL("hard placement", sc);
}
END_TEST

Suite *tl_placement_suite(void) {
  Suite *s = suite_create("placement");
  TCase *tc = tcase_create("affinity");
  tcase_add_test(tc, allowed_executors_take_every_task);
  tcase_add_test(tc, allowed_hosts_take_every_executor_there);
  tcase_add_test(tc, bad_placement_is_refused_and_changes_nothing);
  suite_add_tcase(s, tc);
  tc = tcase_create("spread");
  tcase_add_test(tc, spread_per_host_across_retries_kills_and_losses);
  tcase_add_test(tc, spread_per_executor_with_speculation);
  tcase_add_test(tc, a_slot_left_by_a_move_counts_from_zero);
  tcase_add_test(tc, spread_counts_survive_churn_across_many_executors);
  suite_add_tcase(s, tc);
  tc = tcase_create("unschedulable");
  tcase_add_test(tc, an_impossible_placement_is_aborted_with_its_explanation);
  tcase_add_test(tc, an_executor_that_joins_rescues_it);
  tcase_add_test(tc, nothing_alive_waits_and_a_zombie_leaves_the_timer);
  suite_add_tcase(s, tc);
  tc = tcase_create("durable");
  tcase_add_test(tc, restore_and_reconcile_keep_the_counts);
  tcase_add_test(tc, the_journal_records_placement_and_replays);
  tcase_add_test(tc, malformed_placement_lines_are_refused_by_the_replayer);
  suite_add_tcase(s, tc);
  tc = tcase_create("oom");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, oom_placement);
  suite_add_tcase(s, tc);
  return s;
}

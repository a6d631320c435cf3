/* Resources beyond cores (docs/api.md "Resources"): executors' declarations, task sets'
 * requests in whole addresses and shares 1/k, resource profiles, grants booked by the offer
 * round and given back on every path an attempt ends by. Ports of Spark's resource tests
 * (TaskSchedulerImplSuite: "Scheduler correctly accounts for GPUs per task", its fractional
 * variant, "Scheduler works with multiple ResourceProfiles and gpus", "Scheduler works with task
 * resource profiles", the barrier-with-resources cases) with tl_check after every step.
 */
#include "harness.h"

static const char *const gpus8[] = {"0", "1", "2", "3", "4", "5", "6", "7"};

/* An executor with one resource "gpu" of its first n addresses of gpus8. */
static void add_gpu_executor(tlt_env *e, const char *id, const char *host, uint32_t cores,
                             uint32_t ngpus, uint32_t profile) {
  tl_resource r = {.name = "gpu", .addresses = gpus8, .naddresses = ngpus};
  tl_executor_desc d = {.id = id,
                        .host = host,
                        .cores = cores,
                        .profile = profile,
                        .resources = ngpus > 0 ? &r : NULL,
                        .nresources = ngpus > 0 ? 1 : 0};
  tlt_add_desc(e, d);
}

static tl_taskset_id submit_gpu(tlt_env *e, uint32_t stage, uint32_t ntasks, uint32_t cpus,
                                uint32_t amount, uint32_t share, uint32_t profile, bool barrier) {
  tl_resource_request q = {.name = "gpu", .amount = amount, .share = share};
  tl_taskset_desc d = {.stage_id = stage,
                       .ntasks = ntasks,
                       .cpus_per_task = cpus,
                       .barrier = barrier,
                       .profile = profile,
                       .resources = &q,
                       .nresources = 1};
  return tlt_submit_desc(e, &d);
}

/* The executor's gpu resource as tl_executor_resources gives it. */
static tl_resource_info gpu_of(tlt_env *e, const char *id) {
  tl_resource_info r[2];
  size_t n = 0;
  ck_assert_int_eq(tl_executor_resources(e->s, id, r, 2, &n), TL_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_str_eq(r[0].name, "gpu");
  return r[0];
}

/* The use of address a of the executor's gpu. */
static uint64_t address_used(tlt_env *e, const char *id, uint32_t a) {
  tl_address_info x[8];
  size_t n = 0;
  ck_assert_int_eq(tl_executor_addresses(e->s, id, 0, x, 8, &n), TL_OK);
  ck_assert_uint_lt(a, n);
  ck_assert_str_eq(x[a].address, gpus8[a]);
  return x[a].used;
}

START_TEST(gpus_per_task_are_accounted_and_limited_by_cores) {
  /* Spark: "Scheduler correctly accounts for GPUs per task". An executor with 4 GPUs but 2
   * cores runs 2 tasks of 1 GPU, on addresses 0 and 1; one without GPUs runs none. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "cpu", "h0", 4, 0, 0);
  add_gpu_executor(e, "g", "h1", 2, 4, 0);
  tl_taskset_id ts = submit_gpu(e, 0, 4, 1, 1, 0, 0, false);
  tl_launch l[4];
  tl_grant g[8];
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"cpu", 4}, 1, l, 4, g, 8), 0);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 2}, 1, l, 4, g, 8), 2);
  for (uint32_t i = 0; i < 2; i++) {
    ck_assert_uint_eq(l[i].taskset, ts);
    ck_assert_uint_eq(l[i].ngrants, 1);
    ck_assert_uint_eq(l[i].grants[0].resource, 0);
    ck_assert_uint_eq(l[i].grants[0].address, i);
    ck_assert_uint_eq(l[i].grants[0].share, 1);
    tl_grant held[2];
    size_t n = 0;
    ck_assert_int_eq(tl_attempt_grants(e->s, l[i].tid, held, 2, &n), TL_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(held[0].address, i);
  }
  tl_resource_info r = gpu_of(e, "g");
  ck_assert_uint_eq(r.addresses, 4);
  ck_assert_uint_eq(r.free, 2);
  ck_assert(r.used == 2 * TL_SHARE_UNIT);
  ck_assert(address_used(e, "g", 0) == TL_SHARE_UNIT && address_used(e, "g", 2) == 0);
  /* The task events carry the grants. */
  const tlt_event *ev = tlt_last(e, TLT_EV_STARTED);
  ck_assert_uint_eq(ev->task.ngrants, 1);
  ck_assert_uint_eq(ev->grants[0].address, 1);

  tlt_succeed(e, "g", l[0].tid);
  ev = tlt_last(e, TLT_EV_ENDED);
  ck_assert_uint_eq(ev->task.ngrants, 1);
  ck_assert_uint_eq(ev->grants[0].address, 0);
  ck_assert(address_used(e, "g", 0) == 0);
  /* The freed address is the first free one again. */
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 1}, 1, l + 2, 2, g, 8), 1);
  ck_assert_uint_eq(l[2].grants[0].address, 0);
  tlt_succeed(e, "g", l[1].tid);
  tlt_succeed(e, "g", l[2].tid);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 2}, 1, l, 4, g, 8), 1);
  tlt_succeed(e, "g", l[0].tid);
  r = gpu_of(e, "g");
  ck_assert(r.free == 4 && r.used == 0);
  (void)ts;
  tlt_end(e);
}
END_TEST

START_TEST(a_share_lets_k_tasks_hold_one_address_exactly) {
  /* Spark: "... GPUs per task with fractional amount": 0.33 of a GPU (here exactly 1/3), one
   * GPU, 4 cores, 5 tasks: 3 launch, all on address 0, which is then full with nothing left. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "g", "h", 4, 1, 0);
  submit_gpu(e, 0, 5, 1, 1, 3, 0, false);
  tl_launch l[4];
  tl_grant g[4];
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 4}, 1, l, 4, g, 4), 3);
  for (int i = 0; i < 3; i++)
    ck_assert(l[i].ngrants == 1 && l[i].grants[0].address == 0 && l[i].grants[0].share == 3);
  tl_resource_info r = gpu_of(e, "g");
  ck_assert(r.free == 0 && r.used == TL_SHARE_UNIT);
  /* One ends: a third is free, and exactly one more task fits. */
  tlt_succeed(e, "g", l[1].tid);
  ck_assert(gpu_of(e, "g").used == TL_SHARE_UNIT / 3 * 2);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 4}, 1, l + 3, 1, g, 4), 1);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 4}, 1, l + 1, 1, g, 4), 0);
  tlt_succeed(e, "g", l[0].tid);
  tlt_succeed(e, "g", l[2].tid);
  tlt_succeed(e, "g", l[3].tid);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 4}, 1, l, 4, g, 4), 1);
  tlt_succeed(e, "g", l[0].tid);
  ck_assert(gpu_of(e, "g").used == 0);
  tlt_end(e);
}
END_TEST

START_TEST(shares_of_different_sizes_add_up_exactly) {
  /* Nine tasks of 1/9 fill one address with nothing left over (Spark 4 needed a fixed point of
   * 10^16 for that); then 1/2 + 1/4 + 1/4 fill the next. No floating point anywhere. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "g", "h", 32, 2, 0);
  submit_gpu(e, 0, 9, 1, 1, 9, 0, false);
  tl_launch l[16];
  tl_grant g[16];
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 32}, 1, l, 16, g, 16), 9);
  for (int i = 0; i < 9; i++)
    ck_assert_uint_eq(l[i].grants[0].address, 0);
  ck_assert(address_used(e, "g", 0) == TL_SHARE_UNIT && address_used(e, "g", 1) == 0);
  submit_gpu(e, 1, 1, 1, 1, 2, 0, false);
  submit_gpu(e, 2, 3, 1, 1, 4, 0, false);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 32}, 1, l + 9, 7, g, 16), 3);
  ck_assert(address_used(e, "g", 1) == TL_SHARE_UNIT); /* 1/2 + 1/4 + 1/4 */
  tl_resource_info r = gpu_of(e, "g");
  ck_assert(r.free == 0 && r.used == 2 * TL_SHARE_UNIT);
  for (int i = 0; i < 12; i++)
    tlt_succeed(e, "g", l[i].tid);
  /* The fourth task of stage 2 runs now. */
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 32}, 1, l, 16, g, 16), 1);
  ck_assert(l[0].grants[0].share == 4 && l[0].grants[0].address == 0);
  tlt_succeed(e, "g", l[0].tid);
  r = gpu_of(e, "g");
  ck_assert(r.free == 2 && r.used == 0);
  tlt_end(e);
}
END_TEST

START_TEST(task_sets_run_only_on_executors_of_their_profile) {
  /* Spark: "Scheduler works with multiple ResourceProfiles and gpus". A default task set of 1
   * GPU per task, and one of profile 1 of 2 cores and 2 GPUs per task. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "e0", "h0", 2, 4, 0);
  add_gpu_executor(e, "e1", "h1", 6, 6, 1);
  tl_taskset_id def = submit_gpu(e, 0, 2, 1, 1, 0, 0, false);
  tl_taskset_id rp = submit_gpu(e, 1, 5, 2, 2, 0, 1, false);
  tl_offer o[2] = {{"e0", 2}, {"e1", 6}};
  tl_launch l[8];
  tl_grant g[16];
  ck_assert_uint_eq(tlt_offers_grants(e, o, 2, l, 8, g, 16), 5);
  size_t on_def = 0, on_rp = 0;
  for (int i = 0; i < 5; i++) {
    if (l[i].taskset == def) {
      ck_assert_str_eq(l[i].executor_id, "e0");
      ck_assert_uint_eq(l[i].ngrants, 1);
      on_def++;
    } else {
      ck_assert_uint_eq(l[i].taskset, rp);
      ck_assert_str_eq(l[i].executor_id, "e1");
      ck_assert_uint_eq(l[i].ngrants, 2);
      ck_assert_uint_ne(l[i].grants[0].address, l[i].grants[1].address);
      on_rp++;
    }
  }
  ck_assert(on_def == 2 && on_rp == 3);
  ck_assert(gpu_of(e, "e1").free == 0 && gpu_of(e, "e0").free == 2);
  ck_assert_uint_eq(tlt_ts(e, rp).profile, 1);
  ck_assert_uint_eq(tlt_ts(e, rp).nresources, 1);
  ck_assert_uint_eq(tlt_ex(e, "e1").profile, 1);
  /* A new executor of profile 1 takes the last two. */
  add_gpu_executor(e, "e2", "h2", 6, 6, 1);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"e2", 6}, 1, l + 5, 3, g, 16), 2);
  ck_assert(l[5].taskset == rp && l[6].taskset == rp);
  for (int i = 0; i < 7; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  tlt_end(e);
}
END_TEST

START_TEST(a_task_only_profile_is_profile_0_with_its_own_requests) {
  /* Spark: "Scheduler works with task resource profiles": a TaskResourceProfile (2 cpus, 2
   * GPUs) runs on the default executors beside a default task set of 1 GPU per task. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "e0", "h0", 4, 4, 0);
  submit_gpu(e, 0, 3, 1, 1, 0, 0, false);
  submit_gpu(e, 1, 2, 2, 2, 0, 0, false);
  tl_launch l[8];
  tl_grant g[16];
  /* 4 cores, 4 GPUs: the first task set takes 3 cores and 3 GPUs; the second cannot fit. */
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"e0", 4}, 1, l, 8, g, 16), 3);
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, "e0", l[i].tid);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"e0", 4}, 1, l, 8, g, 16), 2);
  ck_assert(l[0].ngrants == 2 && l[1].ngrants == 2);
  ck_assert(gpu_of(e, "e0").free == 0);
  tlt_succeed(e, "e0", l[0].tid);
  tlt_succeed(e, "e0", l[1].tid);
  tlt_end(e);
}
END_TEST

START_TEST(a_barrier_task_set_launches_with_all_its_addresses_or_none) {
  /* Spark: "don't schedule for a barrier taskSet if available slots are less than pending tasks
   * gpus limiting" and "schedule tasks for a barrier taskSet if all tasks can be launched
   * together gpus": 3 tasks of 1 GPU; executors of 1 GPU and 2 cores each. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "e0", "h0", 2, 1, 0);
  add_gpu_executor(e, "e1", "h1", 2, 1, 0);
  tl_taskset_id ts = submit_gpu(e, 0, 3, 1, 1, 0, 0, true);
  tl_offer o[3] = {{"e0", 2}, {"e1", 2}, {"e2", 2}};
  tl_launch l[8];
  tl_grant g[8];
  ck_assert_uint_eq(tlt_offers_grants(e, o, 2, l, 8, g, 8), 0);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 3);
  ck_assert(gpu_of(e, "e0").free == 1);
  add_gpu_executor(e, "e2", "h2", 2, 1, 0);
  ck_assert_uint_eq(tlt_offers_grants(e, o, 3, l, 8, g, 8), 3);
  ck_assert(gpu_of(e, "e0").free == 0 && gpu_of(e, "e1").free == 0 && gpu_of(e, "e2").free == 0);
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  tlt_end(e);
}
END_TEST

START_TEST(a_barrier_task_set_counts_only_executors_of_its_profile) {
  /* "... diff ResourceProfile" and "... but not enough gpus": 3 tasks of 2 GPUs on executors of
   * profile 1; two of 2 GPUs are not enough, two of 4 are. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "d0", "h0", 8, 8, 0); /* the default profile: never used */
  add_gpu_executor(e, "a", "h1", 4, 2, 1);
  add_gpu_executor(e, "b", "h2", 4, 2, 1);
  submit_gpu(e, 0, 3, 1, 2, 0, 1, true);
  tl_offer o[5] = {{"d0", 8}, {"a", 4}, {"b", 4}, {"c", 4}, {"d", 4}};
  tl_launch l[8];
  tl_grant g[16];
  ck_assert_uint_eq(tlt_offers_grants(e, o, 3, l, 8, g, 16), 0);
  add_gpu_executor(e, "c", "h3", 4, 4, 1);
  ck_assert_uint_eq(tlt_offers_grants(e, o, 4, l, 8, g, 16), 3);
  for (int i = 0; i < 3; i++) {
    ck_assert_str_ne(l[i].executor_id, "d0");
    ck_assert_uint_eq(l[i].ngrants, 2);
  }
  for (int i = 0; i < 3; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  tlt_end(e);
}
END_TEST

START_TEST(every_end_path_gives_addresses_back) {
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "g", "h", 8, 8, 0);
  tl_taskset_id ts = submit_gpu(e, 0, 8, 1, 1, 0, 0, false);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "g", 8, l, 8), 8); /* without a grants array */
  for (int i = 0; i < 8; i++) {
    ck_assert_uint_eq(l[i].ngrants, 1);
    ck_assert_ptr_null(l[i].grants);
  }
  ck_assert(gpu_of(e, "g").free == 0);
  tlt_succeed(e, "g", l[0].tid);
  tlt_fail(e, "g", l[1].tid, TL_END_EXCEPTION);
  tlt_killed(e, "g", l[2].tid);
  e->auto_kill = true;
  TLT_OK(e, tl_kill_task(e->s, l[3].tid, true, "test"));
  ck_assert(gpu_of(e, "g").free == 4);
  /* The failed, killed ones run again. */
  tl_launch again[8];
  ck_assert_uint_eq(tlt_offer(e, "g", 8, again, 8), 3);
  ck_assert(gpu_of(e, "g").free == 1);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "done")); /* kills all: auto_kill ends them */
  ck_assert(gpu_of(e, "g").free == 8 && gpu_of(e, "g").used == 0);
  (void)ts;
  tlt_end(e);
}
END_TEST

START_TEST(frozen_attempts_keep_their_addresses_until_the_second_phase) {
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "g", "h", 4, 4, 0);
  add_gpu_executor(e, "k", "h2", 4, 4, 0);
  submit_gpu(e, 0, 4, 1, 2, 0, 0, false);
  tl_offer o[2] = {{"g", 4}, {"k", 4}};
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 4), 4);
  ck_assert(gpu_of(e, "g").free == 0 && gpu_of(e, "k").free == 0);
  tlt_lose(e, "g", TL_LOSS_PENDING, false);
  /* Frozen: their grants still held, and listed. */
  ck_assert(gpu_of(e, "g").free == 0 && gpu_of(e, "g").used == 4 * TL_SHARE_UNIT);
  tl_grant held[4];
  size_t n = 0;
  ck_assert_int_eq(tl_attempt_grants(e->s, l[0].tid, held, 4, &n), TL_OK);
  ck_assert_uint_eq(n, 2);
  tl_resource_info tot[2];
  ck_assert_int_eq(tl_resource_totals(e->s, tot, 2, &n), TL_OK);
  ck_assert(n == 1 && tot[0].addresses == 8 && tot[0].free == 0);
  tlt_lose(e, "g", TL_LOSS_EXITED, true);
  ck_assert_int_eq(tl_executor_resources(e->s, "g", NULL, 0, &n), TL_EGONE);
  ck_assert_int_eq(tl_attempt_grants(e->s, l[0].tid, held, 4, &n), TL_ESTALE);
  ck_assert_int_eq(tl_resource_totals(e->s, tot, 2, &n), TL_OK);
  ck_assert(n == 1 && tot[0].addresses == 4 && tot[0].free == 0);
  /* A one-phase loss of the other, after a decommission, ends the rest. */
  TLT_OK(e, tl_executor_decommission(e->s, "k", NULL));
  tlt_lose(e, "k", TL_LOSS_DECOMMISSIONED, false);
  ck_assert_int_eq(tl_resource_totals(e->s, tot, 2, &n), TL_OK);
  ck_assert_uint_eq(n, 0);
  add_gpu_executor(e, "m", "h3", 8, 8, 0);
  ck_assert_uint_eq(tlt_offer(e, "m", 8, l, 4), 4);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "m", l[i].tid);
  tlt_end(e);
}
END_TEST

START_TEST(a_speculative_copy_takes_its_own_addresses) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.speculation_quantile = 0.5;
  tlt_env *e = tlt_new(&cfg);
  add_gpu_executor(e, "a", "ha", 2, 2, 0);
  add_gpu_executor(e, "b", "hb", 2, 2, 0);
  submit_gpu(e, 0, 2, 1, 1, 0, 0, false);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "a", 2, l, 4), 2);
  tlt_run(e, "a", l[0].tid);
  tlt_run(e, "a", l[1].tid);
  tlt_advance_tick(e, 1 * TLT_SEC);
  tlt_succeed(e, "a", l[0].tid);
  tlt_advance_tick(e, 10 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 1);
  ck_assert_uint_eq(tlt_offer(e, "b", 2, l + 2, 2), 1);
  ck_assert(l[2].speculative && l[2].ngrants == 1);
  ck_assert(gpu_of(e, "a").free == 1 && gpu_of(e, "b").free == 1);
  e->auto_kill = true;
  tlt_succeed(e, "b", l[2].tid); /* the original is killed and ends */
  ck_assert(gpu_of(e, "a").free == 2 && gpu_of(e, "b").free == 2);
  tlt_end(e);
}
END_TEST

START_TEST(the_grants_array_bounds_a_round) {
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "g", "h", 8, 8, 0);
  submit_gpu(e, 0, 4, 1, 2, 0, 0, false);
  tl_launch l[4];
  tl_grant g[8];
  /* Room for 5 grants: two launches of 2, then the round stops as at cap. */
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 8}, 1, l, 4, g, 5), 2);
  ck_assert_uint_eq(tlt_ts(e, 1).pending, 2);
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"g", 8}, 1, l + 2, 2, g, 8), 2);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "g", l[i].tid);
  size_t nout = 7, ng = 7;
  TLT_ERR(e, TL_EINVAL,
          tl_resource_offers_grants(e->s, &(tl_offer){"g", 8}, 1, l, 4, &nout, NULL, 4, &ng));
  ck_assert(nout == 0 && ng == 0);
  TLT_ERR(e, TL_EINVAL,
          tl_resource_offers_grants(e->s, &(tl_offer){"g", 8}, 1, l, 4, &nout, g, 4, NULL));
  tlt_end(e);
}
END_TEST

START_TEST(malformed_declarations_and_requests_change_nothing) {
  tlt_env *e = tlt_new(NULL);
  const char *dup[] = {"0", "0"};
  const char *comma[] = {"0,1"};
  const char *space[] = {"0 1"};
  const char *empty[] = {""};
  tl_resource bad[] = {
      {.name = "gpu", .addresses = dup, .naddresses = 2},
      {.name = "gpu", .addresses = comma, .naddresses = 1},
      {.name = "gpu", .addresses = space, .naddresses = 1},
      {.name = "gpu", .addresses = empty, .naddresses = 1},
      {.name = "g pu", .addresses = gpus8, .naddresses = 1},
      {.name = "", .addresses = gpus8, .naddresses = 1},
      {.name = NULL, .addresses = gpus8, .naddresses = 1},
      {.name = "gpu", .addresses = gpus8, .naddresses = 0},
      {.name = "gpu", .addresses = NULL, .naddresses = 1},
      {.name = "gpu", .addresses = gpus8, .naddresses = TL_RESOURCE_ADDRESSES_MAX + 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tl_executor_desc d = {
        .id = "x", .host = "h", .cores = 1, .resources = &bad[i], .nresources = 1};
    TLT_ERR(e, TL_ERESOURCE, tl_executor_add(e->s, &d));
  }
  tl_resource two[2] = {{"gpu", gpus8, 1}, {"gpu", gpus8 + 1, 1}};
  TLT_ERR(e, TL_ERESOURCE,
          tl_executor_add(
              e->s, &(tl_executor_desc){
                        .id = "x", .host = "h", .cores = 1, .resources = two, .nresources = 2}));
  TLT_ERR(e, TL_ERESOURCE,
          tl_executor_add(
              e->s, &(tl_executor_desc){
                        .id = "x", .host = "h", .cores = 1, .resources = NULL, .nresources = 1}));
  TLT_ERR(e, TL_ERESOURCE,
          tl_executor_add(e->s, &(tl_executor_desc){.id = "x",
                                                    .host = "h",
                                                    .cores = 1,
                                                    .resources = two,
                                                    .nresources = TL_RESOURCES_MAX + 1}));
  char longname[TL_RESOURCE_NAME_MAX + 1];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  tl_resource_request req[] = {
      {.name = "gpu", .amount = 0},
      {.name = "gpu", .amount = TL_TASK_GRANTS_MAX + 1},
      {.name = "gpu", .amount = 2, .share = 2},
      {.name = "gpu", .amount = 1, .share = TL_SHARE_MAX + 1},
      {.name = longname, .amount = 1},
      {.name = "gpu!", .amount = 1},
  };
  for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
    tl_taskset_desc d = {.ntasks = 1, .resources = &req[i], .nresources = 1};
    TLT_ERR(e, TL_ERESOURCE, tl_submit(e->s, &d, NULL));
  }
  tl_resource_request many[2] = {{"gpu", 9, 0}, {"fpga", 8, 0}}; /* 17 grants per task */
  TLT_ERR(
      e, TL_ERESOURCE,
      tl_submit(e->s, &(tl_taskset_desc){.ntasks = 1, .resources = many, .nresources = 2}, NULL));
  tl_resource_request same[2] = {{"gpu", 1, 0}, {"gpu", 1, 0}};
  TLT_ERR(
      e, TL_ERESOURCE,
      tl_submit(e->s, &(tl_taskset_desc){.ntasks = 1, .resources = same, .nresources = 2}, NULL));
  /* The largest legal ones are taken. */
  longname[TL_RESOURCE_NAME_MAX - 1] = '\0';
  tl_resource_request ok[2] = {{longname, 1, TL_SHARE_MAX}, {"fpga", TL_TASK_GRANTS_MAX - 1, 1}};
  tl_taskset_desc fine = {.ntasks = 1, .resources = ok, .nresources = 2};
  tl_taskset_id ts = tlt_submit_desc(e, &fine);
  ck_assert_uint_eq(tlt_ts(e, ts).nresources, 2);
  TLT_OK(e, tl_cancel_stage(e->s, 0, NULL));
  tlt_end(e);
}
END_TEST

START_TEST(an_unsatisfiable_request_is_explained) {
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "g", "h", 8, 1, 1);
  tl_taskset_id ts = submit_gpu(e, 0, 2, 1, 2, 0, 1, false);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "g", 8, l, 2), 0);
  char buf[2048];
  TLT_OK(e, tl_explain_taskset(e->s, ts, buf, sizeof buf));
  ck_assert_msg(strstr(buf, "resources: profile 1; each task needs 1 cores, gpu x2") != NULL, "%s",
                buf);
  ck_assert_msg(strstr(buf, "needs gpu x2; the largest executor of profile 1 has 1") != NULL, "%s",
                buf);
  tl_taskset_id other = submit_gpu(e, 1, 1, 1, 1, 0, 2, false);
  TLT_OK(e, tl_explain_taskset(e->s, other, buf, sizeof buf));
  ck_assert_msg(strstr(buf, "no live executor of profile 2") != NULL, "%s", buf);
  /* Metrics: one line per resource name and gauge. */
  char text[16384];
  size_t need = 0;
  TLT_OK(e, tl_metrics_text(e->s, text, sizeof text, &need));
  ck_assert_uint_lt(need, sizeof text);
  ck_assert(strstr(text, "taskledger_resource_addresses{resource=\"gpu\"} 1\n") != NULL);
  ck_assert(strstr(text, "taskledger_resource_free{resource=\"gpu\"} 1\n") != NULL);
  ck_assert(strstr(text, "taskledger_resource_used{resource=\"gpu\"} 0.000000\n") != NULL);
  TLT_OK(e, tl_cancel_stage(e->s, 0, NULL));
  TLT_OK(e, tl_cancel_stage(e->s, 1, NULL));
  tlt_end(e);
}
END_TEST

START_TEST(task_sets_without_requests_use_executors_with_resources_as_before) {
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "g", "h", 4, 2, 0);
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "g", 4, l, 4), 4);
  for (int i = 0; i < 4; i++)
    ck_assert_uint_eq(l[i].ngrants, 0);
  ck_assert(gpu_of(e, "g").free == 2);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "g", l[i].tid);
  tlt_end(e);
}
END_TEST

START_TEST(an_unsatisfiable_task_set_is_aborted_by_the_unschedulable_rule) {
  tl_config cfg = tlt_config();
  cfg.unschedulable_timeout_ns = 10 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  add_gpu_executor(e, "g", "h", 8, 1, 1);
  tl_taskset_id big = submit_gpu(e, 0, 2, 1, 2, 0, 1, false);   /* 2 GPUs: never on "g" */
  tl_taskset_id later = submit_gpu(e, 1, 1, 1, 2, 0, 1, false); /* the same, until "g2" */
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "g", 8, l, 4), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 2);
  tlt_advance_tick(e, 5 * TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  add_gpu_executor(e, "g2", "h2", 1, 2, 1); /* fits stage 1's task, and stage 0's */
  tlt_advance_tick(e, 6 * TLT_SEC);
  /* The deadline came, but an executor that can run them joined: nothing is aborted. */
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  tl_offer o[2] = {{"g", 8}, {"g2", 1}};
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 4), 1);
  /* g2 leaves: stage 0's second task is unsatisfiable again, and aborted at its deadline. */
  e->auto_kill = true;
  tlt_lose(e, "g2", TL_LOSS_KILLED, false);
  ck_assert_uint_eq(tlt_offers(e, o, 1, l, 4), 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 2);
  tlt_advance_tick(e, 10 * TLT_SEC);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_FAILED), 2);
  const tlt_event *ev = tlt_last(e, TLT_EV_FAILED);
  ck_assert_msg(strstr(ev->text, "no live executor of resource profile 1") != NULL, "%s", ev->text);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable_aborted, 2);
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable, 0);
  (void)big;
  (void)later;
  tlt_end(e);
}
END_TEST

START_TEST(a_scheduler_freed_with_grants_held_frees_them) {
  /* Attempts holding grants, and task events queued naming them (deferred delivery, which
   * tl_scheduler_free delivers first): every block is given back (its memory balance asserts
   * it, and the sanitizers find a leak). */
  tl_config cfg = tlt_config();
  cfg.delivery = TL_DELIVER_DEFERRED;
  tlt_env *e = tlt_new(&cfg);
  add_gpu_executor(e, "g", "h", 4, 4, 0);
  submit_gpu(e, 0, 8, 1, 1, 2, 0, false);
  tl_launch l[8];
  size_t n = 0;
  TLT_OK(e, tl_resource_offers(e->s, &(tl_offer){"g", 4}, 1, l, 8, &n));
  ck_assert_uint_eq(n, 4);
  tl_update u = {.state = TL_TASK_FAILED, .failure = TL_END_EXCEPTION};
  TLT_OK(e, tl_status_update(e->s, "g", l[0].tid, &u)); /* its task_ended holds its block */
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  e->s = NULL;
  tlt_end_freed(e);
}
END_TEST

START_TEST(a_barrier_that_does_not_fit_leaves_its_addresses_to_the_next_task_set) {
  /* Spark: "SPARK-24818: test resource revert of barrier TaskSetManager", with the addresses
   * limiting instead of delay scheduling: a barrier task set that cannot place all its tasks
   * holds nothing, and the task set after it takes the offer. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "e0", "h0", 2, 1, 0);
  add_gpu_executor(e, "e1", "h1", 2, 1, 0);
  tl_taskset_id barrier = submit_gpu(e, 0, 2, 1, 1, 0, 0, true);
  tl_taskset_id normal = submit_gpu(e, 1, 2, 1, 1, 0, 0, false);
  tl_launch l[4];
  tl_grant g[4];
  ck_assert_uint_eq(tlt_offers_grants(e, &(tl_offer){"e0", 2}, 1, l, 4, g, 4), 1);
  ck_assert_uint_eq(l[0].taskset, normal);
  ck_assert_uint_eq(l[0].grants[0].address, 0);
  ck_assert_uint_eq(tlt_ts(e, barrier).pending, 2);
  tlt_succeed(e, "e0", l[0].tid);
  /* Both offered: the barrier task set goes first and takes both GPUs. */
  tl_offer o[2] = {{"e0", 2}, {"e1", 2}};
  ck_assert_uint_eq(tlt_offers_grants(e, o, 2, l, 4, g, 4), 2);
  ck_assert(l[0].taskset == barrier && l[1].taskset == barrier);
  ck_assert(gpu_of(e, "e0").free == 0 && gpu_of(e, "e1").free == 0);
  for (int i = 0; i < 2; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(tlt_offers_grants(e, o, 2, l, 4, g, 4), 1);
  ck_assert_uint_eq(l[0].taskset, normal);
  tlt_succeed(e, l[0].executor_id, l[0].tid);
  tlt_end(e);
}
END_TEST

START_TEST(a_barrier_counts_the_slots_cores_and_addresses_allow_together) {
  /* Spark: "Calculate available tasks slots for task resource profiles": two executors of 4
   * cores and 4 GPUs, tasks of 2 cores and 1 GPU: 2 slots each (cores limit), 4 in all. A barrier
   * task set of 5 does not launch; one of 4 does. */
  tlt_env *e = tlt_new(NULL);
  add_gpu_executor(e, "e0", "h0", 4, 4, 0);
  add_gpu_executor(e, "e1", "h1", 4, 4, 0);
  tl_taskset_id five = submit_gpu(e, 0, 5, 2, 1, 0, 0, true);
  tl_offer o[2] = {{"e0", 4}, {"e1", 4}};
  tl_launch l[8];
  tl_grant g[8];
  ck_assert_uint_eq(tlt_offers_grants(e, o, 2, l, 8, g, 8), 0);
  TLT_OK(e, tl_cancel_stage(e->s, 0, NULL));
  submit_gpu(e, 1, 4, 2, 1, 0, 0, true);
  ck_assert_uint_eq(tlt_offers_grants(e, o, 2, l, 8, g, 8), 4);
  ck_assert(gpu_of(e, "e0").free == 2 && gpu_of(e, "e1").free == 2);
  ck_assert(tlt_ex(e, "e0").free_cores == 0 && tlt_ex(e, "e1").free_cores == 0);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, l[i].executor_id, l[i].tid);
  (void)five;
  tlt_end(e);
}
END_TEST

Suite *tl_resources_suite(void) {
  Suite *s = suite_create("resources");
  TCase *tc = tcase_create("spark");
  tcase_add_test(tc, gpus_per_task_are_accounted_and_limited_by_cores);
  tcase_add_test(tc, a_share_lets_k_tasks_hold_one_address_exactly);
  tcase_add_test(tc, task_sets_run_only_on_executors_of_their_profile);
  tcase_add_test(tc, a_task_only_profile_is_profile_0_with_its_own_requests);
  tcase_add_test(tc, a_barrier_task_set_launches_with_all_its_addresses_or_none);
  tcase_add_test(tc, a_barrier_task_set_counts_only_executors_of_its_profile);
  tcase_add_test(tc, a_barrier_that_does_not_fit_leaves_its_addresses_to_the_next_task_set);
  tcase_add_test(tc, a_barrier_counts_the_slots_cores_and_addresses_allow_together);
  suite_add_tcase(s, tc);
  tc = tcase_create("ledger");
  tcase_add_test(tc, shares_of_different_sizes_add_up_exactly);
  tcase_add_test(tc, every_end_path_gives_addresses_back);
  tcase_add_test(tc, frozen_attempts_keep_their_addresses_until_the_second_phase);
  tcase_add_test(tc, a_speculative_copy_takes_its_own_addresses);
  tcase_add_test(tc, the_grants_array_bounds_a_round);
  tcase_add_test(tc, malformed_declarations_and_requests_change_nothing);
  tcase_add_test(tc, an_unsatisfiable_request_is_explained);
  tcase_add_test(tc, an_unsatisfiable_task_set_is_aborted_by_the_unschedulable_rule);
  tcase_add_test(tc, task_sets_without_requests_use_executors_with_resources_as_before);
  tcase_add_test(tc, a_scheduler_freed_with_grants_held_frees_them);
  suite_add_tcase(s, tc);
  return s;
}

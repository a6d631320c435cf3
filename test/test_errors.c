/* The error table (tl_err_name, tl_strerror), the version, configuration validation, and the
 * replaceable allocator: a counting allocator that must agree with the scheduler's accounting,
 * TL_EBUSY while a scheduler exists, and out-of-memory sweeps over the public calls.
 */
#include "harness.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Error table and version.
 * ------------------------------------------------------------------------------------------- */

#define TLT_ERR_ROW(name, value, sentence) {TL_##name, value, #name, sentence},
static const struct {
  int code;             /* the enum constant */
  int value;            /* the table's value */
  const char *name;     /* expected tl_err_name */
  const char *sentence; /* expected tl_strerror */
} error_rows[] = {TL_ERRNO_MAP(TLT_ERR_ROW)};
#undef TLT_ERR_ROW
#define NERRORS (sizeof error_rows / sizeof error_rows[0])

START_TEST(error_names_and_sentences_come_from_the_table) {
  ck_assert_uint_eq(NERRORS, 10);
  for (size_t i = 0; i < NERRORS; i++) {
    ck_assert_int_eq(error_rows[i].code, error_rows[i].value);
    ck_assert_str_eq(tl_err_name(error_rows[i].code), error_rows[i].name);
    ck_assert_str_eq(tl_strerror(error_rows[i].code), error_rows[i].sentence);
  }
  ck_assert_str_eq(tl_err_name(TL_EOWNER), "EOWNER");
  ck_assert_str_eq(tl_err_name(TL_ENOMEM), "ENOMEM");
  ck_assert_str_eq(tl_strerror(TL_EGONE),
                   "The executor has been removed; a restarted executor takes a new id.");
}
END_TEST

START_TEST(error_codes_are_distinct_and_negative_and_ok_is_zero) {
  ck_assert_int_eq(TL_OK, 0);
  for (size_t i = 0; i < NERRORS; i++) {
    ck_assert_int_lt(error_rows[i].code, 0);
    for (size_t j = i + 1; j < NERRORS; j++) {
      ck_assert_int_ne(error_rows[i].code, error_rows[j].code);
      ck_assert_str_ne(error_rows[i].name, error_rows[j].name);
    }
  }
  ck_assert_str_eq(tl_err_name(TL_OK), "OK");
  const char *ok = tl_strerror(TL_OK);
  ck_assert_ptr_nonnull(ok);
  ck_assert_uint_gt(strlen(ok), 0);
}
END_TEST

START_TEST(unknown_codes_get_a_name_and_a_sentence) {
  const int unknown[] = {-11, -100, 1, 42, INT_MIN, INT_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    ck_assert_str_eq(tl_err_name(unknown[i]), "UNKNOWN");
    ck_assert_str_eq(tl_strerror(unknown[i]), "Unknown error.");
  }
}
END_TEST

START_TEST(version_matches_the_header) {
  ck_assert_uint_eq(tl_version(), TL_VERSION_HEX);
  ck_assert_uint_eq(TL_VERSION_HEX, 0x000100);
  ck_assert_str_eq(tl_version_string(), "0.1.0");
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Configuration.
 * ------------------------------------------------------------------------------------------- */

START_TEST(config_init_fills_the_documented_defaults) {
  tl_config cfg;
  memset(&cfg, 0x5a, sizeof cfg);
  tl_config_init(&cfg);
  ck_assert_uint_eq(cfg.cpus_per_task, 1);
  ck_assert_uint_eq(cfg.max_task_failures, 4);
  ck_assert_uint_eq(cfg.heartbeat_timeout_ns, 120 * TLT_SEC);
  ck_assert_uint_eq(cfg.pending_loss_timeout_ns, 120 * TLT_SEC);
  ck_assert_uint_eq(cfg.max_tombstones, 1024);
  ck_assert_uint_eq(cfg.tombstone_ttl_ns, 600 * TLT_SEC);
  ck_assert(cfg.clock == NULL);
  ck_assert_ptr_null(cfg.clock_ud);
}
END_TEST

/* Expects tl_scheduler_new to fail with want for cfg, without leaving a block allocated. */
static void expect_new_fails(const tl_config *cfg, tl_scheduler **out, int want, const char *what) {
  size_t live = tlt_alloc_live_blocks();
  int rc = tl_scheduler_new(cfg, NULL, out);
  ck_assert_msg(rc == want, "%s: tl_scheduler_new returned %s, want %s", what, tl_err_name(rc),
                tl_err_name(want));
  ck_assert_msg(tlt_alloc_live_blocks() == live, "%s: a failed tl_scheduler_new leaked %zu blocks",
                what, tlt_alloc_live_blocks() - live);
}

START_TEST(scheduler_new_rejects_null_out_and_out_of_range_config) {
  tlt_alloc_install();
  tl_config cfg = tlt_config();
  expect_new_fails(&cfg, NULL, TL_EINVAL, "out NULL");
  expect_new_fails(NULL, NULL, TL_EINVAL, "cfg and out NULL");
  tl_scheduler *s = NULL;
  cfg.max_task_failures = 0;
  expect_new_fails(&cfg, &s, TL_EINVAL, "max_task_failures 0");
  cfg.max_task_failures = 65536;
  expect_new_fails(&cfg, &s, TL_EINVAL, "max_task_failures 65536");
  cfg.max_task_failures = UINT32_MAX;
  expect_new_fails(&cfg, &s, TL_EINVAL, "max_task_failures UINT32_MAX");
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* Interpretation: a task that takes no cores cannot be placed by core accounting, so 0 is "a
 * config value out of range" for cpus_per_task (its documented default is 1). */
START_TEST(scheduler_new_rejects_zero_cpus_per_task) {
  tl_config cfg = tlt_config();
  cfg.cpus_per_task = 0;
  tl_scheduler *s = NULL;
  int rc = tl_scheduler_new(&cfg, NULL, &s);
  if (rc == TL_OK)
    tl_scheduler_free(s);
  ck_assert_msg(rc == TL_EINVAL, "cpus_per_task 0: %s, want EINVAL", tl_err_name(rc));
}
END_TEST

START_TEST(scheduler_new_accepts_the_range_boundaries) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_end(tlt_new(&cfg));
  cfg.max_task_failures = 65535;
  tlt_end(tlt_new(&cfg));
  /* 0 is documented for each of these: never expire, wait forever, no tombstones, no TTL. */
  cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 0;
  cfg.pending_loss_timeout_ns = 0;
  cfg.max_tombstones = 0;
  cfg.tombstone_ttl_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  ck_assert_uint_eq(tl_tick(e->s), TL_TICK_NEVER);
  tlt_end(e);
}
END_TEST

START_TEST(scheduler_new_copies_the_config) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  /* Changing the caller's copy afterwards must not matter: one counting failure aborts. */
  e->cfg.max_task_failures = 50;
  cfg.max_task_failures = 50;
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_ptr_nonnull(tlt_last(e, TLT_EV_FAILED));
  tlt_end(e);
}
END_TEST

START_TEST(scheduler_free_null_is_einval) { ck_assert_int_eq(tl_scheduler_free(NULL), TL_EINVAL); }
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Allocator.
 * ------------------------------------------------------------------------------------------- */

static void *plain_malloc(size_t n) { return malloc(n); }

START_TEST(replace_allocator_rejects_null_functions) {
  ck_assert_int_eq(tl_replace_allocator(NULL, realloc, calloc, free), TL_EINVAL);
  ck_assert_int_eq(tl_replace_allocator(plain_malloc, NULL, calloc, free), TL_EINVAL);
  ck_assert_int_eq(tl_replace_allocator(plain_malloc, realloc, NULL, free), TL_EINVAL);
  ck_assert_int_eq(tl_replace_allocator(plain_malloc, realloc, calloc, NULL), TL_EINVAL);
  ck_assert_int_eq(tl_replace_allocator(NULL, NULL, NULL, NULL), TL_EINVAL);
  /* A complete set is accepted, and schedulers then allocate through it. */
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  ck_assert_uint_gt(tlt_alloc_live_blocks(), 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(replace_allocator_is_ebusy_while_a_scheduler_exists) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  ck_assert_int_eq(tl_replace_allocator(malloc, realloc, calloc, free), TL_EBUSY);
  tlt_env *e2 = tlt_new(NULL);
  tlt_end(e);
  /* One scheduler is still alive. */
  ck_assert_int_eq(tl_replace_allocator(malloc, realloc, calloc, free), TL_EBUSY);
  tlt_end(e2);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  ck_assert_uint_eq(tlt_alloc_live_bytes(), 0);
  tlt_alloc_restore();
  /* The default allocator is back: a new scheduler is not counted. */
  tlt_env *e3 = tlt_new(NULL);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_end(e3);
}
END_TEST

/* Asserts the scheduler's own accounting equals what the counting allocator holds. */
static void assert_accounting_matches(tlt_env *e, const char *when) {
  tl_stats st = tlt_stats(e);
  ck_assert_msg(st.mem_live_blocks == tlt_alloc_live_blocks(),
                "%s: scheduler accounts %zu blocks, allocator holds %zu", when, st.mem_live_blocks,
                tlt_alloc_live_blocks());
  ck_assert_msg(st.mem_live_bytes == tlt_alloc_live_bytes(),
                "%s: scheduler accounts %zu bytes, allocator holds %zu", when, st.mem_live_bytes,
                tlt_alloc_live_bytes());
}

START_TEST(scheduler_accounting_matches_the_counting_allocator) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  assert_accounting_matches(e, "empty");
  tlt_add(e, "e1", "h1", "r1", 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  assert_accounting_matches(e, "two executors");
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 6);
  tl_launch l[8];
  tl_offer o[2] = {{"e1", 4}, {"e2", 4}};
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 8), 6);
  assert_accounting_matches(e, "six running");
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  assert_accounting_matches(e, "pending loss");
  for (int i = 0; i < 6; i++)
    if (strcmp(l[i].executor_id, "e1") == 0)
      tlt_succeed(e, "e1", l[i].tid);
  tlt_lose(e, "e2", TL_LOSS_EXITED, true);
  assert_accounting_matches(e, "after loss");
  (void)ts;
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  ck_assert_uint_eq(tlt_alloc_live_bytes(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(two_schedulers_account_their_own_memory) {
  tlt_alloc_install();
  tlt_env *a = tlt_new(NULL);
  tlt_env *b = tlt_new(NULL);
  tlt_add(a, "e1", "h1", NULL, 2);
  tlt_submit(a, 0, 0, 0, 100);
  tl_stats sa = tlt_stats(a), sb = tlt_stats(b);
  ck_assert_uint_eq(sb.mem_live_bytes, b->base_bytes);
  ck_assert_uint_eq(sb.mem_live_blocks, b->base_blocks);
  ck_assert_uint_gt(sa.mem_live_bytes, a->base_bytes);
  ck_assert_uint_eq(sa.mem_live_blocks + sb.mem_live_blocks, tlt_alloc_live_blocks());
  ck_assert_uint_eq(sa.mem_live_bytes + sb.mem_live_bytes, tlt_alloc_live_bytes());
  tlt_end(a);
  tlt_end(b);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Out-of-memory sweeps: the k-th allocation of a call fails, for k = 1, 2, ... until the call
 * succeeds. Every failure must be TL_ENOMEM, deliver nothing and leave the ledger as it was
 * (only table capacity may have grown).
 * ------------------------------------------------------------------------------------------- */

#define OOM_SWEEP(e, call)                                                                         \
  do {                                                                                             \
    uint64_t k_ = 1;                                                                               \
    for (;; k_++) {                                                                                \
      ck_assert_msg(k_ < 5000, "%s never succeeded", #call);                                       \
      tl_stats before_, after_;                                                                    \
      tl_stats_get((e)->s, &before_);                                                              \
      size_t nev_ = (e)->nev;                                                                      \
      tlt_alloc_fail_at(k_);                                                                       \
      int rc_ = (call);                                                                            \
      bool hit_ = tlt_alloc_failed();                                                              \
      tlt_alloc_fail_at(0);                                                                        \
      if (rc_ == TL_OK) {                                                                          \
        TLT_CHECK(e);                                                                              \
        break;                                                                                     \
      }                                                                                            \
      ck_assert_msg(rc_ == TL_ENOMEM, "%s with allocation %ju failing: %s", #call, (uintmax_t)k_,  \
                    tl_err_name(rc_));                                                             \
      ck_assert_msg(hit_, "%s returned ENOMEM with no allocation failing", #call);                 \
      tl_stats_get((e)->s, &after_);                                                               \
      tlt_assert_stats_same_but_memory(&before_, &after_, #call);                                  \
      ck_assert_msg((e)->nev == nev_, "%s failed with ENOMEM but delivered %zu callbacks", #call,  \
                    (e)->nev - nev_);                                                              \
      TLT_CHECK(e);                                                                                \
    }                                                                                              \
    oom_failures += k_ - 1;                                                                        \
  } while (0)

static int add_exec(tlt_env *e, const char *id, const char *host, const char *rack,
                    uint32_t cores) {
  tl_executor_desc d = {.id = id, .host = host, .rack = rack, .cores = cores};
  return tl_executor_add(e->s, &d);
}

static int offer(tlt_env *e, const char *exec, uint32_t cores, tl_launch *out, size_t cap,
                 size_t *nout) {
  tl_offer o = {.executor_id = exec, .cores = cores};
  *nout = SIZE_MAX;
  int rc = tl_resource_offers(e->s, &o, 1, out, cap, nout);
  if (rc != TL_OK)
    ck_assert_msg(*nout == 0, "failed offer reports %zu launches (*nout is 0 on any error)", *nout);
  return rc;
}

static int offers_n(tlt_env *e, const tl_offer *o, size_t n, tl_launch *out, size_t cap,
                    size_t *nout) {
  *nout = SIZE_MAX;
  int rc = tl_resource_offers(e->s, o, n, out, cap, nout);
  if (rc != TL_OK)
    ck_assert_msg(*nout == 0, "failed offer reports %zu launches (*nout is 0 on any error)", *nout);
  return rc;
}

static int update(tlt_env *e, const char *exec, tl_tid tid, tl_task_state state,
                  tl_end_kind failure) {
  tl_update u = {.state = state, .failure = failure, .message = "oom sweep"};
  return tl_status_update(e->s, exec, tid, &u);
}

/* A FINISHED update with a fresh result; on error the result stays ours, so we free it. */
static int finish(tlt_env *e, const char *exec, tl_tid tid) {
  tlt_result *r = tlt_result_new(e, 64);
  tl_update u = {
      .state = TL_TASK_FINISHED, .result = r, .result_size = 64, .result_free = tlt_result_free};
  int rc = tl_status_update(e->s, exec, tid, &u);
  if (rc != TL_OK)
    tlt_result_free(r);
  return rc;
}

static int lose(tlt_env *e, const char *exec, tl_loss_kind kind, bool app) {
  tl_loss_reason why = {.kind = kind, .caused_by_app = app, .message = "oom sweep loss"};
  return tl_executor_lost(e->s, exec, &why);
}

START_TEST(oom_sweep_scheduler_new) {
  tlt_alloc_install();
  tl_config cfg = tlt_config();
  tl_scheduler *s = NULL;
  uint64_t k = 1;
  for (;; k++) {
    ck_assert_uint_lt(k, 1000);
    tlt_alloc_fail_at(k);
    int rc = tl_scheduler_new(&cfg, NULL, &s);
    tlt_alloc_fail_at(0);
    if (rc == TL_OK)
      break;
    ck_assert_msg(rc == TL_ENOMEM, "tl_scheduler_new with allocation %ju failing: %s", (uintmax_t)k,
                  tl_err_name(rc));
    ck_assert_msg(tlt_alloc_live_blocks() == 0, "failed tl_scheduler_new leaked %zu blocks",
                  tlt_alloc_live_blocks());
  }
  ck_assert_msg(k > 1, "tl_scheduler_new allocated nothing through the allocator");
  ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(oom_sweep_executors_and_submissions) {
  uint64_t oom_failures = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  OOM_SWEEP(e, add_exec(e, "e1", "h1", "r1", 4));
  OOM_SWEEP(e, add_exec(e, "e2", "h1", "r1", 4));
  OOM_SWEEP(e, add_exec(e, "e3", "h3", NULL, 4));
  OOM_SWEEP(e, tl_executor_heartbeat(e->s, "e1"));
  OOM_SWEEP(e, tl_executor_decommission(e->s, "e3", "going away"));
  tl_taskset_id ts = 0;
  OOM_SWEEP(e, tlt_submit_rc(e, 0, 0, 0, 8, 0, &ts));
  OOM_SWEEP(e, tlt_submit_rc(e, 1, 0, 1, 3, 2, NULL));
  /* A newer attempt that makes the idle older one zombie and releases it. */
  OOM_SWEEP(e, tlt_submit_rc(e, 1, 1, 1, 3, 0, NULL));
  ck_assert_uint_eq(tlt_stats(e).tasksets_released, 1);
  ck_assert_uint_gt(oom_failures, 0);
  (void)ts;
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(oom_sweep_offers_updates_and_kills) {
  uint64_t oom_failures = 0;
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 2;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tlt_submit(e, 0, 0, 0, 6);
  tl_launch l[4];
  size_t n = 0;
  OOM_SWEEP(e, offer(e, "e1", 4, l, 4, &n));
  ck_assert_uint_eq(n, 4);
  OOM_SWEEP(e, update(e, "e1", l[0].tid, TL_TASK_RUNNING, 0));
  OOM_SWEEP(e, finish(e, "e1", l[0].tid));
  /* A failure that retries the index (revive_offers). */
  OOM_SWEEP(e, update(e, "e1", l[1].tid, TL_TASK_FAILED, TL_END_EXCEPTION));
  OOM_SWEEP(e, update(e, "e1", l[2].tid, TL_TASK_KILLED, 0));
  OOM_SWEEP(e, tl_kill_task(e->s, l[3].tid, true, "oom sweep kill"));
  OOM_SWEEP(e, tl_kill_stage(e->s, 0, false, "oom sweep kill stage"));
  OOM_SWEEP(e, tl_partition_completed(e->s, 0, 5));
  /* The second counting failure of index 1 aborts the task set. */
  tl_launch m[4];
  OOM_SWEEP(e, offer(e, "e2", 4, m, 4, &n));
  size_t idx1 = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (m[i].index == 1)
      idx1 = i;
  ck_assert_msg(idx1 != SIZE_MAX, "the failed index 1 was not relaunched");
  OOM_SWEEP(e, update(e, "e2", m[idx1].tid, TL_TASK_RUNNING, 0));
  OOM_SWEEP(e, update(e, "e2", m[idx1].tid, TL_TASK_FAILED, TL_END_EXCEPTION));
  ck_assert_ptr_nonnull(tlt_last(e, TLT_EV_FAILED));
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(oom_sweep_executor_loss_and_cancel) {
  uint64_t oom_failures = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", "r1", 2);
  tlt_add(e, "e2", "h2", "r1", 2);
  tlt_add(e, "e3", "h3", NULL, 2);
  tlt_submit(e, 0, 0, 0, 6);
  tlt_submit(e, 1, 0, 1, 2);
  tl_launch l[8];
  tl_offer o[3] = {{"e1", 2}, {"e2", 2}, {"e3", 2}};
  ck_assert_uint_eq(tlt_offers(e, o, 3, l, 8), 6);
  tlt_run(e, "e1", l[0].tid);
  OOM_SWEEP(e, lose(e, "e1", TL_LOSS_PENDING, false));
  OOM_SWEEP(e, lose(e, "e1", TL_LOSS_EXITED, true));
  OOM_SWEEP(e, lose(e, "e2", TL_LOSS_PROCESS_LOST, true));
  OOM_SWEEP(e, tl_cancel_stage(e->s, 0, "oom sweep cancel"));
  OOM_SWEEP(e, tl_cancel_stage(e->s, 1, "oom sweep cancel"));
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* "A loss that could not get memory is retried by the next call": tl_tick answers 0 and
 * changes nothing until it can make the heartbeat-expiry loss. */
START_TEST(oom_tick_retries_a_heartbeat_expiry) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 10 * TLT_SEC;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_run(e, "e1", l[0].tid);
  e->now += 11 * TLT_SEC;
  uint64_t k = 1;
  for (;; k++) {
    ck_assert_uint_lt(k, 1000);
    tl_stats before = tlt_stats(e);
    size_t nev = e->nev;
    tlt_alloc_fail_at(k);
    uint64_t next = tl_tick(e->s);
    bool hit = tlt_alloc_failed();
    tlt_alloc_fail_at(0);
    TLT_CHECK(e);
    if (tlt_stats(e).executors_alive == 0)
      break;
    ck_assert_msg(hit, "tl_tick did not expire a silent executor");
    ck_assert_uint_eq(next, 0);
    tl_stats after = tlt_stats(e);
    tlt_assert_stats_same_but_memory(&before, &after, "tl_tick under ENOMEM");
    ck_assert_uint_eq(e->nev, nev);
  }
  const tlt_event *lost = tlt_last(e, TLT_EV_LOST);
  ck_assert_ptr_nonnull(lost);
  ck_assert_int_eq(lost->loss.kind, TL_LOSS_HEARTBEAT_TIMEOUT);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_LOST), 1);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* Rounds of more offers and launches than fit on the stack, and bursts of events larger than
 * the event queue's initial capacity. */
START_TEST(oom_sweep_large_rounds_and_event_bursts) {
  uint64_t oom_failures = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  enum { NEXEC = 20 };
  tl_offer o[NEXEC];
  char ids[NEXEC][8];
  for (int i = 0; i < NEXEC; i++) {
    snprintf(ids[i], sizeof ids[i], "x%d", i);
    tlt_add(e, ids[i], "h1", NULL, 2);
    o[i].executor_id = ids[i];
    o[i].cores = 2;
  }
  tlt_submit(e, 0, 0, 0, 50);
  tl_launch l[64];
  size_t n = 0;
  OOM_SWEEP(e, offers_n(e, o, NEXEC, l, 64, &n));
  ck_assert_uint_eq(n, 2 * NEXEC);
  OOM_SWEEP(e, tl_kill_stage(e->s, 0, true, "burst"));
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_KILL), 2 * NEXEC);
  OOM_SWEEP(e, lose(e, "x0", TL_LOSS_PENDING, false));
  OOM_SWEEP(e, tl_cancel_stage(e->s, 0, "burst"));
  OOM_SWEEP(e, lose(e, "x0", TL_LOSS_EXITED, true));
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* The pending-loss deadline and tombstone expiry of tl_tick, with allocations failing: the tick
 * answers 0 and changes nothing until it can do the work. */
START_TEST(oom_tick_retries_a_pending_loss_deadline) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 0;
  cfg.pending_loss_timeout_ns = 5 * TLT_SEC;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_run(e, "e1", l[0].tid);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  e->now += 6 * TLT_SEC;
  for (uint64_t k = 1;; k++) {
    ck_assert_uint_lt(k, 1000);
    tl_stats before = tlt_stats(e);
    size_t nev = e->nev;
    tlt_alloc_fail_at(k);
    uint64_t next = tl_tick(e->s);
    bool hit = tlt_alloc_failed();
    tlt_alloc_fail_at(0);
    TLT_CHECK(e);
    if (tlt_stats(e).executors_pending_loss == 0)
      break;
    ck_assert_msg(hit, "tl_tick did not end a pending loss past its deadline");
    ck_assert_uint_eq(next, 0);
    tl_stats after = tlt_stats(e);
    tlt_assert_stats_same_but_memory(&before, &after, "tl_tick under ENOMEM");
    ck_assert_uint_eq(e->nev, nev);
  }
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_ENDED), 2);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* tl_scheduler_free has no TL_ENOMEM: with every allocation failing it still releases every
 * task set (more than fit in the event queue's initial capacity) and frees everything. */
START_TEST(scheduler_free_needs_no_memory) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  enum { NSETS = 40 };
  for (uint32_t i = 0; i < NSETS; i++)
    tlt_submit(e, i, 0, 0, 3);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  tlt_alloc_fail_from(1);
  int rc = tl_scheduler_free(e->s);
  tlt_alloc_fail_from(0);
  ck_assert_int_eq(rc, TL_OK);
  e->s = NULL;
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_RELEASED), NSETS);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_RELEASED), e->nev - mark);
  ck_assert_msg(tlt_alloc_live_blocks() == 0, "tl_scheduler_free left %zu blocks",
                tlt_alloc_live_blocks());
  tlt_end_freed(e);
  tlt_alloc_restore();
}
END_TEST

Suite *tl_errors_suite(void) {
  Suite *s = suite_create("errors");
  TCase *tc = tlt_tcase(s, "table");
  tcase_add_test(tc, error_names_and_sentences_come_from_the_table);
  tcase_add_test(tc, error_codes_are_distinct_and_negative_and_ok_is_zero);
  tcase_add_test(tc, unknown_codes_get_a_name_and_a_sentence);
  tcase_add_test(tc, version_matches_the_header);
  tc = tlt_tcase(s, "config");
  tcase_add_test(tc, config_init_fills_the_documented_defaults);
  tcase_add_test(tc, scheduler_new_rejects_null_out_and_out_of_range_config);
  tcase_add_test(tc, scheduler_new_rejects_zero_cpus_per_task);
  tcase_add_test(tc, scheduler_new_accepts_the_range_boundaries);
  tcase_add_test(tc, scheduler_new_copies_the_config);
  tcase_add_test(tc, scheduler_free_null_is_einval);
  tc = tlt_tcase(s, "allocator");
  tcase_add_test(tc, replace_allocator_rejects_null_functions);
  tcase_add_test(tc, replace_allocator_is_ebusy_while_a_scheduler_exists);
  tcase_add_test(tc, scheduler_accounting_matches_the_counting_allocator);
  tcase_add_test(tc, two_schedulers_account_their_own_memory);
  tc = tlt_tcase(s, "oom");
  tcase_add_test(tc, oom_sweep_scheduler_new);
  tcase_add_test(tc, oom_sweep_executors_and_submissions);
  tcase_add_test(tc, oom_sweep_offers_updates_and_kills);
  tcase_add_test(tc, oom_sweep_executor_loss_and_cancel);
  tcase_add_test(tc, oom_tick_retries_a_heartbeat_expiry);
  tcase_add_test(tc, oom_sweep_large_rounds_and_event_bursts);
  tcase_add_test(tc, oom_tick_retries_a_pending_loss_deadline);
  tcase_add_test(tc, scheduler_free_needs_no_memory);
  return s;
}

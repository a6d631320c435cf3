/* The error table (tl_err_name, tl_strerror), the version, configuration validation, and the
 * replaceable allocator: a counting allocator that must agree with the scheduler's accounting,
 * and TL_EBUSY while a scheduler exists. The out-of-memory sweeps are in test_oom.c.
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
  ck_assert_uint_eq(NERRORS, 15);
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
  const int unknown[] = {-16, -100, 1, 42, INT_MIN, INT_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    ck_assert_str_eq(tl_err_name(unknown[i]), "UNKNOWN");
    ck_assert_str_eq(tl_strerror(unknown[i]), "Unknown error.");
  }
}
END_TEST

/* Each enum's names come from its map: every value named, in order from 0, distinct, and anything
 * outside the enum is "UNKNOWN". A name written by hand would drift (the journal's copy once
 * lacked RESULT_TOO_LARGE). */
#define TLT_NAME_CHECK(fn, type, map, prefix)                                                      \
  do {                                                                                             \
    int n_ = 0;                                                                                    \
    map(TLT_NAME_ROW_##prefix) ck_assert_str_eq(fn((type)n_), "UNKNOWN");                          \
    ck_assert_str_eq(fn((type)-1), "UNKNOWN");                                                     \
    for (int i_ = 0; i_ < n_; i_++)                                                                \
      for (int j_ = i_ + 1; j_ < n_; j_++)                                                         \
        ck_assert_str_ne(fn((type)i_), fn((type)j_));                                              \
  } while (0)
#define TLT_NAME_ROW(full, name, value)                                                            \
  ck_assert_int_eq((int)(full), n_);                                                               \
  ck_assert_int_eq((value), n_);                                                                   \
  ck_assert_str_eq(fn_(full), #name);                                                              \
  n_++;
#define TLT_NAME_ROW_END(name, value) TLT_NAME_ROW(TL_END_##name, name, value)
#define TLT_NAME_ROW_LOSS(name, value) TLT_NAME_ROW(TL_LOSS_##name, name, value)
#define TLT_NAME_ROW_LOC(name, value) TLT_NAME_ROW(TL_##name, name, value)
#define TLT_NAME_ROW_TASK(name, value) TLT_NAME_ROW(TL_TASK_##name, name, value)
#define TLT_NAME_ROW_EXECUTOR(name, value) TLT_NAME_ROW(TL_EXECUTOR_##name, name, value)

START_TEST(enum_names_come_from_their_maps) {
#define fn_ tl_end_kind_name
  TLT_NAME_CHECK(tl_end_kind_name, tl_end_kind, TL_END_KIND_MAP, END);
#undef fn_
#define fn_ tl_loss_kind_name
  TLT_NAME_CHECK(tl_loss_kind_name, tl_loss_kind, TL_LOSS_KIND_MAP, LOSS);
#undef fn_
#define fn_ tl_locality_name
  TLT_NAME_CHECK(tl_locality_name, tl_locality, TL_LOCALITY_MAP, LOC);
#undef fn_
#define fn_ tl_task_state_name
  TLT_NAME_CHECK(tl_task_state_name, tl_task_state, TL_TASK_STATE_MAP, TASK);
#undef fn_
#define fn_ tl_executor_state_name
  TLT_NAME_CHECK(tl_executor_state_name, tl_executor_state, TL_EXECUTOR_STATE_MAP, EXECUTOR);
#undef fn_
  /* The names the journal and tl_explain_taskset print. */
  ck_assert_str_eq(tl_end_kind_name(TL_END_RESULT_TOO_LARGE), "RESULT_TOO_LARGE");
  ck_assert_str_eq(tl_loss_kind_name(TL_LOSS_PENDING_TIMEOUT), "PENDING_TIMEOUT");
  ck_assert_str_eq(tl_locality_name(TL_RACK_LOCAL), "RACK_LOCAL");
  ck_assert_str_eq(tl_task_state_name(TL_TASK_KILLED), "KILLED");
  ck_assert_str_eq(tl_executor_state_name(TL_EXECUTOR_PENDING_LOSS), "PENDING_LOSS");
}
END_TEST

START_TEST(version_matches_the_header) {
  ck_assert_uint_eq(tl_version(), TL_VERSION_HEX);
  ck_assert_uint_eq(TL_VERSION_HEX, 0x000200);
  ck_assert_str_eq(tl_version_string(), "0.2.0");
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

Suite *tl_errors_suite(void) {
  Suite *s = suite_create("errors");
  TCase *tc = tlt_tcase(s, "table");
  tcase_add_test(tc, error_names_and_sentences_come_from_the_table);
  tcase_add_test(tc, error_codes_are_distinct_and_negative_and_ok_is_zero);
  tcase_add_test(tc, unknown_codes_get_a_name_and_a_sentence);
  tcase_add_test(tc, enum_names_come_from_their_maps);
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
  return s;
}

/* The offer shuffle (tl_config.offer_shuffle, Spark's TaskSchedulerImpl.shuffleOffers): its
 * settings' checks, the caller's order kept exactly while it is off, a run the same under a
 * seed and another under another seed, the spread over executors against the round-robin's
 * first offer, launches reported against the caller's offers (on the stack and past it), the
 * sequence continued by a restored scheduler, and the journal's replay.
 */
#include "harness.h"

#include <inttypes.h>

#include "../examples/replay/replay.h"

#define NEXEC 4   /* executors of the runs below, one core each */
#define ROUNDS 24 /* rounds of one task each */

static const char *const ids[NEXEC] = {"e1", "e2", "e3", "e4"};

static tl_config shuffle_config(bool on, uint64_t seed) {
  tl_config cfg = tlt_config();
  cfg.offer_shuffle = on;
  cfg.offer_shuffle_seed = seed;
  return cfg;
}

static void add_all(tlt_env *e) {
  for (int i = 0; i < NEXEC; i++)
    tlt_add(e, ids[i], ids[i], NULL, 1);
}

/* n rounds: each submits a task set of one task, offers every executor a core in the order of
 * ids, and finishes the launch; picks[k] is the executor (0 .. NEXEC - 1) round k launched on.
 * Each launch names the caller's offer it came from. */
static void rounds(tlt_env *e, int n, int *picks) {
  tl_offer offers[NEXEC];
  for (int i = 0; i < NEXEC; i++)
    offers[i] = (tl_offer){ids[i], 1};
  for (int k = 0; k < n; k++) {
    tl_taskset_id ts = tlt_submit(e, (uint32_t)(1000 + k), 0, 0, 1);
    tl_launch l;
    ck_assert_uint_eq(tlt_offers(e, offers, NEXEC, &l, 1), 1);
    ck_assert_uint_lt(l.offer, NEXEC);
    ck_assert_ptr_eq(l.executor_id, offers[l.offer].executor_id); /* the caller's string */
    picks[k] = (int)l.offer;
    tlt_succeed(e, l.executor_id, l.tid);
    ck_assert_uint_eq(tlt_released(e, ts), 1);
  }
}

/* A fresh scheduler's picks over ROUNDS rounds. */
static void run_picks(bool on, uint64_t seed, int *picks) {
  tl_config cfg = shuffle_config(on, seed);
  tlt_env *e = tlt_new(&cfg);
  add_all(e);
  rounds(e, ROUNDS, picks);
  tlt_end(e);
}

static int distinct(const int *picks, int n) {
  bool seen[NEXEC] = {false};
  int d = 0;
  for (int k = 0; k < n; k++)
    if (!seen[picks[k]]) {
      seen[picks[k]] = true;
      d++;
    }
  return d;
}

/* Off by default; a seed needs the shuffle (as speculation's threshold needs speculation);
 * any seed, 0 included, goes with it. */
START_TEST(the_settings_are_checked) {
  tl_config cfg;
  tl_config_init(&cfg);
  ck_assert(!cfg.offer_shuffle);
  ck_assert_uint_eq(cfg.offer_shuffle_seed, 0);
  tl_scheduler *s = NULL;
  cfg.offer_shuffle_seed = 7;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  ck_assert_ptr_null(s);
  uint64_t seeds[3] = {0, 7, UINT64_MAX};
  for (int i = 0; i < 3; i++) {
    cfg.offer_shuffle = true;
    cfg.offer_shuffle_seed = seeds[i];
    ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_OK);
    char why[256];
    ck_assert_int_eq(tl_check(s, why, sizeof why), TL_OK);
    ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
  }
}
END_TEST

/* Off: today's round-robin from the caller's first offer, so one task always lands on e1. On:
 * the same seed gives the same run, another seed another run, and one task a round spreads
 * over the executors. */
START_TEST(a_seed_decides_the_order_and_spreads_the_load) {
  int off[ROUNDS], a[ROUNDS], again[ROUNDS], b[ROUNDS];
  run_picks(false, 0, off);
  for (int k = 0; k < ROUNDS; k++)
    ck_assert_int_eq(off[k], 0);
  run_picks(true, 42, a);
  run_picks(true, 42, again);
  ck_assert_mem_eq(a, again, sizeof a);
  run_picks(true, 43, b);
  ck_assert_msg(memcmp(a, b, sizeof a) != 0, "seeds 42 and 43 drew the same %d rounds", ROUNDS);
  /* 24 draws of 4: every executor is picked (a fixed outcome of the seeds, far from chance's
   * edge: a uniform draw leaves one out with probability below 0.01). */
  ck_assert_int_eq(distinct(a, ROUNDS), NEXEC);
  ck_assert_int_eq(distinct(b, ROUNDS), NEXEC);
}
END_TEST

/* A round of many tasks: launches in out are in launch order (tids ascending), every offer is
 * used once, and each launch names the caller's offer of its executor; the task indices follow
 * the drawn order, not the caller's. With more offers than the stack holds, the same. */
static void whole_round(uint32_t n, uint64_t seed) {
  tl_config cfg = shuffle_config(true, seed);
  tlt_env *e = tlt_new(&cfg);
  char(*names)[16] = calloc(n, sizeof *names);
  tl_offer *offers = calloc(n, sizeof *offers);
  tl_launch *l = calloc(n + 1, sizeof *l);
  bool *used = calloc(n, sizeof *used);
  ck_assert(names != NULL && offers != NULL && l != NULL && used != NULL);
  for (uint32_t i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], "x%u", i);
    tlt_add(e, names[i], names[i], NULL, 1);
    offers[i] = (tl_offer){names[i], 1};
  }
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, n);
  ck_assert_uint_eq(tlt_offers(e, offers, n, l, n + 1), n);
  bool in_caller_order = true;
  for (uint32_t k = 0; k < n; k++) {
    ck_assert_uint_eq(l[k].index, k); /* the pass gives indices in the order it visits */
    ck_assert_uint_eq(l[k].tid, l[0].tid + k);
    ck_assert_uint_lt(l[k].offer, n);
    ck_assert(!used[l[k].offer]);
    used[l[k].offer] = true;
    ck_assert_ptr_eq(l[k].executor_id, offers[l[k].offer].executor_id);
    ck_assert_uint_eq(tlt_ex(e, names[l[k].offer]).free_cores, 0);
    in_caller_order = in_caller_order && l[k].offer == k;
  }
  ck_assert_msg(!in_caller_order, "%u offers drawn in the caller's order", n);
  for (uint32_t k = 0; k < n; k++)
    tlt_succeed(e, l[k].executor_id, l[k].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
  free(names);
  free(offers);
  free(l);
  free(used);
}

START_TEST(launches_name_the_callers_offers) {
  whole_round(8, 1);
  whole_round(40, 2); /* past the stack's 16: the order's block is allocated and freed */
}
END_TEST

/* Two offers naming one executor are one slot: its launches name one of them. */
START_TEST(duplicate_offers_are_one_slot) {
  tl_config cfg = shuffle_config(true, 9);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_offer offers[3] = {{"e1", 1}, {"e2", 2}, {"e1", 1}};
  /* Named by one of the offers naming it: the first in the drawn order. */
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offers(e, offers, 3, l, 4), 4);
  unsigned on_e1 = 0;
  for (int k = 0; k < 4; k++) {
    ck_assert_str_eq(offers[l[k].offer].executor_id, l[k].executor_id);
    on_e1 += strcmp(l[k].executor_id, "e1") == 0;
  }
  ck_assert_uint_eq(on_e1, 2);
  for (int k = 0; k < 4; k++)
    tlt_succeed(e, l[k].executor_id, l[k].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Snapshot and restore
 * ------------------------------------------------------------------------------------------- */

static void *resolve_executor(void *ud, const char *id, const char *host) {
  (void)host;
  return tlt_ud_for(ud, id);
}

/* Replaces e's scheduler (drained: no task set) with one restored from im under e's config with
 * cfg's shuffle settings, its executors reconciled (nothing ran on them). */
static void restore(tlt_env *e, tlt_image *im, const tl_config *cfg) {
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  e->s = NULL;
  tl_callbacks cb = tlt_callbacks(e);
  cb.executor_restored = resolve_executor;
  im->at = 0;
  tl_config with = e->cfg; /* the env's clock */
  with.offer_shuffle = cfg->offer_shuffle;
  with.offer_shuffle_seed = cfg->offer_shuffle_seed;
  ck_assert_int_eq(tl_scheduler_restore(&with, &cb, tlt_image_read, im, &e->s), TL_OK);
  TLT_CHECK(e);
  for (int i = 0; i < NEXEC; i++) {
    size_t nunknown = 1;
    TLT_OK(e, tl_executor_reconcile(e->s, ids[i], NULL, 0, NULL, 0, &nunknown));
    ck_assert_uint_eq(nunknown, 0);
  }
}

/* A scheduler restored from an image continues the image's sequence, whatever its own seed; a
 * config without the shuffle restores to the caller's order; a scheduler without the shuffle
 * writes no shuffle state, and a restore with the shuffle then starts at its own seed. */
START_TEST(a_restored_scheduler_continues_the_sequence) {
  int then[ROUNDS], restored[ROUNDS], fresh[ROUNDS];
  tl_config cfg = shuffle_config(true, 1234);
  tlt_env *e = tlt_new(&cfg);
  add_all(e);
  /* Rounds with nothing to launch move the sequence on as well (the image then holds no
   * released task set, which the envs below could not account for). */
  tl_offer offers[NEXEC];
  for (int i = 0; i < NEXEC; i++)
    offers[i] = (tl_offer){ids[i], 1};
  for (int k = 0; k < 5; k++)
    ck_assert_uint_eq(tlt_offers(e, offers, NEXEC, NULL, 0), 0);
  tlt_image im = {0};
  ck_assert_int_eq(tl_snapshot(e->s, tlt_image_write, &im), TL_OK);
  TLT_CHECK(e);
  rounds(e, ROUNDS / 2, then);
  tlt_end(e);
  e = tlt_new(&cfg); /* the same seed without those five rounds draws otherwise */
  add_all(e);
  rounds(e, ROUNDS / 2, fresh);
  tlt_end(e);
  ck_assert(memcmp(fresh, then, sizeof then[0] * (ROUNDS / 2)) != 0);

  /* Each restore in an env of its own: the restored scheduler gives the task set ids again. */
  tl_config other = shuffle_config(true, 99); /* not the image's: the image's position wins */
  e = tlt_new(&other);
  add_all(e);
  restore(e, &im, &other);
  rounds(e, ROUNDS / 2, restored);
  ck_assert_mem_eq(then, restored, sizeof then[0] * (ROUNDS / 2));
  tlt_end(e);

  tl_config off = shuffle_config(false, 0);
  e = tlt_new(&off);
  add_all(e);
  restore(e, &im, &off);
  rounds(e, ROUNDS / 2, restored);
  for (int k = 0; k < ROUNDS / 2; k++)
    ck_assert_int_eq(restored[k], 0);
  tlt_end(e);
  free(im.p);

  /* An image without the shuffle: a restore with it starts at its own seed, as a fresh
   * scheduler does. */
  tl_config plain = shuffle_config(false, 0);
  e = tlt_new(&plain);
  add_all(e);
  im = (tlt_image){0};
  ck_assert_int_eq(tl_snapshot(e->s, tlt_image_write, &im), TL_OK);
  restore(e, &im, &other);
  rounds(e, ROUNDS / 2, restored);
  tlt_end(e);
  free(im.p);
  e = tlt_new(&other);
  add_all(e);
  rounds(e, ROUNDS / 2, fresh);
  tlt_end(e);
  ck_assert_mem_eq(fresh, restored, sizeof fresh[0] * (ROUNDS / 2));
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Journal and replay
 * ------------------------------------------------------------------------------------------- */

/* The config line carries the setting and the seed (only when on), and the journal replays
 * to the same launches: each finish names the executor its launch went to, so a replay that
 * drew another order would fail it. With the seed changed in the journal, it does. */
START_TEST(the_journal_carries_the_seed_and_replays) {
  for (int on = 0; on < 2; on++) {
    tlt_journal c = {0};
    tl_config cfg = shuffle_config(on, on ? 77 : 0);
    cfg.journal = tlt_journal_line;
    cfg.journal_ud = &c;
    tlt_env *e = tlt_new(&cfg);
    ck_assert((strstr(c.text, " offer_shuffle=1 offer_shuffle_seed=77") != NULL) == (on != 0));
    ck_assert((strstr(c.text, "offer_shuffle") != NULL) == (on != 0));
    add_all(e);
    int picks[ROUNDS];
    rounds(e, ROUNDS, picks);
    tlt_end(e);
    tlr_report r;
    int verdict = tlr_replay_text(c.text, NULL, &r);
    ck_assert_msg(verdict == TLR_OK, "%d at line %zu: %s", verdict, r.bad_line, r.why);
    ck_assert_uint_eq(r.final.launched, ROUNDS);
    if (on) {
      char *seed = strstr(c.text, "offer_shuffle_seed=77");
      seed[strlen("offer_shuffle_seed=7")] = '8';
      verdict = tlr_replay_text(c.text, NULL, &r);
      ck_assert_msg(verdict == TLR_BROKEN, "replay under another seed: %d", verdict);
    }
    free(c.text);
  }
}
END_TEST

Suite *tl_shuffle_suite(void) {
  Suite *s = suite_create("shuffle");
  TCase *tc = tlt_tcase(s, "shuffle");
  tcase_add_test(tc, the_settings_are_checked);
  tcase_add_test(tc, a_seed_decides_the_order_and_spreads_the_load);
  tcase_add_test(tc, launches_name_the_callers_offers);
  tcase_add_test(tc, duplicate_offers_are_one_slot);
  tcase_add_test(tc, a_restored_scheduler_continues_the_sequence);
  tcase_add_test(tc, the_journal_carries_the_seed_and_replays);
  return s;
}

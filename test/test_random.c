/* Seeded randomized runs: generated operation sequences (ops.h) checked call by call, event by
 * event and counter by counter against a reference model, each run ending drained with memory
 * back to the empty scheduler's. A failing seed is printed with the command that replays it.
 *
 * Environment: TL_RANDOM_SEEDS (default 10000), TL_RANDOM_FROM (first seed, default 1),
 * TL_RANDOM_OPS (operations per seed, default 100).
 */
#include "harness.h"
#include "ops.h"

#include "../examples/replay/replay.h"

#include <inttypes.h>

static uint64_t env_u64(const char *name, uint64_t dflt) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0')
    return dflt;
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  ck_assert_msg(*end == '\0', "%s=%s is not a number", name, v);
  return (uint64_t)n;
}

static void run_seeds(uint64_t from, uint64_t count, uint64_t nops) {
  for (uint64_t seed = from; seed < from + count; seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, (size_t)nops, NULL, &out);
    ck_assert_msg(out.ok,
                  "seed %" PRIu64 " failed at op %zu: %s\n"
                  "replay it with: tl-random --seed %" PRIu64 " --ops %" PRIu64,
                  seed, out.failed_op, out.message, seed, nops);
  }
}

/* The CI range: short runs, many configurations. */
START_TEST(seeded_runs_agree_with_the_model) {
  run_seeds(env_u64("TL_RANDOM_FROM", 1), env_u64("TL_RANDOM_SEEDS", 10000),
            env_u64("TL_RANDOM_OPS", 100));
}
END_TEST

/* Longer runs reach what short ones rarely do: many generations per slot, evicted tombstones
 * whose ids are registered again, task sets retried until they abort, hundreds of attempts in
 * flight. A twentieth as many seeds, ten times as long, from seed 1,000,000,000 + the first. */
START_TEST(long_seeded_runs_agree_with_the_model) {
  uint64_t count = env_u64("TL_RANDOM_SEEDS", 10000) / 20;
  run_seeds(UINT64_C(1000000000) + env_u64("TL_RANDOM_FROM", 1), count == 0 ? 1 : count,
            10 * env_u64("TL_RANDOM_OPS", 100));
}
END_TEST

/* A generated program written as bytes replays exactly: the fuzzer's decoder and the
 * generator's encoder agree, so a seed can become a corpus file. */
START_TEST(an_encoded_run_replays_exactly) {
  for (uint64_t seed = 1; seed <= 50; seed++) {
    uint8_t buf[16384];
    size_t len = 0;
    tlo_options opt = {0};
    opt.encoded = buf;
    opt.encoded_cap = sizeof buf;
    opt.encoded_len = &len;
    tlo_outcome gen, replay;
    tlo_run_seed(seed, 150, &opt, &gen);
    ck_assert_msg(gen.ok, "seed %" PRIu64 ": %s", seed, gen.message);
    ck_assert_uint_le(len, sizeof buf);
    tlo_run_bytes(buf, len, NULL, &replay);
    ck_assert_msg(replay.ok, "replay of seed %" PRIu64 ": %s", seed, replay.message);
    ck_assert_uint_eq(replay.ops, gen.ops);
    ck_assert_uint_eq(replay.calls, gen.calls);
    ck_assert_uint_eq(replay.events, gen.events);
    ck_assert_uint_eq(replay.launched, gen.launched);
    ck_assert_uint_eq(replay.errors, gen.errors);
    ck_assert_uint_eq(replay.reentrant, gen.reentrant);
  }
}
END_TEST

/* Every operation survives the codec unchanged, whatever its bytes. */
START_TEST(decoding_reverses_encoding) {
  uint64_t x = 42;
  for (int i = 0; i < 20000; i++) {
    uint8_t raw[64];
    for (size_t k = 0; k < sizeof raw; k++) {
      x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
      raw[k] = (uint8_t)(x >> 56);
    }
    tlo_op op, again;
    size_t n = tlo_decode_op(raw, sizeof raw, &op);
    ck_assert_uint_gt(n, 0);
    uint8_t enc[64];
    ck_assert_uint_eq(tlo_encode_op(&op, enc, sizeof enc), n);
    ck_assert_mem_eq(enc, raw, n);
    ck_assert_uint_eq(tlo_decode_op(enc, n, &again), n);
    ck_assert_mem_eq(&again, &op, sizeof op);
    ck_assert_uint_eq(tlo_decode_op(enc, n - 1, &again), 0); /* a cut operation is dropped */
  }
}
END_TEST

/* Any byte string is a valid program and ends drained: what the fuzzer relies on, tried here on
 * random bytes without libFuzzer. */
START_TEST(random_bytes_are_valid_programs) {
  uint64_t x = 7;
  static uint8_t buf[4096];
  for (int i = 0; i < 300; i++) {
    x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    size_t len = (size_t)(x >> 33) % sizeof buf;
    for (size_t k = 0; k < len; k++) {
      x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
      buf[k] = (uint8_t)(x >> 56);
    }
    tlo_outcome out;
    tlo_run_bytes(buf, len, NULL, &out);
    ck_assert_msg(out.ok, "random input %d (%zu bytes): %s", i, len, out.message);
  }
}
END_TEST

/* The journal of a run replays to the same state: every call returns what it returned, and
 * tl_stats just before tl_scheduler_free is the same (but for mem_live_bytes: capacity grows as
 * the original's callbacks made it grow). Runs that end freeing work still in flight replay to
 * the same "not drained" state. */
typedef struct text_sink {
  char *buf;
  size_t len, cap;
} text_sink;

static void sink_line(void *ud, const char *line) {
  text_sink *t = ud;
  size_t n = strlen(line);
  if (t->len + n + 2 > t->cap) {
    t->cap = (t->len + n + 2) * 2;
    t->buf = realloc(t->buf, t->cap);
    ck_assert_ptr_nonnull(t->buf);
  }
  memcpy(t->buf + t->len, line, n);
  t->len += n;
  t->buf[t->len++] = '\n';
  t->buf[t->len] = '\0';
}

START_TEST(journals_of_seeded_runs_replay_to_the_same_state) {
  uint64_t count = env_u64("TL_RANDOM_SEEDS", 10000) / 25, replayed = 0;
  for (uint64_t seed = 1; seed <= (count == 0 ? 1 : count); seed++) {
    text_sink t = {0};
    tlo_options opt = {0};
    opt.journal = sink_line;
    opt.journal_ud = &t;
    opt.no_failover = seed % 2 == 0; /* half the runs without failover: their journals replay */
    tlo_outcome out;
    tlo_run_seed(seed, 100, &opt, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    ck_assert_msg(out.has_final && t.buf != NULL, "seed %" PRIu64 ": no journal", seed);
    if (out.restores > 0 || out.reconcile_calls > 0) {
      /* A restored scheduler's journal starts with a `restore` line, which tl-replay does not
       * replay (the snapshot is not in the journal); nor does it replay a `reconcile` line,
       * even one that answered TL_ENOENT or TL_ESTATE in a scheduler never restored. */
      free(t.buf);
      continue;
    }
    replayed++;
    tlr_report r;
    int verdict = tlr_replay_text(t.buf, NULL, &r);
    ck_assert_msg(verdict == TLR_OK || verdict == TLR_NOT_DRAINED,
                  "seed %" PRIu64 ": replay %d at line %zu: %s", seed, verdict, r.bad_line, r.why);
    /* Spare grant blocks (resources) depend on when events are delivered: an attempt's grant
     * block goes back to the spares only when its task_ended has been delivered, so a call made
     * from a callback, while the events of the call before are undelivered, cannot reuse those
     * blocks and allocates others, which are spares afterwards. The replay delivers each call's
     * events before the next call: it may hold fewer blocks than the run, never more. */
    if (out.resources) {
      ck_assert_msg(r.final.mem_live_blocks <= out.final.mem_live_blocks,
                    "seed %" PRIu64 ": the replay holds %zu blocks, the run %zu", seed,
                    r.final.mem_live_blocks, out.final.mem_live_blocks);
      out.final.mem_live_blocks = r.final.mem_live_blocks;
    }
    out.final.mem_live_bytes = r.final.mem_live_bytes;
    tlt_assert_stats_same(&out.final, &r.final, "replayed run");
    free(t.buf);
  }
  ck_assert_uint_gt(replayed, 0);
}
END_TEST

/* Resources reach what they are for (ops_resource.c): executors that declare addresses, task
 * sets that ask for whole ones and shares, launches that hold them, rounds through
 * tl_resource_offers_grants (some cut short by a small grants array), slots passed over for
 * another profile or too few free addresses, barrier task sets launched with their addresses;
 * every run agreeing with the model, its books compared after every operation. */
START_TEST(seeded_runs_with_resources) {
  tlo_outcome sum = {0};
  uint64_t runs = 0;
  for (uint64_t seed = 1; seed <= 300; seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 150, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    if (!out.resources) {
      for (int f = 0; f < TLO_RF_N; f++)
        ck_assert_uint_eq(out.resource_features[f], 0);
      continue;
    }
    runs++;
    for (int f = 0; f < TLO_RF_N; f++)
      sum.resource_features[f] += out.resource_features[f];
  }
  ck_assert_uint_gt(runs, 50);
  for (int f = 0; f < TLO_RF_N; f++)
    ck_assert_msg(sum.resource_features[f] > 0, "resource feature %d never reached", f);
  ck_assert_uint_gt(sum.resource_features[TLO_RF_LAUNCHES], 1000);
  ck_assert_uint_gt(sum.resource_features[TLO_RF_SHARED], 300);
}
END_TEST

/* The retry policy and tags reach what they are for (ops_policy.c): kill and cancel by tag that
 * touch task sets, task sets aborted by a no_retry failure and at a limit of their own; every
 * run agreeing with the model, which compares each task set's limit and tags after every
 * operation. Runs without the policy bytes reach none of it. */
/* Hard placement reaches what it is for (ops_placement.c): task sets placed, slots turned away,
 * task sets no live executor satisfies, and rescues by an executor that joins; every run
 * agreeing with the model, which compares each task set's placement, tasksets_unplaceable and
 * tl_check's counts after every operation. Runs without the placement bytes reach none of it. */
START_TEST(seeded_runs_with_placement) {
  tlo_outcome sum = {0};
  uint64_t runs = 0;
  for (uint64_t seed = 1; seed <= 120; seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 150, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    if (!out.placement) {
      ck_assert_uint_eq(out.pl_placed + out.pl_blocked + out.pl_waits + out.pl_rescues, 0);
      continue;
    }
    runs++;
    sum.pl_placed += out.pl_placed;
    sum.pl_blocked += out.pl_blocked;
    sum.pl_waits += out.pl_waits;
    sum.pl_rescues += out.pl_rescues;
  }
  ck_assert_uint_gt(runs, 20);
  ck_assert_uint_gt(sum.pl_placed, 50);
  ck_assert_uint_gt(sum.pl_blocked, 100);
  ck_assert_uint_gt(sum.pl_waits, 10);
  ck_assert_uint_gt(sum.pl_rescues, 2);
}
END_TEST

START_TEST(seeded_runs_with_the_retry_policy_and_tags) {
  tlo_outcome sum = {0};
  uint64_t runs = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 150, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    if (!out.policy) {
      ck_assert_uint_eq(out.tag_ops + out.no_retry_aborts + out.own_limit_aborts, 0);
      continue;
    }
    runs++;
    sum.tag_ops += out.tag_ops;
    sum.tag_touched += out.tag_touched;
    sum.no_retry_aborts += out.no_retry_aborts;
    sum.own_limit_aborts += out.own_limit_aborts;
  }
  ck_assert_uint_gt(runs, 40);
  ck_assert_uint_gt(sum.tag_ops, 50);
  ck_assert_uint_gt(sum.tag_touched, 20);
  ck_assert_uint_gt(sum.no_retry_aborts, 10);
  ck_assert_uint_gt(sum.own_limit_aborts, 5);
}
END_TEST

/* Demand events (ops_demand.c): the programs chosen run with them, each checking after every
 * operation that its calls made at most one demand event each, none repeating the last, and
 * that the last one's totals are tl_stats'; the others make none. Both unschedulable states
 * are reached. */
START_TEST(seeded_runs_with_demand_events) {
  uint64_t runs = 0, demand = 0, unsched = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 150, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    if (!out.demand) {
      ck_assert_uint_eq(out.demand_events + out.unschedulable_events, 0);
      continue;
    }
    runs++;
    demand += out.demand_events;
    unsched += out.unschedulable_events;
  }
  ck_assert_uint_gt(runs, 50);
  ck_assert_uint_gt(demand, 1000);
  ck_assert_uint_gt(unsched, 5);
}
END_TEST

/* Speculation's duration threshold and decommission kill interval are reached: runs that set
 * them speculate by each rule, runs that do not never do. Seeds from 1 until both rules were
 * reached in 20 runs that set them or more (some 90 seeds), 300 at most. */
START_TEST(seeded_runs_speculate_by_threshold_and_kill) {
  uint64_t runs = 0, threshold = 0, decom = 0;
  for (uint64_t seed = 1; seed <= 300 && (runs < 20 || threshold == 0 || decom == 0); seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 150, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    if (!out.spec_settings) {
      ck_assert_uint_eq(out.spec_threshold + out.spec_decom, 0);
      continue;
    }
    runs++;
    threshold += out.spec_threshold;
    decom += out.spec_decom;
  }
  ck_assert_uint_ge(runs, 20);
  ck_assert_uint_gt(threshold, 0);
  ck_assert_uint_gt(decom, 0);
}
END_TEST

/* The offer shuffle (ops_shuffle.c): runs with the shuffle bytes (two seeds in five) draw
 * orders other than the caller's, and the model, predicting each round over the order it drew
 * by the library's rule, agrees on every launch; runs without them draw none. */
START_TEST(seeded_runs_shuffle_offers) {
  uint64_t runs = 0, rounds = 0, pool_sets = 0;
  for (uint64_t seed = 1; seed <= 100; seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 150, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    if (!out.shuffle) {
      ck_assert_uint_eq(out.shuffled_rounds + out.pool_sets, 0);
      continue;
    }
    runs++;
    rounds += out.shuffled_rounds;
    pool_sets += out.pool_sets;
  }
  ck_assert_uint_gt(runs, 25);
  ck_assert_uint_lt(runs, 55);
  ck_assert_uint_gt(rounds, 200);
  ck_assert_uint_gt(pool_sets, 3);
}
END_TEST

/* Nested pools reach what they are for: pools added inside others, rounds whose order the
 * model took depth first through them, and pools tl_submit made under pool_auto_create. */
START_TEST(seeded_runs_nest_pools) {
  tlo_outcome sum = {0};
  for (uint64_t seed = 1; seed <= 200; seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 150, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    sum.nested_pools += out.nested_pools;
    sum.nested_rounds += out.nested_rounds;
    sum.auto_pools += out.auto_pools;
  }
  ck_assert_uint_gt(sum.nested_pools, 10);
  ck_assert_uint_gt(sum.nested_rounds, 50);
  ck_assert_uint_gt(sum.auto_pools, 10);
}
END_TEST

/* The failover operations reach what they are for: restores (and refused ones), executors
 * recovering, payloads withheld, reconciliations that keep, lose and kill (and one that joins
 * the rack another executor gave its host), recovery timeouts. */
START_TEST(seeded_runs_fail_over) {
  tlo_outcome sum = {0};
  /* 300 seeds, and on past them until a reconciliation has joined another rack (a few runs in
   * a thousand do), 2,000 at most. */
  for (uint64_t seed = 1; seed <= 300 || (sum.reracks == 0 && seed <= 2000); seed++) {
    tlo_outcome out;
    tlo_run_seed(seed, 100, NULL, &out);
    ck_assert_msg(out.ok, "seed %" PRIu64 ": %s", seed, out.message);
    sum.restores += out.restores;
    sum.restore_refusals += out.restore_refusals;
    sum.snapshot_errors += out.snapshot_errors;
    sum.recovering += out.recovering;
    sum.payloads_lost += out.payloads_lost;
    sum.reconciles += out.reconciles;
    sum.reconcile_lost += out.reconcile_lost;
    sum.reconcile_unknown += out.reconcile_unknown;
    sum.reconcile_adopted += out.reconcile_adopted;
    sum.reracks += out.reracks;
    sum.recovery_timeouts += out.recovery_timeouts;
  }
  ck_assert_uint_gt(sum.restores, 100);
  ck_assert_uint_gt(sum.restore_refusals, 0);
  ck_assert_uint_gt(sum.snapshot_errors, 0);
  ck_assert_uint_gt(sum.recovering, 100);
  ck_assert_uint_gt(sum.payloads_lost, 0);
  ck_assert_uint_gt(sum.reconciles, 100);
  ck_assert_uint_gt(sum.reconcile_lost, 0);
  ck_assert_uint_gt(sum.reconcile_unknown, 0);
  ck_assert_uint_gt(sum.reconcile_adopted, 0);
  ck_assert_uint_gt(sum.reracks, 0);
  ck_assert_uint_gt(sum.recovery_timeouts, 0);
}
END_TEST

/* Mutated snapshots (tlo_snapshot_fuzz): refused with their error and no callback, or restored
 * to a scheduler that passes tl_check and drains to nothing. TL_RANDOM_SEEDS / 50 seeds (200 by
 * default) of 100 operations, four images each; tl-random --snapshot-fuzz runs more. */
START_TEST(mutated_snapshots_are_refused_or_drain) {
  uint64_t count = env_u64("TL_RANDOM_SEEDS", 10000) / 50;
  uint64_t from = env_u64("TL_RANDOM_FROM", 1), tries = 0, fixed = 0, accepted = 0, refused = 0;
  for (uint64_t seed = from; seed < from + (count == 0 ? 1 : count); seed++) {
    tlo_fuzz_outcome out;
    tlo_snapshot_fuzz(seed, 100, 4, &out);
    ck_assert_msg(
        out.ok, "seed %" PRIu64 ": %s\nreplay it with: tl-random --snapshot-fuzz 1 --from %" PRIu64,
        seed, out.message, seed);
    tries += out.tries;
    fixed += out.fixed;
    accepted += out.accepted;
    refused += out.refused[0] + out.refused[1] + out.refused[2] + out.refused[3];
    ck_assert_uint_eq(out.refused[4], 0);
  }
  ck_assert_uint_eq(accepted + refused, tries);
  if (count >= 100) {
    ck_assert_uint_gt(fixed, 0);
    ck_assert_uint_gt(accepted, 0);
    ck_assert_uint_gt(refused, 0);
  }
}
END_TEST

Suite *tl_random_suite(void) {
  Suite *s = suite_create("random");
  TCase *tc = tlt_tcase(s, "seeds");
  tcase_set_timeout(tc, 600); /* the seed count is set from the environment */
  tcase_add_test(tc, seeded_runs_agree_with_the_model);
  tcase_add_test(tc, long_seeded_runs_agree_with_the_model);
  tcase_add_test(tc, seeded_runs_fail_over);
  tcase_add_test(tc, seeded_runs_nest_pools);
  tcase_add_test(tc, seeded_runs_shuffle_offers);
  tcase_add_test(tc, seeded_runs_with_resources);
  tcase_add_test(tc, seeded_runs_with_the_retry_policy_and_tags);
  tcase_add_test(tc, seeded_runs_with_placement);
  tcase_add_test(tc, seeded_runs_speculate_by_threshold_and_kill);
  tc = tlt_tcase(s, "snapshots");
  tcase_add_test(tc, mutated_snapshots_are_refused_or_drain);
  tc = tlt_tcase(s, "codec");
  tcase_add_test(tc, an_encoded_run_replays_exactly);
  tcase_add_test(tc, journals_of_seeded_runs_replay_to_the_same_state);
  tcase_add_test(tc, decoding_reverses_encoding);
  tcase_add_test(tc, seeded_runs_with_demand_events);
  tcase_add_test(tc, random_bytes_are_valid_programs);
  return s;
}

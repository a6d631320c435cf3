/* tl-random: replays one seed of the randomized runs with a trace, soaks many seeds, replays
 * byte programs (fuzzer inputs), and writes generated programs as a fuzzing corpus.
 * See docs/testing.md; the operations and the model are in ops_*.c (ops_internal.h says which
 * file holds what).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "ops.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
  fputs("usage: tl-random --seed N [--ops K] [--quiet]\n"
        "       tl-random --seeds N [--from S] [--ops K] [--verbose]\n"
        "       tl-random --replay FILE|DIR... [--verbose]\n"
        "       tl-random --snapshot-fuzz N [--from S] [--ops K] [--points P]\n"
        "       tl-random --write-corpus DIR --seeds N [--from S] [--ops K]\n"
        "  --seed N          run seed N, tracing every call and event (--quiet: verdict only)\n"
        "  --seeds N         soak: run N seeds from S (default 1); exit 1 if any fails\n"
        "  --ops K           operations per seed (default 100)\n"
        "  --replay ...      run byte programs (fuzzer inputs, corpus files), each file or every\n"
        "                    file of each directory\n"
        "  --write-corpus D  write the programs of the seeds to D/seed-<N>\n"
        "  --snapshot-fuzz N run N seeds from S (--ops K each), restoring a mutated snapshot at\n"
        "                    --points P (default 4) points of each (docs/testing.md)\n",
        f);
}

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t number(const char *flag, const char *v) {
  char *end;
  errno = 0;
  unsigned long long n = v != NULL ? strtoull(v, &end, 10) : 0;
  if (v == NULL || *v == '\0' || *end != '\0' || errno != 0) {
    fprintf(stderr, "tl-random: %s needs a number\n", flag);
    exit(2);
  }
  return (uint64_t)n;
}

/* The policy features a soak reached, summed. */
static void add_features(tlo_outcome *sum, const tlo_outcome *o) {
  sum->spec_submitted += o->spec_submitted;
  sum->spec_threshold += o->spec_threshold;
  sum->spec_decom += o->spec_decom;
  sum->spec_launches += o->spec_launches;
  sum->lost_races += o->lost_races;
  sum->late_reports += o->late_reports;
  sum->too_large += o->too_large;
  sum->resubmitted += o->resubmitted;
  sum->barrier_launches += o->barrier_launches;
  sum->fair_rounds += o->fair_rounds;
  sum->nested_pools += o->nested_pools;
  sum->nested_rounds += o->nested_rounds;
  sum->auto_pools += o->auto_pools;
  for (int l = 0; l < 5; l++)
    sum->loc_launches[l] += o->loc_launches[l];
  sum->waits_out += o->waits_out;
  sum->level_skips += o->level_skips;
  sum->timer_resets += o->timer_resets;
  sum->recomputes += o->recomputes;
  sum->wait_revives += o->wait_revives;
  for (int f = 0; f < TLO_XF_N; f++)
    sum->exclusion[f] += o->exclusion[f];
  for (int f = 0; f < TLO_RF_N; f++)
    sum->resource_features[f] += o->resource_features[f];
  sum->tag_ops += o->tag_ops;
  sum->tag_touched += o->tag_touched;
  sum->no_retry_aborts += o->no_retry_aborts;
  sum->own_limit_aborts += o->own_limit_aborts;
  sum->demand_events += o->demand_events;
  sum->unschedulable_events += o->unschedulable_events;
  sum->restores += o->restores;
  sum->restore_refusals += o->restore_refusals;
  sum->snapshot_errors += o->snapshot_errors;
  sum->recovering += o->recovering;
  sum->payloads_lost += o->payloads_lost;
  sum->reconciles += o->reconciles;
  sum->reconcile_lost += o->reconcile_lost;
  sum->reconcile_unknown += o->reconcile_unknown;
  sum->reconcile_adopted += o->reconcile_adopted;
  sum->reracks += o->reracks;
  sum->recovery_timeouts += o->recovery_timeouts;
}

static void print_features(const tlo_outcome *o) {
  printf("  failover: %" PRIu64 " restores (%" PRIu64 " refused as predicted, %" PRIu64
         " snapshots refused), %" PRIu64 " executors recovering, %" PRIu64
         " payloads withheld; %" PRIu64 " reconciled (%" PRIu64 " attempts not reported, %" PRIu64
         " unknown tids, %" PRIu64 " adopted, %" PRIu64 " onto another rack), %" PRIu64
         " recovery timeouts\n",
         o->restores, o->restore_refusals, o->snapshot_errors, o->recovering, o->payloads_lost,
         o->reconciles, o->reconcile_lost, o->reconcile_unknown, o->reconcile_adopted, o->reracks,
         o->recovery_timeouts);
  printf("  speculatable %" PRIu64 " (by the duration threshold %" PRIu64
         ", by a decommission's kill %" PRIu64 "), copies %" PRIu64 ", losers killed %" PRIu64
         ", late reports %" PRIu64 ", too large %" PRIu64 ", resubmitted %" PRIu64
         ", barrier sets launched %" PRIu64 ", rounds over several pools %" PRIu64 "\n",
         o->spec_submitted, o->spec_threshold, o->spec_decom, o->spec_launches, o->lost_races,
         o->late_reports, o->too_large, o->resubmitted, o->barrier_launches, o->fair_rounds);
  printf("  nested pools %" PRIu64 ", rounds over nested pools %" PRIu64
         ", pools made by tl_submit %" PRIu64 "\n",
         o->nested_pools, o->nested_rounds, o->auto_pools);
  printf("  locality launches: process %" PRIu64 ", node %" PRIu64 ", no_pref %" PRIu64
         ", rack %" PRIu64 ", any %" PRIu64 "; waits run out %" PRIu64 ", levels skipped %" PRIu64
         ", timer resets %" PRIu64 ", level changes by executors %" PRIu64
         ", revives from tl_tick %" PRIu64 "\n",
         o->loc_launches[0], o->loc_launches[1], o->loc_launches[2], o->loc_launches[3],
         o->loc_launches[4], o->waits_out, o->level_skips, o->timer_resets, o->recomputes,
         o->wait_revives);
  const uint64_t *x = o->exclusion;
  printf("  exclusion: counted failures %" PRIu64 "; excluded for an index: on an executor %" PRIu64
         ", on a node %" PRIu64 "; for a task set: executors %" PRIu64 ", nodes %" PRIu64
         "; indices passed over %" PRIu64 ", copies passed over %" PRIu64
         ", offers passed over %" PRIu64 "\n",
         x[TLO_XF_COUNTED], x[TLO_XF_INDEX_EXEC], x[TLO_XF_INDEX_NODE], x[TLO_XF_TS_EXEC],
         x[TLO_XF_TS_NODE], x[TLO_XF_SKIPS], x[TLO_XF_SPEC_SKIPS], x[TLO_XF_BLOCKED]);
  printf("  application exclusion: executors %" PRIu64 ", nodes %" PRIu64
         ", ended by tl_tick %" PRIu64 ", excluded offers %" PRIu64
         "; unschedulable: deadlines %" PRIu64 ", cleared by a launch %" PRIu64
         ", by a new executor %" PRIu64 ", aborted at once %" PRIu64 ", by tl_tick %" PRIu64 "\n",
         x[TLO_XF_APP_EXEC], x[TLO_XF_APP_NODE], x[TLO_XF_EXPIRED], x[TLO_XF_EXCLUDED_OFFERS],
         x[TLO_XF_DEADLINES], x[TLO_XF_CLEARED_LAUNCH], x[TLO_XF_CLEARED_ADD], x[TLO_XF_ABORT_NOW],
         x[TLO_XF_ABORT_TICK]);
  const uint64_t *rf = o->resource_features;
  printf("  resources: executors declaring %" PRIu64 ", task sets asking %" PRIu64
         ", launches holding addresses %" PRIu64 " (of a share %" PRIu64
         "), rounds with grants %" PRIu64 " (cut by the array %" PRIu64
         "), slots passed over %" PRIu64 ", barriers launched %" PRIu64 ", refused %" PRIu64 "\n",
         rf[TLO_RF_EXECUTORS], rf[TLO_RF_REQUESTS], rf[TLO_RF_LAUNCHES], rf[TLO_RF_SHARED],
         rf[TLO_RF_GRANT_CALLS], rf[TLO_RF_GCAP_STOPS], rf[TLO_RF_NO_FIT], rf[TLO_RF_BARRIERS],
         rf[TLO_RF_REFUSED]);
  printf("  retry policy and tags: tag calls %" PRIu64 " touching %" PRIu64
         " task sets, no_retry aborts %" PRIu64 ", aborts at a task set's own limit %" PRIu64 "\n",
         o->tag_ops, o->tag_touched, o->no_retry_aborts, o->own_limit_aborts);
  printf("  demand events: demand_changed %" PRIu64 ", taskset_unschedulable %" PRIu64 "\n",
         o->demand_events, o->unschedulable_events);
}

/* Runs one byte program from a file. */
static int replay_file(const char *path, int verbose) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "tl-random: %s: %s\n", path, strerror(errno));
    return 1;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  size_t n;
  while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      uint8_t *bigger = realloc(buf, cap *= 2);
      if (bigger == NULL)
        free(buf);
      buf = bigger;
    }
  }
  fclose(f);
  if (buf == NULL) {
    fprintf(stderr, "tl-random: out of memory\n");
    return 1;
  }
  tlo_options opt = {0};
  opt.verbose = verbose;
  tlo_outcome out;
  tlo_run_bytes(buf, len, &opt, &out);
  free(buf);
  if (!out.ok) {
    printf("%s: FAILED at op %zu: %s\n", path, out.failed_op, out.message);
    return 1;
  }
  if (verbose)
    printf("%s: ok (%zu ops, %" PRIu64 " calls, %" PRIu64 " events)\n", path, out.ops, out.calls,
           out.events);
  return 0;
}

static int replay_path(const char *path, int verbose, size_t *files) {
  DIR *d = opendir(path);
  if (d == NULL) {
    (*files)++;
    return replay_file(path, verbose);
  }
  int bad = 0;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.')
      continue;
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", path, ent->d_name);
    (*files)++;
    bad |= replay_file(full, verbose);
  }
  closedir(d);
  return bad;
}

static int write_corpus(const char *dir, uint64_t from, uint64_t count, uint64_t nops) {
  static uint8_t buf[1 << 20];
  for (uint64_t seed = from; seed < from + count; seed++) {
    size_t len = 0;
    tlo_options opt = {0};
    opt.encoded = buf;
    opt.encoded_cap = sizeof buf;
    opt.encoded_len = &len;
    tlo_outcome out;
    tlo_run_seed(seed, (size_t)nops, &opt, &out);
    if (!out.ok) {
      printf("seed %" PRIu64 " FAILED at op %zu: %s\n", seed, out.failed_op, out.message);
      return 1;
    }
    if (len > sizeof buf) {
      fprintf(stderr, "tl-random: seed %" PRIu64 " needs %zu bytes\n", seed, len);
      return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%" PRIu64, dir, seed);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
      fprintf(stderr, "tl-random: %s: %s\n", path, strerror(errno));
      return 1;
    }
  }
  printf("wrote %" PRIu64 " programs to %s\n", count, dir);
  return 0;
}

/* --snapshot-fuzz: mutated images restored at points of seeded runs (tlo_snapshot_fuzz). */
static int snapshot_fuzz(uint64_t from, uint64_t count, uint64_t nops, uint64_t points) {
  double started = seconds_now();
  uint64_t failures = 0;
  tlo_fuzz_outcome sum = {0};
  for (uint64_t seed = from; seed < from + count; seed++) {
    tlo_fuzz_outcome o;
    tlo_snapshot_fuzz(seed, (size_t)nops, (size_t)points, &o);
    sum.tries += o.tries;
    sum.fixed += o.fixed;
    sum.accepted += o.accepted;
    sum.tasksets += o.tasksets;
    sum.lost += o.lost;
    for (int k = 0; k < 5; k++)
      sum.refused[k] += o.refused[k];
    if (!o.ok) {
      failures++;
      printf("seed %" PRIu64 " FAILED: %s\n  replay: tl-random --snapshot-fuzz 1 --from %" PRIu64
             " --ops %" PRIu64 " --points %" PRIu64 "\n",
             seed, o.message, seed, nops, points);
      fflush(stdout);
    }
  }
  printf("%" PRIu64 " seeds from %" PRIu64 " x %" PRIu64 " ops, %" PRIu64
         " mutated images (%" PRIu64 " with their checksums fixed): %" PRIu64
         " failed; refused: TL_ESNAPSHOT %" PRIu64 ", TL_EVERSION %" PRIu64 ", TL_ECONFIG %" PRIu64
         ", TL_ENOMEM %" PRIu64 ", other %" PRIu64 "; accepted and drained %" PRIu64 " (%" PRIu64
         " task sets, %" PRIu64 " executors) in %.1f s\n",
         count, from, nops, sum.tries, sum.fixed, failures, sum.refused[0], sum.refused[1],
         sum.refused[2], sum.refused[3], sum.refused[4], sum.accepted, sum.tasksets, sum.lost,
         seconds_now() - started);
  return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  bool have_seed = false, have_seeds = false, quiet = false, replay = false;
  uint64_t fuzz_seeds = 0, fuzz_points = 4;
  int verbose = 0;
  uint64_t seed = 0, seeds = 0, from = 1, nops = 100;
  const char *corpus = NULL;
  int first_path = 0, npaths = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--seed") == 0) {
      seed = number(a, i + 1 < argc ? argv[++i] : NULL);
      have_seed = true;
    } else if (strcmp(a, "--seeds") == 0) {
      seeds = number(a, i + 1 < argc ? argv[++i] : NULL);
      have_seeds = true;
    } else if (strcmp(a, "--from") == 0) {
      from = number(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (strcmp(a, "--ops") == 0) {
      nops = number(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (strcmp(a, "--snapshot-fuzz") == 0) {
      fuzz_seeds = number(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (strcmp(a, "--points") == 0) {
      fuzz_points = number(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (strcmp(a, "--quiet") == 0) {
      quiet = true;
    } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
      verbose = 2;
    } else if (strcmp(a, "--write-corpus") == 0 && i + 1 < argc) {
      corpus = argv[++i];
    } else if (strcmp(a, "--replay") == 0) {
      replay = true;
      first_path = i + 1;
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
        i++;
        npaths++;
      }
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "tl-random: unknown argument %s\n", a);
      usage(stderr);
      return 2;
    }
  }

  if (fuzz_seeds > 0)
    return snapshot_fuzz(from, fuzz_seeds, nops, fuzz_points);
  if (replay) {
    size_t files = 0;
    int bad = 0;
    for (int k = 0; k < npaths; k++)
      bad |= replay_path(argv[first_path + k], verbose, &files);
    printf("replayed %zu programs: %s\n", files, bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
  }
  if (corpus != NULL) {
    if (!have_seeds) {
      usage(stderr);
      return 2;
    }
    return write_corpus(corpus, from, seeds, nops);
  }
  if (have_seed) {
    tlo_options opt = {0};
    opt.verbose = quiet ? 0 : 2;
    tlo_outcome out;
    tlo_run_seed(seed, (size_t)nops, &opt, &out);
    printf("seed %" PRIu64 ": %s\n", seed, out.ok ? "ok" : out.message);
    printf("%zu ops, %" PRIu64 " calls (%" PRIu64 " re-entrant, %" PRIu64
           " errors as expected), %" PRIu64 " events, %" PRIu64 " launches, %" PRIu64
           " batches (%" PRIu64 " updates)\n",
           out.ops, out.calls, out.reentrant, out.errors, out.events, out.launched, out.batches,
           out.batch_updates);
    print_features(&out);
    return out.ok ? 0 : 1;
  }
  if (!have_seeds) {
    usage(stderr);
    return 2;
  }

  double started = seconds_now();
  uint64_t failures = 0, calls = 0, events = 0, launched = 0, batches = 0, batch_updates = 0;
  uint64_t deferred = 0, dispatched = 0;
  tlo_outcome features = {0};
  tlo_options opt = {0};
  opt.verbose = verbose;
  for (uint64_t s = from; s < from + seeds; s++) {
    tlo_outcome out;
    tlo_run_seed(s, (size_t)nops, &opt, &out);
    calls += out.calls;
    events += out.events;
    launched += out.launched;
    batches += out.batches;
    batch_updates += out.batch_updates;
    deferred += out.deferred;
    dispatched += out.dispatched;
    add_features(&features, &out);
    if (!out.ok) {
      failures++;
      printf("seed %" PRIu64 " FAILED at op %zu: %s\n  replay: tl-random --seed %" PRIu64
             " --ops %" PRIu64 "\n",
             s, out.failed_op, out.message, s, nops);
      fflush(stdout);
    }
  }
  double took = seconds_now() - started;
  printf("%" PRIu64 " seeds from %" PRIu64 " x %" PRIu64 " ops: %" PRIu64 " failed; %" PRIu64
         " calls, %" PRIu64 " events, %" PRIu64 " launches, %" PRIu64 " batches (%" PRIu64
         " updates) in %.1f s\n",
         seeds, from, nops, failures, calls, events, launched, batches, batch_updates, took);
  printf("  delivery: %" PRIu64 " runs deferred, %" PRIu64 " of their events by tl_dispatch\n",
         deferred, dispatched);
  print_features(&features);
  return failures == 0 ? 0 : 1;
}

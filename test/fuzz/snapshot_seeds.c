/* The snapshot fuzzer's version 4 seed images (fuzz_snapshot.c's comment describes each), made
 * with this tree's library under the harness's own config (fuzz_config.h), so that they always
 * hold the format as it is:
 *
 *   tl-snapshot-seeds DIR           writes DIR/v4-decommission, v4-nested-pools, v4-placement
 *                                   and v4-shuffle (a byte 8, then the image), then restores
 *                                   each file it wrote and checks it
 *   tl-snapshot-seeds --check DIR   only restores and checks those four files of DIR (the
 *                                   committed corpus: ctest snapshot-seeds-corpus)
 *
 * Regenerate the committed seeds with build/test/tl-snapshot-seeds test/fuzz/snapshot-corpus
 * after a change of the format. A check restores an image under fuzz_config (TL_OK), runs
 * tl_check, compares the restored executors, task sets and pools with the scheduler that wrote
 * it (with --check, with the scheduler this tree builds the same way), then drains it as the
 * harness does (every restored executor reconciled, every executor lost, a tick far in the
 * future: nothing running, frozen or zombie, tl_check clean after each step) and frees it. The
 * shuffle's image also gives the same next shuffled round as its writer. Exit status 0 when
 * every image was written and checked; 1 with a message otherwise. Runs in milliseconds (ctest
 * snapshot-seeds writes into a temporary directory). */
#include "fuzz_config.h" /* fuzz_config, fuzz_clock, fuzz_now */
#include "taskledger.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC 1000000000ull
#define PREFIX_V4 8 /* the harness's first byte for a version 4 image (fuzz_snapshot.c) */

static const char *scenario; /* the seed being made, for messages */

static void fail(const char *what, int line) {
  fprintf(stderr, "tl-snapshot-seeds: %s: line %d: %s\n", scenario, line, what);
  exit(1);
}

#define OK(call)                                                                                   \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != TL_OK) {                                                                            \
      fprintf(stderr, "tl-snapshot-seeds: %s: %s: %s\n", scenario, #call, tl_err_name(rc_));       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      fail("expected " #cond, __LINE__);                                                           \
  } while (0)

static void check(tl_scheduler *s, const char *after) {
  char why[256];
  if (tl_check(s, why, sizeof why) != TL_OK) {
    fprintf(stderr, "tl-snapshot-seeds: %s: tl_check after %s: %s\n", scenario, after, why);
    exit(1);
  }
}

static bool on_restored(void *ud, const tl_taskset_info *ts, void **payload) {
  (void)ud;
  (void)ts;
  *payload = NULL;
  return true;
}

static void on_ended(void *ud, const tl_task_info *t, const tl_task_end *e) {
  (void)ud;
  (void)t;
  if (e->result != NULL && e->result_free != NULL)
    e->result_free(e->result);
}

static tl_scheduler *make(void) {
  tl_config cfg = fuzz_config();
  tl_callbacks cb = {0};
  cb.task_ended = on_ended;
  tl_scheduler *s;
  OK(tl_scheduler_new(&cfg, &cb, &s));
  return s;
}

static void add_executor(tl_scheduler *s, const char *id, const char *host, const char *rack,
                         uint32_t cores) {
  tl_executor_desc d = {0};
  d.id = id;
  d.host = host;
  d.rack = rack;
  d.cores = cores;
  OK(tl_executor_add(s, &d));
  check(s, "an executor's registration");
}

static tl_taskset_id submit(tl_scheduler *s, const tl_taskset_desc *d) {
  tl_taskset_id id;
  OK(tl_submit(s, d, &id));
  check(s, "a submission");
  return id;
}

/* One offer round of cores free cores on each executor named; every launch is made RUNNING.
 * Returns how many launched, the launches in out[]. */
static size_t offer(tl_scheduler *s, const char *const *ids, size_t n, uint32_t cores,
                    tl_launch *out, size_t cap) {
  tl_offer offers[8];
  EXPECT(n <= 8);
  for (size_t i = 0; i < n; i++)
    offers[i] = (tl_offer){ids[i], cores};
  size_t nout = 0;
  OK(tl_resource_offers(s, offers, n, out, cap, &nout));
  check(s, "an offer round");
  for (size_t i = 0; i < nout; i++) {
    tl_update u = {0};
    OK(tl_status_update(s, out[i].executor_id, out[i].tid, &u));
    check(s, "a RUNNING update");
  }
  return nout;
}

static void finish(tl_scheduler *s, const tl_launch *l) {
  tl_update u = {0};
  u.state = TL_TASK_FINISHED;
  OK(tl_status_update(s, l->executor_id, l->tid, &u));
  check(s, "a FINISHED update");
}

static void lose_pending(tl_scheduler *s, const char *id) {
  tl_loss_reason why = {TL_LOSS_PENDING, false, 0, "seed: reason pending"};
  OK(tl_executor_lost(s, id, &why));
  check(s, "a pending loss");
}

/* ---------------------------------------------------------------------------------------------
 * The scenarios: each builds the scheduler its seed is an image of (fuzz_snapshot.c's comment).
 * ------------------------------------------------------------------------------------------- */

/* Three executors: e2 decommissioning (at t0 + 2 s, so expected killed at t0 + 7 s), e3
 * decommissioned, then a pending loss. Task set 1 (ten tasks, run times of 10 s) has nine
 * successes, past its quantile of 0.9, and index 9 running on e2 since t0 + 1 s: by the median
 * it would end at t0 + 11 s, after the kill, so the first check after a restore finds it slow
 * (the kill rule). Task set 2, one task, runs on e1 from t0 + 11.5 s: a check 61 s after the
 * restore finds it past the 60 s threshold. */
static tl_scheduler *make_decommission(void) {
  tl_scheduler *s = make();
  add_executor(s, "e1", "h1", "r1", 4);
  add_executor(s, "e2", "h2", "r1", 4);
  add_executor(s, "e3", "h3", "r2", 4);
  tl_taskset_desc d = {.stage_id = 1, .priority = 1, .ntasks = 10};
  submit(s, &d);
  tl_launch first[8], second[8];
  const char *e1e3[] = {"e1", "e3"}, *e2[] = {"e2"}, *e1[] = {"e1"};
  EXPECT(offer(s, e1e3, 2, 4, first, 8) == 8);
  fuzz_now += 1 * SEC;
  EXPECT(offer(s, e2, 1, 2, second, 8) == 2);
  fuzz_now += 1 * SEC;
  OK(tl_executor_decommission(s, "e2", "seed: scale down"));
  check(s, "a decommission");
  fuzz_now += 1 * SEC;
  OK(tl_executor_decommission(s, "e3", "seed: scale down"));
  check(s, "a decommission");
  fuzz_now += 7 * SEC; /* t0 + 10 s */
  for (size_t i = 0; i < 8; i++)
    finish(s, &first[i]);
  fuzz_now += 1 * SEC; /* t0 + 11 s: one of e2's two, after its 10 s */
  finish(s, &second[0]);
  fuzz_now += SEC / 2;
  tl_taskset_desc one = {.stage_id = 2, .priority = 2, .ntasks = 1};
  submit(s, &one);
  tl_launch l[4];
  EXPECT(offer(s, e1, 1, 4, l, 4) == 1);
  fuzz_now += SEC / 2; /* t0 + 12 s */
  lose_pending(s, "e3");
  tl_stats st;
  tl_stats_get(s, &st);
  EXPECT(st.executors_alive == 1 && st.executors_decommissioning == 1 &&
         st.executors_pending_loss == 1 && st.attempts_running == 2);
  return s;
}

/* Pools three deep: prod (FAIR) > etl (FAIR) > etl-daily (FIFO) and etl-hourly (FAIR), prod >
 * adhoc (FIFO, its settings changed by tl_pool_set), research (FIFO) > ml (FAIR) > ml-train
 * (FAIR). Five task sets in the leaf pools, two executors of four cores: eight attempts running
 * (one of them done), the rest queued. */
static tl_scheduler *make_nested_pools(void) {
  tl_scheduler *s = make();
  OK(tl_pool_add(s, "prod", TL_FAIR, 2, 2));
  OK(tl_pool_add_child(s, "prod", "etl", TL_FAIR, 1, 1));
  OK(tl_pool_add_child(s, "etl", "etl-daily", TL_FIFO, 1, 0));
  OK(tl_pool_add_child(s, "etl", "etl-hourly", TL_FAIR, 3, 1));
  OK(tl_pool_add_child(s, "prod", "adhoc", TL_FIFO, 1, 0));
  OK(tl_pool_set(s, "adhoc", TL_FAIR, 4, 1));
  OK(tl_pool_add(s, "research", TL_FIFO, 1, 0));
  OK(tl_pool_add_child(s, "research", "ml", TL_FAIR, 1, 0));
  OK(tl_pool_add_child(s, "ml", "ml-train", TL_FAIR, 2, 1));
  check(s, "the pools");
  add_executor(s, "e1", "h1", NULL, 4);
  add_executor(s, "e2", "h2", NULL, 4);
  static const struct {
    const char *pool;
    uint32_t ntasks;
  } sets[] = {{"etl-daily", 4}, {"etl-daily", 2}, {"etl-hourly", 3}, {"ml-train", 4}, {"adhoc", 2}};
  for (uint32_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    tl_taskset_desc d = {
        .stage_id = 10 + i, .priority = i, .ntasks = sets[i].ntasks, .pool = sets[i].pool};
    submit(s, &d);
  }
  const char *both[] = {"e1", "e2"};
  tl_launch l[16];
  size_t n = offer(s, both, 2, 4, l, 16);
  EXPECT(n == 8);
  fuzz_now += 2 * SEC;
  finish(s, &l[0]);
  tl_launch more[4];
  EXPECT(offer(s, both, 2, 4, more, 4) == 1); /* the core l[0] freed */
  fuzz_now += 1 * SEC;
  tl_pool_status ps;
  OK(tl_pool_get(s, "etl-daily", &ps));
  EXPECT(ps.depth == 3 && strcmp(ps.parent, "etl") == 0);
  OK(tl_pool_get(s, "prod", &ps));
  EXPECT(ps.children == 2);
  tl_stats st;
  tl_stats_get(s, &st);
  EXPECT(st.attempts_running == 8 && st.tasks_pending == 15 - 9);
  return s;
}

/* Four executors on three hosts (e1, e2 on h1; e3 on h2; e4 on h3). Task set 1: three tasks
 * spread per host over h1 and h2 (two run, on e1 and e3; the third can go nowhere). Task set 2:
 * two tasks spread per executor over "e4" and "ghost" (one runs on e4). Task set 3: one task
 * allowed only on "ghost" (unplaceable). Task set 4: one task without placement, launched on e2,
 * then frozen by e2's pending loss. */
static tl_scheduler *make_placement(void) {
  tl_scheduler *s = make();
  add_executor(s, "e1", "h1", NULL, 2);
  add_executor(s, "e2", "h1", NULL, 2);
  add_executor(s, "e3", "h2", NULL, 2);
  add_executor(s, "e4", "h3", NULL, 2);
  tl_launch l[8];
  static const char *const hosts[] = {"h1", "h2"};
  tl_taskset_desc spread_host = {.stage_id = 1,
                                 .priority = 1,
                                 .ntasks = 3,
                                 .allowed_hosts = hosts,
                                 .nallowed_hosts = 2,
                                 .spread = TL_SPREAD_HOST};
  submit(s, &spread_host);
  const char *e1e3[] = {"e1", "e3"}, *e4[] = {"e4"}, *e2[] = {"e2"};
  EXPECT(offer(s, e1e3, 2, 2, l, 8) == 2);
  fuzz_now += SEC;
  static const char *const execs[] = {"e4", "ghost"};
  tl_taskset_desc spread_exec = {.stage_id = 2,
                                 .priority = 2,
                                 .ntasks = 2,
                                 .allowed_executors = execs,
                                 .nallowed_executors = 2,
                                 .spread = TL_SPREAD_EXECUTOR};
  submit(s, &spread_exec);
  EXPECT(offer(s, e4, 1, 2, l, 8) == 1);
  fuzz_now += SEC;
  static const char *const ghost[] = {"ghost"};
  tl_taskset_desc nowhere = {.stage_id = 3,
                             .priority = 3,
                             .ntasks = 1,
                             .allowed_executors = ghost,
                             .nallowed_executors = 1};
  submit(s, &nowhere);
  tl_taskset_desc free_one = {.stage_id = 4, .priority = 4, .ntasks = 1};
  submit(s, &free_one);
  EXPECT(offer(s, e2, 1, 2, l, 8) == 1 && l[0].stage_id == 4);
  fuzz_now += SEC;
  lose_pending(s, "e2");
  tl_taskset_status ts;
  OK(tl_taskset_get(s, 3, &ts));
  EXPECT(ts.unplaceable && ts.pending == 1);
  tl_stats st;
  tl_stats_get(s, &st);
  EXPECT(st.attempts_running == 3 && st.attempts_frozen == 1);
  return s;
}

/* The offer shuffle on (fuzz_config's seed 7): three executors of two cores, offered one core
 * each per round. Task set 1 (eight tasks) launches three per round; two rounds finish, the third
 * launches its last two (fewer than the offers); task set 2 (one task) takes one offer of the
 * fourth. Four shuffled rounds move the sequence, which the image's SHUF section carries. */
static tl_scheduler *make_shuffle(void) {
  tl_scheduler *s = make();
  add_executor(s, "e1", "h1", NULL, 2);
  add_executor(s, "e2", "h2", NULL, 2);
  add_executor(s, "e3", "h3", NULL, 2);
  tl_taskset_desc d = {.stage_id = 1, .priority = 1, .ntasks = 8};
  submit(s, &d);
  const char *all[] = {"e1", "e2", "e3"};
  tl_launch l[4];
  for (int round = 0; round < 2; round++) {
    EXPECT(offer(s, all, 3, 1, l, 4) == 3);
    fuzz_now += SEC;
    for (size_t i = 0; i < 3; i++)
      finish(s, &l[i]);
  }
  EXPECT(offer(s, all, 3, 1, l, 4) == 2);
  fuzz_now += SEC;
  tl_taskset_desc one = {.stage_id = 2, .priority = 2, .ntasks = 1};
  submit(s, &one);
  EXPECT(offer(s, all, 3, 1, l, 4) == 1);
  fuzz_now += SEC;
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Writing and checking an image
 * ------------------------------------------------------------------------------------------- */

static char *path_of(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p == NULL)
    abort();
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static void write_seed(const char *path, const buf *image) {
  FILE *f = fopen(path, "wb");
  uint8_t prefix = PREFIX_V4;
  if (f == NULL || fwrite(&prefix, 1, 1, f) != 1 || fwrite(image->p, 1, image->n, f) != image->n ||
      fclose(f) != 0) {
    fprintf(stderr, "tl-snapshot-seeds: cannot write %s\n", path);
    exit(1);
  }
}

/* The file's image, without its prefix byte (which must be a version 4 one). */
static buf read_seed(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "tl-snapshot-seeds: cannot read %s\n", path);
    exit(1);
  }
  buf b = {NULL, 0, 0, 0};
  uint8_t chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    buf_write(&b, chunk, n);
  fclose(f);
  if (b.n < 1 || b.p[0] != PREFIX_V4)
    fail("the seed does not start with the version 4 prefix byte", __LINE__);
  memmove(b.p, b.p + 1, b.n - 1);
  b.n--;
  /* The header as the harness would make it: version 4 (the harness rewrites the rest). */
  if (b.n < 40 || memcmp(b.p, "TLSNAP\r\n", 8) != 0 || b.p[8] != 4 || b.p[9] != 0 || b.p[10] != 0 ||
      b.p[11] != 0)
    fail("not a version 4 image", __LINE__);
  return b;
}

/* The restored scheduler holds what its writer held: the same executors (ALIVE and
 * DECOMMISSIONING ones now RECOVERING, their attempts frozen), task sets and pools. */
static void compare(tl_scheduler *a, tl_scheduler *r) {
  tl_executor_info ea[16], er[16];
  size_t na, nr;
  OK(tl_executor_list(a, ea, 16, &na));
  OK(tl_executor_list(r, er, 16, &nr));
  EXPECT(na == nr && na <= 16);
  for (size_t i = 0; i < na; i++) {
    bool live = ea[i].state == TL_EXECUTOR_ALIVE || ea[i].state == TL_EXECUTOR_DECOMMISSIONING;
    EXPECT(strcmp(ea[i].id, er[i].id) == 0 && strcmp(ea[i].host, er[i].host) == 0);
    EXPECT(er[i].state == (live ? TL_EXECUTOR_RECOVERING : ea[i].state));
    EXPECT(ea[i].cores == er[i].cores && er[i].running == 0);
    EXPECT(ea[i].running + ea[i].frozen == er[i].frozen);
  }
  tl_taskset_status ta[16], tr[16];
  OK(tl_taskset_list(a, ta, 16, &na));
  OK(tl_taskset_list(r, tr, 16, &nr));
  EXPECT(na == nr && na <= 16);
  for (size_t i = 0; i < na; i++) {
    EXPECT(ta[i].info.id == tr[i].info.id && ta[i].info.stage_id == tr[i].info.stage_id &&
           ta[i].info.ntasks == tr[i].info.ntasks);
    EXPECT(ta[i].zombie == tr[i].zombie && ta[i].failed == tr[i].failed);
    EXPECT(ta[i].running == tr[i].running && tr[i].frozen == tr[i].running);
    EXPECT(ta[i].pending == tr[i].pending && ta[i].succeeded == tr[i].succeeded);
    EXPECT(ta[i].nallowed_executors == tr[i].nallowed_executors &&
           ta[i].nallowed_hosts == tr[i].nallowed_hosts && ta[i].spread == tr[i].spread);
    tl_place_info pa[4], pr[4];
    size_t npa, npr;
    OK(tl_taskset_placement(a, ta[i].info.id, pa, 4, &npa));
    OK(tl_taskset_placement(r, tr[i].info.id, pr, 4, &npr));
    EXPECT(npa == npr && npa <= 4);
    for (size_t k = 0; k < npa; k++)
      EXPECT(pa[k].host == pr[k].host && strcmp(pa[k].name, pr[k].name) == 0);
  }
  static const char *const pools[] = {"default", "prod",     "etl", "etl-daily", "etl-hourly",
                                      "adhoc",   "research", "ml",  "ml-train"};
  for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++) {
    tl_pool_status pa, pr;
    int ra = tl_pool_get(a, pools[i], &pa), rr = tl_pool_get(r, pools[i], &pr);
    EXPECT(ra == rr);
    if (ra != TL_OK)
      continue;
    EXPECT(pa.mode == pr.mode && pa.weight == pr.weight && pa.min_share == pr.min_share);
    EXPECT(pa.running == pr.running && pa.tasksets == pr.tasksets && pa.depth == pr.depth &&
           pa.children == pr.children && strcmp(pa.parent, pr.parent) == 0);
  }
}

/* Every restored executor reconciles, keeping what the image holds frozen on it. */
static void reconcile_all(tl_scheduler *s) {
  tl_executor_info list[16];
  size_t n;
  OK(tl_executor_list(s, list, 16, &n));
  EXPECT(n <= 16);
  for (size_t i = 0; i < n; i++) {
    if (list[i].state != TL_EXECUTOR_RECOVERING)
      continue;
    tl_tid tids[16];
    size_t nfrozen, nunknown;
    OK(tl_executor_frozen(s, list[i].id, tids, 16, &nfrozen));
    EXPECT(nfrozen <= 16);
    OK(tl_executor_reconcile(s, list[i].id, tids, nfrozen, NULL, 0, &nunknown));
    EXPECT(nunknown == 0);
    check(s, "a reconciliation");
  }
}

/* As the harness: every executor lost, a tick far in the future, then nothing is left running,
 * frozen or zombie, and the scheduler frees. */
static void drain_and_free(tl_scheduler *s) {
  tl_executor_info list[16];
  size_t n;
  OK(tl_executor_list(s, list, 16, &n));
  EXPECT(n <= 16);
  for (size_t i = 0; i < n; i++) {
    tl_loss_reason why = {TL_LOSS_KILLED, false, 0, "seed drain"};
    OK(tl_executor_lost(s, list[i].id, &why));
    check(s, "a loss");
  }
  fuzz_now += 1ull << 50;
  (void)tl_tick(s);
  check(s, "the tick");
  tl_stats st;
  tl_stats_get(s, &st);
  EXPECT(st.attempts_running == 0 && st.attempts_frozen == 0 && st.tasksets_zombie == 0);
  OK(tl_scheduler_free(s));
}

static tl_scheduler *restore(const char *path) {
  buf b = read_seed(path);
  tl_config cfg = fuzz_config();
  tl_callbacks cb = {0};
  cb.task_ended = on_ended;
  cb.taskset_restored = on_restored;
  tl_scheduler *r;
  OK(tl_scheduler_restore(&cfg, &cb, buf_read, &b, &r));
  EXPECT(b.at == b.n);
  free(b.p);
  check(r, "the restore");
  return r;
}

/* The shuffle's image continues the writer's sequence: after both reconcile (the writer's
 * executors run on), the same new task set launches on the same executors in both. */
static void same_next_round(tl_scheduler *a, tl_scheduler *r) {
  tl_taskset_desc d = {.stage_id = 3, .priority = 3, .ntasks = 2};
  EXPECT(submit(a, &d) == submit(r, &d));
  const char *all[] = {"e1", "e2", "e3"};
  tl_launch la[4], lr[4];
  size_t na = offer(a, all, 3, 1, la, 4), nr = offer(r, all, 3, 1, lr, 4);
  EXPECT(na == 2 && nr == na);
  for (size_t i = 0; i < na; i++)
    EXPECT(la[i].tid == lr[i].tid && strcmp(la[i].executor_id, lr[i].executor_id) == 0 &&
           la[i].index == lr[i].index);
}

/* The decommission image reaches both speculation rules of the harness's checks: at once, the
 * kill rule speculates task set 1's index 9 on e2 (run 11 s, below 3 x its median, but the kill
 * comes before its end); 61 s later the threshold speculates task set 2's one task. */
static void both_rules(tl_scheduler *a, tl_scheduler *r) {
  (void)a;
  tl_stats st;
  tl_stats_get(r, &st);
  EXPECT(st.tasks_speculatable == 0);
  fuzz_now += 1000000ull;
  (void)tl_tick(r);
  check(r, "a speculation check");
  tl_stats_get(r, &st);
  EXPECT(st.tasks_speculatable == 1);
  fuzz_now += 61 * SEC;
  (void)tl_tick(r);
  check(r, "a later speculation check");
  tl_stats_get(r, &st);
  EXPECT(st.tasks_speculatable == 2);
}

static const struct seed {
  const char *name;
  tl_scheduler *(*make)(void);
  void (*after)(tl_scheduler *a, tl_scheduler *r); /* a check of its own, after reconciling */
} seeds[] = {
    {"v4-decommission", make_decommission, both_rules},
    {"v4-nested-pools", make_nested_pools, NULL},
    {"v4-placement", make_placement, NULL},
    {"v4-shuffle", make_shuffle, same_next_round},
};

int main(int argc, char **argv) {
  bool write = argc == 2;
  if (!(argc == 2 || (argc == 3 && strcmp(argv[1], "--check") == 0)) || argv[argc - 1][0] == '-') {
    fprintf(stderr, "usage: tl-snapshot-seeds [--check] DIR\n");
    return 2;
  }
  const char *dir = argv[argc - 1];
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    scenario = seeds[i].name;
    fuzz_now = 1000000000ull;
    tl_scheduler *a = seeds[i].make();
    char *path = path_of(dir, seeds[i].name);
    if (write) {
      buf image = {NULL, 0, 0, 0};
      OK(tl_snapshot(a, buf_write, &image));
      write_seed(path, &image);
      free(image.p);
    }
    tl_scheduler *r = restore(path);
    compare(a, r);
    reconcile_all(r);
    if (seeds[i].after != NULL)
      seeds[i].after(a, r);
    drain_and_free(r);
    OK(tl_scheduler_free(a));
    printf("%s: %s, restored and drained\n", path, write ? "written" : "read");
    free(path);
  }
  return 0;
}

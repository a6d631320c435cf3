/* tl-bench: what the ledger's entry points cost, each figure measured as a ratio against a
 * baseline taken in the same run (these machines are shared and noisy). One machine-readable
 * line per figure:
 *
 *   bench=<name> value=<v> unit=<u> [baseline=<b> ratio=<v/b>] [key=value ...]
 *
 *   tl-bench [--short] [--only lifecycle|gpu|embedder|loss|heartbeat|memory|offers|threads|
 *                             snapshot|profile|profile-gpu|profile-cores8|profile-batched|
 *                             profile-embedder|profile-batched-embedder]
 *
 * Without --only every group runs, in that order (profile excepted). --short runs every figure
 * at a small size so CI can prove the program still works; its numbers mean nothing. Figures
 * are not tests: nothing here fails on a slow machine.
 *
 * --only profile runs the plain lifecycle once, 100,000 tasks, and nothing else (profile-batched
 * the batched one, reported through tl_status_updates): a target for
 * valgrind --tool=callgrind, whose instruction counts (repeatable on a noisy machine) divided by
 * the calls give the cost of each entry point (docs/performance.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD */
#endif
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <uthash.h>

#include "taskledger.h"

static bool short_mode;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t manual_clock;
static uint64_t bench_clock(void *ud) {
  (void)ud;
  return manual_clock;
}

static void die(const char *what, int err) {
  fprintf(stderr, "tl-bench: %s: %s\n", what, tl_err_name(err));
  exit(1);
}

static void ok(int err, const char *what) {
  if (err != TL_OK)
    die(what, err);
}

static void free_result(void *ud, const tl_task_info *t, const tl_task_end *e) {
  (void)ud;
  (void)t;
  if (e->result != NULL && e->result_free != NULL)
    e->result_free(e->result);
}

/* A scheduler on the manual clock, no heartbeat expiry, with these callbacks. */
static tl_scheduler *new_scheduler_cb(const tl_callbacks *cb) {
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.clock = bench_clock;
  cfg.heartbeat_timeout_ns = 0;
  tl_scheduler *s;
  ok(tl_scheduler_new(&cfg, cb, &s), "tl_scheduler_new");
  return s;
}

/* The same with only task_ended, which frees results. */
static tl_scheduler *new_scheduler(void) {
  tl_callbacks cb = {0};
  cb.task_ended = free_result;
  return new_scheduler_cb(&cb);
}

static void exec_id(char *buf, size_t len, unsigned i) { snprintf(buf, len, "exec-%u", i); }

static void add_executors(tl_scheduler *s, unsigned n, uint32_t cores) {
  char id[32], host[32];
  for (unsigned i = 0; i < n; i++) {
    exec_id(id, sizeof id, i);
    snprintf(host, sizeof host, "host-%u", i / 4);
    tl_executor_desc d = {.id = id, .host = host, .rack = NULL, .cores = cores, .ud = NULL};
    ok(tl_executor_add(s, &d), "tl_executor_add");
  }
}

/* ---------------------------------------------------------------------------------------------
 * The floor: what any ledger of running tasks must do per task, with the same allocator: a
 * record allocated, added to a hash by tid, linked on two lists, found by tid, unlinked,
 * deleted and freed.
 * ------------------------------------------------------------------------------------------- */

typedef struct link {
  struct link *prev, *next;
} link;

typedef struct floor_rec {
  uint64_t tid;
  UT_hash_handle hh;
  link on_a, on_b;
} floor_rec;

static void link_tail(link *h, link *n) {
  n->next = h;
  n->prev = h->prev;
  h->prev->next = n;
  h->prev = n;
}

static void unlink_node(link *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
}

/* The floor's state, so that it can run in chunks between chunks of the lifecycle. */
typedef struct floor_state {
  floor_rec *map;
  link a, b;
  uint64_t next, done;
  unsigned inflight;
} floor_state;

static void floor_init(floor_state *f, unsigned inflight) {
  f->map = NULL;
  f->a.prev = f->a.next = &f->a;
  f->b.prev = f->b.next = &f->b;
  f->next = f->done = 1;
  f->inflight = inflight;
}

/* n tasks through the floor, keeping inflight records; returns the ns it took. */
static uint64_t floor_step(floor_state *f, uint64_t n) {
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; i++) {
    floor_rec *r = malloc(sizeof *r);
    if (r == NULL)
      die("malloc", TL_ENOMEM);
    r->tid = f->next++;
    HASH_ADD(hh, f->map, tid, sizeof r->tid, r);
    link_tail(&f->a, &r->on_a);
    link_tail(&f->b, &r->on_b);
    if (f->next - f->done > f->inflight) {
      uint64_t tid = f->done++;
      floor_rec *g;
      HASH_FIND(hh, f->map, &tid, sizeof tid, g);
      unlink_node(&g->on_a);
      unlink_node(&g->on_b);
      HASH_DEL(f->map, g);
      free(g);
    }
  }
  return now_ns() - t0;
}

static void floor_free(floor_state *f) {
  floor_rec *r, *tmp;
  HASH_ITER(hh, f->map, r, tmp) {
    HASH_DEL(f->map, r);
    free(r);
  }
}

/* ---------------------------------------------------------------------------------------------
 * 1. Lifecycle: offer -> launch -> FINISHED -> task_ended, per task (the definition),
 * against the floor. The same loop again with a RUNNING update before FINISHED (what Spark's
 * executors send, and what decides whether a later loss counts), against the same floor; and
 * with every callback set, against the plain lifecycle, for what listening to every event costs
 * (with only task_ended set, the library makes no task_started or revive_offers event at all).
 * Each loop runs with the floor in between its segments of 100,000 tasks (pairs, below), three
 * times, and each figure is the median over all its pairs.
 * ------------------------------------------------------------------------------------------- */

static uint64_t heard; /* callbacks run, by the lifecycle with every callback set */

static void heard_task_started(void *ud, const tl_task_info *t) {
  (void)ud;
  (void)t;
  heard++;
}

static void heard_task_ended(void *ud, const tl_task_info *t, const tl_task_end *e) {
  free_result(ud, t, e);
  heard++;
}

static void heard_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  (void)ud;
  (void)ts;
  (void)reason;
  heard++;
}

static void heard_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  (void)ud;
  (void)ts;
  (void)payload;
  heard++;
}

static void heard_executor_added(void *ud, const char *id, const char *host) {
  (void)ud;
  (void)id;
  (void)host;
  heard++;
}

static void heard_executor_lost(void *ud, const char *id, void *executor_ud,
                                const tl_loss_reason *r) {
  (void)ud;
  (void)id;
  (void)executor_ud;
  (void)r;
  heard++;
}

static void heard_speculative(void *ud, const tl_taskset_info *ts, uint32_t index) {
  (void)ud;
  (void)ts;
  (void)index;
  heard++;
}

static void heard_revive(void *ud) {
  (void)ud;
  heard++;
}

static void heard_kill(void *ud, tl_tid tid, const char *id, void *executor_ud, bool interrupt,
                       const char *reason) {
  (void)ud;
  (void)executor_ud;
  (void)tid;
  (void)id;
  (void)interrupt;
  (void)reason;
  heard++;
}

/* A scheduler (manual clock) with every callback set, each counting in heard. */
static tl_scheduler *new_scheduler_all_callbacks(void) {
  tl_callbacks cb = {0};
  cb.task_started = heard_task_started;
  cb.task_ended = heard_task_ended;
  cb.taskset_failed = heard_taskset_failed;
  cb.taskset_released = heard_taskset_released;
  cb.executor_added = heard_executor_added;
  cb.executor_lost = heard_executor_lost;
  cb.speculative_task_submitted = heard_speculative;
  cb.revive_offers = heard_revive;
  cb.kill_task = heard_kill;
  return new_scheduler_cb(&cb);
}

/* Paired samples: each segment of the lifecycle (ns per task) and the chunk of the floor run
 * right after it, as many tasks (ns per task). Noise on a shared machine comes in bursts of a
 * second or more; a segment and its floor chunk are a few milliseconds apart, so the ratio of
 * a pair is far steadier than the ratio of two separate runs, and the median over the pairs is
 * steadier still. */
typedef struct pairs {
  double *life, *base, *ratio;
  size_t n, cap;
} pairs;

static void pairs_add(pairs *p, double life, double base) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 64;
    double *a = realloc(p->life, cap * sizeof *a), *b = NULL, *c = NULL;
    if (a != NULL)
      p->life = a;
    if (a != NULL && (b = realloc(p->base, cap * sizeof *b)) != NULL)
      p->base = b;
    if (b != NULL && (c = realloc(p->ratio, cap * sizeof *c)) != NULL)
      p->ratio = c;
    if (c == NULL)
      die("realloc", TL_ENOMEM);
    p->cap = cap;
  }
  p->life[p->n] = life;
  p->base[p->n] = base;
  p->ratio[p->n] = life / base;
  p->n++;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of n values (sorts them). */
static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void pairs_free(pairs *p) {
  free(p->life);
  free(p->base);
  free(p->ratio);
}

typedef struct lifecycle_run {
  double per_task; /* ns per finished task, the floor's chunks not counted */
  uint64_t finished, launched;
  uint64_t heard; /* callbacks run during the timed loop */
} lifecycle_run;

/* A run's timing in segments, each paired with as many tasks through the floor. */
typedef struct segments {
  floor_state fl;
  pairs *p;
  uint64_t segment, next, spent, seg0;
} segments;

static void segments_start(segments *g, pairs *p, uint64_t segment, unsigned inflight) {
  floor_init(&g->fl, inflight);
  g->p = p;
  g->segment = segment;
  g->next = segment;
  g->spent = 0;
  g->seg0 = now_ns();
}

/* Called with the tasks finished so far: closes a segment once they reach the next boundary. */
static inline void segments_tick(segments *g, uint64_t finished) {
  if (finished < g->next)
    return;
  uint64_t t = now_ns();
  uint64_t tasks = finished - (g->next - g->segment);
  g->spent += t - g->seg0;
  uint64_t base = floor_step(&g->fl, tasks);
  pairs_add(g->p, (double)(t - g->seg0) / (double)tasks, (double)base / (double)tasks);
  g->next = finished + g->segment;
  g->seg0 = now_ns();
}

/* Ends a run: its time, its counts from s, and s freed. */
static void segments_finish(segments *g, tl_scheduler *s, uint64_t finished, uint64_t heard0,
                            lifecycle_run *out) {
  g->spent += now_ns() - g->seg0;
  floor_free(&g->fl);
  tl_stats st;
  tl_stats_get(s, &st);
  out->per_task = (double)g->spent / (double)finished;
  out->finished = finished;
  out->launched = st.launched;
  out->heard = heard - heard0;
  tl_scheduler_free(s);
}

/* One run of the lifecycle loop. Every `segment` finished tasks it runs as many tasks through
 * the floor (a fresh one for the run, with as many records in flight as the lifecycle has
 * launches) and adds the pair to p. */
static void run_lifecycle(unsigned nexec, uint32_t cores, uint64_t ntasks, bool all_callbacks,
                          bool with_running, uint64_t segment, pairs *p, lifecycle_run *out) {
  tl_scheduler *s = all_callbacks ? new_scheduler_all_callbacks() : new_scheduler();
  add_executors(s, nexec, cores);
  tl_taskset_desc d = {0};
  d.ntasks = (uint32_t)ntasks;
  ok(tl_submit(s, &d, NULL), "tl_submit");

  /* Fill every core, then, as a runtime does, offer each executor again when a task of it ends. */
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  tl_offer *offers = malloc(nexec * sizeof *offers);
  size_t cap = (size_t)nexec * cores;
  tl_launch *l = malloc(cap * sizeof *l);
  unsigned *slot_exec = malloc(cap * sizeof *slot_exec);
  if (ids == NULL || offers == NULL || l == NULL || slot_exec == NULL)
    die("malloc", TL_ENOMEM);
  for (unsigned i = 0; i < nexec; i++) {
    exec_id(ids[i], sizeof ids[i], i);
    offers[i].executor_id = ids[i];
    offers[i].cores = cores;
  }
  uint64_t heard0 = heard;
  segments g;
  segments_start(&g, p, segment, (unsigned)cap);
  size_t n;
  ok(tl_resource_offers(s, offers, nexec, l, cap, &n), "tl_resource_offers");
  /* The launches in flight: each one runs, finishes, and its core is offered again. Each slot
   * remembers its executor's index, so the loop copies no ids (its own cost stays small). */
  size_t inflight = n;
  for (size_t i = 0; i < n; i++)
    slot_exec[i] = (unsigned)l[i].offer; /* offers[i] is exec-<i> */
  uint64_t finished = 0;
  tl_update running = {0}, done = {0};
  done.state = TL_TASK_FINISHED;
  while (inflight > 0) {
    for (size_t i = 0; i < inflight;) {
      const char *id = ids[slot_exec[i]];
      tl_tid tid = l[i].tid;
      if (with_running)
        ok(tl_status_update(s, id, tid, &running), "RUNNING");
      ok(tl_status_update(s, id, tid, &done), "FINISHED");
      segments_tick(&g, ++finished);
      tl_offer one = {id, 1};
      size_t got;
      ok(tl_resource_offers(s, &one, 1, &l[i], 1, &got), "tl_resource_offers");
      if (got == 1) {
        i++;
      } else { /* nothing left to launch: the slot goes */
        inflight--;
        l[i] = l[inflight];
        slot_exec[i] = slot_exec[inflight];
      }
    }
  }
  segments_finish(&g, s, finished, heard0, out);
  free(slot_exec);
  free(l);
  free(offers);
  free(ids);
}

/* The lifecycle with executors that report in batches: each executor's launches of one offer
 * (up to its cores, 16) end together and are reported in one tl_status_updates, then its cores
 * are offered again in one round. Paired with the floor like run_lifecycle. deferred: the
 * scheduler delivers with TL_DELIVER_DEFERRED, and tl_dispatch runs once per batch, after its
 * tl_status_updates (the task_ended events of the batch). */
static void run_lifecycle_batched(unsigned nexec, uint32_t cores, uint64_t ntasks, uint64_t segment,
                                  bool deferred, pairs *p, lifecycle_run *out) {
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.clock = bench_clock;
  cfg.heartbeat_timeout_ns = 0;
  cfg.delivery = deferred ? TL_DELIVER_DEFERRED : TL_DELIVER_INLINE;
  tl_callbacks cb = {0};
  cb.task_ended = free_result;
  tl_scheduler *s;
  ok(tl_scheduler_new(&cfg, &cb, &s), "tl_scheduler_new");
  add_executors(s, nexec, cores);
  tl_taskset_desc d = {0};
  d.ntasks = (uint32_t)ntasks;
  ok(tl_submit(s, &d, NULL), "tl_submit");
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  size_t *count = calloc(nexec, sizeof *count);
  tl_tid *tids = malloc((size_t)nexec * cores * sizeof *tids);
  tl_launch *l = malloc(cores * sizeof *l);
  tl_update *done = calloc(cores, sizeof *done);
  if (ids == NULL || count == NULL || tids == NULL || l == NULL || done == NULL)
    die("malloc", TL_ENOMEM);
  for (uint32_t k = 0; k < cores; k++)
    done[k].state = TL_TASK_FINISHED;
  uint64_t finished = 0;
  segments g;
  segments_start(&g, p, segment, nexec * cores);
  size_t busy = 0;
  for (unsigned e = 0; e < nexec; e++) {
    exec_id(ids[e], sizeof ids[e], e);
    tl_offer o = {ids[e], cores};
    size_t n;
    ok(tl_resource_offers(s, &o, 1, l, cores, &n), "tl_resource_offers");
    for (size_t k = 0; k < n; k++)
      tids[(size_t)e * cores + k] = l[k].tid;
    count[e] = n;
    busy += n != 0;
  }
  while (busy > 0) {
    for (unsigned e = 0; e < nexec; e++) {
      if (count[e] == 0)
        continue;
      ok(tl_status_updates(s, ids[e], &tids[(size_t)e * cores], done, count[e], NULL),
         "tl_status_updates");
      if (deferred && tl_dispatch(s) < 0)
        die("tl_dispatch", TL_EBUSY);
      finished += count[e];
      segments_tick(&g, finished);
      tl_offer o = {ids[e], cores};
      size_t n;
      ok(tl_resource_offers(s, &o, 1, l, cores, &n), "tl_resource_offers");
      for (size_t k = 0; k < n; k++)
        tids[(size_t)e * cores + k] = l[k].tid;
      count[e] = n;
      busy -= n == 0;
    }
  }
  segments_finish(&g, s, finished, heard, out); /* only task_ended, which counts nothing */
  free(done);
  free(l);
  free(tids);
  free(count);
  free(ids);
}

/* The lifecycles' sizes: 100 executors of 16 cores, 1,000,000 tasks timed in segments of
 * 100,000, three runs; with --short 4 executors, 20,000 tasks, segments of 5,000, one run. */
typedef struct life_size {
  unsigned nexec;
  uint32_t cores;
  uint64_t ntasks, segment;
  int runs;
} life_size;

static life_size life_sizes(void) {
  life_size z = {100, 16, 1000000, 100000, 3};
  if (short_mode)
    z = (life_size){4, 16, 20000, 5000, 1};
  return z;
}

static void bench_lifecycle(void) {
  const life_size z = life_sizes();
  const unsigned nexec = z.nexec;
  const uint32_t cores = z.cores;
  const uint64_t ntasks = z.ntasks, segment = z.segment;
  const int runs = z.runs;
  pairs plain = {0}, running = {0}, all = {0}, batched = {0}, deferred = {0};
  lifecycle_run r, last_plain, last_all, last_batched;
  uint64_t all_heard = 0, all_finished = 0;
  for (int i = 0; i < runs; i++) {
    run_lifecycle(nexec, cores, ntasks, false, false, segment, &plain, &last_plain);
    run_lifecycle(nexec, cores, ntasks, false, true, segment, &running, &r);
    run_lifecycle(nexec, cores, ntasks, true, false, segment, &all, &last_all);
    run_lifecycle_batched(nexec, cores, ntasks, segment, false, &batched, &last_batched);
    run_lifecycle_batched(nexec, cores, ntasks, segment, true, &deferred, &r);
    all_heard += last_all.heard;
    all_finished += last_all.finished;
  }
  double plain_ratio = median(plain.ratio, plain.n), plain_ns = median(plain.life, plain.n);
  printf("bench=lifecycle value=%.1f unit=ns/task baseline=%.1f ratio=%.2f tasks=%" PRIu64
         " executors=%u cores=%u per_second=%.0f launched=%" PRIu64 " pairs=%zu\n",
         plain_ns, median(plain.base, plain.n), plain_ratio, last_plain.finished, nexec, cores,
         1e9 / plain_ns, last_plain.launched, plain.n);
  double running_ratio = median(running.ratio, running.n);
  double running_ns = median(running.life, running.n);
  printf("bench=lifecycle_with_running value=%.1f unit=ns/task baseline=%.1f ratio=%.2f "
         "executors=%u cores=%u per_second=%.0f vs_lifecycle=%.2f pairs=%zu\n",
         running_ns, median(running.base, running.n), running_ratio, nexec, cores, 1e9 / running_ns,
         running_ratio / plain_ratio, running.n);
  /* Against the plain lifecycle, through the floor both were paired with. */
  double all_ratio = median(all.ratio, all.n);
  printf("bench=lifecycle_all_callbacks value=%.1f unit=ns/task baseline=%.1f ratio=%.2f "
         "executors=%u cores=%u callbacks_per_task=%.2f floor_ratio=%.2f pairs=%zu\n",
         median(all.life, all.n), plain_ns, all_ratio / plain_ratio, nexec, cores,
         (double)all_heard / (double)all_finished, all_ratio, all.n);
  double batched_ratio = median(batched.ratio, batched.n);
  double batched_ns = median(batched.life, batched.n);
  printf("bench=lifecycle_batched value=%.1f unit=ns/task baseline=%.1f ratio=%.2f target=1.5 "
         "batch=%u executors=%u cores=%u per_second=%.0f vs_lifecycle=%.2f launched=%" PRIu64
         " pairs=%zu\n",
         batched_ns, median(batched.base, batched.n), batched_ratio, cores, nexec, cores,
         1e9 / batched_ns, batched_ratio / plain_ratio, last_batched.launched, batched.n);
  /* Against the inline batched lifecycle, through the floor both were paired with. */
  double deferred_ratio = median(deferred.ratio, deferred.n);
  printf("bench=deliver_deferred value=%.1f unit=ns/task baseline=%.1f ratio=%.2f "
         "dispatch_per=batch batch=%u executors=%u floor_ratio=%.2f pairs=%zu\n",
         median(deferred.life, deferred.n), batched_ns, deferred_ratio / batched_ratio, cores,
         nexec, deferred_ratio, deferred.n);
  pairs_free(&deferred);
  pairs_free(&plain);
  pairs_free(&running);
  pairs_free(&all);
  pairs_free(&batched);
}

/* ---------------------------------------------------------------------------------------------
 * 1a. The lifecycle with one GPU per task (docs/performance.md "Resources"): executors of 8
 * cores that declare gpu "0" .. "7", one task set whose every task asks {gpu, 1}, each launch
 * made by tl_resource_offers_grants (its grant written to the caller's array), as
 * run_lifecycle otherwise (each finished task's core offered again at once); against the same
 * lifecycle without resources (the same executors declaring nothing, tasks asking nothing,
 * plain tl_resource_offers). The two run in lockstep, each on its own scheduler: a segment of
 * one, then a segment of the other (which goes first alternates), so each pair of segments
 * shares the machine's weather and the median of the pairs' ratios is the figure. Target: the
 * GPU lifecycle within 1.3x of the cores-only one.
 * ------------------------------------------------------------------------------------------- */

static const char *const gpu_addresses[] = {"0", "1", "2", "3", "4", "5", "6", "7"};

/* A lifecycle that runs in steps. */
typedef struct life {
  tl_scheduler *s;
  uint32_t gpus; /* 0: cores only */
  char (*ids)[32];
  tl_launch *l;
  tl_grant *gr;
  unsigned *slot_exec;
  size_t inflight;
  size_t next;               /* the slot the next step starts at */
  uint64_t finished, grants; /* tasks finished, grants the launches held */
} life;

/* nexec executors of `cores` cores and, with gpus > 0 (at most 8), that many GPUs; one task
 * set of ntasks, each asking one GPU when gpus > 0; the first round filling every core. */
static void life_init(life *f, unsigned nexec, uint32_t cores, uint32_t gpus, uint64_t ntasks) {
  memset(f, 0, sizeof *f);
  f->s = new_scheduler();
  f->gpus = gpus;
  char host[32];
  tl_resource gpu = {.name = "gpu", .addresses = gpu_addresses, .naddresses = gpus};
  size_t cap = (size_t)nexec * cores;
  f->ids = malloc(nexec * sizeof *f->ids);
  tl_offer *offers = malloc(nexec * sizeof *offers);
  f->l = malloc(cap * sizeof *f->l);
  f->gr = malloc(cap * sizeof *f->gr);
  f->slot_exec = malloc(cap * sizeof *f->slot_exec);
  if (f->ids == NULL || offers == NULL || f->l == NULL || f->gr == NULL || f->slot_exec == NULL)
    die("malloc", TL_ENOMEM);
  for (unsigned i = 0; i < nexec; i++) {
    exec_id(f->ids[i], sizeof f->ids[i], i);
    snprintf(host, sizeof host, "host-%u", i / 4);
    tl_executor_desc d = {.id = f->ids[i], .host = host, .cores = cores};
    if (gpus > 0) {
      d.resources = &gpu;
      d.nresources = 1;
    }
    ok(tl_executor_add(f->s, &d), "tl_executor_add");
    offers[i].executor_id = f->ids[i];
    offers[i].cores = cores;
  }
  tl_resource_request q = {.name = "gpu", .amount = 1, .share = 0};
  tl_taskset_desc d = {0};
  d.ntasks = (uint32_t)ntasks;
  if (gpus > 0) {
    d.resources = &q;
    d.nresources = 1;
  }
  ok(tl_submit(f->s, &d, NULL), "tl_submit");
  size_t n, ng = 0;
  if (gpus > 0)
    ok(tl_resource_offers_grants(f->s, offers, nexec, f->l, cap, &n, f->gr, cap, &ng),
       "tl_resource_offers_grants");
  else
    ok(tl_resource_offers(f->s, offers, nexec, f->l, cap, &n), "tl_resource_offers");
  f->grants = ng;
  f->inflight = n;
  for (size_t i = 0; i < n; i++)
    f->slot_exec[i] = (unsigned)f->l[i].offer; /* offers[i] is exec-<i> */
  free(offers);
}

/* Runs until `want` more tasks finish or none is left; returns how many finished. */
static uint64_t life_step(life *f, uint64_t want) {
  uint64_t done0 = f->finished;
  tl_update done = {0};
  done.state = TL_TASK_FINISHED;
  size_t i = f->next < f->inflight ? f->next : 0;
  while (f->inflight > 0 && f->finished - done0 < want) {
    if (i >= f->inflight)
      i = 0;
    const char *eid = f->ids[f->slot_exec[i]];
    ok(tl_status_update(f->s, eid, f->l[i].tid, &done), "FINISHED");
    f->finished++;
    tl_offer one = {eid, 1};
    size_t got, gn = 0;
    if (f->gpus > 0)
      ok(tl_resource_offers_grants(f->s, &one, 1, &f->l[i], 1, &got, &f->gr[i], 1, &gn),
         "tl_resource_offers_grants");
    else
      ok(tl_resource_offers(f->s, &one, 1, &f->l[i], 1, &got), "tl_resource_offers");
    f->grants += gn;
    if (got == 1) {
      i++;
    } else { /* nothing left to launch: the slot goes */
      f->inflight--;
      f->l[i] = f->l[f->inflight];
      f->slot_exec[i] = f->slot_exec[f->inflight];
    }
  }
  f->next = i;
  return f->finished - done0;
}

static void life_free(life *f) {
  ok(tl_scheduler_free(f->s), "tl_scheduler_free");
  free(f->slot_exec);
  free(f->gr);
  free(f->l);
  free(f->ids);
}

/* 100 executors of 8 cores (and 8 GPUs), 1,000,000 tasks each, in pairs of segments of 10,000
 * tasks, three runs; --short: 4 executors, 20,000 tasks, segments of 2,000, one run. */
static void bench_gpu(void) {
  unsigned nexec = short_mode ? 4 : 100;
  uint64_t ntasks = short_mode ? 20000 : 1000000, segment = short_mode ? 2000 : 10000;
  int runs = short_mode ? 1 : 3;
  pairs p = {0};
  uint64_t grants = 0, finished = 0;
  for (int r = 0; r < runs; r++) {
    life plain, gpu;
    life_init(&plain, nexec, 8, 0, ntasks);
    life_init(&gpu, nexec, 8, 8, ntasks);
    for (unsigned k = 0; plain.inflight > 0 || gpu.inflight > 0; k++) {
      uint64_t t0, t1, t2, a, b;
      double ns_plain, ns_gpu;
      if (k % 2 == 0) {
        t0 = now_ns();
        a = life_step(&plain, segment);
        t1 = now_ns();
        b = life_step(&gpu, segment);
        t2 = now_ns();
        ns_plain = (double)(t1 - t0);
        ns_gpu = (double)(t2 - t1);
      } else {
        t0 = now_ns();
        b = life_step(&gpu, segment);
        t1 = now_ns();
        a = life_step(&plain, segment);
        t2 = now_ns();
        ns_gpu = (double)(t1 - t0);
        ns_plain = (double)(t2 - t1);
      }
      if (a == segment && b == segment) /* whole segments only (not the tail) */
        pairs_add(&p, ns_gpu / (double)b, ns_plain / (double)a);
    }
    if (gpu.finished != ntasks || plain.finished != ntasks || gpu.grants != ntasks)
      die("a lifecycle lost tasks or grants", TL_ECORRUPT);
    grants += gpu.grants;
    finished += gpu.finished;
    life_free(&plain);
    life_free(&gpu);
  }
  double gpu_ns = median(p.life, p.n), plain_ns = median(p.base, p.n);
  double lo = p.ratio[0], hi = p.ratio[0];
  for (size_t i = 1; i < p.n; i++) {
    lo = p.ratio[i] < lo ? p.ratio[i] : lo;
    hi = p.ratio[i] > hi ? p.ratio[i] : hi;
  }
  double ratio = median(p.ratio, p.n);
  printf("bench=lifecycle_gpu value=%.1f unit=ns/task baseline=%.1f ratio=%.2f target=1.3 "
         "baseline_is=lifecycle_cores8 tasks=%" PRIu64 " executors=%u cores=8 gpus=8 "
         "per_second=%.0f grants=%" PRIu64 " pairs=%zu ratio_min=%.2f ratio_max=%.2f\n",
         gpu_ns, plain_ns, ratio, finished / (uint64_t)runs, nexec, 1e9 / gpu_ns, grants, p.n, lo,
         hi);
  pairs_free(&p);
}

/* ---------------------------------------------------------------------------------------------
 * 1b. The lifecycle as an embedder meets it: every callback set (task_started included), one
 * task set of 1,000,000 tasks, and rounds as a runtime makes them: each round offers every
 * executor its free cores in one tl_resource_offers (100 x 16 = 1,600 launches), then every
 * launch of the round finishes, reported one tl_status_update each (lifecycle_embedder) or one
 * tl_status_updates per executor's batch (lifecycle_batched_embedder). So each round makes and
 * delivers 1,600 task_started events in one call and 1,600 task_ended events over the round's
 * updates. Paired with the floor like the plain lifecycle, segment by segment; the targets are
 * the plain twins' (3x and 1.5x the floor).
 * ------------------------------------------------------------------------------------------- */

static void run_embedder(unsigned nexec, uint32_t cores, uint64_t ntasks, uint64_t segment,
                         bool batched, pairs *p, lifecycle_run *out) {
  tl_scheduler *s = new_scheduler_all_callbacks();
  add_executors(s, nexec, cores);
  tl_taskset_desc d = {0};
  d.ntasks = (uint32_t)ntasks;
  ok(tl_submit(s, &d, NULL), "tl_submit");
  size_t cap = (size_t)nexec * cores;
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  tl_offer *offers = malloc(nexec * sizeof *offers);
  tl_launch *l = malloc(cap * sizeof *l);
  tl_tid *tids = malloc(cap * sizeof *tids);
  size_t *count = calloc(nexec, sizeof *count);
  tl_update *done = calloc(cores, sizeof *done);
  if (ids == NULL || offers == NULL || l == NULL || tids == NULL || count == NULL || done == NULL)
    die("malloc", TL_ENOMEM);
  for (unsigned e = 0; e < nexec; e++) {
    exec_id(ids[e], sizeof ids[e], e);
    offers[e].executor_id = ids[e];
    offers[e].cores = cores;
  }
  for (uint32_t k = 0; k < cores; k++)
    done[k].state = TL_TASK_FINISHED;
  uint64_t heard0 = heard, finished = 0;
  segments g;
  segments_start(&g, p, segment, (unsigned)cap);
  for (;;) {
    size_t n;
    ok(tl_resource_offers(s, offers, nexec, l, cap, &n), "tl_resource_offers");
    if (n == 0)
      break;
    if (batched) { /* each executor's launches of the round, in one call */
      memset(count, 0, nexec * sizeof *count);
      for (size_t i = 0; i < n; i++) {
        unsigned e = (unsigned)l[i].offer;
        tids[(size_t)e * cores + count[e]++] = l[i].tid;
      }
      for (unsigned e = 0; e < nexec; e++)
        if (count[e] > 0)
          ok(tl_status_updates(s, ids[e], &tids[(size_t)e * cores], done, count[e], NULL),
             "tl_status_updates");
    } else {
      for (size_t i = 0; i < n; i++)
        ok(tl_status_update(s, ids[l[i].offer], l[i].tid, &done[0]), "FINISHED");
    }
    finished += n;
    segments_tick(&g, finished);
  }
  segments_finish(&g, s, finished, heard0, out);
  free(done);
  free(count);
  free(tids);
  free(l);
  free(offers);
  free(ids);
}

static void bench_embedder(void) {
  const life_size z = life_sizes();
  const unsigned nexec = z.nexec;
  const uint32_t cores = z.cores;
  const uint64_t ntasks = z.ntasks, segment = z.segment;
  const int runs = z.runs;
  pairs single = {0}, batched = {0};
  lifecycle_run rs, rb;
  uint64_t heard_s = 0, heard_b = 0, fin_s = 0, fin_b = 0;
  for (int i = 0; i < runs; i++) {
    run_embedder(nexec, cores, ntasks, segment, false, &single, &rs);
    run_embedder(nexec, cores, ntasks, segment, true, &batched, &rb);
    heard_s += rs.heard;
    fin_s += rs.finished;
    heard_b += rb.heard;
    fin_b += rb.finished;
  }
  printf("bench=lifecycle_embedder value=%.1f unit=ns/task baseline=%.1f ratio=%.2f target=3 "
         "tasks=%" PRIu64 " executors=%u cores=%u round=%u callbacks_per_task=%.2f "
         "per_second=%.0f pairs=%zu\n",
         median(single.life, single.n), median(single.base, single.n),
         median(single.ratio, single.n), rs.finished, nexec, cores, nexec * cores,
         (double)heard_s / (double)fin_s, 1e9 / median(single.life, single.n), single.n);
  printf("bench=lifecycle_batched_embedder value=%.1f unit=ns/task baseline=%.1f ratio=%.2f "
         "target=1.5 tasks=%" PRIu64 " executors=%u cores=%u round=%u batch=%u "
         "callbacks_per_task=%.2f per_second=%.0f pairs=%zu\n",
         median(batched.life, batched.n), median(batched.base, batched.n),
         median(batched.ratio, batched.n), rb.finished, nexec, cores, nexec * cores, cores,
         (double)heard_b / (double)fin_b, 1e9 / median(batched.life, batched.n), batched.n);
  pairs_free(&single);
  pairs_free(&batched);
}

/* ---------------------------------------------------------------------------------------------
 * 2. Executor loss: the cost of losing an executor with 100 running tasks must not depend on
 * how many tasks run elsewhere (cleanup is O(tasks on that executor)).
 * ------------------------------------------------------------------------------------------- */

/* Evicts the caches: writes and reads a buffer larger than any last-level cache. */
static void evict_caches(void) {
  static volatile unsigned char *junk;
  const size_t size = 64u << 20;
  if (junk == NULL && (junk = malloc(size)) == NULL)
    die("malloc", TL_ENOMEM);
  for (size_t i = 0; i < size; i += 64)
    junk[i] = (unsigned char)(junk[i] + 1);
}

/* Returns the median ns per cleaned task of losing an executor with 100 running tasks while
 * `elsewhere` tasks run on other executors: 48 such victims are launched first, the others
 * after, then the victims are lost one by one, each loss timed on its own (one-phase, or
 * two-phase when two_phase). With cold, the caches are evicted before each loss: in a driver, an
 * executor's records have long left the cache when it is lost, whatever runs elsewhere, while a
 * benchmark that has just built a small ledger would find it all in cache and compare a warm
 * small case with a cold large one. */
static double loss_per_task(uint64_t elsewhere, bool two_phase, int reps, bool cold) {
  enum { VICTIMS = 48 };
  const uint32_t victim_cores = 100, other_cores = 1000;
  unsigned others = (unsigned)((elsewhere + other_cores - 1) / other_cores);
  double *per = malloc((size_t)reps * VICTIMS * sizeof *per);
  tl_launch *l = malloc((size_t)other_cores * sizeof *l);
  if (per == NULL || l == NULL)
    die("malloc", TL_ENOMEM);
  size_t nper = 0;
  for (int rep = 0; rep < reps; rep++) {
    tl_scheduler *s = new_scheduler();
    char vid[VICTIMS][32], id[32];
    for (unsigned k = 0; k < VICTIMS; k++) {
      snprintf(vid[k], sizeof vid[k], "victim-%u", k);
      tl_executor_desc v = {
          .id = vid[k], .host = "victim-host", .rack = NULL, .cores = victim_cores, .ud = NULL};
      ok(tl_executor_add(s, &v), "add victim");
    }
    add_executors(s, others, other_cores);
    tl_taskset_desc d = {0};
    d.ntasks = (uint32_t)(elsewhere + (uint64_t)VICTIMS * victim_cores);
    d.stage_id = 1;
    ok(tl_submit(s, &d, NULL), "tl_submit");
    size_t n;
    for (unsigned k = 0; k < VICTIMS; k++) {
      tl_offer vo = {vid[k], victim_cores};
      ok(tl_resource_offers(s, &vo, 1, l, victim_cores, &n), "offer victim");
    }
    for (unsigned i = 0; i < others; i++) {
      exec_id(id, sizeof id, i);
      tl_offer o = {id, other_cores};
      ok(tl_resource_offers(s, &o, 1, l, other_cores, &n), "offer others");
    }
    tl_loss_reason pending = {TL_LOSS_PENDING, false, 0, NULL};
    tl_loss_reason exited = {TL_LOSS_EXITED, false, 1, "exited"};
    for (unsigned k = 0; k < VICTIMS; k++) {
      if (cold)
        evict_caches();
      uint64_t t0 = now_ns();
      if (two_phase)
        ok(tl_executor_lost(s, vid[k], &pending), "lost pending");
      ok(tl_executor_lost(s, vid[k], &exited), "lost");
      per[nper++] = (double)(now_ns() - t0) / victim_cores;
    }
    tl_scheduler_free(s);
  }
  qsort(per, nper, sizeof *per, cmp_double);
  double median = per[nper / 2];
  free(per);
  free(l);
  return median;
}

static void bench_loss(void) {
  int reps = short_mode ? 1 : 5;
  uint64_t big_n = short_mode ? 20000 : 1000000;
  double small = loss_per_task(1000, false, reps, true);
  double big = loss_per_task(big_n, false, short_mode ? 1 : 2, true);
  double small_hot = loss_per_task(1000, false, reps, false);
  double big_hot = loss_per_task(big_n, false, short_mode ? 1 : 2, false);
  printf("bench=executor_loss value=%.1f unit=ns/cleaned_task baseline=%.1f ratio=%.2f "
         "victim_tasks=100 elsewhere=%" PRIu64 " baseline_elsewhere=1000 caches=evicted "
         "hot_value=%.1f hot_baseline=%.1f hot_ratio=%.2f\n",
         big, small, big / small, big_n, big_hot, small_hot, big_hot / small_hot);
  double two = loss_per_task(1000, true, reps, true);
  printf("bench=executor_loss_two_phase value=%.1f unit=ns/cleaned_task baseline=%.1f "
         "ratio=%.2f victim_tasks=100 elsewhere=1000 caches=evicted\n",
         two, small, two / small);
}

/* A heartbeat-expiry sweep: tl_tick finds every one of many silent executors. */
static void bench_heartbeat_sweep(void) {
  const unsigned n = short_mode ? 500 : 10000;
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.clock = bench_clock;
  cfg.max_tombstones = n;
  tl_scheduler *s;
  ok(tl_scheduler_new(&cfg, NULL, &s), "tl_scheduler_new");
  manual_clock = 0;
  add_executors(s, n, 4);
  /* Baseline: the same executors lost one by one through tl_executor_lost. */
  tl_scheduler *b;
  ok(tl_scheduler_new(&cfg, NULL, &b), "tl_scheduler_new");
  add_executors(b, n, 4);
  tl_loss_reason why = {TL_LOSS_HEARTBEAT_TIMEOUT, true, 0, NULL};
  char id[32];
  uint64_t t0 = now_ns();
  for (unsigned i = 0; i < n; i++) {
    exec_id(id, sizeof id, i);
    ok(tl_executor_lost(b, id, &why), "lost");
  }
  uint64_t t1 = now_ns();
  manual_clock = cfg.heartbeat_timeout_ns + 1;
  uint64_t t2 = now_ns();
  (void)tl_tick(s);
  uint64_t t3 = now_ns();
  tl_stats st;
  tl_stats_get(s, &st);
  if (st.executors_alive != 0)
    die("heartbeat sweep left executors alive", TL_ECORRUPT);
  double per = (double)(t3 - t2) / n, base = (double)(t1 - t0) / n;
  printf("bench=heartbeat_sweep value=%.1f unit=ns/executor baseline=%.1f ratio=%.2f "
         "executors=%u\n",
         per, base, per / base, n);
  tl_scheduler_free(s);
  tl_scheduler_free(b);
  manual_clock = 0;
}

/* ---------------------------------------------------------------------------------------------
 * 4. Memory: the scheduler's own accounting, per record.
 * ------------------------------------------------------------------------------------------- */

static void bench_memory(void) {
  const unsigned nexec = short_mode ? 10 : 100;
  const uint32_t cores = 100;
  const uint32_t ntasks = short_mode ? 10000 : 1000000;
  tl_scheduler *s = new_scheduler();
  tl_stats empty, with_execs, submitted, running;
  tl_stats_get(s, &empty);
  add_executors(s, nexec, cores);
  tl_stats_get(s, &with_execs);
  tl_taskset_desc d = {0};
  d.ntasks = ntasks;
  ok(tl_submit(s, &d, NULL), "tl_submit");
  tl_stats_get(s, &submitted);
  /* The ids outlive the rounds: a launch points at its offer's id. */
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  tl_launch *l = malloc(cores * sizeof *l);
  if (ids == NULL || l == NULL)
    die("malloc", TL_ENOMEM);
  size_t n;
  for (unsigned i = 0; i < nexec; i++) {
    exec_id(ids[i], sizeof ids[i], i);
    tl_offer o = {ids[i], cores};
    ok(tl_resource_offers(s, &o, 1, l, cores, &n), "offer");
  }
  tl_stats_get(s, &running);
  size_t attempts = running.attempts_running;
  printf("bench=memory_per_executor value=%.1f unit=bytes executors=%u\n",
         (double)(with_execs.mem_live_bytes - empty.mem_live_bytes) / nexec, nexec);
  printf("bench=memory_per_pending_task value=%.2f unit=bytes target=16 tasks=%u\n",
         (double)(submitted.mem_live_bytes - with_execs.mem_live_bytes) / ntasks, ntasks);
  printf("bench=memory_per_running_attempt value=%.1f unit=bytes target=160 attempts=%zu\n",
         (double)(running.mem_live_bytes - submitted.mem_live_bytes) / (double)attempts, attempts);

  /* Churn: every task runs to the end, one offer per executor per round; then memory must be
   * back to the empty scheduler's. */
  tl_update done = {0};
  done.state = TL_TASK_FINISHED;
  uint64_t churned = 0;
  tl_launch *round = malloc((size_t)nexec * cores * sizeof *round);
  size_t nround = 0;
  tl_stats st;
  tl_stats_get(s, &st);
  for (uint64_t tid = st.launched - st.attempts_running + 1; tid <= st.launched; tid++) {
    round[nround].tid = tid; /* the first launches: one executor each, in tid order */
    round[nround].executor_id = ids[(tid - 1) / cores];
    nround++;
  }
  while (nround > 0) {
    for (size_t i = 0; i < nround; i++) {
      ok(tl_status_update(s, round[i].executor_id, round[i].tid, &done), "FINISHED");
      churned++;
    }
    size_t next = 0;
    for (unsigned i = 0; i < nexec; i++) {
      tl_offer o = {ids[i], cores};
      ok(tl_resource_offers(s, &o, 1, round + next, cores, &n), "offer");
      next += n;
    }
    nround = next;
  }
  free(round);
  tl_loss_reason why = {TL_LOSS_KILLED, false, 0, NULL};
  for (unsigned i = 0; i < nexec; i++)
    ok(tl_executor_lost(s, ids[i], &why), "lost");
  manual_clock += 3600ull * 1000000000ull;
  (void)tl_tick(s);
  tl_stats_get(s, &st);
  printf("bench=memory_after_churn value=%zu unit=bytes baseline=%zu ratio=%.3f blocks=%zu "
         "baseline_blocks=%zu lifecycles=%" PRIu64 "\n",
         st.mem_live_bytes, empty.mem_live_bytes,
         (double)st.mem_live_bytes / (double)empty.mem_live_bytes, st.mem_live_blocks,
         empty.mem_live_blocks, churned);
  tl_scheduler_free(s);
  free(l);
  free(ids);
  manual_clock = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Offer rounds: every executor offered at once. The cost per launched task with many active task
 * sets against one; and a round in which every task set waits for locality (its tasks prefer a
 * host whose one executor is busy) against the same round with few such task sets: a round's
 * cost should follow the offers, not the task sets.
 * ------------------------------------------------------------------------------------------- */

/* All executors offered, their free cores each; returns the launches. */
static size_t offer_all(tl_scheduler *s, const tl_offer *offers, unsigned n, tl_launch *out,
                        size_t cap) {
  size_t nout;
  ok(tl_resource_offers(s, offers, n, out, cap, &nout), "tl_resource_offers");
  return nout;
}

/* ns per launched task for rounds that fill nexec one-core executors from ntasksets task sets
 * (every launch then finished, so the next round has as much to fill). */
static double round_per_launch(unsigned nexec, unsigned ntasksets, unsigned rounds) {
  tl_scheduler *s = new_scheduler();
  add_executors(s, nexec, 1);
  tl_offer *offers = malloc(nexec * sizeof *offers);
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  tl_launch *out = malloc(nexec * sizeof *out);
  if (offers == NULL || ids == NULL || out == NULL)
    die("malloc", TL_ENOMEM);
  for (unsigned i = 0; i < nexec; i++) {
    exec_id(ids[i], sizeof ids[i], i);
    offers[i].executor_id = ids[i];
    offers[i].cores = 1;
  }
  uint32_t per = (uint32_t)((uint64_t)nexec * rounds / ntasksets + 1);
  for (unsigned k = 0; k < ntasksets; k++) {
    tl_taskset_desc d = {.stage_id = k, .priority = k, .ntasks = per};
    ok(tl_submit(s, &d, NULL), "tl_submit");
  }
  uint64_t launched = 0, spent = 0;
  tl_update fin = {.state = TL_TASK_FINISHED};
  for (unsigned r = 0; r < rounds; r++) {
    uint64_t t0 = now_ns();
    size_t n = offer_all(s, offers, nexec, out, nexec);
    spent += now_ns() - t0;
    launched += n;
    for (size_t i = 0; i < n; i++)
      ok(tl_status_update(s, out[i].executor_id, out[i].tid, &fin), "tl_status_update");
  }
  free(out);
  free(ids);
  free(offers);
  ok(tl_scheduler_free(s), "tl_scheduler_free");
  return launched > 0 ? (double)spent / (double)launched : 0.0;
}

/* ns per offer of a round in which ntasksets task sets all wait for locality and nothing
 * launches. */
static double held_round_per_offer(unsigned nexec, unsigned ntasksets, unsigned rounds) {
  tl_scheduler *s = new_scheduler();
  add_executors(s, nexec, 1);
  tl_executor_desc busy = {.id = "busy", .host = "busy-host", .rack = NULL, .cores = 1, .ud = NULL};
  ok(tl_executor_add(s, &busy), "tl_executor_add");
  tl_offer one = {"busy", 1};
  tl_launch l;
  size_t n;
  tl_location pref = {"busy-host", NULL};
  tl_task_desc tasks[2] = {{&pref, 1}, {&pref, 1}};
  for (unsigned k = 0; k < ntasksets; k++) {
    tl_taskset_desc d = {.stage_id = k, .priority = k, .ntasks = 2, .tasks = tasks};
    ok(tl_submit(s, &d, NULL), "tl_submit");
  }
  ok(tl_resource_offers(s, &one, 1, &l, 1, &n), "tl_resource_offers"); /* busy is busy now */
  tl_offer *offers = malloc(nexec * sizeof *offers);
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  if (offers == NULL || ids == NULL)
    die("malloc", TL_ENOMEM);
  for (unsigned i = 0; i < nexec; i++) {
    exec_id(ids[i], sizeof ids[i], i);
    offers[i].executor_id = ids[i];
    offers[i].cores = 1;
  }
  tl_launch *out = malloc(nexec * sizeof *out);
  if (out == NULL)
    die("malloc", TL_ENOMEM);
  uint64_t spent = 0;
  for (unsigned r = 0; r < rounds; r++) {
    uint64_t t0 = now_ns();
    if (offer_all(s, offers, nexec, out, nexec) != 0)
      die("a held round launched", TL_ESTATE);
    spent += now_ns() - t0;
  }
  free(out);
  free(ids);
  free(offers);
  ok(tl_scheduler_free(s), "tl_scheduler_free");
  return (double)spent / ((double)rounds * nexec);
}

static void bench_offers(void) {
  unsigned nexec = short_mode ? 200 : 10000, many = short_mode ? 20 : 1000;
  unsigned rounds = short_mode ? 3 : 20;
  double one = round_per_launch(nexec, 1, rounds);
  double lots = round_per_launch(nexec, many, rounds);
  printf("bench=offers_many_tasksets value=%.1f unit=ns/launch baseline=%.1f ratio=%.2f "
         "executors=%u tasksets=%u\n",
         lots, one, lots / one, nexec, many);
  double few_held = held_round_per_offer(nexec, 10, rounds);
  double all_held = held_round_per_offer(nexec, many, rounds);
  printf("bench=offers_all_held value=%.1f unit=ns/offer baseline=%.1f ratio=%.2f "
         "executors=%u tasksets=%u baseline_tasksets=10\n",
         all_held, few_held, all_held / few_held, nexec, many);
}

/* ---------------------------------------------------------------------------------------------
 * Threads: status updates issued by 2 threads at once against the same updates issued by one.
 * Every task is launched up front, on executors split in two halves; then each thread owns one
 * half (its executors and their tids) and sends RUNNING then FINISHED for each of its tids, with
 * a task_ended callback set, so every FINISHED update makes an event and dispatches it. The
 * baseline is one thread sending all of them, the same way. Throughput of 2 threads at least
 * that of one means the lock does not collapse under contention (on a 2-core machine, 2 threads
 * that serialise on one mutex cannot be much faster than one).
 *
 * Context switches: getrusage(RUSAGE_THREAD) counts each issuing thread's voluntary and
 * involuntary switches over its loop; their sum is divided by the batches, one per FINISHED
 * update (the call that made an event and dispatched it). What this measures: the library never
 * hands work to another thread (the calling thread becomes the dispatcher, or leaves its events
 * to the thread already dispatching), so a dispatch costs no switch of its own. What shows is
 * lock contention (a thread sleeping in a futex wait for the scheduler's mutex) plus the OS's
 * preemption; the single-thread run has no contention, so its figure is preemption alone and
 * often 0 (then ratio=inf, or 1 when the 2-thread runs saw none either). target=1 is the
 * requirement: at most one switch per batch.
 * other_thread_delivered says how many task_ended events the other thread delivered, because
 * it was dispatching when they were made.
 * ------------------------------------------------------------------------------------------- */

typedef struct thr_task {
  tl_tid tid;
  unsigned exec; /* index of its executor */
} thr_task;

typedef struct thr_worker {
  _Alignas(64) tl_scheduler *s; /* each worker on its own cache lines: no false sharing */
  const char (*ids)[32];
  const thr_task *tasks;
  size_t ntasks;
  tl_tid lo, hi; /* the tids it owns: tasks were launched in order, so a range */
  pthread_barrier_t *start;
  uint64_t t0, t1;
  long vcsw, ivcsw;
  uint64_t delivered, delivered_other; /* task_ended events this thread delivered */
} thr_worker;

static _Thread_local thr_worker *thr_self;

static void thr_task_ended(void *ud, const tl_task_info *t, const tl_task_end *e) {
  free_result(ud, t, e);
  thr_worker *w = thr_self; /* the thread dispatching: one of the workers */
  if (w == NULL)
    return;
  w->delivered++;
  if (t->tid < w->lo || t->tid > w->hi)
    w->delivered_other++;
}

static void thread_rusage(struct rusage *r) {
#ifdef RUSAGE_THREAD
  getrusage(RUSAGE_THREAD, r);
#else
  getrusage(RUSAGE_SELF, r); /* the main thread only waits in pthread_join meanwhile */
#endif
}

static void *thr_main(void *arg) {
  thr_worker *w = arg;
  thr_self = w;
  tl_update running = {0}, done = {0};
  done.state = TL_TASK_FINISHED;
  pthread_barrier_wait(w->start);
  struct rusage r0, r1;
  thread_rusage(&r0);
  w->t0 = now_ns();
  for (size_t i = 0; i < w->ntasks; i++) {
    const char *id = w->ids[w->tasks[i].exec];
    ok(tl_status_update(w->s, id, w->tasks[i].tid, &running), "RUNNING");
    ok(tl_status_update(w->s, id, w->tasks[i].tid, &done), "FINISHED");
  }
  w->t1 = now_ns();
  thread_rusage(&r1);
  w->vcsw = r1.ru_nvcsw - r0.ru_nvcsw;
  w->ivcsw = r1.ru_nivcsw - r0.ru_nivcsw;
  return NULL;
}

typedef struct thr_result {
  double secs; /* from the first thread's start to the last one's end */
  long vcsw, ivcsw;
  uint64_t tasks, delivered_other;
} thr_result;

/* One run: nexec executors of `cores` cores each, all filled; then nthreads threads, each
 * owning an equal share of the executors, send RUNNING and FINISHED for every task. */
static void thr_run(unsigned nthreads, unsigned nexec, uint32_t cores, thr_result *out) {
  if (nthreads < 1 || nthreads > 2 || nexec % nthreads != 0)
    die("threads: 1 or 2 threads, each owning whole executors", TL_EINVAL);
  tl_callbacks cb = {0};
  cb.task_ended = thr_task_ended;
  tl_scheduler *s = new_scheduler_cb(&cb);
  add_executors(s, nexec, cores);
  size_t ntasks = (size_t)nexec * cores;
  tl_taskset_desc d = {0};
  d.ntasks = (uint32_t)ntasks;
  ok(tl_submit(s, &d, NULL), "tl_submit");
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  thr_task *tasks = malloc(ntasks * sizeof *tasks);
  tl_launch *l = malloc(cores * sizeof *l);
  if (ids == NULL || tasks == NULL || l == NULL)
    die("malloc", TL_ENOMEM);
  /* Executor by executor, so the tasks come out grouped by executor, in tid order. */
  size_t nt = 0;
  for (unsigned i = 0; i < nexec; i++) {
    exec_id(ids[i], sizeof ids[i], i);
    tl_offer o = {ids[i], cores};
    size_t n;
    ok(tl_resource_offers(s, &o, 1, l, cores, &n), "tl_resource_offers");
    if (n != cores)
      die("an executor was not filled", TL_ESTATE);
    for (size_t k = 0; k < n; k++) {
      tasks[nt].tid = l[k].tid;
      tasks[nt].exec = i;
      nt++;
    }
  }
  free(l);

  pthread_barrier_t start;
  if (pthread_barrier_init(&start, NULL, nthreads) != 0)
    die("pthread_barrier_init", TL_ENOMEM);
  thr_worker w[2];
  pthread_t th[2];
  memset(w, 0, sizeof w);
  for (unsigned k = 0; k < nthreads; k++) {
    /* nexec is a multiple of nthreads: each share is whole executors */
    size_t from = ntasks * k / nthreads, to = ntasks * (k + 1) / nthreads;
    w[k].s = s;
    w[k].ids = (const char(*)[32])ids;
    w[k].tasks = tasks + from;
    w[k].ntasks = to - from;
    w[k].lo = tasks[from].tid;
    w[k].hi = tasks[to - 1].tid;
    w[k].start = &start;
  }
  for (unsigned k = 0; k < nthreads; k++)
    if (pthread_create(&th[k], NULL, thr_main, &w[k]) != 0)
      die("pthread_create", TL_ENOMEM);
  for (unsigned k = 0; k < nthreads; k++)
    pthread_join(th[k], NULL);
  pthread_barrier_destroy(&start);

  uint64_t t0 = UINT64_MAX, t1 = 0, delivered = 0;
  memset(out, 0, sizeof *out);
  for (unsigned k = 0; k < nthreads; k++) {
    if (w[k].t0 < t0)
      t0 = w[k].t0;
    if (w[k].t1 > t1)
      t1 = w[k].t1;
    out->vcsw += w[k].vcsw;
    out->ivcsw += w[k].ivcsw;
    delivered += w[k].delivered;
    out->delivered_other += w[k].delivered_other;
  }
  out->secs = (double)(t1 - t0) / 1e9;
  out->tasks = ntasks;
  tl_stats st;
  tl_stats_get(s, &st);
  if (delivered != ntasks || st.attempts_running != 0 || st.succeeded != ntasks)
    die("threads: not every task ended once", TL_ECORRUPT);
  ok(tl_scheduler_free(s), "tl_scheduler_free");
  free(tasks);
  free(ids);
}

static void bench_threads(void) {
  /* Full: 100 executors x 5,000 cores = 500,000 tasks, 1,000,000 status updates per run. */
  const unsigned nexec = short_mode ? 4 : 100;
  const uint32_t cores = short_mode ? 250 : 5000;
  const int runs = short_mode ? 1 : 5;
  thr_result one = {.secs = 1e300}, two = {.secs = 1e300}, r;
  long one_sw = 0, two_v = 0, two_iv = 0;
  uint64_t one_batches = 0, two_batches = 0, two_other = 0;
  for (int i = 0; i < runs; i++) { /* interleaved, so noise falls on both alike */
    thr_run(1, nexec, cores, &r);
    one_sw += r.vcsw + r.ivcsw;
    one_batches += r.tasks;
    if (r.secs < one.secs)
      one = r;
    thr_run(2, nexec, cores, &r);
    two_v += r.vcsw;
    two_iv += r.ivcsw;
    two_batches += r.tasks;
    two_other += r.delivered_other;
    if (r.secs < two.secs)
      two = r;
  }
  uint64_t updates = 2 * one.tasks;
  double one_rate = (double)updates / one.secs, two_rate = (double)updates / two.secs;
  printf("bench=threads_status_updates value=%.0f unit=updates/s baseline=%.0f ratio=%.2f "
         "threads=2 baseline_threads=1 updates=%" PRIu64 " executors=%u runs=%d\n",
         two_rate, one_rate, two_rate / one_rate, updates, nexec, runs);
  /* Switches summed over every run (a rate: more runs, less noise); per batch = per FINISHED. */
  double two_per = (double)(two_v + two_iv) / (double)two_batches;
  double one_per = (double)one_sw / (double)one_batches;
  double ratio = one_per > 0 ? two_per / one_per : (two_per > 0 ? (double)INFINITY : 1.0);
  printf("bench=threads_context_switches value=%.6f unit=switches/batch baseline=%.6f "
         "ratio=%.2f target=1 per_update=%.6f voluntary=%ld involuntary=%ld baseline_switches=%ld "
         "batches=%" PRIu64 " other_thread_delivered=%.3f threads=2 baseline_threads=1 runs=%d\n",
         two_per, one_per, ratio, two_per / 2, two_v, two_iv, one_sw, two_batches,
         (double)two_other / (double)two_batches, runs);
}

/* ---------------------------------------------------------------------------------------------
 * Snapshots: tl_snapshot, tl_scheduler_restore and the reconciliation of every executor, with
 * 10,000 attempts running on 16 executors, per running attempt; the baseline is the launch of
 * those attempts (tl_resource_offers, per launch), measured in the same run.
 * ------------------------------------------------------------------------------------------- */

typedef struct membuf {
  uint8_t *p;
  size_t n, cap, at;
} membuf;

static int membuf_write(void *ud, const void *buf, size_t n) {
  membuf *m = ud;
  if (m->n + n > m->cap) {
    m->cap = (m->n + n) * 2;
    if ((m->p = realloc(m->p, m->cap)) == NULL)
      die("realloc", TL_ENOMEM);
  }
  memcpy(m->p + m->n, buf, n);
  m->n += n;
  return 0;
}

static int membuf_read(void *ud, void *buf, size_t n) {
  membuf *m = ud;
  if (n > m->n - m->at)
    n = m->n - m->at;
  memcpy(buf, m->p + m->at, n);
  m->at += n;
  return (int)n;
}

static bool restored_payload(void *ud, const tl_taskset_info *ts, void **payload) {
  (void)ud;
  (void)ts;
  *payload = NULL;
  return true;
}

static void bench_snapshot(void) {
  const unsigned nexec = 16;
  const uint32_t cores = short_mode ? 63 : 625;
  const int reps = short_mode ? 3 : 15;
  double *snap = malloc((size_t)reps * sizeof *snap), *rest = malloc((size_t)reps * sizeof *rest);
  double *launch = malloc((size_t)reps * sizeof *launch);
  char(*ids)[32] = malloc(nexec * sizeof *ids);
  tl_launch *l = malloc(cores * sizeof *l);
  tl_tid *tids = malloc(cores * sizeof *tids);
  if (snap == NULL || rest == NULL || launch == NULL || ids == NULL || l == NULL || tids == NULL)
    die("malloc", TL_ENOMEM);
  tl_tid **by_exec = calloc(nexec, sizeof *by_exec);
  size_t attempts = 0, bytes = 0;
  for (int r = 0; r < reps; r++) {
    tl_callbacks cb = {0};
    cb.task_ended = free_result;
    cb.taskset_restored = restored_payload;
    tl_scheduler *s = new_scheduler_cb(&cb);
    add_executors(s, nexec, cores);
    tl_taskset_desc d = {0};
    d.ntasks = nexec * cores;
    ok(tl_submit(s, &d, NULL), "tl_submit");
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < nexec; i++) {
      exec_id(ids[i], sizeof ids[i], i);
      tl_offer o = {ids[i], cores};
      size_t n;
      ok(tl_resource_offers(s, &o, 1, l, cores, &n), "offer");
      if (by_exec[i] == NULL && (by_exec[i] = malloc(cores * sizeof **by_exec)) == NULL)
        die("malloc", TL_ENOMEM);
      for (size_t k = 0; k < n; k++)
        by_exec[i][k] = l[k].tid;
    }
    uint64_t t1 = now_ns();
    tl_stats st;
    tl_stats_get(s, &st);
    attempts = st.attempts_running;
    membuf m = {NULL, 0, 0, 0};
    uint64_t t2 = now_ns();
    ok(tl_snapshot(s, membuf_write, &m), "tl_snapshot");
    uint64_t t3 = now_ns();
    bytes = m.n;
    ok(tl_scheduler_free(s), "tl_scheduler_free");
    tl_config cfg;
    tl_config_init(&cfg);
    cfg.clock = bench_clock;
    cfg.heartbeat_timeout_ns = 0;
    uint64_t t4 = now_ns();
    ok(tl_scheduler_restore(&cfg, &cb, membuf_read, &m, &s), "tl_scheduler_restore");
    for (unsigned i = 0; i < nexec; i++) {
      size_t nunknown;
      ok(tl_executor_reconcile(s, ids[i], by_exec[i], cores, NULL, 0, &nunknown), "reconcile");
    }
    uint64_t t5 = now_ns();
    tl_stats_get(s, &st);
    if (st.attempts_running != attempts || st.executors_alive != nexec)
      die("reconcile left attempts frozen", TL_ECORRUPT);
    ok(tl_scheduler_free(s), "tl_scheduler_free");
    free(m.p);
    launch[r] = (double)(t1 - t0) / (double)attempts;
    snap[r] = (double)(t3 - t2) / (double)attempts;
    rest[r] = (double)(t5 - t4) / (double)attempts;
  }
  double base = median(launch, (size_t)reps), sv = median(snap, (size_t)reps),
         rv = median(rest, (size_t)reps);
  printf("bench=snapshot value=%.1f unit=ns/running_attempt baseline=%.1f ratio=%.2f target=200 "
         "attempts=%zu executors=%u\n",
         sv, base, sv / base, attempts, nexec);
  printf("bench=snapshot_bytes value=%.1f unit=bytes/running_attempt target=64 attempts=%zu "
         "image=%zu\n",
         (double)bytes / (double)attempts, attempts, bytes);
  printf("bench=restore_and_reconcile value=%.1f unit=ns/running_attempt baseline=%.1f "
         "ratio=%.2f attempts=%zu executors=%u total_ms=%.2f\n",
         rv, base, rv / base, attempts, nexec, rv * (double)attempts / 1e6);
  for (unsigned i = 0; i < nexec; i++)
    free(by_exec[i]);
  free(by_exec);
  free(snap);
  free(rest);
  free(launch);
  free(ids);
  free(l);
  free(tids);
}

int main(int argc, char **argv) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--short") == 0) {
      short_mode = true;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      fprintf(
          stderr,
          "usage: %s [--short] [--only "
          "lifecycle|gpu|embedder|loss|heartbeat|memory|offers|threads|snapshot|profile|profile-"
          "batched|\n"
          "profile-embedder|profile-batched-embedder]\n",
          argv[0]);
      return 2;
    }
  }
  printf("# tl-bench taskledger %s%s\n", tl_version_string(), short_mode ? " (short)" : "");
  if (only == NULL || strcmp(only, "lifecycle") == 0)
    bench_lifecycle();
  if (only == NULL || strcmp(only, "gpu") == 0)
    bench_gpu();
  if (only == NULL || strcmp(only, "embedder") == 0)
    bench_embedder();
  if (only == NULL || strcmp(only, "loss") == 0)
    bench_loss();
  if (only == NULL || strcmp(only, "heartbeat") == 0)
    bench_heartbeat_sweep();
  if (only == NULL || strcmp(only, "memory") == 0)
    bench_memory();
  if (only == NULL || strcmp(only, "offers") == 0)
    bench_offers();
  if (only == NULL || strcmp(only, "threads") == 0)
    bench_threads();
  if (only == NULL || strcmp(only, "snapshot") == 0)
    bench_snapshot();
  if (only != NULL && strcmp(only, "profile") == 0) {
    lifecycle_run r;
    run_lifecycle(100, 16, 100000, false, false, UINT64_MAX, NULL, &r); /* no floor chunks */
    printf("bench=lifecycle_profile value=%.1f unit=ns/task tasks=%" PRIu64 " executors=100 "
           "cores=16\n",
           r.per_task, r.finished);
  }
  if (only != NULL &&
      (strcmp(only, "profile-embedder") == 0 || strcmp(only, "profile-batched-embedder") == 0)) {
    lifecycle_run r;
    bool batched = strcmp(only, "profile-batched-embedder") == 0;
    run_embedder(100, 16, 100000, UINT64_MAX, batched, NULL, &r);
    printf("bench=%s value=%.1f unit=ns/task tasks=%" PRIu64 " executors=100 cores=16 round=1600\n",
           batched ? "lifecycle_batched_embedder_profile" : "lifecycle_embedder_profile",
           r.per_task, r.finished);
  }
  if (only != NULL && (strcmp(only, "profile-gpu") == 0 || strcmp(only, "profile-cores8") == 0)) {
    uint32_t gpus = strcmp(only, "profile-gpu") == 0 ? 8 : 0;
    life f;
    life_init(&f, 100, 8, gpus, 100000);
    uint64_t t0 = now_ns();
    uint64_t n = life_step(&f, UINT64_MAX);
    double per = (double)(now_ns() - t0) / (double)n;
    life_free(&f);
    printf("bench=lifecycle_%s_profile value=%.1f unit=ns/task tasks=%" PRIu64
           " executors=100 cores=8 gpus=%u\n",
           gpus ? "gpu" : "cores8", per, n, gpus);
  }
  if (only != NULL && strcmp(only, "profile-batched") == 0) {
    lifecycle_run r;
    run_lifecycle_batched(100, 16, 100000, UINT64_MAX, false, NULL, &r);
    printf("bench=lifecycle_batched_profile value=%.1f unit=ns/task tasks=%" PRIu64
           " executors=100 cores=16 batch=16\n",
           r.per_task, r.finished);
  }
  return 0;
}

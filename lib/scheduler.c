/* The scheduler object: its lifetime, and the public entry points. Each entry point validates
 * its arguments (nothing is touched before that), reads the clock if it needs the time (the
 * clock is user code, so never under the lock), takes the lock, routes to the file that owns
 * the transition, and ends through the dispatcher, which delivers the events the call made
 * after releasing the lock. A call that fails delivers nothing.
 *
 * Lock: s->lock, one per scheduler, protects all of its state; it is the only lock, and no
 * user code runs while it is held.
 */
#include "internal.h"
#include "placement.h"
#include "journal.h"
#include "resource.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

void tl_config_init(tl_config *cfg) {
  if (cfg == NULL)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->cpus_per_task = 1;
  cfg->max_task_failures = 4;
  cfg->heartbeat_timeout_ns = 120ull * 1000000000ull;
  cfg->pending_loss_timeout_ns = 120ull * 1000000000ull;
  cfg->recovery_timeout_ns = 60ull * 1000000000ull;
  cfg->max_tombstones = 1024;
  cfg->tombstone_ttl_ns = 600ull * 1000000000ull;
  cfg->max_result_bytes = 1ull << 30;
  cfg->speculation_interval_ns = 100ull * 1000000ull;
  cfg->speculation_multiplier = 3.0; /* Spark 4's defaults */
  cfg->speculation_quantile = 0.9;
  cfg->speculation_min_runtime_ns = 100ull * 1000000ull;
  cfg->locality_wait_ns = 3000ull * 1000000ull; /* Spark's spark.locality.wait */
  cfg->locality_wait_process_ns = TL_WAIT_INHERIT;
  cfg->locality_wait_node_ns = TL_WAIT_INHERIT;
  cfg->locality_wait_rack_ns = TL_WAIT_INHERIT;
  cfg->exclude_max_task_attempts_per_executor = 1; /* Spark's spark.excludeOnFailure.* */
  cfg->exclude_max_task_attempts_per_node = 2;
  cfg->exclude_stage_max_failed_tasks_per_executor = 2;
  cfg->exclude_stage_max_failed_executors_per_node = 2;
  cfg->exclude_app_max_failed_tasks_per_executor = 2;
  cfg->exclude_app_max_failed_executors_per_node = 2;
  cfg->exclude_timeout_ns = 3600ull * 1000000000ull;
  cfg->unschedulable_timeout_ns = 120ull * 1000000000ull;
}

/* Reads the configured clock; called before the lock is taken (the clock is user code). */
static uint64_t clock_read(const struct tl_scheduler *s) {
  return s->cfg.clock != NULL ? s->cfg.clock(s->cfg.clock_ud) : uv_hrtime();
}

uint64_t tl__clock_read(const struct tl_scheduler *s) { return clock_read(s); }

/* Under the lock: makes t the call's time, s->last_now, unless the clock went back. */
static void clock_set(struct tl_scheduler *s, uint64_t t) {
  if (t > s->last_now)
    s->last_now = t;
}

/* Takes the lock for a mutating call: TL_EBUSY while tl_scheduler_free releases task sets. */
static int enter(tl_scheduler *s) {
  tl__lock(s);
  if (s->closing) {
    tl__mutex_unlock(&s->lock);
    return TL_EBUSY;
  }
  return TL_OK;
}

static int enter_at(tl_scheduler *s, uint64_t t) {
  int err = enter(s);
  if (err == TL_OK)
    clock_set(s, t);
  return err;
}

/* The clock time next ns after now, UINT64_MAX for TL_TICK_NEVER (or past the end of time). */
static uint64_t deadline_at(uint64_t now, uint64_t next) {
  return next == TL_TICK_NEVER || next > UINT64_MAX - now ? UINT64_MAX : now + next;
}

/* The driver's wake rule, under the lock at the end of a mutating call while a driver is
 * attached: when the next deadline is earlier than the one the driver's timer is armed for,
 * records it as armed and wakes the driver (the libuv driver's uv_async_send: thread-safe, and
 * it runs no user code). Later calls with the same or a later deadline wake nothing; a deadline
 * that moves later needs no wake: the timer fires early, the tick finds nothing due and answers
 * the rest. */
static void wake_driver(tl_scheduler *s) {
  uint64_t at = deadline_at(s->last_now, tl__next_deadline(s, s->last_now));
  if (at < s->driver_armed_at) {
    s->driver_armed_at = at;
    s->driver_wake(s->driver);
  }
}

int tl__driver_attach(struct tl_scheduler *s, void (*wake)(void *ud), void (*ready)(void *ud),
                      void *driver) {
  tl__lock(s);
  if (s->driver_wake != NULL || s->closing) {
    tl__mutex_unlock(&s->lock);
    return TL_EBUSY;
  }
  s->driver_armed_at = 0; /* no wake until the driver's first tick */
  s->driver = driver;
  s->driver_wake = wake;
  /* Deferred: what is queued now the driver's first tick and dispatch deliver; a wake-up already
   * made through events_ready stays made (its tl_dispatch finds less, or nothing). */
  s->driver_ready = s->cfg.delivery == TL_DELIVER_DEFERRED ? ready : NULL;
  tl__mutex_unlock(&s->lock);
  return TL_OK;
}

void tl__driver_detach(struct tl_scheduler *s) {
  tl__lock(s);
  s->driver_wake = NULL;
  s->driver_ready = NULL;
  s->driver = NULL;
  /* A wake-up the driver took and will not act on any more (its loop may never run the async
   * callback it sent) is made again through events_ready, so nothing queued waits unnoticed. */
  bool owed = s->ready_sent && (s->events.n != 0 || s->journal != NULL);
  if (owed)
    s->ready_sent = s->cfg.events_ready != NULL;
  tl__mutex_unlock(&s->lock);
  if (owed && s->cfg.events_ready != NULL)
    s->cfg.events_ready(s->cfg.events_ready_ud);
}

/* Ends a call that entered. A failed call has made no event; only its journal line, if any,
 * is written by the dispatch. With a driver attached, a call that moved the next deadline
 * earlier than the driver's timer wakes it (wake_driver); without one this is a load and
 * a branch. */
static int leave(tl_scheduler *s, int err) {
  if (s->driver_wake != NULL)
    wake_driver(s);
  tl__unlock_and_dispatch(s);
  return err;
}

/* Opens the call's journal line, formatted by FMT (a tl__jfmt_ call writing to &w) once to
 * measure and once for real; returns TL_ENOMEM from the calling function, before anything has
 * changed, when the line cannot be allocated. Declares j and w for journal_leave. */
#define JOURNAL_OPEN(s, FMT)                                                                       \
  tl__jline *j = NULL;                                                                             \
  tl__text w = {NULL, 0, 0};                                                                       \
  do {                                                                                             \
    if ((s)->cfg.journal != NULL) {                                                                \
      FMT;                                                                                         \
      if ((j = tl__journal_open((s), &w)) == NULL)                                                 \
        return leave((s), TL_ENOMEM);                                                              \
      FMT;                                                                                         \
    }                                                                                              \
  } while (0)

/* Ends a journaled call: its line gets the result, then leave. */
static int journal_leave(tl_scheduler *s, tl__jline *j, tl__text *w, int err, const char *extra) {
  tl__journal_close(s, j, w, err, extra);
  return leave(s, err);
}

/* ---------------------------------------------------------------------------------------------
 * Lifetime
 * ------------------------------------------------------------------------------------------- */

/* With exclusion on, every threshold is at least 1, and a task may fail on a node fewer times
 * than it may fail in all (Spark's validateExcludeOnFailureConfs). */
static bool valid_exclusion(const tl_config *cfg) {
  return !cfg->exclude_on_failure ||
         (cfg->exclude_max_task_attempts_per_executor >= 1 &&
          cfg->exclude_max_task_attempts_per_node >= 1 &&
          cfg->exclude_max_task_attempts_per_node < cfg->max_task_failures &&
          cfg->exclude_stage_max_failed_tasks_per_executor >= 1 &&
          cfg->exclude_stage_max_failed_executors_per_node >= 1 &&
          cfg->exclude_app_max_failed_tasks_per_executor >= 1 &&
          cfg->exclude_app_max_failed_executors_per_node >= 1 && cfg->exclude_timeout_ns > 0);
}

bool tl__config_valid(const tl_config *cfg) {
  return valid_exclusion(cfg) &&
         (cfg->delivery == TL_DELIVER_DEFERRED ||
          (cfg->delivery == TL_DELIVER_INLINE && cfg->events_ready == NULL)) &&
         cfg->cpus_per_task >= 1 && cfg->max_task_failures >= 1 &&
         cfg->max_task_failures <= UINT16_MAX && (cfg->mode == TL_FIFO || cfg->mode == TL_FAIR) &&
         (!cfg->speculation ||
          (cfg->speculation_interval_ns > 0 && cfg->speculation_multiplier >= 0.0 &&
           cfg->speculation_quantile > 0.0 && cfg->speculation_quantile <= 1.0)) &&
         /* The threshold and the kill interval act only through speculation: set without it,
          * they are a mistake (as events_ready with inline delivery). */
         (cfg->speculation || (cfg->speculation_task_duration_threshold_ns == 0 &&
                               cfg->decommission_kill_interval_ns == 0)) &&
         /* A seed without the shuffle is a mistake too. */
         (cfg->offer_shuffle || cfg->offer_shuffle_seed == 0);
}

int tl_scheduler_new(const tl_config *cfg, const tl_callbacks *cb, tl_scheduler **out) {
  tl_config defaults;
  if (out == NULL)
    return TL_EINVAL;
  if (cfg == NULL) {
    tl_config_init(&defaults);
    cfg = &defaults;
  }
  if (!tl__config_valid(cfg))
    return TL_EINVAL;
  int err = tl__scheduler_create(cfg, cb, out);
  if (err == TL_OK)
    tl__scheduler_start(*out, false);
  return err;
}

int tl__scheduler_create(const tl_config *cfg, const tl_callbacks *cb, tl_scheduler **out) {
  tl__schedulers_inc(); /* before the first allocation: the allocator cannot change now */
  tl_scheduler *s = tl__raw_calloc(1, sizeof *s);
  if (s == NULL) {
    tl__schedulers_dec();
    return TL_ENOMEM;
  }
  s->mem_bytes = sizeof *s;
  s->mem_blocks = 1;
  if (tl__mutex_init(&s->lock) != 0) {
    tl__raw_free(s);
    tl__schedulers_dec();
    return TL_ENOMEM;
  }
  s->events.ev = tl__malloc(s, TL__EVENTS_INITIAL * sizeof(tl__event));
  s->batch.ev = tl__malloc(s, TL__EVENTS_INITIAL * sizeof(tl__event));
  if (s->events.ev == NULL || s->batch.ev == NULL || tl__pools_init(s) != TL_OK) {
    tl__pools_destroy(s);
    tl__free(s, s->events.ev, TL__EVENTS_INITIAL * sizeof(tl__event));
    tl__free(s, s->batch.ev, TL__EVENTS_INITIAL * sizeof(tl__event));
    tl__mutex_destroy(&s->lock);
    tl__raw_free(s);
    tl__schedulers_dec();
    return TL_ENOMEM;
  }
  s->events.cap = s->batch.cap = TL__EVENTS_INITIAL;
  s->cfg = *cfg;
  s->offer_shuffle_state = cfg->offer_shuffle_seed; /* 0 while off (tl__config_valid) */
  if (cb != NULL)
    s->cb = *cb;
  s->demand_on = s->cb.taskset_unschedulable != NULL || s->cb.taskset_schedulable != NULL ||
                 s->cb.demand_changed != NULL;
  tl__list_init(&s->heartbeat_order);
  tl__list_init(&s->pending_order);
  tl__list_init(&s->recovery_order);
  tl__list_init(&s->tombstone_order);
  tl__list_init(&s->locality_tasksets);
  tl__list_init(&s->rkinds);
  tl__list_init(&s->res_tasksets);
  tl__list_init(&s->res_timers);
  tl__list_init(&s->place_tasksets);
  tl__list_init(&s->place_timers);
  /* A level's wait; TL_NO_PREF and TL_ANY never wait (Spark's getLocalityWait). */
  const uint64_t *own[3] = {&cfg->locality_wait_process_ns, &cfg->locality_wait_node_ns,
                            &cfg->locality_wait_rack_ns};
  const tl_locality at[3] = {TL_PROCESS_LOCAL, TL_NODE_LOCAL, TL_RACK_LOCAL};
  for (int k = 0; k < 3; k++)
    s->locality_wait[at[k]] = *own[k] == TL_WAIT_INHERIT ? cfg->locality_wait_ns : *own[k];
  tl__exclude_init(s);
  s->journal_tail = &s->journal;
  atomic_init(&s->batch_delivered, 0);
  atomic_init(&s->dispatch_state, 0u);
  s->epoch = 1;
  s->next_tid = 1;
  s->next_taskset_id = 1;
  s->last_now = clock_read(s);
  *out = s;
  return TL_OK;
}

void tl__scheduler_start(struct tl_scheduler *s, bool restored) {
  if (s->cfg.journal == NULL)
    return;
  tl__journal_start(s); /* no lock yet: nothing is shared */
  if (restored)
    tl__journal_restored(s);
}

/* Frees every record. Attempts go with their task sets (frozen ones included), before the
 * executors whose lists they are on; those lists are not walked again. */
static void destroy_all(tl_scheduler *s) {
  tl__attempts_destroy(s);
  tl__taskset *ts, *ts_tmp;
  HASH_ITER(hh_by_id, s->tasksets_by_id, ts, ts_tmp) { tl__taskset_destroy(s, ts); }
  tl__attempts_trim(s);
  tl__exclude_destroy(s); /* before the executors that hold failure lists */
  tl__executor *ex, *ex_tmp;
  HASH_ITER(hh_by_id, s->executors_by_id, ex, ex_tmp) {
    HASH_DELETE(hh_by_id, s->executors_by_id, ex);
    tl__executor_free(s, ex);
  }
  tl__host *host, *host_tmp;
  HASH_ITER(hh_by_name, s->hosts_by_name, host, host_tmp) {
    HASH_DELETE(hh_by_name, s->hosts_by_name, host);
    tl__free(s, host, sizeof *host + host->name_len + 1);
  }
  tl__rack *rack, *rack_tmp;
  HASH_ITER(hh_by_name, s->racks_by_name, rack, rack_tmp) {
    HASH_DELETE(hh_by_name, s->racks_by_name, rack);
    tl__free(s, rack, sizeof *rack + rack->name_len + 1);
  }
  tl__pools_destroy(s);
  tl__journal_free_list(s, s->journal);
  tl__events_clear(s, &s->events, 0);
  tl__events_clear(s, &s->batch, 0);
  tl__executors_release(s, true); /* kept for the events just cleared */
  tl__free(s, s->events.ev, s->events.cap * sizeof(tl__event));
  tl__free(s, s->batch.ev, s->batch.cap * sizeof(tl__event));
  tl__grants_trim(s); /* the blocks attempts and events gave back above */
}

/* The last of a scheduler whose records destroy_all has freed: nothing else may hold it. */
static void release(struct tl_scheduler *s) {
  assert(s->mem_bytes == sizeof *s && s->mem_blocks == 1);
  tl__mutex_destroy(&s->lock);
  tl__raw_free(s);
  tl__schedulers_dec();
}

void tl__scheduler_discard(struct tl_scheduler *s) {
  destroy_all(s);
  release(s);
}

int tl_scheduler_free(tl_scheduler *s) {
  if (s == NULL)
    return TL_EINVAL;
  tl__lock(s);
  for (;;) {
    if (tl__dispatching(s) || s->closing || s->driver_wake != NULL) {
      tl__mutex_unlock(&s->lock);
      return TL_EBUSY;
    }
    if (s->events.n == 0 && s->journal == NULL)
      break;
    /* Deferred delivery: what is still queued is delivered first (its callbacks may call
     * anything, attaching a driver included: hence the checks again). Inline: never. */
    tl__dispatch_locked(s);
    tl__lock(s);
  }
  s->closing = true;
  tl__mutex_unlock(&s->lock);

  /* Hand every payload back, in submission order (uthash keeps insertion order), with the
   * lock released: the callbacks may inspect the scheduler; any other call is TL_EBUSY. */
  if (s->cb.taskset_released != NULL) {
    for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
      tl_taskset_info info = {ts->id, ts->stage_id, ts->stage_attempt, ts->ntasks};
      s->cb.taskset_released(s->cb.ud, &info, ts->payload);
    }
  }

  if (s->cfg.journal != NULL) { /* every earlier line was written: nobody was dispatching */
    char line[40];
    snprintf(line, sizeof line, "@%" PRIu64 " free = OK", s->last_now);
    s->cfg.journal(s->cfg.journal_ud, line);
  }

  tl__lock(s);
  destroy_all(s);
  tl__mutex_unlock(&s->lock);
  release(s);
  return TL_OK;
}

/* tl_scheduler_free without its deliveries: destroy_all discards the queued events (freeing
 * their results with result_free, as for any event that is never delivered) and journal lines;
 * the payloads are left to the caller. */
int tl_scheduler_abandon(tl_scheduler *s) {
  if (s == NULL)
    return TL_EINVAL;
  tl__lock(s);
  if (tl__dispatching(s) || s->closing || s->driver_wake != NULL) {
    tl__mutex_unlock(&s->lock);
    return TL_EBUSY;
  }
  s->closing = true;
  destroy_all(s);
  tl__mutex_unlock(&s->lock);
  release(s);
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Executors
 * ------------------------------------------------------------------------------------------- */

static bool valid_id(const char *id) { return tl__name_len(id, TL_ID_MAX) != 0; }

int tl_executor_reconcile(tl_scheduler *s, const char *executor_id, const tl_tid *running, size_t n,
                          tl_tid *unknown, size_t ucap, size_t *nunknown) {
  if (nunknown != NULL)
    *nunknown = 0;
  if (s == NULL || !valid_id(executor_id) || nunknown == NULL || (running == NULL && n > 0) ||
      (unknown == NULL && ucap > 0))
    return TL_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (running[i] == 0)
      return TL_EINVAL;
  uint64_t t = clock_read(s);
  int err = enter_at(s, t);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_reconcile(&w, executor_id, running, n, ucap));
  err = tl__executor_reconcile(s, executor_id, running, NULL, n, unknown, ucap, nunknown);
  char extra[40];
  snprintf(extra, sizeof extra, " unknown=%zu", *nunknown);
  return journal_leave(s, j, &w, err, err == TL_OK ? extra : NULL);
}

int tl_executor_reconcile_items(tl_scheduler *s, const char *executor_id,
                                const tl_reconcile_item *items, size_t n, tl_tid *unknown,
                                size_t ucap, size_t *nunknown) {
  if (nunknown != NULL)
    *nunknown = 0;
  if (s == NULL || !valid_id(executor_id) || nunknown == NULL || (items == NULL && n > 0) ||
      (unknown == NULL && ucap > 0))
    return TL_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (items[i].tid == 0)
      return TL_EINVAL;
  uint64_t t = clock_read(s);
  int err = enter_at(s, t);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_reconcile_items(&w, executor_id, items, n, ucap));
  uint64_t adopted = s->totals.reconcile_adopted;
  err = tl__executor_reconcile(s, executor_id, NULL, items, n, unknown, ucap, nunknown);
  char extra[64];
  snprintf(extra, sizeof extra, " unknown=%zu adopted=%" PRIu64, *nunknown,
           s->totals.reconcile_adopted - adopted);
  return journal_leave(s, j, &w, err, err == TL_OK ? extra : NULL);
}

int tl_executor_add(tl_scheduler *s, const tl_executor_desc *d) {
  if (s == NULL || d == NULL || !valid_id(d->id) || tl__name_len(d->host, TL_HOST_MAX) == 0 ||
      (d->rack != NULL && tl__name_len(d->rack, TL_HOST_MAX) == 0) || d->cores == 0)
    return TL_EINVAL;
  if (tl__res_decl_valid(d->resources, d->nresources) != TL_OK)
    return TL_ERESOURCE;
  uint64_t t = clock_read(s);
  int err = enter_at(s, t);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_add(&w, d));
  err = tl__executor_add(s, d);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_executor_lost(tl_scheduler *s, const char *executor_id, const tl_loss_reason *reason) {
  if (s == NULL || !valid_id(executor_id) || reason == NULL ||
      (unsigned)reason->kind > TL_LOSS_PENDING_TIMEOUT)
    return TL_EINVAL;
  uint64_t t = clock_read(s);
  int err = enter_at(s, t);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_lost(&w, executor_id, reason));
  err = tl__executor_lost(s, executor_id, reason);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_executor_heartbeat(tl_scheduler *s, const char *executor_id) {
  if (s == NULL || !valid_id(executor_id))
    return TL_EINVAL;
  uint64_t t = clock_read(s);
  int err = enter_at(s, t);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_id(&w, "heartbeat", executor_id));
  err = tl__executor_heartbeat(s, executor_id);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_executor_decommission(tl_scheduler *s, const char *executor_id, const char *message) {
  if (s == NULL || !valid_id(executor_id))
    return TL_EINVAL;
  uint64_t t = clock_read(s); /* when it began: the kill interval counts from here */
  int err = enter_at(s, t);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_decommission(&w, executor_id, message));
  err = tl__executor_decommission(s, executor_id, message);
  return journal_leave(s, j, &w, err, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Task sets
 * ------------------------------------------------------------------------------------------- */

/* tl_pool_add's and tl_pool_set's arguments (tl_pool_add_child's but its parent). */
static bool pool_args_valid(const char *name, tl_sched_mode mode, uint32_t weight) {
  return tl__name_len(name, TL_HOST_MAX) != 0 && (mode == TL_FIFO || mode == TL_FAIR) &&
         weight != 0;
}

int tl_pool_add(tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                uint32_t min_share) {
  if (s == NULL || !pool_args_valid(name, mode, weight))
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_pool_add(&w, name, mode, weight, min_share));
  err = tl__pool_add(s, name, mode, weight, min_share);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_pool_add_child(tl_scheduler *s, const char *parent, const char *name, tl_sched_mode mode,
                      uint32_t weight, uint32_t min_share) {
  if (s == NULL || !pool_args_valid(name, mode, weight) ||
      (parent != NULL && (tl__name_len(parent, TL_HOST_MAX) == 0 || strcmp(parent, name) == 0)))
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_pool_add_child(&w, parent, name, mode, weight, min_share));
  err = tl__pool_add_child(s, parent, name, mode, weight, min_share);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_pool_set(tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                uint32_t min_share) {
  if (s == NULL || !pool_args_valid(name, mode, weight))
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_pool_set(&w, name, mode, weight, min_share));
  err = tl__pool_set(s, name, mode, weight, min_share);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_submit(tl_scheduler *s, const tl_taskset_desc *d, tl_taskset_id *out) {
  if (s == NULL || d == NULL || d->ntasks == 0 || d->ntasks == TL__NONE ||
      (d->pool != NULL && tl__name_len(d->pool, TL_HOST_MAX) == 0) ||
      tl__locality_validate(d) != TL_OK || d->max_task_failures > UINT16_MAX ||
      tl__tags_valid(d->tags, d->ntags) != TL_OK || tl__placement_valid(d) != TL_OK)
    return TL_EINVAL;
  if (tl__res_req_valid(d->resources, d->nresources) != TL_OK)
    return TL_ERESOURCE;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_submit(&w, d));
  tl_taskset_id id = 0;
  tl__pool *made = NULL; /* a pool made for this task set: taken away again if it fails */
  if (s->cfg.mode == TL_FAIR && d->pool != NULL && (s->nnested > 0 || s->cfg.pool_auto_create))
    err = tl__pool_for_submit(s, d->pool, &made);
  if (err == TL_OK)
    err = tl__submit(s, d, &id);
  if (err != TL_OK && made != NULL)
    tl__pool_unmake(s, made);
  if (err == TL_OK && out != NULL)
    *out = id;
  char extra[32] = "";
  if (j != NULL)
    snprintf(extra, sizeof extra, " ts=%" PRIu64, id);
  return journal_leave(s, j, &w, err, err == TL_OK ? extra : NULL);
}

int tl_kill_task(tl_scheduler *s, tl_tid tid, bool interrupt, const char *reason) {
  if (s == NULL)
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_kill_task(&w, tid, interrupt, reason));
  err = tl__kill_task(s, tid, interrupt, reason);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_kill_stage(tl_scheduler *s, uint32_t stage_id, bool interrupt, const char *reason) {
  if (s == NULL)
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_kill_stage(&w, stage_id, interrupt, reason));
  err = tl__kill_stage(s, stage_id, interrupt, reason);
  return journal_leave(s, j, &w, err, NULL);
}

int tl_cancel_stage(tl_scheduler *s, uint32_t stage_id, const char *reason) {
  if (s == NULL)
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_cancel_stage(&w, stage_id, reason));
  err = tl__cancel_stage(s, stage_id, reason);
  return journal_leave(s, j, &w, err, NULL);
}

/* tl_cancel_tag and tl_kill_tag. */
static int tag_call(tl_scheduler *s, const char *tag, bool cancel, bool interrupt,
                    const char *reason, size_t *ntasksets) {
  if (ntasksets != NULL)
    *ntasksets = 0;
  size_t len = tl__tag_len(tag);
  if (s == NULL || len == 0)
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_tag(&w, cancel, tag, interrupt, reason));
  size_t n = 0;
  err = tl__tag_cancel(s, tag, len, cancel, interrupt, reason, &n);
  if (err == TL_OK && ntasksets != NULL)
    *ntasksets = n;
  char extra[40] = "";
  if (j != NULL)
    snprintf(extra, sizeof extra, " tasksets=%zu", n);
  return journal_leave(s, j, &w, err, err == TL_OK ? extra : NULL);
}

int tl_cancel_tag(tl_scheduler *s, const char *tag, bool interrupt, const char *reason,
                  size_t *ntasksets) {
  return tag_call(s, tag, true, interrupt, reason, ntasksets);
}

int tl_kill_tag(tl_scheduler *s, const char *tag, bool interrupt, const char *reason,
                size_t *ntasksets) {
  return tag_call(s, tag, false, interrupt, reason, ntasksets);
}

int tl_partition_completed(tl_scheduler *s, uint32_t stage_id, uint32_t index) {
  if (s == NULL)
    return TL_EINVAL;
  int err = enter(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_partition_completed(&w, stage_id, index));
  err = tl__partition_completed(s, stage_id, index);
  return journal_leave(s, j, &w, err, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Offers and status updates
 * ------------------------------------------------------------------------------------------- */

/* tl_resource_offers and tl_resource_offers_grants (grants NULL for the first). */
static int offer_round(tl_scheduler *s, const tl_offer *offers, size_t noffers, tl_launch *out,
                       size_t cap, size_t *nout, tl_grant *grants, size_t gcap, size_t *ngrants) {
  if (s == NULL || nout == NULL || (offers == NULL && noffers > 0) || (out == NULL && cap > 0))
    return TL_EINVAL;
  /* The ids' lengths, measured once: the round looks the executors up with them (up to
   * TL__ID_LENS offers; a bigger round measures again). */
  size_t lens[TL__ID_LENS];
  for (size_t i = 0; i < noffers; i++) {
    size_t len = tl__name_len(offers[i].executor_id, TL_ID_MAX);
    if (len == 0)
      return TL_EINVAL;
    if (i < TL__ID_LENS)
      lens[i] = len;
  }
  uint64_t t = clock_read(s);
  int err = enter_at(s, t);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, grants != NULL || ngrants != NULL
                      ? tl__jfmt_offers_grants(&w, offers, noffers, cap, gcap)
                      : tl__jfmt_offers(&w, offers, noffers, cap));
  tl_tid first = s->next_tid;
  /* The offer shuffle's one branch: off, the round is as it always was. */
  const size_t *known = noffers <= TL__ID_LENS ? lens : NULL;
  if (s->cfg.offer_shuffle)
    err = tl__shuffle_offers(s, offers, noffers, known, out, cap, nout, grants, gcap, ngrants);
  else
    err = tl__resource_offers(s, offers, noffers, known, out, cap, nout, grants, gcap, ngrants);
  char extra[TL__JOURNAL_OFFERS_EXTRA];
  extra[0] = '\0';
  if (j != NULL) /* formatted only for a journal: an offer round is the hottest call */
    tl__journal_offers_extra(extra, sizeof extra, out, *nout, first, ngrants != NULL);
  return journal_leave(s, j, &w, err, err == TL_OK ? extra : NULL);
}

int tl_resource_offers(tl_scheduler *s, const tl_offer *offers, size_t noffers, tl_launch *out,
                       size_t cap, size_t *nout) {
  if (nout != NULL)
    *nout = 0;
  return offer_round(s, offers, noffers, out, cap, nout, NULL, 0, NULL);
}

int tl_resource_offers_grants(tl_scheduler *s, const tl_offer *offers, size_t noffers,
                              tl_launch *out, size_t cap, size_t *nout, tl_grant *grants,
                              size_t gcap, size_t *ngrants) {
  if (nout != NULL)
    *nout = 0;
  if (ngrants != NULL)
    *ngrants = 0;
  if (ngrants == NULL || (grants == NULL && gcap > 0))
    return TL_EINVAL;
  return offer_round(s, offers, noffers, out, cap, nout, grants, gcap, ngrants);
}

static bool valid_update(const tl_update *u) {
  if ((unsigned)u->state > TL_TASK_KILLED || (u->result != NULL && u->state != TL_TASK_FINISHED))
    return false;
  if (u->no_retry && (u->state != TL_TASK_FAILED ||
                      (u->failure != TL_END_EXCEPTION && u->failure != TL_END_RESULT_LOST)))
    return false;
  return u->state != TL_TASK_FAILED ||
         (u->failure != TL_END_SUCCESS && u->failure != TL_END_EXECUTOR_LOST &&
          (unsigned)u->failure <= TL_END_RESULT_LOST);
}

/* Takes the lock for status updates. With speculation a success's run time is recorded, with
 * exclusion a failure's time: then the updates need the clock. */
static int enter_updates(tl_scheduler *s) {
  return s->cfg.speculation || s->cfg.exclude_on_failure ? enter_at(s, clock_read(s)) : enter(s);
}

int tl_status_update(tl_scheduler *s, const char *executor_id, tl_tid tid, const tl_update *u) {
  size_t id_len = tl__name_len(executor_id, TL_ID_MAX);
  if (s == NULL || id_len == 0 || u == NULL || !valid_update(u))
    return TL_EINVAL;
  int err = enter_updates(s);
  if (err != TL_OK)
    return err;
  JOURNAL_OPEN(s, tl__jfmt_update(&w, executor_id, tid, u));
  err = tl__status_update(s, executor_id, id_len, tid, u);
  return journal_leave(s, j, &w, err, NULL);
}

/* One update of a batch, journaled as the single call it is equivalent to: a line that cannot
 * be allocated leaves the update unapplied with TL_ENOMEM. */
static int journaled_update(tl_scheduler *s, tl__executor *ex, const char *executor_id, tl_tid tid,
                            const tl_update *u) {
  tl__text w = {NULL, 0, 0};
  tl__jfmt_update(&w, executor_id, tid, u);
  tl__jline *j = tl__journal_open(s, &w);
  if (j == NULL)
    return TL_ENOMEM;
  tl__jfmt_update(&w, executor_id, tid, u);
  int err = tl__status_apply(s, ex, tid, u);
  tl__journal_close(s, j, &w, err, NULL);
  return err;
}

int tl_status_updates(tl_scheduler *s, const char *executor_id, const tl_tid *tids,
                      const tl_update *updates, size_t n, int *results) {
  size_t id_len = tl__name_len(executor_id, TL_ID_MAX);
  if (s == NULL || id_len == 0 || (n > 0 && (tids == NULL || updates == NULL)))
    return TL_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!valid_update(&updates[i]))
      return TL_EINVAL;
  int err = enter_updates(s);
  if (err != TL_OK)
    return err;
  tl__executor *ex;
  err = tl__status_executor(s, executor_id, id_len, &ex);
  if (err != TL_OK) /* refused as a whole: nothing applied, nothing journaled */
    return leave(s, err);
  if (s->cfg.journal != NULL) {
    for (size_t i = 0; i < n; i++) {
      int rc = journaled_update(s, ex, executor_id, tids[i], &updates[i]);
      if (results != NULL)
        results[i] = rc;
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      int rc = tl__status_apply(s, ex, tids[i], &updates[i]);
      if (results != NULL)
        results[i] = rc;
    }
  }
  return leave(s, TL_OK);
}

/* ---------------------------------------------------------------------------------------------
 * Time
 * ------------------------------------------------------------------------------------------- */

/* The driver's record of the deadline its tick answered. */
static void tick_armed(tl_scheduler *s, const void *driver, uint64_t next) {
  if (driver != NULL && s->driver_wake != NULL && s->driver == driver)
    s->driver_armed_at = deadline_at(s->last_now, next);
}

/* tl_tick; driver is NULL for the public call (constant: the compiler drops tick_armed). */
static inline uint64_t tick(tl_scheduler *s, const void *driver) {
  if (s == NULL)
    return TL_TICK_NEVER;
  uint64_t t = clock_read(s);
  if (enter_at(s, t) != TL_OK)
    return TL_TICK_NEVER;
  tl__jline *j = NULL;
  tl__text w = {NULL, 0, 0};
  if (s->cfg.journal != NULL) {
    tl__text_str(&w, "tick");
    if ((j = tl__journal_open(s, &w)) == NULL) {
      tl__mutex_unlock(&s->lock);
      return 0; /* nothing was done: the caller ticks again */
    }
    tl__text_str(&w, "tick");
  }
  /* Each part runs what is due and answers the time to its next deadline. */
  uint64_t next = tl__tick_run(s, s->last_now);
  tl__journal_close(s, j, &w, TL_OK, NULL);
  tick_armed(s, driver, next);
  if (tl__unlock_and_dispatch(s)) {
    /* Callbacks may have moved a deadline (a loss they reported starts a pending deadline). */
    t = clock_read(s);
    tl__lock(s);
    clock_set(s, t);
    if (next != 0)
      next = tl__next_deadline(s, s->last_now);
    tick_armed(s, driver, next);
    tl__mutex_unlock(&s->lock);
  }
  return next;
}

uint64_t tl_tick(tl_scheduler *s) { return tick(s, NULL); }

uint64_t tl__tick_driver(struct tl_scheduler *s, const void *driver) { return tick(s, driver); }

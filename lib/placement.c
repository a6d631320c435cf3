/* Hard placement (docs/api.md "Hard placement"): the executors and hosts a task set's tasks may
 * run on (Ray's NodeAffinitySchedulingStrategy with soft=False) and its spread, at most one
 * running attempt of the task set per host or per executor (Ray's STRICT_SPREAD).
 *
 * A task set with a placement holds one block (tl__placement, below): its names, and with a spread
 * a table of counts keyed by host name or executor id, sized at submission for every attempt the
 * task set can have running at once (two per index: a task and its speculative copy), so no
 * launch allocates. The counts follow attempts_by_tid exactly: tl__attempt_link counts an
 * attempt in, tl__cleanup_task_state out (ledger.c, one line each, taken only for a task set
 * with a placement), so every way an attempt starts or stops running is counted the same way:
 * launches and speculative copies, every end, both phases of a loss (the first cleans, so a
 * frozen attempt holds no place), restores and reconciliations (which link again).
 *
 * Offers. An offer round asks tl__placement_blocked for each slot of a task set with a
 * placement (one line in offers.c's pass, on the task set's pointer): a blocked slot is no
 * delay rejection, as for exclusion.
 *
 * Unschedulable. A task set with work to launch whose allowed executors and hosts have no ALIVE
 * executor able to run its tasks (its profile, cores and resources: tl__res_could_fit) while
 * some executor is alive is unschedulable: after an offer round that launched nothing of it, it
 * goes on a timer, and tl_tick aborts it unschedulable_timeout_ns later with a message that
 * names each allowed executor and host and what is alive, unless an executor that satisfies it
 * joined (its timer then stops at once). A spread alone never makes a task set unschedulable:
 * with one allowed executor alive, it runs one task at a time there, and every host or
 * executor it fills is freed by its own attempt's end. The timer's transitions are
 * unschedulable_enter and unschedulable_leave, and nothing else changes it.
 */
#include "placement.h"

#include "checker.h"
#include "resource.h"

#include <stdlib.h>

/* Hard placement's records: per task set, the executors and hosts its tasks may run on, its
 * spread (anti-affinity) and, with a spread, the count of its running attempts per host or
 * executor. */

/* One host or executor some running attempt of the task set is on (spread only). */
typedef struct tl__pcount {
  tl__str *names; /* the names of the executor of the attempt that made the slot: the key is its
                     id (TL_SPREAD_EXECUTOR) or its host (TL_SPREAD_HOST); one reference; NULL:
                     a free slot */
  uint32_t hash;  /* the key's hash */
  uint32_t count; /* running attempts of the task set there (attempts_by_tid's, not frozen) */
} tl__pcount;

/* A task set's placement: one block, freed with the task set. */
typedef struct tl__placement {
  struct tl__taskset *ts; /* whose it is */
  tl__link on_scheduler;  /* s->place_tasksets */
  tl__link on_timer;      /* s->place_timers while no live executor satisfies it */
  uint64_t deadline;      /* while on a timer: when tl_tick aborts it */
  size_t bytes;           /* of this block */
  uint64_t cap;           /* slots of counts: 0 without spread, else a power of two, at least
                             three halves of the most running attempts the task set can have */
  uint64_t nkeys;         /* slots in use */
  uint64_t running;       /* their counts summed */
  uint32_t nexec;         /* allowed executor ids: name[0 .. nexec) */
  uint32_t nhost;         /* allowed host names: name[nexec .. nexec + nhost) */
  uint8_t spread;         /* tl_spread */
  bool timer;             /* on s->place_timers */
  tl__pcount *counts;     /* cap slots, in this block */
  const char **name;      /* nexec + nhost names, into text */
  uint32_t *len;          /* and their lengths */
  char text[];            /* the names, each NUL-terminated */
} tl__placement;

/* ---------------------------------------------------------------------------------------------
 * Validation and the block
 * ------------------------------------------------------------------------------------------- */

/* Whether names[0 .. n) are valid (1 to max - 1 bytes, no NUL inside) and distinct. */
static bool names_valid(const char *const *names, const size_t *lens, uint32_t n, size_t max) {
  for (uint32_t i = 0; i < n; i++) {
    if (lens[i] == 0 || lens[i] >= max || memchr(names[i], '\0', lens[i]) != NULL)
      return false;
    for (uint32_t k = 0; k < i; k++)
      if (lens[k] == lens[i] && memcmp(names[k], names[i], lens[i]) == 0)
        return false;
  }
  return true;
}

int tl__placement_valid(const tl_taskset_desc *d) {
  if (d->nallowed_executors > TL_PLACE_MAX || d->nallowed_hosts > TL_PLACE_MAX ||
      (d->allowed_executors == NULL && d->nallowed_executors > 0) ||
      (d->allowed_hosts == NULL && d->nallowed_hosts > 0) ||
      (d->spread != TL_SPREAD_NONE && d->spread != TL_SPREAD_HOST &&
       d->spread != TL_SPREAD_EXECUTOR))
    return TL_EINVAL;
  bool any = d->nallowed_executors + d->nallowed_hosts > 0 || d->spread != TL_SPREAD_NONE;
  if (any && d->barrier) /* all of a barrier's tasks launch in one round: no placement there */
    return TL_EINVAL;
  size_t lens[TL_PLACE_MAX];
  for (uint32_t i = 0; i < d->nallowed_executors; i++)
    lens[i] = d->allowed_executors[i] != NULL ? strnlen(d->allowed_executors[i], TL_ID_MAX) : 0;
  if (!names_valid(d->allowed_executors, lens, d->nallowed_executors, TL_ID_MAX))
    return TL_EINVAL;
  for (uint32_t i = 0; i < d->nallowed_hosts; i++)
    lens[i] = d->allowed_hosts[i] != NULL ? strnlen(d->allowed_hosts[i], TL_HOST_MAX) : 0;
  if (!names_valid(d->allowed_hosts, lens, d->nallowed_hosts, TL_HOST_MAX))
    return TL_EINVAL;
  return TL_OK;
}

/* The slots of counts for a spread task set of ntasks: at least three halves of 2 x ntasks. */
static uint64_t counts_cap(uint32_t ntasks) {
  uint64_t want = 3 * (uint64_t)ntasks + 1, cap = 8;
  while (cap < want)
    cap <<= 1;
  return cap;
}

/* The block for names given with their lengths (valid), or NULL (TL_ENOMEM). */
static tl__placement *block_new(struct tl_scheduler *s, const char *const *names,
                                const size_t *lens, uint32_t nexec, uint32_t nhost, uint8_t spread,
                                uint32_t ntasks) {
  uint32_t n = nexec + nhost;
  uint64_t cap = spread != TL_SPREAD_NONE ? counts_cap(ntasks) : 0;
  if (cap > (SIZE_MAX / 2) / sizeof(tl__pcount))
    return NULL;
  size_t text = 0;
  for (uint32_t i = 0; i < n; i++)
    text += lens[i] + 1;
  size_t at_counts = sizeof(tl__placement);
  size_t at_name = at_counts + (size_t)cap * sizeof(tl__pcount);
  size_t at_len = at_name + n * sizeof(const char *);
  size_t at_text = at_len + n * sizeof(uint32_t);
  size_t bytes = at_text + text;
  char *b = tl__malloc(s, bytes);
  if (b == NULL)
    return NULL;
  tl__placement *p = (tl__placement *)(void *)b;
  memset(p, 0, sizeof *p);
  p->bytes = bytes;
  p->cap = cap;
  p->nexec = nexec;
  p->nhost = nhost;
  p->spread = spread;
  p->counts = (tl__pcount *)(void *)(b + at_counts);
  memset(p->counts, 0, (size_t)cap * sizeof(tl__pcount));
  p->name = (const char **)(void *)(b + at_name);
  p->len = (uint32_t *)(void *)(b + at_len);
  char *t = b + at_text;
  for (uint32_t i = 0; i < n; i++) {
    memcpy(t, names[i], lens[i]);
    t[lens[i]] = '\0';
    p->name[i] = t;
    p->len[i] = (uint32_t)lens[i];
    t += lens[i] + 1;
  }
  tl__list_init(&p->on_scheduler);
  tl__list_init(&p->on_timer);
  return p;
}

int tl__placement_new(struct tl_scheduler *s, const char *const *execs, uint32_t nexec,
                      const char *const *hosts, uint32_t nhost, tl_spread spread, uint32_t ntasks,
                      tl__placement **out) {
  *out = NULL;
  if (nexec + nhost == 0 && spread == TL_SPREAD_NONE)
    return TL_OK;
  const char *names[2 * TL_PLACE_MAX];
  size_t lens[2 * TL_PLACE_MAX];
  for (uint32_t i = 0; i < nexec; i++)
    lens[i] = strlen(names[i] = execs[i]);
  for (uint32_t i = 0; i < nhost; i++)
    lens[nexec + i] = strlen(names[nexec + i] = hosts[i]);
  *out = block_new(s, names, lens, nexec, nhost, (uint8_t)spread, ntasks);
  return *out != NULL ? TL_OK : TL_ENOMEM;
}

void tl__placement_discard(struct tl_scheduler *s, tl__placement *p) {
  if (p != NULL)
    tl__free(s, p, p->bytes);
}

void tl__placement_attach(struct tl_scheduler *s, tl__placement *p, tl__taskset *ts) {
  if (p == NULL)
    return;
  p->ts = ts;
  ts->placement = p;
  tl__list_insert_tail(&s->place_tasksets, &p->on_scheduler);
  s->nplace_tasksets++;
}

/* ---------------------------------------------------------------------------------------------
 * Unschedulable: the two transitions, and nothing else touches the timer.
 * ------------------------------------------------------------------------------------------- */

/* unschedulable: enter. No live executor satisfies p's task set: its abort is due
 * unschedulable_timeout_ns from now (appended: every deadline is now + the same timeout). */
static void unschedulable_enter(struct tl_scheduler *s, tl__placement *p) {
  if (p->timer)
    return;
  p->timer = true;
  p->deadline = tl__add_sat(s->last_now, s->cfg.unschedulable_timeout_ns);
  tl__list_insert_tail(&s->place_timers, &p->on_timer);
  s->nplace_timers++;
  tl__unsched_enter(s, p->ts, TL__UNSCHED_PLACEMENT); /* its demand event (demand.c) */
}

/* unschedulable: leave. p's task set is schedulable again (an executor satisfies it, it
 * launched, it has nothing to launch), or is aborted or released. */
static void unschedulable_leave(struct tl_scheduler *s, tl__placement *p) {
  if (!p->timer)
    return;
  p->timer = false;
  tl__list_remove(&p->on_timer);
  s->nplace_timers--;
  tl__unsched_leave(s, p->ts, TL__UNSCHED_PLACEMENT);
}

void tl__placement_free(struct tl_scheduler *s, tl__taskset *ts) {
  tl__placement *p = ts->placement;
  if (p == NULL)
    return;
  unschedulable_leave(s, p);
  tl__placement_destroy(s, ts);
}

void tl__placement_destroy(struct tl_scheduler *s, tl__taskset *ts) {
  tl__placement *p = ts->placement;
  if (p == NULL)
    return;
  if (p->timer) { /* the scheduler's end: no transition */
    tl__list_remove(&p->on_timer);
    s->nplace_timers--;
  }
  for (uint64_t i = 0; i < p->cap; i++)
    tl__str_unref(s, p->counts[i].names);
  tl__list_remove(&p->on_scheduler);
  s->nplace_tasksets--;
  ts->placement = NULL;
  tl__free(s, p, p->bytes);
}

/* ---------------------------------------------------------------------------------------------
 * Counts and offers
 * ------------------------------------------------------------------------------------------- */

/* The spread's key of an executor's names: its id or its host. */
static const char *key_of(const tl__placement *p, const tl__str *names) {
  return p->spread == TL_SPREAD_HOST ? tl__names_host(names) : names->text;
}

static uint32_t key_hash(const char *key) {
  uint64_t h = tl__fnv1a(TL__FNV1A_INIT, key, strlen(key));
  return (uint32_t)(h ^ (h >> 32));
}

/* The slot holding key, or the free slot where it would go. */
static tl__pcount *slot_of(const tl__placement *p, const char *key, uint32_t hash) {
  uint64_t mask = p->cap - 1;
  for (uint64_t i = hash & mask;; i = (i + 1) & mask) {
    tl__pcount *c = &p->counts[i];
    if (c->names == NULL || (c->hash == hash && strcmp(key_of(p, c->names), key) == 0))
      return c;
  }
}

/* Whether ex is among the allowed executors or on an allowed host (none named: every one). */
static bool allowed(const tl__placement *p, const char *id, const char *host) {
  if (p->nexec + p->nhost == 0)
    return true;
  for (uint32_t i = 0; i < p->nexec; i++)
    if (strcmp(p->name[i], id) == 0)
      return true;
  for (uint32_t i = p->nexec; i < p->nexec + p->nhost; i++)
    if (strcmp(p->name[i], host) == 0)
      return true;
  return false;
}

bool tl__placement_blocked(const tl__taskset *ts, const tl__executor *ex) {
  const tl__placement *p = ts->placement;
  if (!allowed(p, ex->names->text, tl__names_host(ex->names)))
    return true;
  if (p->cap == 0 || p->nkeys == 0)
    return false;
  const char *key = key_of(p, ex->names);
  return slot_of(p, key, key_hash(key))->names != NULL;
}

void tl__placement_link(struct tl_scheduler *s, const tl__attempt *a) {
  (void)s;
  tl__placement *p = a->taskset->placement;
  if (p->cap == 0)
    return;
  const char *key = key_of(p, a->executor->names);
  uint32_t hash = key_hash(key);
  tl__pcount *c = slot_of(p, key, hash);
  if (c->names == NULL) {
    if (p->nkeys + 1 >= p->cap) /* never: the table has room for every attempt that can run */
      abort();
    c->names = tl__str_ref(a->executor->names);
    c->hash = hash;
    c->count = 0; /* a slot emptied by a move keeps the count it had */
    p->nkeys++;
  }
  c->count++;
  p->running++;
}

void tl__placement_unlink(struct tl_scheduler *s, const tl__attempt *a) {
  tl__placement *p = a->taskset->placement;
  if (p->cap == 0)
    return;
  const char *key = key_of(p, a->executor->names);
  tl__pcount *c = slot_of(p, key, key_hash(key));
  if (c->names == NULL) /* never: every linked attempt was counted (tl_check says so) */
    return;
  p->running--;
  if (--c->count > 0)
    return;
  /* The slot empties: linear probing's deletion, moving later entries of the run back. */
  tl__str_unref(s, c->names);
  c->names = NULL;
  p->nkeys--;
  uint64_t mask = p->cap - 1, hole = (uint64_t)(c - p->counts);
  for (uint64_t i = (hole + 1) & mask; p->counts[i].names != NULL; i = (i + 1) & mask) {
    uint64_t home = p->counts[i].hash & mask;
    /* Moves back when its home is not in (hole, i] cyclically. */
    bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (!stays) {
      p->counts[hole] = p->counts[i];
      p->counts[i].names = NULL;
      hole = i;
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Unschedulable task sets
 * ------------------------------------------------------------------------------------------- */

/* Whether ex is ALIVE and could run ts's tasks (profile, cores, resources). */
static bool can_run(const tl__executor *ex, const tl__taskset *ts) {
  return ex->state == TL_EXECUTOR_ALIVE && tl__res_could_fit(ex, ts);
}

/* Lookups by key, here rather than through registry.c: placement.c sits beside the ledger, and
 * the ledger's link calls it. */
static tl__executor *executor_find(struct tl_scheduler *s, const char *id, size_t len) {
  tl__executor *ex;
  HASH_FIND(hh_by_id, s->executors_by_id, id, len, ex);
  return ex;
}

static tl__host *host_find(struct tl_scheduler *s, const char *name, size_t len) {
  tl__host *h;
  HASH_FIND(hh_by_name, s->hosts_by_name, name, len, h);
  return h;
}

/* Whether some ALIVE executor satisfies p's names and can run its task set's tasks (a spread
 * alone is always satisfied once one is). */
static bool satisfiable(struct tl_scheduler *s, const tl__placement *p) {
  const tl__taskset *ts = p->ts;
  if (p->nexec + p->nhost == 0)
    return true;
  for (uint32_t i = 0; i < p->nexec; i++) {
    tl__executor *ex = executor_find(s, p->name[i], p->len[i]);
    if (ex != NULL && can_run(ex, ts))
      return true;
  }
  for (uint32_t i = p->nexec; i < p->nexec + p->nhost; i++) {
    const tl__host *h = host_find(s, p->name[i], p->len[i]);
    for (const tl__link *l = h != NULL ? h->executors.next : NULL; l != NULL && l != &h->executors;
         l = l->next)
      if (can_run(tl__container_of(l, tl__executor, on_host), ts))
        return true;
  }
  return false;
}

/* Whether p's task set waits for what no live executor gives: work to launch, some executor
 * alive, none that satisfies it (not asked when it launched in the running round). */
static bool stuck(struct tl_scheduler *s, const tl__placement *p, bool round) {
  const tl__taskset *ts = p->ts;
  return !ts->zombie && ts->npending + ts->nspeculatable > 0 && s->nalive > 0 &&
         !(ts->restored && s->restore_hold) && !(round && ts->offer_round == s->offer_round) &&
         !satisfiable(s, p);
}

void tl__placement_after_round(struct tl_scheduler *s) {
  for (tl__link *l = s->place_tasksets.next; l != &s->place_tasksets; l = l->next) {
    tl__placement *p = tl__container_of(l, tl__placement, on_scheduler);
    if (stuck(s, p, true))
      unschedulable_enter(s, p);
    else
      unschedulable_leave(s, p);
  }
}

void tl__placement_executor_added(struct tl_scheduler *s, const tl__executor *ex) {
  for (tl__link *l = s->place_timers.next, *next; l != &s->place_timers; l = next) {
    next = l->next;
    tl__placement *p = tl__container_of(l, tl__placement, on_timer);
    if (allowed(p, ex->names->text, tl__names_host(ex->names)) && can_run(ex, p->ts))
      unschedulable_leave(s, p);
  }
}

tl__taskset *tl__placement_due(struct tl_scheduler *s, uint64_t now) {
  while (!tl__list_empty(&s->place_timers)) {
    tl__placement *p = tl__container_of(s->place_timers.next, tl__placement, on_timer);
    if (!tl__due(p->deadline, now))
      return NULL;
    if (stuck(s, p, false))
      return p->ts;
    unschedulable_leave(s, p); /* something satisfies it since the round */
  }
  return NULL;
}

/* The abort's explanation: each allowed executor and host and what it is now, and what is
 * alive. */
static void explain_names(struct tl_scheduler *s, const tl__placement *p, tl__text *t) {
  const tl__taskset *ts = p->ts;
  for (uint32_t i = 0; i < p->nexec; i++) {
    const tl__executor *ex = executor_find(s, p->name[i], p->len[i]);
    const char *what = ex == NULL                       ? "unknown"
                       : ex->state != TL_EXECUTOR_ALIVE ? tl_executor_state_name(ex->state)
                       : tl__res_could_fit(ex, ts)      ? "alive"
                                                        : "alive, cannot run its tasks";
    tl__text_printf(t, "%sexecutor %s (%s)", i == 0 ? "" : ", ", p->name[i], what);
  }
  for (uint32_t i = p->nexec; i < p->nexec + p->nhost; i++) {
    const tl__host *h = host_find(s, p->name[i], p->len[i]);
    size_t alive = 0, fit = 0;
    for (const tl__link *l = h != NULL ? h->executors.next : NULL; l != NULL && l != &h->executors;
         l = l->next) {
      const tl__executor *ex = tl__container_of(l, tl__executor, on_host);
      alive += ex->state == TL_EXECUTOR_ALIVE;
      fit += can_run(ex, ts);
    }
    tl__text_printf(t, "%shost %s (", i == 0 ? "" : ", ", p->name[i]);
    if (alive == 0)
      tl__text_str(t, "no live executor)");
    else
      tl__text_printf(t, "%zu alive, %zu can run its tasks)", alive, fit);
  }
}

int tl__placement_aborting(struct tl_scheduler *s, tl__taskset *ts, tl__str **msg) {
  tl__placement *p = ts->placement;
  for (int pass = 0; pass < 2; pass++) { /* measure, then write */
    tl__text t = {pass == 0 ? NULL : (*msg)->text, pass == 0 ? 0 : (*msg)->len + 1, 0};
    tl__text_printf(&t,
                    "Aborting task set %u.%u because no live executor satisfies its hard "
                    "placement: allowed ",
                    ts->stage_id, ts->stage_attempt);
    explain_names(s, p, &t);
    tl__text_printf(&t, "; alive: %zu executors on %zu hosts", s->nalive, s->nhosts);
    if (pass == 0) {
      if ((*msg = tl__str_alloc(s, t.len)) == NULL)
        return TL_ENOMEM;
    } else {
      tl__text_end(&t);
    }
  }
  unschedulable_leave(s, p);
  s->totals.tasksets_unschedulable_aborted++;
  return TL_OK;
}

uint64_t tl__placement_next(const struct tl_scheduler *s, uint64_t now) {
  if (tl__list_empty(&s->place_timers))
    return TL_TICK_NEVER;
  uint64_t due = tl__container_of(s->place_timers.next, tl__placement, on_timer)->deadline;
  if (due == UINT64_MAX)
    return TL_TICK_NEVER;
  return due > now ? due - now : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Inspection
 * ------------------------------------------------------------------------------------------- */

int tl__placement_check(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  size_t n = 0, timers = 0, owners = 0;
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next)
    owners += ts->placement != NULL;
  for (const tl__link *l = s->place_tasksets.next; l != &s->place_tasksets && n <= owners;
       l = l->next, n++) {
    const tl__placement *p = tl__container_of(l, tl__placement, on_scheduler);
    const tl__taskset *ts = p->ts;
    unsigned long long id = (unsigned long long)ts->id;
    const tl__taskset *found;
    HASH_FIND(hh_by_id, s->tasksets_by_id, &ts->id, sizeof ts->id, found);
    TL__CHECK(c, ts->placement == p && found == ts,
              "placement: a block of task set %llu it does not hold", id);
    TL__CHECK(c,
              !ts->barrier && p->spread <= TL_SPREAD_EXECUTOR && p->nexec <= TL_PLACE_MAX &&
                  p->nhost <= TL_PLACE_MAX && (p->spread != TL_SPREAD_NONE) == (p->cap != 0),
              "placement: task set %llu: bad fields", id);
    tl__check_account(c, p->bytes);
    /* The counts: every key's count is its running (not frozen) attempts there. */
    uint64_t keys = 0, sum = 0;
    for (uint64_t i = 0; i < p->cap; i++) {
      const tl__pcount *k = &p->counts[i];
      if (k->names == NULL)
        continue;
      keys++;
      sum += k->count;
      const char *key = key_of(p, k->names);
      TL__CHECK(c, k->count > 0 && k->hash == key_hash(key) && slot_of(p, key, k->hash) == k,
                "placement: task set %llu: slot of %s out of place or empty", id, key);
      uint32_t seen = 0;
      for (const tl__link *a = ts->running.next; a != &ts->running; a = a->next) {
        const tl__attempt *at = tl__container_of(a, tl__attempt, on_taskset);
        seen += !at->frozen && strcmp(key_of(p, at->executor->names), key) == 0;
      }
      TL__CHECK(c, seen == k->count,
                "placement: task set %llu counts %u running attempts on %s, %u run there", id,
                k->count, key, seen);
    }
    uint64_t linked = (uint64_t)ts->nrunning - ts->nfrozen;
    TL__CHECK(c,
              keys == p->nkeys && sum == p->running && keys < p->cap + (p->cap == 0) &&
                  (p->cap == 0 || sum == linked),
              "placement: task set %llu: %llu keys counting %llu attempts (%llu run, %llu keys "
              "kept)",
              id, (unsigned long long)keys, (unsigned long long)sum, (unsigned long long)linked,
              (unsigned long long)p->nkeys);
    TL__CHECK(c, p->timer == tl__list_linked(&p->on_timer),
              "placement: task set %llu: timer flag and list disagree", id);
    TL__CHECK(c, ts->zombie || p->timer == ((ts->unsched & TL__UNSCHED_PLACEMENT) != 0),
              "placement: task set %llu: timer and demand's unschedulable state disagree", id);
  }
  TL__CHECK(c, n == owners && n == s->nplace_tasksets,
            "placement: %zu blocks listed, %zu task sets hold one, count says %zu", n, owners,
            s->nplace_tasksets);
  uint64_t last = 0;
  for (const tl__link *l = s->place_timers.next; l != &s->place_timers && timers <= n;
       l = l->next, timers++) {
    const tl__placement *p = tl__container_of(l, tl__placement, on_timer);
    TL__CHECK(c, p->timer && p->deadline >= last, "placement: timers out of order");
    last = p->deadline;
  }
  TL__CHECK(c, timers == s->nplace_timers, "placement: %zu timers, count says %zu", timers,
            s->nplace_timers);
  return TL_OK;
}

void tl__placement_each_str(tl__checker *c, tl__str_fn *fn) {
  struct tl_scheduler *s = c->s;
  for (const tl__link *l = s->place_tasksets.next; l != &s->place_tasksets; l = l->next) {
    const tl__placement *p = tl__container_of(l, tl__placement, on_scheduler);
    for (uint64_t i = 0; i < p->cap; i++)
      if (p->counts[i].names != NULL)
        fn(c, p->counts[i].names, "a placement count");
  }
}

void tl__placement_status(const tl__taskset *ts, tl_taskset_status *out) {
  const tl__placement *p = ts->placement;
  out->nallowed_executors = p != NULL ? p->nexec : 0;
  out->nallowed_hosts = p != NULL ? p->nhost : 0;
  out->spread = p != NULL ? (tl_spread)p->spread : TL_SPREAD_NONE;
  out->unplaceable = p != NULL && p->timer;
}

size_t tl__placement_names(const tl__taskset *ts, tl_place_info *out, size_t cap) {
  const tl__placement *p = ts->placement;
  size_t n = p != NULL ? (size_t)p->nexec + p->nhost : 0;
  for (size_t i = 0; i < n && i < cap; i++) {
    out[i].host = i >= p->nexec;
    memcpy(out[i].name, p->name[i], p->len[i] + 1);
  }
  return n;
}

void tl__placement_explain(struct tl_scheduler *s, const tl__taskset *ts, tl__text *t) {
  const tl__placement *p = ts->placement;
  if (p == NULL)
    return;
  tl__text_str(t, "placement: ");
  if (p->nexec + p->nhost == 0)
    tl__text_str(t, "any executor");
  else
    explain_names(s, p, t);
  if (p->spread != TL_SPREAD_NONE) {
    uint64_t busy = p->nkeys;
    tl__text_printf(t, "; spread per %s: %llu %s hold a running attempt of it",
                    p->spread == TL_SPREAD_HOST ? "host" : "executor", (unsigned long long)busy,
                    p->spread == TL_SPREAD_HOST ? "hosts" : "executors");
  }
  tl__text_str(t, "\n");
  if (p->timer) {
    uint64_t now = s->last_now;
    tl__text_printf(t,
                    "unschedulable: no live executor satisfies its placement; aborted in %.3f s "
                    "unless one joins\n",
                    (double)(p->deadline > now ? p->deadline - now : 0) / 1e9);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Snapshot
 * ------------------------------------------------------------------------------------------- */

void tl__placement_save(tl__wbuf *w, const tl__taskset *ts) {
  const tl__placement *p = ts->placement;
  tl__put_u8(w, p != NULL ? p->spread : 0);
  tl__put_u32(w, p != NULL ? p->nexec : 0);
  for (uint32_t i = 0; p != NULL && i < p->nexec; i++)
    tl__put_str(w, p->name[i], p->len[i]);
  tl__put_u32(w, p != NULL ? p->nhost : 0);
  for (uint32_t i = 0; p != NULL && i < p->nhost; i++)
    tl__put_str(w, p->name[p->nexec + i], p->len[p->nexec + i]);
}

int tl__placement_restore(struct tl_scheduler *s, tl__rbuf *r, tl__taskset *ts) {
  uint8_t spread = tl__get_enum(r, TL_SPREAD_EXECUTOR + 1);
  const char *names[2 * TL_PLACE_MAX];
  size_t lens[2 * TL_PLACE_MAX];
  uint32_t count[2] = {0, 0};
  size_t max[2] = {TL_ID_MAX, TL_HOST_MAX};
  for (int k = 0; k < 2; k++) {
    count[k] = tl__get_count(r, 5);
    if (r->bad || count[k] > TL_PLACE_MAX)
      return TL_ESNAPSHOT;
    uint32_t at = k == 0 ? 0 : count[0];
    for (uint32_t i = 0; i < count[k]; i++) {
      names[at + i] = tl__get_str(r, 1, max[k] - 1, &lens[at + i]);
      if (r->bad)
        return TL_ESNAPSHOT;
    }
    if (!names_valid(names + at, lens + at, count[k], max[k]))
      return TL_ESNAPSHOT;
  }
  if (r->bad)
    return TL_ESNAPSHOT;
  if (count[0] + count[1] == 0 && spread == TL_SPREAD_NONE)
    return TL_OK;
  if (ts->barrier)
    return TL_ESNAPSHOT;
  tl__placement *p = block_new(s, names, lens, count[0], count[1], spread, ts->ntasks);
  if (p == NULL)
    return TL_ENOMEM;
  tl__placement_attach(s, p, ts);
  return TL_OK;
}

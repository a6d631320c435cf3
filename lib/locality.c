/* Locality: where each task prefers to run, the locality levels each task set can use, and delay
 * scheduling (Spark's pending lists by locality, computeValidLocalityLevels,
 * getAllowedLocalityLevel, recomputeLocality and the SPARK-18886 timer rule).
 *
 * Places and keys. A place is an executor id or a host name that at least one task set prefers;
 * places live in the scheduler's places_by_key and point at their executor and host records
 * (tl__executor.place, tl__host.place), so an offer finds them without hashing a string. A task
 * set with preferences has one key per place it prefers, plus keys[0] for its indices without
 * preferences, and one pair per (index, key); a pair is on its key's list exactly while its index
 * is pending. A preference for an executor is also one for its host (Spark's
 * ExecutorCacheTaskLocation). Everything is allocated by tl_submit, before anything changes:
 * nothing later allocates for locality, so no other call can fail for it.
 *
 * Valid levels. PROCESS_LOCAL is valid while a pending index prefers an ALIVE executor,
 * NODE_LOCAL while one prefers a host with an ALIVE executor, NO_PREF while an index without
 * preferences is pending, RACK_LOCAL while one prefers a live host that is in a rack; ANY always.
 * Each key counts its pending pairs, and nlive counts the keys with pending pairs whose place is
 * alive, so every test is O(1). Racks are known from registrations only: a host with no live
 * executor has no known rack. Like Spark, the set of levels (tl__locality.levels) is recomputed
 * when a place the task set prefers changes (an executor registered, decommissioned or lost):
 * only the task sets that prefer that executor or its host are touched. When a level appears
 * below the current one, the task set moves to it (SPARK-31837).
 *
 * Delay scheduling. A task set waits at its current level for locality_wait_*_ns from the
 * last reset; a level with nothing to launch is skipped at once (SPARK-4939; here "nothing" means
 * no pending index that prefers a live place, where Spark also waits for dead ones). The timer
 * is reset after a turn in an offer round that launched something with no offer rejected, if the
 * round offered every ALIVE executor or nothing was rejected since the last reset (SPARK-18886);
 * a rejection is an offer of the TL_ANY pass that launched nothing while tasks were pending.
 * A wait whose end would fall at or past UINT64_MAX never ends, not even with the clock at
 * UINT64_MAX: offers keep the level, and tl_tick answers TL_TICK_NEVER for it (wait_over below).
 *
 * Everything here runs under the scheduler's lock.
 */
#include "checker.h"
#include "locality.h"

/* Whether a wait of wait ns from reset has run out at now: when the time reaches its end, unless
 * that end saturated at UINT64_MAX, which is past the end of time and never comes. Offers,
 * dormancy and tl_tick all ask this, so they agree. */
static bool wait_over(uint64_t reset, uint64_t wait, uint64_t now) {
  return tl__due(tl__add_sat(reset, wait), now);
}

/* ---------------------------------------------------------------------------------------------
 * Places
 * ------------------------------------------------------------------------------------------- */

static size_t place_size(size_t key_len) { return sizeof(tl__place) + key_len + 1; }

/* A place's key is its kind and a host name or an executor id: the longer of the two fits. */
_Static_assert(TL_ID_MAX <= TL_HOST_MAX, "a place key holds an executor id");

tl__place *tl__place_find(struct tl_scheduler *s, char kind, const char *name, size_t len) {
  char key[1 + TL_HOST_MAX];
  tl__place *p;
  key[0] = kind;
  memcpy(key + 1, name, len);
  HASH_FIND(hh_by_key, s->places_by_key, key, len + 1, p);
  return p;
}

static tl__host *host_find(struct tl_scheduler *s, const char *name) {
  tl__host *h;
  HASH_FIND(hh_by_name, s->hosts_by_name, name, strlen(name), h);
  return h;
}

/* Points the place's executor or host record at it (on), or at nothing. */
static void place_point(struct tl_scheduler *s, tl__place *p, bool on) {
  if (p->key[0] == TL__PLACE_EXECUTOR) {
    tl__executor *ex = tl__executor_find(s, tl__place_name(p));
    if (ex != NULL)
      ex->place = on ? p : NULL;
  } else {
    tl__host *h = host_find(s, tl__place_name(p));
    if (h != NULL)
      h->place = on ? p : NULL;
  }
}

static tl__place *place_new(struct tl_scheduler *s, char kind, const char *name, size_t len) {
  tl__place *p = tl__calloc(s, 1, place_size(len + 1));
  if (p == NULL)
    return NULL;
  p->key[0] = kind;
  memcpy(p->key + 1, name, len);
  p->key[len + 1] = '\0';
  p->key_len = (uint32_t)(len + 1);
  tl__list_init(&p->keys);
  HASH_ADD_KEYPTR(hh_by_key, s->places_by_key, p->key, p->key_len, p);
  if (!TL__HASH_ADDED(p, hh_by_key)) {
    tl__free(s, p, place_size(len + 1));
    return NULL;
  }
  if (kind == TL__PLACE_EXECUTOR) {
    tl__executor *ex = tl__executor_find(s, tl__place_name(p));
    p->alive = ex != NULL && ex->state == TL_EXECUTOR_ALIVE;
  } else {
    tl__host *h = host_find(s, tl__place_name(p));
    p->alive = h != NULL && h->nalive > 0;
    p->racked = p->alive && h->rack != NULL;
  }
  s->nplaces++;
  return p;
}

/* Frees a place no key uses any more. */
static void place_free(struct tl_scheduler *s, tl__place *p) {
  place_point(s, p, false);
  HASH_DELETE(hh_by_key, s->places_by_key, p);
  s->nplaces--;
  tl__free(s, p, place_size(p->key_len));
}

/* ---------------------------------------------------------------------------------------------
 * Live counts and valid levels
 * ------------------------------------------------------------------------------------------- */

/* Adds (up) or removes a key's share of nlive, for a place alive with the given rack flag. */
static void share(tl__locality *loc, const tl__place *p, bool racked, bool up) {
  if (p->key[0] == TL__PLACE_EXECUTOR) {
    loc->nlive[TL__LIVE_PROCESS] += up ? 1u : UINT32_MAX;
    return;
  }
  loc->nlive[TL__LIVE_NODE] += up ? 1u : UINT32_MAX;
  if (racked)
    loc->nlive[TL__LIVE_RACK] += up ? 1u : UINT32_MAX;
}

static uint8_t valid_levels(const tl__locality *loc) {
  uint8_t m = 1u << TL_ANY;
  if (loc->nlive[TL__LIVE_PROCESS] > 0)
    m |= 1u << TL_PROCESS_LOCAL;
  if (loc->nlive[TL__LIVE_NODE] > 0)
    m |= 1u << TL_NODE_LOCAL;
  if (loc->keys[0].count > 0)
    m |= 1u << TL_NO_PREF;
  if (loc->nlive[TL__LIVE_RACK] > 0)
    m |= 1u << TL_RACK_LOCAL;
  return m;
}

/* The first level of m at or after l (TL_ANY is always in m). */
static uint8_t level_from(uint8_t m, unsigned l) {
  while (!(m & (1u << l)))
    l++;
  return (uint8_t)l;
}

static unsigned count_bits(unsigned m) {
  unsigned n = 0;
  for (; m != 0; m &= m - 1)
    n++;
  return n;
}

/* Spark's recomputeLocality: the level stays where it was in the new set of levels, unless a
 * level appeared below it: then it goes to the most local new level (SPARK-31837). */
static void recompute(tl__taskset *ts) {
  tl__locality *loc = ts->loc;
  if (ts->zombie)
    return;
  uint8_t before = loc->levels, after = valid_levels(loc);
  unsigned below = (1u << loc->level) - 1;
  uint8_t level = level_from(after, loc->level);
  if (count_bits(after & below) > count_bits(before & below)) {
    unsigned added = (unsigned)(after & ~before);
    level = 0;
    while (!(added & (1u << level)))
      level++;
  }
  loc->levels = after;
  loc->level = level;
}

/* A place's executor or host changed: every key on it moves its share of nlive. */
static void place_set(tl__place *p, bool alive, bool racked) {
  if (p->alive == alive && p->racked == racked)
    return;
  bool was_alive = p->alive, was_racked = p->racked;
  p->alive = alive;
  p->racked = racked;
  for (tl__link *l = p->keys.next; l != &p->keys; l = l->next) {
    tl__tskey *k = tl__container_of(l, tl__tskey, on_place);
    if (k->count > 0) {
      if (was_alive)
        share(k->taskset->loc, p, was_racked, false);
      if (alive)
        share(k->taskset->loc, p, racked, true);
    }
  }
}

/* Every task set that prefers the place recomputes its levels. */
static void recompute_keys(tl__place *p) {
  for (tl__link *l = p->keys.next; l != &p->keys; l = l->next)
    recompute(tl__container_of(l, tl__tskey, on_place)->taskset);
}

void tl__locality_executor_changed(struct tl_scheduler *s, tl__executor *ex, bool was_alive,
                                   bool is_alive) {
  (void)s;
  tl__host *h = ex->host;
  if (was_alive != is_alive)
    h->nalive += is_alive ? 1u : UINT32_MAX;
  /* The new state first, then one recomputation per task set from it: a task set that prefers
   * both the executor and its host sees both change at once (SPARK-31837 moves it to the most
   * local level that appeared). Recomputing a task set twice changes nothing the second time. */
  if (ex->place != NULL)
    place_set(ex->place, is_alive, false);
  if (h->place != NULL)
    place_set(h->place, h->nalive > 0, h->nalive > 0 && h->rack != NULL);
  if (ex->place != NULL)
    recompute_keys(ex->place);
  if (h->place != NULL)
    recompute_keys(h->place);
}

/* ---------------------------------------------------------------------------------------------
 * Pending lists
 * ------------------------------------------------------------------------------------------- */

void tl__locality_pending_added(tl__taskset *ts, uint32_t index) {
  tl__locality *loc = ts->loc;
  for (uint32_t p = loc->first_pair[index]; p < loc->first_pair[index + 1]; p++) {
    tl__pair *pair = &loc->pairs[p];
    tl__tskey *k = &loc->keys[pair->key];
    pair->prev = TL__NONE;
    pair->next = k->head;
    if (k->head != TL__NONE)
      loc->pairs[k->head].prev = p;
    k->head = p;
    if (k->count++ == 0 && k->place != NULL && k->place->alive)
      share(loc, k->place, k->place->racked, true);
  }
  loc->pushed[index] = ++loc->push_seq;
}

void tl__locality_pending_removed(tl__taskset *ts, uint32_t index) {
  tl__locality *loc = ts->loc;
  for (uint32_t p = loc->first_pair[index]; p < loc->first_pair[index + 1]; p++) {
    tl__pair *pair = &loc->pairs[p];
    tl__tskey *k = &loc->keys[pair->key];
    if (pair->prev != TL__NONE)
      loc->pairs[pair->prev].next = pair->next;
    else
      k->head = pair->next;
    if (pair->next != TL__NONE)
      loc->pairs[pair->next].prev = pair->prev;
    pair->prev = pair->next = TL__NONE;
    if (--k->count == 0 && k->place != NULL && k->place->alive)
      share(loc, k->place, k->place->racked, false);
  }
}

void tl__locality_zombie(struct tl_scheduler *s, tl__taskset *ts) {
  (void)s;
  for (uint32_t i = ts->pending_top; i != TL__NONE; i = ts->idx[i].next)
    tl__locality_pending_removed(ts, i);
  tl__list_remove(&ts->loc->on_scheduler);
}

/* ---------------------------------------------------------------------------------------------
 * Submission and release
 * ------------------------------------------------------------------------------------------- */

int tl__locality_validate(const tl_taskset_desc *d) {
  if (d->tasks == NULL)
    return TL_OK;
  uint64_t npairs = 0;
  for (uint32_t i = 0; i < d->ntasks; i++) {
    const tl_task_desc *t = &d->tasks[i];
    if (t->nprefs > 0 && t->prefs == NULL)
      return TL_EINVAL;
    for (uint32_t j = 0; j < t->nprefs; j++) {
      const tl_location *l = &t->prefs[j];
      if (tl__name_len(l->host, TL_HOST_MAX) == 0 ||
          (l->executor_id != NULL && tl__name_len(l->executor_id, TL_ID_MAX) == 0))
        return TL_EINVAL;
      npairs += l->executor_id != NULL ? 2 : 1;
    }
    npairs += t->nprefs == 0;
    if (npairs >= TL__NONE)
      return TL_EINVAL; /* pairs are numbered in 32 bits */
  }
  return TL_OK;
}

static size_t locality_size(uint32_t ntasks, uint32_t nkeys, uint32_t npairs) {
  return sizeof(tl__locality) + (size_t)nkeys * sizeof(tl__tskey) +
         (size_t)ntasks * sizeof(uint64_t) + (size_t)npairs * sizeof(tl__pair) +
         ((size_t)ntasks + 1) * sizeof(uint32_t);
}

static size_t locality_bytes(const tl__locality *loc) {
  return locality_size(loc->ntasks, loc->nkeys, loc->npairs);
}

/* Calls each(s, kind, name, len, ctx) for every place a task's preferences name, in order. */
typedef bool (*each_place_fn)(struct tl_scheduler *s, char kind, const char *name, size_t len,
                              uint32_t index, void *ctx);
static bool each_place(struct tl_scheduler *s, const tl_task_desc *t, uint32_t index,
                       each_place_fn fn, void *ctx) {
  for (uint32_t j = 0; j < t->nprefs; j++) {
    const tl_location *l = &t->prefs[j];
    if (l->executor_id != NULL &&
        !fn(s, TL__PLACE_EXECUTOR, l->executor_id, strlen(l->executor_id), index, ctx))
      return false;
    if (!fn(s, TL__PLACE_HOST, l->host, strlen(l->host), index, ctx))
      return false;
  }
  return true;
}

typedef struct numbering {
  uint32_t stamp;  /* this submission's */
  uint32_t nkeys;  /* keys numbered so far (keys[0] is the no-preference key) */
  uint32_t npairs; /* pairs counted so far */
} numbering;

/* Pass one: finds or makes each place, numbers it once per submission and counts one pair per
 * (index, place). false: out of memory. */
static bool number_place(struct tl_scheduler *s, char kind, const char *name, size_t len,
                         uint32_t index, void *ctx) {
  numbering *n = ctx;
  tl__place *p = tl__place_find(s, kind, name, len);
  if (p == NULL && (p = place_new(s, kind, name, len)) == NULL)
    return false;
  if (p->stamp != n->stamp) {
    p->stamp = n->stamp;
    p->scratch = n->nkeys++;
    p->mark = TL__NONE;
  }
  if (p->mark != index) { /* a place named twice by one task counts once */
    p->mark = index;
    n->npairs++;
  }
  return true;
}

/* Frees the places this submission made that no task set uses (pass one failed, or the
 * submission was undone). */
static bool drop_fresh(struct tl_scheduler *s, char kind, const char *name, size_t len,
                       uint32_t index, void *ctx) {
  (void)index;
  (void)ctx;
  tl__place *p = tl__place_find(s, kind, name, len);
  if (p != NULL && p->nkeys == 0)
    place_free(s, p);
  return true;
}

static bool unmark(struct tl_scheduler *s, char kind, const char *name, size_t len, uint32_t index,
                   void *ctx) {
  (void)index;
  (void)ctx;
  tl__place_find(s, kind, name, len)->mark = TL__NONE;
  return true;
}

typedef struct filling {
  tl__locality *loc;
  uint32_t np; /* pairs filled */
} filling;

/* Pass two: a pair per (index, place), and each key's place. */
static bool fill_pair(struct tl_scheduler *s, char kind, const char *name, size_t len,
                      uint32_t index, void *ctx) {
  filling *f = ctx;
  tl__place *p = tl__place_find(s, kind, name, len);
  if (p->mark == index)
    return true;
  p->mark = index;
  f->loc->keys[p->scratch].place = p;
  tl__pair *pair = &f->loc->pairs[f->np++];
  pair->key = p->scratch;
  pair->index = index;
  pair->prev = pair->next = TL__NONE;
  return true;
}

/* A block of these sizes with its keys empty and unlinked (no place yet), or NULL. */
static tl__locality *block_new(struct tl_scheduler *s, uint32_t ntasks, uint32_t nkeys,
                               uint32_t npairs) {
  tl__locality *loc = tl__malloc(s, locality_size(ntasks, nkeys, npairs));
  if (loc == NULL)
    return NULL;
  memset(loc, 0, sizeof *loc);
  loc->ntasks = ntasks;
  loc->nkeys = nkeys;
  loc->npairs = npairs;
  loc->pushed = (uint64_t *)(void *)&loc->keys[nkeys];
  loc->pairs = (tl__pair *)(void *)&loc->pushed[ntasks];
  loc->first_pair = (uint32_t *)(void *)&loc->pairs[npairs];
  tl__list_init(&loc->on_scheduler);
  for (uint32_t k = 0; k < nkeys; k++) {
    memset(&loc->keys[k], 0, sizeof loc->keys[k]);
    loc->keys[k].head = TL__NONE;
    tl__list_init(&loc->keys[k].on_place);
  }
  return loc;
}

int tl__locality_prepare(struct tl_scheduler *s, const tl_taskset_desc *d, tl__locality **out) {
  *out = NULL;
  uint32_t with_prefs = 0;
  for (uint32_t i = 0; d->tasks != NULL && i < d->ntasks; i++)
    with_prefs += d->tasks[i].nprefs > 0;
  if (with_prefs == 0)
    return TL_OK;

  numbering n = {++s->locality_stamp, 1, 0};
  if (n.stamp == 0) /* stamps wrapped: 0 is what new places start with */
    n.stamp = ++s->locality_stamp;
  for (uint32_t i = 0; i < d->ntasks; i++) {
    if (d->tasks[i].nprefs == 0)
      n.npairs++;
    else if (!each_place(s, &d->tasks[i], i, number_place, &n))
      goto fail_places;
  }
  tl__locality *loc = block_new(s, d->ntasks, n.nkeys, n.npairs);
  if (loc == NULL)
    goto fail_places;
  filling f = {loc, 0};
  for (uint32_t i = 0; i < d->ntasks; i++)
    each_place(s, &d->tasks[i], i, unmark, NULL);
  for (uint32_t i = 0; i < d->ntasks; i++) {
    loc->first_pair[i] = f.np;
    if (d->tasks[i].nprefs == 0) {
      tl__pair *pair = &loc->pairs[f.np++];
      pair->key = 0;
      pair->index = i;
      pair->prev = pair->next = TL__NONE;
    } else {
      each_place(s, &d->tasks[i], i, fill_pair, &f);
    }
  }
  loc->first_pair[d->ntasks] = f.np;
  for (uint32_t k = 1; k < n.nkeys; k++) {
    tl__tskey *key = &loc->keys[k];
    HASH_ADD(hh_by_place, loc->keys_by_place, place, sizeof key->place, key);
    if (!TL__HASH_ADDED(key, hh_by_place)) {
      HASH_CLEAR(hh_by_place, loc->keys_by_place);
      tl__free(s, loc, locality_bytes(loc));
      goto fail_places;
    }
  }
  *out = loc;
  return TL_OK;

fail_places:
  for (uint32_t i = 0; i < d->ntasks; i++)
    each_place(s, &d->tasks[i], i, drop_fresh, NULL);
  return TL_ENOMEM;
}

/* Frees a block and the places only it used. A key without a place (a block that
 * tl__locality_restore gave up on before reading that far) is skipped. */
static void free_block(struct tl_scheduler *s, tl__locality *loc) {
  for (uint32_t k = 1; k < loc->nkeys; k++) {
    tl__place *p = loc->keys[k].place;
    if (p == NULL)
      continue;
    if (tl__list_linked(&loc->keys[k].on_place)) {
      tl__list_remove(&loc->keys[k].on_place);
      p->nkeys--;
    }
    if (p->nkeys == 0)
      place_free(s, p);
  }
  HASH_CLEAR(hh_by_place, loc->keys_by_place);
  tl__free(s, loc, locality_bytes(loc));
}

void tl__locality_discard(struct tl_scheduler *s, tl__locality *loc) {
  if (loc != NULL)
    free_block(s, loc);
}

void tl__locality_attach(struct tl_scheduler *s, tl__taskset *ts, tl__locality *loc) {
  ts->loc = loc;
  for (uint32_t k = 0; k < loc->nkeys; k++) {
    tl__tskey *key = &loc->keys[k];
    key->taskset = ts;
    if (key->place == NULL)
      continue;
    if (key->place->nkeys++ == 0)
      place_point(s, key->place, true);
    tl__list_insert_tail(&key->place->keys, &key->on_place);
  }
  for (uint32_t i = ts->ntasks; i-- > 0;) /* index 0 on top of every list, as on the stack */
    tl__locality_pending_added(ts, i);
  loc->levels = valid_levels(loc);
  loc->level = level_from(loc->levels, TL_PROCESS_LOCAL);
  loc->reset_time = s->last_now;
  loc->no_rejects = true;
  tl__list_insert_tail(&s->locality_tasksets, &loc->on_scheduler);
}

void tl__locality_free(struct tl_scheduler *s, tl__taskset *ts) {
  tl__locality *loc = ts->loc;
  if (loc == NULL)
    return;
  tl__list_remove(&loc->on_scheduler);
  free_block(s, loc);
  ts->loc = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Delay scheduling
 * ------------------------------------------------------------------------------------------- */

/* Whether the task set has something to launch at level l (Spark's moreTasksToRunIn). */
static bool has_tasks_at(const tl__locality *loc, unsigned l) {
  switch (l) {
  case TL_PROCESS_LOCAL:
    return loc->nlive[TL__LIVE_PROCESS] > 0;
  case TL_NODE_LOCAL:
    return loc->nlive[TL__LIVE_NODE] > 0;
  case TL_NO_PREF:
    return loc->keys[0].count > 0;
  case TL_RACK_LOCAL:
    return loc->nlive[TL__LIVE_RACK] > 0;
  default:
    return true;
  }
}

tl_locality tl__locality_allowed(struct tl_scheduler *s, tl__taskset *ts) {
  tl__locality *loc = ts->loc;
  uint64_t now = s->last_now;
  while (loc->level != TL_ANY) {
    uint64_t wait = s->locality_wait[loc->level];
    if (!has_tasks_at(loc, loc->level))
      loc->reset_time = now; /* nothing to wait for (SPARK-4939) */
    else if (wait_over(loc->reset_time, wait, now))
      loc->reset_time += wait; /* the next wait starts where it ended (at or before now) */
    else
      return (tl_locality)loc->level;
    loc->level = level_from(loc->levels, loc->level + 1u);
  }
  return TL_ANY;
}

void tl__locality_after_turn(struct tl_scheduler *s, tl__taskset *ts, bool rejects, int best,
                             bool full) {
  tl__locality *loc = ts->loc;
  if (rejects) {
    loc->no_rejects = false;
    return;
  }
  if (best <= TL_ANY && (full || loc->no_rejects)) {
    loc->reset_time = s->last_now;
    loc->level = level_from(loc->levels, (unsigned)best);
    loc->no_rejects = true;
  }
}

bool tl__locality_dormant(struct tl_scheduler *s, const tl__taskset *ts, size_t nslots) {
  const tl__locality *loc = ts->loc;
  unsigned l = loc->level;
  if (l > TL_NODE_LOCAL || loc->keys[0].count > 0 || loc->nkeys - 1 > nslots ||
      !has_tasks_at(loc, l))
    return false;
  uint64_t now = s->last_now; /* tl__locality_allowed would move on: */
  if (wait_over(loc->reset_time, s->locality_wait[l], now))
    return false;
  for (uint32_t k = 1; k < loc->nkeys; k++)
    if (loc->keys[k].count > 0 && loc->keys[k].place->offer_round == s->offer_round)
      return false;
  return true;
}

/* The time the task set's wait at its level (and at the levels after it, if that one has
 * already passed) ends, after now; TL_TICK_NEVER if it waits for nothing or for a wait that
 * never runs out. With fired, reports whether a wait ended in (since, now]. */
static uint64_t wait_ends(struct tl_scheduler *s, const tl__taskset *ts, uint64_t now,
                          uint64_t since, bool *fired) {
  const tl__locality *loc = ts->loc;
  if (ts->npending + ts->nspeculatable == 0)
    return TL_TICK_NEVER;
  uint64_t reset = loc->reset_time;
  for (unsigned l = loc->level; l != TL_ANY; l = level_from(loc->levels, l + 1)) {
    if (!has_tasks_at(loc, l))
      break; /* the next offer skips it, and the next wait starts then: no deadline yet */
    uint64_t end = tl__add_sat(reset, s->locality_wait[l]);
    if (end == UINT64_MAX)
      return TL_TICK_NEVER; /* past the end of time: it never runs out (wait_over) */
    if (end > now)
      return end;
    if (fired != NULL && end > since)
      *fired = true;
    reset = end;
  }
  return TL_TICK_NEVER;
}

uint64_t tl__locality_next(struct tl_scheduler *s, uint64_t now) {
  uint64_t next = TL_TICK_NEVER;
  for (tl__link *l = s->locality_tasksets.next; l != &s->locality_tasksets; l = l->next) {
    tl__locality *loc = tl__container_of(l, tl__locality, on_scheduler);
    uint64_t end = wait_ends(s, loc->keys[0].taskset, now, 0, NULL);
    if (end != TL_TICK_NEVER && end - now < next)
      next = end - now;
  }
  return next;
}

uint64_t tl__locality_tick(struct tl_scheduler *s, uint64_t now) {
  bool fired = false;
  uint64_t next = TL_TICK_NEVER;
  for (tl__link *l = s->locality_tasksets.next; l != &s->locality_tasksets; l = l->next) {
    tl__locality *loc = tl__container_of(l, tl__locality, on_scheduler);
    uint64_t end = wait_ends(s, loc->keys[0].taskset, now, s->locality_ticked, &fired);
    if (end != TL_TICK_NEVER && end - now < next)
      next = end - now;
  }
  if (fired) {
    if (tl__events_reserve(s, 1) != TL_OK)
      return 0; /* the next tick tries again */
    s->revive_wanted = true;
    tl__event_push_revive(s);
  }
  s->locality_ticked = now;
  return next;
}

/* ---------------------------------------------------------------------------------------------
 * Choosing a task for an offer
 * ------------------------------------------------------------------------------------------- */

static tl__tskey *key_of(const tl__locality *loc, const tl__place *place) {
  tl__tskey *k = NULL;
  if (place != NULL)
    HASH_FIND(hh_by_place, loc->keys_by_place, &place, sizeof place, k);
  return k;
}

/* The first index on a key's list that may run on ex (exclude on failure: Spark's
 * dequeueTaskFromList skips excluded indices, which blocked names). */
static bool take_key(struct tl_scheduler *s, const tl__taskset *ts, const tl__tskey *k,
                     const tl__executor *ex, tl__index_blocked_fn *blocked, uint32_t *index) {
  const tl__locality *loc = ts->loc;
  for (uint32_t p = k != NULL ? k->head : TL__NONE; p != TL__NONE; p = loc->pairs[p].next) {
    if (blocked == NULL || !blocked(s, ts, loc->pairs[p].index, ex)) {
      *index = loc->pairs[p].index;
      return true;
    }
  }
  return false;
}

bool tl__locality_pick(struct tl_scheduler *s, const tl__taskset *ts, const tl__executor *ex,
                       tl_locality allowed, tl__index_blocked_fn *blocked, uint32_t *index,
                       tl_locality *level) {
  const tl__locality *loc = ts->loc;
  const tl__host *host = ex->host;
  if (ts->npending == 0)
    return false;
  if (take_key(s, ts, key_of(loc, ex->place), ex, blocked, index)) {
    *level = TL_PROCESS_LOCAL;
  } else if (allowed >= TL_NODE_LOCAL &&
             take_key(s, ts, key_of(loc, host->place), ex, blocked, index)) {
    *level = TL_NODE_LOCAL;
  } else if (allowed >= TL_NO_PREF && take_key(s, ts, &loc->keys[0], ex, blocked, index)) {
    *level = TL_NO_PREF;
  } else {
    /* RACK_LOCAL: of the indices that prefer another live host of the rack, the one pushed
     * last, as Spark's one list per rack has it. */
    bool found = false;
    if (allowed >= TL_RACK_LOCAL && host->rack != NULL && loc->nlive[TL__LIVE_RACK] > 0) {
      const tl__rack *rack = host->rack;
      for (const tl__link *l = rack->hosts.next; l != &rack->hosts; l = l->next) {
        const tl__host *h = tl__container_of(l, tl__host, on_rack);
        uint32_t i;
        if (h != host && h->nalive > 0 && take_key(s, ts, key_of(loc, h->place), ex, blocked, &i) &&
            (!found || loc->pushed[i] > loc->pushed[*index])) {
          *index = i;
          found = true;
        }
      }
    }
    if (!found)
      return false;
    *level = TL_RACK_LOCAL;
  }
  return true;
}

tl_locality tl__locality_of(struct tl_scheduler *s, const tl__taskset *ts, uint32_t index,
                            const tl__executor *ex) {
  const tl__locality *loc = ts->loc;
  if (loc == NULL)
    return TL_NO_PREF;
  tl_locality best = TL_ANY;
  for (uint32_t p = loc->first_pair[index]; p < loc->first_pair[index + 1]; p++) {
    const tl__place *place = loc->keys[loc->pairs[p].key].place;
    if (place == NULL)
      return TL_NO_PREF;
    if (place == ex->place)
      return TL_PROCESS_LOCAL;
    if (place == ex->host->place) {
      best = TL_NODE_LOCAL;
    } else if (best == TL_ANY && place->racked && ex->host->rack != NULL) {
      const tl__host *h = host_find(s, tl__place_name(place));
      if (h != NULL && h->rack == ex->host->rack)
        best = TL_RACK_LOCAL;
    }
  }
  return best;
}

unsigned tl__locality_levels(const tl__taskset *ts) {
  return ts->loc != NULL ? ts->loc->levels : 1u << TL_NO_PREF;
}

void tl__locality_rejected(tl__taskset *ts) { ts->loc->no_rejects = false; }

void tl__locality_offered(struct tl_scheduler *s, const tl__executor *ex) {
  if (ex->place != NULL)
    ex->place->offer_round = s->offer_round;
  if (ex->host->place != NULL)
    ex->host->place->offer_round = s->offer_round;
}

/* ---------------------------------------------------------------------------------------------
 * Snapshots
 *
 * A task set's part (tl__locality_save), little-endian, strings as tl__put_str writes them:
 *
 *   u8  present                  0: no locality (ts->loc NULL), nothing follows; 1: a block
 *   u32 ntasks                   the task set's
 *   u32 nplaces                  keys less the no-preference key: at least 1
 *   u32 npairs
 *   nplaces x {u8 kind, str name}        keys 1.. in key order: TL__PLACE_EXECUTOR ('e') and an
 *                                        executor id, or TL__PLACE_HOST ('h') and a host name
 *   ntasks x {u32 n, n x u32 key}        each index's pairs in pair order (pairs[] in order)
 *   u64 reset_time (a clock time), u64 push_seq
 *   u8 levels, u8 level, u8 no_rejects, 3 x u32 nlive
 *   ntasks x u64 pushed
 *   nkeys x {u32 count, count x u32 pair} each key's list, key 0 first, head first
 *
 * Everything is in key, index or list order, so the same ledger writes the same bytes. Restore
 * accepts only what save could have written, for the task set as restored and the executors as
 * registered: keys numbered in the order their places first appear in the pairs, each place
 * named once per task set and once per index, the no-preference key the only pair of its
 * index, each list of its own key's pairs of pending indices in push order (latest first),
 * every pair of a pending index listed (none in a zombie), and the live counts those lists and
 * the executors give. Places are found by kind and name, or made as a submission makes them.
 *
 * The scheduler's part (tl__locality_save_global) is u64 locality_ticked, a clock time. The
 * submission stamp (locality_stamp) is not saved: places compare it only within a submission.
 * ------------------------------------------------------------------------------------------- */

void tl__locality_save(struct tl_scheduler *s, const tl__taskset *ts, tl__wbuf *w) {
  (void)s;
  const tl__locality *loc = ts->loc;
  tl__put_u8(w, loc != NULL);
  if (loc == NULL)
    return;
  tl__put_u32(w, loc->ntasks);
  tl__put_u32(w, loc->nkeys - 1);
  tl__put_u32(w, loc->npairs);
  for (uint32_t k = 1; k < loc->nkeys; k++) {
    const tl__place *p = loc->keys[k].place;
    tl__put_u8(w, (uint8_t)p->key[0]);
    tl__put_str(w, tl__place_name(p), p->key_len - 1);
  }
  for (uint32_t i = 0; i < loc->ntasks; i++) {
    tl__put_u32(w, loc->first_pair[i + 1] - loc->first_pair[i]);
    for (uint32_t p = loc->first_pair[i]; p < loc->first_pair[i + 1]; p++)
      tl__put_u32(w, loc->pairs[p].key);
  }
  tl__put_u64(w, loc->reset_time);
  tl__put_u64(w, loc->push_seq);
  tl__put_u8(w, loc->levels);
  tl__put_u8(w, loc->level);
  tl__put_u8(w, loc->no_rejects);
  for (unsigned l = 0; l < 3; l++)
    tl__put_u32(w, loc->nlive[l]);
  for (uint32_t i = 0; i < loc->ntasks; i++)
    tl__put_u64(w, loc->pushed[i]);
  for (uint32_t k = 0; k < loc->nkeys; k++) {
    tl__put_u32(w, loc->keys[k].count);
    for (uint32_t p = loc->keys[k].head; p != TL__NONE; p = loc->pairs[p].next)
      tl__put_u32(w, p);
  }
}

/* The fewest bytes a block of these counts takes after its counts: a truncated block is refused
 * before anything is allocated for it. */
static uint64_t least_bytes(uint32_t ntasks, uint32_t nplaces, uint32_t npairs) {
  return (uint64_t)nplaces * (1 + 4 + 1) + (uint64_t)ntasks * (4 + 8) + (uint64_t)npairs * 4 + 8 +
         8 + 3 + 3 * 4 + ((uint64_t)nplaces + 1) * 4;
}

/* Keys 1..: each a place of its own, found or made, linked to it and indexed as attach would. */
static int read_places(struct tl_scheduler *s, tl__locality *loc, tl__rbuf *r) {
  for (uint32_t k = 1; k < loc->nkeys; k++) {
    tl__tskey *key = &loc->keys[k];
    char kind = (char)tl__get_u8(r);
    size_t len;
    const char *name =
        tl__get_str(r, 1, (kind == TL__PLACE_EXECUTOR ? TL_ID_MAX : TL_HOST_MAX) - 1, &len);
    if (name == NULL || (kind != TL__PLACE_EXECUTOR && kind != TL__PLACE_HOST) ||
        memchr(name, '\0', len) != NULL)
      return TL_ESNAPSHOT;
    tl__place *p = tl__place_find(s, kind, name, len);
    if (p == NULL && (p = place_new(s, kind, name, len)) == NULL)
      return TL_ENOMEM;
    key->place = p; /* linked at once: free_block unlinks it, and frees p if it was new */
    if (p->nkeys++ == 0)
      place_point(s, p, true);
    tl__list_insert_tail(&p->keys, &key->on_place);
    if (key_of(loc, p) != NULL)
      return TL_ESNAPSHOT; /* a place named by two keys */
    HASH_ADD(hh_by_place, loc->keys_by_place, place, sizeof key->place, key);
    if (!TL__HASH_ADDED(key, hh_by_place))
      return TL_ENOMEM;
  }
  return TL_OK;
}

/* Each index's pairs, unlinked. */
static int read_pairs(tl__locality *loc, tl__rbuf *r) {
  uint32_t np = 0, fresh = 1; /* pairs read; the number a key named for the first time has */
  for (uint32_t i = 0; i < loc->ntasks; i++) {
    uint32_t n = tl__get_count(r, 4);
    if (r->bad || n == 0 || n > loc->npairs - np)
      return TL_ESNAPSHOT;
    loc->first_pair[i] = np;
    for (uint32_t j = np; j < np + n; j++) {
      uint32_t k = tl__get_below(r, fresh < loc->nkeys ? fresh + 1 : loc->nkeys);
      if (r->bad || (k == 0 && n != 1))
        return TL_ESNAPSHOT;
      fresh += k == fresh;
      loc->pairs[j] = (tl__pair){k, i, TL__NONE, TL__NONE};
    }
    /* No two pairs of an index share a key (marks are tl_submit's scratch). */
    for (uint32_t j = np; j < np + n; j++)
      if (loc->pairs[j].key != 0)
        loc->keys[loc->pairs[j].key].place->mark = TL__NONE;
    for (uint32_t j = np; j < np + n; j++) {
      if (loc->pairs[j].key == 0)
        continue;
      tl__place *p = loc->keys[loc->pairs[j].key].place;
      if (p->mark == i)
        return TL_ESNAPSHOT;
      p->mark = i;
    }
    np += n;
  }
  loc->first_pair[loc->ntasks] = np;
  return np == loc->npairs && fresh == loc->nkeys ? TL_OK : TL_ESNAPSHOT;
}

/* The delay-scheduling state and the push order. */
static int read_state(tl__locality *loc, uint32_t nlive[3], tl__rbuf *r) {
  loc->reset_time = tl__get_time(r);
  loc->push_seq = tl__get_u64(r);
  loc->levels = tl__get_u8(r);
  loc->level = tl__get_enum(r, TL_ANY + 1);
  loc->no_rejects = tl__get_bool(r);
  for (unsigned l = 0; l < 3; l++)
    nlive[l] = tl__get_u32(r);
  if (r->bad || (loc->levels >> (TL_ANY + 1)) != 0 || !(loc->levels & (1u << TL_ANY)) ||
      !(loc->levels & (1u << loc->level)))
    return TL_ESNAPSHOT;
  for (uint32_t i = 0; i < loc->ntasks; i++) {
    loc->pushed[i] = tl__get_u64(r);
    if (r->bad || loc->pushed[i] == 0 || loc->pushed[i] > loc->push_seq)
      return TL_ESNAPSHOT; /* every index was pushed at submission */
  }
  return TL_OK;
}

/* The lists, checked against the pending stack: a key's list holds its own pairs of pending
 * indices, latest push first (so none twice), and every pair of a pending index is on one. */
static int read_lists(const tl__taskset *ts, tl__locality *loc, tl__rbuf *r) {
  uint64_t listed = 0, pending = 0;
  for (uint32_t k = 0; k < loc->nkeys; k++) {
    tl__tskey *key = &loc->keys[k];
    uint32_t n = tl__get_count(r, 4), last = TL__NONE;
    for (uint32_t j = 0; j < n; j++) {
      uint32_t p = tl__get_below(r, loc->npairs);
      if (r->bad)
        return TL_ESNAPSHOT;
      tl__pair *pair = &loc->pairs[p];
      if (pair->key != k || ts->zombie || !(ts->idx[pair->index].flags & TL__IDX_PENDING) ||
          (last != TL__NONE && loc->pushed[pair->index] >= loc->pushed[loc->pairs[last].index]))
        return TL_ESNAPSHOT;
      pair->prev = last;
      if (last == TL__NONE)
        key->head = p;
      else
        loc->pairs[last].next = p;
      last = p;
    }
    key->count = n;
    listed += n;
  }
  for (uint32_t i = 0; i < loc->ntasks; i++)
    if (ts->idx[i].flags & TL__IDX_PENDING)
      pending += loc->first_pair[i + 1] - loc->first_pair[i];
  return !r->bad && listed == pending ? TL_OK : TL_ESNAPSHOT;
}

/* The live counts the lists and the places give, as share keeps them. */
static void count_live(const tl__locality *loc, uint32_t live[3]) {
  live[0] = live[1] = live[2] = 0;
  for (uint32_t k = 1; k < loc->nkeys; k++) {
    const tl__place *p = loc->keys[k].place;
    if (loc->keys[k].count > 0 && p->alive) {
      live[p->key[0] == TL__PLACE_EXECUTOR ? TL__LIVE_PROCESS : TL__LIVE_NODE]++;
      live[TL__LIVE_RACK] += p->racked;
    }
  }
}

int tl__locality_restore(struct tl_scheduler *s, tl__taskset *ts, tl__rbuf *r) {
  ts->loc = NULL;
  bool present = tl__get_bool(r);
  if (r->bad)
    return TL_ESNAPSHOT;
  if (!present)
    return TL_OK;
  uint32_t ntasks = tl__get_u32(r);
  uint32_t nplaces = tl__get_count(r, 1 + 4 + 1);
  uint32_t npairs = tl__get_count(r, 4);
  if (r->bad || ntasks != ts->ntasks || nplaces == 0 || nplaces >= TL__NONE - 1 ||
      npairs < ntasks || npairs < nplaces || npairs >= TL__NONE ||
      r->len - r->at < least_bytes(ntasks, nplaces, npairs))
    return TL_ESNAPSHOT;

  tl__locality *loc = block_new(s, ntasks, nplaces + 1, npairs);
  if (loc == NULL)
    return TL_ENOMEM;
  for (uint32_t k = 0; k < loc->nkeys; k++)
    loc->keys[k].taskset = ts;
  uint32_t nlive[3], live[3];
  int err = read_places(s, loc, r);
  if (err == TL_OK)
    err = read_pairs(loc, r);
  if (err == TL_OK)
    err = read_state(loc, nlive, r);
  if (err == TL_OK)
    err = read_lists(ts, loc, r);
  if (err == TL_OK) {
    count_live(loc, live);
    if (memcmp(live, nlive, sizeof live) != 0)
      err = TL_ESNAPSHOT; /* not what these executors give */
  }
  if (err != TL_OK) {
    free_block(s, loc);
    return err;
  }
  memcpy(loc->nlive, live, sizeof live);
  ts->loc = loc;
  if (!ts->zombie)
    tl__list_insert_tail(&s->locality_tasksets, &loc->on_scheduler);
  return TL_OK;
}

void tl__locality_save_global(struct tl_scheduler *s, tl__wbuf *w) {
  tl__put_u64(w, s->locality_ticked);
}

int tl__locality_restore_global(struct tl_scheduler *s, tl__rbuf *r) {
  uint64_t ticked = tl__get_time(r);
  if (r->bad)
    return TL_ESNAPSHOT;
  s->locality_ticked = ticked;
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * tl_check's part
 * ------------------------------------------------------------------------------------------- */

/* Places agree with the executors and hosts they name, and those point at their places; each
 * key's list holds exactly the pairs of its pending indices; the live counts and levels follow
 * from them. */
int tl__locality_check(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  size_t places = 0;
  for (tl__place *p = s->places_by_key; p != NULL; p = p->hh_by_key.next) {
    const char *name = tl__place_name(p);
    tl__check_account(c, place_size(p->key_len));
    places++;
    size_t n = 0;
    for (tl__link *l = p->keys.next; l != &p->keys; l = l->next) {
      TL__CHECK(c, ++n <= p->nkeys, "place %s: key list does not end", name);
      TL__CHECK(c, tl__container_of(l, tl__tskey, on_place)->place == p,
                "place %s lists another place's key", name);
    }
    TL__CHECK(c, n == p->nkeys && n > 0, "place %s: %zu keys, count says %u", name, n, p->nkeys);
    bool alive, racked = false;
    if (p->key[0] == TL__PLACE_EXECUTOR) {
      tl__executor *ex = tl__executor_find(s, name);
      alive = ex != NULL && ex->state == TL_EXECUTOR_ALIVE;
      TL__CHECK(c, ex == NULL || ex->place == p, "executor %s does not point at its place", name);
    } else {
      tl__host *h = host_find(s, name);
      alive = h != NULL && h->nalive > 0;
      racked = alive && h->rack != NULL;
      TL__CHECK(c, h == NULL || h->place == p, "host %s does not point at its place", name);
    }
    TL__CHECK(c, p->alive == alive && p->racked == racked,
              "place %s: alive %d racked %d, its executors say %d %d", name, p->alive, p->racked,
              alive, racked);
  }
  TL__CHECK(c, places == s->nplaces, "%zu places, count says %zu", places, s->nplaces);
  tl__check_account_table(c, s->places_by_key != NULL ? s->places_by_key->hh_by_key.tbl : NULL);
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next)
    TL__CHECK(c,
              ex->place == NULL ||
                  ex->place == tl__place_find(s, TL__PLACE_EXECUTOR, tl__executor_id(ex),
                                              strlen(tl__executor_id(ex))),
              "executor %s points at a place not its own", tl__executor_id(ex));
  for (tl__host *h = s->hosts_by_name; h != NULL; h = h->hh_by_name.next)
    TL__CHECK(c, h->place == tl__place_find(s, TL__PLACE_HOST, h->name, h->name_len),
              "host %s does not point at its place", h->name);

  size_t listed = 0;
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    tl__locality *loc = ts->loc;
    if (loc == NULL)
      continue;
    unsigned long long id = (unsigned long long)ts->id;
    tl__check_account(c, locality_bytes(loc));
    tl__check_account_table(c, loc->keys_by_place != NULL ? loc->keys_by_place->hh_by_place.tbl
                                                          : NULL);
    TL__CHECK(c, loc->ntasks == ts->ntasks && loc->first_pair[ts->ntasks] == loc->npairs,
              "task set %llu: locality block does not fit its tasks", id);
    TL__CHECK(c, HASH_CNT(hh_by_place, loc->keys_by_place) + 1 == loc->nkeys,
              "task set %llu: %u keys indexed of %u", id, HASH_CNT(hh_by_place, loc->keys_by_place),
              loc->nkeys - 1);
    TL__CHECK(c, tl__list_linked(&loc->on_scheduler) == !ts->zombie,
              "task set %llu: on the locality list %d, zombie %d", id,
              tl__list_linked(&loc->on_scheduler), ts->zombie);
    listed += !ts->zombie;
    uint32_t live[3] = {0, 0, 0};
    size_t linked = 0;
    for (uint32_t k = 0; k < loc->nkeys; k++) {
      const tl__tskey *key = &loc->keys[k];
      TL__CHECK(c, key->taskset == ts && (k == 0) == (key->place == NULL),
                "task set %llu: key %u is not its own", id, k);
      uint32_t n = 0, prev = TL__NONE;
      for (uint32_t p = key->head; p != TL__NONE; p = loc->pairs[p].next) {
        TL__CHECK(c, p < loc->npairs && ++n <= loc->npairs, "task set %llu: key %u list broken", id,
                  k);
        const tl__pair *pair = &loc->pairs[p];
        TL__CHECK(c,
                  pair->key == k && pair->prev == prev &&
                      (ts->idx[pair->index].flags & TL__IDX_PENDING),
                  "task set %llu: key %u lists index %u, which is not pending or not its", id, k,
                  pair->index);
        prev = p;
      }
      TL__CHECK(c, n == key->count, "task set %llu: key %u lists %u pairs, count says %u", id, k, n,
                key->count);
      linked += n;
      if (n > 0 && key->place != NULL && key->place->alive) {
        live[key->place->key[0] == TL__PLACE_EXECUTOR ? TL__LIVE_PROCESS : TL__LIVE_NODE]++;
        live[TL__LIVE_RACK] += key->place->racked;
      }
    }
    size_t want = 0;
    for (uint32_t i = 0; i < ts->ntasks; i++)
      if (ts->idx[i].flags & TL__IDX_PENDING)
        want += loc->first_pair[i + 1] - loc->first_pair[i];
    TL__CHECK(c, linked == want, "task set %llu: %zu pairs listed, its pending indices have %zu",
              id, linked, want);
    TL__CHECK(c, memcmp(live, loc->nlive, sizeof live) == 0,
              "task set %llu: live keys %u/%u/%u, counts say %u/%u/%u", id, live[0], live[1],
              live[2], loc->nlive[0], loc->nlive[1], loc->nlive[2]);
    TL__CHECK(c, (loc->levels & (1u << TL_ANY)) && (loc->levels & (1u << loc->level)),
              "task set %llu: level %u is not among its levels %#x", id, loc->level, loc->levels);
  }
  size_t n = 0;
  for (tl__link *l = s->locality_tasksets.next; l != &s->locality_tasksets; l = l->next)
    TL__CHECK(c, ++n <= listed, "the locality list holds more than %zu task sets", listed);
  TL__CHECK(c, n == listed, "the locality list holds %zu task sets, %zu expected", n, listed);
  return TL_OK;
}

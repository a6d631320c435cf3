/* Pools and their queues: the order in which an offer round visits task sets.
 *
 * Every task set is in a pool. Under TL_FIFO there is one, "default", and its queue is the
 * whole FIFO order (priority, then stage id). Under TL_FAIR the runtime adds pools with
 * tl_pool_add; each orders its own task sets FIFO or FAIR, and an offer round visits the pools
 * in Spark's FAIR order: pools below their min share first (by running / min share), then the
 * others by running / weight, then by name. A pool's running count is the sum of its task
 * sets' attempts in flight, zombies' included (their attempts still hold cores, as in Spark).
 *
 * A pool's queue holds its schedulable task sets (not zombie, something pending) in a skip
 * list threaded through the task set records: insertion and removal cost O(log q) expected for
 * q queued task sets, walking in order O(1) a step, and nothing allocates. A task set leaves the
 * queue when its last pending index launches and comes back, often in the middle of the order,
 * when a failure gives it one again. Its number of levels (geometric, ratio 1/4) comes from a
 * hash of its id, so runs are reproducible.
 *
 * In a FAIR pool a task set's place depends on its running count, which changes with every
 * launch and every end. The queue orders by queue_running, the count it had when it was last
 * placed: an end re-places the task set at once; launches re-place it at the end of the offer
 * round (Spark sorts once per round, so within a round the order does not move).
 *
 * Pools nest (tl_pool_add_child): a pool holds either task sets or child pools, never both, at
 * most TL_POOL_DEPTH_MAX deep; a parent is named at creation and never changes, so the pools
 * form a tree. Only leaf pools count running attempts, so a launch or an end touches one pool
 * as before; an offer round with nested pools sums the leaves into their ancestors once
 * (O(pools), as the flat round's sort already is), sorts each list of children it descends
 * into (FAIR by those sums, or FIFO by creation) and lists the leaf pools depth first, the
 * order Spark's getSortedTaskSetQueue gives. While no pool has a parent, the round takes the
 * flat path it always took.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "checker.h"

#include <stdlib.h>

static size_t pool_size(size_t name_len) { return sizeof(tl__pool) + name_len + 1; }

tl__pool *tl__pool_find(struct tl_scheduler *s, const char *name) {
  tl__pool *p;
  HASH_FIND(hh_by_name, s->pools_by_name, name, strlen(name), p);
  return p;
}

/* Makes a pool in parent (NULL: top level); NULL on TL_ENOMEM (nothing changed). */
static tl__pool *pool_new(struct tl_scheduler *s, tl__pool *parent, const char *name,
                          tl_sched_mode mode, uint32_t weight, uint32_t min_share) {
  size_t len = strlen(name);
  tl__pool *p = tl__calloc(s, 1, pool_size(len));
  if (p == NULL)
    return NULL;
  memcpy(p->name, name, len + 1);
  p->name_len = (uint32_t)len;
  p->mode = (uint8_t)mode;
  p->weight = weight;
  p->min_share = min_share;
  HASH_ADD_KEYPTR(hh_by_name, s->pools_by_name, p->name, len, p);
  if (!TL__HASH_ADDED(p, hh_by_name)) {
    tl__free(s, p, pool_size(len));
    return NULL;
  }
  tl__list_insert_tail(&s->pools, &p->on_scheduler);
  tl__list_init(&p->children);
  p->parent = parent;
  p->depth = parent != NULL ? parent->depth + 1 : 1;
  p->seq = s->pool_seq++;
  if (parent != NULL) {
    tl__list_insert_tail(&parent->children, &p->on_parent);
    parent->nchildren++;
    s->nnested++;
  } else {
    tl__list_insert_tail(&s->top_pools, &p->on_parent);
  }
  s->npools++;
  return p;
}

int tl__pools_init(struct tl_scheduler *s) {
  tl__list_init(&s->pools);
  tl__list_init(&s->top_pools);
  s->default_pool = pool_new(s, NULL, "default", TL_FIFO, 1, 0);
  return s->default_pool != NULL ? TL_OK : TL_ENOMEM;
}

void tl__pools_destroy(struct tl_scheduler *s) {
  tl__pool *p, *tmp;
  HASH_ITER(hh_by_name, s->pools_by_name, p, tmp) {
    HASH_DELETE(hh_by_name, s->pools_by_name, p);
    tl__free(s, p, pool_size(p->name_len));
  }
}

int tl__pool_add(struct tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                 uint32_t min_share) {
  return tl__pool_add_child(s, NULL, name, mode, weight, min_share);
}

int tl__pool_add_child(struct tl_scheduler *s, const char *parent, const char *name,
                       tl_sched_mode mode, uint32_t weight, uint32_t min_share) {
  if (s->cfg.mode != TL_FAIR)
    return TL_ESTATE;
  tl__pool *up = NULL;
  if (parent != NULL) {
    if ((up = tl__pool_find(s, parent)) == NULL)
      return TL_ENOENT;
    /* "default" takes every task set that names no pool: it stays a leaf. */
    if (up == s->default_pool || up->ntasksets > 0 || up->depth >= TL_POOL_DEPTH_MAX)
      return TL_ESTATE;
  }
  if (tl__pool_find(s, name) != NULL)
    return TL_EEXIST;
  return pool_new(s, up, name, mode, weight, min_share) != NULL ? TL_OK : TL_ENOMEM;
}

int tl__pool_set(struct tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                 uint32_t min_share) {
  if (s->cfg.mode != TL_FAIR)
    return TL_ESTATE;
  tl__pool *p = tl__pool_find(s, name);
  if (p == NULL)
    return TL_ENOENT;
  p->weight = weight; /* read by the rounds' FAIR order between pools, nowhere else */
  p->min_share = min_share;
  if (p->mode == (uint8_t)mode)
    return TL_OK;
  /* The queue is ordered by the mode: its task sets are placed again, in the new order (a pool
   * with children queues none: their order is decided by each round). */
  tl__taskset *ts = p->queue[0];
  memset(p->queue, 0, sizeof p->queue);
  p->mode = (uint8_t)mode;
  while (ts != NULL) {
    tl__taskset *next = ts->queue_next[0];
    memset(ts->queue_next, 0, sizeof ts->queue_next);
    ts->queue_levels = 0;
    tl__queue_insert(ts);
    ts = next;
  }
  return TL_OK;
}

int tl__pool_for_submit(struct tl_scheduler *s, const char *name, tl__pool **made) {
  *made = NULL;
  tl__pool *p = tl__pool_find(s, name);
  if (p == NULL && s->cfg.pool_auto_create) {
    /* Spark's FairSchedulableBuilder: a pool the allocation file did not name is made with
     * the defaults, at the top level. */
    if ((p = pool_new(s, NULL, name, TL_FIFO, 1, 0)) == NULL)
      return TL_ENOMEM;
    *made = p;
  }
  if (p == NULL)
    return TL_ENOENT;
  return p->nchildren == 0 ? TL_OK : TL_ESTATE;
}

/* Takes away a pool tl__pool_for_submit made, which nothing has used since: a top-level leaf
 * with no task set, the last one made. */
void tl__pool_unmake(struct tl_scheduler *s, tl__pool *p) {
  HASH_DELETE(hh_by_name, s->pools_by_name, p);
  tl__list_remove(&p->on_scheduler);
  tl__list_remove(&p->on_parent);
  s->npools--;
  s->pool_seq--;
  tl__free(s, p, pool_size(p->name_len));
}

uint32_t tl__pool_running(const tl__pool *p) {
  if (p->nchildren == 0)
    return p->running;
  uint32_t sum = 0;
  for (const tl__link *l = p->children.next; l != &p->children; l = l->next)
    sum += tl__pool_running(tl__container_of(l, tl__pool, on_parent));
  return sum;
}

/* ---------------------------------------------------------------------------------------------
 * Queues
 * ------------------------------------------------------------------------------------------- */

bool tl__queue_before(const tl__pool *p, const tl__taskset *a, const tl__taskset *b) {
  if (p->mode == TL_FAIR) {
    /* Spark's FAIR order between task sets: min share 0 and weight 1 each, so by running
     * attempts, then by name (TaskSet_stage.attempt; here by the numbers themselves). */
    if (a->queue_running != b->queue_running)
      return a->queue_running < b->queue_running;
    if (a->stage_id != b->stage_id)
      return a->stage_id < b->stage_id;
    if (a->stage_attempt != b->stage_attempt)
      return a->stage_attempt < b->stage_attempt;
  } else {
    if (a->priority != b->priority)
      return a->priority < b->priority;
    if (a->stage_id != b->stage_id)
      return a->stage_id < b->stage_id;
  }
  return a->id < b->id;
}

static uint8_t queue_levels_of(tl_taskset_id id) {
  uint64_t h = id + 0x9e3779b97f4a7c15ull; /* splitmix64's finaliser */
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  uint8_t levels = 1;
  while (levels < TL__QUEUE_LEVELS && (h & 3) == 0) {
    levels++;
    h >>= 2;
  }
  return levels;
}

/* Finds, on every level, the link that points at the first task set not before ts. */
static void queue_find(tl__pool *p, const tl__taskset *ts, tl__taskset **link[TL__QUEUE_LEVELS]) {
  tl__taskset **next = p->queue; /* the successor links of the position reached: the heads */
  for (int l = TL__QUEUE_LEVELS - 1; l >= 0; l--) {
    while (next[l] != NULL && tl__queue_before(p, next[l], ts))
      next = next[l]->queue_next;
    link[l] = &next[l];
  }
}

void tl__queue_insert(tl__taskset *ts) {
  tl__pool *p = ts->pool;
  tl__taskset **link[TL__QUEUE_LEVELS];
  ts->queue_running = ts->nrunning;
  queue_find(p, ts, link);
  ts->queue_levels = queue_levels_of(ts->id);
  for (int l = 0; l < ts->queue_levels; l++) {
    ts->queue_next[l] = *link[l];
    *link[l] = ts;
  }
}

void tl__queue_remove(tl__taskset *ts) {
  if (ts->queue_levels == 0)
    return;
  tl__taskset **link[TL__QUEUE_LEVELS];
  queue_find(ts->pool, ts, link);
  for (int l = 0; l < ts->queue_levels; l++) {
    *link[l] = ts->queue_next[l]; /* *link[l] == ts: the order is total */
    ts->queue_next[l] = NULL;
  }
  ts->queue_levels = 0;
}

void tl__queue_move(tl__taskset *ts) {
  tl__queue_remove(ts);
  tl__queue_insert(ts);
}

/* ---------------------------------------------------------------------------------------------
 * The order of pools in an offer round
 * ------------------------------------------------------------------------------------------- */

/* Spark's FairSchedulingAlgorithm: negative when a goes first. */
static int fair_compare(const tl__pool *a, const tl__pool *b) {
  bool needy_a = a->running < a->min_share, needy_b = b->running < b->min_share;
  if (needy_a != needy_b)
    return needy_a ? -1 : 1;
  uint64_t lhs, rhs;
  if (needy_a) { /* running / max(min share, 1), compared without division */
    lhs = (uint64_t)a->running * (b->min_share > 1 ? b->min_share : 1);
    rhs = (uint64_t)b->running * (a->min_share > 1 ? a->min_share : 1);
  } else { /* running / weight */
    lhs = (uint64_t)a->running * b->weight;
    rhs = (uint64_t)b->running * a->weight;
  }
  if (lhs != rhs)
    return lhs < rhs ? -1 : 1;
  return strcmp(a->name, b->name);
}

static int fair_compare_qsort(const void *x, const void *y) {
  return fair_compare(*(tl__pool *const *)x, *(tl__pool *const *)y);
}

/* Between children: FAIR by their subtrees' running attempts, or FIFO by creation. */
static bool child_before(tl_sched_mode mode, const tl__pool *a, const tl__pool *b) {
  if (mode != TL_FAIR)
    return a->seq < b->seq;
  bool needy_a = a->sub_running < a->min_share, needy_b = b->sub_running < b->min_share;
  if (needy_a != needy_b)
    return needy_a;
  uint64_t lhs, rhs;
  if (needy_a) {
    lhs = (uint64_t)a->sub_running * (b->min_share > 1 ? b->min_share : 1);
    rhs = (uint64_t)b->sub_running * (a->min_share > 1 ? a->min_share : 1);
  } else {
    lhs = (uint64_t)a->sub_running * b->weight;
    rhs = (uint64_t)b->sub_running * a->weight;
  }
  if (lhs != rhs)
    return lhs < rhs;
  return strcmp(a->name, b->name) < 0;
}

/* Sorts a list of child pools in place (a merge sort: stable, allocates nothing, O(k log k)). */
static void children_sort(tl__link *head, tl_sched_mode mode) {
  if (head->next == head || head->next->next == head)
    return;
  /* Unlinked into a NULL-terminated chain through next; prev is rebuilt at the end. */
  tl__link *list = head->next;
  head->prev->next = NULL;
  for (size_t width = 1;; width *= 2) {
    tl__link *out = NULL, **tail = &out, *p = list;
    size_t merges = 0;
    while (p != NULL) {
      merges++;
      tl__link *q = p;
      size_t plen = 0, qlen = width;
      while (plen < width && q != NULL) {
        plen++;
        q = q->next;
      }
      while (plen > 0 || (qlen > 0 && q != NULL)) {
        tl__link *e;
        if (plen == 0) {
          e = q, q = q->next, qlen--;
        } else if (qlen == 0 || q == NULL) {
          e = p, p = p->next, plen--;
        } else if (child_before(mode, tl__container_of(q, tl__pool, on_parent),
                                tl__container_of(p, tl__pool, on_parent))) {
          e = q, q = q->next, qlen--;
        } else {
          e = p, p = p->next, plen--;
        }
        *tail = e;
        tail = &e->next;
      }
      p = q;
    }
    *tail = NULL;
    list = out;
    if (merges <= 1)
      break;
  }
  tl__link *prev = head;
  for (tl__link *l = list; l != NULL; prev = l, l = l->next)
    l->prev = prev;
  prev->next = head;
  head->prev = prev;
  head->next = list;
}

/* Sums every pool's subtree into sub_running and sub_queued (post order). */
static void subtree_sum(tl__pool *p) {
  if (p->nchildren == 0) {
    p->sub_running = p->running;
    p->sub_queued = p->queue[0] != NULL;
    return;
  }
  uint32_t running = 0;
  bool queued = false;
  for (tl__link *l = p->children.next; l != &p->children; l = l->next) {
    tl__pool *c = tl__container_of(l, tl__pool, on_parent);
    subtree_sum(c);
    running += c->sub_running;
    queued |= c->sub_queued;
  }
  p->sub_running = running;
  p->sub_queued = queued;
}

/* Lists the leaf pools below head that queue something, depth first, each list of children
 * sorted by its parent's mode (the top level's: FAIR). */
static size_t leaves_in_order(tl__link *head, tl_sched_mode mode, tl__pool **order, size_t n) {
  children_sort(head, mode);
  for (tl__link *l = head->next; l != head; l = l->next) {
    tl__pool *c = tl__container_of(l, tl__pool, on_parent);
    if (!c->sub_queued)
      continue;
    if (c->nchildren == 0)
      order[n++] = c;
    else
      n = leaves_in_order(&c->children, (tl_sched_mode)c->mode, order, n);
  }
  return n;
}

size_t tl__pools_in_order(struct tl_scheduler *s, tl__pool **order) {
  if (s->npools == 1) { /* "default" alone, the usual case under TL_FIFO */
    order[0] = s->default_pool;
    return s->default_pool->queue[0] != NULL ? 1 : 0;
  }
  if (s->nnested > 0) {
    for (tl__link *l = s->top_pools.next; l != &s->top_pools; l = l->next)
      subtree_sum(tl__container_of(l, tl__pool, on_parent));
    return leaves_in_order(&s->top_pools, TL_FAIR, order, 0);
  }
  size_t n = 0;
  for (tl__link *l = s->pools.next; l != &s->pools; l = l->next) {
    tl__pool *p = tl__container_of(l, tl__pool, on_scheduler);
    if (p->queue[0] != NULL)
      order[n++] = p;
  }
  if (n > 1)
    qsort(order, n, sizeof *order, fair_compare_qsort);
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * tl_check's part: the pools' records and their queues
 * ------------------------------------------------------------------------------------------- */

/* Every level of every queue in its pool's order, holding only task sets of that pool and, all
 * levels together, exactly the queued task sets of more than l levels (queued, queued_at: what
 * the task sets say); a FAIR queue's keys are current; every pool's running and task set counts
 * agree with the sums its task sets left in check_running and check_tasksets. */
int tl__pools_check(tl__checker *c, size_t queued, const size_t queued_at[TL__QUEUE_LEVELS]) {
  struct tl_scheduler *s = c->s;
  size_t walked_at[TL__QUEUE_LEVELS] = {0};
  for (tl__pool *p = s->pools_by_name; p != NULL; p = p->hh_by_name.next) {
    for (int level = 0; level < TL__QUEUE_LEVELS; level++) {
      const tl__taskset *prev = NULL;
      for (const tl__taskset *ts = p->queue[level]; ts != NULL; ts = ts->queue_next[level]) {
        TL__CHECK(c, ++walked_at[level] <= queued,
                  "queue level %d holds more than the %zu schedulable task sets", level, queued);
        TL__CHECK(c, ts->pool == p, "pool %s queues task set %llu of pool %s", p->name,
                  (unsigned long long)ts->id, ts->pool->name);
        TL__CHECK(c, ts->queue_levels > level, "queue level %d holds task set %llu of %u levels",
                  level, (unsigned long long)ts->id, ts->queue_levels);
        TL__CHECK(c, p->mode != TL_FAIR || ts->queue_running == ts->nrunning,
                  "FAIR pool %s places task set %llu by %u running attempts, it has %u", p->name,
                  (unsigned long long)ts->id, ts->queue_running, ts->nrunning);
        TL__CHECK(c, prev == NULL || tl__queue_before(p, prev, ts),
                  "pool %s: queue level %d is out of order at task set %llu", p->name, level,
                  (unsigned long long)ts->id);
        prev = ts;
      }
    }
  }
  size_t npools = 0, nnested = 0, listed = 0;
  for (tl__pool *p = s->pools_by_name; p != NULL; p = p->hh_by_name.next) {
    npools++;
    tl__check_account(c, pool_size(p->name_len));
    TL__CHECK(c, p->running == p->check_running && p->ntasksets == p->check_tasksets,
              "pool %s: %u running in %u task sets, its task sets have %u in %u", p->name,
              p->running, p->ntasksets, p->check_running, p->check_tasksets);
    /* The tree: depth one more than the parent's, within the bound (so no cycle); children
     * that name it as parent, counted; a pool with children holds no task set. */
    TL__CHECK(c,
              p->parent != NULL ? p->depth == p->parent->depth + 1 && p->parent->nchildren > 0
                                : p->depth == 1,
              "pool %s: depth %u, its parent %s", p->name, p->depth,
              p->parent != NULL ? p->parent->name : "(none)");
    TL__CHECK(c, p->depth >= 1 && p->depth <= TL_POOL_DEPTH_MAX && p->seq < s->pool_seq,
              "pool %s: depth %u or creation number %u out of range", p->name, p->depth, p->seq);
    nnested += p->parent != NULL;
    uint32_t nchildren = 0;
    for (const tl__link *l = p->children.next; l != &p->children; l = l->next) {
      const tl__pool *child = tl__container_of(l, tl__pool, on_parent);
      TL__CHECK(c, ++nchildren <= s->npools && child->parent == p,
                "pool %s: its list of children does not end, or holds %s of parent %s", p->name,
                child->name, child->parent != NULL ? child->parent->name : "(none)");
    }
    listed += nchildren;
    TL__CHECK(c, nchildren == p->nchildren, "pool %s lists %u children, count says %u", p->name,
              nchildren, p->nchildren);
    TL__CHECK(c, nchildren == 0 || (p->ntasksets == 0 && p->queue[0] == NULL),
              "pool %s has %u children and %u task sets", p->name, nchildren, p->ntasksets);
  }
  size_t top = 0;
  for (const tl__link *l = s->top_pools.next; l != &s->top_pools; l = l->next) {
    const tl__pool *p = tl__container_of(l, tl__pool, on_parent);
    TL__CHECK(c, ++top <= s->npools && p->parent == NULL,
              "the top-level pools do not end, or list %s of parent %s", p->name,
              p->parent != NULL ? p->parent->name : "(none)");
  }
  TL__CHECK(c, nnested == s->nnested && top + listed == npools,
            "%zu pools with a parent (count says %zu); %zu at the top and %zu children of %zu",
            nnested, s->nnested, top, listed, npools);
  TL__CHECK(c,
            npools == s->npools && s->default_pool != NULL &&
                tl__pool_find(s, "default") == s->default_pool,
            "%zu pools, count says %zu, or the default pool is lost", npools, s->npools);
  for (int level = 0; level < TL__QUEUE_LEVELS; level++)
    TL__CHECK(c, walked_at[level] == queued_at[level],
              "queue level %d holds %zu task sets, %zu expected", level, walked_at[level],
              queued_at[level]);
  tl__check_account_table(c, s->pools_by_name != NULL ? s->pools_by_name->hh_by_name.tbl : NULL);
  return TL_OK;
}

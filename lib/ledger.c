/* The tid index, the attempt records, and the one place that links a running attempt into the
 * scheduler's indexes and the one that unlinks it.
 *
 * attempts_by_tid holds every running attempt; each is also on its executor's running list and
 * its task set's running list. tl__attempt_link is the only way into the first two and
 * tl__cleanup_task_state the only way out: the status-update path and the executor-loss path
 * both call it (the lesson of SPARK-18553: a map
 * cleaned only by status updates leaks every task of an executor that dies without one).
 * A cleaned attempt whose executor's loss began (or that was restored on an executor not yet
 * reconciled) waits on its executor's frozen list: tl__attempt_freeze puts it there and
 * tl__attempt_thaw takes it off, each the one place that does.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "checker.h"
#include "resource.h"

#include <stdlib.h>

/* ---------------------------------------------------------------------------------------------
 * attempts_by_tid
 *
 * Tids are consecutive, and Fibonacci hashing spreads consecutive keys evenly over the slots
 * (here, groups of eight consecutive keys: home() below). A lookup reads one slot, rarely a few
 * neighbours, and the record it returns. Entries are kept in Robin Hood order: along a cluster
 * no entry is farther from its home slot than the one before it plus one (an insertion passes
 * an entry only while that entry is at least as far from its home as the new one would be).
 * A removal shifts the entries after it back by one slot (no tombstones) and stops at the first
 * that sits in its home slot: nothing from there on may move, so a removal of an entry at home,
 * the usual case, touches one or two slots however long its cluster is. Without the order a
 * removal walked the rest of its cluster to find what could move (at least the rest of its group
 * of eight, consecutive tids of one round): tl__cleanup_task_state took 156 instructions in
 * tl-bench's lifecycles, 84 with the order, for 10 more per insertion. Probes stay short however
 * long the table has been churned. The table grows only in tl__attempts_reserve (the one call
 * that can fail, made before a round changes anything) and shrinks, best effort (if that
 * allocation fails it simply stays larger), when it has been an eighth full or less for as many
 * removals in a row as it has slots (quiet): a runtime whose rounds launch a thousand tasks
 * and let them all end before the next round keeps the array the rounds need, instead of
 * freeing it at each round's end and growing it again by doubling, and a table that shrinks
 * has paid for the rehash with as many quiet removals. An array grown for a round counts as
 * quiet until the round's launches fill more than an eighth of it. Empty, it holds no array
 * once the scheduler is idle (tl__idle), or once it was quiet that long.
 * ------------------------------------------------------------------------------------------- */

#define TL__TIDS_MIN 32 /* the smallest array */

/* A tid's home slot: eight consecutive tids share a group, spread by Fibonacci hashing, and
 * take consecutive slots in it. The tids of one round's launches on an executor are
 * consecutive, so losing that executor touches a few cache lines and pages of a big table, not
 * one of each per attempt (tl-bench executor_loss with a million attempts elsewhere, cold:
 * 268-284 ns per cleaned task with groups, 278-345 without; warm: 75-87 against 100-107).
 * Groups cost a little probing: 2.1 slots per lookup instead of 1.6 at the fullest, in a
 * simulation with random removals. */
static size_t home(const tl__tidmap *m, tl_tid tid) { return tl__tid_home(m, tid); }

/* tl__attempt_find, the lookup, is inline in internal.h: every status update makes one. */

/* How far slot i is past the home slot of the tid it holds (not 0). */
static size_t displacement(const tl__tidmap *m, size_t i) {
  return (i - home(m, m->slot[i].tid)) & (m->cap - 1);
}

/* Robin Hood insertion: the entry being placed takes the slot of the first entry nearer to its
 * home than the placed one would be there, which is placed next in turn, until a free slot. */
static void put(tl__tidmap *m, tl__attempt *a) {
  size_t mask = m->cap - 1, i = home(m, a->tid), d = 0;
  tl__tid_slot placing = {a->tid, a};
  for (; m->slot[i].tid != 0; i = (i + 1) & mask, d++) {
    size_t e = displacement(m, i);
    if (e < d) {
      tl__tid_slot passed = m->slot[i];
      m->slot[i] = placing;
      placing = passed;
      d = e;
    }
  }
  m->slot[i] = placing;
}

/* Moves the table into a fresh array of cap slots (a power of two with room for every entry),
 * with that quiet count. TL_ENOMEM leaves it as it was. */
static int rehash(struct tl_scheduler *s, size_t cap, size_t quiet) {
  tl__tidmap *m = &s->attempts_by_tid;
  tl__tid_slot *slot = tl__calloc(s, cap, sizeof *slot);
  if (slot == NULL)
    return TL_ENOMEM;
  tl__tidmap grown = {slot, cap, m->n, 64, quiet};
  for (size_t c = cap; c > 1; c >>= 1)
    grown.shift--;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slot[i].tid != 0)
      put(&grown, m->slot[i].a);
  tl__free(s, m->slot, m->cap * sizeof *m->slot);
  *m = grown;
  return TL_OK;
}

int tl__attempts_reserve(struct tl_scheduler *s, size_t more) {
  tl__tidmap *m = &s->attempts_by_tid;
  if (more > SIZE_MAX / 8 - m->n)
    return TL_ENOMEM;
  size_t want = m->n + more, cap = m->cap != 0 ? m->cap : TL__TIDS_MIN;
  if (want <= m->cap / 4 * 3 || more == 0)
    return TL_OK;
  while (want > cap / 4 * 3)
    cap *= 2;
  /* Quiet until launches fill an eighth of it; the smallest array, never. */
  return rehash(s, cap, cap > TL__TIDS_MIN ? cap : 0);
}

static size_t spares_max(const struct tl_scheduler *s);
static void trim_spares(struct tl_scheduler *s, size_t keep);

static void drop_array(struct tl_scheduler *s) {
  tl__tidmap *m = &s->attempts_by_tid;
  tl__free(s, m->slot, m->cap * sizeof *m->slot);
  *m = (tl__tidmap){NULL, 0, 0, 0, 0};
  trim_spares(s, spares_max(s));
}

void tl__attempts_unreserve(struct tl_scheduler *s) {
  tl__tidmap *m = &s->attempts_by_tid;
  if (m->n == 0 && m->cap != 0 && (m->quiet >= m->cap || tl__idle(s)))
    drop_array(s);
}

void tl__attempts_idle(struct tl_scheduler *s) {
  if (!tl__idle(s))
    return;
  if (s->attempts_by_tid.cap != 0)
    drop_array(s);
  tl__attempts_trim(s);
  tl__grants_trim(s);
}

static void index_attempt(struct tl_scheduler *s, tl__attempt *a) {
  tl__tidmap *m = &s->attempts_by_tid;
  if (m->n + 1 > m->cap / 4 * 3) /* room was reserved: running out is a bug in the caller */
    abort();
  put(m, a);
  if (++m->n > m->cap / 8)
    m->quiet = 0;
}

static void unindex(struct tl_scheduler *s, tl__attempt *a) {
  tl__tidmap *m = &s->attempts_by_tid;
  size_t mask = m->cap - 1, i = home(m, a->tid);
  while (m->slot[i].tid != a->tid)
    i = (i + 1) & mask;
  /* Backward shift: the entries after the hole move back one slot each, up to a free slot or
   * one in its home slot (Robin Hood order: nothing after that one may move). */
  for (size_t j = (i + 1) & mask; m->slot[j].tid != 0 && displacement(m, j) != 0;
       j = (j + 1) & mask) {
    m->slot[i] = m->slot[j];
    i = j;
  }
  m->slot[i].tid = 0;
  m->slot[i].a = NULL;
  if (--m->n > m->cap / 8)
    return;
  m->quiet++;
  if (m->n == 0)
    tl__attempts_unreserve(s);
  else if (m->cap > TL__TIDS_MIN && m->quiet >= m->cap) {
    size_t cap = m->cap / 2;
    while (cap > TL__TIDS_MIN && m->n <= cap / 8)
      cap /= 2;
    (void)rehash(s, cap, 0); /* a failure keeps the larger array */
    trim_spares(s, spares_max(s));
  }
}

void tl__attempt_link(struct tl_scheduler *s, tl__attempt *a) {
  tl__executor *ex = a->executor;
  index_attempt(s, a);
  tl__list_insert_tail(&ex->running, &a->on_executor);
  ex->nrunning++;
  if (!a->end_held) /* an end its executor holds runs nothing there */
    ex->free_cores -= a->taskset->cpus;
}

void tl__cleanup_task_state(struct tl_scheduler *s, tl__attempt *a) {
  tl__executor *ex = a->executor;
  unindex(s, a);
  tl__list_remove(&a->on_executor);
  ex->nrunning--;
  if (!a->end_held)
    ex->free_cores += a->taskset->cpus;
}

void tl__attempt_freeze(struct tl_scheduler *s, tl__attempt *a) {
  tl__executor *ex = a->executor;
  tl__list_insert_tail(&ex->frozen, &a->on_executor);
  ex->nfrozen++;
  a->frozen = 1;
  a->taskset->nfrozen++;
  s->nfrozen++;
}

void tl__attempt_thaw(struct tl_scheduler *s, tl__attempt *a) {
  tl__executor *ex = a->executor;
  tl__list_remove(&a->on_executor);
  ex->nfrozen--;
  a->frozen = 0;
  a->taskset->nfrozen--;
  s->nfrozen--;
}

/* Spare records. A runtime's steady state is a task ending and its core offered again: the
 * record one attempt gives back is the next launch's. Freed records are kept (counted in the
 * scheduler's memory like any record), up to TL__SPARE_ATTEMPTS or as many as attempts_by_tid
 * has room for, whichever is more (its hysteresis is theirs: a runtime whose rounds launch a
 * thousand tasks at once reuses a thousand records, round after round), until the scheduler is idle
 * (tl__idle: nothing runs, waits frozen, is pending or speculatable): then they are all given
 * back, so an idle or drained scheduler holds exactly what an empty one does. A round's end
 * with tasks still pending keeps them for the next round. */
#define TL__SPARE_ATTEMPTS 256

int tl__attempts_prepare(struct tl_scheduler *s, size_t n, size_t *fresh) {
  *fresh = 0;
  size_t made = 0;
  for (; s->nspare_attempts < n; made++) {
    tl__attempt *a = tl__malloc(s, sizeof *a);
    if (a == NULL) {
      tl__attempts_unprepare(s, made, 0);
      return TL_ENOMEM;
    }
    a->sibling = s->spare_attempts;
    s->spare_attempts = a;
    s->nspare_attempts++;
  }
  *fresh = made;
  return TL_OK;
}

void tl__attempts_unprepare(struct tl_scheduler *s, size_t fresh, size_t used) {
  /* As if the round had taken the spares it found first: those it allocated and did not need
   * go (records are all alike, so the top ones). */
  size_t found = s->nspare_attempts + used - fresh;
  size_t keep = used > found ? used - found : 0; /* of the fresh ones, used */
  for (size_t k = keep; k < fresh; k++) {
    tl__attempt *a = s->spare_attempts;
    s->spare_attempts = a->sibling;
    s->nspare_attempts--;
    tl__free(s, a, sizeof *a);
  }
}

/* Frees spare records until at most keep are left. */
static void trim_spares(struct tl_scheduler *s, size_t keep) {
  while (s->nspare_attempts > keep) {
    tl__attempt *a = s->spare_attempts;
    s->spare_attempts = a->sibling;
    s->nspare_attempts--;
    tl__free(s, a, sizeof *a);
  }
}

void tl__attempts_trim(struct tl_scheduler *s) { trim_spares(s, 0); }

/* How many spare records may be kept. */
static size_t spares_max(const struct tl_scheduler *s) {
  size_t room = s->attempts_by_tid.cap / 4 * 3;
  return room > TL__SPARE_ATTEMPTS ? room : TL__SPARE_ATTEMPTS;
}

void tl__attempt_free(struct tl_scheduler *s, tl__attempt *a) {
  if (a->grants != NULL) { /* given up with its task set (tl__attempt_ended unbooks them first) */
    tl__grants_unref(s, a->grants);
    a->grants = NULL;
  }
  if (!tl__idle(s) && s->nspare_attempts < spares_max(s)) {
    a->sibling = s->spare_attempts;
    s->spare_attempts = a;
    s->nspare_attempts++;
    return;
  }
  tl__free(s, a, sizeof *a);
  if (tl__idle(s))
    tl__attempts_trim(s);
}

/* ---------------------------------------------------------------------------------------------
 * tl_check's part: the tid index, the spare records and the attempt records' memory.
 * ------------------------------------------------------------------------------------------- */

int tl__ledger_check(tl__checker *c, size_t running, size_t frozen) {
  struct tl_scheduler *s = c->s;
  TL__CHECK(c, s->attempts_by_tid.n == running,
            "invariant 3: attempts_by_tid holds %zu attempts, executors run %zu",
            s->attempts_by_tid.n, running);
  TL__CHECK(c, s->nfrozen == frozen, "invariant 3: %zu frozen attempts, count says %zu", frozen,
            s->nfrozen);
  const tl__tidmap *m = &s->attempts_by_tid;
  size_t used = 0;
  for (size_t i = 0; i < m->cap; i++) {
    const tl__attempt *a = m->slot[i].a;
    if (m->slot[i].tid == 0) {
      TL__CHECK(c, a == NULL, "attempts_by_tid: free slot %zu holds a record", i);
      continue;
    }
    used++;
    TL__CHECK(c, a != NULL && a->tid == m->slot[i].tid && tl__attempt_find(s, a->tid) == a,
              "attempts_by_tid: slot %zu (tid %llu) is not found by its tid", i,
              (unsigned long long)m->slot[i].tid);
    size_t before = (i - 1) & (m->cap - 1);
    TL__CHECK(c,
              m->slot[before].tid != 0 ? displacement(m, i) <= displacement(m, before) + 1
                                       : displacement(m, i) == 0,
              "attempts_by_tid: slot %zu (tid %llu) breaks the Robin Hood order", i,
              (unsigned long long)m->slot[i].tid);
    TL__CHECK(c,
              a->executor->state == TL_EXECUTOR_ALIVE ||
                  a->executor->state == TL_EXECUTOR_DECOMMISSIONING,
              "invariant 1: tid %llu runs on %s executor %s", (unsigned long long)a->tid,
              tl_executor_state_name(a->executor->state), tl__executor_id(a->executor));
  }
  unsigned shift = 64;
  for (size_t cap = m->cap; cap > 1; cap >>= 1)
    shift--;
  TL__CHECK(c,
            used == m->n && (m->cap != 0 || m->n == 0) && (m->cap & (m->cap - 1)) == 0 &&
                m->n <= m->cap / 4 * 3 && (m->cap == 0 || m->shift == shift),
            "attempts_by_tid: %zu of %zu slots used, count says %zu, shift %u", used, m->cap, m->n,
            m->shift);
  if (m->cap != 0)
    tl__check_account(c, m->cap * sizeof *m->slot);
  size_t spare = 0;
  for (const tl__attempt *a = s->spare_attempts; a != NULL && spare <= s->nspare_attempts;
       a = a->sibling)
    spare++;
  TL__CHECK(c, spare == s->nspare_attempts, "%zu spare attempt records, count says %zu", spare,
            s->nspare_attempts);
  TL__CHECK(c, (spare == 0 && m->cap == 0) || !tl__idle(s),
            "idle, yet %zu spare attempt records and %zu slots of attempts_by_tid are kept", spare,
            m->cap);
  tl__check_account_n(c, running + frozen + spare, sizeof(tl__attempt));
  return TL_OK;
}

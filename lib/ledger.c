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
#include "placement.h"
#include "resource.h"

#include <stdlib.h>

/* ---------------------------------------------------------------------------------------------
 * attempts_by_tid
 *
 * Tids are handed out in order, one per launch, and most attempts end long before many more
 * launches have been made. So the index is direct-mapped: tid t's entry sits in slot
 * t & (cap - 1), its home, where a lookup reads exactly one slot and the record, and an
 * insertion or a removal writes one slot; the tids of one round take consecutive slots (losing an
 * executor touches a few cache lines of a big table, not one per attempt), and the array is at
 * most three quarters full. Two running tids share a home only when one of them is older than cap
 * launches (a straggler, or an attempt restored or adopted with an old tid): the newer keeps the
 * home and the older lives in far, a small open-addressing table in Robin Hood order (below),
 * which a lookup reads only when the home held another tid and far is not empty. Against the
 * table this replaced (Robin Hood over Fibonacci-hashed groups of eight, for every entry):
 * tl-bench's batched embedder, 105 instructions per task in the index, 2x fewer.
 *
 * Room is made before a call changes anything (tl__attempts_reserve, the one call that can
 * fail): the array grows to hold what will run (three quarters full at most: a larger array
 * costs its pages, and every fresh page is a fault), and far to hold what may be moved there:
 * the entries that sit now in the homes of the tids the call links, which lie in a range it
 * names (a round's are the next ones in order; a reconciliation's or a restore's, between its
 * smallest and largest), or one per attempt linked when the range is as large as the array.
 * What a call reserved in far and did not use is given back when it is done
 * (tl__attempts_unreserve). The array shrinks, best effort (if that allocation fails it simply
 * stays larger), when it has been an eighth full or less for as many removals in a row as it
 * has slots (quiet): a runtime whose rounds launch a thousand tasks and let them all end before
 * the next round keeps the array the rounds need, instead of freeing it at each round's end and
 * growing it again by doubling, and an array that shrinks has paid for the rebuild with as many
 * quiet removals. An array grown for a round counts as quiet until the round's launches fill
 * more than an eighth of it. Empty, it holds no array once the scheduler is idle (tl__idle), or
 * once it was quiet that long.
 * ------------------------------------------------------------------------------------------- */

#define TL__TIDS_MIN 32 /* the smallest array, and the smallest far table */

/* far: Fibonacci hashing spreads its keys (in groups of eight consecutive tids, tl__tid_home)
 * over its slots, in Robin Hood order: along a cluster no entry is farther from its home slot
 * than the one before it plus one. A removal shifts the entries after it back by one slot (no
 * tombstones) and stops at the first that sits in its home slot. At most three quarters full. */
static size_t far_home(const tl__tidmap *m, tl_tid tid) { return tl__tid_home(m, tid); }

/* How far slot i is past the home slot of the tid it holds (not 0). */
static size_t displacement(const tl__tidmap *m, size_t i) {
  return (i - far_home(m, m->slot[i].tid)) & (m->cap - 1);
}

/* Robin Hood insertion: the entry being placed takes the slot of the first entry nearer to its
 * home than the placed one would be there, which is placed next in turn, until a free slot.
 * Room was reserved: running out is a bug in the caller. */
static void far_put(tl__tidmap *m, tl__tid_slot placing) {
  if (m->n + 1 > m->cap / 4 * 3)
    abort();
  size_t mask = m->cap - 1, i = far_home(m, placing.tid), d = 0;
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
  m->n++;
}

tl__attempt *tl__attempt_find_far(const tl__tidmap *m, tl_tid tid) {
  for (size_t i = far_home(m, tid);; i = (i + 1) & (m->cap - 1)) {
    const tl__tid_slot *slot = &m->slot[i];
    if (slot->tid == tid)
      return slot->a;
    if (slot->tid == 0)
      return NULL;
  }
}

/* Takes tid out of far (it is there). */
static void far_remove(tl__tidmap *m, tl_tid tid) {
  size_t mask = m->cap - 1, i = far_home(m, tid);
  while (m->slot[i].tid != tid)
    i = (i + 1) & mask;
  /* Backward shift: the entries after the hole move back one slot each, up to a free slot or
   * one in its home slot (Robin Hood order: nothing after that one may move). */
  for (size_t j = (i + 1) & mask; m->slot[j].tid != 0 && displacement(m, j) != 0;
       j = (j + 1) & mask) {
    m->slot[i] = m->slot[j];
    i = j;
  }
  m->slot[i] = (tl__tid_slot){0, NULL};
  m->n--;
}

/* An empty far table of the smallest power of two with room for n entries (at least
 * TL__TIDS_MIN slots); TL_ENOMEM leaves *m untouched. */
static int far_new(struct tl_scheduler *s, tl__tidmap *m, size_t n) {
  size_t cap = TL__TIDS_MIN;
  while (n > cap / 4 * 3)
    cap *= 2;
  tl__tid_slot *slot = tl__calloc(s, cap, sizeof *slot);
  if (slot == NULL)
    return TL_ENOMEM;
  *m = (tl__tidmap){slot, cap, 0, 64};
  for (size_t c = cap; c > 1; c >>= 1)
    m->shift--;
  return TL_OK;
}

static void far_free(struct tl_scheduler *s, tl__tidmap *m) {
  tl__free(s, m->slot, m->cap * sizeof *m->slot);
  *m = (tl__tidmap){NULL, 0, 0, 0};
}

/* Places an entry in an index whose far has room: in its home if that is free or holds an older
 * tid (which moves to far), else in far. */
static void place(tl__tidindex *m, tl__tid_slot e) {
  tl__tid_slot *home = &m->slot[e.tid & (m->cap - 1)];
  if (home->tid == 0) {
    *home = e;
  } else if (home->tid > e.tid) { /* the newer keeps its home */
    far_put(&m->far, e);
  } else {
    far_put(&m->far, *home);
    *home = e;
  }
}

/* What far may have to take when `more` entries are placed whose tids lie among the `span` tids
 * from lo (span 0: anywhere): with span under the array's size their homes are distinct, and
 * each can move at most the entry now in its home; else, each one. */
static size_t far_needed(const tl__tidindex *m, size_t more, tl_tid lo, uint64_t span) {
  if (span == 0 || span >= m->cap)
    return more;
  size_t taken = 0, mask = m->cap - 1;
  for (uint64_t k = 0; k < span && taken < more; k++)
    taken += m->slot[(lo + k) & mask].tid != 0;
  return taken;
}

/* Moves the index into a fresh array of cap slots (a power of two with room for every entry, three
 * quarters full at most) with that quiet count, and a far table with room for what does not fit in
 * its home plus what `more` entries of tids among the `span` from lo may move there (far_needed).
 * TL_ENOMEM leaves it as it was. */
static int rebuild(struct tl_scheduler *s, size_t cap, size_t quiet, size_t more, tl_tid lo,
                   uint64_t span) {
  tl__tidindex *m = &s->attempts_by_tid;
  tl__tidindex to = {tl__calloc(s, cap, sizeof *to.slot), cap, m->n, quiet, {NULL, 0, 0, 0}};
  if (to.slot == NULL)
    return TL_ENOMEM;
  /* First the homes: the newest tid of each home keeps it; the others are counted. */
  size_t mask = cap - 1, losers = 0;
  for (int pass = 0; pass < 2; pass++) {
    const tl__tid_slot *from = pass == 0 ? m->slot : m->far.slot;
    size_t n = pass == 0 ? m->cap : m->far.cap;
    for (size_t i = 0; i < n; i++) {
      if (from[i].tid == 0)
        continue;
      tl__tid_slot *home = &to.slot[from[i].tid & mask];
      if (home->tid == 0) {
        *home = from[i];
      } else {
        losers++;
        if (home->tid < from[i].tid)
          *home = from[i];
      }
    }
  }
  size_t far_room = losers + far_needed(&to, more, lo, span);
  if (far_room > 0 && far_new(s, &to.far, far_room) != TL_OK) {
    tl__free(s, to.slot, cap * sizeof *to.slot);
    return TL_ENOMEM;
  }
  /* Then far: every entry its home does not hold. */
  for (int pass = 0; pass < 2; pass++) {
    const tl__tid_slot *from = pass == 0 ? m->slot : m->far.slot;
    size_t n = pass == 0 ? m->cap : m->far.cap;
    for (size_t i = 0; i < n; i++)
      if (from[i].tid != 0 && to.slot[from[i].tid & mask].tid != from[i].tid)
        far_put(&to.far, from[i]);
  }
  tl__free(s, m->slot, m->cap * sizeof *m->slot);
  if (m->far.cap != 0)
    far_free(s, &m->far);
  *m = to;
  return TL_OK;
}

/* Room for `more` entries whose tids lie among the `span` tids from lo (span 0: anywhere). */
static int reserve(struct tl_scheduler *s, size_t more, tl_tid lo, uint64_t span) {
  tl__tidindex *m = &s->attempts_by_tid;
  if (more == 0)
    return TL_OK;
  if (more > SIZE_MAX / 8 - m->n)
    return TL_ENOMEM;
  size_t want = m->n + more;
  if (want > m->cap / 4 * 3) {
    size_t cap = m->cap != 0 ? m->cap : TL__TIDS_MIN;
    while (want > cap / 4 * 3)
      cap *= 2;
    /* Quiet until launches fill an eighth of it; the smallest array, never. */
    return rebuild(s, cap, cap > TL__TIDS_MIN ? cap : 0, more, lo, span);
  }
  size_t far_more = far_needed(m, more, lo, span);
  if (m->far.n + far_more <= m->far.cap / 4 * 3)
    return TL_OK;
  tl__tidmap far;
  if (far_new(s, &far, m->far.n + far_more) != TL_OK)
    return TL_ENOMEM;
  for (size_t i = 0; i < m->far.cap; i++)
    if (m->far.slot[i].tid != 0)
      far_put(&far, m->far.slot[i]);
  if (m->far.cap != 0)
    far_free(s, &m->far);
  m->far = far;
  return TL_OK;
}

int tl__attempts_reserve(struct tl_scheduler *s, size_t more, tl_tid lo, tl_tid hi) {
  return reserve(s, more, lo, more == 0 || hi < lo ? 0 : hi - lo + 1);
}

static size_t spares_max(const struct tl_scheduler *s);
static void trim_spares(struct tl_scheduler *s, size_t keep);

static void drop_array(struct tl_scheduler *s) {
  tl__tidindex *m = &s->attempts_by_tid;
  tl__free(s, m->slot, m->cap * sizeof *m->slot);
  if (m->far.cap != 0)
    far_free(s, &m->far);
  *m = (tl__tidindex){NULL, 0, 0, 0, {NULL, 0, 0, 0}};
  trim_spares(s, spares_max(s));
}

void tl__attempts_unreserve(struct tl_scheduler *s) {
  tl__tidindex *m = &s->attempts_by_tid;
  if (m->n == 0 && m->cap != 0 && (m->quiet >= m->cap || tl__idle(s)))
    drop_array(s);
  else if (m->far.n == 0 && m->far.cap != 0) /* room reserved for entries that never came */
    far_free(s, &m->far);
}

void tl__attempts_idle(struct tl_scheduler *s) {
  if (!tl__idle(s))
    return;
  if (s->attempts_by_tid.cap != 0)
    drop_array(s);
  tl__attempts_trim(s);
  tl__grants_trim(s);
}

void tl__attempts_destroy(struct tl_scheduler *s) {
  tl__tidindex *m = &s->attempts_by_tid;
  if (m->cap != 0)
    tl__free(s, m->slot, m->cap * sizeof *m->slot);
  if (m->far.cap != 0)
    far_free(s, &m->far);
  *m = (tl__tidindex){NULL, 0, 0, 0, {NULL, 0, 0, 0}};
}

static void index_attempt(struct tl_scheduler *s, tl__attempt *a) {
  tl__tidindex *m = &s->attempts_by_tid;
  if (m->n + 1 > m->cap / 4 * 3) /* room was reserved: running out is a bug in the caller */
    abort();
  place(m, (tl__tid_slot){a->tid, a});
  if (++m->n > m->cap / 8)
    m->quiet = 0;
}

static void unindex(struct tl_scheduler *s, tl__attempt *a) {
  tl__tidindex *m = &s->attempts_by_tid;
  tl__tid_slot *home = &m->slot[a->tid & (m->cap - 1)];
  if (home->tid == a->tid)
    *home = (tl__tid_slot){0, NULL};
  else /* an empty far goes at the end of the next call that reserves (tl__attempts_unreserve) */
    far_remove(&m->far, a->tid);
  if (--m->n > m->cap / 8)
    return;
  m->quiet++;
  if (m->n == 0)
    tl__attempts_unreserve(s);
  else if (m->cap > TL__TIDS_MIN && m->quiet >= m->cap) {
    size_t cap = m->cap / 2;
    while (cap > TL__TIDS_MIN && m->n <= cap / 8)
      cap /= 2;
    (void)rebuild(s, cap, 0, 0, 0, 0); /* a failure keeps the larger array */
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
  if (a->taskset->placement != NULL) /* hard placement's count (placement.c) */
    tl__placement_link(s, a);
}

void tl__cleanup_task_state(struct tl_scheduler *s, tl__attempt *a) {
  tl__executor *ex = a->executor;
  unindex(s, a);
  tl__list_remove(&a->on_executor);
  ex->nrunning--;
  if (!a->end_held)
    ex->free_cores += a->taskset->cpus;
  if (a->taskset->placement != NULL) /* hard placement's count (placement.c) */
    tl__placement_unlink(s, a);
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

void tl__attempts_round_end(struct tl_scheduler *s, size_t fresh, size_t used) {
  /* Tasks still wait (held for locality, excluded, asking for what is busy): the next round
   * needs as many records again, so the ones allocated and not used stay spare as a freed
   * record would (tl__attempt_free's rule), instead of being freed now and allocated again by
   * every round that finds the same tasks waiting. */
  if (tl__idle(s))
    tl__attempts_unprepare(s, fresh, used);
  else
    trim_spares(s, spares_max(s));
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

/* The entry in slot i of far (tid != 0) is where far's order keeps it, is found by its tid, and
 * its home in the array holds another tid. */
static int check_far_slot(tl__checker *c, const tl__tidindex *m, size_t i) {
  const tl__tidmap *f = &m->far;
  tl_tid tid = f->slot[i].tid;
  size_t before = (i - 1) & (f->cap - 1);
  TL__CHECK(c,
            f->slot[before].tid != 0 ? displacement(f, i) <= displacement(f, before) + 1
                                     : displacement(f, i) == 0,
            "attempts_by_tid: far slot %zu (tid %llu) breaks the Robin Hood order", i,
            (unsigned long long)tid);
  TL__CHECK(c, tl__attempt_find_far(f, tid) == f->slot[i].a,
            "attempts_by_tid: far slot %zu (tid %llu) is not found by its tid", i,
            (unsigned long long)tid);
  TL__CHECK(c, m->slot[tid & (m->cap - 1)].tid != tid,
            "attempts_by_tid: tid %llu is both in its home and in far", (unsigned long long)tid);
  return TL_OK;
}

int tl__ledger_check(tl__checker *c, size_t running, size_t frozen) {
  struct tl_scheduler *s = c->s;
  TL__CHECK(c, s->attempts_by_tid.n == running,
            "invariant 3: attempts_by_tid holds %zu attempts, executors run %zu",
            s->attempts_by_tid.n, running);
  TL__CHECK(c, s->nfrozen == frozen, "invariant 3: %zu frozen attempts, count says %zu", frozen,
            s->nfrozen);
  const tl__tidindex *m = &s->attempts_by_tid;
  const tl__tidmap *f = &m->far;
  size_t used = 0, far_used = 0;
  for (size_t k = 0; k < m->cap + f->cap; k++) {
    bool in_far = k >= m->cap;
    size_t i = in_far ? k - m->cap : k;
    const tl__tid_slot *slot = in_far ? &f->slot[i] : &m->slot[i];
    const tl__attempt *a = slot->a;
    if (slot->tid == 0) {
      TL__CHECK(c, a == NULL, "attempts_by_tid: free slot %zu holds a record", i);
      continue;
    }
    if (in_far) {
      far_used++;
      int err = check_far_slot(c, m, i);
      if (err != TL_OK)
        return err;
    } else {
      used++;
      TL__CHECK(c, (slot->tid & (m->cap - 1)) == i,
                "attempts_by_tid: slot %zu holds tid %llu, whose home is another", i,
                (unsigned long long)slot->tid);
    }
    TL__CHECK(c, a != NULL && a->tid == slot->tid && tl__attempt_find(s, a->tid) == a,
              "attempts_by_tid: slot %zu (tid %llu) is not found by its tid", i,
              (unsigned long long)slot->tid);
    TL__CHECK(c,
              a->executor->state == TL_EXECUTOR_ALIVE ||
                  a->executor->state == TL_EXECUTOR_DECOMMISSIONING,
              "invariant 1: tid %llu runs on %s executor %s", (unsigned long long)a->tid,
              tl_executor_state_name(a->executor->state), tl__executor_id(a->executor));
  }
  unsigned shift = 64;
  for (size_t cap = f->cap; cap > 1; cap >>= 1)
    shift--;
  TL__CHECK(c,
            used + far_used == m->n && far_used == f->n && (m->cap != 0 || m->n == 0) &&
                (m->cap & (m->cap - 1)) == 0 && m->n <= m->cap / 4 * 3 &&
                (f->cap & (f->cap - 1)) == 0 && f->n <= f->cap / 4 * 3 &&
                (f->cap == 0 || f->shift == shift) && (m->cap != 0 || f->cap == 0),
            "attempts_by_tid: %zu of %zu slots and %zu of %zu far slots used, counts say %zu and "
            "%zu, far shift %u",
            used, m->cap, far_used, f->cap, m->n, f->n, f->shift);
  if (m->cap != 0)
    tl__check_account(c, m->cap * sizeof *m->slot);
  if (f->cap != 0)
    tl__check_account(c, f->cap * sizeof *f->slot);
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

/* Inspection: tl_check (every invariant of docs/design.md, recomputed from the records), tl_stats,
 * tl_explain_taskset, tl_metrics_text (tl_stats as Prometheus text), and the per-object snapshots.
 * All of it runs under the scheduler's lock and changes nothing but tl_check's visit stamps on
 * shared strings.
 *
 * tl_check walks every index and every list once, so it costs O(size of the ledger). Beyond the
 * numbered invariants it balances memory: the bytes and blocks the allocator has counted for the
 * scheduler must equal what its records, tables and queued events account for. A record that is
 * allocated but no longer reachable from an index, which is what a leak is, fails that check on
 * the spot rather than at the end of a test.
 */
#include "internal.h"
#include "journal.h"
#include "locality.h"

#include <stdarg.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------------
 * tl_check
 * ------------------------------------------------------------------------------------------- */

typedef struct checker {
  struct tl_scheduler *s;
  char *why;
  size_t len;
  size_t bytes;   /* memory the records account for */
  size_t blocks;  /* and their number */
  size_t outputs; /* map outputs found on executors */
  bool failed;    /* a check made through a callback failed */
} checker;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
violated(checker *c, const char *fmt, ...) {
  if (c->why != NULL && c->len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, c->len, fmt, ap);
    va_end(ap);
  }
  return TL_ECORRUPT;
}

#define CHECK(c, cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      return violated((c), __VA_ARGS__);                                                           \
  } while (0)

static void account(checker *c, size_t bytes) {
  c->bytes += bytes;
  c->blocks++;
}

/* Shared strings are counted once, however many holders they have; the holders are counted so
 * that each string's reference count can be compared with them. */
static void visit_str(checker *c, tl__str *str) {
  if (str == NULL)
    return;
  if (str->mark != c->s->check_epoch) {
    str->mark = c->s->check_epoch;
    str->seen = 0;
    account(c, tl__str_size(str));
  }
  str->seen++;
}

static int check_str(checker *c, const tl__str *str, const char *holder) {
  if (str != NULL)
    CHECK(c, str->seen == str->refs, "string \"%.40s\" held by %s has %u references, %u holders",
          str->text, holder, str->refs, str->seen);
  return TL_OK;
}

/* The same two, for the strings exclusion records hold (tl__exclude_each_str). */
static void visit_str_ud(void *ud, tl__str *str) { visit_str(ud, str); }
static void check_str_ud(void *ud, tl__str *str) {
  checker *c = ud;
  if (!c->failed && check_str(c, str, "an exclusion record") != TL_OK)
    c->failed = true;
}

static void account_table(checker *c, const UT_hash_table *tbl) {
  if (tbl != NULL) {
    c->bytes += TL__HASH_TABLE_BYTES(tbl);
    c->blocks += TL__HASH_TABLE_BLOCKS;
  }
}

/* Invariants 1, 2, 3 (executor side) and 5 (pending-loss executors run nothing). */
static int check_executors(checker *c, size_t *running, size_t *frozen) {
  struct tl_scheduler *s = c->s;
  size_t count[4] = {0, 0, 0, 0};
  size_t limit = s->attempts_by_tid.n + s->nfrozen + 1; /* guards against cycles */
  *running = *frozen = 0;
  bool last_seen = s->last_executor == NULL;
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    last_seen = last_seen || ex == s->last_executor;
    const char *id = tl__executor_id(ex);
    CHECK(c, ex->state <= TL_EXECUTOR_REMOVED, "executor %s: bad state %u", id, ex->state);
    count[ex->state]++;
    account(c, sizeof *ex);
    visit_str(c, ex->names);
    visit_str(c, ex->decommission_msg);
    bool live = ex->state == TL_EXECUTOR_ALIVE || ex->state == TL_EXECUTOR_DECOMMISSIONING;
    CHECK(c, live == (ex->host != NULL), "executor %s (%s): host %s", id,
          tl_executor_state_name(ex->state), ex->host != NULL ? "set" : "missing");
    CHECK(c, live == tl__list_linked(&ex->on_host), "executor %s (%s): on a host list: %d", id,
          tl_executor_state_name(ex->state), tl__list_linked(&ex->on_host));
    CHECK(c, live || tl__list_empty(&ex->running), "invariant 5: %s executor %s runs attempts",
          tl_executor_state_name(ex->state), id);
    CHECK(c, ex->state == TL_EXECUTOR_PENDING_LOSS || tl__list_empty(&ex->frozen),
          "invariant 2: executor %s (%s) has frozen attempts", id,
          tl_executor_state_name(ex->state));

    size_t n = 0, cpus = 0;
    for (tl__link *l = ex->running.next; l != &ex->running; l = l->next) {
      tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
      CHECK(c, ++n <= limit, "executor %s: running list does not end", id);
      CHECK(c, a->executor == ex, "invariant 1: tid %llu on executor %s's list points elsewhere",
            (unsigned long long)a->tid, id);
      CHECK(c, !a->frozen, "invariant 2: tid %llu frozen but on executor %s's running list",
            (unsigned long long)a->tid, id);
      CHECK(c, tl__attempt_find(s, a->tid) == a,
            "invariant 2: tid %llu runs on executor %s but is not in attempts_by_tid",
            (unsigned long long)a->tid, id);
      cpus += a->taskset->cpus;
    }
    CHECK(c, n == ex->nrunning, "executor %s: %zu running, count says %u", id, n, ex->nrunning);
    CHECK(c, ex->free_cores <= ex->cores && ex->cores - ex->free_cores == cpus,
          "invariant 3: executor %s has %u of %u cores free but its attempts take %zu", id,
          ex->free_cores, ex->cores, cpus);
    *running += n;

    n = 0;
    for (tl__link *l = ex->frozen.next; l != &ex->frozen; l = l->next) {
      tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
      CHECK(c, ++n <= limit, "executor %s: frozen list does not end", id);
      CHECK(c, a->executor == ex && a->frozen,
            "invariant 2: tid %llu on executor %s's frozen "
            "list is not frozen there",
            (unsigned long long)a->tid, id);
      CHECK(c, tl__attempt_find(s, a->tid) != a,
            "invariant 2: frozen tid %llu is still in attempts_by_tid", (unsigned long long)a->tid);
    }
    CHECK(c, n == ex->nfrozen, "executor %s: %zu frozen, count says %u", id, n, ex->nfrozen);
    *frozen += n;

    n = 0;
    for (tl__link *l = ex->outputs.next; l != &ex->outputs; l = l->next) {
      const tl__output *out = tl__container_of(l, tl__output, on_executor);
      const tl__taskset *ts = out->taskset;
      CHECK(c, ++n <= ex->noutputs, "executor %s: output list does not end", id);
      CHECK(c, out->executor == ex && tl__taskset_find(s, ts->id) == ts,
            "executor %s holds a map output of another executor or of a released task set", id);
      CHECK(c,
            ts->shuffle_map && !ts->zombie && out->index < ts->ntasks &&
                (ts->idx[out->index].flags & TL__IDX_SUCCESSFUL),
            "executor %s holds a map output of task set %llu index %u that is not a done index "
            "of an active shuffle-map task set",
            id, (unsigned long long)ts->id, out->index);
      CHECK(c, ex->state != TL_EXECUTOR_REMOVED, "tombstone %s holds map outputs", id);
    }
    CHECK(c, n == ex->noutputs, "executor %s: %zu map outputs, count says %u", id, n, ex->noutputs);
    c->bytes += n * sizeof(tl__output);
    c->blocks += n;
    c->outputs += n;
  }
  CHECK(c, last_seen, "the executor found last is not in executors_by_id");
  CHECK(c,
        count[TL_EXECUTOR_ALIVE] == s->nalive &&
            count[TL_EXECUTOR_DECOMMISSIONING] == s->ndecommissioning &&
            count[TL_EXECUTOR_PENDING_LOSS] == s->npending_loss &&
            count[TL_EXECUTOR_REMOVED] == s->ntombstones,
        "executor counts disagree: alive %zu/%zu, decommissioning %zu/%zu, pending %zu/%zu, "
        "tombstones %zu/%zu",
        count[0], s->nalive, count[1], s->ndecommissioning, count[2], s->npending_loss, count[3],
        s->ntombstones);
  CHECK(c, s->ntombstones <= s->cfg.max_tombstones, "%zu tombstones, at most %u allowed",
        s->ntombstones, s->cfg.max_tombstones);
  CHECK(c, s->attempts_by_tid.n == *running,
        "invariant 3: attempts_by_tid holds %zu attempts, executors run %zu", s->attempts_by_tid.n,
        *running);
  CHECK(c, s->nfrozen == *frozen, "invariant 3: %zu frozen attempts, count says %zu", *frozen,
        s->nfrozen);
  const tl__tidmap *m = &s->attempts_by_tid;
  size_t used = 0;
  for (size_t i = 0; i < m->cap; i++) {
    const tl__attempt *a = m->slot[i].a;
    if (m->slot[i].tid == 0) {
      CHECK(c, a == NULL, "attempts_by_tid: free slot %zu holds a record", i);
      continue;
    }
    used++;
    CHECK(c, a != NULL && a->tid == m->slot[i].tid && tl__attempt_find(s, a->tid) == a,
          "attempts_by_tid: slot %zu (tid %llu) is not found by its tid", i,
          (unsigned long long)m->slot[i].tid);
    CHECK(c,
          a->executor->state == TL_EXECUTOR_ALIVE ||
              a->executor->state == TL_EXECUTOR_DECOMMISSIONING,
          "invariant 1: tid %llu runs on %s executor %s", (unsigned long long)a->tid,
          tl_executor_state_name(a->executor->state), tl__executor_id(a->executor));
  }
  unsigned shift = 64;
  for (size_t cap = m->cap; cap > 1; cap >>= 1)
    shift--;
  CHECK(c,
        used == m->n && (m->cap == 0) == (m->n == 0) && (m->cap & (m->cap - 1)) == 0 &&
            m->n <= m->cap / 4 * 3 && (m->cap == 0 || m->shift == shift),
        "attempts_by_tid: %zu of %zu slots used, count says %zu, shift %u", used, m->cap, m->n,
        m->shift);
  if (m->cap != 0)
    account(c, m->cap * sizeof *m->slot);
  size_t spare = 0;
  for (const tl__attempt *a = s->spare_attempts; a != NULL && spare <= s->nspare_attempts;
       a = a->sibling)
    spare++;
  CHECK(c, spare == s->nspare_attempts, "%zu spare attempt records, count says %zu", spare,
        s->nspare_attempts);
  CHECK(c, spare == 0 || tl__attempts_running(s) || s->nfrozen != 0,
        "%zu spare attempt records while no attempt exists", spare);
  c->bytes += (*running + *frozen + spare) * sizeof(tl__attempt);
  c->blocks += *running + *frozen + spare;
  return TL_OK;
}

/* Invariants 3 (task set side), 4 and 6, and each task set's index state. */
static int check_tasksets(checker *c, size_t running, size_t frozen) {
  struct tl_scheduler *s = c->s;
  size_t nactive = 0, nzombie = 0, pending = 0, sum_running = 0, sum_frozen = 0, queued = 0;
  size_t queued_at[TL__QUEUE_LEVELS] = {0};
  size_t sum_outputs = 0, speculatable = 0;
  for (tl__pool *p = s->pools_by_name; p != NULL; p = p->hh_by_name.next)
    p->check_running = p->check_tasksets = 0;
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    unsigned long long id = (unsigned long long)ts->id;
    account(c, tl__taskset_bytes(ts));
    CHECK(c, tl__stage_find(s, ts->stage_id) == ts->stage, "task set %llu: stage entry lost", id);
    CHECK(c, !ts->zombie || ts->nrunning > 0,
          "invariant 4: zombie task set %llu has nothing running and was not released", id);
    CHECK(c, ts->zombie || ts->stage->active == ts,
          "invariant 6: task set %llu (stage %u) is not zombie but not its stage's active attempt",
          id, ts->stage_id);
    if (ts->zombie)
      nzombie++;
    else
      nactive++;

    size_t n = 0, nf = 0, copies = 0;
    for (tl__link *l = ts->running.next; l != &ts->running; l = l->next) {
      tl__attempt *a = tl__container_of(l, tl__attempt, on_taskset);
      CHECK(c, ++n <= running + frozen, "task set %llu: running list does not end", id);
      CHECK(c, a->taskset == ts, "invariant 1: tid %llu on task set %llu's list points elsewhere",
            (unsigned long long)a->tid, id);
      CHECK(c, a->index < ts->ntasks && ts->idx[a->index].copies_running > 0,
            "task set %llu: tid %llu's index %u has no running copy", id,
            (unsigned long long)a->tid, a->index);
      if (a->frozen) {
        nf++;
        CHECK(c, a->executor->state == TL_EXECUTOR_PENDING_LOSS,
              "invariant 2: tid %llu frozen on %s executor", (unsigned long long)a->tid,
              tl_executor_state_name(a->executor->state));
      } else {
        CHECK(c, tl__attempt_find(s, a->tid) == a,
              "invariant 1: tid %llu of task set %llu is neither running nor frozen",
              (unsigned long long)a->tid, id);
      }
    }
    CHECK(c, n == ts->nrunning && nf == ts->nfrozen,
          "task set %llu: %zu running (%zu frozen), counts say %u (%u)", id, n, nf, ts->nrunning,
          ts->nfrozen);
    sum_running += n;
    sum_frozen += nf;
    size_t nout = 0;
    for (tl__link *l = ts->outputs.next; l != &ts->outputs; l = l->next) {
      CHECK(c, ++nout <= c->outputs, "task set %llu: output list does not end", id);
      CHECK(c, tl__container_of(l, tl__output, on_taskset)->taskset == ts,
            "task set %llu lists a map output of another task set", id);
    }
    sum_outputs += nout;

    size_t succeeded = 0, flagged = 0;
    for (uint32_t i = 0; i < ts->ntasks; i++) {
      const tl__index *ix = &ts->idx[i];
      copies += ix->copies_running;
      if (ix->flags & TL__IDX_SUCCESSFUL)
        succeeded++;
      if (ix->flags & TL__IDX_PENDING) {
        flagged++;
        CHECK(c, !ts->zombie, "zombie task set %llu has index %u pending", id, i);
        CHECK(c, !(ix->flags & TL__IDX_SUCCESSFUL) && ix->copies_running == 0,
              "task set %llu: index %u is pending but done or running", id, i);
      } else if (!ts->zombie) {
        CHECK(c, (ix->flags & TL__IDX_SUCCESSFUL) || ix->copies_running > 0,
              "task set %llu: index %u is neither pending, running nor done: it would never run",
              id, i);
      }
      CHECK(c, ix->failures < s->cfg.max_task_failures || ts->zombie,
            "task set %llu: index %u failed %u times and the set is not aborted", id, i,
            ix->failures);
    }
    CHECK(c, copies == ts->nrunning, "task set %llu: indices count %zu copies, %u running", id,
          copies, ts->nrunning);
    CHECK(c, succeeded == ts->nsucceeded, "task set %llu: %zu indices done, count says %u", id,
          succeeded, ts->nsucceeded);
    CHECK(c, succeeded < ts->ntasks || ts->zombie, "task set %llu: all done but not zombie", id);

    size_t walked = 0;
    uint32_t prev = TL__NONE;
    for (uint32_t i = ts->pending_top; i != TL__NONE; i = ts->idx[i].next) {
      CHECK(c, i < ts->ntasks && ++walked <= ts->ntasks, "task set %llu: pending stack broken", id);
      CHECK(c, (ts->idx[i].flags & TL__IDX_PENDING) && ts->idx[i].prev == prev,
            "task set %llu: pending stack link of index %u broken", id, i);
      prev = i;
    }
    CHECK(c, walked == ts->npending && flagged == ts->npending,
          "task set %llu: %zu on the pending stack, %zu flagged, count says %u", id, walked,
          flagged, ts->npending);
    if (!ts->zombie)
      pending += ts->npending;

    /* Speculation: the speculative stack holds exactly the SPECULATABLE indices, each with one
     * copy running; the copies of an index know each other; hosts tried are held. */
    walked = 0;
    prev = TL__NONE;
    size_t spec_flagged = 0;
    for (uint32_t i = ts->speculative_top; i != TL__NONE; i = ts->idx[i].next) {
      CHECK(c, i < ts->ntasks && ++walked <= ts->ntasks, "task set %llu: speculative stack broken",
            id);
      const tl__index *ix = &ts->idx[i];
      CHECK(c, (ix->flags & TL__IDX_SPECULATABLE) && ix->prev == prev,
            "task set %llu: speculative stack link of index %u broken", id, i);
      CHECK(c, !(ix->flags & (TL__IDX_SUCCESSFUL | TL__IDX_PENDING)) && ix->copies_running == 1,
            "task set %llu: speculatable index %u is done, pending, or has %u copies", id, i,
            ix->copies_running);
      prev = i;
    }
    for (uint32_t i = 0; i < ts->ntasks; i++)
      spec_flagged += (ts->idx[i].flags & TL__IDX_SPECULATABLE) != 0;
    CHECK(c, walked == ts->nspeculatable && spec_flagged == ts->nspeculatable,
          "task set %llu: %zu on the speculative stack, %zu flagged, count says %u", id, walked,
          spec_flagged, ts->nspeculatable);
    CHECK(c, ts->heap != NULL || (ts->nspeculatable == 0 && ts->tried == NULL),
          "task set %llu speculates without its arrays", id);
    CHECK(c,
          ts->heap == NULL ||
              (ts->heap_cap >= ts->ntasks && ts->nheap_low + ts->nheap_high <= ts->heap_cap &&
               ts->nheap_high <= ts->nheap_low && ts->nheap_low <= ts->nheap_high + 1),
          "task set %llu: median heap of %u + %u run times in %u slots", id, ts->nheap_low,
          ts->nheap_high, ts->heap_cap);
    if (ts->heap != NULL && ts->heap_cap > ts->ntasks)
      account(c, (size_t)ts->heap_cap * sizeof *ts->heap);
    speculatable += ts->nspeculatable;
    for (tl__link *l = ts->running.next; l != &ts->running; l = l->next) {
      const tl__attempt *a = tl__container_of(l, tl__attempt, on_taskset);
      CHECK(c,
            a->sibling == NULL || (a->sibling->sibling == a && a->sibling->taskset == ts &&
                                   a->sibling->index == a->index),
            "tid %llu: its sibling copy does not point back", (unsigned long long)a->tid);
      CHECK(c, ts->first == NULL || ts->first[a->index] == a || ts->first[a->index] == a->sibling,
            "task set %llu: index %u's running copy is not recorded", id, a->index);
    }
    for (uint32_t i = 0; ts->tried != NULL && i < ts->ntasks; i++) {
      CHECK(c, (ts->first[i] != NULL) == (ts->idx[i].copies_running > 0),
            "task set %llu: index %u has %u copies but a recorded copy %p", id, i,
            ts->idx[i].copies_running, (void *)ts->first[i]);
      size_t ntried = 0;
      for (tl__tried *t = ts->tried[i]; t != NULL; t = t->next) {
        CHECK(c, ++ntried <= ts->idx[i].attempts,
              "task set %llu: index %u tried on more hosts than its %u attempts", id, i,
              ts->idx[i].attempts);
        account(c, sizeof *t);
        visit_str(c, t->names);
      }
    }

    bool schedulable = !ts->zombie && ts->npending + ts->nspeculatable > 0;
    CHECK(c, schedulable == (ts->queue_levels > 0),
          "task set %llu: in the queue %d, schedulable %d", id, ts->queue_levels > 0, schedulable);
    queued += schedulable;
    ts->pool->check_running += ts->nrunning;
    ts->pool->check_tasksets++;
    for (int level = 0; level < ts->queue_levels && level < TL__QUEUE_LEVELS; level++)
      queued_at[level]++;
  }
  CHECK(c, nactive == s->nactive && nzombie == s->nzombie,
        "task set counts disagree: active %zu/%zu, zombie %zu/%zu", nactive, s->nactive, nzombie,
        s->nzombie);
  CHECK(c, sum_running == running + frozen && sum_frozen == frozen,
        "invariant 3: task sets run %zu attempts (%zu frozen), executors %zu (%zu frozen)",
        sum_running, sum_frozen, running + frozen, frozen);
  CHECK(c, pending == s->npending_tasks, "%zu tasks pending, count says %zu", pending,
        s->npending_tasks);
  CHECK(c, speculatable == s->nspeculatable, "%zu speculatable, count says %zu", speculatable,
        s->nspeculatable);
  CHECK(c, sum_outputs == c->outputs, "task sets list %zu map outputs, executors hold %zu",
        sum_outputs, c->outputs);

  /* The pools' queues: every level in its pool's order, holding only task sets of that pool,
   * and all levels together holding exactly the queued task sets of more than l levels. */
  size_t walked_at[TL__QUEUE_LEVELS] = {0};
  for (tl__pool *p = s->pools_by_name; p != NULL; p = p->hh_by_name.next) {
    for (int level = 0; level < TL__QUEUE_LEVELS; level++) {
      const tl__taskset *prev = NULL;
      for (const tl__taskset *ts = p->queue[level]; ts != NULL; ts = ts->queue_next[level]) {
        CHECK(c, ++walked_at[level] <= queued,
              "queue level %d holds more than the %zu schedulable task sets", level, queued);
        CHECK(c, ts->pool == p, "pool %s queues task set %llu of pool %s", p->name,
              (unsigned long long)ts->id, ts->pool->name);
        CHECK(c, ts->queue_levels > level, "queue level %d holds task set %llu of %u levels", level,
              (unsigned long long)ts->id, ts->queue_levels);
        CHECK(c, p->mode != TL_FAIR || ts->queue_running == ts->nrunning,
              "FAIR pool %s places task set %llu by %u running attempts, it has %u", p->name,
              (unsigned long long)ts->id, ts->queue_running, ts->nrunning);
        CHECK(c, prev == NULL || tl__queue_before(p, prev, ts),
              "pool %s: queue level %d is out of order at task set %llu", p->name, level,
              (unsigned long long)ts->id);
        prev = ts;
      }
    }
  }
  size_t npools = 0;
  for (tl__pool *p = s->pools_by_name; p != NULL; p = p->hh_by_name.next) {
    npools++;
    account(c, tl__pool_bytes(p));
    CHECK(c, p->running == p->check_running && p->ntasksets == p->check_tasksets,
          "pool %s: %u running in %u task sets, its task sets have %u in %u", p->name, p->running,
          p->ntasksets, p->check_running, p->check_tasksets);
  }
  CHECK(c,
        npools == s->npools && s->default_pool != NULL &&
            tl__pool_find(s, "default") == s->default_pool,
        "%zu pools, count says %zu, or the default pool is lost", npools, s->npools);
  for (int level = 0; level < TL__QUEUE_LEVELS; level++)
    CHECK(c, walked_at[level] == queued_at[level],
          "queue level %d holds %zu task sets, %zu expected", level, walked_at[level],
          queued_at[level]);

  size_t attempts = 0;
  for (tl__stage *st = s->stages_by_id; st != NULL; st = st->hh_by_id.next) {
    account(c, sizeof *st);
    size_t k = 0, live = 0;
    for (tl__link *l = st->attempts.next; l != &st->attempts; l = l->next) {
      const tl__taskset *ts = tl__container_of(l, tl__taskset, on_stage);
      CHECK(c, ++k <= HASH_CNT(hh_by_id, s->tasksets_by_id), "stage %u: attempt list does not end",
            st->stage_id);
      CHECK(c, ts->stage == st && ts->stage_id == st->stage_id,
            "stage %u lists a task set of another stage", st->stage_id);
      CHECK(c, tl__taskset_find(s, ts->id) == ts, "stage %u lists released task set %llu",
            st->stage_id, (unsigned long long)ts->id);
      live += !ts->zombie;
    }
    CHECK(c, k == st->nattempts && k > 0, "stage %u: %zu attempts, count says %u", st->stage_id, k,
          st->nattempts);
    CHECK(c, live <= 1, "invariant 6: stage %u has %zu non-zombie attempts", st->stage_id, live);
    CHECK(c, (live == 1) == (st->active != NULL), "invariant 6: stage %u's active attempt is %s",
          st->stage_id, st->active != NULL ? "set with none live" : "missing");
    attempts += k;
  }
  CHECK(c, attempts == HASH_CNT(hh_by_id, s->tasksets_by_id), "stages list %zu task sets of %u",
        attempts, HASH_CNT(hh_by_id, s->tasksets_by_id));
  return TL_OK;
}

/* Invariant 5: hosts and racks are never empty and agree with their executors. */
static int check_hosts(checker *c) {
  struct tl_scheduler *s = c->s;
  size_t executors = 0, racked = 0;
  for (tl__host *h = s->hosts_by_name; h != NULL; h = h->hh_by_name.next) {
    account(c, sizeof *h + h->name_len + 1);
    size_t n = 0;
    for (tl__link *l = h->executors.next; l != &h->executors; l = l->next) {
      tl__executor *ex = tl__container_of(l, tl__executor, on_host);
      CHECK(c, ++n <= s->nalive + s->ndecommissioning, "host %s: list does not end", h->name);
      CHECK(c, ex->host == h, "host %s lists executor %s of another host", h->name,
            tl__executor_id(ex));
    }
    CHECK(c, n == h->nexecutors && n > 0, "invariant 5: host %s has %zu executors (count %u)",
          h->name, n, h->nexecutors);
    uint32_t alive = 0;
    for (tl__link *l = h->executors.next; l != &h->executors; l = l->next)
      alive += tl__container_of(l, tl__executor, on_host)->state == TL_EXECUTOR_ALIVE;
    CHECK(c, alive == h->nalive, "host %s has %u ALIVE executors, count says %u", h->name, alive,
          h->nalive);
    CHECK(c, h->place == tl__place_find(s, TL__PLACE_HOST, h->name, h->name_len),
          "host %s does not point at its place", h->name);
    executors += n;
    racked += h->rack != NULL;
    CHECK(c, h->rack == NULL || tl__list_linked(&h->on_rack), "host %s: not on its rack's list",
          h->name);
  }
  CHECK(c, executors == s->nalive + s->ndecommissioning,
        "hosts list %zu executors, %zu are alive or decommissioning", executors,
        s->nalive + s->ndecommissioning);
  CHECK(c, HASH_CNT(hh_by_name, s->hosts_by_name) == s->nhosts, "%u hosts, count says %zu",
        HASH_CNT(hh_by_name, s->hosts_by_name), s->nhosts);
  size_t hosts = 0;
  for (tl__rack *r = s->racks_by_name; r != NULL; r = r->hh_by_name.next) {
    account(c, sizeof *r + r->name_len + 1);
    size_t n = 0;
    for (tl__link *l = r->hosts.next; l != &r->hosts; l = l->next) {
      tl__host *h = tl__container_of(l, tl__host, on_rack);
      CHECK(c, ++n <= s->nhosts, "rack %s: list does not end", r->name);
      CHECK(c, h->rack == r, "rack %s lists host %s of another rack", r->name, h->name);
    }
    CHECK(c, n == r->nhosts && n > 0, "invariant 5: rack %s has %zu hosts (count %u)", r->name, n,
          r->nhosts);
    hosts += n;
  }
  CHECK(c, hosts == racked, "racks list %zu hosts, %zu hosts have a rack", hosts, racked);
  CHECK(c, HASH_CNT(hh_by_name, s->racks_by_name) == s->nracks, "%u racks, count says %zu",
        HASH_CNT(hh_by_name, s->racks_by_name), s->nracks);
  return TL_OK;
}

/* Locality: places agree with the executors and hosts they name; each key's list holds exactly
 * the pairs of its pending indices; the live counts and levels follow from them. */
static int check_locality(checker *c) {
  struct tl_scheduler *s = c->s;
  size_t places = 0;
  for (tl__place *p = s->places_by_key; p != NULL; p = p->hh_by_key.next) {
    const char *name = tl__place_name(p);
    account(c, sizeof *p + p->key_len + 1);
    places++;
    size_t n = 0;
    for (tl__link *l = p->keys.next; l != &p->keys; l = l->next) {
      CHECK(c, ++n <= p->nkeys, "place %s: key list does not end", name);
      CHECK(c, tl__container_of(l, tl__tskey, on_place)->place == p,
            "place %s lists another place's key", name);
    }
    CHECK(c, n == p->nkeys && n > 0, "place %s: %zu keys, count says %u", name, n, p->nkeys);
    bool alive, racked = false;
    if (p->key[0] == TL__PLACE_EXECUTOR) {
      tl__executor *ex = tl__executor_find(s, name);
      alive = ex != NULL && ex->state == TL_EXECUTOR_ALIVE;
      CHECK(c, ex == NULL || ex->place == p, "executor %s does not point at its place", name);
    } else {
      tl__host *h;
      HASH_FIND(hh_by_name, s->hosts_by_name, name, strlen(name), h);
      alive = h != NULL && h->nalive > 0;
      racked = alive && h->rack != NULL;
      CHECK(c, h == NULL || h->place == p, "host %s does not point at its place", name);
    }
    CHECK(c, p->alive == alive && p->racked == racked,
          "place %s: alive %d racked %d, its executors say %d %d", name, p->alive, p->racked, alive,
          racked);
  }
  CHECK(c, places == s->nplaces, "%zu places, count says %zu", places, s->nplaces);
  if (s->places_by_key != NULL)
    account_table(c, s->places_by_key->hh_by_key.tbl);
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next)
    CHECK(c,
          ex->place == NULL ||
              ex->place == tl__place_find(s, TL__PLACE_EXECUTOR, tl__executor_id(ex),
                                          strlen(tl__executor_id(ex))),
          "executor %s points at a place not its own", tl__executor_id(ex));

  size_t listed = 0;
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    tl__locality *loc = ts->loc;
    if (loc == NULL)
      continue;
    unsigned long long id = (unsigned long long)ts->id;
    account(c, sizeof *loc + loc->nkeys * sizeof(tl__tskey) +
                   (size_t)loc->ntasks * sizeof(uint64_t) + loc->npairs * sizeof(tl__pair) +
                   ((size_t)loc->ntasks + 1) * sizeof(uint32_t));
    if (loc->keys_by_place != NULL)
      account_table(c, loc->keys_by_place->hh_by_place.tbl);
    CHECK(c, loc->ntasks == ts->ntasks && loc->first_pair[ts->ntasks] == loc->npairs,
          "task set %llu: locality block does not fit its tasks", id);
    CHECK(c, HASH_CNT(hh_by_place, loc->keys_by_place) + 1 == loc->nkeys,
          "task set %llu: %u keys indexed of %u", id, HASH_CNT(hh_by_place, loc->keys_by_place),
          loc->nkeys - 1);
    CHECK(c, tl__list_linked(&loc->on_scheduler) == !ts->zombie,
          "task set %llu: on the locality list %d, zombie %d", id,
          tl__list_linked(&loc->on_scheduler), ts->zombie);
    listed += !ts->zombie;
    uint32_t live[3] = {0, 0, 0};
    size_t linked = 0;
    for (uint32_t k = 0; k < loc->nkeys; k++) {
      const tl__tskey *key = &loc->keys[k];
      CHECK(c, key->taskset == ts && (k == 0) == (key->place == NULL),
            "task set %llu: key %u is not its own", id, k);
      uint32_t n = 0, prev = TL__NONE;
      for (uint32_t p = key->head; p != TL__NONE; p = loc->pairs[p].next) {
        CHECK(c, p < loc->npairs && ++n <= loc->npairs, "task set %llu: key %u list broken", id, k);
        const tl__pair *pair = &loc->pairs[p];
        CHECK(c,
              pair->key == k && pair->prev == prev &&
                  (ts->idx[pair->index].flags & TL__IDX_PENDING),
              "task set %llu: key %u lists index %u, which is not pending or not its", id, k,
              pair->index);
        prev = p;
      }
      CHECK(c, n == key->count, "task set %llu: key %u lists %u pairs, count says %u", id, k, n,
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
    CHECK(c, linked == want, "task set %llu: %zu pairs listed, its pending indices have %zu", id,
          linked, want);
    CHECK(c, memcmp(live, loc->nlive, sizeof live) == 0,
          "task set %llu: live keys %u/%u/%u, counts say %u/%u/%u", id, live[0], live[1], live[2],
          loc->nlive[0], loc->nlive[1], loc->nlive[2]);
    CHECK(c, (loc->levels & (1u << TL_ANY)) && (loc->levels & (1u << loc->level)),
          "task set %llu: level %u is not among its levels %#x", id, loc->level, loc->levels);
  }
  size_t n = 0;
  for (tl__link *l = s->locality_tasksets.next; l != &s->locality_tasksets; l = l->next)
    CHECK(c, ++n <= listed, "the locality list holds more than %zu task sets", listed);
  CHECK(c, n == listed, "the locality list holds %zu task sets, %zu expected", n, listed);
  return TL_OK;
}

/* Each timeline holds exactly the executors of its state, in deadline order. */
static int check_timeline(checker *c, const tl__link *head, uint8_t state, uint8_t state2,
                          size_t expected, const char *name) {
  size_t n = 0;
  uint64_t last = 0;
  for (const tl__link *l = head->next; l != head; l = l->next) {
    const tl__executor *ex = tl__container_of(l, tl__executor, on_timeline);
    CHECK(c, ++n <= expected, "%s holds more than %zu executors", name, expected);
    CHECK(c, ex->state == state || ex->state == state2, "%s holds %s executor %s", name,
          tl_executor_state_name(ex->state), tl__executor_id(ex));
    CHECK(c, ex->when >= last, "%s is out of order at executor %s", name, tl__executor_id(ex));
    last = ex->when;
  }
  CHECK(c, n == expected, "%s holds %zu executors, %zu expected", name, n, expected);
  return TL_OK;
}

static int check_timelines(checker *c) {
  struct tl_scheduler *s = c->s;
  int err = check_timeline(c, &s->heartbeat_order, TL_EXECUTOR_ALIVE, TL_EXECUTOR_DECOMMISSIONING,
                           s->nalive + s->ndecommissioning, "heartbeat order");
  if (err == TL_OK)
    err = check_timeline(c, &s->pending_order, TL_EXECUTOR_PENDING_LOSS, TL_EXECUTOR_PENDING_LOSS,
                         s->cfg.pending_loss_timeout_ns != 0 ? s->npending_loss : 0,
                         "pending-loss order");
  if (err == TL_OK)
    err = check_timeline(c, &s->tombstone_order, TL_EXECUTOR_REMOVED, TL_EXECUTOR_REMOVED,
                         s->ntombstones, "tombstone order");
  return err;
}

static void visit_events(checker *c, const tl__event_array *a) {
  for (size_t i = 0; i < a->n; i++) {
    visit_str(c, a->ev[i].names);
    visit_str(c, a->ev[i].msg);
  }
}

static int check_event_refs(checker *c, const tl__event_array *a) {
  for (size_t i = 0; i < a->n; i++) {
    int err = check_str(c, a->ev[i].names, "an event");
    if (err == TL_OK)
      err = check_str(c, a->ev[i].msg, "an event");
    if (err != TL_OK)
      return err;
  }
  return TL_OK;
}

/* Reference counts of shared strings, and the memory balance (invariant 7 and beyond). */
static int check_memory(checker *c) {
  struct tl_scheduler *s = c->s;
  account(c, sizeof *s);
  account(c, s->events.cap * sizeof(tl__event));
  account(c, s->batch.cap * sizeof(tl__event));
  visit_events(c, &s->events);
  visit_events(c, &s->batch);
  tl__exclude_each_str(s, visit_str_ud, c); /* before any count is compared */
  for (const tl__jline *j = s->journal; j != NULL; j = j->next)
    account(c, tl__jline_size(j));
  for (const tl__jline *j = s->journal_batch; j != NULL; j = j->next)
    account(c, tl__jline_size(j));
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    int err = check_str(c, ex->names, tl__executor_id(ex));
    if (err == TL_OK)
      err = check_str(c, ex->decommission_msg, tl__executor_id(ex));
    if (err != TL_OK)
      return err;
  }
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next)
    for (uint32_t i = 0; ts->tried != NULL && i < ts->ntasks; i++)
      for (const tl__tried *t = ts->tried[i]; t != NULL; t = t->next)
        if (check_str(c, t->names, "a host tried") != TL_OK)
          return TL_ECORRUPT;
  int err = check_event_refs(c, &s->events);
  if (err == TL_OK)
    err = check_event_refs(c, &s->batch);
  if (err == TL_OK) {
    c->failed = false;
    tl__exclude_each_str(s, check_str_ud, c);
    err = c->failed ? TL_ECORRUPT : TL_OK;
  }
  if (err == TL_OK)
    err = tl__exclude_check(s, c->why, c->len, &c->bytes, &c->blocks);
  if (err != TL_OK)
    return err;
  if (s->executors_by_id != NULL)
    account_table(c, s->executors_by_id->hh_by_id.tbl);
  if (s->hosts_by_name != NULL)
    account_table(c, s->hosts_by_name->hh_by_name.tbl);
  if (s->racks_by_name != NULL)
    account_table(c, s->racks_by_name->hh_by_name.tbl);
  if (s->tasksets_by_id != NULL)
    account_table(c, s->tasksets_by_id->hh_by_id.tbl);
  if (s->stages_by_id != NULL)
    account_table(c, s->stages_by_id->hh_by_id.tbl);
  if (s->pools_by_name != NULL)
    account_table(c, s->pools_by_name->hh_by_name.tbl);
  CHECK(c, c->bytes == s->mem_bytes && c->blocks == s->mem_blocks,
        "memory: %zu bytes in %zu blocks are allocated, the ledger accounts for %zu in %zu",
        s->mem_bytes, s->mem_blocks, c->bytes, c->blocks);

  /* Invariant 7: with nothing submitted and no executor alive, every map is empty and what is
   * left is an empty scheduler plus its tombstones (the balance above covers the bytes). */
  if (s->tasksets_by_id == NULL && s->nalive + s->ndecommissioning + s->npending_loss == 0)
    CHECK(c,
          !tl__attempts_running(s) && s->hosts_by_name == NULL && s->racks_by_name == NULL &&
              s->stages_by_id == NULL && s->nfrozen == 0 && s->npending_tasks == 0 &&
              s->places_by_key == NULL && s->default_pool->queue[0] == NULL,
          "invariant 7: quiescent but a map is not empty");
  return TL_OK;
}

int tl_check(tl_scheduler *s, char *why, size_t len) {
  if (s == NULL)
    return TL_EINVAL;
  if (why != NULL && len > 0)
    why[0] = '\0';
  checker c = {s, why, len, 0, 0, 0, false};
  size_t running, frozen;
  tl__lock(s);
  s->check_epoch++;
  int err = check_executors(&c, &running, &frozen);
  if (err == TL_OK)
    err = check_tasksets(&c, running, frozen);
  if (err == TL_OK)
    err = check_hosts(&c);
  if (err == TL_OK)
    err = check_locality(&c);
  if (err == TL_OK)
    err = check_timelines(&c);
  if (err == TL_OK)
    err = check_memory(&c);
  tl__mutex_unlock(&s->lock);
  return err;
}

/* ---------------------------------------------------------------------------------------------
 * Stats and snapshots
 * ------------------------------------------------------------------------------------------- */

void tl_stats_get(tl_scheduler *s, tl_stats *out) {
  if (out == NULL)
    return;
  if (s == NULL) {
    memset(out, 0, sizeof *out);
    return;
  }
  tl__lock(s);
  *out = s->totals;
  out->executors_alive = s->nalive;
  out->executors_decommissioning = s->ndecommissioning;
  out->executors_pending_loss = s->npending_loss;
  out->tombstones = s->ntombstones;
  out->hosts = s->nhosts;
  out->racks = s->nracks;
  out->pools = s->npools;
  out->places = s->nplaces;
  out->tasksets_active = s->nactive;
  out->tasksets_zombie = s->nzombie;
  out->attempts_running = s->attempts_by_tid.n;
  out->attempts_frozen = s->nfrozen;
  out->tasks_pending = s->npending_tasks;
  out->tasks_speculatable = s->nspeculatable;
  size_t delivered = atomic_load(&s->batch_delivered);
  out->events_queued = s->events.n + (s->batch.n > delivered ? s->batch.n - delivered : 0);
  out->mem_live_bytes = s->mem_bytes;
  out->mem_live_blocks = s->mem_blocks;
  tl__exclude_stats(s, out);
  tl__mutex_unlock(&s->lock);
}

int tl_executor_get(tl_scheduler *s, const char *executor_id, tl_executor_status *out) {
  if (s == NULL || tl__name_len(executor_id, TL_ID_MAX) == 0 || out == NULL)
    return TL_EINVAL;
  tl__lock(s);
  tl__executor *ex = tl__executor_find(s, executor_id);
  int err = ex == NULL ? TL_ENOENT : ex->state == TL_EXECUTOR_REMOVED ? TL_EGONE : TL_OK;
  if (err == TL_OK) {
    out->state = (tl_executor_state)ex->state;
    out->cores = ex->cores;
    out->free_cores = ex->free_cores;
    out->running = ex->nrunning;
    out->frozen = ex->nfrozen;
    const char *host = tl__names_host(ex->names);
    memcpy(out->host, host, strlen(host) + 1);
  }
  tl__mutex_unlock(&s->lock);
  return err;
}

int tl_pool_get(tl_scheduler *s, const char *name, tl_pool_status *out) {
  if (s == NULL || tl__name_len(name, TL_HOST_MAX) == 0 || out == NULL)
    return TL_EINVAL;
  tl__lock(s);
  tl__pool *p = tl__pool_find(s, name);
  if (p != NULL) {
    out->mode = (tl_sched_mode)p->mode;
    out->weight = p->weight;
    out->min_share = p->min_share;
    out->running = p->running;
    out->tasksets = p->ntasksets;
  }
  tl__mutex_unlock(&s->lock);
  return p != NULL ? TL_OK : TL_ENOENT;
}

int tl_taskset_get(tl_scheduler *s, tl_taskset_id id, tl_taskset_status *out) {
  if (s == NULL || out == NULL)
    return TL_EINVAL;
  tl__lock(s);
  tl__taskset *ts = tl__taskset_find(s, id);
  if (ts != NULL) {
    out->info.id = ts->id;
    out->info.stage_id = ts->stage_id;
    out->info.stage_attempt = ts->stage_attempt;
    out->info.ntasks = ts->ntasks;
    out->zombie = ts->zombie;
    out->failed = ts->failed;
    out->running = ts->nrunning;
    out->frozen = ts->nfrozen;
    out->pending = ts->npending;
    out->succeeded = ts->nsucceeded;
    out->cpus_per_task = ts->cpus;
    out->locality_levels = ts->loc != NULL ? ts->loc->levels : (1u << TL_NO_PREF) | (1u << TL_ANY);
    out->locality = ts->loc != NULL ? (tl_locality)ts->loc->level : TL_NO_PREF;
  }
  tl__mutex_unlock(&s->lock);
  return ts != NULL ? TL_OK : TL_ENOENT;
}

/* ---------------------------------------------------------------------------------------------
 * tl_explain_taskset: the heap dump's "nearest GC root", for a task set.
 * ------------------------------------------------------------------------------------------- */

typedef struct text {
  char *buf;
  size_t len;
  size_t used; /* bytes written, without the NUL */
  bool cut;
} text;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
append(text *t, const char *fmt, ...) {
  if (t->cut)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= t->len - t->used) {
    t->cut = true;
    if (t->len >= 5)
      memcpy(t->buf + t->len - 5, "...\n", 5);
    else
      t->buf[t->len - 1] = '\0';
    return;
  }
  t->used += (size_t)n;
}

static void explain_line(void *ud, const char *line) { append(ud, "%s", line); }

int tl_explain_taskset(tl_scheduler *s, tl_taskset_id id, char *buf, size_t len) {
  if (s == NULL || buf == NULL || len == 0)
    return TL_EINVAL;
  text t = {buf, len, 0, false};
  buf[0] = '\0';
  tl__lock(s);
  tl__taskset *ts = tl__taskset_find(s, id);
  if (ts == NULL) {
    tl__mutex_unlock(&s->lock);
    return TL_ENOENT;
  }
  uint64_t now = s->last_now;
  append(&t,
         "task set %llu (stage %u attempt %u, %u tasks): %s%s; %u running (%u frozen), "
         "%u pending, %u succeeded\n",
         (unsigned long long)ts->id, ts->stage_id, ts->stage_attempt, ts->ntasks,
         ts->zombie ? "zombie" : "active", ts->failed ? ", failed" : "", ts->nrunning, ts->nfrozen,
         ts->npending, ts->nsucceeded);
  if (ts->loc != NULL && !ts->zombie) {
    const tl__locality *loc = ts->loc;
    append(&t, "locality: at %s, its wait began at %.3f s; levels", tl_locality_name(loc->level),
           (double)loc->reset_time / 1e9);
    for (unsigned l = 0; l <= TL_ANY; l++)
      if (loc->levels & (1u << l))
        append(&t, " %s", tl_locality_name(l));
    append(&t, "\n");
  }
  if (ts->nrunning == 0)
    append(&t, "held by: nothing runs; it waits for offers for its pending tasks\n");
  else
    append(&t, "held by %s:\n", ts->zombie ? "(released when these end)" : "its attempts");
  for (tl__link *l = ts->running.next; l != &ts->running; l = l->next) {
    const tl__attempt *a = tl__container_of(l, tl__attempt, on_taskset);
    const tl__executor *ex = a->executor;
    append(&t, "  tid %llu (index %u, attempt %u, %s) %s executor %s on %s (%s",
           (unsigned long long)a->tid, a->index, a->attempt,
           a->state == TL__RUNNING ? "RUNNING" : "LAUNCHING", a->frozen ? "frozen on" : "on",
           tl__executor_id(ex), tl__names_host(ex->names), tl_executor_state_name(ex->state));
    if (ex->state == TL_EXECUTOR_PENDING_LOSS) {
      if (tl__list_linked(&ex->on_timeline))
        append(&t, ", loss reason due within %.1f s",
               (double)(ex->when > now ? ex->when - now : 0) / 1e9);
      else
        append(&t, ", waiting for the loss reason with no deadline");
    } else if (ex->decommission_msg != NULL) {
      append(&t, ": %s", ex->decommission_msg->text);
    }
    append(&t, ")\n");
  }
  tl__exclude_explain(s, ts, explain_line, &t);
  tl__mutex_unlock(&s->lock);
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * tl_metrics_text: tl_stats as Prometheus text (exposition format 0.0.4).
 *
 * One table names every field of tl_stats, in the struct's order; the text is written from a
 * tl_stats_get snapshot straight into the caller's buffer, counting what does not fit, so the
 * call needs no memory of its own. A field added to tl_stats must be added here too: the
 * assertion below the table fails the build until the table's last entry is the struct's last
 * field, and the metrics suite compares every sample with its field.
 * ------------------------------------------------------------------------------------------- */

typedef struct metric {
  const char *name; /* after "taskledger_"; a counter's ends in _total */
  const char *help; /* one sentence, no backslash or newline (HELP would need them escaped) */
  size_t offset;    /* of its field in tl_stats */
  bool counter;     /* a uint64_t total (a counter), else a size_t count (a gauge) */
} metric;

#define GAUGE(field, help)                                                                         \
  { #field, help, offsetof(tl_stats, field), false }
#define COUNTER(field, help)                                                                       \
  { #field "_total", help, offsetof(tl_stats, field), true }

static const metric metrics[] = {
    GAUGE(executors_alive, "Executors in state ALIVE."),
    GAUGE(executors_decommissioning, "Executors in state DECOMMISSIONING."),
    GAUGE(executors_pending_loss,
          "Executors in state PENDING_LOSS, waiting for the reason of their loss."),
    GAUGE(tombstones, "Ids of removed executors remembered, so that late messages are refused."),
    GAUGE(hosts, "Hosts with at least one live executor."),
    GAUGE(racks, "Racks with at least one host that has a live executor."),
    GAUGE(pools, "Scheduling pools, the default pool included."),
    GAUGE(places, "Executor ids and host names that some task set not yet released prefers."),
    GAUGE(tasksets_active, "Task sets that are not zombie."),
    GAUGE(tasksets_zombie, "Zombie task sets, still draining their running attempts."),
    GAUGE(attempts_running, "Task attempts in flight: entries of the tid index."),
    GAUGE(attempts_frozen, "Task attempts frozen on pending-loss executors."),
    GAUGE(tasks_pending, "Task indices of active task sets waiting to launch."),
    GAUGE(tasks_speculatable, "Slow tasks whose speculative copy waits to launch."),
    GAUGE(events_queued, "Events made and not yet delivered to the callbacks."),
    GAUGE(mem_live_bytes, "Bytes of the scheduler's own live allocations."),
    GAUGE(mem_live_blocks, "Number of the scheduler's own live allocations."),
    COUNTER(launched, "Task attempts launched."),
    COUNTER(succeeded, "FINISHED status updates taken."),
    COUNTER(failed, "Task attempts ended by a failure or by their executor's loss."),
    COUNTER(killed, "Task attempts ended killed."),
    COUNTER(stale_updates, "Status updates answered TL_ESTALE."),
    COUNTER(rejected_updates, "Status updates answered TL_EOWNER."),
    COUNTER(rejected_offers, "Offers from executors that cannot take tasks."),
    COUNTER(executors_lost, "Executors whose loss began."),
    COUNTER(tasksets_released, "Task sets released."),
    GAUGE(executors_excluded, "Executors excluded for the application (exclude on failure)."),
    GAUGE(nodes_excluded, "Nodes excluded for the application (exclude on failure)."),
    GAUGE(tasksets_with_failures, "Task sets holding counted failures (exclude on failure)."),
    GAUGE(tasksets_unschedulable, "Task sets waiting out the unschedulable timeout."),
    COUNTER(excluded_offers, "Offers from executors excluded for the application."),
    COUNTER(tasksets_unschedulable_aborted,
            "Task sets aborted because no executor may run one of their tasks."),
    COUNTER(pending_loss_timeouts,
            "Pending executor losses ended by the pending-loss timeout, no reason having come."),
};

#undef GAUGE
#undef COUNTER

_Static_assert(offsetof(tl_stats, pending_loss_timeouts) + sizeof(uint64_t) == sizeof(tl_stats),
               "a field was added to tl_stats: add it to the metrics table of tl_metrics_text");

/* The caller's buffer, written up to len - 1 bytes; used counts the whole text regardless. */
typedef struct sink {
  char *buf;
  size_t len;
  size_t used; /* bytes of the whole text so far, without the NUL */
} sink;

static void put(sink *k, const char *p, size_t n) {
  if (k->used + 1 < k->len) {
    size_t room = k->len - 1 - k->used;
    memcpy(k->buf + k->used, p, n < room ? n : room);
  }
  k->used += n;
}

static void put_str(sink *k, const char *p) { put(k, p, strlen(p)); }

int tl_metrics_text(tl_scheduler *s, char *buf, size_t len, size_t *needed) {
  if (needed != NULL)
    *needed = 0;
  if (s == NULL || (buf == NULL && len > 0))
    return TL_EINVAL;
  tl_stats st;
  tl_stats_get(s, &st); /* one snapshot, under the lock */
  sink k = {buf, len, 0};
  for (size_t i = 0; i < TL__ARRAY_SIZE(metrics); i++) {
    const metric *m = &metrics[i];
    const char *field = (const char *)&st + m->offset;
    uint64_t value;
    if (m->counter)
      memcpy(&value, field, sizeof value);
    else {
      size_t count;
      memcpy(&count, field, sizeof count);
      value = count;
    }
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)value);
    put_str(&k, "# HELP taskledger_");
    put_str(&k, m->name);
    put_str(&k, " ");
    put_str(&k, m->help);
    put_str(&k, "\n# TYPE taskledger_");
    put_str(&k, m->name);
    put_str(&k, m->counter ? " counter\ntaskledger_" : " gauge\ntaskledger_");
    put_str(&k, m->name);
    put_str(&k, " ");
    put(&k, digits, (size_t)n);
    put_str(&k, "\n");
  }
  if (len > 0) {
    if (k.used < len)
      buf[k.used] = '\0';
    else if (len >= 5) /* cut: as tl_explain_taskset marks it */
      memcpy(buf + len - 5, "...\n", 5);
    else
      buf[len - 1] = '\0';
  }
  if (needed != NULL)
    *needed = k.used;
  return TL_OK;
}

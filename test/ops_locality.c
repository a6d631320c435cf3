/* The operation layer's model of locality and delay scheduling (docs/locality.md), and
 * tl_tick's answer from the model's timelines.
 */
#include "ops_internal.h"

#include <inttypes.h>

/* ---------------------------------------------------------------------------------------------
 * Locality: the model of docs/locality.md, written from it and from Spark's TaskSetManager
 * (computeValidLocalityLevels, getAllowedLocalityLevel, dequeueTask, recomputeLocality,
 * resetDelayScheduleTimer). Everything is recomputed by scanning: a task's preferences, the
 * pending stack and the executors.
 * ------------------------------------------------------------------------------------------- */

/* A host is live for locality while it has an ALIVE executor (decommissioning ones take no
 * tasks); its rack is known while it has a live one (host_rack). */
bool tlo_host_alive(const tlo_run *r, unsigned h) {
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      if (r->ex[s][g].state == MX_ALIVE && r->ex[s][g].host == h)
        return true;
  return false;
}

static bool prefers_exec(const mts *t, uint32_t i, const mexec *x) {
  for (unsigned p = 0; p < t->nprefs[i]; p++)
    if (t->prefs[i][p].ex == x)
      return true;
  return false;
}

static bool prefers_host(const mts *t, uint32_t i, unsigned h) {
  for (unsigned p = 0; p < t->nprefs[i]; p++)
    if (t->prefs[i][p].host == h)
      return true;
  return false;
}

/* Whether index i prefers a live host, other than `except` (NHOSTS: none), in rack `rack`
 * (-1: any rack). */
static bool prefers_rack(const tlo_run *r, const mts *t, uint32_t i, int rack, unsigned except) {
  for (unsigned p = 0; p < t->nprefs[i]; p++) {
    unsigned h = t->prefs[i][p].host;
    if (h != except && r->host_rack[h] >= 0 && (rack < 0 || r->host_rack[h] == rack) &&
        tlo_host_alive(r, h))
      return true;
  }
  return false;
}

/* Whether pending index i could launch at level l somewhere live now (Spark's pending lists
 * whose place is alive). */
static bool pending_at(const tlo_run *r, const mts *t, uint32_t i, unsigned l) {
  switch (l) {
  case TL_PROCESS_LOCAL:
    for (unsigned p = 0; p < t->nprefs[i]; p++)
      if (t->prefs[i][p].ex != NULL && t->prefs[i][p].ex->state == MX_ALIVE)
        return true;
    return false;
  case TL_NODE_LOCAL:
    for (unsigned p = 0; p < t->nprefs[i]; p++)
      if (tlo_host_alive(r, t->prefs[i][p].host))
        return true;
    return false;
  case TL_NO_PREF:
    return t->nprefs[i] == 0;
  case TL_RACK_LOCAL:
    return prefers_rack(r, t, i, -1, NHOSTS);
  default:
    return true;
  }
}

/* Something pending to launch at level l (Spark's moreTasksToRunIn). */
static bool has_at(const tlo_run *r, const mts *t, unsigned l) {
  for (uint32_t k = 0; k < t->npend; k++)
    if (pending_at(r, t, t->pend[k], l))
      return true;
  return false;
}

uint8_t tlo_valid_levels_of(const tlo_run *r, const mts *t) {
  uint8_t m = 1u << TL_ANY;
  for (unsigned l = TL_PROCESS_LOCAL; l < TL_ANY; l++)
    if (has_at(r, t, l))
      m |= (uint8_t)(1u << l);
  return m;
}

/* The first level of m at l or after (TL_ANY is always in m). */
unsigned tlo_next_level(uint8_t m, unsigned l) {
  while (l < TL_ANY && !(m & (1u << l)))
    l++;
  return l;
}

static unsigned levels_below(uint8_t m, unsigned l) {
  unsigned n = 0;
  for (unsigned k = 0; k < l; k++)
    n += (m >> k) & 1u;
  return n;
}

/* Spark's recomputeLocality: the new valid levels; the task set stays at its level (or the next
 * valid one), unless a level appeared below it: then it goes to the most local level that
 * appeared (SPARK-31837). The timer is left alone. */
static void recompute_levels(tlo_run *r, mts *t) {
  if (!t->has_loc || t->zombie || t->released)
    return;
  uint8_t before = t->levels, after = tlo_valid_levels_of(r, t);
  unsigned level = tlo_next_level(after, t->level);
  if (levels_below(after, t->level) > levels_below(before, t->level)) {
    uint8_t added = (uint8_t)(after & ~before);
    level = 0;
    while (!(added & (1u << level)))
      level++;
  }
  if (after != before || level != t->level) {
    r->f_recomputes++;
    tlo_trace(r, 2, "  task set %" PRIu64 " levels %#x -> %#x, at %s -> %s", t->id, before, after,
              tl_locality_name((tl_locality)t->level), tl_locality_name((tl_locality)level));
  }
  t->levels = after;
  t->level = (uint8_t)level;
}

/* An executor was registered, decommissioned or lost: every task set that prefers it or its
 * host recomputes its levels, once, from the new state (docs/locality.md; Spark recomputes
 * every task set on every executor added or lost). */
static void recompute_where(tlo_run *r, const mexec *x, bool by_exec, bool by_host) {
  for (uint32_t k = 0; k < r->nts; k++) {
    mts *t = &r->ts[k];
    if (!t->has_loc || t->zombie || t->released)
      continue;
    bool touched = false;
    for (uint32_t i = 0; i < t->ntasks && !touched; i++)
      touched = (by_exec && prefers_exec(t, i, x)) || (by_host && prefers_host(t, i, x->host));
    if (touched)
      recompute_levels(r, t);
  }
}

void tlo_executor_changed(tlo_run *r, const mexec *x) { recompute_where(r, x, true, true); }

/* Spark's getAllowedLocalityLevel at the scheduler's now: a level with nothing to launch is
 * skipped and the wait restarts (SPARK-4939); a level whose wait ran out is left, the next wait
 * starting where it ended. */
unsigned tlo_allowed_level(tlo_run *r, mts *t) {
  while (t->level != TL_ANY) {
    unsigned l = t->level;
    if (!has_at(r, t, l)) {
      t->reset = r->now;
      r->f_skips++;
    } else if (tlo_due_at(tlo_add_sat(t->reset, r->wait_ns[l]), r->now)) {
      t->reset += r->wait_ns[l];
      r->f_waits_out += l != TL_NO_PREF;
    } else {
      return l;
    }
    t->level = (uint8_t)tlo_next_level(t->levels, l + 1);
    tlo_trace(r, 2, "  task set %" PRIu64 " moves to %s (reset %" PRIu64 " ms)", t->id,
              tl_locality_name((tl_locality)t->level), t->reset / 1000000);
  }
  return TL_ANY;
}

/* The level index i has on executor x (for a speculative copy): its best preference there. */
unsigned tlo_locality_on(const tlo_run *r, const mts *t, uint32_t i, const mexec *x) {
  if (!t->has_loc || t->nprefs[i] == 0)
    return TL_NO_PREF;
  if (prefers_exec(t, i, x))
    return TL_PROCESS_LOCAL;
  if (prefers_host(t, i, x->host))
    return TL_NODE_LOCAL;
  if (r->host_rack[x->host] >= 0 && prefers_rack(r, t, i, r->host_rack[x->host], x->host))
    return TL_RACK_LOCAL;
  return TL_ANY;
}

/* Spark's dequeueTask for a regular pending task on x, no farther than allowed: the topmost
 * pending index that prefers x, then x's host, then none, then another live host of x's rack,
 * then any. Returns the index, or -1. */
int tlo_take_pending(tlo_run *r, const mts *t, const mexec *x, unsigned allowed, unsigned *level) {
  if (t->npend == 0)
    return -1;
  int rack = r->host_rack[x->host];
  for (unsigned l = TL_PROCESS_LOCAL; l <= allowed; l++) {
    for (uint32_t k = t->npend; k-- > 0;) {
      uint32_t i = t->pend[k];
      bool fits = l == TL_PROCESS_LOCAL ? prefers_exec(t, i, x)
                  : l == TL_NODE_LOCAL  ? prefers_host(t, i, x->host)
                  : l == TL_NO_PREF     ? t->nprefs[i] == 0
                  : l == TL_RACK_LOCAL  ? rack >= 0 && prefers_rack(r, t, i, rack, x->host)
                                        : true;
      if (fits && tlo_task_blocked(r, t, i, x)) { /* dequeueTaskFromList skips it */
        r->f_x[TLO_XF_SKIPS]++;
        continue;
      }
      if (fits) {
        *level = l;
        return (int)i;
      }
    }
  }
  return -1;
}

/* tl_tick's view of a task set's waits: when the wait at its level (and at the next ones, if
 * that one has already run out) ends after now; *fired when one ended in (since, now]. A level
 * with nothing to launch ends the look: the next offer skips it, and the wait after it starts
 * only then. */
uint64_t tlo_wait_end(const tlo_run *r, const mts *t, uint64_t since, bool *fired) {
  if (!t->has_loc || t->zombie || t->released || t->npend + t->nspecs == 0)
    return TL_TICK_NEVER;
  uint64_t reset = t->reset;
  for (unsigned l = t->level; l != TL_ANY; l = tlo_next_level(t->levels, l + 1)) {
    if (!has_at(r, t, l))
      break;
    uint64_t end = tlo_add_sat(reset, r->wait_ns[l]);
    if (end == UINT64_MAX)
      return TL_TICK_NEVER; /* past the end of time: it never runs out */
    if (end > r->now)
      return end;
    if (end > since)
      *fired = true;
    reset = end;
  }
  return TL_TICK_NEVER;
}

uint64_t tlo_loc_next_of(const tlo_run *r) {
  uint64_t next = TL_TICK_NEVER;
  bool fired = false;
  for (uint32_t k = 0; k < r->nts; k++) {
    uint64_t end = tlo_wait_end(r, &r->ts[k], UINT64_MAX, &fired);
    if (end != TL_TICK_NEVER && end - r->now < next)
      next = end - r->now;
  }
  return next;
}

/* Places: the executor ids and host names the task sets not yet released prefer. */
size_t tlo_count_places(const tlo_run *r) {
  bool host[NHOSTS] = {false};
  const mexec *seen[NSLOTS * MAXGEN + NSLOTS];
  size_t nseen = 0, n = 0;
  for (uint32_t k = 0; k < r->nts; k++) {
    const mts *t = &r->ts[k];
    if (t->released || !t->has_loc)
      continue;
    for (uint32_t i = 0; i < t->ntasks; i++)
      for (unsigned p = 0; p < t->nprefs[i]; p++) {
        host[t->prefs[i][p].host] = true;
        const mexec *x = t->prefs[i][p].ex;
        if (x == NULL)
          continue;
        size_t j = 0;
        while (j < nseen && seen[j] != x)
          j++;
        if (j == nseen)
          seen[nseen++] = x;
      }
  }
  for (unsigned h = 0; h < NHOSTS; h++)
    n += host[h];
  return n + nseen;
}

/* The speculation check's share of tl_tick's answer: the time until the next check while an
 * attempt is in the tid index (nothing can be slow otherwise). A check that saturated at the
 * end of time never comes, like every deadline there. */
static uint64_t spec_next_of(const tlo_run *r) {
  if (!r->cfg.speculation)
    return TL_TICK_NEVER;
  bool any = false;
  for (size_t i = 0; i < r->ninflight && !any; i++)
    any = !r->att[r->inflight[i] - 1].frozen;
  if (!any || r->spec_never)
    return TL_TICK_NEVER;
  return r->next_spec > r->now ? r->next_spec - r->now : 0;
}

/* tl_tick's answer from the model's timelines. */
uint64_t tlo_next_deadline(tlo_run *r) {
  uint64_t due = UINT64_MAX;
  const mexec *hb = NULL, *pend = NULL, *rec = NULL, *tomb = NULL;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      const mexec *x = &r->ex[s][g];
      if (tlo_live_state(x->state) && (hb == NULL || x->hb_seq < hb->hb_seq))
        hb = x;
      if (x->state == MX_PENDING && x->pend_timed && (pend == NULL || x->pend_seq < pend->pend_seq))
        pend = x;
      if (x->state == MX_RECOVERING && x->rec_timed && (rec == NULL || x->rec_seq < rec->rec_seq))
        rec = x;
      if (x->state == MX_REMOVED && (tomb == NULL || x->tomb_seq < tomb->tomb_seq))
        tomb = x;
    }
  if (r->cfg.heartbeat_timeout_ns != 0 && hb != NULL)
    due = tlo_add_sat(hb->hb_when, r->cfg.heartbeat_timeout_ns);
  if (pend != NULL && pend->pend_deadline < due)
    due = pend->pend_deadline;
  if (rec != NULL && rec->rec_deadline < due)
    due = rec->rec_deadline;
  if (r->cfg.tombstone_ttl_ns != 0 && tomb != NULL) {
    uint64_t t = tlo_add_sat(tomb->tomb_when, r->cfg.tombstone_ttl_ns);
    if (t < due)
      due = t;
  }
  uint64_t spec = spec_next_of(r), wait = tlo_loc_next_of(r), excl = tlo_exclude_next_of(r);
  uint64_t answer = due == UINT64_MAX ? TL_TICK_NEVER : due > r->now ? due - r->now : 0;
  if (wait < answer)
    answer = wait;
  if (excl < answer)
    answer = excl;
  return spec < answer ? spec : answer;
}

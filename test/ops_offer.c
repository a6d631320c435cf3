/* The offer round, one of the calls (ops_calls.c has the others): tl_resource_offers predicted
 * from the model (usable offers, the order of pools and task sets, delay scheduling, speculative
 * copies, barriers, the timer rule, unschedulable task sets), made, and its launches compared.
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In its pool's queue: not zombie, something pending or a speculative copy waiting. */
static bool schedulable(const mts *t) {
  return !t->released && !t->zombie && t->npend + t->nspecs > 0;
}

/* Spark's FAIR order between pools: below their min share first (by running / min share),
 * then by running / weight, then by name. Between the children of a TL_FIFO pool: the order
 * they were added. running: each pool's subtree's. */
static bool pool_before(const tlo_run *r, tl_sched_mode mode, unsigned a, unsigned b,
                        const uint32_t *running) {
  const mpool *pa = &r->pools[a], *pb = &r->pools[b];
  if (mode != TL_FAIR)
    return pa->seq < pb->seq;
  bool needy_a = running[a] < pa->min_share, needy_b = running[b] < pb->min_share;
  if (needy_a != needy_b)
    return needy_a;
  uint64_t lhs, rhs;
  if (needy_a) {
    lhs = (uint64_t)running[a] * (pb->min_share > 1 ? pb->min_share : 1);
    rhs = (uint64_t)running[b] * (pa->min_share > 1 ? pa->min_share : 1);
  } else {
    lhs = (uint64_t)running[a] * pb->weight;
    rhs = (uint64_t)running[b] * pa->weight;
  }
  if (lhs != rhs)
    return lhs < rhs;
  return strcmp(tlo_pool_names[a], tlo_pool_names[b]) < 0;
}

/* The leaf pools below parent (-1: the top level) with something queued, depth first, each
 * level's children sorted by the parent's mode, written to order from n; returns the new n. */
static size_t leaves_in_order(const tlo_run *r, int parent, tl_sched_mode mode,
                              const uint32_t *running, const bool *queued, unsigned *order,
                              size_t n) {
  unsigned kids[NPOOLNAMES];
  size_t nk = 0;
  for (unsigned p = 0; p < NPOOLNAMES; p++) {
    if (!r->pools[p].exists || r->pools[p].parent != parent || !queued[p])
      continue;
    size_t pos = nk++;
    while (pos > 0 && pool_before(r, mode, p, kids[pos - 1], running)) {
      kids[pos] = kids[pos - 1];
      pos--;
    }
    kids[pos] = p;
  }
  for (size_t i = 0; i < nk; i++) {
    if (r->pools[kids[i]].nchildren == 0)
      order[n++] = kids[i];
    else
      n = leaves_in_order(r, (int)kids[i], r->pools[kids[i]].mode, running, queued, order, n);
  }
  return n;
}

/* Inside a pool: TL_FIFO by priority, stage id, id; TL_FAIR by running attempts (as the round
 * began), stage id, stage attempt, id. */
static bool ts_before(tl_sched_mode mode, const mts *a, const mts *b) {
  if (mode == TL_FAIR) {
    if (a->nrunning != b->nrunning)
      return a->nrunning < b->nrunning;
    if (a->stage != b->stage)
      return a->stage < b->stage;
    if (a->sattempt != b->sattempt)
      return a->sattempt < b->sattempt;
  } else {
    if (a->prio != b->prio)
      return a->prio < b->prio;
    if (a->stage != b->stage)
      return a->stage < b->stage;
  }
  return a->id < b->id;
}

/* Launches the next attempt of index i of task set k on x (spec: a speculative copy); also a
 * reconciliation's adoption (tlo_reconciled), which is a launch made by a dead driver. */
void tlo_launch(tlo_run *r, uint32_t k, uint32_t i, mexec *x, bool spec, unsigned level) {
  mts *t = &r->ts[k];
  if (r->natt == r->attcap) {
    r->attcap = r->attcap ? 2 * r->attcap : 256;
    r->att = tlo_xrealloc(r->att, r->attcap * sizeof *r->att);
  }
  tl_tid tid = (tl_tid)r->natt + 1;
  matt *a = &r->att[r->natt++];
  memset(a, 0, sizeof *a);
  a->ts = k;
  a->index = i;
  a->attempt = t->idx[i].attempts++;
  a->ex = x;
  a->live = true;
  a->spec = spec;
  a->loc = (uint8_t)level;
  a->launched_at = r->now;
  if (t->has_loc)
    r->f_loc_launches[level]++;
  if (t->may_spec)
    t->idx[i].tried |= (uint8_t)(1u << x->host);
  if (t->idx[i].copies > 0) { /* the two copies know each other, to kill the loser */
    for (size_t j = 0; j < r->ninflight; j++) {
      matt *b = &r->att[r->inflight[j] - 1];
      if (b->ts == k && b->index == i) {
        a->sibling = r->inflight[j];
        b->sibling = tid;
      }
    }
  }
  t->idx[i].copies++;
  t->nrunning++;
  x->free_cores -= t->cpus;
  x->nrunning++;
  if (r->ninflight == r->inflightcap) {
    r->inflightcap = r->inflightcap ? 2 * r->inflightcap : 64;
    r->inflight = tlo_xrealloc(r->inflight, r->inflightcap * sizeof *r->inflight);
  }
  r->inflight[r->ninflight++] = tid;
  r->launched++;
  mevent *e = tlo_push_ev(r, EV_STARTED);
  e->tid = tid;
  e->ts = k;
  e->index = i;
  e->attempt = a->attempt;
  e->ex = x;
  e->spec = spec;
  e->loc = a->loc;
}

/* After a round (SPARK-22148, as docs/api.md says): one that launched anything clears every
 * unschedulable deadline; one that launched nothing looks at each active task set with counted
 * failures, in submission order: if the top of its pending stack may run on no live executor
 * (each excluded for the application, or for the task set, or for that index, itself or its
 * node), it gets a deadline if some live executor runs nothing (unless it has one), and is
 * aborted at once otherwise. Nothing happens while no executor is live. */
static void after_round(tlo_run *r, size_t launched, const uint32_t *order, size_t norder) {
  if (!tlo_xon(r))
    return;
  if (launched > 0) {
    tlo_clear_deadlines(r, TLO_XF_CLEARED_LAUNCH);
    return;
  }
  bool any = false, idle = false;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      const mexec *x = &r->ex[s][g];
      if (tlo_live_state(x->state)) {
        any = true;
        idle = idle || x->nrunning == 0;
      }
    }
  if (!any)
    return;
  uint32_t by_first[MAXTS];
  size_t nfirst = 0;
  for (size_t o = 0; o < norder; o++) {
    size_t pos = nfirst++;
    while (pos > 0 && r->ts[by_first[pos - 1]].xseq > r->ts[order[o]].xseq) {
      by_first[pos] = by_first[pos - 1];
      pos--;
    }
    by_first[pos] = order[o];
  }
  for (size_t o = 0; o < nfirst; o++) {
    uint32_t k = by_first[o];
    mts *t = &r->ts[k];
    if (t->released || t->zombie || t->nxf == 0 || t->npend == 0)
      continue;
    uint32_t i = t->pend[t->npend - 1];
    bool nowhere = true;
    for (unsigned s = 0; s < NSLOTS && nowhere; s++)
      for (uint32_t g = 0; g < r->ngen[s] && nowhere; g++) {
        const mexec *x = &r->ex[s][g];
        if (tlo_live_state(x->state) && !tlo_app_blocked(r, x) && !tlo_offer_blocked(r, t, x) &&
            !tlo_task_blocked(r, t, i, x))
          nowhere = false;
      }
    if (!nowhere)
      continue;
    if (idle) {
      if (!t->xdl) {
        t->xdl = true;
        t->xdl_at = tlo_add_sat(r->now, r->cfg.unschedulable_timeout_ns);
        t->xdl_seq = ++r->seq;
        t->xdl_task = i;
        r->f_x[TLO_XF_DEADLINES]++;
      }
    } else {
      t->xdl = false; /* the deadline it may have had ends with it */
      r->unsched_aborted++;
      r->f_x[TLO_XF_ABORT_NOW]++;
      tlo_abort_ts(r, k, ABORT_UNSCHEDULABLE, i, 0, t->xmsg);
      tlo_finish_if_drained(r, k);
    }
  }
}

/* After a round, resources' unsatisfiable rule: a task set with requests and work to launch
 * that no ALIVE executor could ever run (its profile, its cores, each request within what the
 * executor declares) waits, while some executor is ALIVE (runs with resources make the wait
 * endless, so only tasksets_unschedulable shows it); any other stops waiting. */
static void res_after_round(tlo_run *r) {
  size_t nalive = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      nalive += r->ex[s][g].state == MX_ALIVE;
  for (uint32_t k = 0; k < r->nts; k++) {
    mts *t = &r->ts[k];
    if (t->released || t->req.nreq == 0)
      continue;
    bool waiting = !t->zombie && t->npend + t->nspecs > 0 && nalive > 0;
    for (unsigned s = 0; s < NSLOTS && waiting; s++)
      for (uint32_t g = 0; g < r->ngen[s] && waiting; g++) {
        const mexec *x = &r->ex[s][g];
        if (x->state != MX_ALIVE || x->decl.profile != t->req.profile || x->cores < t->cpus)
          continue;
        bool could = true;
        for (uint8_t i = 0; i < t->req.nreq && could; i++) {
          bool has = false;
          for (uint8_t j = 0; j < x->decl.nres; j++)
            has =
                has || (x->decl.kind[j] == t->req.kind[i] && x->decl.naddr[j] >= t->req.amount[i]);
          could = has;
        }
        waiting = !could;
      }
    if (t->res_wait != waiting)
      tlo_trace(r, 2, "  task set %" PRIu64 " %s for resources", t->id,
                waiting ? "waits" : "no longer waits");
    t->res_wait = waiting;
  }
}

/* One offer round. bad: one more offer with an empty id (TL_EINVAL). */
void tlo_do_offer(tlo_run *r, mexec **caller_xs, const uint32_t *caller_cores, size_t n,
                  size_t cap, bool bad) {
  tl_offer *offers = tlo_xrealloc(NULL, (n + 1) * sizeof *offers);
  for (size_t i = 0; i < n; i++) {
    offers[i].executor_id = caller_xs[i]->id;
    offers[i].cores = caller_cores[i];
  }
  /* The round is predicted over the offers in the order it visits them: the caller's, or with
   * the offer shuffle the one drawn (ops_shuffle.c; not for a call refused before its round). */
  mexec **xs = caller_xs;
  const uint32_t *cores = caller_cores;
  tlo_drawn drawn;
  bool shuffled = r->cfg.offer_shuffle && !bad;
  if (shuffled) {
    tlo_shuffle_draw(r, caller_xs, caller_cores, n, &drawn);
    xs = drawn.xs;
    cores = drawn.cores;
  }
  size_t noffers = n;
  if (bad) {
    offers[noffers].executor_id = "";
    offers[noffers].cores = 1;
    noffers++;
  }
  int want = bad ? TL_EINVAL : TL_OK;
  tl_tid first = (tl_tid)r->natt + 1;
  size_t npred = 0;
  /* With resources, some rounds go through tl_resource_offers_grants, a few with a small
   * grants array. */
  bool with_grants = false;
  size_t gcap = 0;
  if (r->resources)
    tlo_res_round(r, &with_grants, &gcap);
  uint64_t gleft = with_grants ? gcap : UINT64_MAX;
  if (want == TL_OK) {
    tlo_clock_read(r);
    /* Usable offers: ALIVE executors, capped by the ledger's free cores. */
    mexec **slot_ex = tlo_xrealloc(NULL, (n + 1) * sizeof *slot_ex);
    uint32_t *slot_cores = tlo_xrealloc(NULL, (n + 1) * sizeof *slot_cores);
    size_t nslots = 0, nnamed = 0; /* ALIVE executors named, excluded ones included */
    mexec **named = tlo_xrealloc(NULL, (n + 1) * sizeof *named);
    for (size_t i = 0; i < n; i++) {
      if (xs[i]->state != MX_ALIVE) {
        r->rejected_offers++;
        continue;
      }
      size_t q = 0;
      while (q < nnamed && named[q] != xs[i])
        q++;
      if (q == nnamed)
        named[nnamed++] = xs[i];
      /* Excluded for the application: filtered before the round (HealthTracker's filter). */
      if (tlo_app_blocked(r, xs[i])) {
        r->excluded_offers++;
        r->f_x[TLO_XF_EXCLUDED_OFFERS]++;
        continue;
      }
      /* Offers naming one executor twice share its slot, capped by its free cores. */
      size_t j = 0;
      while (j < nslots && slot_ex[j] != xs[i])
        j++;
      if (j < nslots) {
        uint32_t room = xs[i]->free_cores - slot_cores[j];
        slot_cores[j] += cores[i] < room ? cores[i] : room;
        continue;
      }
      slot_ex[nslots] = xs[i];
      slot_cores[nslots] = cores[i] < xs[i]->free_cores ? cores[i] : xs[i]->free_cores;
      nslots++;
    }
    /* The round's launch budget: min(cap, pending and speculatable tasks, offered cores). */
    uint64_t offered = 0;
    for (size_t i = 0; i < nslots; i++)
      offered += slot_cores[i];
    size_t todo = 0;
    for (uint32_t k = 0; k < r->nts; k++)
      if (!r->ts[k].released && !r->ts[k].zombie)
        todo += r->ts[k].npend + r->ts[k].nspecs;
    size_t most = cap < todo ? cap : todo;
    if (most > offered)
      most = (size_t)offered;
    uint64_t left = offered;
    /* A full round names every ALIVE executor (Spark's isAllFreeResources). */
    size_t nalive = 0;
    for (unsigned sl = 0; sl < NSLOTS; sl++)
      for (uint32_t g = 0; g < r->ngen[sl]; g++)
        nalive += r->ex[sl][g].state == MX_ALIVE;
    bool full = nnamed == nalive; /* executors excluded for the application included */
    free(named);
    /* The order is taken when the round begins: pools with something schedulable by Spark's
     * FAIR comparator (TL_FIFO: "default" only), and in each its task sets in its mode's order. */
    uint32_t order[MAXTS];
    size_t norder = 0;
    unsigned porder[NPOOLNAMES];
    size_t npools = 0;
    uint32_t prun[NPOOLNAMES] = {0};
    bool queued[NPOOLNAMES] = {false};
    for (uint32_t k = 0; k < r->nts; k++) {
      const mts *t = &r->ts[k];
      if (t->released)
        continue;
      prun[t->pool] += t->nrunning;
      if (schedulable(t))
        queued[t->pool] = true;
    }
    /* Nested pools: each pool's running and queued are its subtree's (a parent comes before
     * its children in tlo_pool_names' order or after: sum to a fixed point, depth times). */
    for (unsigned pass = 0; pass < TL_POOL_DEPTH_MAX; pass++)
      for (unsigned p = 0; p < NPOOLNAMES; p++) {
        if (!r->pools[p].exists || r->pools[p].nchildren == 0)
          continue;
        prun[p] = 0;
        queued[p] = false;
        for (unsigned q = 0; q < NPOOLNAMES; q++)
          if (r->pools[q].exists && r->pools[q].parent == (int)p) {
            prun[p] += prun[q];
            queued[p] |= queued[q];
          }
      }
    /* The leaves, depth first, each level sorted by its parent's mode (the top level FAIR). */
    npools = leaves_in_order(r, -1, TL_FAIR, prun, queued, porder, 0);
    r->f_fair_rounds += npools > 1;
    bool nested = false;
    for (size_t pi = 0; pi < npools; pi++)
      nested |= r->pools[porder[pi]].parent >= 0;
    r->f_nested_rounds += nested;
    for (size_t pi = 0; pi < npools; pi++) {
      unsigned p = porder[pi];
      for (uint32_t k = 0; k < r->nts; k++) {
        const mts *t = &r->ts[k];
        if (t->released || t->pool != p || !schedulable(t))
          continue;
        size_t pos = norder++;
        while (pos > 0 && r->ts[order[pos - 1]].pool == p &&
               ts_before(r->pools[p].mode, t, &r->ts[order[pos - 1]])) {
          order[pos] = order[pos - 1];
          pos--;
        }
        order[pos] = k;
      }
    }
    for (size_t o = 0; o < norder && npred < most && left > 0; o++) {
      uint32_t k = order[o];
      mts *t = &r->ts[k];
      if (t->cpus > left)
        continue;
      if (t->restored && r->hold) /* the recovery hold */
        continue;
      if (t->barrier) { /* all of its tasks in this round, or none */
        uint64_t fit = 0;
        for (size_t i = 0; i < nslots; i++)
          if (slot_ex[i]->decl.profile == t->req.profile) /* and the addresses they need */
            fit += tlo_res_fit_count(slot_ex[i], t, slot_cores[i] / t->cpus);
        if (t->npend != t->ntasks || most - npred < t->npend || fit < t->npend)
          continue;
        if (t->req.nreq > 0 && gleft < (uint64_t)t->npend * t->req.ngrants)
          continue; /* its grants would not fit the caller's array */
      }
      /* Its turn: a pass per valid level, most local first (a task set without preferences
       * has TL_NO_PREF only), repeated while a pass launches something; one task per slot per
       * pass (Spark's resourceOffers over resourceOfferSingleTaskSet). */
      uint8_t levels = t->has_loc ? t->levels : (uint8_t)(1u << TL_NO_PREF);
      bool rejects = false;
      unsigned best = NLEVELS; /* the most local level launched */
      for (unsigned l = TL_PROCESS_LOCAL; l <= TL_ANY; l++) {
        if (!(levels & (1u << l)))
          continue;
        for (;;) {
          size_t launched = 0;
          for (size_t i = 0; i < nslots && npred < most && t->npend + t->nspecs > 0; i++) {
            mexec *x = slot_ex[i];
            if (slot_cores[i] < t->cpus)
              continue;
            /* Another profile's executor, or not the addresses a task needs: no task, and no
             * delay-scheduling reject. */
            if (!tlo_res_fits(x, t)) {
              r->f_res[TLO_RF_NO_FIT]++;
              continue;
            }
            if (t->req.nreq > 0 && gleft < t->req.ngrants) { /* the grants array is full: the */
              most = npred;                                  /* round ends as at cap */
              r->f_res[TLO_RF_GCAP_STOPS]++;
              break;
            }
            /* Excluded for the whole task set: no task, and no delay-scheduling reject (Spark's
             * resourceOffer with offerExcluded). */
            if (tlo_offer_blocked(r, t, x)) {
              r->f_x[TLO_XF_BLOCKED]++;
              continue;
            }
            if (tlo_pl_blocked(r, t, x)) /* hard placement: no task, no reject */
              continue;
            /* How far delay scheduling lets it go, never past the pass's level; not asked at
             * the NO_PREF pass, nor by a barrier task set, which never waits. */
            unsigned allowed = l;
            if (t->has_loc && l != TL_NO_PREF && !t->barrier) {
              unsigned now_at = tlo_allowed_level(r, t);
              if (now_at < allowed)
                allowed = now_at;
            }
            /* Regular pending tasks first, then speculative copies at the most local level
             * allowed, never on a host an attempt of the index was launched on. */
            unsigned level = TL_NO_PREF;
            int index = -1;
            bool spec = false;
            if (!t->has_loc) {
              for (uint32_t p = t->npend; p-- > 0 && index < 0;) {
                if (tlo_task_blocked(r, t, t->pend[p], x))
                  r->f_x[TLO_XF_SKIPS]++;
                else
                  index = (int)t->pend[p];
              }
            } else {
              index = tlo_take_pending(r, t, x, allowed, &level);
            }
            if (index >= 0) {
              tlo_pend_remove(t, (uint32_t)index);
            } else {
              unsigned best_l = NLEVELS;
              for (uint32_t s_at = t->nspecs; s_at-- > 0;) {
                uint32_t i2 = t->specs[s_at];
                if (t->idx[i2].tried & (1u << x->host))
                  continue;
                if (tlo_task_blocked(r, t, i2, x)) {
                  r->f_x[TLO_XF_SPEC_SKIPS]++;
                  continue;
                }
                unsigned l2 = tlo_locality_on(r, t, i2, x);
                if (l2 <= allowed && l2 < best_l) {
                  best_l = l2;
                  index = (int)i2;
                }
              }
              if (index < 0) {
                if (l == TL_ANY) /* an offer refused while something waits */
                  rejects = true;
                continue;
              }
              tlo_spec_remove(t, (uint32_t)index);
              spec = true;
              level = best_l;
            }
            tlo_launch(r, k, (uint32_t)index, x, spec, level);
            tlo_res_grant(r, x, t, &r->att[r->natt - 1]);
            if (t->req.nreq > 0)
              gleft -= t->req.ngrants;
            r->f_res[TLO_RF_BARRIERS] += t->barrier && t->req.nreq > 0 && t->npend == 0 && !spec;
            if (level < best)
              best = level;
            r->f_spec_launches += spec;
            r->f_barrier_launches += t->barrier && t->npend == 0 && !spec;
            slot_cores[i] -= t->cpus;
            left -= t->cpus;
            npred++;
            launched++;
          }
          if (launched == 0 || t->npend + t->nspecs == 0 || npred == most || left < t->cpus)
            break;
        }
        if (t->npend + t->nspecs == 0 || npred == most || left < t->cpus)
          break;
      }
      /* The timer rule (SPARK-18886): a turn with a reject stops partial rounds from resetting;
       * one that launched without a reject resets the timer to the most local level launched,
       * if the round is full or nothing was rejected since the last reset. */
      if (t->has_loc && !t->barrier) {
        if (rejects) {
          t->no_rejects = false;
        } else if (best < NLEVELS && (full || t->no_rejects)) {
          t->reset = r->now;
          t->level = (uint8_t)tlo_next_level(t->levels, best);
          t->no_rejects = true;
          r->f_resets++;
          tlo_trace(r, 2, "  task set %" PRIu64 " timer reset at %s", t->id,
                    tl_locality_name((tl_locality)t->level));
        }
      }
    }
    free(slot_ex);
    free(slot_cores);
    after_round(r, npred, order, norder);
    res_after_round(r); /* after exclusion's aborts, as the library does them */
    tlo_pl_after_round(r, (size_t)(first - 1));
  }
  char d[200];
  int w = snprintf(d, sizeof d, "offer cap=%zu", cap);
  for (size_t i = 0; i < noffers && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, " %s:%u",
                  offers[i].executor_id[0] ? offers[i].executor_id : "\"\"", offers[i].cores);
  if (with_grants && w > 0 && (size_t)w < sizeof d)
    snprintf(d + w, sizeof d - (size_t)w, " grants=%zu", gcap);
  tl_launch out[MAXCAP];
  tl_grant gr[MAXCAP * MAXGR + 1];
  size_t nout = 99, ngr = 99;
  tlo_note_call(r, d);
  int rc = with_grants
               ? tl_resource_offers_grants(r->s, offers, noffers, out, cap, &nout, gr, gcap, &ngr)
               : tl_resource_offers(r->s, offers, noffers, out, cap, &nout);
  free(offers);
  tlo_expect_rc(r, d, rc, want);
  if (rc != TL_OK) {
    if (nout != 0 || (with_grants && ngr != 0))
      tlo_fail(r, "tl_resource_offers failed with *nout %zu (*ngrants %zu), not 0", nout, ngr);
    return;
  }
  if (nout != npred) {
    tlo_fail(r, "tl_resource_offers launched %zu, the model says %zu", nout, npred);
    return;
  }
  size_t gat = 0; /* each launch's grants follow the previous one's in the caller's array */
  for (size_t k = 0; k < nout && !r->failed; k++) {
    const matt *a = &r->att[first + k - 1];
    char what[40];
    snprintf(what, sizeof what, "launch %zu", k);
    if (with_grants) {
      if (a->ngr > 0 && out[k].grants != gr + gat)
        tlo_fail(r, "launch %zu's grants are not at %zu of the caller's array", k, gat);
      tlo_res_cmp_grants(r, what, out[k].grants, out[k].ngrants, a);
      gat += a->ngr;
    } else {
      if (out[k].grants != NULL)
        tlo_fail(r, "launch %zu of tl_resource_offers points at grants", k);
      CMP_OF(r, "launch", what, "ngrants", out[k].ngrants, a->ngr);
    }
  }
  if (with_grants) {
    r->f_res[TLO_RF_GRANT_CALLS]++;
    if (ngr != gat)
      tlo_fail(r, "tl_resource_offers_grants wrote %zu grants, its launches hold %zu", ngr, gat);
  }
  for (size_t k = 0; k < nout && !r->failed; k++) {
    const matt *a = &r->att[first + k - 1];
    const mts *t = &r->ts[a->ts];
    char name[24];
    snprintf(name, sizeof name, "%zu", k);
#define CMP_L(field, value) CMP_OF(r, "launch", name, #field, out[k].field, value)
    CMP_L(tid, first + k);
    CMP_L(taskset, t->id);
    CMP_L(stage_id, t->stage);
    CMP_L(stage_attempt, t->sattempt);
    CMP_L(index, a->index);
    CMP_L(attempt, a->attempt);
    CMP_L(cpus, t->cpus);
    CMP_L(locality, a->loc);
    CMP_L(speculative, a->spec);
#undef CMP_L
    /* Its offer is the first naming its executor (with the shuffle, the first in the drawn
     * order, as the caller's index); its id is that offer's own string (each record's id,
     * which outlives the offers array), its ud the record it was registered with. */
    size_t offer = 0;
    while (offer < n && xs[offer] != a->ex)
      offer++;
    if (shuffled && offer < n)
      offer = drawn.from[offer];
    CMP_OF(r, "launch", name, "offer", out[k].offer, offer);
    if (out[k].offer < n && out[k].executor_id != caller_xs[out[k].offer]->id)
      tlo_fail(r, "launch %zu: executor_id is not its offer's string", k);
    if (strcmp(out[k].executor_id, a->ex->id) != 0)
      tlo_fail(r, "launch %zu on %s, the model says %s", k, out[k].executor_id, a->ex->id);
    if (out[k].executor_ud != a->ex)
      tlo_fail(r, "launch %zu: executor_ud is not the ud %s was registered with", k, a->ex->id);
    if (out[k].payload != (t->lost_payload ? NULL : t))
      tlo_fail(r, "launch %zu has another task set's payload", k);
  }
}

/* Every executor record the run has used that is ALIVE, offered `cores` each. */
void tlo_do_offer_alive(tlo_run *r, uint32_t cores, size_t cap, bool all) {
  mexec *xs[NSLOTS * MAXGEN];
  uint32_t cs[NSLOTS * MAXGEN];
  size_t n = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      mexec *x = &r->ex[s][g];
      if (all || x->state == MX_ALIVE) {
        xs[n] = x;
        cs[n] = cores;
        n++;
      }
    }
  tlo_do_offer(r, xs, cs, n, cap, false);
}

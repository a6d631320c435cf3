/* The seeded generator, which chooses the operations of tlo_run_seed's programs from the
 * model's state.
 */
#include "ops_internal.h"

#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * The generator: operations chosen from the model's state so that most of them do something
 * (an update names an attempt in flight, an offer an ALIVE executor), with a share of invalid,
 * stale, foreign and unknown ones.
 * ------------------------------------------------------------------------------------------- */

static uint32_t rnd(tlo_run *r, uint32_t n) { return (uint32_t)(tlo_splitmix64(&r->rng) % n); }
static bool chance(tlo_run *r, uint32_t percent) { return rnd(r, 100) < percent; }

/* An executor reference byte: usually one that is live (or ALIVE only), else anything. */
static uint8_t gen_exec(tlo_run *r, bool alive_only) {
  if (chance(r, 85)) {
    uint8_t cand[NSLOTS * 3];
    size_t n = 0;
    for (unsigned s = 0; s < NSLOTS; s++)
      for (unsigned back = 0; back < 3 && back < r->ngen[s]; back++) {
        const mexec *x = &r->ex[s][r->ngen[s] - 1 - back];
        if (alive_only ? x->state == MX_ALIVE : x->state != MX_NONE && x->state != MX_REMOVED)
          cand[n++] = (uint8_t)(s | back << 3);
      }
    if (n > 0)
      return cand[rnd(r, (uint32_t)n)];
  }
  return (uint8_t)rnd(r, 256);
}

/* An attempt reference: mostly one in the tid index. */
static uint8_t gen_tid(tlo_run *r) {
  uint32_t p = rnd(r, 100);
  if (p < 85)
    return (uint8_t)rnd(r, 128);
  if (p < 90)
    return (uint8_t)(128 + rnd(r, 32));
  if (p < 97)
    return (uint8_t)(160 + rnd(r, 64));
  return (uint8_t)(224 + rnd(r, 32));
}

/* An attempt reference (below 128) to an attempt in the tid index that is a loser already
 * killed (which 1) or one of two copies in flight (which 2); false when there is none. */
static bool pick_indexed(tlo_run *r, int which, uint8_t *sel) {
  size_t n = 0, ncand = 0, cand[64];
  for (size_t i = 0; i < r->ninflight; i++) {
    const matt *a = &r->att[r->inflight[i] - 1];
    if (a->frozen)
      continue;
    bool want = which == 1 ? a->killed_by_other : a->sibling != 0 && !a->killed_by_other;
    if (want && ncand < 64)
      cand[ncand++] = n;
    n++;
  }
  if (ncand == 0 || n > 128)
    return false;
  size_t j = cand[rnd(r, (uint32_t)ncand)];
  *sel = (uint8_t)((j * 128 + n - 1) / n); /* tlo_resolve_tid: the sel-th 128th of the way */
  return true;
}

static uint8_t gen_msg(tlo_run *r) {
  uint32_t p = rnd(r, 100);
  return p < 55 ? 0 : p < 75 ? 1 : p < 97 ? 2 : 3;
}

/* A batch (TLO_UPDATES): mostly from an executor with attempts in the tid index, else any
 * reference (some unknown or removed: TL_ENOENT, TL_EGONE); 1 to 8 updates (now and then none)
 * mixing that executor's attempts in every state and result mode, a tid given twice, another
 * executor's attempts (TL_EOWNER), ended, frozen and never launched ones (TL_ESTALE); one batch
 * in 25 has one invalid update, and a few have bad arguments (TL_EINVAL as a whole). */
static void gen_updates(tlo_run *r, tlo_op *op) {
  uint8_t cand[NSLOTS * 3], gone[NSLOTS * 3];
  size_t ncand = 0, ngone = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (unsigned back = 0; back < 3 && back < r->ngen[s]; back++) {
      const mexec *x = &r->ex[s][r->ngen[s] - 1 - back];
      if (x->nrunning > 0)
        cand[ncand++] = (uint8_t)(s | back << 3);
      if (x->state == MX_REMOVED)
        gone[ngone++] = (uint8_t)(s | back << 3);
    }
  uint32_t p = rnd(r, 100);
  if (p < 2 && ngone > 0)
    op->exec = gone[rnd(r, (uint32_t)ngone)];
  else if (p < 3)
    op->exec = (uint8_t)(rnd(r, NSLOTS) | 3u << 3); /* never registered */
  else if (ncand > 0 && chance(r, 85))
    op->exec = cand[rnd(r, (uint32_t)ncand)];
  else
    op->exec = gen_exec(r, false);
  op->flags = (uint8_t)(chance(r, 5) ? BATCH_NO_RESULTS : 0);
  if (chance(r, 1))
    op->flags |= (uint8_t)(BATCH_NULL_ARRAY | (chance(r, 50) ? BATCH_NULL_UPDATES : 0));
  if (chance(r, 1))
    op->flags |= BATCH_EMPTY_ID;
  /* Mostly about as many updates as the executor has attempts to report (each one, or two of
   * them for some), else any number. */
  uint32_t most = 2 * tlo_resolve_exec(r, op->exec)->nrunning + 1;
  unsigned n = chance(r, 1)    ? 0
               : chance(r, 70) ? 1 + rnd(r, most < TLO_MAX_BATCH ? most : TLO_MAX_BATCH)
                               : 1 + rnd(r, TLO_MAX_BATCH);
  op->nupd = (uint8_t)n;
  unsigned invalid = chance(r, 4) ? rnd(r, n > 0 ? n : 1) : TLO_MAX_BATCH;
  static const uint8_t failures[] = {1, 1, 1, 2, 3, 4, 5, 5};
  for (unsigned i = 0; i < n; i++) {
    p = rnd(r, 100);
    op->upd_tid[i] = (uint8_t)(p < 60   ? rnd(r, 128)
                               : p < 70 ? (i > 0 ? 128 + rnd(r, 16) : rnd(r, 128))
                               : p < 73 ? 144 + rnd(r, 16)
                               : p < 83 ? 160 + rnd(r, 32)
                               : p < 95 ? 192 + rnd(r, 32)
                                        : 224 + rnd(r, 32));
    p = rnd(r, 100);
    unsigned state = p < 25   ? TL_TASK_RUNNING
                     : p < 62 ? TL_TASK_FINISHED
                     : p < 85 ? TL_TASK_FAILED
                              : TL_TASK_KILLED;
    unsigned failure = state == TL_TASK_FAILED ? failures[rnd(r, sizeof failures)] : rnd(r, 8);
    unsigned resmode = 0, sizesel = 0;
    if (state == TL_TASK_FINISHED) {
      p = rnd(r, 100);
      resmode = p < 60 ? 1 : p < 75 ? 2 : p < 85 ? 3 : 0;
      p = rnd(r, 100);
      sizesel = p < 50 ? 0 : p < 97 ? 1 + rnd(r, 6) : 7;
      /* Exclusion wants counted failures. */
      if (r->cfg.exclude_on_failure && chance(r, 25)) {
        state = TL_TASK_FAILED;
        failure = TL_END_EXCEPTION;
        resmode = 0;
      }
    }
    if (i == invalid) { /* what tl_status_update refuses with TL_EINVAL */
      p = rnd(r, 3);
      if (p == 0) {
        state = 4;
      } else if (p == 1) {
        static const uint8_t bad[] = {TL_END_SUCCESS, TL_END_EXECUTOR_LOST, 7};
        state = TL_TASK_FAILED;
        failure = bad[rnd(r, sizeof bad)];
      } else {
        static const uint8_t not_finished[] = {TL_TASK_RUNNING, TL_TASK_FAILED, TL_TASK_KILLED};
        state = not_finished[rnd(r, sizeof not_finished)];
        failure = TL_END_EXCEPTION;
        resmode = 1 + rnd(r, 3);
      }
    }
    op->upd_how[i] = (uint8_t)(state | failure << 3 | gen_msg(r) << 6);
    op->upd_res[i] = (uint8_t)(resmode | sizesel << 2);
  }
}

void tlo_gen_op(tlo_run *r, tlo_op *op) {
  static const struct {
    tlo_kind kind;
    uint32_t weight;
  } base[] = {{TLO_ADD, 8},          {TLO_LOSE, 5},      {TLO_HEARTBEAT, 2}, {TLO_HEARTBEAT_ALL, 6},
              {TLO_DECOMMISSION, 2}, {TLO_SUBMIT, 8},    {TLO_KILL_TASK, 3}, {TLO_KILL_STAGE, 2},
              {TLO_CANCEL_STAGE, 1}, {TLO_PARTITION, 2}, {TLO_OFFER, 10},    {TLO_OFFER_ALL, 8},
              {TLO_UPDATE, 32},      {TLO_CLOCK, 5},     {TLO_TICK, 4},      {TLO_INSPECT, 2},
              {TLO_POOL_ADD, 1},     {TLO_UPDATES, 8},   {TLO_SNAPSHOT, 1},  {TLO_RECONCILE, 1}};
  uint32_t weights[TLO_NKINDS];
  bool spec = r->cfg.speculation, fair = r->cfg.mode == TL_FAIR;
  unsigned npools = 0, alive = 0, recovering = 0;
  for (unsigned p = 0; p < NPOOLNAMES; p++)
    npools += r->pools[p].exists;
  for (unsigned sl = 0; sl < NSLOTS; sl++)
    for (uint32_t g = 0; g < r->ngen[sl]; g++) {
      alive += r->ex[sl][g].state == MX_ALIVE;
      recovering += r->ex[sl][g].state == MX_RECOVERING;
    }
  uint32_t total = 0;
  for (size_t i = 0; i < TLO_NKINDS; i++) {
    weights[i] = base[i].weight;
    if (spec && (base[i].kind == TLO_CLOCK || base[i].kind == TLO_TICK))
      weights[i] += 5; /* time passes in small steps and checks run often: slow tasks */
    if (spec && base[i].kind == TLO_OFFER_ALL)
      weights[i] += 4; /* and their copies find offers */
    if (spec && base[i].kind == TLO_ADD && alive < 3)
      weights[i] += 16; /* on several hosts */
    if (spec && base[i].kind == TLO_LOSE)
      weights[i] -= 2;
    if (r->cfg.decommission_kill_interval_ns != 0 && base[i].kind == TLO_DECOMMISSION &&
        r->ninflight > 0)
      weights[i] += 6; /* decommissions while tasks run: the kill rule's cases */
    if (fair && base[i].kind == TLO_POOL_ADD)
      weights[i] = npools < 4 ? 8 : 1;
    if (base[i].kind == TLO_UPDATES && r->ninflight == 0)
      weights[i] = 2; /* nothing runs: every update of a batch would be stale */
    /* Restored executors reconcile soon, mostly: the rest time out or are lost. */
    if (base[i].kind == TLO_RECONCILE && recovering > 0)
      weights[i] = 6 + 2 * recovering;
    if ((r->opt.no_failover || r->resources) &&
        (base[i].kind == TLO_SNAPSHOT || base[i].kind == TLO_RECONCILE))
      weights[i] = 0;
    total += weights[i];
  }
  uint32_t pick = rnd(r, total);
  tlo_kind kind = TLO_TICK;
  for (size_t i = 0; i < TLO_NKINDS; i++) {
    if (pick < weights[i]) {
      kind = base[i].kind;
      break;
    }
    pick -= weights[i];
  }
  memset(op, 0, sizeof *op);
  op->kind = (uint8_t)kind;
  switch (kind) {
  case TLO_ADD: {
    unsigned slot = rnd(r, NSLOTS);
    /* Prefer a slot whose latest executor is gone: it comes back under a new id. */
    for (int tries = 0; tries < 4; tries++) {
      if (r->ngen[slot] == 0)
        break;
      mx_state st = r->ex[slot][r->ngen[slot] - 1].state;
      if (st == MX_NONE || st == MX_REMOVED)
        break;
      slot = rnd(r, NSLOTS);
    }
    bool fresh = chance(r, 90);
    op->exec = (uint8_t)(slot | (fresh ? 0 : rnd(r, 3)) << 3);
    op->flags = fresh;
    op->a = (uint8_t)rnd(r, NHOSTS);
    op->b = chance(r, 92) ? 0 : (uint8_t)rnd(r, 5);
    op->c = chance(r, 3) ? 0 : chance(r, spec ? 25 : 3) ? 7 : (uint8_t)(1 + rnd(r, 4));
    break;
  }
  case TLO_LOSE: {
    op->exec = gen_exec(r, false);
    static const uint8_t kinds[] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 2,
                                    3, 4, 4, 4, 5, 5, 6, 1, 2, 4, 0, 7};
    const mexec *x = tlo_resolve_exec(r, op->exec);
    op->a = kinds[rnd(r, sizeof kinds)];
    if (x->state == MX_PENDING && op->a == 0 && chance(r, 70))
      op->a = (uint8_t)(1 + rnd(r, 6));
    op->flags = chance(r, 60);
    op->c = (uint8_t)rnd(r, 3);
    op->msg = gen_msg(r);
    break;
  }
  case TLO_HEARTBEAT:
    op->exec = gen_exec(r, false);
    break;
  case TLO_DECOMMISSION:
    op->exec = gen_exec(r, false);
    op->msg = gen_msg(r);
    break;
  case TLO_SUBMIT: {
    op->stage = (uint8_t)rnd(r, NSTAGES);
    op->a = chance(r, 85) ? 0 : (uint8_t)(1 + rnd(r, 4));
    op->b = (uint8_t)rnd(r, 4);
    bool barrier = chance(r, 12);
    op->c = chance(r, 2)               ? 0
            : barrier && chance(r, 70) ? (uint8_t)(1 + rnd(r, 4))
                                       : (uint8_t)(1 + rnd(r, MAXTASKS));
    op->flags = chance(r, 85) ? 0 : (uint8_t)(1 + rnd(r, 2));
    op->flags |= (uint8_t)((chance(r, 35) ? 4 : 0) | (barrier ? 8 : 0));
    /* Preferred locations (resolve_prefs), in the bits the other choices leave unused. */
    if (chance(r, 55)) {
      op->flags |= (uint8_t)((1 + rnd(r, 15)) << 4);
      op->a |= (uint8_t)(rnd(r, 32) << 3);
      op->b |= (uint8_t)(rnd(r, 64) << 2);
    }
    /* A pool: under TL_FAIR mostly one that exists; a few unknown and invalid names. */
    uint32_t p = rnd(r, 100);
    if (fair && p < 60) {
      unsigned cand[NPOOLNAMES], n = 0;
      for (unsigned q = 1; q < NPOOLNAMES; q++)
        if (r->pools[q].exists && (r->pools[q].nchildren == 0 || chance(r, 10)))
          cand[n++] = q;
      op->d = n > 0 ? (uint8_t)cand[rnd(r, n)] : POOL_DEFAULT;
    } else {
      op->d = p < 85 ? 0 : p < 97 ? (uint8_t)(1 + rnd(r, 5)) : (uint8_t)(6 + rnd(r, 2));
    }
    if (op->flags >> 4)
      op->d |= (uint8_t)(rnd(r, 32) << 3);
    break;
  }
  case TLO_POOL_ADD:
    op->d = chance(r, 85) ? (uint8_t)(2 + rnd(r, 4)) : (uint8_t)rnd(r, NPOOLNAMES);
    op->a = chance(r, 95) ? (uint8_t)rnd(r, 2) : 2;
    /* Its parent (a's bits 2 and up): mostly none (tl_pool_add), often a pool that exists
     * (tl_pool_add_child), now and then any name, NULL and invalid ones included. */
    if (chance(r, 45)) {
      unsigned cand[NPOOLNAMES], n = 0;
      for (unsigned q = 0; q < NPOOLNAMES; q++)
        if (r->pools[q].exists)
          cand[n++] = q;
      unsigned parent = chance(r, 85) && n > 0 ? cand[rnd(r, n)] : rnd(r, NPOOLNAMES);
      op->a |= (uint8_t)((parent + 1) << 2);
    }
    op->b = chance(r, 95) ? (uint8_t)(1 + rnd(r, 3)) : 0;
    op->c = (uint8_t)rnd(r, 4);
    /* With the shuffle bytes (only: the other runs draw as before), those that name a pool
     * that exists are tl_pool_set (c's bit 2, ops_shuffle.c) one time in two. */
    if (r->cfg.offer_shuffle && op->d < NPOOLNAMES && r->pools[op->d].exists && chance(r, 50))
      op->c |= 4;
    break;
  case TLO_KILL_TASK:
    op->tid = gen_tid(r);
    op->flags = chance(r, 50);
    op->msg = gen_msg(r);
    break;
  case TLO_KILL_STAGE:
  case TLO_CANCEL_STAGE:
  case TLO_PARTITION: {
    uint8_t cand[MAXTS];
    size_t n = 0;
    for (uint32_t k = 0; k < r->nts; k++)
      if (!r->ts[k].released && (kind != TLO_PARTITION || !r->ts[k].zombie))
        cand[n++] = (uint8_t)r->ts[k].stage;
    op->stage = n > 0 && chance(r, 85) ? cand[rnd(r, (uint32_t)n)] : (uint8_t)rnd(r, 7);
    op->flags = chance(r, 50);
    op->msg = gen_msg(r);
    if (kind == TLO_PARTITION) {
      int active = tlo_active_of(r, op->stage % NSTAGES);
      if (active >= 0 && r->ts[active].npend > 0 && chance(r, 70))
        op->a = (uint8_t)r->ts[active].pend[rnd(r, r->ts[active].npend)];
      else
        op->a = (uint8_t)rnd(r, 14);
    }
    break;
  }
  case TLO_OFFER:
    op->noffers = (uint8_t)(1 + rnd(r, TLO_MAX_OFFERS));
    for (unsigned i = 0; i < op->noffers; i++) {
      op->offer_exec[i] = gen_exec(r, true);
      op->offer_cores[i] = chance(r, 5) ? 0 : (uint8_t)(1 + rnd(r, 4));
    }
    op->a = chance(r, 70) ? 16 : (uint8_t)rnd(r, 17);
    op->flags = chance(r, 2);
    break;
  case TLO_UPDATE: {
    op->tid = gen_tid(r);
    op->flags = chance(r, 8);
    op->exec = gen_exec(r, false);
    const matt *a = tlo_att_of(r, tlo_resolve_tid(r, op->tid));
    uint32_t p = rnd(r, 100);
    if (a != NULL && a->live && !a->running && p < 60)
      op->a = TL_TASK_RUNNING;
    else
      op->a = p < 25   ? TL_TASK_RUNNING
              : p < 62 ? TL_TASK_FINISHED
              : p < 87 ? TL_TASK_FAILED
              : p < 97 ? TL_TASK_KILLED
                       : 4;
    static const uint8_t failures[] = {1, 1, 1, 1, 1, 2, 3, 4, 4, 5, 5, 5, 0, 6, 7};
    op->b = failures[rnd(r, sizeof failures)];
    if (op->a == TL_TASK_FINISHED)
      op->c = chance(r, 75) ? 1 : chance(r, 60) ? 2 : chance(r, 50) ? 3 : 0;
    else
      op->c = chance(r, 3) ? 1 : 0;
    op->msg = gen_msg(r);
    p = rnd(r, 100);
    op->d = p < 50 ? 0 : p < 97 ? (uint8_t)(1 + rnd(r, 6)) : 7;
    /* Speculation wants slow tasks: successes mostly of the youngest attempts, so the old
     * ones keep running past the median. */
    /* Exclusion wants counted failures. */
    if (r->cfg.exclude_on_failure && op->a == TL_TASK_FINISHED && chance(r, 25)) {
      op->a = TL_TASK_FAILED;
      op->b = TL_END_EXCEPTION;
      op->c = 0;
    }
    if (spec && op->a == TL_TASK_FINISHED && op->tid < 128 && chance(r, 60))
      op->tid = (uint8_t)(112 + rnd(r, 16));
    /* And races: one of two copies in flight reports, or the loser after its kill. */
    if (spec) {
      p = rnd(r, 100);
      uint8_t sel;
      if (p < 30 && pick_indexed(r, 1, &sel)) {
        op->tid = sel;
        p = rnd(r, 100);
        op->a = p < 45 ? TL_TASK_FINISHED : p < 65 ? TL_TASK_FAILED : p < 85 ? TL_TASK_KILLED : 0;
      } else if (p < 60 && pick_indexed(r, 2, &sel)) {
        op->tid = sel;
        op->a = chance(r, 70) ? TL_TASK_FINISHED : TL_TASK_FAILED;
      }
    }
    break;
  }
  case TLO_UPDATES:
    gen_updates(r, op);
    break;
  case TLO_CLOCK: {
    static const uint8_t steps[] = {0, 1, 2, 3, 4, 4, 4, 5, 5, 6, 7, 8, 9, 10, 11, 13};
    static const uint8_t small[] = {1, 2, 2, 3, 12, 12, 12, 12};
    if (spec && chance(r, 60))
      op->a = small[rnd(r, sizeof small)];
    else
      op->a = chance(r, 2) ? 14 : steps[rnd(r, sizeof steps)];
    break;
  }
  case TLO_INSPECT:
    op->exec = gen_exec(r, false);
    op->a = (uint8_t)rnd(r, 32);
    op->b = (uint8_t)rnd(r, 4);
    break;
  case TLO_SNAPSHOT:
    for (int bit = 0; bit < 6; bit++)
      if (chance(r, 8))
        op->flags |= (uint8_t)(1u << bit);
    op->a = (uint8_t)rnd(r, 256);
    op->b = (uint8_t)rnd(r, 256);
    op->c = (uint8_t)rnd(r, 256);
    break;
  case TLO_RECONCILE: {
    uint8_t cand[NSLOTS * 3];
    size_t n = 0;
    for (unsigned sl = 0; sl < NSLOTS; sl++)
      for (unsigned back = 0; back < 3 && back < r->ngen[sl]; back++)
        if (r->ex[sl][r->ngen[sl] - 1 - back].state == MX_RECOVERING)
          cand[n++] = (uint8_t)(sl | back << 3);
    op->exec = n > 0 && chance(r, 92) ? cand[rnd(r, (uint32_t)n)] : gen_exec(r, false);
    op->a = (uint8_t)rnd(r, 256);
    op->b = (uint8_t)(chance(r, 60) ? rnd(r, 4) : 4 + rnd(r, 4)) | (uint8_t)(rnd(r, 32) << 3);
    op->c = (uint8_t)rnd(r, 256);
    op->d = (uint8_t)rnd(r, 256);
    if (chance(r, 4))
      op->flags = (uint8_t)(1u << rnd(r, 4));
    if (chance(r, 3))
      op->flags |= 16;
    break;
  }
  case TLO_HEARTBEAT_ALL:
  case TLO_OFFER_ALL:
  case TLO_TICK:
  case TLO_NKINDS:
    break;
  }
  if (chance(r, 20)) {
    for (int bit = 0; bit < 8; bit++)
      if (chance(r, 30))
        op->reent |= (uint8_t)(1u << bit);
    op->re_arg = (uint8_t)rnd(r, 256);
  }
}

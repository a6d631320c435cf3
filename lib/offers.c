/* Offer rounds: which pending task runs on which offered executor.
 *
 * The round, under the scheduler's lock:
 *
 * Usable offers. An offer counts only if it names an ALIVE executor; others (unknown, pending
 * loss, decommissioning, removed) are counted in rejected_offers and launch nothing, and those
 * of executors excluded for the application in excluded_offers. An offer's cores are capped by
 * the ledger's own free-core count, and every launch checks that count again, so even
 * duplicate or stale offers can never launch past an executor's cores. The round is full when
 * it names every ALIVE executor (delay scheduling's timer rule), and it stamps the places of
 * the offered executors and their hosts (locality.c).
 *
 * Preparation. The round cannot launch more than min(cap, pending and speculatable tasks,
 * offered cores) tasks.
 * That many spare attempt records are made sure of (ledger.c: those missing are allocated), and
 * room for that many task_started events and entries of attempts_by_tid is reserved, before
 * anything visible changes. If any of that fails the round undoes it and returns TL_ENOMEM
 * having launched nothing. Each launch takes a spare record (its tid the next one in order);
 * records allocated for the round that it does not use stay spare while tasks still wait (the
 * next round will want them: a round whose tasks all wait for locality allocates nothing),
 * within the spares' bound, and are freed once the scheduler is idle.
 *
 * Launching. Task sets are walked in queue order (pools in FAIR order; in a pool FIFO or FAIR;
 * only task sets with something to launch are in the queue). Each fills the offers in passes,
 * one task per offer per pass, so a stage spreads over executors, level by level for one with
 * preferred locations (most local first, no farther than delay scheduling allows), until it
 * has nothing pending or speculatable or a pass launches nothing; then the next task set gets
 * what is left. An offer takes a regular pending index first and a speculative copy only when
 * none may run there. A task set held by its locality wait that none of the offers can serve
 * only records that it turned them down. Then exclusion's unschedulable check finds the task
 * sets no executor may run, and the round aborts them (exclude.c decides, taskset.c aborts).
 * While executors recover after a restore, the restored task sets take no turn (the hold).
 */
#include "internal.h"
#include "placement.h"
#include "resource.h"

#define STACK_SLOTS 16 /* offers and launches a round handles without a temporary allocation */

typedef struct offer_slot {
  tl__executor *ex; /* an ALIVE executor */
  size_t offer;     /* the first offer naming it: what its launches name (tl_launch.offer) */
  uint32_t cores;   /* what is left of this offer */
  uint32_t profile; /* its executor's resource profile: a pass compares it for every slot, and
                       the slot is hot where the executor's record is not */
} offer_slot;

/* Launches attempt a of index i on ex; speculative: a second copy of a slow index. With
 * speculation the task set remembers the host (tried, prepared with the round) and the copies. */
static void launch(struct tl_scheduler *s, tl__taskset *ts, tl__executor *ex, tl__attempt *a,
                   uint32_t i, bool speculative, tl_locality level, tl__tried *tried,
                   tl__grants *grants) {
  tl__index *ix = &ts->idx[i];
  if (grants != NULL) { /* the addresses, booked with the cores */
    tl__res_grant(s, ex, ts->req, grants);
    a->grants = grants;
  }
  a->index = i;
  a->attempt = ix->attempts++;
  a->speculative = speculative;
  a->killed_by_other = 0;
  a->end_held = 0;
  a->sibling = NULL;
  if (ts->first != NULL) {
    if (ix->copies_running == 0) {
      ts->first[i] = a;
    } else { /* a speculative copy: the two know each other, to kill the loser */
      a->sibling = ts->first[i];
      a->sibling->sibling = a;
    }
    tried->names = tl__str_ref(ex->names);
    tried->next = ts->tried[i];
    ts->tried[i] = tried;
  }
  ix->copies_running++;
  a->state = TL__LAUNCHING;
  a->frozen = 0;
  a->locality = (uint8_t)level;
  a->launch_time = s->last_now;
  a->executor = ex;
  a->taskset = ts;
  tl__attempt_link(s, a);
  tl__list_insert_tail(&ts->running, &a->on_taskset);
  ts->nrunning++;
  ts->pool->running++; /* its place in a FAIR queue moves at the end of the round */
}

/* A launch names the offer whose slot it took: the executor's slot of this round (offer_slot,
 * set for every executor that got one), so no attempt record has to remember it. */
static void describe_launch(const tl__attempt *a, const offer_slot *slots, const tl_offer *offers,
                            tl_launch *l) {
  const tl__taskset *ts = a->taskset;
  const tl__executor *ex = a->executor;
  size_t offer = slots[ex->offer_slot].offer;
  l->tid = a->tid;
  l->taskset = ts->id;
  l->stage_id = ts->stage_id;
  l->stage_attempt = ts->stage_attempt;
  l->index = a->index;
  l->attempt = a->attempt;
  l->cpus = ts->cpus;
  l->offer = offer;
  l->executor_id = offers[offer].executor_id; /* the caller's string: no copy per launch */
  l->executor_ud = ex->ud;
  l->locality = (tl_locality)a->locality;
  l->speculative = a->speculative;
  l->payload = ts->payload;
}

/* What a round has to work with, and what it has done so far. */
typedef struct round_state {
  offer_slot *slots;
  size_t nslots;
  const tl_offer *offers; /* the caller's, for the launches' executor ids */
  tl_launch *out;         /* the caller's: out[k] describes the k-th launch */
  tl__tried **tried;      /* with speculation, a host record prepared per launch */
  size_t tried_used;      /* of which consumed */
  size_t used;            /* launches made */
  size_t most;            /* the launch budget */
  uint64_t left;          /* cores the slots still have */
  tl__taskset *launched;  /* the task sets it launched in, through launched_next */
  bool full;              /* the offers name every ALIVE executor, excluded ones included
                             (Spark's isAllFreeResources) */
  tl__grants **gpre;      /* grant blocks prepared for launches that ask for resources */
  size_t gprepared;       /* their number */
  size_t gused;           /* of which consumed */
  tl_grant *gout;         /* the caller's array for the launches' grants, or NULL */
  size_t gcap;            /* its entries */
  size_t gn;              /* of which written */
} round_state;

/* Whether launch l's grants still fit the caller's array (and one more block is prepared). */
static bool grants_room(const round_state *r, uint32_t ngrants, size_t tasks) {
  return r->gused + tasks <= r->gprepared &&
         (r->gout == NULL || r->gcap - r->gn >= (size_t)ngrants * tasks);
}

/* A barrier task set launches only when every one of its tasks fits in what is left of the
 * round: its slots (one per executor, so their cores are all really free) of its profile with
 * the addresses its tasks ask for, its launch budget and, for its grants, the blocks prepared
 * and the caller's array. Round-robin placement then places all of them: each launch on a slot
 * takes exactly one task's worth of its cores and of each resource it asks for. */
static bool barrier_fits(const tl__taskset *ts, const round_state *r) {
  if (ts->npending != ts->ntasks || r->most - r->used < ts->npending)
    return false;
  if (ts->req != NULL && !grants_room(r, ts->req->ngrants, ts->npending))
    return false;
  uint64_t fit = 0;
  for (size_t i = 0; i < r->nslots && fit < ts->npending; i++) {
    const offer_slot *slot = &r->slots[i];
    if (slot->profile == ts->profile)
      fit += tl__res_fit_count(slot->ex, ts->req, slot->cores / ts->cpus);
  }
  return fit >= ts->npending;
}

/* What one task set's turn has done so far (delay scheduling's bookkeeping). */
typedef struct turn_state {
  bool rejects; /* an offer of the TL_ANY pass launched nothing while tasks were pending */
  int best;     /* the most local level launched, TL_ANY + 1 before the first launch */
} turn_state;

static bool has_work(const tl__taskset *ts) { return ts->npending + ts->nspeculatable > 0; }

/* One pass of a task set over the slots at pass level max: at most one task per slot. Regular
 * pending tasks first, then speculative copies (never on a host already tried); each at the
 * most local level the task set's delay scheduling allows, no farther than max (Spark's
 * resourceOfferSingleTaskSet and TaskSetManager.resourceOffer). Returns the launches. */
static size_t pass(struct tl_scheduler *s, round_state *r, tl__taskset *ts, tl_locality max,
                   turn_state *t) {
  size_t launched = 0;
  for (size_t i = 0; i < r->nslots && r->used < r->most && has_work(ts); i++) {
    offer_slot *slot = &r->slots[i];
    if (slot->cores < ts->cpus) /* a slot's cores are never more than its executor has free */
      continue;
    /* Another profile's executor, or not the addresses a task needs: no task here, and no
     * delay rejection (Spark's resourcesMeetTaskRequirements comes before the task set). */
    if (slot->profile != ts->profile || !tl__res_fits(slot->ex, ts->req))
      continue;
    if (ts->req != NULL && !grants_room(r, ts->req->ngrants, 1)) {
      r->most = r->used; /* the caller's array is full: the round ends as at cap */
      break;
    }
    /* An executor or host excluded for the whole task set is no delay rejection (Spark's
     * resourceOffer returns no task and no reject). */
    if (s->cfg.exclude_on_failure && tl__exclude_offer_blocked(s, ts, slot->ex))
      continue;
    if (ts->placement != NULL && tl__placement_blocked(ts, slot->ex)) /* hard placement */
      continue;
    uint32_t index;
    tl_locality level = TL_NO_PREF, allowed = max;
    bool speculative = false, found;
    if (ts->loc == NULL) {
      /* The topmost pending index (with exclusion, the topmost not excluded on this executor). */
      found = ts->npending > 0 && tl__taskset_take_unblocked(s, ts, slot->ex, &index);
    } else {
      /* A barrier task set never waits: all its tasks launch in the round they fit in. */
      if (max != TL_NO_PREF && !ts->barrier) {
        tl_locality now = tl__locality_allowed(s, ts);
        if (now < allowed)
          allowed = now;
      }
      found =
          tl__locality_pick(s, ts, slot->ex, allowed,
                            ts->exclude != NULL ? tl__exclude_task_blocked : NULL, &index, &level);
      if (found) {
        tl__taskset_take_pending(s, ts, index);
      } else if (allowed == TL_ANY) { /* nothing preferred here: the topmost that may run */
        level = TL_ANY;
        found = ts->npending > 0 && tl__taskset_take_unblocked(s, ts, slot->ex, &index);
      }
    }
    if (!found) {
      speculative = tl__taskset_take_speculative(s, ts, slot->ex, allowed, &index, &level);
      if (!speculative) {
        if (max == TL_ANY)
          t->rejects = true; /* has_work: something is pending that this offer did not get */
        continue;
      }
    }
    tl__tried *tried = NULL;
    if (ts->tried != NULL)
      tried = r->tried[r->tried_used++];
    tl__attempt *a = tl__attempt_take(s); /* a spare the round made sure of */
    a->tid = s->next_tid + r->used;
    tl__grants *grants = ts->req != NULL ? r->gpre[r->gused++] : NULL;
    launch(s, ts, slot->ex, a, index, speculative, level, tried, grants);
    /* Described and announced while the record is hot: a round of 1,600 launches does not
     * read 1,600 records again (the round cannot fail or be undone from here on). */
    tl_launch *l = &r->out[r->used];
    describe_launch(a, r->slots, r->offers, l);
    l->ngrants = grants != NULL ? grants->n : 0;
    l->grants = NULL;
    if (grants != NULL && r->gout != NULL) {
      l->grants = r->gout + r->gn;
      memcpy(r->gout + r->gn, grants->g, grants->n * sizeof *grants->g);
      r->gn += grants->n;
    }
    if (s->cb.task_started != NULL) /* an event nobody listens to is not made */
      tl__event_task_started(s, a);
    if ((int)level < t->best)
      t->best = (int)level;
    slot->cores -= ts->cpus;
    r->left -= ts->cpus;
    r->used++;
    launched++;
  }
  return launched;
}

/* Whether some slot could take one task of ts: its cores, its profile and the addresses it
 * asks for (a slot that cannot is no delay rejection, as in pass). The first such slot ends the
 * walk, so a round whose first slot fits costs O(1), as one with no core left does. */
static bool any_slot_fits(const round_state *r, const tl__taskset *ts) {
  if (r->left < ts->cpus)
    return false;
  for (size_t i = 0; i < r->nslots; i++) {
    const offer_slot *slot = &r->slots[i];
    if (slot->cores >= ts->cpus && slot->profile == ts->profile && tl__res_fits(slot->ex, ts->req))
      return true;
  }
  return false;
}

/* A task set held by its locality wait that cannot use this round (tl__locality_dormant), and
 * nothing else that could launch: no speculative copy waiting, no exclusion records and no
 * hard placement (which turn offers away before delay scheduling looks). Its turn costs O(its
 * places), not O(levels x offers): a round in which many task sets wait costs what its offers
 * cost. */
static bool held(struct tl_scheduler *s, const round_state *r, const tl__taskset *ts) {
  return ts->loc != NULL && !ts->barrier && ts->nspeculatable == 0 && ts->exclude == NULL &&
         ts->placement == NULL && tl__locality_dormant(s, ts, r->nslots);
}

/* A task set's turn: for each of its locality levels, most local first, it fills the slots in
 * passes until a pass launches nothing, it has nothing left to launch, or the budget is spent
 * (a task set without preferences has one level, TL_NO_PREF). Then delay scheduling's timer
 * rule (SPARK-18886). */
static void take_turn(struct tl_scheduler *s, round_state *r, tl__taskset *ts) {
  if (ts->cpus > r->left)
    return;
  /* The recovery hold: a recovering executor may run what the image shows pending (launched
   * after it), and reports it when it reconciles (docs/snapshot.md "Recovery"). */
  if (ts->restored && s->restore_hold)
    return;
  if (ts->barrier && !barrier_fits(ts, r))
    return; /* all of its tasks in this round, or none */
  if (held(s, r, ts)) {
    /* Its passes would launch nothing, and its TL_ANY pass would turn down every slot that
     * fits a task: the rejection is all the turn does. */
    if (any_slot_fits(r, ts))
      tl__locality_rejected(ts);
    return;
  }
  turn_state t = {false, TL_ANY + 1};
  unsigned levels = tl__locality_levels(ts);
  size_t before = r->used;
  for (; levels != 0; levels &= levels - 1) { /* each valid level, most local first */
    unsigned l = (unsigned)__builtin_ctz(levels);
    while (has_work(ts) && r->used < r->most && r->left >= ts->cpus &&
           pass(s, r, ts, (tl_locality)l, &t) > 0) {
    }
    if (!has_work(ts) || r->used == r->most || r->left < ts->cpus)
      break;
  }
  if (r->used > before && ts->offer_round != s->offer_round) {
    ts->offer_round = s->offer_round;
    ts->launched_next = r->launched;
    r->launched = ts;
  }
  if (ts->loc != NULL && !ts->barrier)
    tl__locality_after_turn(s, ts, t.rejects, t.best, r->full);
}

/* Gives back the grant blocks prepared from..to that no launch took: those below fresh came
 * from the spares and go back there (undo: exactly as they were), the others were allocated by
 * this round; or, after a round that went through, as any block whose last reference is
 * dropped. */
static void drop_grants(struct tl_scheduler *s, tl__grants **gpre, size_t from, size_t to,
                        size_t fresh, bool undo) {
  for (size_t k = from; k < to; k++) {
    if (k >= fresh)
      tl__free(s, gpre[k], sizeof *gpre[k]);
    else if (undo)
      tl__grants_unalloc(s, gpre[k]);
    else
      tl__grants_unref(s, gpre[k]);
  }
}

int tl__resource_offers(struct tl_scheduler *s, const tl_offer *offers, size_t noffers,
                        const size_t *lens, tl_launch *out, size_t cap, size_t *nout,
                        tl_grant *grants, size_t gcap, size_t *ngrants) {
  offer_slot slots_on_stack[STACK_SLOTS], *slots = slots_on_stack;
  tl__grants *gpre_on_stack[STACK_SLOTS], **gpre = gpre_on_stack;
  size_t gmost = 0, gprepared = 0, gspared = 0; /* grant blocks: room, prepared, of spares */
  tl__pool *order_on_stack[STACK_SLOTS], **order = order_on_stack;
  tl__tried *tried_on_stack[STACK_SLOTS], **tried = tried_on_stack;
  size_t ntried = 0;                   /* host records prepared (speculation) */
  size_t npools_allocated = s->npools; /* pools cannot be added during the round */
  size_t nslots = 0, fresh = 0, used = 0, named = 0;
  uint64_t rejected = 0, excluded = 0, offered = 0;
  int err = TL_ENOMEM;

  s->offer_round++; /* marks executors and task sets this round touches */
  if (noffers > STACK_SLOTS && (slots = tl__malloc(s, noffers * sizeof *slots)) == NULL)
    return TL_ENOMEM;
  for (size_t i = 0; i < noffers; i++) {
    const char *id = offers[i].executor_id;
    tl__executor *ex = tl__executor_find_len(s, id, lens != NULL ? lens[i] : strlen(id));
    if (ex == NULL || ex->state != TL_EXECUTOR_ALIVE) {
      rejected++;
      continue;
    }
    if (ex->offer_round != s->offer_round)
      named++; /* a distinct ALIVE executor, excluded or not: for the full-round test */
    if (tl__exclude_app_blocked(ex)) { /* excluded for the application: Spark filters it */
      ex->offer_round = s->offer_round;
      ex->offer_slot = TL__NONE;
      excluded++;
      continue;
    }
    if (ex->offer_round == s->offer_round) {
      /* A second offer for the same executor in this round: one slot, the cores added up to
       * what the ledger says is free, so a slot's cores are always really there. */
      offer_slot *slot = &slots[ex->offer_slot];
      uint32_t room = ex->free_cores - slot->cores;
      uint32_t more = offers[i].cores < room ? offers[i].cores : room;
      slot->cores += more;
      offered += more;
      continue;
    }
    uint32_t cores = offers[i].cores < ex->free_cores ? offers[i].cores : ex->free_cores;
    ex->offer_round = s->offer_round;
    ex->offer_slot = (uint32_t)nslots;
    slots[nslots].ex = ex;
    slots[nslots].offer = i;
    slots[nslots].cores = cores;
    slots[nslots].profile = ex->profile;
    nslots++;
    offered += cores;
  }

  /* The places of the offered executors and of their hosts: what held task sets look for. */
  for (size_t i = 0; i < nslots; i++)
    tl__locality_offered(s, slots[i].ex);

  size_t most = cap;
  if (most > s->npending_tasks + s->nspeculatable)
    most = s->npending_tasks + s->nspeculatable;
  if (most > offered)
    most = (size_t)offered;
  if (s->npools > STACK_SLOTS && (order = tl__malloc(s, s->npools * sizeof *order)) == NULL)
    goto done;
  /* The round's records: spares, made sure of. */
  if (tl__attempts_prepare(s, most, &fresh) != TL_OK)
    goto done;
  if (s->cfg.speculation) {
    if (most > STACK_SLOTS && (tried = tl__malloc(s, most * sizeof *tried)) == NULL)
      goto undo;
    for (; ntried < most; ntried++)
      if ((tried[ntried] = tl__malloc(s, sizeof **tried)) == NULL)
        goto undo;
  }
  /* A grant block for each launch that may ask for resources (none without such task sets). */
  if (s->nres_tasksets > 0) {
    gmost = tl__res_launchable(s);
    if (gmost > most)
      gmost = most;
    if (gmost > STACK_SLOTS) {
      tl__grants **heap = tl__malloc(s, gmost * sizeof *gpre);
      if (heap == NULL)
        goto undo;
      gpre = heap;
    }
    for (; gprepared < gmost; gprepared++) {
      if (s->spare_grants != NULL)
        gspared++; /* spares come first */
      if ((gpre[gprepared] = tl__grants_alloc(s)) == NULL)
        goto undo;
    }
  }
  /* Last, so that a round that fails never leaves attempts_by_tid grown. */
  /* A task_started per launch, and the aborts of the task sets exclusion finds unschedulable. */
  if (tl__events_reserve(s, most + TL__TASKSET_ABORT_EVENTS * tl__exclude_abort_candidates(s)) !=
          TL_OK ||
      tl__attempts_reserve(s, most, s->next_tid, s->next_tid + most - 1) != TL_OK)
    goto undo;

  round_state r = {slots,
                   nslots,
                   offers,
                   out,
                   tried,
                   0,
                   0,
                   most,
                   offered,
                   NULL,
                   named == s->nalive,
                   gpre,
                   gprepared,
                   0,
                   grants,
                   grants != NULL ? gcap : 0,
                   0};
  size_t npools = tl__pools_in_order(s, order);
  for (size_t k = 0; k < npools && r.used < r.most && r.left > 0; k++) {
    for (tl__taskset *ts = order[k]->queue[0], *next; ts != NULL && r.used < r.most && r.left > 0;
         ts = next) {
      next = ts->queue_next[0]; /* ts may leave the queue below; the others stay where they are */
      take_turn(s, &r, ts);
    }
  }
  /* A FAIR pool's order follows running attempts; it moves once the round is over. */
  for (tl__taskset *ts = r.launched; ts != NULL; ts = ts->launched_next)
    tl__queue_replace(ts);
  used = r.used;

  tl__attempts_round_end(s, fresh, used); /* what is not used stays spare while work waits */
  drop_grants(s, gpre, r.gused, gprepared, gspared, false);
  if (ngrants != NULL)
    *ngrants = r.gn;
  tl__attempts_unreserve(s);
  for (size_t k = r.tried_used; k < ntried; k++)
    tl__free(s, tried[k], sizeof *tried[k]);
  s->next_tid += used;
  *nout = used;
  s->totals.launched += used;
  s->totals.rejected_offers += rejected;
  s->totals.excluded_offers += excluded;
  tl__exclude_after_round(s, used);
  for (tl__exclude_abort ab; tl__exclude_take_abort(s, &ab);) /* may release ab.ts */
    tl__taskset_abort(s, ab.ts, TL__FAIL_UNSCHEDULABLE, ab.index, 0, ab.msg, ab.static_msg);
  if (s->nres_tasksets > 0) /* after the aborts: a zombie waits for nothing */
    tl__res_after_round(s);
  if (s->nplace_tasksets > 0) /* and no task set placed where nothing lives waits silently */
    tl__placement_after_round(s);
  err = TL_OK;
  goto done;

undo:
  tl__attempts_unprepare(s, fresh, 0);
  drop_grants(s, gpre, 0, gprepared, gspared, true);
  tl__attempts_unreserve(s);
  for (size_t k = 0; k < ntried; k++)
    tl__free(s, tried[k], sizeof *tried[k]);
done:
  if (gpre != gpre_on_stack)
    tl__free(s, gpre, gmost * sizeof *gpre);
  if (tried != tried_on_stack)
    tl__free(s, tried, most * sizeof *tried);
  if (order != order_on_stack)
    tl__free(s, order, npools_allocated * sizeof *order);
  if (slots != slots_on_stack)
    tl__free(s, slots, noffers * sizeof *slots);
  return err;
}

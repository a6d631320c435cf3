/* Comparing the library with the model: tl_check, every counter of tl_stats, every executor,
 * task set and pool, between operations and from inside each callback.
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Comparing the library with the model.
 * ------------------------------------------------------------------------------------------- */

void tlo_check_ledger(tlo_run *r) {
  char why[512] = "";
  int rc = tl_check(r->s, why, sizeof why);
  if (rc != TL_OK)
    tlo_fail(r, "tl_check: %s: %s", tl_err_name(rc), why);
}

void tlo_cmp_exec(tlo_run *r, mexec *x) {
  tl_executor_status st;
  int rc = tl_executor_get(r->s, x->id, &st);
  int want = x->state == MX_NONE ? TL_ENOENT : x->state == MX_REMOVED ? TL_EGONE : TL_OK;
  if (rc != want) {
    tlo_fail(r, "tl_executor_get(%s) returned %s, the model expects %s", x->id, tl_err_name(rc),
             tl_err_name(want));
    return;
  }
  if (rc != TL_OK) {
    if (x->state == MX_NONE)
      x->none_checked = true;
    return;
  }
  tl_executor_state ws = x->state == MX_ALIVE        ? TL_EXECUTOR_ALIVE
                         : x->state == MX_DECOM      ? TL_EXECUTOR_DECOMMISSIONING
                         : x->state == MX_RECOVERING ? TL_EXECUTOR_RECOVERING
                                                     : TL_EXECUTOR_PENDING_LOSS;
  CMP_OF(r, "executor", x->id, "state", st.state, ws);
  CMP_OF(r, "executor", x->id, "cores", st.cores, x->cores);
  CMP_OF(r, "executor", x->id, "free_cores", st.free_cores, x->free_cores);
  CMP_OF(r, "executor", x->id, "running", st.running, x->nrunning);
  CMP_OF(r, "executor", x->id, "frozen", st.frozen, x->nfrozen);
  if (strcmp(st.host, tlo_host_names[x->host]) != 0)
    tlo_fail(r, "executor %s host is %s, the model says %s", x->id, st.host,
             tlo_host_names[x->host]);
  if (st.ud != x)
    tlo_fail(r, "executor %s ud is not the record it was registered with", x->id);
}

void tlo_cmp_ts(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  tl_taskset_status st;
  int rc = tl_taskset_get(r->s, t->id, &st);
  int want = t->released ? TL_ENOENT : TL_OK;
  if (rc != want) {
    tlo_fail(r, "tl_taskset_get(%" PRIu64 ") returned %s, the model expects %s", t->id,
             tl_err_name(rc), tl_err_name(want));
    return;
  }
  if (rc != TL_OK) {
    t->gone_checked = true;
    return;
  }
#define CMP_TS(field, value)                                                                       \
  do {                                                                                             \
    uint64_t got_ = (uint64_t)(st.field), want_ = (uint64_t)(value);                               \
    if (got_ != want_)                                                                             \
      tlo_fail(r, "task set %" PRIu64 " %s is %" PRIu64 ", the model says %" PRIu64, t->id,        \
               #field, got_, want_);                                                               \
  } while (0)
  CMP_TS(info.id, t->id);
  CMP_TS(info.stage_id, t->stage);
  CMP_TS(info.stage_attempt, t->sattempt);
  CMP_TS(info.ntasks, t->ntasks);
  CMP_TS(zombie, t->zombie);
  CMP_TS(failed, t->failed);
  CMP_TS(running, t->nrunning);
  CMP_TS(frozen, t->nfrozen);
  CMP_TS(pending, t->zombie ? 0 : t->npend);
  tlo_pol_cmp_ts(r, t, &st);
  tlo_pl_cmp_ts(r, t, &st);
  CMP_TS(succeeded, t->nsucceeded);
  CMP_TS(cpus_per_task, t->cpus);
  CMP_TS(locality_levels, t->has_loc ? t->levels : (1u << TL_NO_PREF) | (1u << TL_ANY));
  CMP_TS(locality, t->has_loc ? t->level : TL_NO_PREF);
#undef CMP_TS
}

/* tl_pool_get of one of tlo_pool_names against the model. */
static void cmp_pool(tlo_run *r, unsigned p) {
  const char *name = tlo_pool_names[p];
  tl_pool_status st;
  int rc = tl_pool_get(r->s, name, &st);
  bool valid = name != NULL && name[0] != '\0' && strlen(name) < 256;
  int want = !valid ? TL_EINVAL : r->pools[p].exists ? TL_OK : TL_ENOENT;
  if (rc != want) {
    tlo_fail(r, "tl_pool_get(%.12s) returned %s, the model expects %s", name ? name : "(null)",
             tl_err_name(rc), tl_err_name(want));
    return;
  }
  if (rc != TL_OK)
    return;
  uint32_t running = tlo_pool_running(r, p), tasksets = 0;
  for (uint32_t k = 0; k < r->nts; k++)
    tasksets += !r->ts[k].released && r->ts[k].pool == p;
  const mpool *m = &r->pools[p];
  const char *parent = m->parent >= 0 ? tlo_pool_names[m->parent] : "";
  CMP_OF(r, "pool", name, "depth", st.depth, m->depth);
  CMP_OF(r, "pool", name, "children", st.children, m->nchildren);
  if (strcmp(st.parent, parent) != 0)
    tlo_fail(r, "pool %.12s: parent %.12s, the model says %.12s", name, st.parent, parent);
  CMP_OF(r, "pool", name, "mode", st.mode, r->pools[p].mode);
  CMP_OF(r, "pool", name, "weight", st.weight, r->pools[p].weight);
  CMP_OF(r, "pool", name, "min_share", st.min_share, r->pools[p].min_share);
  CMP_OF(r, "pool", name, "running", st.running, running);
  CMP_OF(r, "pool", name, "tasksets", st.tasksets, tasksets);
}

/* tl_check and every counter; between operations (top) also every executor and task set that
 * exists or has not been seen gone since it went. */
/* tl_executor_list against the model: every executor but tombstones, in registration order. */
static void cmp_list(tlo_run *r) {
  mexec *want[NSLOTS * MAXGEN];
  size_t n = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      mexec *x = &r->ex[s][g];
      if (x->state == MX_NONE || x->state == MX_REMOVED)
        continue;
      size_t pos = n++;
      while (pos > 0 && want[pos - 1]->reg_seq > x->reg_seq) {
        want[pos] = want[pos - 1];
        pos--;
      }
      want[pos] = x;
    }
  static tl_executor_info got[NSLOTS * MAXGEN + 1];
  size_t count = SIZE_MAX;
  int rc = tl_executor_list(r->s, got, n + 1, &count);
  if (rc != TL_OK || count != n) {
    tlo_fail(r, "tl_executor_list returned %s with %zu executors, the model says %zu",
             tl_err_name(rc), count, n);
    return;
  }
  for (size_t i = 0; i < n && !r->failed; i++) {
    const mexec *x = want[i];
    const tl_executor_info *e = &got[i];
    if (strcmp(e->id, x->id) != 0 || strcmp(e->host, tlo_host_names[x->host]) != 0) {
      tlo_fail(r, "tl_executor_list[%zu] is %s on %s, the model says %s on %s", i, e->id, e->host,
               x->id, tlo_host_names[x->host]);
      return;
    }
    tl_executor_state ws = x->state == MX_ALIVE        ? TL_EXECUTOR_ALIVE
                           : x->state == MX_DECOM      ? TL_EXECUTOR_DECOMMISSIONING
                           : x->state == MX_RECOVERING ? TL_EXECUTOR_RECOVERING
                                                       : TL_EXECUTOR_PENDING_LOSS;
    CMP_OF(r, "listed executor", x->id, "state", e->state, ws);
    CMP_OF(r, "listed executor", x->id, "cores", e->cores, x->cores);
    CMP_OF(r, "listed executor", x->id, "free_cores", e->free_cores, x->free_cores);
    CMP_OF(r, "listed executor", x->id, "running", e->running, x->nrunning);
    CMP_OF(r, "listed executor", x->id, "frozen", e->frozen, x->nfrozen);
    if (e->ud != x)
      tlo_fail(r, "listed executor %s: ud is not the record it was registered with", x->id);
    /* Its frozen attempts, in launch order (tl_executor_frozen). */
    tl_tid *frozen, got_tids[256]; /* more than any executor's cores */
    size_t nfrozen = tlo_inflight_where(r, &frozen, x, 1, -1), ngot = SIZE_MAX;
    size_t cap = sizeof got_tids / sizeof got_tids[0];
    rc = tl_executor_frozen(r->s, x->id, got_tids, cap, &ngot);
    if (rc != TL_OK || ngot != nfrozen) {
      tlo_fail(r, "tl_executor_frozen(%s) returned %s with %zu tids, the model says %zu", x->id,
               tl_err_name(rc), ngot, nfrozen);
    } else {
      for (size_t k = 0; k < nfrozen && k < cap && !r->failed; k++)
        if (got_tids[k] != frozen[k])
          tlo_fail(r, "tl_executor_frozen(%s)[%zu] is tid %" PRIu64 ", the model says %" PRIu64,
                   x->id, k, got_tids[k], frozen[k]);
    }
    free(frozen);
  }
}

/* tl_taskset_list against the model: every task set not released, in submission order. */
static void cmp_taskset_list(tlo_run *r) {
  static tl_taskset_status got[1024];
  size_t n = 0, count = SIZE_MAX;
  for (uint32_t k = 0; k < r->nts; k++)
    n += !r->ts[k].released;
  int rc = tl_taskset_list(r->s, got, sizeof got / sizeof got[0], &count);
  if (rc != TL_OK || count != n) {
    tlo_fail(r, "tl_taskset_list returned %s with %zu task sets, the model says %zu",
             tl_err_name(rc), count, n);
    return;
  }
  size_t i = 0;
  for (uint32_t k = 0; k < r->nts && i < sizeof got / sizeof got[0] && !r->failed; k++) {
    const mts *t = &r->ts[k];
    if (t->released)
      continue;
    if (got[i].info.id != t->id)
      tlo_fail(r, "tl_taskset_list[%zu] is task set %" PRIu64 ", the model says %" PRIu64, i,
               got[i].info.id, t->id);
    else if (got[i].running != t->nrunning || got[i].frozen != t->nfrozen)
      tlo_fail(r, "tl_taskset_list[%zu] (%" PRIu64 ") runs %u, %u frozen; the model says %u, %u", i,
               t->id, got[i].running, got[i].frozen, t->nrunning, t->nfrozen);
    i++;
  }
}

void tlo_compare_all(tlo_run *r, bool top) {
  if (r->failed || r->closing || r->s == NULL)
    return;
  tlo_check_ledger(r);
  tl_stats st;
  tl_stats_get(r->s, &st);
  size_t recovering = 0;
  size_t alive = 0, decom = 0, pending = 0, tombs = 0, hosts = 0, racks = 0, active = 0, zombie = 0,
         running = 0, frozen = 0, tasks_pending = 0, speculatable = 0, pools = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      const mexec *x = &r->ex[s][g];
      alive += x->state == MX_ALIVE;
      decom += x->state == MX_DECOM;
      pending += x->state == MX_PENDING;
      recovering += x->state == MX_RECOVERING;
      tombs += x->state == MX_REMOVED;
    }
  bool rack_used[2] = {false, false};
  for (unsigned h = 0; h < NHOSTS; h++) {
    if (r->host_live[h] == 0)
      continue;
    hosts++;
    if (r->host_rack[h] >= 0)
      rack_used[r->host_rack[h]] = true;
  }
  racks = (size_t)rack_used[0] + (size_t)rack_used[1];
  for (uint32_t k = 0; k < r->nts; k++) {
    const mts *t = &r->ts[k];
    if (t->released)
      continue;
    if (t->zombie)
      zombie++;
    else {
      active++;
      tasks_pending += t->npend;
    }
    speculatable += t->nspecs;
  }
  for (unsigned p = 0; p < NPOOLNAMES; p++)
    pools += r->pools[p].exists;
  for (size_t i = 0; i < r->ninflight; i++) {
    if (r->att[r->inflight[i] - 1].frozen)
      frozen++;
    else
      running++;
  }
  CMP(r, "stats.executors_alive", st.executors_alive, alive);
  CMP(r, "stats.executors_decommissioning", st.executors_decommissioning, decom);
  CMP(r, "stats.executors_pending_loss", st.executors_pending_loss, pending);
  CMP(r, "stats.executors_recovering", st.executors_recovering, recovering);
  CMP(r, "stats.tombstones", st.tombstones, tombs);
  CMP(r, "stats.hosts", st.hosts, hosts);
  CMP(r, "stats.racks", st.racks, racks);
  CMP(r, "stats.tasksets_active", st.tasksets_active, active);
  CMP(r, "stats.tasksets_zombie", st.tasksets_zombie, zombie);
  CMP(r, "stats.attempts_running", st.attempts_running, running);
  CMP(r, "stats.attempts_frozen", st.attempts_frozen, frozen);
  CMP(r, "stats.tasks_pending", st.tasks_pending, tasks_pending);
  CMP(r, "stats.tasks_speculatable", st.tasks_speculatable, speculatable);
  CMP(r, "stats.pools", st.pools, pools);
  CMP(r, "stats.places", st.places, tlo_count_places(r));
  /* Inside a callback the event being delivered still counts as queued (it is not delivered
   * until its callback returns), as do the rest of its batch and what calls made since. */
  if (!r->demand || top)
    CMP(r, "stats.events_queued", st.events_queued, top ? 0 : r->qlen - r->qhead + 1);
  else if (st.events_queued < r->qlen - r->qhead + 1) /* and demand events the model does not
                                                        predict (ops_demand.c) */
    tlo_fail(r, "stats.events_queued is %zu, the model says at least %zu", st.events_queued,
             r->qlen - r->qhead + 1);
  CMP(r, "stats.launched", st.launched, r->launched);
  CMP(r, "stats.succeeded", st.succeeded, r->succeeded);
  CMP(r, "stats.failed", st.failed, r->failed_count);
  CMP(r, "stats.killed", st.killed, r->killed);
  CMP(r, "stats.stale_updates", st.stale_updates, r->stale);
  CMP(r, "stats.rejected_updates", st.rejected_updates, r->rejected_updates);
  CMP(r, "stats.rejected_offers", st.rejected_offers, r->rejected_offers);
  CMP(r, "stats.executors_lost", st.executors_lost, r->executors_lost);
  CMP(r, "stats.tasksets_released", st.tasksets_released, r->tasksets_released);
  CMP(r, "stats.pending_loss_timeouts", st.pending_loss_timeouts, r->pending_loss_timeouts);
  CMP(r, "stats.recovery_timeouts", st.recovery_timeouts, r->recovery_timeouts);
  CMP(r, "stats.reconciled", st.reconciled, r->reconciled);
  CMP(r, "stats.reconcile_lost", st.reconcile_lost, r->reconcile_lost);
  CMP(r, "stats.reconcile_unknown", st.reconcile_unknown, r->reconcile_unknown);
  CMP(r, "stats.reconcile_adopted", st.reconcile_adopted, r->reconcile_adopted);
  CMP(r, "tl_epoch", tl_epoch(r->s), r->epoch);
  size_t xexecs = 0, xnodes = 0, xsets = 0, xwaiting = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      xexecs += r->ex[s][g].xapp;
  for (unsigned h = 0; h < NHOSTS; h++)
    xnodes += r->node_excl[h];
  for (uint32_t k = 0; k < r->nts; k++) {
    xsets += !r->ts[k].released && r->ts[k].nxf > 0;
    xwaiting += !r->ts[k].released && r->ts[k].xdl;
    xwaiting += !r->ts[k].released && r->ts[k].res_wait; /* resources' own wait */
    xwaiting += !r->ts[k].released && r->ts[k].pl_wait;  /* and placement's */
  }
  CMP(r, "stats.tasksets_unplaceable", st.tasksets_unplaceable, tlo_pl_waiting(r));
  CMP(r, "stats.executors_excluded", st.executors_excluded, xexecs);
  CMP(r, "stats.nodes_excluded", st.nodes_excluded, xnodes);
  CMP(r, "stats.tasksets_with_failures", st.tasksets_with_failures, xsets);
  CMP(r, "stats.tasksets_unschedulable", st.tasksets_unschedulable, xwaiting);
  CMP(r, "stats.excluded_offers", st.excluded_offers, r->excluded_offers);
  CMP(r, "stats.tasksets_unschedulable_aborted", st.tasksets_unschedulable_aborted,
      r->unsched_aborted);
  if (!top)
    return;
  if (r->resources)
    tlo_res_compare(r);
  for (unsigned s = 0; s < NSLOTS && !r->failed; s++)
    for (uint32_t g = 0; g < r->ngen[s] && !r->failed; g++)
      if (r->ex[s][g].state != MX_NONE || !r->ex[s][g].none_checked)
        tlo_cmp_exec(r, &r->ex[s][g]);
  if (!r->failed)
    tlo_cmp_exec(r, &r->phantom[r->op_index % NSLOTS]);
  if (!r->failed)
    cmp_list(r);
  if (!r->failed)
    cmp_taskset_list(r);
  /* Every pool that exists; and one other name in turn (unknown: TL_ENOENT; invalid). */
  for (unsigned p = 0; p < NPOOLNAMES && !r->failed; p++)
    if (r->pools[p].exists || p == r->op_index % NPOOLNAMES)
      cmp_pool(r, p);
  for (uint32_t k = 0; k < r->nts && !r->failed; k++)
    if (!r->ts[k].gone_checked)
      tlo_cmp_ts(r, k);
}

/* From inside a callback: tl_check, the counters, and the task set and executor the event
 * names (-1, NULL: none), before the callback acts re-entrantly. */
void tlo_cb_check(tlo_run *r, int k, mexec *x) {
  tlo_compare_all(r, false);
  if (r->s == NULL) /* inside tl_scheduler_restore: the scheduler is not known yet */
    return;
  if (!r->failed && !r->closing && k >= 0)
    tlo_cmp_ts(r, (uint32_t)k);
  if (!r->failed && !r->closing && x != NULL)
    tlo_cmp_exec(r, x);
}

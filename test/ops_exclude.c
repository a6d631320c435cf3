/* The operation layer's model of exclude on failure: what a task set's counted failures exclude
 * (for an index, for the task set, for the application), and the deadlines that follow.
 */
#include "ops_internal.h"

#include <stdlib.h>

/* ---------------------------------------------------------------------------------------------
 * Exclude on failure (docs/api.md "Exclude on failure"), written from that page and Spark's
 * TaskSetExcludelist, HealthTracker and TaskSchedulerImpl: a task set's counted failures are
 * plain (executor, host, index) records, scanned; every "is it excluded" is recomputed from
 * them, except the application-level exclusions, which Spark decides once, when a task set
 * that succeeded finishes, and ends by time.
 * ------------------------------------------------------------------------------------------- */

bool tlo_xon(const tlo_run *r) { return r->cfg.exclude_on_failure; }

/* Failures of index i on executor x (isExecutorExcludedForTask's count). */
static uint32_t xf_on_exec(const mts *t, const mexec *x, uint32_t i) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++)
    if (t->xf[f].ex == x && t->xf[f].index == i)
      n += t->xf[f].count;
  return n;
}

/* Failures of index i on host h, whichever executor (nodeToExcludedTaskIndexes' count). */
static uint32_t xf_on_host(const mts *t, unsigned h, uint32_t i) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++)
    if (t->xf[f].host == h && t->xf[f].index == i)
      n += t->xf[f].count;
  return n;
}

/* Different indices that failed on executor x (numUniqueTasksWithFailures). */
static uint32_t xf_indices_of(const mts *t, const mexec *x) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++) {
    if (t->xf[f].ex != x)
      continue;
    uint32_t g = 0;
    while (g < f && !(t->xf[g].ex == x && t->xf[g].index == t->xf[f].index))
      g++;
    n += g == f;
  }
  return n;
}

static bool ts_exec_excluded(const tlo_run *r, const mts *t, const mexec *x) {
  return t->nxf > 0 && xf_indices_of(t, x) >= r->cfg.exclude_stage_max_failed_tasks_per_executor;
}

/* A node is excluded for the task set by the executors excluded for it that first failed
 * there. */
static bool ts_node_excluded(const tlo_run *r, const mts *t, unsigned h) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++) {
    uint32_t g = 0;
    while (g < f && t->xf[g].ex != t->xf[f].ex)
      g++;
    n += g == f && t->xf[f].host == h && ts_exec_excluded(r, t, t->xf[f].ex);
  }
  return t->nxf > 0 && n >= r->cfg.exclude_stage_max_failed_executors_per_node;
}

/* isExecutorExcludedForTaskSet || isNodeExcludedForTaskSet. */
bool tlo_offer_blocked(const tlo_run *r, const mts *t, const mexec *x) {
  return tlo_xon(r) && t->nxf > 0 && (ts_exec_excluded(r, t, x) || ts_node_excluded(r, t, x->host));
}

/* isTaskExcludedOnExecOrNode: x, and the node x is on now. */
bool tlo_task_blocked(const tlo_run *r, const mts *t, uint32_t i, const mexec *x) {
  if (!tlo_xon(r) || t->nxf == 0)
    return false;
  return xf_on_exec(t, x, i) >= r->cfg.exclude_max_task_attempts_per_executor ||
         xf_on_host(t, x->host, i) >= r->cfg.exclude_max_task_attempts_per_node;
}

/* HealthTracker.isExecutorExcluded || isNodeExcluded. */
bool tlo_app_blocked(const tlo_run *r, const mexec *x) {
  return tlo_xon(r) && (x->xapp || r->node_excl[x->host]);
}

/* updateExcludedForFailedTask: a failure that counts, at now, with its message. */
void tlo_xf_record(tlo_run *r, uint32_t k, const matt *a, const char *msg) {
  mts *t = &r->ts[k];
  mexec *x = a->ex;
  bool was_exec = ts_exec_excluded(r, t, x), was_node = ts_node_excluded(r, t, x->host);
  bool was_ie = tlo_task_blocked(r, t, a->index, x) &&
                xf_on_exec(t, x, a->index) >= r->cfg.exclude_max_task_attempts_per_executor;
  bool was_in =
      t->nxf > 0 && xf_on_host(t, x->host, a->index) >= r->cfg.exclude_max_task_attempts_per_node;
  uint32_t f = 0;
  while (f < t->nxf &&
         !(t->xf[f].ex == x && t->xf[f].host == x->host && t->xf[f].index == a->index))
    f++;
  if (f == t->nxf) {
    if (t->nxf == t->xfcap) {
      t->xfcap = t->xfcap ? 2 * t->xfcap : 8;
      t->xf = tlo_xrealloc(t->xf, t->xfcap * sizeof *t->xf);
    }
    if (t->nxf == 0)
      t->xseq = ++r->seq;
    t->xf[t->nxf++] = (mxf){x, x->host, a->index, 0, 0};
  }
  t->xf[f].count++;
  t->xf[f].last = r->now;
  free(t->xmsg);
  t->xmsg = tlo_dup_text(msg);
  r->f_x[TLO_XF_COUNTED]++;
  r->f_x[TLO_XF_INDEX_EXEC] +=
      !was_ie && xf_on_exec(t, x, a->index) >= r->cfg.exclude_max_task_attempts_per_executor;
  r->f_x[TLO_XF_INDEX_NODE] +=
      !was_in && xf_on_host(t, x->host, a->index) >= r->cfg.exclude_max_task_attempts_per_node;
  r->f_x[TLO_XF_TS_EXEC] += !was_exec && ts_exec_excluded(r, t, x);
  r->f_x[TLO_XF_TS_NODE] += !was_node && ts_node_excluded(r, t, x->host);
}

/* Every unschedulable deadline ends: something launched, or a new executor came. */
void tlo_clear_deadlines(tlo_run *r, int feature) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (r->ts[k].xdl) {
      r->ts[k].xdl = false;
      r->f_x[feature]++;
    }
}

/* HealthTracker.updateExcludedForSuccessfulTaskSet, when a task set whose every index
 * succeeded is released: each executor's failed indices join its application-level failures
 * (one each, expiring exclude_timeout_ns after the index's latest failure there); those expired
 * are dropped; enough of them exclude the executor (unless it is already), and enough excluded
 * executors on its node the node (unless it is already). An executor whose loss has begun keeps
 * no list: only this task set's failures count for it, and are then dropped. */
void tlo_xf_taskset_succeeded(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  uint64_t now = r->now, timeout = r->cfg.exclude_timeout_ns;
  for (uint32_t f = 0; f < t->nxf; f++) {
    mexec *x = t->xf[f].ex;
    uint32_t g = 0;
    while (g < f && t->xf[g].ex != x)
      g++;
    if (g < f) /* this executor was seen at its first record */
      continue;
    unsigned node = t->xf[f].host;
    bool gone = !tlo_live_state(x->state);
    if (gone)
      x->nappf = 0;
    for (uint32_t e = f; e < t->nxf; e++) {
      if (t->xf[e].ex != x)
        continue;
      uint32_t d = f;
      while (d < e && !(t->xf[d].ex == x && t->xf[d].index == t->xf[e].index))
        d++;
      if (d < e)
        continue; /* this index was taken at its first record */
      uint64_t last = t->xf[e].last;
      for (uint32_t c = e + 1; c < t->nxf; c++)
        if (t->xf[c].ex == x && t->xf[c].index == t->xf[e].index && t->xf[c].last > last)
          last = t->xf[c].last;
      if (x->nappf == x->appfcap) {
        x->appfcap = x->appfcap ? 2 * x->appfcap : 8;
        x->appf = tlo_xrealloc(x->appf, x->appfcap * sizeof *x->appf);
      }
      x->appf[x->nappf++] = tlo_add_sat(last, timeout);
    }
    uint32_t w = 0;
    for (uint32_t e = 0; e < x->nappf; e++)
      if (!tlo_due_at(x->appf[e], now)) /* a saturated expiry never comes */
        x->appf[w++] = x->appf[e];
    x->nappf = w;
    if (x->nappf >= r->cfg.exclude_app_max_failed_tasks_per_executor && !x->xapp) {
      x->xapp = true;
      x->xapp_expiry = tlo_add_sat(now, timeout);
      x->xapp_host = node;
      x->nappf = 0;
      r->f_x[TLO_XF_APP_EXEC]++;
      uint32_t on_node = 0;
      for (unsigned s = 0; s < NSLOTS; s++)
        for (uint32_t gg = 0; gg < r->ngen[s]; gg++)
          on_node += r->ex[s][gg].xapp && r->ex[s][gg].xapp_host == node;
      if (on_node >= r->cfg.exclude_app_max_failed_executors_per_node && !r->node_excl[node]) {
        r->node_excl[node] = true;
        r->node_expiry[node] = tlo_add_sat(now, timeout);
        r->f_x[TLO_XF_APP_NODE]++;
      }
    }
    if (gone)
      x->nappf = 0;
  }
}

/* The earliest exclusion deadline after now (exclusions ending, unschedulable aborts);
 * TL_TICK_NEVER if none (one saturated at the end of time never comes). */
uint64_t tlo_exclude_next_of(const tlo_run *r) {
  uint64_t next = TL_TICK_NEVER;
  if (!tlo_xon(r))
    return next;
  uint64_t at[NSLOTS * MAXGEN + NHOSTS + MAXTS];
  size_t n = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      if (r->ex[s][g].xapp)
        at[n++] = r->ex[s][g].xapp_expiry;
  for (unsigned h = 0; h < NHOSTS; h++)
    if (r->node_excl[h])
      at[n++] = r->node_expiry[h];
  for (uint32_t k = 0; k < r->nts; k++)
    if (r->ts[k].xdl)
      at[n++] = r->ts[k].xdl_at;
  for (size_t i = 0; i < n; i++) {
    if (at[i] == UINT64_MAX)
      continue;
    uint64_t d = at[i] > r->now ? at[i] - r->now : 0;
    if (d < next)
      next = d;
  }
  return next;
}

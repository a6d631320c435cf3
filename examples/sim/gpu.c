/* tl-sim's GPUs (docs/sim.md, "GPUs"): which executors declare "gpu" and which stages ask for
 * it, and the simulator's own book of who holds which address, kept apart from the ledger's and
 * compared with it. An attempt takes its addresses at task_started (the grants the ledger gave
 * it, which its launch must name too) and gives them back at task_ended, whatever ended it; in
 * between, no other attempt may hold a whole address it holds, and no address may carry more
 * than k attempts of share 1/k. The book is compared with tl_executor_addresses after each
 * tl_check, and at the drained end tl_resource_totals must say nothing is used.
 *
 * With the GPU options off (docs/sim.md: --gpu-executors 0, --gpu-stages 0) nothing here draws
 * a random number, declares a resource or asks for one, so a run is what it was without them. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

bool gpu_on(const sim *m) { return m->o.gpu_executors > 0; }

void gpu_init(sim *m) {
  sim_gpu *g = &m->gpu;
  memset(g, 0, sizeof *g);
  if (!gpu_on(m))
    return;
  for (uint32_t i = 0; i < m->o.gpus; i++) {
    snprintf(g->names[i], sizeof g->names[i], "%" PRIu32, i);
    g->addresses[i] = g->names[i];
  }
  g->decl.name = "gpu";
  g->decl.addresses = g->addresses;
  g->decl.naddresses = m->o.gpus;
  g->req.name = "gpu";
  g->req.amount = m->o.gpu_share > 1 ? 1 : m->o.gpu_amount;
  g->req.share = m->o.gpu_share > 1 ? m->o.gpu_share : 0;
}

/* Whether a late joiner is a GPU executor: while fewer than --gpu-executors GPU executors are
 * in the ledger. (The first --gpu-executors of the start are; a replacement is what the executor
 * it replaces was.) No random number is drawn. */
bool gpu_late_kind(const sim *m) {
  if (!gpu_on(m))
    return false;
  uint32_t n = 0;
  for (size_t i = 0; i < m->nexecs; i++)
    if (m->execs[i].gpu && m->execs[i].ledger != X_GONE)
      n++;
  return n < m->o.gpu_executors;
}

/* A GPU executor declares "gpu" with --gpus addresses and its profile (--gpu-profile); others
 * keep profile 0 and declare nothing. */
void gpu_declare(sim *m, uint32_t x, tl_executor_desc *d) {
  sim_executor *e = &m->execs[x];
  if (!e->gpu)
    return;
  e->gpu_used = xcalloc(m->o.gpus, sizeof *e->gpu_used);
  d->profile = m->o.gpu_profile;
  d->resources = &m->gpu.decl;
  d->nresources = 1;
  sim_record_exec_resource(&m->rec, x, "gpu", m->o.gpus);
}

/* A new stage asks for GPUs with probability --gpu-stages (drawn only when that is above 0). */
void gpu_stage_draw(sim *m, sim_stage *st) {
  if (m->o.gpu_stages <= 0)
    return;
  st->gpu = sim_rng_unit(&m->rng) < m->o.gpu_stages;
  if (st->gpu)
    m->gpu.stages++;
}

void gpu_request(sim *m, const sim_stage *st, tl_taskset_desc *d) {
  if (!st->gpu)
    return;
  d->profile = m->o.gpu_profile;
  d->resources = &m->gpu.req;
  d->nresources = 1;
}

/* How much of one address a grant of share k holds, in TL_SHARE_UNIT per whole address. */
static uint64_t unit_of(uint32_t share) {
  return share > 1 ? TL_SHARE_UNIT / share : TL_SHARE_UNIT;
}

static bool same_grants(const tl_grant *a, uint32_t na, const tl_grant *b, uint32_t nb) {
  if (na != nb)
    return false;
  for (uint32_t i = 0; i < na; i++)
    if (a[i].resource != b[i].resource || a[i].address != b[i].address || a[i].share != b[i].share)
      return false;
  return true;
}

/* task_started: the attempt takes the addresses the ledger gave it. They must be what its stage
 * asks for, on an executor of its profile, and free in the simulator's book. */
void gpu_started(sim *m, sim_attempt *a, const tl_task_info *t) {
  sim_gpu *g = &m->gpu;
  sim_executor *e = &m->execs[a->exec];
  const sim_stage *st = &m->jobs[a->ts->job].stages[a->ts->stage];
  a->grants = NULL;
  a->ngrants = 0;
  if (!gpu_on(m)) {
    if (t->ngrants)
      problem(m, "tid %" PRIu64 " holds %" PRIu32 " addresses in a run without GPUs", t->tid,
              t->ngrants);
    return;
  }
  if (m->o.gpu_profile && st->gpu != e->gpu)
    problem(m, "tid %" PRIu64 " of a %s stage launched on %s, of profile %" PRIu32, t->tid,
            st->gpu ? "GPU" : "CPU", e->id, e->gpu ? m->o.gpu_profile : 0);
  uint32_t want = st->gpu ? g->req.amount : 0;
  if (t->ngrants != want || (want && !e->gpu)) {
    problem(m, "tid %" PRIu64 " on %s holds %" PRIu32 " addresses, its stage asks for %" PRIu32,
            t->tid, e->id, t->ngrants, want);
    return;
  }
  if (!want)
    return;
  a->grants = xcalloc(want, sizeof *a->grants);
  uint32_t k = g->req.share > 1 ? g->req.share : 1;
  for (uint32_t i = 0; i < want; i++) {
    tl_grant gr = t->grants ? t->grants[i] : (tl_grant){0};
    if (!t->grants || gr.resource != 0 || gr.address >= m->o.gpus || gr.share != k) {
      problem(m, "tid %" PRIu64 " on %s: grant %" PRIu32 " is not gpu 1/%" PRIu32, t->tid, e->id, i,
              k);
      continue;
    }
    uint64_t unit = unit_of(gr.share), used = e->gpu_used[gr.address];
    if (k == 1 && used != 0)
      problem(m, "tid %" PRIu64 " on %s holds gpu %" PRIu16 " whole, already held", t->tid, e->id,
              gr.address);
    else if (used + unit > TL_SHARE_UNIT)
      problem(m, "tid %" PRIu64 " on %s: gpu %" PRIu16 " carries more than %" PRIu32 " tasks",
              t->tid, e->id, gr.address, k);
    e->gpu_used[gr.address] = used + unit;
    uint32_t on = (uint32_t)((used + unit) / unit);
    if (k > 1 && on > g->share_peak)
      g->share_peak = on;
    a->grants[a->ngrants++] = gr;
  }
  g->attempts++;
  if (++g->held_now > g->held_peak)
    g->held_peak = g->held_now;
}

/* After an offer round: a launch names the addresses its task_started gave, and
 * tl_attempt_grants says the same; the attempt's process is told them (its record's text). */
void gpu_launched(sim *m, const tl_launch *l) {
  if (!gpu_on(m))
    return;
  sim_attempt *a = attempt_of(m, l->tid);
  if (!a || !a->ts)
    return;
  if (!same_grants(l->grants, l->ngrants, a->grants, a->ngrants))
    problem(m, "tid %" PRIu64 ": its launch names other addresses than its task_started", l->tid);
  tl_grant held[TL_TASK_GRANTS_MAX];
  size_t n = 0;
  int rc = tl_attempt_grants(m->s, l->tid, held, TL_TASK_GRANTS_MAX, &n);
  if (rc == TL_OK && !same_grants(held, (uint32_t)n, a->grants, a->ngrants))
    problem(m, "tid %" PRIu64 ": tl_attempt_grants names other addresses than its launch", l->tid);
  else if (rc != TL_OK && rc != TL_ESTALE)
    problem(m, "tl_attempt_grants(%" PRIu64 "): %s", l->tid, tl_err_name(rc));
}

/* task_ended: the attempt gives its addresses back (the same it took), and its slice says which
 * it held. */
void gpu_ended(sim *m, sim_attempt *a, const tl_task_info *t, sim_slice *sl) {
  if (!a->ngrants) {
    if (t->ngrants)
      problem(m, "tid %" PRIu64 " ended holding addresses it was never given", t->tid);
    return;
  }
  sim_executor *e = &m->execs[a->exec];
  if (!same_grants(t->grants, t->ngrants, a->grants, a->ngrants))
    problem(m, "tid %" PRIu64 " ended holding other addresses than it took", t->tid);
  size_t at = 0;
  for (uint32_t i = 0; i < a->ngrants; i++) {
    const tl_grant *gr = &a->grants[i];
    uint64_t unit = unit_of(gr->share);
    if (e->gpu_used && e->gpu_used[gr->address] >= unit)
      e->gpu_used[gr->address] -= unit;
    else
      problem(m, "tid %" PRIu64 " gives back gpu %" PRIu16 " on %s, not held", t->tid, gr->address,
              e->id);
    int w = snprintf(sl->addresses + at, sizeof sl->addresses - at, "%s%s", i ? "," : "",
                     m->gpu.names[gr->address]);
    if (w > 0 && (size_t)w < sizeof sl->addresses - at)
      at += (size_t)w;
  }
  snprintf(sl->resource, sizeof sl->resource, "gpu");
  sl->share = a->grants[0].share > 1 ? (uint8_t)a->grants[0].share : 0;
  free(a->grants);
  a->grants = NULL;
  a->ngrants = 0;
  m->gpu.held_now--;
}

/* After each tl_check: the simulator's book of every GPU executor the ledger holds is the
 * ledger's (tl_executor_addresses). */
void gpu_check(sim *m) {
  if (!gpu_on(m))
    return;
  tl_address_info info[64];
  for (size_t x = 0; x < m->nexecs; x++) {
    sim_executor *e = &m->execs[x];
    if (!e->gpu || e->ledger == X_GONE)
      continue;
    size_t n = 0;
    int rc = tl_executor_addresses(m->s, e->id, 0, info, 64, &n);
    if (rc != TL_OK || n != m->o.gpus) {
      problem(m, "tl_executor_addresses(%s): %s, %zu addresses", e->id, tl_err_name(rc), n);
      continue;
    }
    m->gpu.checks++;
    for (uint32_t i = 0; i < m->o.gpus; i++)
      if (info[i].used != e->gpu_used[i] || strcmp(info[i].address, m->gpu.names[i]) != 0) {
        problem(m, "%s gpu %" PRIu32 ": the ledger books %" PRIu64 ", the simulator %" PRIu64,
                e->id, i, info[i].used, e->gpu_used[i]);
        return;
      }
  }
}

/* At the end of the run, while the executors are still registered: what tl_resource_totals
 * says is used (0 when the run drained), and the simulator's book. */
void gpu_end(sim *m, bool drained) {
  if (!gpu_on(m))
    return;
  tl_resource_info info[TL_RESOURCES_MAX];
  size_t n = 0;
  int rc = tl_resource_totals(m->s, info, TL_RESOURCES_MAX, &n);
  if (rc != TL_OK) {
    problem(m, "tl_resource_totals: %s", tl_err_name(rc));
    return;
  }
  m->gpu.end_checked = true;
  for (size_t i = 0; i < n && i < TL_RESOURCES_MAX; i++)
    if (strcmp(info[i].name, "gpu") == 0) {
      m->gpu.end_addresses = info[i].addresses;
      m->gpu.end_used = info[i].used;
    }
  if (drained && (m->gpu.end_used != 0 || m->gpu.held_now != 0))
    problem(m, "drained, yet gpu use is %" PRIu64 " (the simulator: %" PRIu64 " attempts)",
            m->gpu.end_used, m->gpu.held_now);
}

/* After the executors stopped: every attempt has ended, so every address is back. */
void gpu_stopped(sim *m) {
  if (!gpu_on(m))
    return;
  for (size_t x = 0; x < m->nexecs; x++)
    for (uint32_t i = 0; m->execs[x].gpu_used && i < m->o.gpus; i++)
      if (m->execs[x].gpu_used[i]) {
        problem(m, "%s gpu %" PRIu32 " still held after the executors stopped", m->execs[x].id, i);
        return;
      }
}

void gpu_summary(const sim *m) {
  if (!gpu_on(m))
    return;
  const sim_gpu *g = &m->gpu;
  char ask[32];
  if (g->req.share > 1)
    snprintf(ask, sizeof ask, "1/%" PRIu32 " gpu", g->req.share);
  else
    snprintf(ask, sizeof ask, "%" PRIu32 " gpu", g->req.amount);
  printf("gpu                 %" PRIu32 " GPU executors at the start, %" PRIu32
         " gpus each, profile %" PRIu32 "; %" PRIu32 " stages ask %s per task; %" PRIu64
         " attempts held addresses, at most %" PRIu64 " at once",
         m->o.gpu_executors, m->o.gpus, m->o.gpu_profile, g->stages, ask, g->attempts,
         g->held_peak);
  if (g->req.share > 1)
    printf(", at most %" PRIu32 " on one address", g->share_peak);
  printf("\n");
  if (g->end_checked)
    printf("gpu at the end      %" PRIu32 " addresses, used %" PRIu64
           " (tl_resource_totals); the simulator's book compared %" PRIu64 " times\n",
           g->end_addresses, g->end_used, g->checks);
}

void gpu_free(sim *m) {
  for (size_t x = 0; x < m->nexecs; x++)
    free(m->execs[x].gpu_used);
  for (uint64_t tid = 1; tid <= m->max_tid; tid++)
    free(m->attempts[tid].grants);
}

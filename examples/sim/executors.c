/* tl-sim's executors: each joins the ledger on a host in a rack, may be picked by a fault, and
 * when the ledger removes it a replacement joins on its host (docs/sim.md, "Executors"). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim.h"

/* Registers a new executor on host_index (UINT32_MAX: a new host for a late joiner), a GPU
 * executor (gpu.c) when gpu. */
void executor_join(sim *m, uint32_t host_index, const char *why, bool gpu) {
  if (host_index == UINT32_MAX) {
    if (m->late_on_host == 0 || m->late_on_host >= m->o.per_host) {
      host_index = m->hosts_made++;
      m->late_on_host = 0;
    } else {
      host_index = m->hosts_made - 1;
    }
    m->late_on_host++;
  }
  grow((void **)&m->execs, &m->execs_cap, m->nexecs + 1, sizeof *m->execs);
  uint32_t x = (uint32_t)m->nexecs++;
  sim_executor *e = &m->execs[x];
  snprintf(e->id, sizeof e->id, "%s%" PRIu32, m->o.id_prefix, x + 1);
  snprintf(e->host, sizeof e->host, "host-%" PRIu32, host_index + 1);
  snprintf(e->rack, sizeof e->rack, "rack-%" PRIu32, host_index / m->o.hosts_per_rack + 1);
  e->host_index = host_index;
  e->ledger = X_ALIVE;
  e->proc = P_RUNNING;
  e->core_tid = xcalloc(m->o.cores, sizeof *e->core_tid);
  e->gpu = gpu;
  uint32_t index;
  if (sim_record_exec(&m->rec, e->id, e->host, e->rack, m->o.cores, m->now, &index) < 0)
    oom();
  tl_executor_desc d = {
      .id = e->id, .host = e->host, .rack = e->rack, .cores = m->o.cores, .ud = exec_ud(x)};
  gpu_declare(m, x, &d);
  int rc = tl_executor_add(m->s, &d);
  if (rc != TL_OK)
    problem(m, "tl_executor_add(%s): %s", e->id, tl_err_name(rc));
  mark(m, x, SIM_MARK_JOINED, "%s on %s (%s)", e->id, e->host, why);
  if (m->now > 0)
    logf_(m, "%s joins on %s (%s)", e->id, e->host, why);
  /* Heartbeats start at a random phase so that executors do not beat in step. */
  schedule(m, m->now + 1 + secs(sim_rng_unit(&m->rng) * m->o.heartbeat_s), EV_HEARTBEAT, x, 0);
}

/* The executor is gone from the ledger (its executor_removed): the record's lane ends and a
 * replacement is started. */
void executor_removed(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  e->ledger = X_GONE;
  sim_record_exec_gone(&m->rec, x, m->now);
  if (!e->shutdown && m->faults_on)
    schedule(m, m->now + secs(2.0 + 3.0 * sim_rng_unit(&m->rng)), EV_REPLACE, x, 0);
}

/* An executor a fault may hit: in the ledger, ALIVE, its process working. */
int pick_executor(sim *m, bool allow_decom) {
  uint32_t n = 0;
  for (size_t i = 0; i < m->nexecs; i++)
    if ((m->execs[i].ledger == X_ALIVE || (allow_decom && m->execs[i].ledger == X_DECOM)) &&
        m->execs[i].proc == P_RUNNING)
      n++;
  if (n <= 1) /* leave the cluster one executor */
    return -1;
  uint32_t k = sim_rng_below(&m->rng, n);
  for (size_t i = 0; i < m->nexecs; i++)
    if ((m->execs[i].ledger == X_ALIVE || (allow_decom && m->execs[i].ledger == X_DECOM)) &&
        m->execs[i].proc == P_RUNNING && k-- == 0)
      return (int)i;
  return -1;
}

/* Updates sent by a process that died with work in flight: they reach the driver after the
 * loss, and must be refused (TL_ESTALE while frozen, TL_EGONE once removed). */
void in_flight_reports(sim *m, uint32_t x) {
  for (uint64_t tid = 1; tid <= m->max_tid; tid++) {
    sim_attempt *a = &m->attempts[tid];
    if (a->ts && a->exec == x && !a->proc_done) {
      a->proc_done = true;
      if (sim_rng_unit(&m->rng) < m->o.late_rate)
        schedule_update(m, m->now + 1 + secs(0.05 * sim_rng_unit(&m->rng)), x, tid,
                        TL_TASK_FINISHED, TL_END_SUCCESS);
    }
  }
}

/* The executors of --executors, --per-host to a host, the first --gpu-executors of them GPU
 * executors; later, late joiners fill new hosts
 * (executor_join with UINT32_MAX), --per-host to each. */
void executors_start(sim *m) {
  for (uint32_t i = 0; i < m->o.executors; i++)
    executor_join(m, i / m->o.per_host, "start", i < m->o.gpu_executors);
  m->hosts_made = (m->o.executors + m->o.per_host - 1) / m->o.per_host;
  m->late_on_host = 0;
}

/* Stops the executors still registered, as a driver does at the end (TL_LOSS_KILLED): each must
 * leave the ledger at once, without a replacement. */
void executors_stop(sim *m) {
  for (size_t i = 0; i < m->nexecs; i++) {
    sim_executor *e = &m->execs[i];
    if (e->ledger == X_GONE)
      continue;
    e->shutdown = true;
    e->proc = P_DEAD;
    tl_loss_reason r = {.kind = TL_LOSS_KILLED, .message = "simulation over"};
    int rc = tl_executor_lost(m->s, e->id, &r);
    if (rc != TL_OK)
      problem(m, "tl_executor_lost(%s) at the end: %s", e->id, tl_err_name(rc));
    else if (e->ledger != X_GONE)
      problem(m, "tl_executor_lost(%s) at the end made no executor_removed", e->id);
  }
}

/* Frees what executor_join made. */
void executors_free(sim *m) {
  for (size_t i = 0; i < m->nexecs; i++)
    free(m->execs[i].core_tid);
  free(m->execs);
}

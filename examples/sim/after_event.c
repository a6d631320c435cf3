/* What tl-sim does after every event (docs/sim.md, "Time"): tl_tick, offer rounds while tasks
 * are pending and a core is free (tl_resource_offers_grants: each launch's addresses are checked
 * by gpu.c), tl_check and the GPU book against the ledger's, the peaks of the ledger's sizes and a
 * sample of them when they changed. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim.h"

static void offer_round(sim *m) {
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < m->nexecs; i++)
    if (m->execs[i].ledger == X_ALIVE && m->execs[i].busy < m->o.cores)
      n++;
  if (n == 0)
    return;
  tl_offer *offers = xcalloc(n, sizeof *offers);
  n = 0;
  for (size_t i = 0; i < m->nexecs; i++) {
    sim_executor *e = &m->execs[i];
    if (e->ledger == X_ALIVE && e->busy < m->o.cores) {
      offers[n].executor_id = e->id;
      offers[n].cores = m->o.cores - e->busy;
      cap += offers[n].cores;
      n++;
    }
  }
  tl_launch *launches = xcalloc(cap, sizeof *launches);
  /* Room for every launch's addresses: a task asks for at most TL_TASK_GRANTS_MAX. */
  size_t gcap = gpu_on(m) ? cap * m->gpu.req.amount : 0, nout = 0, ngrants = 0;
  tl_grant *grants = gcap ? xcalloc(gcap, sizeof *grants) : NULL;
  int rc = tl_resource_offers_grants(m->s, offers, n, launches, cap, &nout, grants, gcap, &ngrants);
  if (rc != TL_OK)
    problem(m, "tl_resource_offers_grants: %s", tl_err_name(rc));
  for (size_t i = 0; i < nout; i++)
    gpu_launched(m, &launches[i]);
  free(grants);
  free(launches);
  free(offers);
}

size_t *stat_field(tl_stats *st, size_t i) {
  size_t *fields[] = {
#define XX(name) &st->name,
      STAT_FIELDS(XX)
#undef XX
  };
  return fields[i];
}

const char *const stat_names[] = {
#define XX(name) #name,
    STAT_FIELDS(XX)
#undef XX
};

void after_event(sim *m) {
  /* Time: what is due runs now (the losses it ends come as executor_removed); an EV_TICK waits
   * for the next deadline. */
  uint64_t next = tl_tick(m->s);
  tl_stats_get(m->s, &m->st);
  /* Offers while work is pending and a core is free. */
  for (int round = 0; round < 4 && m->st.tasks_pending > 0; round++) {
    uint64_t launched = m->st.launched;
    offer_round(m);
    tl_stats_get(m->s, &m->st);
    if (m->st.launched == launched)
      break;
  }
  if (next != TL_TICK_NEVER) {
    uint64_t at = m->now + (next ? next : 1);
    if (at < m->tick_at || m->tick_at <= m->now) {
      m->tick_at = at;
      schedule(m, at, EV_TICK, 0, 0);
    }
  }
  m->c.events++;
  if (m->o.check_every && m->c.events % m->o.check_every == 0) {
    char why[256];
    m->c.checks++;
    if (tl_check(m->s, why, sizeof why) != TL_OK && !m->check_failed) {
      m->check_failed = true;
      snprintf(m->check_why, sizeof m->check_why, "%s", why);
      problem(m, "tl_check: %s", why);
    }
    gpu_check(m);
  }
  for (size_t i = 0; i < NSTATS; i++)
    if (*stat_field(&m->st, i) > m->stat_peak[i])
      m->stat_peak[i] = *stat_field(&m->st, i);
  sim_sample smp = {.t_ns = m->now,
                    .attempts_running = (uint32_t)m->st.attempts_running,
                    .attempts_frozen = (uint32_t)m->st.attempts_frozen,
                    .tasksets_active = (uint32_t)m->st.tasksets_active,
                    .tasksets_zombie = (uint32_t)m->st.tasksets_zombie,
                    .executors_alive = (uint32_t)m->st.executors_alive,
                    .executors_pending_loss = (uint32_t)m->st.executors_pending_loss,
                    .tasks_pending = (uint32_t)m->st.tasks_pending};
  const sim_sample *last = &m->last_sample;
  bool same = m->have_sample && last->attempts_running == smp.attempts_running &&
              last->attempts_frozen == smp.attempts_frozen &&
              last->tasksets_active == smp.tasksets_active &&
              last->tasksets_zombie == smp.tasksets_zombie &&
              last->executors_alive == smp.executors_alive &&
              last->executors_pending_loss == smp.executors_pending_loss &&
              last->tasks_pending == smp.tasks_pending;
  if (!same) {
    if (sim_record_sample(&m->rec, &smp) < 0)
      oom();
    m->last_sample = smp;
    m->have_sample = true;
  }
}

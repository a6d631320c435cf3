/* What each of tl-sim's events does (docs/sim.md, "Faults"): a job arrives, an executor's
 * process sends its updates and heartbeats, faults strike, executors wake, drain or join. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim.h"

/* Sends one update as an executor would and returns the result. */
static int send_update(sim *m, uint32_t x, uint64_t tid, tl_task_state state, tl_end_kind failure,
                       const char *msg) {
  tl_update u = {.state = state, .failure = failure, .message = msg};
  if (state == TL_TASK_FINISHED) {
    u.result = result_new();
    u.result_size = 32;
    u.result_free = result_free;
  }
  int rc = tl_status_update(m->s, m->execs[x].id, tid, &u);
  if (rc != TL_OK && u.result)
    result_free(u.result);
  return rc;
}

/* Sends a duplicate or late update, which the ledger must refuse. */
static void bad_update(sim *m, uint32_t x, uint64_t tid, tl_task_state state, tl_end_kind failure) {
  m->c.bad_sent++;
  int rc = send_update(m, x, tid, state, failure, "late or duplicate");
  if (rc == TL_ESTALE)
    m->c.bad_stale++;
  else if (rc == TL_EGONE)
    m->c.bad_gone++;
  else {
    m->c.bad_other++;
    problem(m, "a duplicate or late update for tid %" PRIu64 " from %s was answered %s", tid,
            m->execs[x].id, tl_err_name(rc));
  }
}

/* The attempt's process reports (FINISHED, FAILED or KILLED) unless it stopped. */
static bool attempt_live(sim *m, sim_attempt *a, uint32_t x) {
  return a && a->ts && a->exec == x && !a->proc_done && m->execs[x].proc == P_RUNNING;
}

static void terminal_update(sim *m, uint64_t tid, uint32_t x, tl_task_state st, tl_end_kind fk,
                            const char *msg) {
  sim_attempt *a = attempt_of(m, tid);
  a->proc_done = true;
  int rc = send_update(m, x, tid, st, fk, msg);
  if (rc != TL_OK && rc != TL_ESTALE)
    problem(m, "update for tid %" PRIu64 " from %s: %s", tid, m->execs[x].id, tl_err_name(rc));
  if (sim_rng_unit(&m->rng) < m->o.duplicate_rate)
    schedule_update(m, m->now + 1 + secs(0.02 * sim_rng_unit(&m->rng)), x, tid, st, fk);
  if (a->late_running)
    schedule_update(m, m->now + 1 + secs(0.02 * sim_rng_unit(&m->rng)), x, tid, TL_TASK_RUNNING,
                    TL_END_SUCCESS);
}

static void ev_fetch(sim *m, uint64_t tid, uint32_t x) {
  sim_attempt *a = attempt_of(m, tid);
  if (!attempt_live(m, a, x))
    return;
  sim_job *job = &m->jobs[a->ts->job];
  sim_stage *st = &job->stages[a->ts->stage];
  for (uint32_t i = 0; i < st->nparents; i++) {
    sim_stage *parent = &job->stages[st->parents[i]];
    for (uint32_t p = 0; p < parent->nparts; p++)
      if (parent->where[p] < 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "shuffle %" PRIu32 " partition %" PRIu32 " is missing",
                 parent->stage_id, p);
        terminal_update(m, tid, x, TL_TASK_FAILED, TL_END_FETCH_FAILED, msg);
        return;
      }
  }
}

static void ev_finish(sim *m, uint64_t tid, uint32_t x) {
  sim_attempt *a = attempt_of(m, tid);
  if (!attempt_live(m, a, x))
    return;
  if (a->throws)
    terminal_update(m, tid, x, TL_TASK_FAILED, TL_END_EXCEPTION, "simulated task failure");
  else
    terminal_update(m, tid, x, TL_TASK_FINISHED, TL_END_SUCCESS, NULL);
}

static void ev_crash(sim *m, bool two_phase) {
  int pick = pick_executor(m, true);
  if (pick < 0)
    return;
  uint32_t x = (uint32_t)pick;
  sim_executor *e = &m->execs[x];
  e->proc = P_DEAD;
  in_flight_reports(m, x);
  bool by_app = sim_rng_unit(&m->rng) < 0.5;
  if (!two_phase) {
    m->c.crashes++;
    tl_loss_reason r = {.kind = TL_LOSS_EXITED,
                        .caused_by_app = by_app,
                        .exit_code = by_app ? 1 : 137,
                        .message = by_app ? "exited 1, caused by the app" : "exited 137"};
    logf_(m, "%s crashes (%s)", e->id, r.message);
    int rc = tl_executor_lost(m->s, e->id, &r);
    if (rc != TL_OK)
      problem(m, "tl_executor_lost(%s): %s", e->id, tl_err_name(rc));
    return;
  }
  m->c.crashes2++;
  tl_loss_reason r = {.kind = TL_LOSS_PENDING, .message = "connection closed"};
  bool never = sim_rng_unit(&m->rng) < m->o.reason_lost;
  logf_(m, "%s crashes: loss reported in two phases%s", e->id,
        never ? " (the reason will never come)" : "");
  int rc = tl_executor_lost(m->s, e->id, &r);
  if (rc != TL_OK)
    problem(m, "tl_executor_lost(%s, pending): %s", e->id, tl_err_name(rc));
  if (!never)
    schedule(m, m->now + 1 + secs(sim_rng_exp(&m->rng, m->o.reason_delay_s)), EV_REASON, x, by_app);
}

static void ev_reason(sim *m, uint32_t x, bool by_app) {
  sim_executor *e = &m->execs[x];
  tl_loss_reason r = {.kind = by_app ? TL_LOSS_EXITED : TL_LOSS_PROCESS_LOST,
                      .caused_by_app = by_app,
                      .exit_code = by_app ? 1 : 0,
                      .message = by_app ? "exited 1, caused by the app" : "process lost"};
  int rc = tl_executor_lost(m->s, e->id, &r);
  if (rc == TL_OK) { /* its executor_removed has ended the loss */
    m->c.reasons++;
    mark(m, x, SIM_MARK_LOST, "%s: %s", e->id, r.message);
    logf_(m, "%s: the real reason came: %s", e->id, r.message);
  } else if (rc == TL_EGONE) {
    m->c.reasons_refused++; /* the pending-loss timeout came first */
  } else {
    problem(m, "tl_executor_lost(%s, real reason): %s", e->id, tl_err_name(rc));
  }
}

static void ev_hang(sim *m) {
  int pick = pick_executor(m, false);
  if (pick < 0)
    return;
  uint32_t x = (uint32_t)pick;
  m->execs[x].proc = P_HUNG;
  m->c.hangs++;
  logf_(m, "%s hangs silently", m->execs[x].id);
  schedule(m, m->now + secs(m->o.heartbeat_timeout_s + 1.0 + 4.0 * sim_rng_unit(&m->rng)), EV_WAKE,
           x, 0);
}

/* A hung executor comes back: everything it says now must be refused with TL_EGONE. */
static void ev_wake(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  for (uint64_t tid = 1; tid <= m->max_tid; tid++) {
    sim_attempt *a = &m->attempts[tid];
    if (a->ts && a->exec == x && !a->proc_done) {
      a->proc_done = true;
      bad_update(m, x, tid, TL_TASK_FINISHED, TL_END_SUCCESS);
    }
  }
  m->c.bad_sent++;
  int rc = tl_executor_heartbeat(m->s, e->id);
  if (rc == TL_EGONE)
    m->c.bad_gone++;
  else {
    m->c.bad_other++;
    problem(m, "a heartbeat from the hung %s was answered %s", e->id, tl_err_name(rc));
  }
  logf_(m, "%s wakes up and is refused (removed)", e->id);
  e->proc = P_DEAD;
}

static void ev_decommission(sim *m) {
  int pick = pick_executor(m, false);
  if (pick < 0)
    return;
  uint32_t x = (uint32_t)pick;
  sim_executor *e = &m->execs[x];
  int rc = tl_executor_decommission(m->s, e->id, "scaling down");
  if (rc != TL_OK) {
    problem(m, "tl_executor_decommission(%s): %s", e->id, tl_err_name(rc));
    return;
  }
  m->c.decommissions++;
  e->ledger = X_DECOM;
  mark(m, x, SIM_MARK_DECOMMISSION, "%s: scaling down", e->id);
  logf_(m, "%s decommissioning (%" PRIu32 " attempts to drain)", e->id, e->busy);
  schedule(m, m->now + (e->busy == 0 ? 1 : secs(10 * m->o.duration_s)), EV_DECOM_REMOVE, x, 0);
}

static void ev_decom_remove(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  if (e->ledger != X_DECOM)
    return;
  e->proc = P_DEAD;
  in_flight_reports(m, x);
  tl_loss_reason r = {.kind = TL_LOSS_DECOMMISSIONED, .message = "decommissioned"};
  int rc = tl_executor_lost(m->s, e->id, &r);
  if (rc != TL_OK)
    problem(m, "tl_executor_lost(%s, decommissioned): %s", e->id, tl_err_name(rc));
}

static void ev_heartbeat(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  if (e->proc != P_RUNNING || (e->ledger != X_ALIVE && e->ledger != X_DECOM))
    return;
  int rc = tl_executor_heartbeat(m->s, e->id);
  if (rc != TL_OK)
    problem(m, "tl_executor_heartbeat(%s): %s", e->id, tl_err_name(rc));
  schedule(m, m->now + secs(m->o.heartbeat_s), EV_HEARTBEAT, x, 0);
}

void run_event(sim *m, const sim_event *ev) {
  switch (ev->kind) {
  case EV_JOB:
    job_arrive(m, ev->exec);
    break;
  case EV_HEARTBEAT:
    ev_heartbeat(m, ev->exec);
    break;
  case EV_RUNNING: {
    sim_attempt *a = attempt_of(m, ev->tid);
    if (attempt_live(m, a, ev->exec)) {
      int rc = send_update(m, ev->exec, ev->tid, TL_TASK_RUNNING, TL_END_SUCCESS, NULL);
      if (rc != TL_OK && rc != TL_ESTALE)
        problem(m, "RUNNING for tid %" PRIu64 ": %s", ev->tid, tl_err_name(rc));
    }
    break;
  }
  case EV_FETCH:
    ev_fetch(m, ev->tid, ev->exec);
    break;
  case EV_FINISH:
    ev_finish(m, ev->tid, ev->exec);
    break;
  case EV_KILL: {
    sim_attempt *a = attempt_of(m, ev->tid);
    if (attempt_live(m, a, ev->exec))
      terminal_update(m, ev->tid, ev->exec, TL_TASK_KILLED, TL_END_KILLED, "killed as asked");
    break;
  }
  case EV_BAD_UPDATE:
    bad_update(m, ev->exec, ev->tid, (tl_task_state)ev->state, (tl_end_kind)ev->failure);
    break;
  case EV_CRASH:
  case EV_CRASH2:
    if (!m->faults_on)
      break;
    ev_crash(m, ev->kind == EV_CRASH2);
    schedule_poisson(m, ev->kind, ev->kind == EV_CRASH ? m->o.crash_rate : m->o.crash2_rate);
    break;
  case EV_REASON:
    ev_reason(m, ev->exec, ev->tid != 0);
    break;
  case EV_HANG:
    if (!m->faults_on)
      break;
    ev_hang(m);
    schedule_poisson(m, EV_HANG, m->o.hang_rate);
    break;
  case EV_WAKE:
    ev_wake(m, ev->exec);
    break;
  case EV_DECOMMISSION:
    if (!m->faults_on)
      break;
    ev_decommission(m);
    schedule_poisson(m, EV_DECOMMISSION, m->o.decommission_rate);
    break;
  case EV_DECOM_REMOVE:
    ev_decom_remove(m, ev->exec);
    break;
  case EV_JOIN:
    if (!m->faults_on)
      break;
    m->c.joins_late++;
    executor_join(m, UINT32_MAX, "late", gpu_late_kind(m));
    schedule_poisson(m, EV_JOIN, m->o.join_rate);
    break;
  case EV_REPLACE:
    if (!m->faults_on)
      break;
    m->c.joins_replace++;
    executor_join(m, m->execs[ev->exec].host_index, "replacement", m->execs[ev->exec].gpu);
    break;
  case EV_TICK:
    break; /* tl_tick runs after every event */
  }
}

/* The ledger's callbacks (tl_callbacks) in tl-sim: attempts placed on cores and planned at
 * launch, their ends recorded and handed to the DAG layer, task sets failed and released,
 * executors lost and removed, kills passed to the executor. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* The executor an event names, by its ud (task_started, kill_task, executor_lost,
 * executor_removed); UINT32_MAX (and a problem) if the ud is another executor's. */
static uint32_t event_executor(sim *m, const char *event, const char *id, void *executor_ud) {
  uint32_t x = exec_of_ud(executor_ud);
  if (x >= m->nexecs || strcmp(m->execs[x].id, id) != 0) {
    problem(m, "%s for unknown %s", event, id);
    return UINT32_MAX;
  }
  return x;
}

void cb_task_started(void *ud, const tl_task_info *t) {
  sim *m = ud;
  task_binary *b = t->payload;
  uint32_t x = event_executor(m, "task_started", t->executor_id, t->executor_ud);
  if (x >= m->nexecs)
    return;
  if (!b) {
    problem(m, "task_started without a payload on %s", t->executor_id);
    return;
  }
  sim_executor *e = &m->execs[x];
  grow((void **)&m->attempts, &m->attempts_cap, t->tid + 1, sizeof *m->attempts);
  if (t->tid > m->max_tid)
    m->max_tid = t->tid;
  sim_attempt *a = &m->attempts[t->tid];
  a->ts = b->ts;
  a->exec = x;
  a->index = t->index;
  a->attempt = t->attempt;
  a->speculative = t->speculative;
  m->c.speculative_launches += t->speculative;
  a->start_ns = m->now;
  a->core = UINT32_MAX;
  for (uint32_t c = 0; c < m->o.cores; c++)
    if (e->core_tid[c] == 0) {
      e->core_tid[c] = t->tid;
      a->core = c;
      e->busy++;
      break;
    }
  if (a->core == UINT32_MAX) {
    problem(m, "tid %" PRIu64 " launched on %s beyond its cores", t->tid, e->id);
    a->core = 0;
  }
  gpu_started(m, a, t);
  /* Its plan, drawn at launch so that one seed gives one run. */
  double mean = m->o.duration_s;
  double d = mean * (0.3 + sim_rng_exp(&m->rng, 0.7));
  a->duration_ns = secs(d) + 1;
  a->throws = sim_rng_unit(&m->rng) < m->o.task_failure;
  a->late_running = sim_rng_unit(&m->rng) < m->o.late_rate;
  if (e->proc != P_RUNNING)
    return; /* a hung process never takes up the launch */
  uint64_t launch = 1 + secs(0.002 + 0.01 * sim_rng_unit(&m->rng));
  if (!a->late_running)
    schedule(m, m->now + launch, EV_RUNNING, x, t->tid);
  if (m->jobs[a->ts->job].stages[a->ts->stage].nparents > 0)
    schedule(m, m->now + launch + a->duration_ns / 10, EV_FETCH, x, t->tid);
  schedule(m, m->now + launch + a->duration_ns, EV_FINISH, x, t->tid);
}

static sim_outcome outcome_of(tl_end_kind k, bool zombie) {
  switch (k) {
  case TL_END_SUCCESS:
    return zombie ? SIM_OUT_ZOMBIE : SIM_OUT_SUCCESS;
  case TL_END_FETCH_FAILED:
    return SIM_OUT_FETCH_FAILED;
  case TL_END_KILLED:
    return SIM_OUT_KILLED;
  case TL_END_EXECUTOR_LOST:
    return SIM_OUT_LOST;
  default:
    return SIM_OUT_FAILED;
  }
}

void cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  sim *m = ud;
  sim_attempt *a = attempt_of(m, t->tid);
  task_binary *b = t->payload;
  if (!a || !a->ts || !b || b->ts != a->ts) {
    problem(m, "task_ended for unknown tid %" PRIu64, t->tid);
    if (end->kind == TL_END_SUCCESS && end->result && end->result_free)
      end->result_free(end->result);
    return;
  }
  sim_ts *ts = a->ts;
  if (end->kind == TL_END_RESUBMITTED) {
    /* A done map index whose output was on a lost executor is pending again. */
    m->c.resubmitted++;
    if (!ts->zombie && ts->done[t->index]) {
      ts->done[t->index] = 0;
      ts->ndone--;
    }
    return;
  }
  if (a->ended) {
    problem(m, "task_ended twice for tid %" PRIu64, t->tid);
    return;
  }
  a->ended = true;
  sim_executor *e = &m->execs[a->exec];
  if (a->core < m->o.cores && e->core_tid[a->core] == t->tid) {
    e->core_tid[a->core] = 0;
    e->busy--;
  }
  sim_outcome out = outcome_of(end->kind, ts->zombie);
  m->c.outcome[out]++;
  if (ts->zombie && end->kind != TL_END_EXECUTOR_LOST)
    ts->drained_attempts++;
  sim_slice sl = {.exec = a->exec,
                  .core = a->core,
                  .start_ns = a->start_ns,
                  .end_ns = m->now,
                  .tid = t->tid,
                  .job = ts->job,
                  .stage_id = t->stage_id,
                  .stage_attempt = t->stage_attempt,
                  .index = t->index,
                  .attempt = t->attempt,
                  .outcome = (uint8_t)out,
                  .speculative = t->speculative};
  gpu_ended(m, a, t, &sl);
  if (sim_record_slice(&m->rec, &sl) < 0)
    oom();
  if (end->kind == TL_END_SUCCESS) {
    if (end->result) {
      if (end->result_free)
        end->result_free(end->result);
      else
        problem(m, "a result without result_free");
    }
    if (!ts->zombie && !ts->done[t->index]) {
      ts->done[t->index] = 1;
      if (++ts->ndone == ts->ntasks)
        became_zombie(m, ts);
    }
    output_landed(m, ts, ts->parts[t->index], a->exec);
    dag_advance(m, ts->job);
  } else if (end->kind == TL_END_FETCH_FAILED) {
    m->c.fetch_failures++;
    if (!ts->fetch_failed && !ts->failed) {
      ts->fetch_failed = true;
      bool was_zombie = ts->zombie;
      became_zombie(m, ts);
      if (!was_zombie) {
        logf_(m, "job %" PRIu32 ": stage %" PRIu32 ".%" PRIu32 " fetch failed: %s", ts->job,
              t->stage_id, t->stage_attempt, end->message ? end->message : "");
        stage_failed(m, ts, "after a fetch failure");
      }
    }
    dag_advance(m, ts->job);
  }
  if (e->ledger == X_DECOM && e->busy == 0)
    schedule(m, m->now + 1, EV_DECOM_REMOVE, a->exec, 0);
}

void cb_taskset_failed(void *ud, const tl_taskset_info *info, const char *reason) {
  sim *m = ud;
  sim_ts *ts = NULL;
  for (size_t i = m->nts; i-- > 0;)
    if (m->ts[i]->id == info->id) {
      ts = m->ts[i];
      break;
    }
  if (!ts) {
    problem(m, "taskset_failed for unknown task set %" PRIu64, info->id);
    return;
  }
  if (ts->failed)
    problem(m, "taskset_failed twice for task set %" PRIu64, info->id);
  ts->failed = true;
  m->c.tasksets_failed++;
  bool was_zombie = ts->zombie;
  became_zombie(m, ts);
  mark(m, SIM_NO_EXEC, SIM_MARK_STAGE_FAILED, "stage %" PRIu32 ".%" PRIu32 ": %.90s",
       info->stage_id, info->stage_attempt, reason ? reason : "");
  logf_(m, "job %" PRIu32 ": stage %" PRIu32 ".%" PRIu32 " failed: %s", ts->job, info->stage_id,
        info->stage_attempt, reason ? reason : "");
  if (!was_zombie)
    stage_failed(m, ts, "after its task set failed");
  dag_advance(m, ts->job);
}

void cb_taskset_released(void *ud, const tl_taskset_info *info, void *payload) {
  sim *m = ud;
  task_binary *b = payload;
  sim_ts *ts = b ? b->ts : NULL;
  if (!ts || ts->id != info->id || ts->binary != b || ts->released) {
    problem(m, "taskset_released for task set %" PRIu64 " with the wrong payload", info->id);
    return;
  }
  ts->released = true;
  ts->binary = NULL;
  free(b);
  m->payloads_live--;
  if (ts->draining && ts->drained_attempts > 0) {
    m->c.zombies_drained++;
    m->c.zombie_attempts_drained += ts->drained_attempts;
    if (ts->failed || ts->fetch_failed)
      m->c.zombies_failed_drained++;
  }
  mark(m, SIM_NO_EXEC, SIM_MARK_TASKSET_RELEASED,
       "task set %" PRIu64 " (stage %" PRIu32 ".%" PRIu32 ")%s", info->id, info->stage_id,
       info->stage_attempt, ts->draining ? ": a zombie drained" : "");
  sim_stage *st = &m->jobs[ts->job].stages[ts->stage];
  if (st->active == ts) {
    st->active = NULL;
    ts->zombie = true;
    dag_advance(m, ts->job);
  }
}

/* A loss began. The ledger reports its end, whichever call or timeout ends it, with
 * executor_removed (below), in the same call for a loss with a real reason. */
void cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *r) {
  sim *m = ud;
  uint32_t x = event_executor(m, "executor_lost", id, executor_ud);
  if (x == UINT32_MAX)
    return;
  m->execs[x].ledger = X_PENDING;
  if (r->kind == TL_LOSS_PENDING) {
    mark(m, x, SIM_MARK_LOST_PENDING, "%s: reason pending", id);
  } else if (r->kind == TL_LOSS_HEARTBEAT_TIMEOUT) {
    m->c.hb_timeouts++;
    mark(m, x, SIM_MARK_HEARTBEAT_TIMEOUT, "%s: no heartbeat", id);
    logf_(m, "%s lost: heartbeat timeout", id);
  } else {
    mark(m, x, SIM_MARK_LOST, "%s: %s", id, r->message ? r->message : "lost");
  }
  /* Its map outputs are gone with it. */
  for (uint32_t j = 0; j < m->jobs_submitted; j++) {
    sim_job *job = &m->jobs[j];
    if (job->state != J_RUNNING)
      continue;
    for (uint32_t k = 0; k < job->nstages; k++) {
      sim_stage *st = &job->stages[k];
      if (st->result)
        continue;
      for (uint32_t p = 0; p < st->nparts; p++)
        if (st->where[p] == (int32_t)x) {
          st->where[p] = -1;
          st->nmissing++;
        }
    }
  }
  for (uint32_t j = 0; j < m->jobs_submitted; j++)
    dag_advance(m, j);
}

/* A loss ended: the executor is gone from the ledger. A pending loss that no reason ended says
 * so here (its second phase came from tl_tick's pending-loss timeout). */
void cb_executor_removed(void *ud, const char *id, void *executor_ud, const tl_loss_reason *r) {
  sim *m = ud;
  uint32_t x = event_executor(m, "executor_removed", id, executor_ud);
  if (x == UINT32_MAX)
    return;
  if (m->execs[x].ledger != X_PENDING)
    problem(m, "executor_removed of %s without its executor_lost", id);
  if (r->kind == TL_LOSS_PENDING_TIMEOUT) {
    m->c.pending_timeouts++;
    mark(m, x, SIM_MARK_PENDING_TIMEOUT, "%s: no reason came", id);
    logf_(m, "%s: no reason came: the pending-loss timeout ended its loss", id);
  }
  executor_removed(m, x);
}

void cb_kill_task(void *ud, tl_tid tid, const char *id, void *executor_ud, bool interrupt,
                  const char *reason) {
  sim *m = ud;
  (void)interrupt;
  (void)reason;
  uint32_t x = event_executor(m, "kill_task", id, executor_ud);
  if (x < m->nexecs)
    schedule(m, m->now + 1 * MS, EV_KILL, x, tid);
}

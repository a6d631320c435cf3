/* tl-sim's DAG layer, Spark's DAGScheduler in miniature (docs/sim.md, "The DAG layer"): stages
 * submitted when their parents are complete, map outputs tracked, failed stages retried and lost
 * outputs resubmitted, a failed job's stages cancelled. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim.h"

#define MAX_STAGE_ATTEMPTS 64 /* a stage resubmitted this often fails its job whatever else */

static bool stage_complete(const sim_stage *st) { return st->nmissing == 0; }

/* The task set became zombie in the simulator's view; if attempts still run, its drain is
 * watched (the SPARK-18553 shape: they end, running reaches 0, the payload comes back). */
void became_zombie(sim *m, sim_ts *ts) {
  if (ts->zombie)
    return;
  ts->zombie = true;
  sim_stage *st = &m->jobs[ts->job].stages[ts->stage];
  if (st->active == ts)
    st->active = NULL;
  tl_taskset_status status;
  if (tl_taskset_get(m->s, ts->id, &status) == TL_OK && status.running > 0)
    ts->draining = true;
}

static void submit_stage(sim *m, uint32_t j, uint32_t k) {
  sim_job *job = &m->jobs[j];
  sim_stage *st = &job->stages[k];
  sim_ts *ts = xcalloc(1, sizeof *ts);
  ts->job = j;
  ts->stage = k;
  ts->stage_attempt = st->attempts;
  ts->parts = xcalloc(st->nmissing, sizeof *ts->parts);
  ts->index_of = xcalloc(st->nparts, sizeof *ts->index_of);
  for (uint32_t p = 0; p < st->nparts; p++) {
    ts->index_of[p] = -1;
    if (st->where[p] == -1) {
      ts->index_of[p] = (int32_t)ts->ntasks;
      ts->parts[ts->ntasks++] = p;
    }
  }
  ts->done = xcalloc(ts->ntasks, 1);
  ts->binary = xcalloc(1, sizeof *ts->binary);
  ts->binary->ts = ts;
  snprintf(ts->binary->lineage, sizeof ts->binary->lineage, "job %" PRIu32 " stage %" PRIu32, j,
           st->stage_id);
  tl_taskset_desc d = {.stage_id = st->stage_id,
                       .stage_attempt = st->attempts,
                       .priority = j,
                       .ntasks = ts->ntasks,
                       .payload = ts->binary,
                       .shuffle_map = !st->result};
  gpu_request(m, st, &d);
  sim_pool_tags pt;
  pools_request(m, j, &pt, &d);
  int rc = tl_submit(m->s, &d, &ts->id);
  if (rc != TL_OK) {
    problem(m, "tl_submit(stage %" PRIu32 ".%" PRIu32 "): %s", st->stage_id, st->attempts,
            tl_err_name(rc));
    free(ts->binary);
    free(ts->parts);
    free(ts->index_of);
    free(ts->done);
    free(ts);
    return;
  }
  m->payloads_live++;
  grow((void **)&m->ts, &m->ts_cap, m->nts + 1, sizeof *m->ts);
  m->ts[m->nts++] = ts;
  st->active = ts;
  if (st->attempts == 0) {
    mark(m, SIM_NO_EXEC, SIM_MARK_STAGE_SUBMITTED,
         "job %" PRIu32 " stage %" PRIu32 ": %" PRIu32 " tasks", j, st->stage_id, ts->ntasks);
  } else {
    mark(m, SIM_NO_EXEC, st->lost_outputs ? SIM_MARK_STAGE_RESUBMITTED : SIM_MARK_STAGE_SUBMITTED,
         "job %" PRIu32 " stage %" PRIu32 ".%" PRIu32 ": %" PRIu32 " tasks, %s", j, st->stage_id,
         st->attempts, ts->ntasks, st->why ? st->why : "outputs lost");
    logf_(m,
          "job %" PRIu32 ": stage %" PRIu32 " attempt %" PRIu32 " submitted (%" PRIu32
          " tasks, %s)",
          j, st->stage_id, st->attempts, ts->ntasks, st->why ? st->why : "outputs lost");
  }
  st->attempts++;
  st->why = NULL;
  st->lost_outputs = false;
}

static void job_fail(sim *m, uint32_t j, const char *why) {
  sim_job *job = &m->jobs[j];
  if (job->state != J_RUNNING)
    return;
  job->state = J_FAILED;
  job->done_ns = m->now;
  m->c.jobs_failed++;
  mark(m, SIM_NO_EXEC, SIM_MARK_JOB_DONE, "job %" PRIu32 " failed: %s", j, why);
  logf_(m, "job %" PRIu32 " FAILED: %s", j, why);
  /* Cancel what still runs, as Spark does when a job fails. */
  for (uint32_t k = 0; k < job->nstages; k++) {
    sim_stage *st = &job->stages[k];
    bool live = false;
    for (size_t i = 0; i < m->nts; i++)
      if (m->ts[i]->job == j && m->ts[i]->stage == k && !m->ts[i]->released)
        live = true;
    if (!live)
      continue;
    if (st->active)
      became_zombie(m, st->active);
    int rc = tl_cancel_stage(m->s, st->stage_id, "job failed");
    if (rc != TL_OK && rc != TL_ENOENT)
      problem(m, "tl_cancel_stage(%" PRIu32 "): %s", st->stage_id, tl_err_name(rc));
  }
}

/* A stage attempt failed (taskset_failed, or a fetch failure): retry it or fail the job. */
void stage_failed(sim *m, sim_ts *ts, const char *why) {
  sim_job *job = &m->jobs[ts->job];
  if (job->state != J_RUNNING)
    return;
  sim_stage *st = &job->stages[ts->stage];
  if (job->cancelled) { /* its tag was cancelled (pools.c): no retry */
    m->c.jobs_cancelled++;
    job_fail(m, ts->job, "cancelled by tag");
    return;
  }
  st->failures++;
  if (st->failures > m->o.stage_retries) {
    char buf[96];
    snprintf(buf, sizeof buf, "stage %" PRIu32 " failed %" PRIu32 " times", st->stage_id,
             st->failures);
    job_fail(m, ts->job, buf);
    return;
  }
  st->why = why;
  m->c.stage_retries++;
}

/* Spark's submitStage, in one pass: a stage is submitted when its job needs it, it has missing
 * partitions, no attempt of it is active and its parents are complete. A parent of an active
 * stage is not resubmitted until that stage's tasks report the missing input (fetch failure). */
void dag_advance(sim *m, uint32_t j) {
  sim_job *job = &m->jobs[j];
  if (job->state != J_RUNNING || m->stopping)
    return;
  sim_stage *result = &job->stages[job->nstages - 1];
  if (stage_complete(result)) {
    job->state = J_SUCCEEDED;
    job->done_ns = m->now;
    m->c.jobs_succeeded++;
    mark(m, SIM_NO_EXEC, SIM_MARK_JOB_DONE, "job %" PRIu32 " succeeded", j);
    logf_(m, "job %" PRIu32 " succeeded (%.3f s)", j,
          (double)(job->done_ns - job->submitted_ns) / 1e9);
    return;
  }
  bool needed[64] = {false};
  needed[job->nstages - 1] = true;
  for (uint32_t k = job->nstages; k-- > 0;) {
    sim_stage *st = &job->stages[k];
    if (!needed[k] || stage_complete(st) || st->active)
      continue;
    for (uint32_t i = 0; i < st->nparents; i++)
      needed[st->parents[i]] = true;
  }
  for (uint32_t k = 0; k < job->nstages; k++) {
    sim_stage *st = &job->stages[k];
    if (!needed[k] || stage_complete(st) || st->active)
      continue;
    bool ready = true;
    for (uint32_t i = 0; i < st->nparents; i++)
      if (!stage_complete(&job->stages[st->parents[i]]))
        ready = false;
    if (!ready)
      continue;
    if (st->attempts >= MAX_STAGE_ATTEMPTS) {
      job_fail(m, j, "a stage was resubmitted too often");
      return;
    }
    if (st->attempts > 0) {
      if (!st->why) {
        /* Not after its own failure: its outputs were lost and a child needs them. */
        bool child_fetch = false;
        for (uint32_t c = k + 1; c < job->nstages; c++)
          for (uint32_t i = 0; i < job->stages[c].nparents; i++)
            if (job->stages[c].parents[i] == k && job->stages[c].attempts > 0)
              child_fetch = true;
        if (child_fetch) {
          st->why = "a child's fetch failed";
          st->lost_outputs = true;
          m->c.parent_resubmits++;
        } else {
          st->why = "its outputs were lost";
          st->lost_outputs = true;
          m->c.output_resubmits++;
        }
      }
    }
    submit_stage(m, j, k);
  }
}

/* A result landed for partition p of the stage (from any attempt). */
void output_landed(sim *m, sim_ts *from, uint32_t p, uint32_t x) {
  sim_job *job = &m->jobs[from->job];
  sim_stage *st = &job->stages[from->stage];
  if (job->state != J_RUNNING)
    return;
  if (st->where[p] == -1) {
    st->where[p] = st->result ? RESULT_DONE : (int32_t)x;
    st->nmissing--;
  } else if (!st->result && st->where[p] != (int32_t)x && st->where[p] >= 0) {
    st->where[p] = (int32_t)x; /* the newest copy; both are live */
  }
  sim_ts *active = st->active;
  if (active && active != from && active->index_of[p] >= 0) {
    uint32_t i = (uint32_t)active->index_of[p];
    if (!active->done[i]) {
      /* The header's tl_partition_completed: the result came from another attempt. */
      int rc = tl_partition_completed(m->s, st->stage_id, i);
      if (rc != TL_OK)
        problem(m, "tl_partition_completed(%" PRIu32 ", %" PRIu32 "): %s", st->stage_id, i,
                tl_err_name(rc));
      m->c.partition_completed++;
      active->done[i] = 1;
      if (++active->ndone == active->ntasks)
        became_zombie(m, active);
    }
  }
}

/* The jobs' table, every entry J_WAITING until its job arrives. */
void dag_init(sim *m) { m->jobs = xcalloc(m->o.jobs, sizeof *m->jobs); }

/* A job arrives (EV_JOB): its stages are made, a chain, or a fan-in for odd jobs of three stages
 * or more; what can run is submitted, and the next job is scheduled. */
void job_arrive(sim *m, uint32_t j) {
  sim_job *job = &m->jobs[j];
  pools_arrive(m, j);
  uint32_t n = m->o.stages;
  job->nstages = n;
  job->stages = xcalloc(n, sizeof *job->stages);
  job->state = J_RUNNING;
  job->submitted_ns = m->now;
  bool fan_in = (j % 2 == 1) && n > 2;
  for (uint32_t k = 0; k < n; k++) {
    sim_stage *st = &job->stages[k];
    st->stage_id = m->next_stage_id++;
    st->job = j;
    st->result = k == n - 1;
    uint32_t lo = m->o.tasks / 2 ? m->o.tasks / 2 : 1;
    st->nparts = lo + sim_rng_below(&m->rng, m->o.tasks + 1);
    st->where = xcalloc(st->nparts, sizeof *st->where);
    for (uint32_t p = 0; p < st->nparts; p++)
      st->where[p] = -1;
    st->nmissing = st->nparts;
    gpu_stage_draw(m, st);
    if (k == 0)
      continue;
    if (fan_in && st->result) {
      for (uint32_t i = 0; i < k && i < 16; i++)
        st->parents[st->nparents++] = i;
    } else if (!fan_in) {
      st->parents[st->nparents++] = k - 1;
    }
  }
  m->jobs_submitted = j + 1;
  logf_(m, "job %" PRIu32 " submitted: %" PRIu32 " stages (%s)", j, n, fan_in ? "fan-in" : "chain");
  dag_advance(m, j);
  if (j + 1 < m->o.jobs)
    schedule(m, m->now + secs(m->o.job_interval_s), EV_JOB, j + 1, 0);
}

/* Frees what dag_init, job_arrive and submit_stage made: the task sets (their payloads came back
 * through taskset_released, at the latest in tl_scheduler_free), the stages and the jobs. */
void dag_free(sim *m) {
  for (size_t i = 0; i < m->nts; i++) {
    sim_ts *ts = m->ts[i];
    free(ts->parts);
    free(ts->index_of);
    free(ts->done);
    free(ts);
  }
  free(m->ts);
  for (uint32_t j = 0; j < m->jobs_submitted; j++) {
    for (uint32_t k = 0; k < m->jobs[j].nstages; k++)
      free(m->jobs[j].stages[k].where);
    free(m->jobs[j].stages);
  }
  free(m->jobs);
}

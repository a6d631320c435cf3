/* The jobs: a tiny DAG layer over the ledger. Stages submitted one after another, the ledger's
 * task and task-set callbacks counted per stage, the binaries forgotten when a task set is
 * released, and the payload resolver of a restore.
 *
 * Ledger callbacks: they run on the loop's thread, after the ledger's lock is released, from
 * inside the call that made them. They only record, or defer work to the loop. */

#include "driver.h"

/* ---------------------------------------------------------------------------------------------
 * Ledger callbacks: they run on the loop's thread, after the ledger's lock is released, from
 * inside the call that made them. They only record, or defer work to the loop.
 * ------------------------------------------------------------------------------------------- */

static void resources_at_end(driver *d);

static stage *stage_of(driver *d, tl_taskset_id id) {
  for (size_t i = 0; i < d->jobs.njobs; i++)
    for (uint32_t k = 0; k < d->jobs.list[i].nstages; k++)
      if (d->jobs.list[i].stages[k].taskset == id)
        return &d->jobs.list[i].stages[k];
  return NULL;
}

/* Submits a job's stage k (stage id job id x MAX_STAGES + k, priority the job id). From main
 * and from taskset_released; its revive_offers is delivered after the caller returns. */
int submit_stage(driver *d, job *j, uint32_t k) {
  stage *st = &j->stages[k];
  stage_binary *b = malloc(sizeof *b);
  if (!b)
    die_oom();
  b->stage = st;
  b->len = strlen(st->kind);
  tl_resource_request req[STAGE_RESOURCES_MAX];
  for (uint32_t i = 0; i < st->nresources; i++)
    req[i] = (tl_resource_request){st->resources[i].name, st->resources[i].amount,
                                   st->resources[i].share};
  tl_taskset_desc desc = {.stage_id = j->id * MAX_STAGES + k,
                          .priority = j->id,
                          .ntasks = st->ntasks,
                          .payload = b,
                          .profile = st->profile,
                          .pool = st->pool[0] ? st->pool : NULL,
                          .resources = st->nresources > 0 ? req : NULL,
                          .nresources = st->nresources};
  int rc = tl_submit(d->run.s, &desc, &st->taskset);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_submit: %s\n", tl_err_name(rc));
    free(b);
    return rc;
  }
  j->current = k;
  record_gate(d); /* its launches wait for a durable record that holds it */
  return 0;
}

void cb_task_ended(void *ud, const tl_task_info *task, const tl_task_end *end) {
  driver *d = ud;
  stage *st = stage_of(d, task->taskset);
  if (!st)
    return;
  if (end->kind == TL_END_SUCCESS) {
    st->succeeded++;
    st->zombie_finished += st->failed;
    faults_task_finished(d);
  } else {
    st->failed_attempts++;
    st->killed += end->kind == TL_END_KILLED;
    if (end->counts_toward_failures)
      st->counted_failures++;
  }
}

/* tl_kill_stage (or a reconciliation) asks for an attempt to be killed: a KILL to its executor,
 * if it is still connected (if not, the attempt ends with the executor's loss); gathered into
 * few frames while a reconciliation holds that connection's kills (kills.c). Found by id:
 * executors are registered without a ud, as a connection is freed before its executor is. */
void cb_kill_task(void *ud, tl_tid tid, const char *executor_id, void *executor_ud, bool interrupt,
                  const char *reason) {
  driver *d = ud;
  (void)executor_ud;
  for (conn *c = d->link.list; c; c = c->next)
    if (c->registered && !c->closing && !strcmp(c->id, executor_id)) {
      kill_tid(d, c, tid, interrupt, reason);
      return;
    }
}

void cb_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  driver *d = ud;
  stage *st = stage_of(d, ts->id);
  if (st)
    st->failed = true;
  fprintf(stderr, "tl-driver: task set %" PRIu64 " failed: %s\n", ts->id, reason);
  /* --kill-on-job-failure: the job is lost, so its running attempts are not worth finishing
   * (Spark's DAG scheduler kills them when it fails a job). They end KILLED, and the zombie
   * task set is released as soon as they have. */
  if (st && d->jobs.kill_on_failure) {
    int rc = tl_kill_stage(d->run.s, ts->stage_id, true, "the job failed");
    if (rc < 0)
      fprintf(stderr, "tl-driver: tl_kill_stage %" PRIu32 ": %s\n", ts->stage_id, tl_err_name(rc));
  }
}

/* A task set was released: no launch of it will come again, so every executor holding its
 * binary is told to drop it (FORGET); an executor's cache then holds only live task sets. */
static void forget_everywhere(driver *d, tl_taskset_id id) {
  for (conn *c = d->link.list; c; c = c->next)
    for (size_t i = 0; i < c->nsent; i++)
      if (c->sent[i] == id) {
        c->sent[i] = c->sent[--c->nsent];
        if (c->registered && !c->closing) {
          tlc_msg m = {.type = TLC_MSG_FORGET, .u.forget = {id}};
          encode(c, &m);
          send_out(c);
        }
        break;
      }
}

/* A stage's task set is gone: the next stage is submitted if it succeeded, else the job fails;
 * once every job is done, the executors are stopped. */
void cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  driver *d = ud;
  stage_binary *b = payload;
  stage *st = b->stage;
  job *j = st->job;
  free(b);
  forget_everywhere(d, ts->id);
  st->released = true;
  uint32_t k = (uint32_t)(st - j->stages);
  if (st->failed || st->succeeded != st->ntasks) {
    j->failed = true;
    j->done = true;
  } else if (k + 1 < j->nstages && !d->phase.closed && !d->phase.stopping) {
    if (submit_stage(d, j, k + 1) < 0)
      j->failed = j->done = true;
  } else {
    j->done = true;
  }
  state_due(d); /* a stage boundary */
  bool all = true;
  for (size_t i = 0; i < d->jobs.njobs; i++)
    all = all && d->jobs.list[i].done;
  if (all && !d->phase.closed) {
    d->jobs.end_ns = uv_hrtime();
    resources_at_end(d);
    phase_stop(d);
  }
}

/* The executors' resources when the last job ended (tl_resource_totals: every executor the
 * ledger holds), for the summary: with every task ended, nothing may be held. */
static void resources_at_end(driver *d) {
  tl_resource_info info[TLC_RESOURCES_MAX];
  size_t n = 0;
  if (tl_resource_totals(d->run.s, info, TLC_RESOURCES_MAX, &n) < 0)
    return;
  d->jobs.res_names = n;
  for (size_t i = 0; i < n && i < TLC_RESOURCES_MAX; i++) {
    d->jobs.res_addresses += info[i].addresses;
    d->jobs.res_held += info[i].addresses - info[i].free;
    d->jobs.res_used += info[i].used;
  }
}

/* The resolver of tl_scheduler_restore: a task set's payload is its stage's binary. */
bool cb_taskset_restored(void *ud, const tl_taskset_info *ts, void **payload) {
  stage *st = stage_of(ud, ts->id);
  if (!st)
    return false; /* aborted by the restore; its release then carries NULL */
  stage_binary *b = malloc(sizeof *b);
  if (!b)
    die_oom();
  b->stage = st;
  b->len = strlen(st->kind);
  *payload = b;
  return true;
}

/* The jobs of the command line, their stages not yet submitted. */
void jobs_configure(driver *d, const driver_opts *o) {
  d->jobs.kill_on_failure = o->kill_on_failure;
  d->jobs.njobs = o->njobs;
  for (size_t i = 0; i < o->njobs; i++) {
    job *j = &d->jobs.list[i];
    j->id = (uint32_t)i;
    j->nstages = o->jobs[i].nstages;
    for (uint32_t k = 0; k < j->nstages; k++) {
      stage *st = &j->stages[k];
      st->job = j;
      strcpy(st->kind, o->jobs[i].stages[k].kind);
      st->ntasks = o->jobs[i].stages[k].ntasks;
      st->profile = o->jobs[i].stages[k].profile;
      memcpy(st->pool, o->jobs[i].stages[k].pool, sizeof st->pool);
      st->nresources = o->jobs[i].stages[k].nresources;
      memcpy(st->resources, o->jobs[i].stages[k].resources, sizeof st->resources);
      d->jobs.total_tasks += st->ntasks;
      d->jobs.has_crash = d->jobs.has_crash || !strcmp(st->kind, "crash");
    }
  }
}

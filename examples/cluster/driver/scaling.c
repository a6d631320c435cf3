/* The executors the launcher starts: their records and ends (on_end), the ones active now,
 * starting more and releasing idle ones (dynamic allocation), and whether the run is starved. */

#include "driver.h"

/* The record of an executor the launcher was asked to start; NULL for any other id. */
exec_rec *find_exec(driver *d, const char *id) {
  for (uint32_t i = 0; i < d->scaling.nexecs; i++)
    if (!strcmp(d->scaling.execs[i].id, id))
      return &d->scaling.execs[i];
  return NULL;
}

/* Whether e is active: its end has not come and the driver did not release it, and it was
 * started by this process or, adopted after a crash, the ledger still holds it (an adopted
 * executor's end is not reported here: its removal from the ledger is that end). */
static bool exec_active(driver *d, const exec_rec *e) {
  tl_executor_state state;
  if (e->ended || e->released)
    return false;
  return e->started || (e->adopted && in_ledger(d, e->id, &state));
}

/* Executors active (exec_active). */
uint32_t active_executors(driver *d) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->scaling.nexecs; i++)
    n += exec_active(d, &d->scaling.execs[i]);
  return n;
}

/* Without --accept nothing but the launcher's executors can run the jobs: once no executor it
 * started is running and the ledger holds no executor that can take tasks, the jobs cannot
 * finish, so the run gives up now instead of waiting for --timeout-s (say, every executor died
 * of `crash` tasks whose failures did not yet reach max_task_failures). With --accept the
 * driver waits: executors started elsewhere may still come; with dynamic allocation it starts
 * new ones. */
void check_starved(driver *d) {
  if (d->run.accept > 0 || d->scaling.dynamic || d->recovery.recovered || d->phase.stopping ||
      d->phase.closed || !d->run.launcher || d->run.ops->running(d->run.launcher) > 0)
    return;
  tl_stats st;
  tl_stats_get(d->run.s, &st);
  if (st.executors_alive + st.executors_decommissioning == 0)
    phase_give_up(d, "no executor started by the launcher is running and none can take tasks");
}

/* The launcher's account of an executor's end: the second phase of its loss, whether its
 * connection closed already (the executor is PENDING_LOSS) or not yet (ALIVE: both phases at
 * once; the close then finds it removed). One the driver released is removed as decommissioned
 * instead (not a loss); once the driver is stopping, nothing is reported. */
void on_end(void *ud, const launcher_end *end) {
  driver *d = ud;
  exec_rec *e = find_exec(d, end->executor_id);
  if (!e || !e->started || e->ended) {
    fprintf(stderr, "tl-driver: an end for %s, which is not running\n", end->executor_id);
    return;
  }
  e->ended = true;
  e->kind = end->kind;
  e->caused_by_app = end->caused_by_app;
  e->exit_code = end->exit_code;
  e->requested = end->requested;
  copy_text(e->reason, sizeof e->reason, end->reason);
  copy_text(e->source, sizeof e->source, end->source);
  bool clean = end->kind == TL_LOSS_EXITED && end->exit_code == 0;
  if (!clean || !d->phase.stopping)
    logf_(d, "executor %s ended: %s (%s)", e->id, e->reason, e->source);
  tl_executor_state state;
  if (!d->phase.stopping && !d->phase.closed && in_ledger(d, e->id, &state)) {
    if (e->released) {
      remove_released(d, e->id);
    } else {
      tl_loss_reason r = {.kind = end->kind,
                          .caused_by_app = end->caused_by_app,
                          .exit_code = end->exit_code,
                          .message = end->reason};
      report_loss(d, e->id, &r, DETECTED_END, end->source);
    }
  }
  phase_check(d);
}

/* ---------------------------------------------------------------------------------------------
 * Dynamic allocation (--min-executors/--max-executors): Spark's ExecutorAllocationManager,
 * simplified.
 *
 * Demand is pushed, not polled: the ledger's demand_changed event keeps the totals
 * (scaling.demand: tasks pending, speculative copies waiting, attempts running, unschedulable
 * task sets), and taskset_unschedulable / taskset_schedulable are logged; the periodic check
 * reads the kept totals and never calls tl_stats_get.
 *
 * Growing. While tasks have been pending (pending or speculative copies waiting) for
 * --backlog-timeout, each round (one every --backlog-timeout while the backlog lasts) starts
 * to_add more executors and doubles to_add (1, 2, 4, ...), as Spark does, never beyond
 * --max-executors active, nor beyond what the pending, speculative and running tasks could use
 * (their count over each executor's task slots). A task set no live executor may run
 * (unschedulable: excluded everywhere, or asking for more than any executor has) asks for more
 * even when the slots would do, as Spark's ExecutorAllocationManager does for unschedulable task
 * sets (SPARK-31418): at least one executor more than active per slots' worth of them.
 * Executors started and not yet registered count as active, so a slow start is not answered
 * with more starts. When no task is pending, to_add is back to 1.
 *
 * Shrinking. An executor the launcher started that has run nothing for --idle-timeout is
 * released, while more than --min-executors are active: tl_executor_decommission first (no
 * launch reaches it any more), then, as it runs nothing, FORGET for every binary it holds and
 * STOP. Its end is requested, not a loss: when its connection closes (or its end comes first)
 * it is removed from the ledger as TL_LOSS_DECOMMISSIONED, which cb_executor_lost counts as a
 * release.
 *
 * Replacing. Fewer than --min-executors active (some were lost): new ones are started at once.
 * ------------------------------------------------------------------------------------------- */

/* Asks the launcher for n more executors, exec-<next> onwards; how many it started. An id the
 * ledger already knows (an executor started elsewhere, --accept, registered under it) is
 * skipped: the launcher's executor would be refused, and its end taken for the other's. */
uint32_t start_executors(driver *d, uint32_t n) {
  uint32_t done = 0;
  while (done < n && d->scaling.nexecs < MAX_STARTED) {
    exec_rec *e = &d->scaling.execs[d->scaling.nexecs++];
    snprintf(e->id, sizeof e->id, "exec-%" PRIu32, d->scaling.nexecs);
    e->profile = d->scaling.start_profile; /* its arguments: scaling_executor_args */
    tl_executor_status es;
    if (tl_executor_get(d->run.s, e->id, &es) != TL_ENOENT) {
      logf_(d, "%s is taken by an executor started elsewhere: not started", e->id);
      continue;
    }
    int rc = d->run.ops->start(d->run.launcher, e->id);
    if (rc < 0) {
      fprintf(stderr, "tl-driver: the %s launcher could not start %s: %s\n", d->run.ops->name,
              e->id, rc == -1 ? "failed" : uv_strerror(rc));
      break;
    }
    e->started = true;
    d->scaling.started++;
    done++;
    if (e->profile)
      logf_(d, "executor %s requested, of profile %" PRIu32, e->id, e->profile);
    else
      logf_(d, "executor %s requested", e->id);
  }
  uint32_t active = active_executors(d);
  if (active > d->scaling.most_active)
    d->scaling.most_active = active;
  if (done > 0)
    state_due(d); /* a record soon holds them (and a Slurm job's id), for a crash to find */
  return done;
}

/* The launcher's question (launcher_config.executor_args): the extra tl-executor arguments of
 * an executor about to start, its profile's shape (--executor-profile); none for profile 0. */
const char *const *scaling_executor_args(void *ud, const char *executor_id, size_t *n) {
  driver *d = ud;
  exec_rec *e = find_exec(d, executor_id);
  *n = 0;
  for (size_t i = 0; e && e->profile && i < d->scaling.nshapes; i++)
    if (d->scaling.shapes[i].profile == e->profile) {
      *n = d->scaling.shapes[i].nargs;
      return d->scaling.shapes[i].args;
    }
  return NULL;
}

/* The launcher's other question (launcher_config.executor_gpus, Slurm): the GPUs an executor
 * about to start asks for: its profile's --executor-profile-gpus, else --executor-gpus. */
uint32_t scaling_executor_gpus(void *ud, const char *executor_id) {
  driver *d = ud;
  exec_rec *e = find_exec(d, executor_id);
  for (size_t i = 0; e && e->profile && i < d->scaling.nshapes; i++)
    if (d->scaling.shapes[i].profile == e->profile && d->scaling.shapes[i].gpus_set)
      return d->scaling.shapes[i].gpus;
  return d->run.lcfg.gpus;
}

/* The profile a backlog needs: among the profiles the driver can start executors of (0, and
 * each --executor-profile), the one with the most pending tasks; its pending and running
 * attempts in *pending and *running. */
static uint32_t backlog_profile(driver *d, uint64_t *pending, uint64_t *running) {
  static tl_taskset_status ts[MAX_JOBS * MAX_STAGES];
  size_t n = 0;
  uint64_t pend[1 + MAX_PROFILE_SHAPES] = {0}, run[1 + MAX_PROFILE_SHAPES] = {0};
  if (tl_taskset_list(d->run.s, ts, MAX_JOBS * MAX_STAGES, &n) < 0)
    n = 0;
  for (size_t i = 0; i < n && i < MAX_JOBS * MAX_STAGES; i++) {
    size_t k = 0; /* the shape's slot: 0 for profile 0 (and any profile without a shape) */
    for (size_t j = 0; ts[i].profile && j < d->scaling.nshapes; j++)
      if (d->scaling.shapes[j].profile == ts[i].profile)
        k = j + 1;
    pend[k] += ts[i].pending;
    run[k] += ts[i].running;
  }
  size_t best = 0;
  for (size_t k = 1; k <= d->scaling.nshapes; k++)
    if (pend[k] > pend[best])
      best = k;
  *pending = pend[best];
  *running = run[best];
  return best == 0 ? 0 : d->scaling.shapes[best - 1].profile;
}

/* Executors of one profile active (exec_active). */
static uint32_t active_of_profile(driver *d, uint32_t profile) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->scaling.nexecs; i++)
    n += exec_active(d, &d->scaling.execs[i]) && d->scaling.execs[i].profile == profile;
  return n;
}

/* Releases an idle executor (above); returns whether it did. */
static bool release_executor(driver *d, conn *c, exec_rec *e) {
  int rc = tl_executor_decommission(d->run.s, c->id, "idle: released by dynamic allocation");
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_executor_decommission %s: %s\n", c->id, tl_err_name(rc));
    return false;
  }
  c->released = true;
  e->released = true;
  d->scaling.released++;
  logf_(d, "releasing %s: idle", c->id);
  /* Its STOP waits for a record that holds the release. Sent before, a crash could make it exit
   * while the newest record holds it running: the restart would wait for it, lose it to the
   * recovery timeout, and run again any task whose end no record covered yet. */
  hold_for_record(d, c);
  faults_released(d);
  while (c->nsent > 0) { /* it will run nothing again */
    tlc_msg m = {.type = TLC_MSG_FORGET, .u.forget = {c->sent[--c->nsent]}};
    encode(c, &m);
  }
  send_stop(c, "released: idle");
  return true;
}

void on_alloc_tick(uv_timer_t *t) {
  driver *d = t->data;
  if (d->phase.stopping || d->phase.closed || !d->run.launcher)
    return;
  uint64_t now = uv_hrtime();
  uint32_t active = active_executors(d);
  if (active < d->scaling.min_executors) {
    logf_(d, "%" PRIu32 " executors active, fewer than --min-executors: starting more", active);
    if (start_executors(d, d->scaling.min_executors - active) < d->scaling.min_executors - active &&
        active_executors(d) == 0)
      phase_give_up(d, "the launcher cannot start executors");
    return;
  }
  if (!d->phase.offering)
    return;
  const tl_demand *dm = &d->scaling.demand; /* the last demand_changed's totals */
  if (dm->tasks_pending + dm->tasks_speculatable == 0) {
    d->scaling.backlog_since = 0;
    d->scaling.to_add = 1;
  } else if (d->scaling.backlog_since == 0) {
    d->scaling.backlog_since = now;
    d->scaling.next_request = now + d->scaling.backlog_ns;
  } else if (now >= d->scaling.next_request) {
    uint64_t slots = (uint64_t)d->run.cores + d->run.queue;
    uint64_t pending = dm->tasks_pending + dm->tasks_speculatable, running = dm->attempts_running;
    uint32_t profile = 0, others = 0;
    if (d->scaling.nshapes > 0) { /* the backlog's profile, and the executors of the others */
      profile = backlog_profile(d, &pending, &running);
      others = active - active_of_profile(d, profile);
    }
    uint64_t needed = others + (pending + running + slots - 1) / slots;
    uint64_t unsched = (dm->unschedulable_tasksets + slots - 1) / slots;
    if (unsched > 0 && needed < (uint64_t)active + unsched)
      needed = (uint64_t)active + unsched; /* SPARK-31418: more than the slots say */
    uint32_t target =
        needed < d->scaling.max_executors ? (uint32_t)needed : d->scaling.max_executors;
    if (target > active) {
      uint32_t add = target - active < d->scaling.to_add ? target - active : d->scaling.to_add;
      logf_(d, "tasks pending for %" PRIu64 " ms: requesting %" PRIu32 " more executors",
            (now - d->scaling.backlog_since) / 1000000, add);
      d->scaling.start_profile = profile;
      uint32_t got = start_executors(d, add);
      d->scaling.start_profile = 0;
      d->scaling.to_add = got == d->scaling.to_add ? 2 * d->scaling.to_add : 1;
      if (got < add && active_executors(d) == 0)
        phase_give_up(d, "the launcher cannot start executors");
    }
    d->scaling.next_request = now + d->scaling.backlog_ns;
  }
  active = active_executors(d);
  for (conn *c = d->link.list; c && !d->phase.stopping && active > d->scaling.min_executors;
       c = c->next) {
    if (!c->registered || c->closing || c->released || c->idle_since == 0 ||
        now - c->idle_since < d->scaling.idle_ns)
      continue;
    exec_rec *e = find_exec(d, c->id);
    tl_executor_status es;
    if (!e || !exec_active(d, e) || tl_executor_get(d->run.s, c->id, &es) < 0 ||
        es.state != TL_EXECUTOR_ALIVE || es.running != 0)
      continue;
    if (release_executor(d, c, e))
      active--;
  }
}

/* Dynamic allocation's settings, and the executors' records (MAX_STARTED, allocated once). The
 * periodic check runs every quarter of the shorter of its timeouts, within 10..250 ms. */
/* The ledger's demand events (tl_callbacks; set with dynamic allocation only). */
void cb_demand_changed(void *ud, const tl_demand *demand) {
  driver *d = ud;
  d->scaling.demand = *demand;
}

void cb_taskset_unschedulable(void *ud, const tl_taskset_info *ts, const char *reason) {
  logf_(ud, "stage %" PRIu32 ".%" PRIu32 " is unschedulable: %s", ts->stage_id, ts->stage_attempt,
        reason);
}

void cb_taskset_schedulable(void *ud, const tl_taskset_info *ts) {
  logf_(ud, "stage %" PRIu32 ".%" PRIu32 " is schedulable again", ts->stage_id, ts->stage_attempt);
}

void scaling_configure(driver *d, const driver_opts *o) {
  d->scaling.dynamic = o->dynamic;
  if (d->scaling.dynamic) {
    d->scaling.min_executors = o->min_executors;
    d->scaling.max_executors = o->max_executors;
    d->scaling.backlog_ns = o->backlog_ms * UINT64_C(1000000);
    d->scaling.idle_ns = o->idle_ms * UINT64_C(1000000);
    d->scaling.to_add = 1;
    uint64_t period = (o->backlog_ms < o->idle_ms ? o->backlog_ms : o->idle_ms) / 4;
    d->scaling.tick_ms = period < 10 ? 10 : period > 250 ? 250 : period;
    d->scaling.shapes = o->shapes;
    d->scaling.nshapes = o->nshapes;
  }
  d->scaling.execs = calloc(MAX_STARTED, sizeof *d->scaling.execs);
  if (!d->scaling.execs)
    die_oom();
}

void scaling_init(driver *d) {
  uv_timer_init(d->run.loop, &d->scaling.alloc_timer);
  d->scaling.alloc_timer.data = d;
}

/* Dynamic allocation's periodic check begins. */
void scaling_start(driver *d) {
  uv_timer_start(&d->scaling.alloc_timer, on_alloc_tick, d->scaling.tick_ms, d->scaling.tick_ms);
}

/* A restarted run: the executors of the run before the crash are adopted (exec_rec.adopted):
 * they reconnect by themselves; none is started. A launcher that can take them back by the
 * handle the record kept (slurm: the job id) does, and reports their ends from then on. */
void adopt_executors(driver *d) {
  for (uint32_t i = 0; i < d->scaling.nexecs && d->run.ops->adopt; i++) {
    exec_rec *e = &d->scaling.execs[i];
    if (!e->adopted || !e->handle[0])
      continue;
    int arc = d->run.ops->adopt(d->run.launcher, e->id, e->handle);
    if (arc < 0) {
      fprintf(stderr, "tl-driver: the %s launcher cannot take back %s (%s): %s\n", d->run.ops->name,
              e->id, e->handle, uv_strerror(arc));
      continue;
    }
    e->adopted = false;
    e->started = true;
    d->scaling.launcher_adopted++;
    logf_(d, "executor %s: taken back by the %s launcher (%s)", e->id, d->run.ops->name, e->handle);
  }
}

/* The stop grace ran out, or the run gives up while stopping: every executor the launcher still
 * runs is marked stopped by force, and the launcher stops them (their ends follow, as
 * requested). */
void scaling_force_stop(driver *d) {
  if (!d->run.launcher)
    return;
  for (uint32_t i = 0; i < d->scaling.nexecs; i++)
    if (d->scaling.execs[i].started && !d->scaling.execs[i].ended && !d->scaling.execs[i].forced) {
      d->scaling.execs[i].forced = true;
      d->scaling.forced++;
    }
  d->run.ops->stop_all(d->run.launcher);
}

void scaling_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->scaling.alloc_timer, on_closed);
}

void scaling_free(driver *d) { free(d->scaling.execs); }

/* The test faults of tl-driver's command line, behind one seam: the rest of the driver calls
 * only the faults_ hooks below, at the points a test needs, and each does nothing unless a
 * test-only option asked for its fault. The faults: --kill-executor-after, --external-kill-after,
 * --stop-executor-after (exec-1 killed or stopped once N tasks finished), --bad-client (the
 * tl-badclient processes, the samples and the verdict they need) and --crash-in-state-write (the
 * driver killed in one of its state writes, by state.c; its release[+K] form is counted here). */

#include <signal.h>

#include "driver.h"

/* Samples the ledger's ALIVE executors, for the bad-client test. */
static void sample_alive(driver *d) {
  tl_stats st;
  tl_stats_get(d->run.s, &st);
  if (st.executors_alive > d->faults.max_alive)
    d->faults.max_alive = st.executors_alive;
}

static void kill_bad_clients(driver *d) {
  for (uint32_t i = 0; i < d->faults.nbad; i++)
    if (d->faults.bad[i].running && !d->faults.bad[i].exited &&
        !uv_is_closing((uv_handle_t *)&d->faults.bad[i].process))
      uv_process_kill(&d->faults.bad[i].process, SIGKILL);
}

static void on_bad_closed(uv_handle_t *h) {
  bad_child *b = h->data;
  b->running = false;
  phase_wake(h->loop->data);
}

static void on_bad_exit(uv_process_t *p, int64_t exit_status, int term_signal) {
  bad_child *b = p->data;
  driver *d = p->loop->data;
  b->exited = true;
  b->exit_status = exit_status;
  b->term_signal = term_signal;
  if (!d->phase.stopping)
    sample_alive(d);
  logf_(d, "bad client %s exited: status %" PRId64 ", signal %d", bad_mode_names[b->mode],
        exit_status, term_signal);
  uv_close((uv_handle_t *)p, on_bad_closed);
}

/* --bad-client: once every executor registered, spawn the tl-badclient next to the executor
 * binary once per option, with the port, the mode and what the mode needs (exec-1's id, a tid
 * running on exec-1); the token is in the environment they inherit. */
static void spawn_bad_clients(driver *d) {
  if (d->faults.bad_spawned || d->faults.nbad == 0)
    return;
  d->faults.bad_spawned = true;
  char path[4096];
  const char *slash = strrchr(d->run.executor_path, '/');
  size_t dir = slash ? (size_t)(slash - d->run.executor_path) + 1 : 0;
  if (dir + sizeof "tl-badclient" > sizeof path) {
    phase_give_up(d, "the executor's path is too long");
    return;
  }
  memcpy(path, d->run.executor_path, dir);
  strcpy(path + dir, "tl-badclient");
  char port[16], tid[24];
  snprintf(port, sizeof port, "%d", d->edge.port);
  snprintf(tid, sizeof tid, "%" PRIu64, d->faults.exec1_tid);
  for (uint32_t i = 0; i < d->faults.nbad; i++) {
    bad_child *b = &d->faults.bad[i];
    char *args[] = {path, "--port", port, (char *)bad_mode_names[b->mode], NULL, NULL};
    if (b->mode == BAD_DUPLICATE_ID)
      args[4] = d->scaling.execs[0].id;
    else if (b->mode == BAD_FOREIGN_STATUS)
      args[4] = tid;
    uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                     {.flags = UV_INHERIT_FD, .data.fd = 1},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2}};
    uv_process_options_t opt = {
        .exit_cb = on_bad_exit, .file = path, .args = args, .stdio_count = 3, .stdio = stdio};
    b->process.data = b;
    int rc = uv_spawn(d->run.loop, &b->process, &opt);
    if (rc < 0) {
      fprintf(stderr, "tl-driver: spawn %s: %s\n", path, uv_strerror(rc));
      phase_give_up(d, "could not spawn a bad client");
      return;
    }
    b->running = true;
    logf_(d, "bad client %s spawned", bad_mode_names[b->mode]);
  }
}

static void on_resume(uv_timer_t *t) {
  driver *d = t->data;
  exec_rec *e = &d->scaling.execs[0];
  if (e->stopped) {
    e->stopped = false;
    logf_(d, "resuming %s (SIGCONT)", e->id);
    if (e->started && !e->ended && d->run.launcher)
      d->run.ops->signal(d->run.launcher, e->id, SIGCONT, false);
  }
}

/* --kill-executor-after, --external-kill-after and --stop-executor-after: once N tasks have
 * finished, at the first STATUS frame from exec-1 that reports a task RUNNING (so that the loss
 * finds attempts that reached RUNNING), or FAULT_DELAY_MS later at the latest, SIGKILL or
 * SIGSTOP the first executor, once. An external kill is not recorded as the
 * driver's: the exit callback reports it as something outside the driver (the OOM killer, an
 * operator) would make it, TL_LOSS_EXITED with exit code 137, caused by the app. */
static void on_fault(uv_timer_t *t) {
  driver *d = t->data;
  exec_rec *e = &d->scaling.execs[0];
  if (!d->faults.fault_armed)
    return;
  d->faults.fault_armed = false;
  uv_timer_stop(&d->faults.fault);
  if (d->phase.closed || d->phase.stopping || !d->run.launcher || !e->started || e->ended)
    return;
  int rc = 0;
  if (d->faults.kill_after) {
    logf_(d, "killing %s (SIGKILL)", e->id);
    e->fault_killed = true;
    rc = d->run.ops->signal(d->run.launcher, e->id, SIGKILL, true);
  } else if (d->faults.external_kill_after) {
    logf_(d, "killing %s (SIGKILL) as from outside the driver", e->id);
    e->injected = true;
    rc = d->run.ops->signal(d->run.launcher, e->id, SIGKILL, false);
  } else if (d->faults.stop_after) {
    logf_(d, "stopping %s (SIGSTOP)", e->id);
    e->stopped = true;
    rc = d->run.ops->signal(d->run.launcher, e->id, SIGSTOP, false);
  }
  if (rc < 0)
    fprintf(stderr, "tl-driver: the fault on %s: %s\n", e->id, uv_strerror(rc));
}

static void inject_faults(driver *d) {
  uint64_t n = d->faults.kill_after            ? d->faults.kill_after
               : d->faults.external_kill_after ? d->faults.external_kill_after
                                               : d->faults.stop_after;
  if (n && d->faults.tasks_finished == n) {
    logf_(d, "%" PRIu64 " tasks finished: injecting the fault", n);
    d->faults.fault_armed = true;
    uv_timer_start(&d->faults.fault, on_fault, FAULT_DELAY_MS, 0);
  }
}

/* --bad-client: each refused for its reason, none changed the ledger. Prints the bad clients
 * line and returns whether it says "as expected". */
static bool bad_clients_verdict(const driver *d) {
  uint64_t want[BAD_NMODES] = {0};
  uint32_t clean_exits = 0;
  for (uint32_t i = 0; i < d->faults.nbad; i++) {
    want[d->faults.bad[i].mode]++;
    clean_exits += d->faults.bad[i].exited && d->faults.bad[i].exit_status == 0 &&
                   d->faults.bad[i].term_signal == 0;
  }
  uint64_t got[BAD_NMODES] = {d->conns.refused_token,
                              d->conns.refused_frame[-TLC_EVERSION],
                              d->conns.refused_frame[-TLC_ETOOBIG],
                              d->conns.refused_dup,
                              d->conns.refused_owner,
                              d->conns.refused_timeout,
                              d->conns.refused_frame[-TLC_ETYPE],
                              d->conns.refused_frame[-TLC_ETRUNCATED],
                              d->conns.refused_early,
                              d->conns.refused_second,
                              d->conns.refused_unexpected,
                              d->conns.refused_resource,
                              d->conns.refused_frame[-TLC_ERESOURCE]};
  bool as_expected = d->faults.bad_spawned && clean_exits == d->faults.nbad;
  for (int m = 0; m < BAD_NMODES; m++)
    as_expected = as_expected && got[m] == want[m];
  /* Only a foreign-status client registers (that is its point); it is offered nothing. */
  uint64_t frames_refused = 0;
  for (int k = 0; k < 16; k++)
    frames_refused += d->conns.refused_frame[k];
  /* foreign-status, second-register and driver-message clients register correctly first; the
   * last two are then removed for their fault (TL_LOSS_KILLED at once), and nothing else may
   * have been. */
  uint64_t registering = want[BAD_FOREIGN_STATUS] + want[BAD_SECOND] + want[BAD_DRIVER_MSG];
  uint64_t removed = want[BAD_SECOND] + want[BAD_DRIVER_MSG];
  as_expected = as_expected &&
                frames_refused == got[BAD_GARBAGE] + got[BAD_OVERSIZED] + got[BAD_UNKNOWN] +
                                      got[BAD_TRUNCATED] + got[BAD_ADDRESS] &&
                d->conns.refused_conns == d->faults.nbad - want[BAD_FOREIGN_STATUS] &&
                d->faults.max_alive <= d->run.nexecutors + d->run.accept + registering &&
                d->conns.registered == d->run.nexecutors + d->run.accept + registering &&
                d->conns.violations == removed && d->losses.reports[TL_LOSS_KILLED] == removed;
  printf("bad clients: %" PRIu32 " spawned, %" PRIu32 " exited 0; refused: wrong token %" PRIu64
         ", TLC_EVERSION %" PRIu64 ", TLC_ETOOBIG %" PRIu64 ", TL_EEXIST %" PRIu64
         ", TL_EOWNER %" PRIu64 ", no REGISTER in time %" PRIu64 ", TLC_ETYPE %" PRIu64
         ", TLC_ETRUNCATED %" PRIu64 ", before REGISTER %" PRIu64 ", second REGISTER %" PRIu64
         ", driver's message %" PRIu64 ", TL_ERESOURCE %" PRIu64 ", TLC_ERESOURCE %" PRIu64
         "; removed for a fault %" PRIu64 "; executors alive at most %zu; %s\n",
         d->faults.bad_spawned ? d->faults.nbad : 0, clean_exits, got[BAD_WRONG_TOKEN],
         got[BAD_GARBAGE], got[BAD_OVERSIZED], got[BAD_DUPLICATE_ID], got[BAD_FOREIGN_STATUS],
         got[BAD_SILENT], got[BAD_UNKNOWN], got[BAD_TRUNCATED], got[BAD_EARLY], got[BAD_SECOND],
         got[BAD_DRIVER_MSG], got[BAD_DUP_ADDRESS], got[BAD_ADDRESS], d->conns.violations,
         d->faults.max_alive, as_expected ? "as expected" : "NOT AS EXPECTED");
  return as_expected;
}

/* ---------------------------------------------------------------------------------------------
 * The hooks: the only calls the rest of the driver makes into the faults.
 * ------------------------------------------------------------------------------------------- */

void faults_configure(driver *d, const driver_opts *o) {
  d->faults.kill_after = o->kill_after;
  d->faults.external_kill_after = o->external_kill_after;
  d->faults.stop_after = o->stop_after;
  for (uint32_t i = 0; i < o->nbad; i++)
    d->faults.bad[i].mode = o->bad[i];
  d->faults.nbad = o->nbad;
  state_crash_write = o->crash_write;
  state_crash_point = o->crash_point;
  d->faults.crash_after_release = o->crash_after_release;
  d->faults.crash_release_skip = o->crash_release_skip;
}

void faults_init(driver *d) {
  uv_timer_init(d->run.loop, &d->faults.resume);
  uv_timer_init(d->run.loop, &d->faults.fault);
  d->faults.fault.data = d;
  d->faults.resume.data = d;
}

void faults_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->faults.resume, on_closed);
  uv_close((uv_handle_t *)&d->faults.fault, on_closed);
}

void faults_task_finished(driver *d) {
  d->faults.tasks_finished++;
  inject_faults(d);
}

void faults_status(driver *d, const conn *c, bool running) {
  if (d->faults.fault_armed && running && !strcmp(c->id, d->scaling.execs[0].id))
    on_fault(&d->faults.fault);
}

void faults_launched(driver *d, const conn *c, tl_tid first) {
  if (d->faults.exec1_tid == 0 && !strcmp(c->id, d->scaling.execs[0].id))
    d->faults.exec1_tid = first;
}

void faults_heartbeat_expired(driver *d, const char *id) {
  if (d->scaling.execs[0].stopped && !strcmp(id, d->scaling.execs[0].id))
    uv_timer_start(&d->faults.resume, on_resume, 100, 0);
}

void faults_released(driver *d) {
  if (d->faults.crash_after_release)
    d->faults.crash_release_armed = true;
}

/* Set on the loop while no write is in flight (state_write runs on the thread pool, which reads
 * state_crash_write): the write about to start is the first after the release. */
void faults_write_starting(driver *d) {
  if (d->faults.crash_release_armed && state_crash_write == 0)
    state_crash_write = state_write_count + 1 + d->faults.crash_release_skip;
}

void faults_all_registered(driver *d) { spawn_bad_clients(d); }

void faults_refused(driver *d) { sample_alive(d); }

void faults_stopping(driver *d) { on_resume(&d->faults.resume); }

void faults_force_stop(driver *d) { kill_bad_clients(d); }

bool faults_busy(const driver *d) {
  for (uint32_t i = 0; i < d->faults.nbad; i++)
    if (d->faults.bad[i].running)
      return true;
  return false;
}

bool faults_verdict(const driver *d) { return d->faults.nbad == 0 || bad_clients_verdict(d); }

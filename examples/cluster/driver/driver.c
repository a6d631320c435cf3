/* tl-driver: the driver process of the cluster example (docs/cluster.md). It embeds taskledger
 * on a libuv loop (taskledger-uv.h), listens on TCP, has its launcher (launcher.h: local
 * processes, or Slurm job steps) start tl-executor processes, registers them in the ledger once
 * they present the shared token, and runs the jobs given on its command line: offers each
 * executor its free cores, sends each task set's binary once per executor, batches an offer
 * round's launches into one LAUNCH frame and applies the executors' batched STATUS frames. A
 * lost executor is reported in two phases: TL_LOSS_PENDING when its connection closes, the real
 * reason from its launcher's account of its end (or, for an executor no launcher started or one
 * whose end never comes, the pending-loss timeout); a stopped one is caught by heartbeat expiry.
 * With --min-executors/--max-executors the number of executors follows the backlog (dynamic
 * allocation). At the end it stops the executors, has the launcher stop those that do not go,
 * waits for every end, checks that the ledger drained and prints a summary (and, with
 * --summary-json, writes it as JSON). With --queue Q each executor is registered with Q task
 * slots beyond its cores, so an offer round launches up to cores + Q tasks to it in one LAUNCH
 * frame; the executor runs cores of them at once and queues the rest.
 *
 *   tl-driver [--launcher local|slurm] [--executors N] [--accept N] [--executor-cores C]
 *             [--cores C] [--queue Q] [--job KIND:M[,KIND:M]...]...
 *             [--min-executors N] [--max-executors M] [--backlog-timeout MS]
 *             [--idle-timeout MS] [--summary-json FILE] [--advertise ADDR]
 *             [--partition P] [--time-limit T] [--slurm-arg ARG]... [--slurm-poll-ms MS]
 *             [--listen ADDR] [--port P] [--token-file PATH] [--executor PATH]
 *             [--heartbeat-ms MS] [--timeout-s S] [--bench [--tasks N] [--null-ledger]]
 *             [--quiet] [--progress] [--progress-ms MS] [--kill-on-job-failure]
 *             [--heartbeat-timeout-ms MS] [--pending-loss-timeout-ms MS]
 *             [--max-task-failures N] [--register-timeout-ms MS] [--metrics-port P]
 *             [--max-pending-connections N] [--max-connections N]
 *             [--state-dir DIR] [--snapshot-ms MS] [--recovery-timeout-ms MS]
 *             [--fair-scheduler-xml FILE]   (a stage's %POOL: docs/cluster.md "Pools")
 *   test-only: [--kill-executor-after N] [--external-kill-after N] [--stop-executor-after N]
 *             [--bad-client MODE]... [--crash-in-state-write N:P] [--expect-losses N]
 *             [--expect-job-failure]   (faults.c; docs/cluster.md "Test-only options")
 *
 * With --state-dir it keeps a durable record of the run there (every --snapshot-ms, at stage
 * boundaries, at registrations and releases, and before launches pass the tid reservation),
 * written off the loop: launches never wait for it (but for a new stage's first launches, once),
 * and a driver started on a directory that holds one
 * recovers the run: the ledger restored, its executors reconnecting and reconciling, dynamic
 * allocation going on (docs/cluster.md "Driver failover").
 *
 * This file is the top of the driver's files (docs/cluster.md "The driver's files and layers"):
 * main sets the run up from the command line (driver_opts.c), runs the loop, serves what the
 * files below ask of the run (phase.c: stop, give up, check), ends the run and gives the verdict.
 * Every other file is one subsystem, behind driver.h.
 *
 * Exit status: 0 when every job succeeded (or, with --expect-job-failure, failed), the ledger
 * drained, the expected losses happened and every executor ended as it should have (one that
 * was sent a task set's binary twice exits 4, which fails the run); 1 otherwise; 2 for bad
 * arguments (an unknown launcher, or one not built into this binary, a token shorter than
 * TOKEN_MIN, included).
 *
 * Everything that arrives on the listening port is hostile until REGISTER with the token is
 * accepted, and bounded after: docs/cluster.md "Limits and hardening" has every limit.
 */

#include <signal.h>
#include <unistd.h>

#include "driver.h"

static void on_handle_closed(uv_handle_t *h) { (void)h; }

/* Stops by force what did not go: every executor the launcher still runs (their ends follow, as
 * requested), every bad client, every connection. */
static void force_stop(driver *d) {
  scaling_force_stop(d);
  faults_force_stop(d);
  for (conn *c = d->link.list; c; c = c->next)
    close_conn(c, NULL);
}

static void on_grace(uv_timer_t *t) {
  driver *d = t->data;
  size_t left = d->run.launcher ? d->run.ops->running(d->run.launcher) : 0;
  if (left > 0)
    fprintf(stderr, "tl-driver: %zu executors did not stop within %d ms: stopping them\n", left,
            STOP_GRACE_MS);
  force_stop(d);
}

static void on_uv_stopped(void *ud) { (void)ud; }

static void on_launcher_closed(void *ud) {
  driver *d = ud;
  d->run.launcher = NULL;
}

/* Once STOP is out, every connection closed, every executor's end came and every bad client
 * exited: closes the rest, the launcher included. */
static void maybe_finish(driver *d) {
  if (!d->run.stop_sent || d->phase.closed || d->link.list)
    return;
  if (d->run.launcher && d->run.ops->running(d->run.launcher) > 0)
    return;
  if (faults_busy(d))
    return;
  phase_close(d, on_handle_closed);
  if (d->run.launcher)
    d->run.ops->close(d->run.launcher, on_launcher_closed, d);
  uv_close((uv_handle_t *)&d->run.grace, on_handle_closed);
  scaling_close(d, on_handle_closed);
  tl_uv_stop(d->run.uv, on_uv_stopped, NULL);
  d->run.uv = NULL;
  edge_close(d);
  offers_close(d, on_handle_closed);
  record_close(d, on_handle_closed);
  uv_close((uv_handle_t *)&d->run.deadline, on_handle_closed);
  faults_close(d, on_handle_closed);
  uv_close((uv_handle_t *)&d->run.sigint, on_handle_closed);
  uv_close((uv_handle_t *)&d->run.sigterm, on_handle_closed);
  summary_close(d, on_handle_closed);
}

/* Every job is over, one failed, or the run gives up: STOP every connected executor (a
 * released one has had its STOP), and STOP_GRACE_MS later have the launcher stop whatever has
 * not ended (on_grace); maybe_finish then waits for every end. */
static void begin_stop(driver *d) {
  if (d->run.stop_sent)
    return;
  d->run.stop_sent = true;
  end_progress(d);
  phase_stop(d);   /* so when the run gives up: nothing new begins */
  close_server(d); /* nothing new comes in: the end is bounded by the STOP grace */
  d->run.active_at_end = active_executors(d);
  uv_idle_stop(&d->offers.revive);
  record_stop(d); /* the record stays as the jobs' end left it, until the run removes it */
  uv_timer_stop(&d->scaling.alloc_timer);
  faults_stopping(d); /* a stopped executor must run to take its STOP */
  for (conn *c = d->link.list; c; c = c->next) {
    if (!d->run.gave_up && c->registered && !c->closing)
      d->run.unforgotten += c->nsent; /* every task set was released: none may be left */
    if (c->registered && !c->closing && !c->released)
      send_stop(c, d->run.gave_up ? "the driver gives up" : "all jobs done");
    else if (!c->registered)
      close_conn(c, NULL);
  }
  uv_timer_start(&d->run.grace, on_grace, STOP_GRACE_MS, 0);
  maybe_finish(d);
}

static void give_up(driver *d, const char *why) {
  end_progress(d);
  fprintf(stderr, "tl-driver: giving up: %s\n", why);
  d->run.gave_up = true;
  if (d->run.stop_sent) { /* already stopping: the executors do not go, so make them */
    uv_timer_stop(&d->run.grace);
    force_stop(d);
    return;
  }
  begin_stop(d);
}

/* The requests of the files below (phase.c), served at the next turn of the loop after one was
 * made, off the stack of the callback that made it (a launcher's callback is never asked to bear
 * calls back into it): an executor ended (is recovery over; is the run starved, with nothing
 * left to run its jobs), the run gives up, the jobs are over; then whether the run can finish. */
static void serve(driver *d) {
  if (phase_take_check(d)) {
    check_recovery(d);
    check_starved(d);
  }
  const char *why = phase_take_give_up(d);
  if (why)
    give_up(d, why);
  if (phase_take_stop(d))
    begin_stop(d);
  maybe_finish(d);
}

static void on_deadline(uv_timer_t *t) { give_up(t->data, "the run took longer than --timeout-s"); }

static void on_signal(uv_signal_t *s, int signum) {
  (void)signum;
  give_up(s->data, "signalled");
}

/* The tl-executor next to this program, unless --executor named one. */
static char exe_dir_path[4096];
static const char *default_executor_path(void) {
  size_t len = sizeof exe_dir_path;
  if (uv_exepath(exe_dir_path, &len) < 0)
    return "tl-executor";
  char *slash = strrchr(exe_dir_path, '/');
  if (!slash || (size_t)(slash - exe_dir_path) + sizeof "/tl-executor" > sizeof exe_dir_path)
    return "tl-executor";
  strcpy(slash, "/tl-executor");
  return exe_dir_path;
}

/* The command line's values (driver_opts.h) in the driver's own fields, and what they imply:
 * the token, the executor binary, the totals of the jobs and whether the progress line runs. */
static void apply_options(driver *d, const driver_opts *o) {
  d->run.nexecutors = o->executors;
  d->run.accept = o->accept;
  d->run.cores = o->cores;
  d->run.queue = o->queue;
  d->run.heartbeat_ms = o->heartbeat_ms;
  d->run.heartbeat_timeout_ms = o->heartbeat_timeout_ms;
  link_configure(d, o);
  edge_configure(d, o);
  d->run.expect_losses = o->expect_losses;
  d->run.expect_failure = o->expect_failure;
  scaling_configure(d, o);
  jobs_configure(d, o);
  nullfloor_configure(d, o);
  d->run.executor_path = o->executor_path ? o->executor_path : default_executor_path();
  make_token(d, o->token_file);
  summary_configure(d, o);
  record_configure(d, o);
  faults_configure(d, o);
}

static void pools_warn(void *ud, const char *line) { logf_(ud, "--fair-scheduler-xml: %s", line); }

/* --fair-scheduler-xml: the file's pools (pools_xml.c), read before anything starts, and no
 * stage's %POOL a pool with children (its task sets could not be submitted). 0 or 2. */
static int read_pools(driver *d, const driver_opts *o, pools_xml *px) {
  char err[256];
  if (pools_xml_read_file(o->fair_scheduler_xml, px, err, sizeof err, pools_warn, d) < 0) {
    fprintf(stderr, "tl-driver: --fair-scheduler-xml %s: %s\n", o->fair_scheduler_xml, err);
    return 2;
  }
  for (size_t i = 0; i < o->njobs; i++)
    for (uint32_t k = 0; k < o->jobs[i].nstages; k++)
      for (size_t p = 0; p < px->npools; p++)
        if (px->pools[p].children > 0 && !strcmp(px->pools[p].name, o->jobs[i].stages[k].pool)) {
          fprintf(stderr, "tl-driver: %%%s: pool %s holds pools, not task sets\n",
                  px->pools[p].name, px->pools[p].name);
          pools_xml_free(px);
          return 2;
        }
  logf_(d, "%zu pools from %s (%zu nested)", px->npools, o->fair_scheduler_xml, px->nested);
  return 0;
}

/* The loop and the ledger on it (tl_uv_start): a new one, or, with --state-dir holding a
 * record, the one it restores (*restored), with its pools (the record's, if restored). Returns
 * 0 or the exit status. */
static int start_ledger(driver *d, const driver_opts *o, bool *restored) {
  /* A write to an executor that just died must fail with EPIPE (the connection then closes and
   * the loss is reported), not kill the driver: libuv writes with write(2), which raises
   * SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  /* A record that passes RLIMIT_FSIZE must fail with EFBIG (failover degraded), not kill the
   * driver. */
  signal(SIGXFSZ, SIG_IGN);
  d->run.loop = uv_default_loop();
  d->run.loop->data = d;
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.heartbeat_timeout_ns = d->run.heartbeat_timeout_ms * UINT64_C(1000000);
  cfg.pending_loss_timeout_ns = o->pending_loss_ms * UINT64_C(1000000);
  if (o->max_task_failures)
    cfg.max_task_failures = o->max_task_failures;
  cfg.speculation = o->speculation; /* with the settings below, off without it */
  cfg.speculation_task_duration_threshold_ns = o->speculation_threshold_ms * UINT64_C(1000000);
  cfg.decommission_kill_interval_ns = o->decommission_kill_interval_ms * UINT64_C(1000000);
  pools_xml px = {0};
  if (o->fair_scheduler_xml) {
    int rc = read_pools(d, o, &px);
    if (rc != 0)
      return rc;
    cfg.mode = TL_FAIR;
    cfg.pool_auto_create = true; /* Spark's: a pool the file does not name, with defaults */
  }
  tl_callbacks cb = {.ud = d,
                     .task_ended = cb_task_ended,
                     .taskset_failed = cb_taskset_failed,
                     .taskset_released = cb_taskset_released,
                     .executor_lost = cb_executor_lost,
                     .executor_removed = cb_executor_removed,
                     .revive_offers = cb_revive_offers,
                     .kill_task = cb_kill_task};
  cfg.recovery_timeout_ns = o->recovery_timeout_ms * UINT64_C(1000000);
  cb.taskset_restored = cb_taskset_restored;
  if (d->scaling.dynamic) { /* demand pushed to dynamic allocation (scaling.c) */
    cb.taskset_unschedulable = cb_taskset_unschedulable;
    cb.taskset_schedulable = cb_taskset_schedulable;
    cb.demand_changed = cb_demand_changed;
  }
  *restored = false;
  if (d->record.state_dir) {
    int rc = recover_state(d, &cfg, &cb, restored);
    if (rc != 0) {
      pools_xml_free(&px);
      return rc;
    }
  }
  if (!*restored && tl_scheduler_new(&cfg, &cb, &d->run.s) < 0)
    die_oom();
  char err[256];
  if (!*restored && pools_xml_apply(&px, d->run.s, err, sizeof err) < 0) {
    fprintf(stderr, "tl-driver: --fair-scheduler-xml %s: %s\n", o->fair_scheduler_xml, err);
    pools_xml_free(&px);
    return 2;
  }
  pools_xml_free(&px);
  if (tl_uv_start(d->run.s, d->run.loop, &d->run.uv) < 0)
    die_oom();
  return 0;
}

/* The handles on the loop: the driver's own (the deadline of --timeout-s, the signals, the stop
 * grace, the wake of phase.c) and each file's (offers, faults, scaling, record, summary). */
static void init_handles(driver *d, uint64_t timeout_s) {
  offers_init(d);
  uv_timer_init(d->run.loop, &d->run.deadline);
  d->run.deadline.data = d;
  uv_timer_start(&d->run.deadline, on_deadline, timeout_s * 1000, 0);
  faults_init(d);
  uv_signal_init(d->run.loop, &d->run.sigint);
  uv_signal_init(d->run.loop, &d->run.sigterm);
  d->run.sigint.data = d->run.sigterm.data = d;
  uv_signal_start(&d->run.sigint, on_signal, SIGINT);
  uv_signal_start(&d->run.sigterm, on_signal, SIGTERM);
  uv_timer_init(d->run.loop, &d->run.grace);
  d->run.grace.data = d;
  phase_init(d, serve);
  scaling_init(d);
  record_init(d);
  summary_init(d);
}

/* The launcher, and the first executors it starts; with dynamic allocation, its periodic check.
 * The token is in the environment its executors inherit (make_token). o's strings must stay
 * valid while the launcher runs. A launcher that cannot be created, or cannot start them, ends
 * the run (give_up). */
static void start_launcher(driver *d, const driver_opts *o, bool restored) {
  d->run.lcfg = (launcher_config){.loop = d->run.loop,
                                  .executor_path = d->run.executor_path,
                                  .connect_host = d->edge.connect_host,
                                  .port = d->edge.port,
                                  .cores = d->run.cores,
                                  .heartbeat_ms = d->run.heartbeat_ms,
                                  .reconnect_s = d->record.state_dir ? EXECUTOR_RECONNECT_S : 0,
                                  .partition = o->partition,
                                  .time_limit = o->time_limit,
                                  .extra_args = o->nslurm_args ? o->slurm_args : NULL,
                                  .nextra = o->nslurm_args,
                                  .poll_ms = strcmp(o->launcher, "slurm") ? 0 : o->slurm_poll_ms,
                                  .gpus = o->executor_gpus,
                                  .executor_args = scaling_executor_args,
                                  .executor_gpus = scaling_executor_gpus,
                                  .on_end = on_end,
                                  .ud = d};
  int rc = d->run.ops->create(&d->run.lcfg, &d->run.launcher);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: the %s launcher: %s\n", d->run.ops->name,
            rc == -1 ? "cannot be created" : uv_strerror(rc));
    d->run.launcher = NULL;
    give_up(d, "no launcher");
  } else if (restored) {
    adopt_executors(d);
  } else if (start_executors(d, d->run.nexecutors) < d->run.nexecutors) {
    give_up(d, "could not start the executors");
    return;
  }
  if (d->scaling.dynamic) {
    scaling_start(d);
    if (!restored && d->run.nexecutors + d->run.accept == 0) /* nothing to wait for */
      phase_offer(d);                                        /* offers begin */
  }
}

/* Everything before the loop runs: the options applied, the ledger on the loop, the listening
 * socket (and the metrics endpoint), the handles, the launcher started and the jobs' first
 * stages submitted. The launcher goes first: the local one forks its executors, and a fork
 * write-protects every page the driver holds, so a task set submitted before it (a large one's
 * pages are most of the driver's memory) would take a page fault at the first write of each of
 * its pages in the run (docs/performance.md "The wire's own floor"). Returns 0, or the exit
 * status of a run that cannot begin. */
static int set_up(driver *d, const driver_opts *o) {
  d->run.ops = launcher_find(o->launcher);
  if (!d->run.ops) {
    fprintf(stderr, "tl-driver: the %s launcher is not built into this tl-driver\n", o->launcher);
    return 2;
  }
  d->log.quiet = o->quiet;
  apply_options(d, o);
  d->link.on_close = conn_closing; /* a link's close, as the executors' connections see it */
  d->record.on_durable = cb_revive_offers; /* launches that waited for a record go */
  warn_nofile(d);
  bool restored;
  int rs = start_ledger(d, o, &restored);
  if (rs != 0)
    return rs;
  bool v6;
  int rc = listen_on(d, o->listen, o->advertise, &v6);
  if (rc == 0 && o->metrics_port >= 0)
    rc = start_metrics(d, o->metrics_port, v6);
  if (rc != 0)
    return rc;
  init_handles(d, o->timeout_s);
  start_launcher(d, o, restored);
  if (restored) { /* the jobs go on where the record left them */
    phase_offer(d);
  } else if (d->nullfloor.on) { /* --bench's one stage, run by the null floor */
    nullfloor_submit(d);
  } else {
    for (size_t i = 0; i < d->jobs.njobs; i++)
      if (submit_stage(d, &d->jobs.list[i], 0) < 0)
        return 1;
  }
  if (d->record.state_dir && !d->phase.stopping) {
    if (record_first(d) != 0) /* the first record: a crash from here on is recovered */
      return 1;
    uv_timer_start(&d->record.state_timer, on_state_timer, d->record.snapshot_ms,
                   d->record.snapshot_ms);
  }
  return 0;
}

/* Frees what the driver still holds once the loop is closed: the ledger (which hands back any
 * payload still held, in a failed run), the buffers and the records. */
static void free_driver(driver *d) {
  tl_scheduler_free(d->run.s);
  nullfloor_free(d);
  offers_free(d);
  scaling_free(d);
  record_free(d);
  losses_free(d);
  auth_free(d);
}

/* After the loop: the summary (and --summary-json), the driver freed, and the exit status: 0
 * when the run passed (it did not give up, the loop closed, the ledger is consistent and
 * drained, every job, executor, loss and bad client was as expected), 1 otherwise. */
static int verdict(driver *d, int close_rc) {
  tl_stats st;
  tl_stats_get(d->run.s, &st);
  char why[256] = "";
  int check = tl_check(d->run.s, why, sizeof why);
  bool ok = !d->run.gave_up && check == TL_OK && close_rc == 0;
  uint64_t tasks;
  uint32_t jobs_succeeded;
  ok = print_jobs(d, &tasks, &jobs_succeeded) && ok;
  ok = ok && st.attempts_running == 0 && st.attempts_frozen == 0 &&
       st.tasksets_active + st.tasksets_zombie == 0;
  /* A recovered run: the time before the crash and the time since the restart. */
  double secs =
      d->jobs.end_ns > d->phase.start_ns
          ? (double)(d->jobs.end_ns - d->phase.start_ns + d->record.recovered_elapsed) / 1e9
          : 0;
  printf("tasks: %" PRIu64 " in %.3f s: %.0f tasks/s\n", tasks, secs,
         secs > 0 ? (double)tasks / secs : 0.0);
  ok = print_executors(d) && ok;
  ok = print_allocation(d) && ok;
  print_losses(d, &st);
  print_edge(d);
  if (d->run.expect_losses != UINT64_MAX && d->losses.executors_lost != d->run.expect_losses) {
    printf("expected %" PRIu64 " executors lost\n", d->run.expect_losses);
    ok = false;
  }
  print_ledger(d, &st, check, why);
  if (d->nullfloor.on)
    nullfloor_print(d);
  print_recovery(d);
  if (d->recovery.recovered && !d->recovery.recover_end_ns)
    ok = false;
  remove_state(d);
  ok = faults_verdict(d) && ok;
  if (d->summary.summary_json &&
      write_summary_json(d, d->summary.summary_json, ok, &st, tasks, jobs_succeeded) < 0)
    ok = false;
  free_driver(d);
  printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

/* Parses the command line (driver_opts.c), sets the run up, runs the loop until every executor
 * has ended and every handle is closed, then says how it went. */
int main(int argc, char **argv) {
  static driver d;  /* large: static */
  driver_opts opts; /* its strings and arrays are the launcher's until the loop ends */
  driver_opts_parse(argc, argv, &opts);
  int rc = set_up(&d, &opts);
  if (rc != 0)
    return rc;
  uv_run(d.run.loop, UV_RUN_DEFAULT);
  return verdict(&d, uv_loop_close(d.run.loop));
}

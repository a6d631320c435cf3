/* tl-sim: a discrete-event simulation of a cluster driving one taskledger scheduler through its
 * public API, in virtual time (docs/sim.md). Executors on hosts in racks run jobs made of stages
 * (chains and fan-in DAGs) with shuffle dependencies, under injected faults; a small DAG layer
 * on the callbacks submits stages, tracks map outputs and resubmits what was lost. At the end a
 * summary and a verdict: the ledger drained and every payload came back, or what was retained.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

static bool all_jobs_done(const sim *m) {
  if (m->jobs_submitted < m->o.jobs)
    return false;
  for (uint32_t j = 0; j < m->o.jobs; j++)
    if (m->jobs[j].state == J_RUNNING || m->jobs[j].state == J_WAITING)
      return false;
  return true;
}

/* Nothing more can happen that matters: every job is done, the ledger holds no task set, no
 * loss is pending, no hung executor is still to come back. */
static bool finished(sim *m) {
  if (!all_jobs_done(m))
    return false;
  if (m->st.tasksets_active || m->st.tasksets_zombie || m->st.attempts_running ||
      m->st.executors_pending_loss)
    return false;
  for (size_t i = 0; i < m->nexecs; i++)
    if (m->execs[i].proc == P_HUNG || m->execs[i].ledger == X_DECOM)
      return false;
  return true;
}

/* --metrics: the ledger's metrics at the end of the run (tl_metrics_text: Prometheus text), read
 * before the scheduler is freed. 0, or -1 after saying why. */
static int write_metrics(tl_scheduler *s, const char *path) {
  size_t needed = 0;
  if (tl_metrics_text(s, NULL, 0, &needed) != TL_OK)
    return -1;
  char *text = malloc(needed + 1);
  if (!text) {
    fprintf(stderr, "tl-sim: %s: out of memory\n", path);
    return -1;
  }
  int rc = tl_metrics_text(s, text, needed + 1, &needed);
  FILE *f = rc == TL_OK ? fopen(path, "w") : NULL;
  bool ok = f && fwrite(text, 1, needed, f) == needed;
  if (f && fclose(f) != 0)
    ok = false;
  if (!ok)
    fprintf(stderr, "tl-sim: %s: %s\n", path, rc != TL_OK ? tl_err_name(rc) : strerror(errno));
  free(text);
  return ok ? 0 : -1;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress_line(sim *m) {
  fprintf(stderr,
          "\r\033[Kt=%.1f s  tasks done %" PRIu64 "  jobs %" PRIu64 "/%" PRIu32
          "  executors alive %zu  in flight %zu",
          (double)m->now / 1e9, m->st.succeeded, m->c.jobs_succeeded + m->c.jobs_failed, m->o.jobs,
          m->st.executors_alive, m->st.attempts_running + m->st.attempts_frozen);
}

int main(int argc, char **argv) {
  static sim m_;
  sim *m = &m_;
  options_init(&m->o);
  if (parse_args(&m->o, argc, argv) < 0)
    return 2;
  sim_rng_seed(&m->rng, m->o.seed);
  sim_record_init(&m->rec);
  m->tick_at = UINT64_MAX;
  m->progress = !m->o.quiet && isatty(STDERR_FILENO);
  if (m->o.journal_path) {
    m->journal = fopen(m->o.journal_path, "w");
    if (!m->journal) {
      fprintf(stderr, "tl-sim: %s: %s\n", m->o.journal_path, strerror(errno));
      return 2;
    }
  }
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.clock = sim_clock;
  cfg.clock_ud = m;
  cfg.max_task_failures = m->o.max_task_failures;
  cfg.heartbeat_timeout_ns = secs(m->o.heartbeat_timeout_s);
  cfg.pending_loss_timeout_ns = secs(m->o.pending_timeout_s);
  if (m->journal) {
    cfg.journal = journal_line;
    cfg.journal_ud = m;
  }
  tl_callbacks cb = {.ud = m,
                     .task_started = cb_task_started,
                     .task_ended = cb_task_ended,
                     .taskset_failed = cb_taskset_failed,
                     .taskset_released = cb_taskset_released,
                     .executor_lost = cb_executor_lost,
                     .executor_removed = cb_executor_removed,
                     .kill_task = cb_kill_task};
  cfg.speculation = m->o.speculation;
  cfg.speculation_task_duration_threshold_ns = secs(m->o.spec_threshold_s);
  cfg.decommission_kill_interval_ns = secs(m->o.decom_kill_s);
  pools_config(m, &cfg);
  int rc = tl_scheduler_new(&cfg, &cb, &m->s);
  if (rc != TL_OK) {
    fprintf(stderr, "tl-sim: tl_scheduler_new: %s\n", tl_strerror(rc));
    return 2;
  }
  dag_init(m);
  gpu_init(m);
  pools_init(m);
  m->faults_on = true;
  double wall0 = wall_now(), last_progress = wall0;

  executors_start(m);
  schedule(m, 0, EV_JOB, 0, 0);
  schedule_poisson(m, EV_CRASH, m->o.crash_rate);
  schedule_poisson(m, EV_CRASH2, m->o.crash2_rate);
  schedule_poisson(m, EV_HANG, m->o.hang_rate);
  schedule_poisson(m, EV_DECOMMISSION, m->o.decommission_rate);
  schedule_poisson(m, EV_JOIN, m->o.join_rate);
  after_event(m);

  uint64_t until = secs(m->o.until_s);
  sim_event ev;
  while (!finished(m) && sim_queue_pop(&m->q, &ev) == 0) {
    if (ev.t_ns > until) {
      m->now = until;
      break;
    }
    if (ev.t_ns > m->now)
      m->now = ev.t_ns;
    run_event(m, &ev);
    if (m->faults_on && all_jobs_done(m))
      m->faults_on = false;
    after_event(m);
    if (m->progress && (m->c.events & 255) == 0) {
      double w = wall_now();
      if (w - last_progress > 0.1) {
        last_progress = w;
        progress_line(m);
      }
    }
  }
  if (m->progress) {
    progress_line(m);
    fputc('\n', stderr);
  }
  uint64_t end_ns = m->now;
  m->faults_on = false;
  m->stopping = true;

  /* Retained task sets, explained before the executors are stopped. */
  bool drained = m->st.tasksets_active == 0 && m->st.tasksets_zombie == 0;
  if (!drained) {
    printf("\nretained task sets at %.3f s:\n", (double)m->now / 1e9);
    for (size_t i = 0; i < m->nts; i++) {
      if (m->ts[i]->released)
        continue;
      m->retained++;
      char buf[2048];
      if (tl_explain_taskset(m->s, m->ts[i]->id, buf, sizeof buf) == TL_OK)
        printf("%s", buf);
    }
  }
  gpu_end(m, drained);
  if (drained)
    pools_end(m);
  executors_stop(m);
  after_event(m);
  gpu_stopped(m);
  m->now = end_ns;
  char why[256];
  m->c.checks++;
  if (tl_check(m->s, why, sizeof why) != TL_OK && !m->check_failed) {
    m->check_failed = true;
    snprintf(m->check_why, sizeof m->check_why, "%s", why);
  }
  if (m->st.attempts_running || m->st.attempts_frozen || m->st.executors_pending_loss ||
      m->st.executors_alive)
    drained = false;
  m->payloads_at_end = m->payloads_live;
  m->results_at_end = results_live;
  if (m->payloads_live || results_live)
    drained = false;
  sim_record_finish(&m->rec, end_ns);
  double wall = wall_now() - wall0;
  bool metrics_failed = m->o.metrics_path && write_metrics(m->s, m->o.metrics_path) < 0;

  rc = tl_scheduler_free(m->s);
  if (rc != TL_OK)
    problem(m, "tl_scheduler_free: %s", tl_err_name(rc));
  if (m->payloads_live != 0 || results_live != 0) {
    drained = false;
    printf("\n%zu payloads and %zu results were not handed back\n", m->payloads_live, results_live);
  }
  summary(m, wall, drained);

  int status = drained && !m->check_failed && m->problems == 0 ? 0 : 1;
  if (m->journal) {
    if (fclose(m->journal) != 0 || m->journal_err) {
      fprintf(stderr, "tl-sim: writing %s failed\n", m->o.journal_path);
      status = 1;
    }
  }
  if (m->o.trace_path) {
    FILE *f = fopen(m->o.trace_path, "w");
    if (!f || sim_trace_write(&m->rec, f) < 0 || fclose(f) != 0) {
      fprintf(stderr, "tl-sim: %s: %s\n", m->o.trace_path, strerror(errno));
      status = 1;
    }
  }
  if (m->o.svg_path) {
    FILE *f = fopen(m->o.svg_path, "w");
    if (!f || sim_svg_write(&m->rec, f) < 0 || fclose(f) != 0) {
      fprintf(stderr, "tl-sim: %s: %s\n", m->o.svg_path, strerror(errno));
      status = 1;
    }
  }
  if (metrics_failed)
    status = 1;

  dag_free(m);
  gpu_free(m);
  executors_free(m);
  free(m->attempts);
  sim_queue_free(&m->q);
  sim_record_free(&m->rec);
  return status;
}

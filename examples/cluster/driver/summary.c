/* What the run says: the progress line while it runs, and at its end the summary on stdout and,
 * with --summary-json, the same as JSON (docs/cluster.md "The JSON summary"). */

#include <time.h>
#include <unistd.h>

#include "driver.h"

/* Seconds from the wall clock's time `from` to `to` (negative if the clock went back). */
static double wall_seconds(uint64_t from, uint64_t to) {
  return to >= from ? (double)(to - from) / 1e9 : -(double)(from - to) / 1e9;
}

/* What one recovery did, as the `recovered:` line and the `recoveries:` lines say it. */
static void print_one_recovery(const driver *d, const recovery_rec *r) {
  char e[ESC_MAX];
  printf("from %s/%s%s; %" PRIu32 " executors to reconcile, recovery %s%.3f s; "
         "reconciled %" PRIu64 " (%" PRIu64 " tids named, %" PRIu64 " unknown and killed), "
         "%" PRIu64 " attempts lost to the outage, %" PRIu64 " executors lost to the recovery "
         "timeout; stray reconciliations %" PRIu64 " (%" PRIu64 " KILLs); updates of unknown tids "
         "%" PRIu64 "\n",
         d->record.state_dir, esc(e, r->from),
         strcmp(r->from, "state") ? " (state was missing or bad)" : "", r->executors_to_reconcile,
         r->done ? "" : "NOT DONE after ", (double)r->took_ns / 1e9, r->reconciled, r->tids_named,
         r->unknown_killed, r->attempts_lost, r->recovery_timeouts, r->stray_reconciles,
         r->stray_kills, r->updates_unknown);
}

/* The summary's state lines (--state-dir): the records, the launches they held, the run since
 * its first start; and, for a recovered run, every recovery: those of the drivers before this
 * one, then this one's with each executor it reconciled. */
void print_recovery(const driver *d) {
  if (d->record.state_dir) {
    const record_state *r = &d->record;
    printf("state: %" PRIu64 " records written (%" PRIu64 " for tids only, %" PRIu64
           " put off while events were undelivered, %" PRIu64 " failed), encoded on the loop in "
           "%.3f ms each (%.3f at most), written off it in %.3f ms each, last %" PRIu64
           " bytes; SYNCED frames: %" PRIu64 "\n",
           r->state_writes, r->state_reserves, r->state_busy, r->state_failed,
           r->encodes ? (double)r->encode_ns / 1e6 / (double)r->encodes : 0.0,
           (double)r->encode_max_ns / 1e6,
           r->state_writes ? (double)r->state_ns / 1e6 / (double)r->state_writes : 0.0,
           (uint64_t)r->body.len, r->synced_sent);
    printf("launches: sent without waiting for a record, but %" PRIu64
           " offers put off for the record of a new task set or executor and %" PRIu64
           " for tids, %.3f ms in all, %.3f at most; %" PRIu64
           " releases held for their record; %" PRIu64 " sent unrecorded (degraded)\n",
           r->wait_new, r->wait_tids, (double)r->wait_ns / 1e6, (double)r->wait_max_ns / 1e6,
           r->held_releases, r->unrecorded);
    if (r->degraded_times)
      printf("degraded: failover degraded %" PRIu64 " times, %.3f s in all, %" PRIu64
             " failed writes; %s at the end\n",
             r->degraded_times, record_degraded_s(d), r->state_failed,
             r->degraded ? "still degraded" : "not degraded");
    uint64_t first = run_start_unix_ns(d);
    time_t t = (time_t)(first / UINT64_C(1000000000));
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&t, &tm))
      strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    printf("run: %" PRIu64 " drivers, first started %s, %.3f s ago (outages included); this "
           "driver %.3f s\n",
           d->recovery.earlier_total + (d->recovery.recovered ? 1 : 0) + 1, when,
           wall_seconds(first, wall_clock_ns()), (double)(uv_hrtime() - d->summary.start_ns) / 1e9);
  }
  if (!d->recovery.recovered)
    return;
  uint64_t total = d->recovery.earlier_total + 1;
  printf("recoveries: %" PRIu64 " in this run, this driver's the last", total);
  if (total > d->recovery.nearlier + 1)
    printf(" (%" PRIu64 " earlier ones not shown)", total - d->recovery.nearlier - 1);
  printf("\n");
  for (uint32_t i = 0; i < d->recovery.nearlier; i++) {
    const recovery_rec *r = &d->recovery.earlier[i];
    printf("  recovery %" PRIu64 " of %" PRIu64 ", at %.3f s: ", total - d->recovery.nearlier + i,
           total, wall_seconds(run_start_unix_ns(d), r->start_unix_ns));
    print_one_recovery(d, r);
  }
  recovery_rec now;
  recovery_now(d, &now);
  printf("recovered: ");
  print_one_recovery(d, &now);
  if (d->recovery.fell_back)
    printf("  state was not read: %s\n", d->recovery.fell_back_why);
  if (d->scaling.launcher_adopted)
    printf("  the %s launcher took back %" PRIu32 " executors of the crashed run, by the "
           "handles in the record\n",
           d->run.ops->name, d->scaling.launcher_adopted);
  for (uint64_t i = 0; i < d->conns.reconciled && i < REPORT_DETAIL_MAX; i++) {
    const recon_rec *r = &d->conns.recons[i];
    char e[ESC_MAX];
    printf("  %s: reconciled after %" PRIu64 " ms: %" PRIu64 " tids named, %" PRIu64
           " unknown (killed), %" PRIu64 " not named (run again)\n",
           esc(e, r->id), r->ms, r->reported, r->unknown, r->lost);
  }
}

/* --progress: tasks done of all, executors alive, and the rate since the last line. On a
 * terminal the line is rewritten in place; otherwise each is a line of its own. */
static void print_progress(driver *d, bool last) {
  uint64_t done = 0, now = uv_hrtime();
  for (size_t i = 0; i < d->jobs.njobs; i++)
    for (uint32_t k = 0; k < d->jobs.list[i].nstages; k++)
      done += d->jobs.list[i].stages[k].succeeded;
  tl_stats st;
  tl_stats_get(d->run.s, &st);
  double secs = (double)(now - d->summary.progress_ns) / 1e9;
  double rate =
      secs > 0 && d->phase.offering ? (double)(done - d->summary.progress_done) / secs : 0;
  d->summary.progress_done = done;
  d->summary.progress_ns = now;
  fprintf(stderr, "%sprogress: %" PRIu64 "/%" PRIu64 " tasks, %zu executors alive, %.0f tasks/s%s",
          d->summary.progress_tty ? "\r" : "", done, d->jobs.total_tasks, st.executors_alive, rate,
          d->summary.progress_tty ? (last ? "\033[K\n" : "\033[K") : "\n");
}

void on_progress(uv_timer_t *t) { print_progress(t->data, false); }

/* The last progress line, once: the jobs are over or the run gives up. */
void end_progress(driver *d) {
  if (!d->summary.progress || !uv_is_active((uv_handle_t *)&d->summary.progress_timer))
    return;
  uv_timer_stop(&d->summary.progress_timer);
  print_progress(d, true);
}

/* ---------------------------------------------------------------------------------------------
 * The summary as JSON (--summary-json; docs/cluster.md "The JSON summary")
 * ------------------------------------------------------------------------------------------- */

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong form, no surrogate,
 * nothing above U+10FFFF), or 0 when the bytes there are not one. p is NUL-terminated. */
static size_t utf8_len(const unsigned char *p) {
  size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
  unsigned lo = 0x80, hi = 0xbf; /* the allowed range of the second byte */
  if (p[0] < 0xc2 || p[0] > 0xf4)
    return 0;
  if (p[0] == 0xe0)
    lo = 0xa0;
  else if (p[0] == 0xed)
    hi = 0x9f;
  else if (p[0] == 0xf0)
    lo = 0x90;
  else if (p[0] == 0xf4)
    hi = 0x8f;
  if (p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xbf)
      return 0;
  return n;
}

/* Writes s as a JSON string: quotes, backslashes and control characters escaped; well-formed
 * UTF-8 as it is; any other byte (an executor id is whatever bytes its REGISTER held) as
 * U+FFFD, so that the file is always valid JSON, which must be UTF-8 (RFC 8259). */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p >= 0x80) {
      size_t n = utf8_len(p);
      if (n == 0)
        fputs("\\ufffd", f);
      else
        fwrite(p, 1, n, f);
      p += n ? n - 1 : 0;
    } else if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

/* Every field of tl_stats, in the struct's order. */
#define TL_STATS_FIELDS(X)                                                                         \
  X(executors_alive)                                                                               \
  X(executors_decommissioning)                                                                     \
  X(executors_pending_loss)                                                                        \
  X(executors_recovering)                                                                          \
  X(tombstones)                                                                                    \
  X(hosts)                                                                                         \
  X(racks)                                                                                         \
  X(pools)                                                                                         \
  X(places)                                                                                        \
  X(tasksets_active)                                                                               \
  X(tasksets_zombie)                                                                               \
  X(attempts_running)                                                                              \
  X(attempts_frozen)                                                                               \
  X(tasks_pending)                                                                                 \
  X(tasks_speculatable)                                                                            \
  X(events_queued)                                                                                 \
  X(mem_live_bytes)                                                                                \
  X(mem_live_blocks)                                                                               \
  X(launched)                                                                                      \
  X(succeeded)                                                                                     \
  X(failed)                                                                                        \
  X(killed)                                                                                        \
  X(stale_updates)                                                                                 \
  X(rejected_updates)                                                                              \
  X(rejected_offers)                                                                               \
  X(executors_lost)                                                                                \
  X(tasksets_released)                                                                             \
  X(executors_excluded)                                                                            \
  X(nodes_excluded)                                                                                \
  X(tasksets_with_failures)                                                                        \
  X(tasksets_unschedulable)                                                                        \
  X(excluded_offers)                                                                               \
  X(tasksets_unschedulable_aborted)                                                                \
  X(pending_loss_timeouts)                                                                         \
  X(recovery_timeouts)                                                                             \
  X(reconciled)                                                                                    \
  X(reconcile_lost)                                                                                \
  X(reconcile_unknown)                                                                             \
  X(reconcile_adopted)                                                                             \
  X(tasksets_unplaceable)

/* One recovery as a JSON object; with at, its "at_seconds" (from the run's first start) first. */
static void json_recovery(FILE *f, const recovery_rec *r, const double *at) {
  fprintf(f, "{");
  if (at)
    fprintf(f, "\"at_seconds\": %.3f, ", *at);
  fprintf(f, "\"from\": ");
  json_str(f, r->from);
  fprintf(f,
          ", \"executors_to_reconcile\": %" PRIu32 ", \"done\": %s, \"seconds\": %.3f"
          ", \"reconciled\": %" PRIu64 ", \"tids_named\": %" PRIu64 ", \"unknown_killed\": %" PRIu64
          ", \"attempts_lost\": %" PRIu64 ", \"recovery_timeouts\": %" PRIu64
          ", \"stray_reconciles\": %" PRIu64 ", \"stray_kills\": %" PRIu64
          ", \"updates_unknown\": %" PRIu64 ", \"launcher_adopted\": %" PRIu32 "}",
          r->executors_to_reconcile, r->done ? "true" : "false", (double)r->took_ns / 1e9,
          r->reconciled, r->tids_named, r->unknown_killed, r->attempts_lost, r->recovery_timeouts,
          r->stray_reconciles, r->stray_kills, r->updates_unknown, r->launcher_adopted);
}

/* --summary-json: what the summary says, as one JSON object (the format is in
 * docs/cluster.md). 0, or -1 with a message on stderr. */
int write_summary_json(driver *d, const char *path, bool ok, const tl_stats *st, uint64_t tasks,
                       uint32_t jobs_succeeded) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "tl-driver: cannot write %s\n", path);
    return -1;
  }
  fprintf(f, "{\n  \"launcher\": ");
  json_str(f, d->run.ops->name);
  fprintf(f, ",\n  \"ok\": %s,\n  \"gave_up\": %s,\n", ok ? "true" : "false",
          d->run.gave_up ? "true" : "false");
  fprintf(f, "  \"jobs\": {\"succeeded\": %" PRIu32 ", \"failed\": %zu},\n", jobs_succeeded,
          d->jobs.njobs - jobs_succeeded);
  fprintf(f,
          "  \"tasks\": {\"succeeded\": %" PRIu64 ", \"launched\": %" PRIu64
          ", \"retries\": %" PRIu64 "},\n",
          tasks, d->offers.launched, d->offers.retries);
  uint64_t first = run_start_unix_ns(d);
  fprintf(f,
          "  \"run\": {\"first_start_unix\": %.3f, \"seconds\": %.3f, "
          "\"this_driver_seconds\": %.3f, \"drivers\": %" PRIu64 "},\n",
          (double)first / 1e9, wall_seconds(first, wall_clock_ns()),
          (double)(uv_hrtime() - d->summary.start_ns) / 1e9,
          d->recovery.earlier_total + (d->recovery.recovered ? 1 : 0) + 1);
  fprintf(f,
          "  \"executors\": {\"started\": %" PRIu32 ", \"registered\": %" PRIu32
          ", \"released\": %" PRIu32 ", \"stopped_by_force\": %" PRIu32
          ", \"most_active\": %" PRIu32 ", \"active_at_end\": %" PRIu32 ", \"lost\": %" PRIu64
          "},\n",
          d->scaling.started, d->conns.registered, d->scaling.released, d->scaling.forced,
          d->scaling.most_active, d->run.active_at_end, d->losses.executors_lost);
  fprintf(f, "  \"dynamic_allocation\": ");
  if (d->scaling.dynamic)
    fprintf(f,
            "{\"min\": %" PRIu32 ", \"max\": %" PRIu32 ", \"backlog_timeout_ms\": %" PRIu64
            ", \"idle_timeout_ms\": %" PRIu64 "},\n",
            d->scaling.min_executors, d->scaling.max_executors, d->scaling.backlog_ns / 1000000,
            d->scaling.idle_ns / 1000000);
  else
    fprintf(f, "null,\n");
  fprintf(f, "  \"state\": ");
  if (d->record.state_dir) {
    const record_state *r = &d->record;
    fprintf(f,
            "{\"records\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"tids_only\": %" PRIu64
            ", \"encode_mean_ms\": %.3f, \"encode_max_ms\": %.3f, \"write_mean_ms\": %.3f"
            ", \"waits_new\": %" PRIu64 ", \"waits_tids\": %" PRIu64
            ", \"wait_ms\": %.3f, \"wait_max_ms\": %.3f, \"releases_held\": %" PRIu64
            ", \"unrecorded\": %" PRIu64 ",\n    \"degraded\": {\"now\": %s, \"times\": %" PRIu64
            ", \"seconds\": %.3f, \"failures\": %" PRIu64 "}},\n",
            r->state_writes, r->state_failed, r->state_reserves,
            r->encodes ? (double)r->encode_ns / 1e6 / (double)r->encodes : 0.0,
            (double)r->encode_max_ns / 1e6,
            r->state_writes ? (double)r->state_ns / 1e6 / (double)r->state_writes : 0.0,
            r->wait_new, r->wait_tids, (double)r->wait_ns / 1e6, (double)r->wait_max_ns / 1e6,
            r->held_releases, r->unrecorded, r->degraded ? "true" : "false", r->degraded_times,
            record_degraded_s(d), r->state_failed);
  } else {
    fprintf(f, "null,\n");
  }
  fprintf(f, "  \"recovery\": ");
  recovery_rec now;
  if (d->recovery.recovered) {
    recovery_now(d, &now);
    json_recovery(f, &now, NULL);
    fprintf(f, ",\n");
  } else {
    fprintf(f, "null,\n");
  }
  fprintf(f, "  \"recoveries_total\": %" PRIu64 ",\n  \"recoveries\": [",
          d->recovery.earlier_total + (d->recovery.recovered ? 1 : 0));
  for (uint32_t i = 0; i < d->recovery.nearlier; i++) {
    fprintf(f, "%s\n    ", i ? "," : "");
    double at = wall_seconds(first, d->recovery.earlier[i].start_unix_ns);
    json_recovery(f, &d->recovery.earlier[i], &at);
  }
  if (d->recovery.recovered) {
    fprintf(f, "%s\n    ", d->recovery.nearlier ? "," : "");
    double at = wall_seconds(first, now.start_unix_ns);
    json_recovery(f, &now, &at);
  }
  fprintf(f, "%s],\n", d->recovery.nearlier || d->recovery.recovered ? "\n  " : "");
  const loss_rec **shown;
  size_t nshown = shown_losses(d, &shown);
  fprintf(f, "  \"lost_executors_total\": %" PRIu64 ",\n", d->losses.lost_total);
  fprintf(f, "  \"lost_executors\": [");
  for (size_t i = 0; i < nshown; i++) {
    const loss_rec *lr = shown[i];
    fprintf(f, "%s\n    {\"id\": ", i ? "," : "");
    json_str(f, lr->id);
    fprintf(f, ", \"detected_by\": ");
    json_str(f, detection_names[lr->detected_by]);
    fprintf(f, ", \"phases_seen\": [");
    for (size_t k = 0; k < lr->nphases; k++) {
      fprintf(f, "%s", k ? ", " : "");
      json_str(f, phase_names[lr->phases[k]]);
    }
    fprintf(f, "], \"reason_kind\": ");
    if (lr->final) {
      json_str(f, loss_kind_names[lr->kind]);
      fprintf(f, ", \"caused_by_app\": %s, \"exit_code\": %d, \"reason\": ",
              lr->caused_by_app ? "true" : "false", lr->exit_code);
      json_str(f, lr->reason);
      fprintf(f, ", \"reason_source\": ");
      json_str(f, lr->source);
    } else { /* still pending when the run ended */
      fprintf(f, "null, \"caused_by_app\": null, \"exit_code\": null, \"reason\": null, "
                 "\"reason_source\": null");
    }
    fprintf(f, "}");
  }
  fprintf(f, "%s],\n", nshown ? "\n  " : "");
  free(shown);
  fprintf(f,
          "  \"edge\": {\"auth_failures\": %" PRIu64 ", \"auth_addresses\": %" PRIu64
          ", \"refused_backoff\": %" PRIu64 ", \"evicted_pending\": %" PRIu64
          ", \"refused_connection_cap\": %" PRIu64 ", \"accept_emfile\": %" PRIu64
          ", \"accept_enfile\": %" PRIu64 ", \"accept_other\": %" PRIu64
          ", \"closed_unsent\": %" PRIu64 ", \"unsent_peak_bytes\": %" PRIu64
          ", \"refused_host\": %" PRIu64 ", \"lost_frames\": %" PRIu64 "},\n",
          d->auth.auth_failures, d->auth.auth_addresses, d->edge.refused_backoff,
          d->edge.evicted_pending, d->edge.refused_conn_cap, d->edge.accept_emfile,
          d->edge.accept_enfile, d->edge.accept_other, d->link.closed_unsent, d->link.unsent_peak,
          d->conns.refused_host, d->conns.gone_frames);
  fprintf(f, "  \"tl_stats\": {");
  const char *sep = "\n    ";
#define X(field)                                                                                   \
  fprintf(f, "%s\"" #field "\": %" PRIuMAX, sep, (uintmax_t)st->field);                            \
  sep = ",\n    ";
  TL_STATS_FIELDS(X)
#undef X
  fprintf(f, "\n  }\n}\n");
  if (fclose(f) != 0) {
    fprintf(stderr, "tl-driver: cannot write %s\n", path);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The verdict: the summary on stdout, and whether the run passed
 * ------------------------------------------------------------------------------------------- */

/* Each job and its stages; *tasks gets the tasks that succeeded, *jobs_succeeded the jobs.
 * Returns whether every job ended as it should have: succeeded, or with --expect-job-failure
 * failed with every submitted stage released. */
bool print_jobs(const driver *d, uint64_t *tasks, uint32_t *jobs_succeeded) {
  bool ok = true;
  *tasks = 0;
  *jobs_succeeded = 0;
  for (size_t i = 0; i < d->jobs.njobs; i++) {
    const job *j = &d->jobs.list[i];
    bool job_ok = j->done && !j->failed;
    for (uint32_t k = 0; k < j->nstages; k++)
      job_ok = job_ok && j->stages[k].released && j->stages[k].succeeded == j->stages[k].ntasks;
    *jobs_succeeded += job_ok;
    printf("job %zu: %s\n", i + 1, job_ok ? "succeeded" : "FAILED");
    if (d->run.expect_failure) { /* expected: it failed, and every submitted stage was released */
      job_ok = j->done && j->failed;
      for (uint32_t k = 0; k < j->nstages; k++)
        job_ok = job_ok && (j->stages[k].taskset == 0 || j->stages[k].released);
      printf("  (expected to fail: %s)\n", job_ok ? "as expected" : "NOT AS EXPECTED");
    }
    for (uint32_t k = 0; k < j->nstages; k++) {
      const stage *sg = &j->stages[k];
      *tasks += sg->succeeded;
      printf("  stage %" PRIu32 ": %s x %" PRIu32 ": %s (%" PRIu32 " succeeded, %" PRIu32
             " failed attempts, %" PRIu32 " counted; %" PRIu32 " finished as zombies, %" PRIu32
             " killed)\n",
             k + 1, sg->kind, sg->ntasks,
             sg->taskset == 0                                             ? "not submitted"
             : sg->released && !sg->failed && sg->succeeded == sg->ntasks ? "succeeded"
                                                                          : "FAILED",
             sg->succeeded, sg->failed_attempts, sg->counted_failures, sg->zombie_finished,
             sg->killed);
    }
    ok = ok && job_ok;
  }
  return ok;
}

/* The executors line and what the last executors reported. Their binaries counts are their
 * word: shown, never trusted (an executor sent a binary it holds exits non-zero, which its
 * launcher reports). Returns whether no executor still held a binary at STOP. */
bool print_executors(const driver *d) {
  printf("executors: %" PRIu32 " spawned with %" PRIu32 " cores each, %" PRIu32
         " registered with %" PRIu64 " cores in all, queue %" PRIu32 "; frames: %" PRIu64
         " in, %" PRIu64 " out; launches: %" PRIu64 "; binaries sent: %" PRIu64
         ", forgotten: %" PRIu64 "%s\n",
         d->scaling.started, d->run.cores, d->conns.registered, d->conns.registered_cores,
         d->run.queue, d->conns.frames_in, d->link.frames_out, d->offers.launched,
         d->offers.binaries_sent, d->link.forgets_sent,
         d->run.unforgotten ? " (SOME HELD AT STOP)" : "");
  uint64_t first_report =
      d->conns.nreports > REPORT_DETAIL_MAX ? d->conns.nreports - REPORT_DETAIL_MAX : 0;
  if (first_report > 0)
    printf("  (%" PRIu64 " earlier executors' reports not shown)\n", first_report);
  for (uint64_t i = first_report; i < d->conns.nreports; i++) {
    const exec_report *r = &d->conns.reports[i % REPORT_DETAIL_MAX];
    char e[ESC_MAX];
    printf("  %s: %" PRIu32 " cores; reported %" PRIu64 " binaries materialised, for %zu task "
           "sets sent%s\n",
           esc(e, r->id), r->cores, r->binaries, r->tasksets,
           r->binaries > r->tasksets ? " (more than it was sent: its word, not trusted)" : "");
  }
  return d->run.unforgotten == 0;
}

/* The allocation line, and how each executor ended, from its launcher: a clean end is an exit
 * with code 0 (after STOP, or after its release). A death from outside the driver is a loss the
 * run survives: killed by a signal (exit code above 128) or gone by the launcher's account
 * (TL_LOSS_PROCESS_LOST: a job cancelled by someone else, NODE_FAIL, PREEMPTED...);
 * --expect-losses can pin their number. An executor that exited with a code of its own (1: its
 * connection broke; 3: it ran more tasks than cores) is a bug, unless a `crash` task explains
 * it. Returns whether every executor ended as it should have. */
bool print_allocation(const driver *d) {
  bool ok = true;
  printf("allocation: %s", d->run.ops->name);
  if (d->scaling.dynamic)
    printf(", dynamic, min %" PRIu32 ", max %" PRIu32 ", initial %" PRIu32,
           d->scaling.min_executors, d->scaling.max_executors, d->run.nexecutors);
  printf("; executors started %" PRIu32 ", released %" PRIu32 ", most at once %" PRIu32
         ", at the end of the jobs %" PRIu32 ", stopped by force %" PRIu32 "\n",
         d->scaling.started, d->scaling.released, d->scaling.most_active, d->run.active_at_end,
         d->scaling.forced);
  for (uint32_t i = 0; i < d->scaling.nexecs; i++) {
    const exec_rec *e = &d->scaling.execs[i];
    if (!e->started)
      continue;
    if (!e->ended) { /* cannot be: the loop ran until every end came */
      printf("  %s: NO END REPORTED\n", e->id);
      ok = false;
      continue;
    }
    if (e->kind == TL_LOSS_EXITED && e->exit_code == 0 && !e->forced)
      continue;
    bool crashed =
        d->jobs.has_crash && e->kind == TL_LOSS_EXITED && e->exit_code == CRASH_EXIT_CODE;
    bool killed = e->fault_killed && e->kind == TL_LOSS_KILLED;
    bool outside =
        e->kind == TL_LOSS_PROCESS_LOST || (e->kind == TL_LOSS_EXITED && e->exit_code > 128);
    printf("  %s: exit code %d, %s: %s%s\n", e->id, e->exit_code, loss_kind_names[e->kind],
           e->reason,
           e->forced                   ? " (stopped by force: it did not stop in time)"
           : killed && !d->run.gave_up ? " (killed by the driver)"
           : e->injected               ? " (killed as from outside)"
           : crashed                   ? " (a crash task)"
           : outside                   ? " (ended from outside the driver)"
                                       : "");
    ok = ok && !e->forced && (killed || e->injected || crashed || outside) && !d->run.gave_up;
  }
  return ok;
}

/* The attempts and losses lines, then the lost executors: counted by how each loss began and by
 * its real reason, then the last LOST_DETAIL_MAX one by one: the phases reported and the real
 * reason with where it came from (the same records as --summary-json's lost_executors). */
void print_losses(driver *d, const tl_stats *st) {
  printf("attempts: %" PRIu64 " launched, %" PRIu64 " retries; KILL frames sent: %" PRIu64 "\n",
         d->offers.launched, d->offers.retries, d->link.kills_sent);
  printf("losses: %" PRIu64 " executors lost; reported: pending on close %" PRIu64
         ", heartbeat timeout %" PRIu64 ", exited %" PRIu64 ", killed by the driver %" PRIu64
         " (of which removed for a protocol fault %" PRIu64 "), pending-loss timeout %" PRIu64
         "; frames refused after removal (TL_EGONE): %" PRIu64 "; process lost %" PRIu64 "\n",
         d->losses.executors_lost, d->losses.reports[TL_LOSS_PENDING],
         d->losses.reports[TL_LOSS_HEARTBEAT_TIMEOUT], d->losses.reports[TL_LOSS_EXITED],
         d->losses.reports[TL_LOSS_KILLED], d->conns.violations, st->pending_loss_timeouts,
         d->conns.gone_frames, d->losses.reports[TL_LOSS_PROCESS_LOST]);
  printf("  lost executors: %" PRIu64 "; detected by", d->losses.lost_total);
  for (int k = 0; k < DETECTED_N; k++)
    printf("%s %s %" PRIu64, k ? "," : "", detection_names[k], d->losses.lost_by_detection[k]);
  printf("; real reasons");
  for (int k = TL_LOSS_EXITED; k < LOSS_KINDS; k++)
    printf("%s %s %" PRIu64, k > TL_LOSS_EXITED ? "," : "", phase_names[k],
           d->losses.lost_by_kind[k]);
  printf("\n");
  const loss_rec **shown;
  size_t nshown = shown_losses(d, &shown);
  if (d->losses.lost_total > nshown)
    printf("  (%" PRIu64 " earlier lost executors not shown)\n", d->losses.lost_total - nshown);
  for (size_t i = 0; i < nshown; i++) {
    const loss_rec *lr = shown[i];
    char e[ESC_MAX];
    printf("  lost %s: detected by %s; phases", esc(e, lr->id), detection_names[lr->detected_by]);
    for (size_t k = 0; k < lr->nphases; k++)
      printf("%s %s", k ? "," : "", phase_names[lr->phases[k]]);
    char er[ESC_MAX];
    if (lr->final)
      printf("; %s, %s, exit code %d: %s (from %s)\n", loss_kind_names[lr->kind],
             lr->caused_by_app ? "caused by the app" : "not caused by the app", lr->exit_code,
             esc(er, lr->reason), lr->source);
    else
      printf("; no real reason when the run ended\n");
  }
  free(shown);
}

/* The edge: every limit that refused something, and the accept errors (docs/cluster.md "Limits
 * and hardening"). */
void print_edge(const driver *d) {
  printf("edge: wrong tokens %" PRIu64 " from %" PRIu64 " addresses; refused at accept: %" PRIu64
         " waiting out a back-off, %" PRIu64 " over --max-connections; %" PRIu64
         " closed waiting for REGISTER over --max-pending-connections; %" PRIu64
         " closed over --max-unsent-bytes (most unsent %" PRIu64 " bytes); %" PRIu64
         " REGISTER of a recovering id from another host; %" PRIu64
         " frames dropped after a loss; accept errors: EMFILE %" PRIu64 ", ENFILE %" PRIu64
         ", other %" PRIu64 "; log lines not shown %" PRIu64 "\n",
         d->auth.auth_failures, d->auth.auth_addresses, d->edge.refused_backoff,
         d->edge.refused_conn_cap, d->edge.evicted_pending, d->link.closed_unsent,
         d->link.unsent_peak, d->conns.refused_host, d->conns.gone_frames, d->edge.accept_emfile,
         d->edge.accept_enfile, d->edge.accept_other,
         d->log.auth.total_suppressed + d->log.refused.total_suppressed +
             d->log.accept.total_suppressed);
}

/* The ledger's state and its final stats. */
void print_ledger(const driver *d, const tl_stats *st, int check, const char *why) {
  printf("ledger: %zu attempts, %zu task sets, tl_check %s%s%s; refused: %" PRIu64
         " updates, %" PRIu64 " connections\n",
         st->attempts_running + st->attempts_frozen, st->tasksets_active + st->tasksets_zombie,
         tl_err_name(check), check ? ": " : "", why, d->conns.refused_updates,
         d->conns.refused_conns);
  printf("ledger stats: launched %" PRIu64 ", succeeded %" PRIu64 ", failed %" PRIu64
         ", killed %" PRIu64 ", stale updates %" PRIu64 ", rejected updates %" PRIu64
         ", executors lost %" PRIu64 ", task sets released %" PRIu64
         "; executors alive %zu, tombstones %zu; memory %zu bytes in %zu blocks\n",
         st->launched, st->succeeded, st->failed, st->killed, st->stale_updates,
         st->rejected_updates, st->executors_lost, st->tasksets_released, st->executors_alive,
         st->tombstones, st->mem_live_bytes, st->mem_live_blocks);
  if (d->offers.has_resources)
    printf("resources: %" PRIu64 " addresses granted to launches; at most %" PRIu64
           " held at once; when the jobs ended: %zu names, %" PRIu64 " addresses, %" PRIu64
           " held, %" PRIu64 " units used\n",
           d->offers.granted, d->offers.held_peak, d->jobs.res_names, d->jobs.res_addresses,
           d->jobs.res_held, d->jobs.res_used);
}

/* The progress line (shown by default on a terminal; --progress forces it, --quiet silences the
 * default) and --summary-json. */
void summary_configure(driver *d, const driver_opts *o) {
  d->summary.start_unix_ns = wall_clock_ns();
  d->summary.start_ns = uv_hrtime();
  d->summary.summary_json = o->summary_json;
  d->summary.progress_tty = isatty(2);
  d->summary.progress = o->progress || (d->summary.progress_tty && !d->log.quiet);
  d->summary.progress_ms = o->progress_ms;
}

void summary_init(driver *d) {
  uv_timer_init(d->run.loop, &d->summary.progress_timer);
  d->summary.progress_timer.data = d;
  if (d->summary.progress) {
    d->summary.progress_ns = uv_hrtime();
    uv_timer_start(&d->summary.progress_timer, on_progress, d->summary.progress_ms,
                   d->summary.progress_ms);
  }
}

void summary_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->summary.progress_timer, on_closed);
}

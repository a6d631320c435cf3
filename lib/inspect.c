/* Inspection: tl_check (every invariant of docs/design.md, recomputed from the records), tl_stats,
 * tl_explain_taskset, tl_metrics_text (tl_stats as Prometheus text), and the per-object snapshots.
 * All of it runs under the scheduler's lock and changes nothing but tl_check's visit stamps on
 * shared strings.
 *
 * tl_check runs each module's check of its own records (tl__*_check, with the kit of checker.h)
 * and walks every index and every list once, so it costs O(size of the ledger). Beyond the
 * numbered invariants it balances memory: the bytes and blocks the allocator has counted for the
 * scheduler must equal what the modules account for their records, tables and queued events. A
 * record that is allocated but no longer reachable from an index, which is what a leak is, fails
 * that check on the spot rather than at the end of a test.
 */
#include "checker.h"
#include "journal.h"
#include "locality.h"

/* ---------------------------------------------------------------------------------------------
 * tl_check: each module checks its own records (its tl__*_check) and accounts their memory;
 * what is left here is what belongs to no module: the shared strings' reference counts, whose
 * holders are in several modules, the memory balance over everything, and quiescence.
 * ------------------------------------------------------------------------------------------- */

/* Every holder of a shared string, in every module. */
static void each_str(tl__checker *c, tl__str_fn *fn) {
  tl__registry_each_str(c, fn);
  tl__tasksets_each_str(c, fn);
  tl__events_each_str(c, fn);
  tl__exclude_each_str(c, fn);
}

/* Strings: each reference count equals the holders found. Every holder is visited (which also
 * accounts each string once) before any count is compared. */
static int check_strings(tl__checker *c) {
  each_str(c, tl__check_visit_str);
  c->failed = false;
  each_str(c, tl__check_str_refs);
  return c->failed ? TL_ECORRUPT : TL_OK;
}

/* The memory balance (invariant 7 and beyond), once every module has accounted its records. */
static int check_memory(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  tl__check_account(c, sizeof *s);
  tl__journal_account(c);
  TL__CHECK(c, c->bytes == s->mem_bytes && c->blocks == s->mem_blocks,
            "memory: %zu bytes in %zu blocks are allocated, the ledger accounts for %zu in %zu",
            s->mem_bytes, s->mem_blocks, c->bytes, c->blocks);

  /* Invariant 7: with nothing submitted and no executor alive, every map is empty and what is
   * left is an empty scheduler plus its tombstones (the balance above covers the bytes). */
  if (s->tasksets_by_id == NULL &&
      s->nalive + s->ndecommissioning + s->npending_loss + s->nrecovering == 0)
    TL__CHECK(c,
              !tl__attempts_running(s) && s->hosts_by_name == NULL && s->racks_by_name == NULL &&
                  s->stages_by_id == NULL && s->nfrozen == 0 && s->npending_tasks == 0 &&
                  s->places_by_key == NULL && s->default_pool->queue[0] == NULL,
              "invariant 7: quiescent but a map is not empty");
  return TL_OK;
}

int tl_check(tl_scheduler *s, char *why, size_t len) {
  if (s == NULL)
    return TL_EINVAL;
  if (why != NULL && len > 0)
    why[0] = '\0';
  tl__checker c = {s, why, len, 0, 0, false};
  size_t running, frozen; /* attempts on the executors' running and frozen lists */
  tl__lock(s);
  s->check_epoch++;
  int err = tl__registry_check(&c, &running, &frozen);
  if (err == TL_OK)
    err = tl__ledger_check(&c, running, frozen);
  if (err == TL_OK)
    err = tl__tasksets_check(&c, running, frozen);
  if (err == TL_OK)
    err = tl__locality_check(&c);
  if (err == TL_OK)
    err = tl__exclude_check(&c);
  if (err == TL_OK)
    err = tl__queue_check(&c);
  if (err == TL_OK)
    err = check_strings(&c);
  if (err == TL_OK)
    err = check_memory(&c);
  tl__mutex_unlock(&s->lock);
  return err;
}

/* ---------------------------------------------------------------------------------------------
 * Stats and snapshots
 * ------------------------------------------------------------------------------------------- */

void tl_stats_get(tl_scheduler *s, tl_stats *out) {
  if (out == NULL)
    return;
  if (s == NULL) {
    memset(out, 0, sizeof *out);
    return;
  }
  tl__lock(s);
  *out = s->totals;
  out->executors_alive = s->nalive;
  out->executors_decommissioning = s->ndecommissioning;
  out->executors_pending_loss = s->npending_loss;
  out->executors_recovering = s->nrecovering;
  out->tombstones = s->ntombstones;
  out->hosts = s->nhosts;
  out->racks = s->nracks;
  out->pools = s->npools;
  out->places = s->nplaces;
  out->tasksets_active = s->nactive;
  out->tasksets_zombie = s->nzombie;
  out->attempts_running = s->attempts_by_tid.n;
  out->attempts_frozen = s->nfrozen;
  out->tasks_pending = s->npending_tasks;
  out->tasks_speculatable = s->nspeculatable;
  size_t delivered = atomic_load(&s->batch_delivered);
  out->events_queued = s->events.n + (s->batch.n > delivered ? s->batch.n - delivered : 0);
  out->mem_live_bytes = s->mem_bytes;
  out->mem_live_blocks = s->mem_blocks;
  tl__exclude_stats(s, out);
  tl__mutex_unlock(&s->lock);
}

int tl_executor_get(tl_scheduler *s, const char *executor_id, tl_executor_status *out) {
  if (s == NULL || tl__name_len(executor_id, TL_ID_MAX) == 0 || out == NULL)
    return TL_EINVAL;
  tl__lock(s);
  tl__executor *ex = tl__executor_find(s, executor_id);
  int err = ex == NULL ? TL_ENOENT : ex->state == TL_EXECUTOR_REMOVED ? TL_EGONE : TL_OK;
  if (err == TL_OK) {
    out->state = (tl_executor_state)ex->state;
    out->cores = ex->cores;
    out->free_cores = ex->free_cores;
    out->running = ex->nrunning;
    out->frozen = ex->nfrozen;
    const char *host = tl__names_host(ex->names);
    memcpy(out->host, host, strlen(host) + 1);
    out->ud = ex->ud;
  }
  tl__mutex_unlock(&s->lock);
  return err;
}

int tl_executor_list(tl_scheduler *s, tl_executor_info *out, size_t cap, size_t *n) {
  if (s == NULL || n == NULL || (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  size_t k = 0;
  for (const tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    if (ex->state == TL_EXECUTOR_REMOVED)
      continue;
    if (k < cap) {
      tl_executor_info *o = &out[k];
      memcpy(o->id, tl__executor_id(ex), ex->hh_by_id.keylen + 1u);
      const char *host = tl__names_host(ex->names);
      memcpy(o->host, host, strlen(host) + 1);
      o->state = (tl_executor_state)ex->state;
      o->cores = ex->cores;
      o->free_cores = ex->free_cores;
      o->running = ex->nrunning;
      o->frozen = ex->nfrozen;
      o->ud = ex->ud;
    }
    k++;
  }
  tl__mutex_unlock(&s->lock);
  *n = k;
  return TL_OK;
}

int tl_pool_get(tl_scheduler *s, const char *name, tl_pool_status *out) {
  if (s == NULL || tl__name_len(name, TL_HOST_MAX) == 0 || out == NULL)
    return TL_EINVAL;
  tl__lock(s);
  tl__pool *p = tl__pool_find(s, name);
  if (p != NULL) {
    out->mode = (tl_sched_mode)p->mode;
    out->weight = p->weight;
    out->min_share = p->min_share;
    out->running = p->running;
    out->tasksets = p->ntasksets;
  }
  tl__mutex_unlock(&s->lock);
  return p != NULL ? TL_OK : TL_ENOENT;
}

int tl_taskset_get(tl_scheduler *s, tl_taskset_id id, tl_taskset_status *out) {
  if (s == NULL || out == NULL)
    return TL_EINVAL;
  tl__lock(s);
  tl__taskset *ts = tl__taskset_find(s, id);
  if (ts != NULL) {
    out->info.id = ts->id;
    out->info.stage_id = ts->stage_id;
    out->info.stage_attempt = ts->stage_attempt;
    out->info.ntasks = ts->ntasks;
    out->zombie = ts->zombie;
    out->failed = ts->failed;
    out->running = ts->nrunning;
    out->frozen = ts->nfrozen;
    out->pending = ts->npending;
    out->succeeded = ts->nsucceeded;
    out->cpus_per_task = ts->cpus;
    out->locality_levels = ts->loc != NULL ? ts->loc->levels : (1u << TL_NO_PREF) | (1u << TL_ANY);
    out->locality = ts->loc != NULL ? (tl_locality)ts->loc->level : TL_NO_PREF;
  }
  tl__mutex_unlock(&s->lock);
  return ts != NULL ? TL_OK : TL_ENOENT;
}

/* ---------------------------------------------------------------------------------------------
 * tl_explain_taskset: the heap dump's "nearest GC root", for a task set.
 * ------------------------------------------------------------------------------------------- */

static void explain_line(void *ud, const char *line) { tl__text_str(ud, line); }

int tl_explain_taskset(tl_scheduler *s, tl_taskset_id id, char *buf, size_t len) {
  if (s == NULL || buf == NULL || len == 0)
    return TL_EINVAL;
  tl__text t = {buf, len, 0};
  buf[0] = '\0';
  tl__lock(s);
  tl__taskset *ts = tl__taskset_find(s, id);
  if (ts == NULL) {
    tl__mutex_unlock(&s->lock);
    return TL_ENOENT;
  }
  uint64_t now = s->last_now;
  tl__text_printf(&t,
                  "task set %llu (stage %u attempt %u, %u tasks): %s%s; %u running (%u frozen), "
                  "%u pending, %u succeeded\n",
                  (unsigned long long)ts->id, ts->stage_id, ts->stage_attempt, ts->ntasks,
                  ts->zombie ? "zombie" : "active", ts->failed ? ", failed" : "", ts->nrunning,
                  ts->nfrozen, ts->npending, ts->nsucceeded);
  if (ts->loc != NULL && !ts->zombie) {
    const tl__locality *loc = ts->loc;
    tl__text_printf(&t, "locality: at %s, its wait began at %.3f s; levels",
                    tl_locality_name(loc->level), (double)loc->reset_time / 1e9);
    for (unsigned l = 0; l <= TL_ANY; l++)
      if (loc->levels & (1u << l))
        tl__text_printf(&t, " %s", tl_locality_name(l));
    tl__text_str(&t, "\n");
  }
  if (ts->nrunning == 0)
    tl__text_str(&t, "held by: nothing runs; it waits for offers for its pending tasks\n");
  else
    tl__text_printf(&t, "held by %s:\n", ts->zombie ? "(released when these end)" : "its attempts");
  for (tl__link *l = ts->running.next; l != &ts->running; l = l->next) {
    const tl__attempt *a = tl__container_of(l, tl__attempt, on_taskset);
    const tl__executor *ex = a->executor;
    tl__text_printf(&t, "  tid %llu (index %u, attempt %u, %s) %s executor %s on %s (%s",
                    (unsigned long long)a->tid, a->index, a->attempt,
                    a->state == TL__RUNNING ? "RUNNING" : "LAUNCHING",
                    a->frozen ? "frozen on" : "on", tl__executor_id(ex), tl__names_host(ex->names),
                    tl_executor_state_name(ex->state));
    if (ex->state == TL_EXECUTOR_PENDING_LOSS) {
      if (tl__list_linked(&ex->on_timeline))
        tl__text_printf(&t, ", loss reason due within %.1f s",
                        (double)(ex->when > now ? ex->when - now : 0) / 1e9);
      else
        tl__text_str(&t, ", waiting for the loss reason with no deadline");
    } else if (ex->state == TL_EXECUTOR_RECOVERING) {
      if (tl__list_linked(&ex->on_timeline))
        tl__text_printf(&t, ", restored: waits for it to reconcile, lost in %.1f s",
                        (double)(ex->when > now ? ex->when - now : 0) / 1e9);
      else
        tl__text_str(&t, ", restored: waits for it to reconcile, with no deadline");
    } else if (ex->decommission_msg != NULL) {
      tl__text_printf(&t, ": %s", ex->decommission_msg->text);
    }
    tl__text_str(&t, ")\n");
  }
  tl__exclude_explain(s, ts, explain_line, &t);
  tl__mutex_unlock(&s->lock);
  tl__text_end(&t);
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * tl_metrics_text: tl_stats as Prometheus text (exposition format 0.0.4).
 *
 * One table names every field of tl_stats, in the struct's order; the text is written from a
 * tl_stats_get snapshot straight into the caller's buffer, counting what does not fit, so the
 * call needs no memory of its own. A field added to tl_stats must be added here too: the
 * assertion below the table fails the build until the table's last entry is the struct's last
 * field, and the metrics suite compares every sample with its field.
 * ------------------------------------------------------------------------------------------- */

typedef struct metric {
  const char *name; /* after "taskledger_"; a counter's ends in _total */
  const char *help; /* one sentence, no backslash or newline (HELP would need them escaped) */
  size_t offset;    /* of its field in tl_stats */
  bool counter;     /* a uint64_t total (a counter), else a size_t count (a gauge) */
} metric;

#define GAUGE(field, help)                                                                         \
  { #field, help, offsetof(tl_stats, field), false }
#define COUNTER(field, help)                                                                       \
  { #field "_total", help, offsetof(tl_stats, field), true }

static const metric metrics[] = {
    GAUGE(executors_alive, "Executors in state ALIVE."),
    GAUGE(executors_decommissioning, "Executors in state DECOMMISSIONING."),
    GAUGE(executors_pending_loss,
          "Executors in state PENDING_LOSS, waiting for the reason of their loss."),
    GAUGE(executors_recovering,
          "Executors in state RECOVERING: restored from a snapshot, not yet reconciled."),
    GAUGE(tombstones, "Ids of removed executors remembered, so that late messages are refused."),
    GAUGE(hosts, "Hosts with at least one live executor."),
    GAUGE(racks, "Racks with at least one host that has a live executor."),
    GAUGE(pools, "Scheduling pools, the default pool included."),
    GAUGE(places, "Executor ids and host names that some task set not yet released prefers."),
    GAUGE(tasksets_active, "Task sets that are not zombie."),
    GAUGE(tasksets_zombie, "Zombie task sets, still draining their running attempts."),
    GAUGE(attempts_running, "Task attempts in flight: entries of the tid index."),
    GAUGE(attempts_frozen, "Task attempts frozen on pending-loss and recovering executors."),
    GAUGE(tasks_pending, "Task indices of active task sets waiting to launch."),
    GAUGE(tasks_speculatable, "Slow tasks whose speculative copy waits to launch."),
    GAUGE(events_queued, "Events made and not yet delivered to the callbacks."),
    GAUGE(mem_live_bytes, "Bytes of the scheduler's own live allocations."),
    GAUGE(mem_live_blocks, "Number of the scheduler's own live allocations."),
    COUNTER(launched, "Task attempts launched."),
    COUNTER(succeeded, "FINISHED status updates taken."),
    COUNTER(failed, "Task attempts ended by a failure or by their executor's loss."),
    COUNTER(killed, "Task attempts ended killed."),
    COUNTER(stale_updates, "Status updates answered TL_ESTALE."),
    COUNTER(rejected_updates, "Status updates answered TL_EOWNER."),
    COUNTER(rejected_offers, "Offers from executors that cannot take tasks."),
    COUNTER(executors_lost, "Executors whose loss began."),
    COUNTER(tasksets_released, "Task sets released."),
    GAUGE(executors_excluded, "Executors excluded for the application (exclude on failure)."),
    GAUGE(nodes_excluded, "Nodes excluded for the application (exclude on failure)."),
    GAUGE(tasksets_with_failures, "Task sets holding counted failures (exclude on failure)."),
    GAUGE(tasksets_unschedulable, "Task sets waiting out the unschedulable timeout."),
    COUNTER(excluded_offers, "Offers from executors excluded for the application."),
    COUNTER(tasksets_unschedulable_aborted,
            "Task sets aborted because no executor may run one of their tasks."),
    COUNTER(pending_loss_timeouts,
            "Pending executor losses ended by the pending-loss timeout, no reason having come."),
    COUNTER(recovery_timeouts,
            "Restored executors lost because they did not reconcile within the recovery timeout."),
    COUNTER(reconciled, "Restored executors reconciled."),
    COUNTER(reconcile_lost,
            "Task attempts ended as lost because a reconciling executor did not report them."),
    COUNTER(reconcile_unknown,
            "Task ids reconciling executors reported that the ledger did not hold there."),
    COUNTER(reconcile_adopted,
            "Task attempts launched after the restored image that reconciliation adopted."),
};

#undef GAUGE
#undef COUNTER

_Static_assert(offsetof(tl_stats, reconcile_adopted) + sizeof(uint64_t) == sizeof(tl_stats),
               "a field was added to tl_stats: add it to the metrics table of tl_metrics_text");

int tl_metrics_text(tl_scheduler *s, char *buf, size_t len, size_t *needed) {
  if (needed != NULL)
    *needed = 0;
  if (s == NULL || (buf == NULL && len > 0))
    return TL_EINVAL;
  tl_stats st;
  tl_stats_get(s, &st); /* one snapshot, under the lock */
  tl__text k = {buf, len, 0};
  for (size_t i = 0; i < TL__ARRAY_SIZE(metrics); i++) {
    const metric *m = &metrics[i];
    const char *field = (const char *)&st + m->offset;
    uint64_t value;
    if (m->counter)
      memcpy(&value, field, sizeof value);
    else {
      size_t count;
      memcpy(&count, field, sizeof count);
      value = count;
    }
    tl__text_str(&k, "# HELP taskledger_");
    tl__text_str(&k, m->name);
    tl__text_str(&k, " ");
    tl__text_str(&k, m->help);
    tl__text_str(&k, "\n# TYPE taskledger_");
    tl__text_str(&k, m->name);
    tl__text_str(&k, m->counter ? " counter\ntaskledger_" : " gauge\ntaskledger_");
    tl__text_str(&k, m->name);
    tl__text_str(&k, " ");
    tl__text_printf(&k, "%llu", (unsigned long long)value);
    tl__text_str(&k, "\n");
  }
  tl__text_end(&k); /* cut: marked as tl_explain_taskset marks it */
  if (needed != NULL)
    *needed = k.len;
  return TL_OK;
}

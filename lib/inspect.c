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
#include "placement.h"
#include "resource.h"

#include <stdio.h>

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
  tl__placement_each_str(c, fn);
}

/* Strings: each reference count equals the holders found. Every holder is visited (which also
 * accounts each string once) before any count is compared. */
static int check_strings(tl__checker *c) {
  each_str(c, tl__check_visit_str);
  int err = tl__events_check_names(c);
  if (err != TL_OK)
    return err;
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
    err = tl__res_check(&c);
  if (err == TL_OK)
    err = tl__demand_check(&c);
  if (err == TL_OK)
    err = tl__placement_check(&c);
  if (err == TL_OK)
    err = tl__shuffle_check(&c);
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

/* tl_stats_get's snapshot, the lock held. */
static void stats_locked(tl_scheduler *s, tl_stats *out) {
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
  out->tasksets_unschedulable += s->nplace_timers; /* hard placement's (placement.c) */
  out->tasksets_unplaceable = s->nplace_timers;
}

void tl_stats_get(tl_scheduler *s, tl_stats *out) {
  if (out == NULL)
    return;
  if (s == NULL) {
    memset(out, 0, sizeof *out);
    return;
  }
  tl__lock(s);
  stats_locked(s, out);
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
    out->profile = ex->profile;
    out->nresources = ex->res != NULL ? ex->res->n : 0;
  }
  tl__mutex_unlock(&s->lock);
  return err;
}

int tl_executor_frozen(tl_scheduler *s, const char *executor_id, tl_tid *tids, size_t cap,
                       size_t *n) {
  if (n != NULL)
    *n = 0;
  if (s == NULL || tl__name_len(executor_id, TL_ID_MAX) == 0 || n == NULL ||
      (tids == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  tl__executor *ex = tl__executor_find(s, executor_id);
  int err = ex == NULL ? TL_ENOENT : ex->state == TL_EXECUTOR_REMOVED ? TL_EGONE : TL_OK;
  size_t k = 0;
  if (err == TL_OK) {
    /* The frozen list is in launch order: a loss freezes the running list in its order, a
     * restore freezes the image's attempts in theirs. */
    for (tl__link *l = ex->frozen.next; l != &ex->frozen; l = l->next) {
      if (k < cap)
        tids[k] = tl__container_of(l, tl__attempt, on_executor)->tid;
      k++;
    }
  }
  tl__mutex_unlock(&s->lock);
  *n = k;
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
      o->profile = ex->profile;
      o->nresources = ex->res != NULL ? ex->res->n : 0;
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
    out->running = tl__pool_running(p);
    out->tasksets = p->ntasksets;
    out->depth = p->depth;
    out->children = p->nchildren;
    memset(out->parent, 0, sizeof out->parent);
    if (p->parent != NULL)
      memcpy(out->parent, p->parent->name, p->parent->name_len);
  }
  tl__mutex_unlock(&s->lock);
  return p != NULL ? TL_OK : TL_ENOENT;
}

/* One task set's status, for tl_taskset_get and tl_taskset_list; the lock held. */
static void taskset_status_of(const tl__taskset *ts, tl_taskset_status *out) {
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
  out->profile = ts->profile;
  out->nresources = ts->req != NULL ? ts->req->n : 0;
  out->max_task_failures = ts->max_failures;
  out->ntags = ts->tags != NULL ? ts->tags->n : 0;
  tl__placement_status(ts, out);
}

int tl_taskset_get(tl_scheduler *s, tl_taskset_id id, tl_taskset_status *out) {
  if (s == NULL || out == NULL)
    return TL_EINVAL;
  tl__lock(s);
  tl__taskset *ts = tl__taskset_find(s, id);
  if (ts != NULL)
    taskset_status_of(ts, out);
  tl__mutex_unlock(&s->lock);
  return ts != NULL ? TL_OK : TL_ENOENT;
}

int tl_taskset_tags(tl_scheduler *s, tl_taskset_id id, tl_tag_info *out, size_t cap, size_t *n) {
  if (n != NULL)
    *n = 0;
  if (s == NULL || n == NULL || (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  const tl__taskset *ts = tl__taskset_find(s, id);
  size_t k = 0;
  for (const char *p = ts != NULL ? tl__tags_next(ts->tags, NULL) : NULL; p != NULL;
       p = tl__tags_next(ts->tags, p), k++)
    if (k < cap)
      memcpy(out[k].tag, p, strlen(p) + 1);
  tl__mutex_unlock(&s->lock);
  if (ts == NULL)
    return TL_ENOENT;
  *n = k;
  return TL_OK;
}

int tl_taskset_placement(tl_scheduler *s, tl_taskset_id id, tl_place_info *out, size_t cap,
                         size_t *n) {
  if (n != NULL)
    *n = 0;
  if (s == NULL || n == NULL || (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  const tl__taskset *ts = tl__taskset_find(s, id);
  size_t k = ts != NULL ? tl__placement_names(ts, out, cap) : 0;
  tl__mutex_unlock(&s->lock);
  if (ts == NULL)
    return TL_ENOENT;
  *n = k;
  return TL_OK;
}

/* The map by id keeps insertion order (uthash appends), which is submission order; a restore
 * inserts the image's task sets in that order too. */
int tl_taskset_list(tl_scheduler *s, tl_taskset_status *out, size_t cap, size_t *n) {
  if (s == NULL || n == NULL || (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  size_t k = 0;
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    if (k < cap)
      taskset_status_of(ts, &out[k]);
    k++;
  }
  tl__mutex_unlock(&s->lock);
  *n = k;
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * tl_explain_taskset: the heap dump's "nearest GC root", for a task set.
 * ------------------------------------------------------------------------------------------- */

static void explain_line(void *ud, const char *line) { tl__text_str(ud, line); }

/* The task set's resources: its profile and requests, and, while it has work to launch and no
 * live executor of its profile could ever run one of its tasks, what the largest falls short
 * of. */
static void explain_resources(struct tl_scheduler *s, const tl__taskset *ts, tl__text *t) {
  const tl__treqs *q = ts->req;
  if (q == NULL && ts->profile == 0)
    return;
  tl__text_printf(t, "resources: profile %u; each task needs %u cores", ts->profile, ts->cpus);
  for (uint32_t i = 0; q != NULL && i < q->n; i++) {
    if (q->r[i].share == 1)
      tl__text_printf(t, ", %s x%u", q->r[i].kind->name, q->r[i].amount);
    else
      tl__text_printf(t, ", %s 1/%u", q->r[i].kind->name, q->r[i].share);
  }
  tl__text_str(t, "\n");
  if (ts->zombie || ts->npending + ts->nspeculatable == 0)
    return;
  size_t of_profile = 0;
  uint32_t cores = 0;
  for (const tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    if (ex->state != TL_EXECUTOR_ALIVE || ex->profile != ts->profile)
      continue;
    if (tl__res_could_fit(ex, ts))
      return; /* some executor can: the task waits for its cores or addresses to be free */
    of_profile++;
    if (ex->cores > cores)
      cores = ex->cores;
  }
  if (of_profile == 0) {
    tl__text_printf(t, "unsatisfiable now: no live executor of profile %u\n", ts->profile);
    return;
  }
  if (cores < ts->cpus)
    tl__text_printf(
        t, "unsatisfiable now: needs %u cores; the largest executor of profile %u has %u\n",
        ts->cpus, ts->profile, cores);
  for (uint32_t i = 0; q != NULL && i < q->n; i++) {
    uint32_t most = 0;
    for (const tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
      if (ex->state != TL_EXECUTOR_ALIVE || ex->profile != ts->profile || ex->res == NULL)
        continue;
      for (uint32_t k = 0; k < ex->res->n; k++)
        if (ex->res->r[k].kind == q->r[i].kind && ex->res->r[k].naddr > most)
          most = ex->res->r[k].naddr;
    }
    if (most < q->r[i].amount)
      tl__text_printf(
          t, "unsatisfiable now: needs %s x%u; the largest executor of profile %u has %u\n",
          q->r[i].kind->name, q->r[i].amount, ts->profile, most);
  }
}

/* tl_explain_taskset's speculation line: how the check judges the task set now (docs/api.md
 * "Speculation"); true with *rule when it judges its attempts at all. */
static bool explain_speculation(tl_scheduler *s, const tl__taskset *ts, tl__text *t,
                                tl__spec_rule *rule) {
  if (!s->cfg.speculation || ts->heap == NULL || ts->zombie)
    return false;
  tl__spec_cores cores = {0};
  uint32_t recorded = ts->nheap_low + ts->nheap_high;
  if (!tl__speculation_rule(s, ts, rule, &cores)) {
    tl__text_printf(t, "speculation: not yet (%u run times recorded)\n", recorded);
    return false;
  }
  if (rule->custom)
    tl__text_printf(t,
                    "speculation: below the quantile (%u run times), its tasks fit on one "
                    "executor: slow past the duration threshold, %.3f s\n",
                    recorded, (double)rule->threshold / 1e9);
  else
    tl__text_printf(t, "speculation: slow past %.3f s (the median of %u run times: %.3f s)%s\n",
                    (double)rule->threshold / 1e9, recorded, (double)rule->median / 1e9,
                    rule->decommission
                        ? "; on a decommissioning executor, also when its kill comes first"
                        : "");
  return true;
}

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
  if (ts->max_failures != s->cfg.max_task_failures)
    tl__text_printf(&t, "max_task_failures: %u (the config's %u)\n", ts->max_failures,
                    s->cfg.max_task_failures);
  if (ts->tags != NULL) {
    tl__text_str(&t, "tags:");
    for (const char *p = tl__tags_next(ts->tags, NULL); p != NULL; p = tl__tags_next(ts->tags, p))
      tl__text_printf(&t, " %s", p);
    tl__text_str(&t, "\n");
  }
  if (ts->loc != NULL && !ts->zombie) {
    const tl__locality *loc = ts->loc;
    tl__text_printf(&t, "locality: at %s, its wait began at %.3f s; levels",
                    tl_locality_name(loc->level), (double)loc->reset_time / 1e9);
    for (unsigned l = 0; l <= TL_ANY; l++)
      if (loc->levels & (1u << l))
        tl__text_printf(&t, " %s", tl_locality_name(l));
    tl__text_str(&t, "\n");
  }
  tl__spec_rule rule;
  bool judged = explain_speculation(s, ts, &t, &rule);
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
    if (ex->state == TL_EXECUTOR_DECOMMISSIONING && s->cfg.decommission_kill_interval_ns != 0) {
      uint64_t kill = tl__add_sat(ex->decommission_time, s->cfg.decommission_kill_interval_ns);
      if (kill >= now)
        tl__text_printf(&t, ", to be killed in %.3f s", (double)(kill - now) / 1e9);
      else
        tl__text_printf(&t, ", its kill was due %.3f s ago", (double)(now - kill) / 1e9);
    }
    tl__text_str(&t, ")");
    if (ts->idx[a->index].flags & TL__IDX_SPECULATABLE) {
      int why = judged ? tl__speculation_why(s, a, &rule, now) : TL__SLOW_NOT;
      tl__text_printf(&t, "; speculatable%s",
                      why == TL__SLOW_MEDIAN         ? ": ran longer than the median allows"
                      : why == TL__SLOW_THRESHOLD    ? ": ran longer than the duration threshold"
                      : why == TL__SLOW_DECOMMISSION ? ": its executor's kill comes before its end"
                                                     : "");
    }
    tl__text_str(&t, "\n");
  }
  explain_resources(s, ts, &t);
  tl__placement_explain(s, ts, &t);
  tl__exclude_explain(s, ts, explain_line, &t);
  tl__mutex_unlock(&s->lock);
  tl__text_end(&t);
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Resources (docs/api.md "Resources")
 * ------------------------------------------------------------------------------------------- */

static void resource_info(tl_resource_info *o, const char *name, uint32_t addresses, uint32_t nfree,
                          uint64_t used) {
  memset(o->name, 0, sizeof o->name);
  memcpy(o->name, name, strlen(name) + 1); /* names are shorter than TL_RESOURCE_NAME_MAX */
  o->addresses = addresses;
  o->free = nfree;
  o->used = used;
}

/* The executor an inspection names: TL_OK with *out, TL_ENOENT or TL_EGONE (the lock held). */
static int inspected_executor(tl_scheduler *s, const char *executor_id, tl__executor **out) {
  tl__executor *ex = tl__executor_find(s, executor_id);
  *out = ex;
  return ex == NULL ? TL_ENOENT : ex->state == TL_EXECUTOR_REMOVED ? TL_EGONE : TL_OK;
}

int tl_executor_resources(tl_scheduler *s, const char *executor_id, tl_resource_info *out,
                          size_t cap, size_t *n) {
  if (n != NULL)
    *n = 0;
  if (s == NULL || tl__name_len(executor_id, TL_ID_MAX) == 0 || n == NULL ||
      (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  tl__executor *ex;
  int err = inspected_executor(s, executor_id, &ex);
  size_t k = 0;
  if (err == TL_OK && ex->res != NULL) {
    for (; k < ex->res->n; k++) {
      const tl__eres *x = &ex->res->r[k];
      if (k < cap)
        resource_info(&out[k], x->kind->name, x->naddr, x->nfree, x->used);
    }
  }
  tl__mutex_unlock(&s->lock);
  *n = k;
  return err;
}

int tl_executor_addresses(tl_scheduler *s, const char *executor_id, uint32_t resource,
                          tl_address_info *out, size_t cap, size_t *n) {
  if (n != NULL)
    *n = 0;
  if (s == NULL || tl__name_len(executor_id, TL_ID_MAX) == 0 || n == NULL ||
      (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  tl__executor *ex;
  int err = inspected_executor(s, executor_id, &ex);
  if (err == TL_OK && (ex->res == NULL || resource >= ex->res->n))
    err = TL_ENOENT;
  size_t k = 0;
  if (err == TL_OK) {
    const tl__eres *x = &ex->res->r[resource];
    for (; k < x->naddr; k++) {
      if (k < cap) {
        memset(out[k].address, 0, sizeof out[k].address);
        memcpy(out[k].address, x->addr[k], strlen(x->addr[k]) + 1);
        out[k].used = x->addr_used[k];
      }
    }
  }
  tl__mutex_unlock(&s->lock);
  *n = k;
  return err;
}

/* The names some executor declares, with their totals (the lock held): the first cap in out. */
static size_t totals_locked(tl_scheduler *s, tl_resource_info *out, size_t cap) {
  size_t k = 0;
  for (const tl__link *l = s->rkinds.next; l != &s->rkinds; l = l->next) {
    const tl__rkind *kind = tl__container_of(l, tl__rkind, on_scheduler);
    if (kind->addresses == 0) /* named only by task sets */
      continue;
    if (k < cap)
      resource_info(&out[k], kind->name, kind->addresses, kind->free, kind->used);
    k++;
  }
  return k;
}

int tl_resource_totals(tl_scheduler *s, tl_resource_info *out, size_t cap, size_t *n) {
  if (n != NULL)
    *n = 0;
  if (s == NULL || n == NULL || (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  *n = totals_locked(s, out, cap);
  tl__mutex_unlock(&s->lock);
  return TL_OK;
}

int tl_attempt_grants(tl_scheduler *s, tl_tid tid, tl_grant *out, size_t cap, size_t *n) {
  if (n != NULL)
    *n = 0;
  if (s == NULL || n == NULL || (out == NULL && cap > 0))
    return TL_EINVAL;
  tl__lock(s);
  const tl__attempt *a = tid != 0 ? tl__attempt_find(s, tid) : NULL;
  /* A frozen attempt is on its executor's frozen list only. */
  for (const tl__executor *ex = s->executors_by_id;
       a == NULL && tid != 0 && s->nfrozen > 0 && ex != NULL; ex = ex->hh_by_id.next)
    for (const tl__link *l = ex->frozen.next; a == NULL && l != &ex->frozen; l = l->next)
      if (tl__container_of(l, tl__attempt, on_executor)->tid == tid)
        a = tl__container_of(l, tl__attempt, on_executor);
  int err = a != NULL ? TL_OK : TL_ESTALE;
  size_t k = 0;
  if (a != NULL && a->grants != NULL) {
    for (; k < a->grants->n; k++)
      if (k < cap)
        out[k] = a->grants->g[k];
  }
  tl__mutex_unlock(&s->lock);
  *n = k;
  return err;
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
    GAUGE(tasksets_unplaceable,
          "Task sets whose hard placement no live executor satisfies (unschedulable)."),
};

#undef GAUGE
#undef COUNTER

_Static_assert(offsetof(tl_stats, tasksets_unplaceable) + sizeof(size_t) == sizeof(tl_stats),
               "a field was added to tl_stats: add it to the metrics table of tl_metrics_text");

/* Per resource name some executor declares: its addresses, free ones and use (in addresses, a
 * decimal), as labelled gauges (the lock held). */
static void resource_metrics(tl_scheduler *s, tl__text *k) {
  static const struct {
    const char *name, *help;
  } gauges[3] = {
      {"resource_addresses", "Addresses of a resource the executors declare."},
      {"resource_free", "Addresses of a resource no task attempt holds any share of."},
      {"resource_used", "Addresses of a resource task attempts hold, shares summed."},
  };
  if (totals_locked(s, NULL, 0) == 0)
    return;
  for (int g = 0; g < 3; g++) {
    tl__text_printf(k, "# HELP taskledger_%s %s\n# TYPE taskledger_%s gauge\n", gauges[g].name,
                    gauges[g].help, gauges[g].name);
    for (const tl__link *l = s->rkinds.next; l != &s->rkinds; l = l->next) {
      const tl__rkind *kind = tl__container_of(l, tl__rkind, on_scheduler);
      if (kind->addresses == 0)
        continue;
      tl__text_printf(k, "taskledger_%s{resource=\"%s\"} ", gauges[g].name, kind->name);
      if (g == 0)
        tl__text_printf(k, "%u\n", kind->addresses);
      else if (g == 1)
        tl__text_printf(k, "%u\n", kind->free);
      else /* exact to the unit: whole addresses, then the share left as a fraction */
        tl__text_printf(k, "%.6f\n", (double)kind->used / (double)TL_SHARE_UNIT);
    }
  }
}

int tl_metrics_text(tl_scheduler *s, char *buf, size_t len, size_t *needed) {
  if (needed != NULL)
    *needed = 0;
  if (s == NULL || (buf == NULL && len > 0))
    return TL_EINVAL;
  tl_stats st;
  tl__text k = {buf, len, 0};
  tl__lock(s); /* one snapshot: the stats, and the resources' lines written under the lock */
  stats_locked(s, &st);
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
  resource_metrics(s, &k);
  tl__mutex_unlock(&s->lock);
  tl__text_end(&k); /* cut: marked as tl_explain_taskset marks it */
  if (needed != NULL)
    *needed = k.len;
  return TL_OK;
}

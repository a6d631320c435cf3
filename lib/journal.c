/* The call journal: one text line per call, in the order the calls took the lock, so that a
 * run can be replayed call for call (examples/replay) and a user can send us the journal of a
 * run that went wrong. The format is described in docs/journal.md and versioned by its first
 * line.
 *
 * A line is formatted twice: once to measure it, then into the allocation made for it before
 * the call changes anything, so that journaling cannot make a call fail halfway. Lines are
 * queued under the scheduler's lock and written to cfg.journal by the dispatcher (events.c)
 * with the lock released.
 */
#include "checker.h"
#include "journal.h"
#include "resource.h"

#include <inttypes.h>
#include <stdio.h>

#define PREFIX_MAX 24 /* "@" + 20 digits + " " and the NUL */
#define RESULT_MAX 112 /* " = ECORRUPT" + " launched=<20 digits> tid=<20 digits> grants=<20>" */

static void jw_u64(tl__text *w, uint64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
  tl__text_put(w, tmp, (size_t)n);
}

static void jw_i64(tl__text *w, int64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
  tl__text_put(w, tmp, (size_t)n);
}

/* Strings go in double quotes; a backslash escapes a quote, a backslash, and (as \xHH) every
 * byte outside printable ASCII, so a line never holds a newline. NULL is a bare "-". */
static void jw_str(tl__text *w, const char *text) {
  if (text == NULL) {
    tl__text_put(w, "-", 1);
    return;
  }
  tl__text_put(w, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\') {
      char esc[2] = {'\\', (char)*p};
      tl__text_put(w, esc, 2);
    } else if (*p < 0x20 || *p >= 0x7f) {
      char esc[5];
      snprintf(esc, sizeof esc, "\\x%02x", *p);
      tl__text_put(w, esc, 4);
    } else {
      tl__text_put(w, (const char *)p, 1);
    }
  }
  tl__text_put(w, "\"", 1);
}

static void key_u64(tl__text *w, const char *key, uint64_t v) {
  tl__text_str(w, " ");
  tl__text_str(w, key);
  tl__text_str(w, "=");
  jw_u64(w, v);
}

static void arg_str(tl__text *w, const char *text) {
  tl__text_str(w, " ");
  jw_str(w, text);
}

/* ---------------------------------------------------------------------------------------------
 * One format per journaled call (the argument list; the time comes before, the result after).
 * ------------------------------------------------------------------------------------------- */

/* Version 2: a declaration or request the call refuses (TL_ERESOURCE) is written as
 * `KEY=malformed`, not field by field: its counts and pointers are the caller's, unchecked. */
void tl__jfmt_add(tl__text *w, const tl_executor_desc *d) {
  tl__text_str(w, "add");
  arg_str(w, d->id);
  arg_str(w, d->host);
  arg_str(w, d->rack);
  key_u64(w, "cores", d->cores);
  if (d->profile != 0)
    key_u64(w, "profile", d->profile);
  if (d->nresources == 0)
    return;
  if (tl__res_decl_valid(d->resources, d->nresources) != TL_OK) {
    tl__text_str(w, " resources=malformed");
    return;
  }
  key_u64(w, "resources", d->nresources);
  for (uint32_t i = 0; i < d->nresources; i++) {
    const tl_resource *r = &d->resources[i];
    arg_str(w, r->name);
    key_u64(w, "addresses", r->naddresses);
    for (uint32_t k = 0; k < r->naddresses; k++)
      arg_str(w, r->addresses[k]);
  }
}

void tl__jfmt_lost(tl__text *w, const char *id, const tl_loss_reason *r) {
  tl__text_str(w, "lost");
  arg_str(w, id);
  tl__text_str(w, " ");
  tl__text_str(w, tl_loss_kind_name(r->kind));
  key_u64(w, "app", r->caused_by_app);
  tl__text_str(w, " exit=");
  jw_i64(w, r->exit_code);
  arg_str(w, r->message);
}

void tl__jfmt_id(tl__text *w, const char *op, const char *id) {
  tl__text_str(w, op);
  arg_str(w, id);
}

void tl__jfmt_decommission(tl__text *w, const char *id, const char *message) {
  tl__text_str(w, "decommission");
  arg_str(w, id);
  arg_str(w, message);
}

void tl__jfmt_submit(tl__text *w, const tl_taskset_desc *d) {
  tl__text_str(w, "submit");
  key_u64(w, "stage", d->stage_id);
  key_u64(w, "attempt", d->stage_attempt);
  key_u64(w, "priority", d->priority);
  key_u64(w, "ntasks", d->ntasks);
  key_u64(w, "cpus", d->cpus_per_task);
  key_u64(w, "shuffle_map", d->shuffle_map);
  key_u64(w, "barrier", d->barrier);
  arg_str(w, d->pool);
  if (d->profile != 0)
    key_u64(w, "profile", d->profile);
  if (d->nresources != 0 && tl__res_req_valid(d->resources, d->nresources) != TL_OK) {
    tl__text_str(w, " requests=malformed");
  } else if (d->nresources != 0) {
    key_u64(w, "requests", d->nresources);
    for (uint32_t i = 0; i < d->nresources; i++) {
      arg_str(w, d->resources[i].name);
      key_u64(w, "amount", d->resources[i].amount);
      key_u64(w, "share", d->resources[i].share);
    }
  }
  /* Version 3: a task set's own max_task_failures and its tags, where it has them. */
  if (d->max_task_failures != 0)
    key_u64(w, "max_failures", d->max_task_failures);
  if (d->ntags != 0) {
    key_u64(w, "tags", d->ntags);
    for (uint32_t i = 0; i < d->ntags; i++)
      arg_str(w, d->tags[i]);
  }
  /* Version 3, hard placement: spread=N, then allow_executors=N and allow_hosts=N, each with its
   * N strings, where the task set has them. */
  if (d->spread != TL_SPREAD_NONE)
    key_u64(w, "spread", (uint64_t)d->spread);
  if (d->nallowed_executors != 0) {
    key_u64(w, "allow_executors", d->nallowed_executors);
    for (uint32_t i = 0; i < d->nallowed_executors; i++)
      arg_str(w, d->allowed_executors[i]);
  }
  if (d->nallowed_hosts != 0) {
    key_u64(w, "allow_hosts", d->nallowed_hosts);
    for (uint32_t i = 0; i < d->nallowed_hosts; i++)
      arg_str(w, d->allowed_hosts[i]);
  }
  for (uint32_t i = 0; d->tasks != NULL && i < d->ntasks; i++) {
    const tl_task_desc *t = &d->tasks[i];
    if (t->nprefs == 0)
      continue;
    key_u64(w, "task", i);
    key_u64(w, "prefs", t->nprefs);
    for (uint32_t j = 0; j < t->nprefs; j++) {
      arg_str(w, t->prefs[j].host);
      arg_str(w, t->prefs[j].executor_id);
    }
  }
}

void tl__jfmt_pool_add(tl__text *w, const char *name, tl_sched_mode mode, uint32_t weight,
                       uint32_t min_share) {
  tl__text_str(w, "pool_add");
  arg_str(w, name);
  tl__text_str(w, mode == TL_FAIR ? " FAIR" : " FIFO");
  key_u64(w, "weight", weight);
  key_u64(w, "min_share", min_share);
}

void tl__jfmt_pool_set(tl__text *w, const char *name, tl_sched_mode mode, uint32_t weight,
                       uint32_t min_share) {
  tl__text_str(w, "pool_set");
  arg_str(w, name);
  tl__text_str(w, mode == TL_FAIR ? " FAIR" : " FIFO");
  key_u64(w, "weight", weight);
  key_u64(w, "min_share", min_share);
}

void tl__jfmt_pool_add_child(tl__text *w, const char *parent, const char *name, tl_sched_mode mode,
                             uint32_t weight, uint32_t min_share) {
  tl__text_str(w, "pool_add_child");
  arg_str(w, parent);
  arg_str(w, name);
  tl__text_str(w, mode == TL_FAIR ? " FAIR" : " FIFO");
  key_u64(w, "weight", weight);
  key_u64(w, "min_share", min_share);
}

void tl__jfmt_kill_task(tl__text *w, tl_tid tid, bool interrupt, const char *reason) {
  tl__text_str(w, "kill_task");
  key_u64(w, "tid", tid);
  key_u64(w, "interrupt", interrupt);
  arg_str(w, reason);
}

void tl__jfmt_reconcile(tl__text *w, const char *id, const tl_tid *running, size_t n, size_t ucap) {
  tl__text_str(w, "reconcile");
  arg_str(w, id);
  key_u64(w, "ucap", ucap);
  tl__text_str(w, " tids=");
  for (size_t i = 0; i < n; i++) {
    if (i != 0)
      tl__text_str(w, ",");
    jw_u64(w, running[i]);
  }
}

void tl__jfmt_reconcile_items(tl__text *w, const char *id, const tl_reconcile_item *items, size_t n,
                              size_t ucap) {
  tl__text_str(w, "reconcile_items");
  arg_str(w, id);
  key_u64(w, "ucap", ucap);
  tl__text_str(w, " items=");
  for (size_t i = 0; i < n; i++) {
    const tl_reconcile_item *it = &items[i];
    if (i != 0)
      tl__text_str(w, ",");
    jw_u64(w, it->tid);
    tl__text_str(w, "/");
    jw_u64(w, it->taskset);
    tl__text_str(w, "/");
    jw_u64(w, it->index);
    tl__text_str(w, "/");
    jw_u64(w, it->attempt);
    if (it->speculative)
      tl__text_str(w, "s");
    if (it->ended)
      tl__text_str(w, "e");
  }
}

void tl__journal_restored(struct tl_scheduler *s) {
  char line[160];
  snprintf(line, sizeof line,
           "@%" PRIu64 " restore executors=%u tasksets=%u next_tid=%" PRIu64 " epoch=%" PRIu64
           " = OK",
           s->last_now, HASH_CNT(hh_by_id, s->executors_by_id),
           HASH_CNT(hh_by_id, s->tasksets_by_id), s->next_tid, s->epoch);
  s->cfg.journal(s->cfg.journal_ud, line);
}

void tl__jfmt_kill_stage(tl__text *w, uint32_t stage_id, bool interrupt, const char *reason) {
  tl__text_str(w, "kill_stage");
  key_u64(w, "stage", stage_id);
  key_u64(w, "interrupt", interrupt);
  arg_str(w, reason);
}

void tl__jfmt_cancel_stage(tl__text *w, uint32_t stage_id, const char *reason) {
  tl__text_str(w, "cancel_stage");
  key_u64(w, "stage", stage_id);
  arg_str(w, reason);
}

void tl__jfmt_tag(tl__text *w, bool cancel, const char *tag, bool interrupt, const char *reason) {
  tl__text_str(w, cancel ? "cancel_tag" : "kill_tag");
  arg_str(w, tag);
  key_u64(w, "interrupt", interrupt);
  arg_str(w, reason);
}

void tl__jfmt_partition_completed(tl__text *w, uint32_t stage_id, uint32_t index) {
  tl__text_str(w, "partition_completed");
  key_u64(w, "stage", stage_id);
  key_u64(w, "index", index);
}

void tl__jfmt_offers(tl__text *w, const tl_offer *offers, size_t noffers, size_t cap) {
  tl__text_str(w, "offers");
  key_u64(w, "cap", cap);
  key_u64(w, "n", noffers);
  for (size_t i = 0; i < noffers; i++) {
    arg_str(w, offers[i].executor_id);
    tl__text_str(w, " ");
    jw_u64(w, offers[i].cores);
  }
}

void tl__jfmt_offers_grants(tl__text *w, const tl_offer *offers, size_t noffers, size_t cap,
                            size_t gcap) {
  tl__text_str(w, "offers_grants");
  key_u64(w, "cap", cap);
  key_u64(w, "gcap", gcap);
  key_u64(w, "n", noffers);
  for (size_t i = 0; i < noffers; i++) {
    arg_str(w, offers[i].executor_id);
    tl__text_str(w, " ");
    jw_u64(w, offers[i].cores);
  }
}

void tl__journal_offers_extra(char *buf, size_t cap, const tl_launch *out, size_t nout,
                              tl_tid first, bool grants_always) {
  size_t ngrants = 0;
  for (size_t i = 0; i < nout; i++)
    ngrants += out[i].ngrants;
  if (ngrants != 0 || grants_always)
    snprintf(buf, cap, " launched=%zu tid=%" PRIu64 " grants=%zu", nout, first, ngrants);
  else
    snprintf(buf, cap, " launched=%zu tid=%" PRIu64, nout, first);
}

void tl__jfmt_update(tl__text *w, const char *id, tl_tid tid, const tl_update *u) {
  tl__text_str(w, "update");
  arg_str(w, id);
  key_u64(w, "tid", tid);
  tl__text_str(w, " ");
  tl__text_str(w, tl_task_state_name(u->state));
  tl__text_str(w, " ");
  tl__text_str(w, u->state == TL_TASK_FAILED ? tl_end_kind_name(u->failure) : "-");
  arg_str(w, u->message);
  key_u64(w, "result", u->result != NULL);
  key_u64(w, "size", u->result_size);
  if (u->no_retry) /* version 3 */
    tl__text_str(w, " no_retry=1");
}

/* ---------------------------------------------------------------------------------------------
 * Lines
 * ------------------------------------------------------------------------------------------- */

tl__jline *tl__journal_open(struct tl_scheduler *s, tl__text *w) {
  size_t cap = PREFIX_MAX + w->len + RESULT_MAX;
  tl__jline *j = tl__malloc(s, sizeof *j + cap);
  if (j == NULL)
    return NULL;
  j->next = NULL;
  j->cap = cap;
  j->len = 0;
  w->buf = j->text;
  w->cap = cap;
  w->len = 0;
  tl__text_str(w, "@");
  jw_u64(w, s->last_now);
  tl__text_str(w, " ");
  return j;
}

void tl__journal_close(struct tl_scheduler *s, tl__jline *j, tl__text *w, int err,
                       const char *extra) {
  if (j == NULL)
    return;
  tl__text_str(w, " = ");
  tl__text_str(w, tl_err_name(err));
  if (extra != NULL)
    tl__text_str(w, extra);
  /* The measure pass sized the line; a longer one would be a formatting bug: cut, not overrun. */
  j->len = w->len < j->cap ? w->len : j->cap - 1;
  j->text[j->len] = '\0';
  *s->journal_tail = j;
  s->journal_tail = &j->next;
}

void tl__journal_free_list(struct tl_scheduler *s, tl__jline *j) {
  while (j != NULL) {
    tl__jline *next = j->next;
    tl__free(s, j, tl__jline_size(j));
    j = next;
  }
}

void tl__journal_account(tl__checker *c) {
  for (const tl__jline *j = c->s->journal; j != NULL; j = j->next)
    tl__check_account(c, tl__jline_size(j));
  for (const tl__jline *j = c->s->journal_batch; j != NULL; j = j->next)
    tl__check_account(c, tl__jline_size(j));
}

void tl__journal_start(struct tl_scheduler *s) {
  const tl_config *c = &s->cfg;
  char line[2048]; /* the longest line (every field at its widest) is some 1,250 bytes */
  s->cfg.journal(s->cfg.journal_ud, "# taskledger journal v3");
  snprintf(line, sizeof line,
           "config mode=%s cpus_per_task=%" PRIu32 " max_task_failures=%" PRIu32
           " heartbeat_timeout_ns=%" PRIu64 " pending_loss_timeout_ns=%" PRIu64
           " max_tombstones=%" PRIu32 " tombstone_ttl_ns=%" PRIu64 " max_result_bytes=%" PRIu64
           " speculation=%d speculation_interval_ns=%" PRIu64 " speculation_multiplier=%.17g"
           " speculation_quantile=%.17g speculation_min_runtime_ns=%" PRIu64
           " locality_wait_ns=%" PRIu64 " locality_wait_process_ns=%" PRIu64
           " locality_wait_node_ns=%" PRIu64 " locality_wait_rack_ns=%" PRIu64 " start=%" PRIu64,
           c->mode == TL_FAIR ? "FAIR" : "FIFO", c->cpus_per_task, c->max_task_failures,
           c->heartbeat_timeout_ns, c->pending_loss_timeout_ns, c->max_tombstones,
           c->tombstone_ttl_ns, c->max_result_bytes, c->speculation ? 1 : 0,
           c->speculation_interval_ns, c->speculation_multiplier, c->speculation_quantile,
           c->speculation_min_runtime_ns, c->locality_wait_ns, c->locality_wait_process_ns,
           c->locality_wait_node_ns, c->locality_wait_rack_ns, s->last_now);
  /* Exclusion's fields only when it is on, so a journal without it reads as it always did
   * (and by replayers that predate it). */
  if (c->exclude_on_failure) {
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used,
             " exclude_on_failure=1 exclude_max_task_attempts_per_executor=%" PRIu32
             " exclude_max_task_attempts_per_node=%" PRIu32
             " exclude_stage_max_failed_tasks_per_executor=%" PRIu32
             " exclude_stage_max_failed_executors_per_node=%" PRIu32
             " exclude_app_max_failed_tasks_per_executor=%" PRIu32
             " exclude_app_max_failed_executors_per_node=%" PRIu32 " exclude_timeout_ns=%" PRIu64
             " unschedulable_timeout_ns=%" PRIu64,
             c->exclude_max_task_attempts_per_executor, c->exclude_max_task_attempts_per_node,
             c->exclude_stage_max_failed_tasks_per_executor,
             c->exclude_stage_max_failed_executors_per_node,
             c->exclude_app_max_failed_tasks_per_executor,
             c->exclude_app_max_failed_executors_per_node, c->exclude_timeout_ns,
             c->unschedulable_timeout_ns);
  }
  /* unschedulable_timeout_ns also bounds the wait of a task set whose requests no live executor
   * could run (resources), with exclusion off: written then too when it is not the default, or a
   * replay would abort such a task set at another time. */
  tl_config defaults;
  tl_config_init(&defaults);
  if (!c->exclude_on_failure && c->unschedulable_timeout_ns != defaults.unschedulable_timeout_ns) {
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used, " unschedulable_timeout_ns=%" PRIu64,
             c->unschedulable_timeout_ns);
  }
  /* Speculation's threshold for small task sets and the decommission kill interval only when
   * set, like exclusion's fields. */
  if (c->speculation_task_duration_threshold_ns != 0) {
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used, " speculation_task_duration_threshold_ns=%" PRIu64,
             c->speculation_task_duration_threshold_ns);
  }
  if (c->decommission_kill_interval_ns != 0) {
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used, " decommission_kill_interval_ns=%" PRIu64,
             c->decommission_kill_interval_ns);
  }
  /* Delivery changes who delivers, not what a call does: a replay delivers inline. Written only
   * when deferred, like exclusion's fields. */
  if (c->delivery == TL_DELIVER_DEFERRED) {
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used, " delivery=DEFERRED");
  }
  if (c->pool_auto_create) { /* written only when on, like exclusion's fields */
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used, " pool_auto_create=1");
  }
  /* Offer shuffle: the setting and where its sequence starts, only when on. */
  if (c->offer_shuffle) {
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used, " offer_shuffle=1 offer_shuffle_seed=%" PRIu64,
             c->offer_shuffle_seed);
  }
  s->cfg.journal(s->cfg.journal_ud, line);
}

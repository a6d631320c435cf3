/* Exclude on failure: where counted failures keep tasks away from, per task set (Spark's
 * TaskSetExcludelist) and for the whole application (Spark's HealthTracker), and the abort of a
 * task set that no live executor may run any more (SPARK-22148).
 *
 * Records. Every record here has one size (xrec, a union), so that a call can reserve "n
 * records" before it changes anything and the code that runs later, where nothing may fail,
 * takes them from the reserve (tl__exclude_reserve / take_record). Application-level records are
 * made from a released task set's own records, so releasing one allocates nothing.
 *
 *   xset   one per task set with a counted failure (tl__taskset.exclude), on s->x.tasksets;
 *          its executors and hosts with failures, the counts that make the offer-time checks
 *          O(1) when nothing is excluded, and the unschedulable deadline.
 *   xexec  an executor with counted failures in the task set: its failures per index (xfail);
 *          excluded for the task set once stage_max_failed_tasks_per_executor indices failed.
 *   xhost  a host with counted failures in the task set: failures per index (xfail), excluded
 *          executors; excluded for the task set once stage_max_failed_executors_per_node of
 *          its executors are.
 *   xfail  (task set) an index's failures on an executor or host and the latest failure time;
 *          (application) one failure of a successful task set, with its expiry, on the
 *          executor's x_failures list.
 *   xapp   an executor excluded for the application, until its expiry (on s->x.execs); kept
 *          after the executor is lost, as Spark keeps it, since it counts toward its node.
 *   xnode  a node with application-excluded executors, excluded itself once
 *          app_max_failed_executors_per_node are (on s->x.nodes, and s->x.node_timeline while
 *          excluded).
 *
 * Timelines. Every application-level expiry is now + exclude_timeout_ns and every unschedulable
 * deadline now + unschedulable_timeout_ns, with a clock that never goes back, so appending keeps
 * each list sorted and tl_tick looks only at their heads. One that saturates at UINT64_MAX is past
 * the end of time and never comes, not even with the clock at UINT64_MAX (due below).
 *
 * Snapshots. tl__exclude_save writes all of it, every record named by key (task sets by id,
 * executors by id, nodes by name) in list order; tl__exclude_restore reads it back, validating
 * it, and derives the counts and flags that follow from the records (exclude_snapshot.c). The
 * records' types and primitives are in exclude.h, which both files include.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "exclude.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------------------------------------
 * The reserve
 * ------------------------------------------------------------------------------------------- */

void tl__exclude_init(struct tl_scheduler *s) {
  tl__list_init(&s->x.tasksets);
  tl__list_init(&s->x.timers);
  tl__list_init(&s->x.execs);
  tl__list_init(&s->x.nodes);
  tl__list_init(&s->x.node_timeline);
  tl__list_init(&s->x.aborts);
}

int tl__exclude_reserve(struct tl_scheduler *s, size_t n) {
  while (s->x.nspare < n) {
    void **r = tl__malloc(s, sizeof(xrec));
    if (r == NULL)
      return TL_ENOMEM;
    *r = s->x.spare;
    s->x.spare = r;
    s->x.nspare++;
    s->x.nrecords++;
  }
  return TL_OK;
}

void tl__exclude_unreserve(struct tl_scheduler *s) {
  while (s->x.spare != NULL) {
    void **r = s->x.spare;
    s->x.spare = *r;
    tl__free(s, r, sizeof(xrec));
    s->x.nspare--;
    s->x.nrecords--;
  }
}

static void free_fails(struct tl_scheduler *s, xfail *f) {
  while (f != NULL) {
    xfail *next = f->next;
    free_record(s, f);
    f = next;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Per task set
 * ------------------------------------------------------------------------------------------- */

static xfail *find_fail(xfail *f, uint32_t index) {
  for (; f != NULL; f = f->next)
    if (f->index == index)
      return f;
  return NULL;
}

size_t tl__exclude_records_for(struct tl_scheduler *s, const tl__taskset *ts,
                               const tl__executor *ex, uint32_t index) {
  if (!s->cfg.exclude_on_failure || ts->zombie)
    return 0;
  const xset *x = ts->exclude;
  if (x == NULL)
    return TL__EXCLUDE_RECORDS_PER_FAILURE;
  size_t n = 0;
  const xexec *e = find_exec(x, tl__executor_id(ex));
  const xhost *h = find_host(x, host_of(ex->names));
  n += e == NULL ? 2 : find_fail(e->failures, index) == NULL;
  n += h == NULL ? 2 : find_fail(h->indices, index) == NULL;
  return n;
}

size_t tl__exclude_records_for_loss(struct tl_scheduler *s, const tl__executor *ex,
                                    const tl_loss_reason *reason) {
  if (!s->cfg.exclude_on_failure)
    return 0;
  /* The loss's own rule (tl__loss_counts), and only attempts that reached RUNNING count. */
  if (!tl__loss_counts(ex, reason))
    return 0;
  /* A pending loss or a restored executor not yet reconciled (RECOVERING) has its attempts
   * frozen; a live one has them running. */
  bool frozen = ex->state == TL_EXECUTOR_PENDING_LOSS || ex->state == TL_EXECUTOR_RECOVERING;
  const tl__link *list = frozen ? &ex->frozen : &ex->running;
  size_t n = 0;
  for (const tl__link *l = list->next; l != list; l = l->next) {
    const tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
    if (a->state == TL__RUNNING)
      n += tl__exclude_records_for(s, a->taskset, ex, a->index);
  }
  return n;
}

void tl__exclude_task_failed(struct tl_scheduler *s, tl__taskset *ts, const tl__executor *ex,
                             uint32_t index, tl__str *msg, const char *static_msg) {
  const tl_config *c = &s->cfg;
  xset *x = ts->exclude;
  if (x == NULL) {
    x = take_record(s);
    x->ts = ts;
    tl__list_init(&x->on_timer);
    tl__list_insert_tail(&s->x.tasksets, &x->on_scheduler);
    s->x.ntasksets++;
    ts->exclude = x;
  }
  xhost *h = find_host(x, host_of(ex->names));
  if (h == NULL) {
    h = take_record(s);
    h->names = tl__str_ref(ex->names);
    h->next = x->hosts;
    x->hosts = h;
  }
  xexec *e = find_exec(x, tl__executor_id(ex));
  if (e == NULL) {
    e = take_record(s);
    e->names = tl__str_ref(ex->names);
    e->host = h;
    e->next = x->execs;
    x->execs = e;
  }
  xfail *f = find_fail(e->failures, index);
  if (f == NULL) {
    f = take_record(s);
    f->index = index;
    f->next = e->failures;
    e->failures = f;
    e->nfailed++;
  }
  f->time = s->last_now;
  if (++f->count == c->exclude_max_task_attempts_per_executor)
    x->nblocked++;
  xfail *hf = find_fail(h->indices, index);
  if (hf == NULL) {
    hf = take_record(s);
    hf->index = index;
    hf->next = h->indices;
    h->indices = hf;
  }
  hf->time = s->last_now;
  if (++hf->count == c->exclude_max_task_attempts_per_node)
    x->nblocked++;
  /* An executor id counts toward the node it first failed on in this task set (e->host), even
   * if the id was registered again elsewhere after its tombstone was evicted. */
  if (!e->excluded && e->nfailed >= c->exclude_stage_max_failed_tasks_per_executor) {
    e->excluded = true;
    x->nexcluded_execs++;
    xhost *eh = e->host;
    if (++eh->nexcluded_execs >= c->exclude_stage_max_failed_executors_per_node && !eh->excluded) {
      eh->excluded = true;
      x->nexcluded_hosts++;
    }
  }
  tl__str_unref(s, x->latest_msg);
  x->latest_msg = tl__str_ref(msg);
  x->latest_static = msg != NULL ? NULL : static_msg;
}

bool tl__exclude_offer_blocked(struct tl_scheduler *s, const tl__taskset *ts,
                               const tl__executor *ex) {
  (void)s;
  const xset *x = ts->exclude;
  if (x == NULL)
    return false;
  if (x->nexcluded_execs != 0)
    for (const xexec *e = x->execs; e != NULL; e = e->next)
      if (e->excluded && strcmp(id_of(e->names), tl__executor_id(ex)) == 0)
        return true;
  if (x->nexcluded_hosts != 0)
    for (const xhost *h = x->hosts; h != NULL; h = h->next)
      if (h->excluded && strcmp(host_of(h->names), host_of(ex->names)) == 0)
        return true;
  return false;
}

bool tl__exclude_task_blocked(struct tl_scheduler *s, const tl__taskset *ts, uint32_t index,
                              const tl__executor *ex) {
  const xset *x = ts->exclude;
  if (x == NULL || x->nblocked == 0)
    return false;
  const xexec *e = find_exec(x, tl__executor_id(ex));
  const xfail *f = e != NULL ? find_fail(e->failures, index) : NULL;
  if (f != NULL && f->count >= s->cfg.exclude_max_task_attempts_per_executor)
    return true;
  const xhost *h = find_host(x, host_of(ex->names)); /* the node it is on now */
  f = h != NULL ? find_fail(h->indices, index) : NULL;
  return f != NULL && f->count >= s->cfg.exclude_max_task_attempts_per_node;
}

/* ---------------------------------------------------------------------------------------------
 * Unschedulable task sets (SPARK-22148)
 *
 * After an offer round that launched nothing, each task set with exclusions that has a pending
 * index is asked whether its next index (the top of its pending stack: Spark looks at the last
 * pending task, where retries go) may run on any live executor, counting application-level
 * exclusions too. If none may:
 *   - some live executor runs nothing: the task set gets a deadline, unschedulable_timeout_ns
 *     from now, unless it has one. Spark would also kill an idle excluded executor so that
 *     dynamic allocation brings a new one; this library kills nothing and has no allocation
 *     manager: the runtime sees the state in tl_stats and tl_explain_taskset, and an executor it
 *     adds clears every deadline, as any launch does.
 *   - every live executor is busy: the task set is aborted now (Spark without dynamic
 *     allocation).
 * A round that launched anything, anywhere, clears every deadline instead (Spark clears them
 * when any task set launches, since the application is making progress). tl_tick aborts a task
 * set whose deadline has come. Only task sets with exclusions are looked at, and each costs
 * O(live executors).
 * ------------------------------------------------------------------------------------------- */

size_t tl__exclude_abort_candidates(const struct tl_scheduler *s) {
  return s->cfg.exclude_on_failure ? s->x.ntasksets : 0;
}

static void timer_stop(struct tl_scheduler *s, xset *x) {
  if (!x->timer)
    return;
  x->timer = false;
  tl__list_remove(&x->on_timer);
  s->x.ntimers--;
  tl__unsched_leave(s, x->ts, TL__UNSCHED_EXCLUDED);
}

static void timers_clear(struct tl_scheduler *s) {
  while (!tl__list_empty(&s->x.timers))
    timer_stop(s, tl__container_of(s->x.timers.next, xset, on_timer));
}

/* No live executor may run index of ts. */
static bool completely_excluded(struct tl_scheduler *s, const tl__taskset *ts, uint32_t index) {
  for (const tl__host *host = s->hosts_by_name; host != NULL; host = host->hh_by_name.next) {
    if (host->x_excluded)
      continue;
    for (const tl__link *l = host->executors.next; l != &host->executors; l = l->next) {
      const tl__executor *ex = tl__container_of(l, tl__executor, on_host);
      if (!ex->x_excluded && !tl__exclude_offer_blocked(s, ts, ex) &&
          !tl__exclude_task_blocked(s, ts, index, ex))
        return false;
    }
  }
  return true;
}

static bool some_executor_idle(struct tl_scheduler *s) {
  for (const tl__host *host = s->hosts_by_name; host != NULL; host = host->hh_by_name.next)
    for (const tl__link *l = host->executors.next; l != &host->executors; l = l->next)
      if (tl__container_of(l, tl__executor, on_host)->nrunning == 0)
        return true;
  return false;
}

/* ts is to be aborted as unschedulable: its timer stops, it is counted, and the caller gets what
 * the abort needs (which may release ts, and x with it). */
static void unschedulable(struct tl_scheduler *s, xset *x, uint32_t index, tl__exclude_abort *out) {
  timer_stop(s, x);
  s->totals.tasksets_unschedulable_aborted++;
  out->ts = x->ts;
  out->index = index;
  out->msg = x->latest_msg;
  out->static_msg = x->latest_static;
}

/* Queues x on the round's aborts, through its timer's link (stopped first). */
static void queue_abort(struct tl_scheduler *s, xset *x, uint32_t index) {
  timer_stop(s, x);
  x->timer_index = index;
  tl__list_insert_tail(&s->x.aborts, &x->on_timer);
}

bool tl__exclude_take_abort(struct tl_scheduler *s, tl__exclude_abort *out) {
  if (tl__list_empty(&s->x.aborts))
    return false;
  xset *x = tl__container_of(s->x.aborts.next, xset, on_timer);
  tl__list_remove(&x->on_timer);
  unschedulable(s, x, x->timer_index, out);
  return true;
}

void tl__exclude_after_round(struct tl_scheduler *s, size_t launched) {
  if (!s->cfg.exclude_on_failure)
    return;
  if (launched > 0) {
    timers_clear(s);
    return;
  }
  if (s->hosts_by_name == NULL) /* no executor yet: nothing to decide (as Spark) */
    return;
  int idle = -1; /* not looked at yet */
  for (tl__link *l = s->x.tasksets.next; l != &s->x.tasksets; l = l->next) {
    xset *x = tl__container_of(l, xset, on_scheduler);
    tl__taskset *ts = x->ts;
    if (ts->zombie || ts->npending == 0)
      continue;
    uint32_t index = ts->pending_top;
    if (!completely_excluded(s, ts, index))
      continue;
    if (idle < 0)
      idle = some_executor_idle(s);
    if (!idle) {
      queue_abort(s, x, index);
    } else if (!x->timer) {
      x->timer = true;
      x->timer_index = index;
      x->deadline = tl__add_sat(s->last_now, s->cfg.unschedulable_timeout_ns);
      tl__list_insert_tail(&s->x.timers, &x->on_timer);
      s->x.ntimers++;
      tl__unsched_enter(s, ts, TL__UNSCHED_EXCLUDED);
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Application level (HealthTracker)
 * ------------------------------------------------------------------------------------------- */

static tl__host *live_host(struct tl_scheduler *s, const char *name) {
  tl__host *host;
  HASH_FIND(hh_by_name, s->hosts_by_name, name, strlen(name), host);
  return host;
}

/* Makes the node record of host h of x (h leaves x): the record is reused. */
static xnode *node_from_host(struct tl_scheduler *s, xset *x, xhost *h) {
  xhost **pp = &x->hosts;
  while (*pp != h)
    pp = &(*pp)->next;
  *pp = h->next;
  tl__str *names = h->names;
  free_fails(s, h->indices);
  xnode *n = (xnode *)(void *)h;
  memset(n, 0, sizeof(xrec));
  n->names = names;
  tl__list_init(&n->on_timeline);
  tl__list_insert_tail(&s->x.nodes, &n->on_list);
  s->x.nnodes++;
  return n;
}

static void node_maybe_free(struct tl_scheduler *s, xnode *n) {
  if (n->nexcluded_execs != 0 || n->excluded)
    return;
  tl__list_remove(&n->on_list);
  s->x.nnodes--;
  tl__str_unref(s, n->names);
  free_record(s, n);
}

/* Drops failures that expired before now (Spark's dropFailuresWithTimeoutBefore). */
static xfail *drop_expired(struct tl_scheduler *s, xfail *list, uint64_t now, uint32_t *n) {
  xfail **pp = &list;
  while (*pp != NULL) {
    xfail *f = *pp;
    if (tl__due(f->time, now)) {
      *pp = f->next;
      free_record(s, f);
      (*n)--;
    } else {
      pp = &f->next;
    }
  }
  return list;
}

/* One executor's failures in a successful task set move to the application level; e is reused
 * as its application-level exclusion if they make one, else freed. */
static void promote_exec(struct tl_scheduler *s, xset *x, xexec *e) {
  const tl_config *c = &s->cfg;
  uint64_t now = s->last_now;
  tl__executor *ex = tl__executor_find(s, id_of(e->names));
  /* A lost executor's list was dropped with it (handleRemovedExecutor); Spark would start a
   * new one under its id that nobody ever frees, this keeps only what excludes it now. */
  bool live = alive(ex); /* by id, as Spark keys it */
  xfail *list = live ? ex->x_failures : NULL;
  uint32_t n = live ? ex->x_nfailures : 0;
  while (e->failures != NULL) {
    xfail *f = e->failures;
    e->failures = f->next;
    f->stage_id = x->ts->stage_id;
    f->stage_attempt = x->ts->stage_attempt;
    f->time = tl__add_sat(f->time, c->exclude_timeout_ns);
    f->count = 0;
    f->next = list;
    list = f;
    n++;
  }
  list = drop_expired(s, list, now, &n);
  bool excluded = live ? ex->x_excluded : find_app(s, id_of(e->names)) != NULL;
  if (n < c->exclude_app_max_failed_tasks_per_executor || excluded) {
    if (live) {
      ex->x_failures = list;
      ex->x_nfailures = n;
    } else {
      free_fails(s, list);
    }
    tl__str_unref(s, e->names);
    free_record(s, e);
    return;
  }
  /* Excluded: its failures are forgotten, the record becomes the exclusion. */
  free_fails(s, list);
  if (live) {
    ex->x_failures = NULL;
    ex->x_nfailures = 0;
    ex->x_excluded = true;
  }
  xhost *h = e->host;
  tl__str *names = e->names;
  xnode *node = find_node(s, host_of(names));
  if (node == NULL)
    node = node_from_host(s, x, h);
  xapp *a = (xapp *)(void *)e;
  memset(a, 0, sizeof(xrec));
  a->names = names;
  a->node = node;
  a->expiry = tl__add_sat(now, c->exclude_timeout_ns);
  tl__list_insert_tail(&s->x.execs, &a->on_timeline);
  s->x.nexecs++;
  if (++node->nexcluded_execs >= c->exclude_app_max_failed_executors_per_node && !node->excluded) {
    node->excluded = true;
    node->expiry = a->expiry;
    tl__list_insert_tail(&s->x.node_timeline, &node->on_timeline);
    s->x.nnodes_excluded++;
    tl__host *host = live_host(s, host_of(names));
    if (host != NULL)
      host->x_excluded = true;
  }
}

void tl__exclude_xset_free(struct tl_scheduler *s, xset *x) {
  while (x->execs != NULL) {
    xexec *e = x->execs;
    x->execs = e->next;
    free_fails(s, e->failures);
    tl__str_unref(s, e->names);
    free_record(s, e);
  }
  while (x->hosts != NULL) {
    xhost *h = x->hosts;
    x->hosts = h->next;
    free_fails(s, h->indices);
    tl__str_unref(s, h->names);
    free_record(s, h);
  }
  timer_stop(s, x);
  tl__str_unref(s, x->latest_msg);
  tl__list_remove(&x->on_scheduler);
  s->x.ntasksets--;
  x->ts->exclude = NULL;
  free_record(s, x);
}

void tl__exclude_taskset_released(struct tl_scheduler *s, tl__taskset *ts) {
  xset *x = ts->exclude;
  if (x == NULL)
    return;
  if (ts->nsucceeded == ts->ntasks && !ts->failed) {
    while (x->execs != NULL) {
      xexec *e = x->execs;
      x->execs = e->next;
      promote_exec(s, x, e);
    }
  }
  tl__exclude_xset_free(s, x);
}

void tl__exclude_taskset_free(struct tl_scheduler *s, tl__taskset *ts) {
  if (ts->exclude != NULL)
    tl__exclude_xset_free(s, ts->exclude);
}

void tl__exclude_executor_added(struct tl_scheduler *s, tl__executor *ex) {
  if (!s->cfg.exclude_on_failure)
    return;
  timers_clear(s); /* it may run what nothing else may */
  ex->x_excluded = find_app(s, tl__executor_id(ex)) != NULL;
  xnode *n = find_node(s, host_of(ex->names));
  ex->host->x_excluded = n != NULL && n->excluded;
}

void tl__exclude_executor_removed(struct tl_scheduler *s, tl__executor *ex) {
  free_fails(s, ex->x_failures);
  ex->x_failures = NULL;
  ex->x_nfailures = 0;
  ex->x_excluded = false; /* the xapp record, if any, stays until it expires */
}

static void expire_exec(struct tl_scheduler *s, xapp *a) {
  tl__list_remove(&a->on_timeline);
  s->x.nexecs--;
  tl__executor *ex = tl__executor_find(s, id_of(a->names));
  if (alive(ex))
    ex->x_excluded = false;
  xnode *n = a->node;
  n->nexcluded_execs--;
  node_maybe_free(s, n);
  tl__str_unref(s, a->names);
  free_record(s, a);
}

static void expire_node(struct tl_scheduler *s, xnode *n) {
  n->excluded = false;
  tl__list_remove(&n->on_timeline);
  s->x.nnodes_excluded--;
  tl__host *host = live_host(s, host_of(n->names));
  if (host != NULL)
    host->x_excluded = false;
  node_maybe_free(s, n);
}

uint64_t tl__exclude_next(const struct tl_scheduler *s, uint64_t now) {
  uint64_t due = UINT64_MAX;
  if (!tl__list_empty(&s->x.execs))
    due = tl__container_of(s->x.execs.next, xapp, on_timeline)->expiry;
  if (!tl__list_empty(&s->x.node_timeline)) {
    uint64_t t = tl__container_of(s->x.node_timeline.next, xnode, on_timeline)->expiry;
    if (t < due)
      due = t;
  }
  if (!tl__list_empty(&s->x.timers)) {
    uint64_t t = tl__container_of(s->x.timers.next, xset, on_timer)->deadline;
    if (t < due)
      due = t;
  }
  if (due == UINT64_MAX)
    return TL_TICK_NEVER;
  return due > now ? due - now : 0;
}

void tl__exclude_tick(struct tl_scheduler *s, uint64_t now) {
  while (!tl__list_empty(&s->x.execs)) {
    xapp *a = tl__container_of(s->x.execs.next, xapp, on_timeline);
    if (!tl__due(a->expiry, now))
      break;
    expire_exec(s, a);
  }
  while (!tl__list_empty(&s->x.node_timeline)) {
    xnode *n = tl__container_of(s->x.node_timeline.next, xnode, on_timeline);
    if (!tl__due(n->expiry, now))
      break;
    expire_node(s, n);
  }
}

bool tl__exclude_due_abort(struct tl_scheduler *s, uint64_t now, tl__exclude_abort *out) {
  while (!tl__list_empty(&s->x.timers)) {
    xset *x = tl__container_of(s->x.timers.next, xset, on_timer);
    if (!tl__due(x->deadline, now))
      return false;
    if (!x->ts->zombie) {
      out->ts = x->ts;
      out->index = x->timer_index;
      return true;
    }
    timer_stop(s, x); /* finished or aborted meanwhile: nothing to abort */
  }
  return false;
}

void tl__exclude_aborting(struct tl_scheduler *s, tl__exclude_abort *ab) {
  unschedulable(s, ab->ts->exclude, ab->index, ab);
}

void tl__exclude_destroy(struct tl_scheduler *s) {
  while (!tl__list_empty(&s->x.execs)) {
    xapp *a = tl__container_of(s->x.execs.next, xapp, on_timeline);
    tl__list_remove(&a->on_timeline);
    tl__str_unref(s, a->names);
    free_record(s, a);
  }
  while (!tl__list_empty(&s->x.nodes)) {
    xnode *n = tl__container_of(s->x.nodes.next, xnode, on_list);
    tl__list_remove(&n->on_list);
    tl__str_unref(s, n->names);
    free_record(s, n);
  }
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next)
    free_fails(s, ex->x_failures);
  tl__exclude_unreserve(s);
}

/* ---------------------------------------------------------------------------------------------
 * Inspection
 * ------------------------------------------------------------------------------------------- */

void tl__exclude_stats(const struct tl_scheduler *s, tl_stats *out) {
  out->executors_excluded = s->x.nexecs;
  out->nodes_excluded = s->x.nnodes_excluded;
  out->tasksets_with_failures = s->x.ntasksets;
  out->tasksets_unschedulable = s->x.ntimers + s->nres_timers;
}

void tl__exclude_each_str(tl__checker *c, tl__str_fn *fn) {
  struct tl_scheduler *s = c->s;
  for (tl__link *l = s->x.tasksets.next; l != &s->x.tasksets; l = l->next) {
    xset *x = tl__container_of(l, xset, on_scheduler);
    for (xexec *e = x->execs; e != NULL; e = e->next)
      fn(c, e->names, "an exclusion record");
    for (xhost *h = x->hosts; h != NULL; h = h->next)
      fn(c, h->names, "an exclusion record");
    fn(c, x->latest_msg, "an exclusion record");
  }
  for (tl__link *l = s->x.execs.next; l != &s->x.execs; l = l->next)
    fn(c, tl__container_of(l, xapp, on_timeline)->names, "an exclusion record");
  for (tl__link *l = s->x.nodes.next; l != &s->x.nodes; l = l->next)
    fn(c, tl__container_of(l, xnode, on_list)->names, "an exclusion record");
}

static int check_xset(tl__checker *c, const xset *x, size_t *records) {
  struct tl_scheduler *s = c->s;
  const tl_config *cfg = &s->cfg;
  const tl__taskset *ts = x->ts;
  TL__CHECK(c, tl__taskset_find(s, ts->id) == ts && ts->exclude == x,
            "exclusion: records of a released task set");
  uint32_t execs = 0, hosts = 0, blocked = 0;
  *records += 1;
  for (const xhost *h = x->hosts; h != NULL; h = h->next) {
    uint32_t nex = 0;
    for (const xexec *e = x->execs; e != NULL; e = e->next)
      if (e->host == h && e->excluded)
        nex++;
    TL__CHECK(c, nex == h->nexcluded_execs,
              "exclusion: task set %llu host %s counts %u excluded, %u", (unsigned long long)ts->id,
              host_of(h->names), h->nexcluded_execs, nex);
    TL__CHECK(c, h->excluded == (nex >= cfg->exclude_stage_max_failed_executors_per_node),
              "exclusion: task set %llu host %s excluded %d with %u excluded executors",
              (unsigned long long)ts->id, host_of(h->names), h->excluded, nex);
    hosts += h->excluded;
    *records += 1 + count_fails(h->indices);
    for (const xfail *f = h->indices; f != NULL; f = f->next) {
      TL__CHECK(c, f->count >= 1 && f->index < ts->ntasks, "exclusion: a bad host failure record");
      blocked += f->count >= cfg->exclude_max_task_attempts_per_node;
    }
  }
  for (const xexec *e = x->execs; e != NULL; e = e->next) {
    TL__CHECK(c, find_host(x, host_of(e->names)) == e->host && e->host != NULL,
              "exclusion: task set %llu executor %s is not linked to its host",
              (unsigned long long)ts->id, id_of(e->names));
    TL__CHECK(c, count_fails(e->failures) == e->nfailed && e->nfailed >= 1,
              "exclusion: executor %s counts %u failed indices", id_of(e->names), e->nfailed);
    TL__CHECK(c, e->excluded == (e->nfailed >= cfg->exclude_stage_max_failed_tasks_per_executor),
              "exclusion: executor %s excluded %d with %u failed indices", id_of(e->names),
              e->excluded, e->nfailed);
    execs += e->excluded;
    *records += 1 + e->nfailed;
    for (const xfail *f = e->failures; f != NULL; f = f->next) {
      TL__CHECK(c, f->count >= 1 && f->index < ts->ntasks, "exclusion: a bad failure record");
      blocked += f->count >= cfg->exclude_max_task_attempts_per_executor;
    }
  }
  TL__CHECK(
      c, execs == x->nexcluded_execs && hosts == x->nexcluded_hosts && blocked == x->nblocked,
      "exclusion: task set %llu counts %u/%u/%u excluded executors/hosts/tasks, found %u/%u/%u",
      (unsigned long long)ts->id, x->nexcluded_execs, x->nexcluded_hosts, x->nblocked, execs, hosts,
      blocked);
  TL__CHECK(c, x->timer == tl__list_linked(&x->on_timer), "exclusion: a timer flag is wrong");
  return TL_OK;
}

int tl__exclude_check(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  size_t records = 0, n = 0;
  TL__CHECK(c, s->x.spare == NULL && s->x.nspare == 0, "exclusion: records reserved between calls");
  TL__CHECK(c, tl__list_empty(&s->x.aborts), "exclusion: aborts queued between calls");
  for (tl__link *l = s->x.tasksets.next; l != &s->x.tasksets; l = l->next, n++) {
    int err = check_xset(c, tl__container_of(l, xset, on_scheduler), &records);
    if (err != TL_OK)
      return err;
  }
  TL__CHECK(c, n == s->x.ntasksets, "exclusion: %zu task sets listed, %zu counted", n,
            s->x.ntasksets);
  n = 0;
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    n += ts->exclude != NULL;
    /* Its unschedulable state (demand.c) is its timer's, while it is active. */
    TL__CHECK(c,
              ts->zombie || ((ts->unsched & TL__UNSCHED_EXCLUDED) != 0) ==
                                (ts->exclude != NULL && ts->exclude->timer),
              "exclusion: task set %llu's unschedulable state disagrees with its timer",
              (unsigned long long)ts->id);
  }
  TL__CHECK(c, n == s->x.ntasksets, "exclusion: %zu task sets hold records, %zu listed", n,
            s->x.ntasksets);
  TL__CHECK(c, s->cfg.exclude_on_failure || n + s->x.nexecs + s->x.nnodes == 0,
            "exclusion: records with exclude_on_failure off");
  n = 0;
  uint64_t last = 0;
  for (tl__link *l = s->x.timers.next; l != &s->x.timers; l = l->next, n++) {
    const xset *x = tl__container_of(l, xset, on_timer);
    TL__CHECK(c, x->timer && x->deadline >= last, "exclusion: timers out of order");
    last = x->deadline;
  }
  TL__CHECK(c, n == s->x.ntimers, "exclusion: %zu timers listed, %zu counted", n, s->x.ntimers);

  /* Application level. */
  n = 0;
  last = 0;
  for (tl__link *l = s->x.nodes.next; l != &s->x.nodes; l = l->next) {
    const xnode *node = tl__container_of(l, xnode, on_list);
    n++;
    TL__CHECK(c, node->nexcluded_execs > 0 || node->excluded, "exclusion: an empty node record");
    TL__CHECK(c, node->excluded == tl__list_linked(&node->on_timeline),
              "exclusion: node %s timeline", host_of(node->names));
    tl__host *host = live_host(s, host_of(node->names));
    TL__CHECK(c, host == NULL || host->x_excluded == node->excluded,
              "exclusion: host %s flag disagrees with its record", host_of(node->names));
  }
  TL__CHECK(c, n == s->x.nnodes, "exclusion: %zu nodes listed, %zu counted", n, s->x.nnodes);
  records += n;
  n = 0;
  for (tl__link *l = s->x.node_timeline.next; l != &s->x.node_timeline; l = l->next, n++) {
    const xnode *node = tl__container_of(l, xnode, on_timeline);
    TL__CHECK(c, node->excluded && node->expiry >= last, "exclusion: node timeline out of order");
    last = node->expiry;
  }
  TL__CHECK(c, n == s->x.nnodes_excluded, "exclusion: %zu nodes excluded, %zu counted", n,
            s->x.nnodes_excluded);
  for (const tl__host *host = s->hosts_by_name; host != NULL; host = host->hh_by_name.next) {
    const xnode *node = find_node(s, host->name);
    TL__CHECK(c, host->x_excluded == (node != NULL && node->excluded),
              "exclusion: host %s flag without a record", host->name);
  }
  n = 0;
  last = 0;
  for (tl__link *l = s->x.execs.next; l != &s->x.execs; l = l->next, n++) {
    const xapp *a = tl__container_of(l, xapp, on_timeline);
    TL__CHECK(c, a->expiry >= last, "exclusion: executor timeline out of order");
    last = a->expiry;
    TL__CHECK(c, find_node(s, host_of(a->names)) == a->node, "exclusion: executor %s node record",
              id_of(a->names));
    size_t on_node = 0;
    for (tl__link *m = s->x.execs.next; m != &s->x.execs; m = m->next)
      on_node += tl__container_of(m, xapp, on_timeline)->node == a->node;
    TL__CHECK(c, on_node == a->node->nexcluded_execs, "exclusion: node %s counts %u executors, %zu",
              host_of(a->names), a->node->nexcluded_execs, on_node);
  }
  TL__CHECK(c, n == s->x.nexecs, "exclusion: %zu executors excluded, %zu counted", n, s->x.nexecs);
  records += n;
  for (const tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    TL__CHECK(c, count_fails(ex->x_failures) == ex->x_nfailures,
              "exclusion: executor %s counts %u failures", tl__executor_id(ex), ex->x_nfailures);
    TL__CHECK(c, alive(ex) || (ex->x_failures == NULL && !ex->x_excluded),
              "exclusion: executor %s keeps exclusion state after its loss", tl__executor_id(ex));
    const xapp *a = alive(ex) ? find_app(s, tl__executor_id(ex)) : NULL;
    TL__CHECK(c, !alive(ex) || ex->x_excluded == (a != NULL),
              "exclusion: executor %s flag disagrees", tl__executor_id(ex));
    records += ex->x_nfailures;
  }
  TL__CHECK(c, records == s->x.nrecords, "exclusion: %zu records allocated, %zu reachable",
            s->x.nrecords, records);
  tl__check_account_n(c, records, sizeof(xrec));
  return TL_OK;
}

void tl__exclude_explain(struct tl_scheduler *s, const tl__taskset *ts,
                         void (*line)(void *ud, const char *text), void *ud) {
  char buf[TL_HOST_MAX + TL_ID_MAX + 128];
  const xset *x = ts->exclude;
  if (x == NULL)
    return;
  snprintf(buf, sizeof buf,
           "exclusions (exclude_on_failure): %u executors and %u hosts for the task set, %u "
           "for single tasks\n",
           x->nexcluded_execs, x->nexcluded_hosts, x->nblocked);
  line(ud, buf);
  for (const xexec *e = x->execs; e != NULL; e = e->next) {
    snprintf(buf, sizeof buf, "  executor %s on %s: %u indices failed%s; excluded for index",
             id_of(e->names), host_of(e->names), e->nfailed,
             e->excluded ? ", excluded for the task set" : "");
    line(ud, buf);
    bool any = false;
    for (const xfail *f = e->failures; f != NULL; f = f->next) {
      if (f->count >= s->cfg.exclude_max_task_attempts_per_executor) {
        snprintf(buf, sizeof buf, " %u", f->index);
        line(ud, buf);
        any = true;
      }
    }
    line(ud, any ? "\n" : " (none)\n");
  }
  for (const xhost *h = x->hosts; h != NULL; h = h->next) {
    snprintf(buf, sizeof buf, "  host %s%s; excluded for index", host_of(h->names),
             h->excluded ? ": excluded for the task set" : "");
    line(ud, buf);
    bool any = false;
    for (const xfail *f = h->indices; f != NULL; f = f->next) {
      if (f->count >= s->cfg.exclude_max_task_attempts_per_node) {
        snprintf(buf, sizeof buf, " %u", f->index);
        line(ud, buf);
        any = true;
      }
    }
    line(ud, any ? "\n" : " (none)\n");
  }
  if (x->timer) {
    snprintf(buf, sizeof buf,
             "  unschedulable: no live executor may run task %u; aborted in %.1f s unless "
             "something launches or an executor is added\n",
             x->timer_index,
             (double)(x->deadline > s->last_now ? x->deadline - s->last_now : 0) / 1e9);
    line(ud, buf);
  }
}

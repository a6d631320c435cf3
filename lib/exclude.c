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
 * it, and derives the counts and flags that follow from the records (the end of this file).
 *
 * Everything here runs under the scheduler's lock.
 */
#include "checker.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct tl__xfail {
  struct tl__xfail *next; /* the owner's other indices / failures */
  uint32_t index;         /* task index */
  uint32_t count;         /* task set: failures of index there (only grows) */
  uint64_t time;          /* task set: the latest failure; application: its expiry */
  uint32_t stage_id;      /* application: the task set it failed in */
  uint32_t stage_attempt;
} xfail;

typedef struct xhost {
  struct xhost *next;       /* the task set's other hosts */
  tl__str *names;           /* names of its first failing executor (host second); one ref */
  xfail *indices;           /* failures per index on the host */
  uint32_t nexcluded_execs; /* its executors excluded for the task set */
  bool excluded;            /* excluded for the task set */
} xhost;

typedef struct xexec {
  struct xexec *next; /* the task set's other executors */
  tl__str *names;     /* the executor's names; one ref */
  xhost *host;        /* its host's record in the same task set */
  xfail *failures;    /* failures per index */
  uint32_t nfailed;   /* length of failures: indices that failed here */
  bool excluded;      /* excluded for the task set */
} xexec;

struct tl__xset {
  tl__link on_scheduler;     /* s->x.tasksets */
  tl__link on_timer;         /* s->x.timers while timer */
  tl__taskset *ts;           /* its task set; the xset is freed with it */
  xexec *execs;              /* executors with counted failures */
  xhost *hosts;              /* their hosts */
  uint32_t nexcluded_execs;  /* execs excluded for the task set */
  uint32_t nexcluded_hosts;  /* hosts excluded for the task set */
  uint32_t nblocked;         /* (index, executor) and (index, host) pairs excluded */
  bool timer;                /* unschedulable: aborted at deadline unless something launches */
  uint32_t timer_index;      /* the task no executor may run, named by the abort */
  uint64_t deadline;         /* when */
  tl__str *latest_msg;       /* the latest counted failure's message (one ref), or NULL */
  const char *latest_static; /* or its static message */
};
typedef struct tl__xset xset;

typedef struct xnode {
  tl__link on_list;         /* s->x.nodes */
  tl__link on_timeline;     /* s->x.node_timeline while excluded */
  tl__str *names;           /* names of an executor of the node (host second); one ref */
  uint32_t nexcluded_execs; /* xapp records pointing here */
  bool excluded;            /* excluded for the application until expiry */
  uint64_t expiry;
} xnode;

typedef struct xapp {
  tl__link on_timeline; /* s->x.execs */
  tl__str *names;       /* the executor's names; one ref */
  xnode *node;          /* its node's record */
  uint64_t expiry;      /* excluded until then */
} xapp;

typedef union xrec {
  void *next_spare;
  xfail f;
  xhost h;
  xexec e;
  xset x;
  xnode n;
  xapp a;
} xrec;

static const char *host_of(const tl__str *names) { return tl__names_host(names); }
static const char *id_of(const tl__str *names) { return names->text; }

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

static void *take_record(struct tl_scheduler *s) {
  void **r = s->x.spare;
  if (r == NULL) /* the call reserved too few: a bug, and writing on would be worse */
    abort();
  s->x.spare = *r;
  s->x.nspare--;
  memset(r, 0, sizeof(xrec));
  return r;
}

static void free_record(struct tl_scheduler *s, void *r) {
  tl__free(s, r, sizeof(xrec));
  s->x.nrecords--;
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

static xexec *find_exec(const xset *x, const char *id) {
  for (xexec *e = x->execs; e != NULL; e = e->next)
    if (strcmp(id_of(e->names), id) == 0)
      return e;
  return NULL;
}

static xhost *find_host(const xset *x, const char *host) {
  for (xhost *h = x->hosts; h != NULL; h = h->next)
    if (strcmp(host_of(h->names), host) == 0)
      return h;
  return NULL;
}

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
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Application level (HealthTracker)
 * ------------------------------------------------------------------------------------------- */

static xapp *find_app(struct tl_scheduler *s, const char *id) {
  for (tl__link *l = s->x.execs.next; l != &s->x.execs; l = l->next) {
    xapp *a = tl__container_of(l, xapp, on_timeline);
    if (strcmp(id_of(a->names), id) == 0)
      return a;
  }
  return NULL;
}

static xnode *find_node(struct tl_scheduler *s, const char *host) {
  for (tl__link *l = s->x.nodes.next; l != &s->x.nodes; l = l->next) {
    xnode *n = tl__container_of(l, xnode, on_list);
    if (strcmp(host_of(n->names), host) == 0)
      return n;
  }
  return NULL;
}

static tl__host *live_host(struct tl_scheduler *s, const char *name) {
  tl__host *host;
  HASH_FIND(hh_by_name, s->hosts_by_name, name, strlen(name), host);
  return host;
}

/* ALIVE or DECOMMISSIONING: the states that keep exclusion state (failure list, flag). A
 * PENDING_LOSS or RECOVERING executor had tl__exclude_executor_removed called (RECOVERING: by the
 * restore; it gets tl__exclude_executor_added when it reconciles), a tombstone is REMOVED. */
static bool alive(const tl__executor *ex) {
  return ex != NULL && (ex->state == TL_EXECUTOR_ALIVE || ex->state == TL_EXECUTOR_DECOMMISSIONING);
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

static void xset_free(struct tl_scheduler *s, xset *x) {
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
  xset_free(s, x);
}

void tl__exclude_taskset_free(struct tl_scheduler *s, tl__taskset *ts) {
  if (ts->exclude != NULL)
    xset_free(s, ts->exclude);
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
  out->tasksets_unschedulable = s->x.ntimers;
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

static size_t count_fails(const xfail *f) {
  size_t n = 0;
  for (; f != NULL; f = f->next)
    n++;
  return n;
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
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next)
    n += ts->exclude != NULL;
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

/* ---------------------------------------------------------------------------------------------
 * Snapshots (tl__exclude_save, tl__exclude_restore; docs/snapshot.md "Exclusion")
 *
 * Layout. Little-endian (codec.h); str is a u32 length and its bytes; names are two strs, the
 * executor id (1 to TL_ID_MAX - 1 bytes) and its host (1 to TL_HOST_MAX - 1), without NULs;
 * times are clock times (restored rebased; UINT64_MAX stays never).
 *
 *   u8 marker               0: nothing follows (exclude_on_failure off, or no record and no
 *                              application-level failure); 1: the six sections follow
 *   u32 n, n task sets      s->x.tasksets order:
 *     u64 task set id
 *     u32 n (>= 1), n hosts      xset.hosts order: names, then its indices (below)
 *     u32 n (>= 1), n executors  xset.execs order: names, then its indices (below)
 *       indices: u32 n (>= 1), n entries: u32 index (< ntasks, each once), u32 count (>= 1),
 *                u64 time of the latest failure
 *     u8 has message, then (if 1) str message (its latest counted failure's, without NULs)
 *   u32 n, n timers         s->x.timers order: u64 task set id, u32 index (< ntasks),
 *                           u64 deadline (non-decreasing)
 *   u32 n, n nodes          s->x.nodes order: names, u8 excluded
 *   u32 n, n excluded nodes s->x.node_timeline order: str host, u64 expiry (non-decreasing)
 *   u32 n, n executors excluded for the application, s->x.execs order: names, u64 expiry
 *                           (non-decreasing)
 *   u32 n, n executors with application-level failures, heartbeat_order order: str id,
 *     u32 n (>= 1), n failures (x_failures order): u32 index, u32 stage id, u32 stage attempt,
 *     u64 expiry
 *
 * Not written, since the records and the config (its fingerprint covers the thresholds) make
 * them, as tl__exclude_check requires: every excluded flag and count of a task set's records,
 * an executor record's host record (the one of its names' host), a node's count of excluded
 * executors, the executors' and hosts' x_excluded flags, and the list lengths. A static message
 * is written as its text and restored as a string of it: the events that carry it read the
 * same. The reserve and the aborts are empty between calls.
 * ------------------------------------------------------------------------------------------- */

enum { SNAP_EMPTY = 0, SNAP_RECORDS = 1 };

/* Fewest bytes of each saved record, for tl__get_count's bound. */
#define SNAP_NAMES (4 + 1 + 4 + 1)
#define SNAP_TASK_FAIL (4 + 4 + 8)
#define SNAP_APP_FAIL (4 + 4 + 4 + 8)
#define SNAP_PLACE (SNAP_NAMES + 4 + SNAP_TASK_FAIL) /* a host or an executor of a task set */
#define SNAP_XSET (8 + 4 + SNAP_PLACE + 4 + SNAP_PLACE + 1)
#define SNAP_TIMER (8 + 4 + 8)
#define SNAP_NODE (SNAP_NAMES + 1)
#define SNAP_NODE_EXPIRY (4 + 1 + 8)
#define SNAP_APP (SNAP_NAMES + 8)
#define SNAP_APP_FAILS (4 + 1 + 4 + SNAP_APP_FAIL)

static void put_count(tl__wbuf *w, size_t n) {
  if (n > UINT32_MAX) /* no ledger holds that many; an image that says less would be wrong */
    w->failed = true;
  tl__put_u32(w, (uint32_t)n);
}

static void put_names(tl__wbuf *w, const tl__str *names) {
  const char *host = host_of(names);
  tl__put_str(w, id_of(names), strlen(id_of(names)));
  tl__put_str(w, host, strlen(host));
}

static void put_task_fails(tl__wbuf *w, const xfail *f) {
  put_count(w, count_fails(f));
  for (; f != NULL; f = f->next) {
    tl__put_u32(w, f->index);
    tl__put_u32(w, f->count);
    tl__put_u64(w, f->time);
  }
}

static bool nothing_to_save(struct tl_scheduler *s) {
  if (!s->cfg.exclude_on_failure)
    return true;
  if (s->x.ntasksets != 0 || s->x.nexecs != 0 || s->x.nnodes != 0)
    return false;
  for (const tl__link *l = s->heartbeat_order.next; l != &s->heartbeat_order; l = l->next)
    if (tl__container_of(l, tl__executor, on_timeline)->x_failures != NULL)
      return false;
  return true;
}

static void save_xset(tl__wbuf *w, const xset *x) {
  tl__put_u64(w, x->ts->id);
  size_t n = 0;
  for (const xhost *h = x->hosts; h != NULL; h = h->next)
    n++;
  put_count(w, n);
  for (const xhost *h = x->hosts; h != NULL; h = h->next) {
    put_names(w, h->names);
    put_task_fails(w, h->indices);
  }
  n = 0;
  for (const xexec *e = x->execs; e != NULL; e = e->next)
    n++;
  put_count(w, n);
  for (const xexec *e = x->execs; e != NULL; e = e->next) {
    put_names(w, e->names);
    put_task_fails(w, e->failures);
  }
  if (x->latest_msg != NULL) {
    tl__put_u8(w, 1);
    tl__put_str(w, x->latest_msg->text, x->latest_msg->len);
  } else if (x->latest_static != NULL) {
    tl__put_u8(w, 1);
    tl__put_str(w, x->latest_static, strlen(x->latest_static));
  } else {
    tl__put_u8(w, 0);
  }
}

void tl__exclude_save(struct tl_scheduler *s, tl__wbuf *w) {
  if (nothing_to_save(s)) {
    tl__put_u8(w, SNAP_EMPTY);
    return;
  }
  tl__put_u8(w, SNAP_RECORDS);
  put_count(w, s->x.ntasksets);
  for (const tl__link *l = s->x.tasksets.next; l != &s->x.tasksets; l = l->next)
    save_xset(w, tl__container_of(l, xset, on_scheduler));
  put_count(w, s->x.ntimers);
  for (const tl__link *l = s->x.timers.next; l != &s->x.timers; l = l->next) {
    const xset *x = tl__container_of(l, xset, on_timer);
    tl__put_u64(w, x->ts->id);
    tl__put_u32(w, x->timer_index);
    tl__put_u64(w, x->deadline);
  }
  put_count(w, s->x.nnodes);
  for (const tl__link *l = s->x.nodes.next; l != &s->x.nodes; l = l->next) {
    const xnode *n = tl__container_of(l, xnode, on_list);
    put_names(w, n->names);
    tl__put_u8(w, n->excluded);
  }
  put_count(w, s->x.nnodes_excluded);
  for (const tl__link *l = s->x.node_timeline.next; l != &s->x.node_timeline; l = l->next) {
    const xnode *n = tl__container_of(l, xnode, on_timeline);
    tl__put_str(w, host_of(n->names), strlen(host_of(n->names)));
    tl__put_u64(w, n->expiry);
  }
  put_count(w, s->x.nexecs);
  for (const tl__link *l = s->x.execs.next; l != &s->x.execs; l = l->next) {
    const xapp *a = tl__container_of(l, xapp, on_timeline);
    put_names(w, a->names);
    tl__put_u64(w, a->expiry);
  }
  /* Only live executors keep failures, and every live one is on heartbeat_order, whose order
   * the restore rebuilds (the hash's order need not survive it). */
  size_t at = tl__put_u32_later(w);
  uint32_t n = 0;
  for (const tl__link *l = s->heartbeat_order.next; l != &s->heartbeat_order; l = l->next) {
    const tl__executor *ex = tl__container_of(l, tl__executor, on_timeline);
    if (ex->x_failures == NULL)
      continue;
    n++;
    tl__put_str(w, tl__executor_id(ex), strlen(tl__executor_id(ex)));
    put_count(w, ex->x_nfailures);
    for (const xfail *f = ex->x_failures; f != NULL; f = f->next) {
      tl__put_u32(w, f->index);
      tl__put_u32(w, f->stage_id);
      tl__put_u32(w, f->stage_attempt);
      tl__put_u64(w, f->time);
    }
  }
  tl__patch_u32(w, at, n);
}

/* Restore. Every record is linked to its owner as soon as it is allocated, so that on failure
 * the ordinary frees (tl__taskset_destroy, tl__exclude_destroy) find it. */

static int snap_bad(tl__rbuf *r) {
  tl__rbuf_fail(r, TL__RFAULT_RANGE);
  return TL_ESNAPSHOT;
}

/* A record from the allocator (nrecords counts it), zeroed; NULL when out of memory. */
static void *new_record(struct tl_scheduler *s) {
  return tl__exclude_reserve(s, 1) == TL_OK ? take_record(s) : NULL;
}

/* Frees every exclusion record s holds and clears the flags, leaving the state tl__exclude_init
 * and a fresh ledger give (the restore starts from it; in a scheduler being restored there is
 * nothing to free). */
static void clear_state(struct tl_scheduler *s) {
  while (!tl__list_empty(&s->x.tasksets))
    xset_free(s, tl__container_of(s->x.tasksets.next, xset, on_scheduler));
  while (!tl__list_empty(&s->x.execs)) {
    xapp *a = tl__container_of(s->x.execs.next, xapp, on_timeline);
    tl__list_remove(&a->on_timeline);
    s->x.nexecs--;
    tl__str_unref(s, a->names);
    free_record(s, a);
  }
  while (!tl__list_empty(&s->x.node_timeline)) {
    tl__list_remove(s->x.node_timeline.next);
    s->x.nnodes_excluded--;
  }
  while (!tl__list_empty(&s->x.nodes)) {
    xnode *n = tl__container_of(s->x.nodes.next, xnode, on_list);
    tl__list_remove(&n->on_list);
    s->x.nnodes--;
    tl__str_unref(s, n->names);
    free_record(s, n);
  }
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next)
    tl__exclude_executor_removed(s, ex);
  for (tl__host *host = s->hosts_by_name; host != NULL; host = host->hh_by_name.next)
    host->x_excluded = false;
}

/* An id or host name as tl__put_str wrote it, into buf (cap bytes), NUL-terminated. */
static bool get_name(tl__rbuf *r, char *buf, size_t cap, size_t *len) {
  return tl__get_cstr(r, 1, buf, cap, len);
}

/* A record's names: the executor's own string when an executor of that id has exactly these
 * names (as the record it was made from shared them), else a new one. NULL: *err says why. */
static tl__str *get_names(struct tl_scheduler *s, tl__rbuf *r, int *err) {
  char text[TL_ID_MAX + TL_HOST_MAX];
  size_t id_len, host_len;
  if (!get_name(r, text, TL_ID_MAX, &id_len) ||
      !get_name(r, text + id_len + 1, TL_HOST_MAX, &host_len)) {
    *err = snap_bad(r);
    return NULL;
  }
  size_t len = id_len + 1 + host_len;
  tl__executor *ex = tl__executor_find_len(s, text, id_len);
  if (ex != NULL && ex->names->len == len && memcmp(ex->names->text, text, len) == 0)
    return tl__str_ref(ex->names);
  tl__str *names = tl__str_new(s, text, len);
  if (names == NULL)
    *err = TL_ENOMEM;
  return names;
}

/* A failure list of a task set's host or executor record into *list (empty), in saved order;
 * *n counts it. seen has a bit per index of ts, clear on entry and on return. */
/* A restored time no later than timeout from now: every later entry of its timeline is appended
 * at now + timeout (the config's, which may be shorter than the snapshot's), after it. */
static uint64_t no_later(uint64_t t, uint64_t now, uint64_t timeout) {
  uint64_t latest = tl__add_sat(now, timeout);
  return t < latest ? t : latest;
}

static int get_task_fails(struct tl_scheduler *s, tl__rbuf *r, const tl__taskset *ts, uint8_t *seen,
                          xfail **list, uint32_t *n) {
  uint32_t count = tl__get_count(r, SNAP_TASK_FAIL);
  int err = r->bad || count == 0 ? snap_bad(r) : TL_OK;
  xfail **tail = list;
  for (uint32_t i = 0; i < count && err == TL_OK; i++) {
    uint32_t index = tl__get_below(r, ts->ntasks);
    uint32_t failures = tl__get_u32(r);
    uint64_t time = no_later(tl__get_time(r), s->last_now, 0); /* a failure lies in the past */
    if (r->bad || failures == 0 || (seen[index / 8] & (1u << (index % 8))) != 0) {
      err = snap_bad(r);
      break;
    }
    xfail *f = new_record(s);
    if (f == NULL) {
      err = TL_ENOMEM;
      break;
    }
    f->index = index;
    f->count = failures;
    f->time = time;
    *tail = f;
    tail = &f->next;
    (*n)++;
    seen[index / 8] |= (uint8_t)(1u << (index % 8));
  }
  for (const xfail *f = *list; f != NULL; f = f->next)
    seen[f->index / 8] &= (uint8_t) ~(1u << (f->index % 8));
  return err;
}

/* A task set's hosts and executors with their failures, and its message, into x. */
static int get_places(struct tl_scheduler *s, tl__rbuf *r, xset *x, uint8_t *seen) {
  int err = TL_OK;
  uint32_t count = tl__get_count(r, SNAP_PLACE);
  if (r->bad || count == 0)
    return snap_bad(r);
  xhost **htail = &x->hosts;
  for (uint32_t i = 0; i < count; i++) {
    tl__str *names = get_names(s, r, &err);
    if (names == NULL)
      return err;
    if (find_host(x, host_of(names)) != NULL) { /* one record per host */
      tl__str_unref(s, names);
      return snap_bad(r);
    }
    xhost *h = new_record(s);
    if (h == NULL) {
      tl__str_unref(s, names);
      return TL_ENOMEM;
    }
    h->names = names;
    *htail = h;
    htail = &h->next;
    uint32_t nindices = 0;
    if ((err = get_task_fails(s, r, x->ts, seen, &h->indices, &nindices)) != TL_OK)
      return err;
  }
  count = tl__get_count(r, SNAP_PLACE);
  if (r->bad || count == 0)
    return snap_bad(r);
  xexec **etail = &x->execs;
  for (uint32_t i = 0; i < count; i++) {
    tl__str *names = get_names(s, r, &err);
    if (names == NULL)
      return err;
    xhost *h = find_host(x, host_of(names)); /* the node it first failed on (check_xset) */
    if (find_exec(x, id_of(names)) != NULL || h == NULL) {
      tl__str_unref(s, names);
      return snap_bad(r);
    }
    xexec *e = new_record(s);
    if (e == NULL) {
      tl__str_unref(s, names);
      return TL_ENOMEM;
    }
    e->names = names;
    e->host = h;
    *etail = e;
    etail = &e->next;
    if ((err = get_task_fails(s, r, x->ts, seen, &e->failures, &e->nfailed)) != TL_OK)
      return err;
  }
  if (tl__get_bool(r)) {
    size_t len;
    const char *text = tl__get_str(r, 0, UINT32_MAX - 1, &len);
    if (text == NULL || memchr(text, '\0', len) != NULL)
      return snap_bad(r);
    if ((x->latest_msg = tl__str_new(s, text, len)) == NULL)
      return TL_ENOMEM;
  }
  return r->bad ? TL_ESNAPSHOT : TL_OK;
}

/* The counts and flags of x's records, as tl__exclude_task_failed keeps them. */
static void derive_xset(struct tl_scheduler *s, xset *x) {
  const tl_config *c = &s->cfg;
  for (xexec *e = x->execs; e != NULL; e = e->next) {
    e->excluded = e->nfailed >= c->exclude_stage_max_failed_tasks_per_executor;
    x->nexcluded_execs += e->excluded;
    e->host->nexcluded_execs += e->excluded;
    for (const xfail *f = e->failures; f != NULL; f = f->next)
      x->nblocked += f->count >= c->exclude_max_task_attempts_per_executor;
  }
  for (xhost *h = x->hosts; h != NULL; h = h->next) {
    h->excluded = h->nexcluded_execs >= c->exclude_stage_max_failed_executors_per_node;
    x->nexcluded_hosts += h->excluded;
    for (const xfail *f = h->indices; f != NULL; f = f->next)
      x->nblocked += f->count >= c->exclude_max_task_attempts_per_node;
  }
}

static int restore_tasksets(struct tl_scheduler *s, tl__rbuf *r) {
  uint32_t count = tl__get_count(r, SNAP_XSET);
  for (uint32_t i = 0; i < count; i++) {
    tl_taskset_id id = tl__get_u64(r);
    tl__taskset *ts = r->bad ? NULL : tl__taskset_find(s, id);
    if (ts == NULL || ts->exclude != NULL) /* unknown, or listed twice */
      return snap_bad(r);
    xset *x = new_record(s);
    if (x == NULL)
      return TL_ENOMEM;
    x->ts = ts;
    tl__list_init(&x->on_timer);
    tl__list_insert_tail(&s->x.tasksets, &x->on_scheduler);
    s->x.ntasksets++;
    ts->exclude = x;
    size_t seen_bytes = (size_t)ts->ntasks / 8 + 1;
    uint8_t *seen = tl__calloc(s, seen_bytes, 1);
    if (seen == NULL)
      return TL_ENOMEM;
    int err = get_places(s, r, x, seen);
    tl__free(s, seen, seen_bytes);
    if (err != TL_OK)
      return err;
    derive_xset(s, x);
  }
  return r->bad ? TL_ESNAPSHOT : TL_OK;
}

static int restore_timers(struct tl_scheduler *s, tl__rbuf *r) {
  uint32_t count = tl__get_count(r, SNAP_TIMER);
  uint64_t last = 0;
  for (uint32_t i = 0; i < count; i++) {
    tl_taskset_id id = tl__get_u64(r);
    uint32_t index = tl__get_u32(r);
    uint64_t deadline = no_later(tl__get_time(r), s->last_now, s->cfg.unschedulable_timeout_ns);
    tl__taskset *ts = r->bad ? NULL : tl__taskset_find(s, id);
    xset *x = ts != NULL ? ts->exclude : NULL;
    if (x == NULL || x->timer || index >= ts->ntasks || deadline < last)
      return snap_bad(r);
    x->timer = true;
    x->timer_index = index;
    x->deadline = deadline;
    tl__list_insert_tail(&s->x.timers, &x->on_timer);
    s->x.ntimers++;
    last = deadline;
  }
  return r->bad ? TL_ESNAPSHOT : TL_OK;
}

static int restore_nodes(struct tl_scheduler *s, tl__rbuf *r) {
  int err = TL_OK;
  size_t nexcluded = 0;
  uint32_t count = tl__get_count(r, SNAP_NODE);
  for (uint32_t i = 0; i < count; i++) {
    tl__str *names = get_names(s, r, &err);
    if (names == NULL)
      return err;
    bool excluded = tl__get_bool(r);
    if (r->bad || find_node(s, host_of(names)) != NULL) { /* one record per node */
      tl__str_unref(s, names);
      return snap_bad(r);
    }
    xnode *n = new_record(s);
    if (n == NULL) {
      tl__str_unref(s, names);
      return TL_ENOMEM;
    }
    n->names = names;
    n->excluded = excluded; /* on the timeline below, which must name each excluded node once */
    tl__list_init(&n->on_timeline);
    tl__list_insert_tail(&s->x.nodes, &n->on_list);
    s->x.nnodes++;
    nexcluded += excluded;
  }
  count = tl__get_count(r, SNAP_NODE_EXPIRY);
  if (r->bad || count != nexcluded)
    return snap_bad(r);
  uint64_t last = 0;
  for (uint32_t i = 0; i < count; i++) {
    char host[TL_HOST_MAX];
    size_t len;
    get_name(r, host, sizeof host, &len);
    uint64_t expiry = no_later(tl__get_time(r), s->last_now, s->cfg.exclude_timeout_ns);
    xnode *n = r->bad ? NULL : find_node(s, host);
    if (n == NULL || !n->excluded || tl__list_linked(&n->on_timeline) || expiry < last)
      return snap_bad(r);
    n->expiry = expiry;
    tl__list_insert_tail(&s->x.node_timeline, &n->on_timeline);
    s->x.nnodes_excluded++;
    last = expiry;
  }
  return TL_OK;
}

static int restore_apps(struct tl_scheduler *s, tl__rbuf *r) {
  int err = TL_OK;
  uint64_t last = 0;
  uint32_t count = tl__get_count(r, SNAP_APP);
  for (uint32_t i = 0; i < count; i++) {
    tl__str *names = get_names(s, r, &err);
    if (names == NULL)
      return err;
    uint64_t expiry = no_later(tl__get_time(r), s->last_now, s->cfg.exclude_timeout_ns);
    xnode *node = find_node(s, host_of(names));
    if (r->bad || node == NULL || find_app(s, id_of(names)) != NULL || expiry < last) {
      tl__str_unref(s, names);
      return snap_bad(r);
    }
    xapp *a = new_record(s);
    if (a == NULL) {
      tl__str_unref(s, names);
      return TL_ENOMEM;
    }
    a->names = names;
    a->node = node;
    a->expiry = expiry;
    tl__list_insert_tail(&s->x.execs, &a->on_timeline);
    s->x.nexecs++;
    node->nexcluded_execs++;
    last = expiry;
  }
  for (const tl__link *l = s->x.nodes.next; l != &s->x.nodes; l = l->next) {
    const xnode *n = tl__container_of(l, xnode, on_list);
    if (n->nexcluded_execs == 0 && !n->excluded) /* node_maybe_free would have freed it */
      return snap_bad(r);
  }
  return TL_OK;
}

static int restore_app_failures(struct tl_scheduler *s, tl__rbuf *r, uint32_t *nexecutors) {
  uint32_t count = tl__get_count(r, SNAP_APP_FAILS);
  for (uint32_t i = 0; i < count; i++) {
    char id[TL_ID_MAX];
    size_t len;
    get_name(r, id, sizeof id, &len);
    uint32_t nfailures = tl__get_count(r, SNAP_APP_FAIL);
    tl__executor *ex = r->bad ? NULL : tl__executor_find_len(s, id, len);
    /* Only live executors keep failures (a lost one's were dropped), each listed once. */
    if (!alive(ex) || ex->x_failures != NULL || nfailures == 0)
      return snap_bad(r);
    xfail **tail = &ex->x_failures;
    for (uint32_t k = 0; k < nfailures; k++) {
      uint32_t index = tl__get_u32(r);
      uint32_t stage_id = tl__get_u32(r);
      uint32_t stage_attempt = tl__get_u32(r);
      uint64_t expiry = no_later(tl__get_time(r), s->last_now, s->cfg.exclude_timeout_ns);
      if (r->bad)
        return TL_ESNAPSHOT;
      xfail *f = new_record(s);
      if (f == NULL)
        return TL_ENOMEM;
      f->index = index;
      f->stage_id = stage_id;
      f->stage_attempt = stage_attempt;
      f->time = expiry;
      *tail = f;
      tail = &f->next;
      ex->x_nfailures++;
    }
  }
  *nexecutors = count;
  return r->bad ? TL_ESNAPSHOT : TL_OK;
}

/* The executors' and hosts' flags, from the records (tl__exclude_executor_added's rule). */
static void derive_flags(struct tl_scheduler *s) {
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next)
    ex->x_excluded = alive(ex) && find_app(s, tl__executor_id(ex)) != NULL;
  for (tl__host *host = s->hosts_by_name; host != NULL; host = host->hh_by_name.next) {
    const xnode *n = find_node(s, host->name);
    host->x_excluded = n != NULL && n->excluded;
  }
}

int tl__exclude_restore(struct tl_scheduler *s, tl__rbuf *r) {
  clear_state(s);
  uint8_t marker = tl__get_enum(r, SNAP_RECORDS + 1);
  if (r->bad)
    return TL_ESNAPSHOT;
  if (marker == SNAP_EMPTY)
    return TL_OK;
  if (!s->cfg.exclude_on_failure) /* then save writes the empty marker */
    return snap_bad(r);
  uint32_t nexecutors = 0;
  int err = restore_tasksets(s, r);
  if (err == TL_OK)
    err = restore_timers(s, r);
  if (err == TL_OK)
    err = restore_nodes(s, r);
  if (err == TL_OK)
    err = restore_apps(s, r);
  if (err == TL_OK)
    err = restore_app_failures(s, r, &nexecutors);
  if (err != TL_OK)
    return err;
  if (s->x.ntasksets + s->x.nnodes + s->x.nexecs + nexecutors == 0) /* save writes 0 for that */
    return snap_bad(r);
  derive_flags(s);
  return TL_OK;
}

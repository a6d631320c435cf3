/* Exclude on failure in a snapshot: tl__exclude_save writes every record of exclude.c, named by
 * key, and tl__exclude_restore reads them back, validating each, and derives what follows from
 * them (docs/snapshot.md "Exclusion"). Layer 2 with exclude.c, whose records (exclude.h) these
 * are. Everything here runs under the scheduler's lock. */
#include "exclude.h"

#include <stdio.h>
#include <stdlib.h>

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
    tl__exclude_xset_free(s, tl__container_of(s->x.tasksets.next, xset, on_scheduler));
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
    tl__unsched_mark(s, ts, TL__UNSCHED_EXCLUDED); /* its event: tl__unsched_restored */
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

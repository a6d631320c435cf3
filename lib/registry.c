/* The registry: the records of executors (tombstones included), hosts, racks, task sets and
 * stages, found by their keys, and the state changes of an executor record that every
 * transition shares (its state counts, leaving its host, becoming and ceasing to be a
 * tombstone). Transitions (membership.c) decide when; this file keeps the records and their
 * counts consistent, and checks them for tl_check (executors, hosts, racks, timelines).
 *
 * Everything here runs under the scheduler's lock.
 */
#include "checker.h"
#include "resource.h"

#include <inttypes.h>

/* The executor found last is tried first: a runtime's status update is usually followed by an
 * offer of the same executor (Spark's backend offers the executor that reported), and a
 * comparison is cheaper than hashing. */
tl__executor *tl__executor_find_len(struct tl_scheduler *s, const char *id, size_t len) {
  tl__executor *ex = s->last_executor;
  const char *key = ex != NULL ? ex->hh_by_id.key : NULL;
  /* The last byte first: ids of one cluster tend to differ at their end (exec-7, exec-8). */
  if (ex != NULL && ex->hh_by_id.keylen == len && len > 0 && key[len - 1] == id[len - 1] &&
      memcmp(key, id, len) == 0)
    return ex;
  HASH_FIND(hh_by_id, s->executors_by_id, id, len, ex);
  if (ex != NULL)
    s->last_executor = ex;
  return ex;
}

tl__executor *tl__executor_find(struct tl_scheduler *s, const char *id) {
  return tl__executor_find_len(s, id, strlen(id));
}

void tl__executor_free(struct tl_scheduler *s, tl__executor *ex) {
  if (s->last_executor == ex)
    s->last_executor = NULL;
  tl__str_unref(s, ex->decommission_msg);
  tl__str_unref(s, ex->rack);
  tl__res_executor_free(s, ex->res);
  if (tl__ev_unsettled(s, ex->ev_stamp)) {
    /* A task event not yet settled names it, without a reference: the record and its names
     * stay, out of every index, until that event is settled (tl__executors_release). */
    ex->decommission_msg = ex->rack = NULL;
    ex->res = NULL;
    ex->retired_next = s->retired;
    s->retired = ex;
    return;
  }
  tl__str_unref(s, ex->names);
  tl__free(s, ex, sizeof *ex);
}

void tl__executors_release(struct tl_scheduler *s, bool all) {
  for (tl__executor **at = &s->retired, *ex; (ex = *at) != NULL;) {
    if (all || !tl__ev_unsettled(s, ex->ev_stamp)) {
      *at = ex->retired_next;
      tl__str_unref(s, ex->names);
      tl__free(s, ex, sizeof *ex);
    } else {
      at = &ex->retired_next;
    }
  }
}

static size_t *state_count(struct tl_scheduler *s, uint8_t state) {
  switch (state) {
  case TL_EXECUTOR_ALIVE:
    return &s->nalive;
  case TL_EXECUTOR_DECOMMISSIONING:
    return &s->ndecommissioning;
  case TL_EXECUTOR_PENDING_LOSS:
    return &s->npending_loss;
  case TL_EXECUTOR_RECOVERING:
    return &s->nrecovering;
  default:
    return &s->ntombstones;
  }
}

void tl__executor_set_state(struct tl_scheduler *s, tl__executor *ex, tl_executor_state state) {
  (*state_count(s, ex->state))--;
  ex->state = (uint8_t)state;
  (*state_count(s, ex->state))++;
}

size_t tl__host_size(size_t name_len) { return sizeof(tl__host) + name_len + 1; }
size_t tl__rack_size(size_t name_len) { return sizeof(tl__rack) + name_len + 1; }

void tl__executor_leave_host(struct tl_scheduler *s, tl__executor *ex) {
  tl__host *host = ex->host;
  tl__list_remove(&ex->on_host);
  ex->host = NULL;
  if (--host->nexecutors != 0)
    return;
  tl__rack *rack = host->rack;
  if (rack != NULL) {
    tl__list_remove(&host->on_rack);
    if (--rack->nhosts == 0) {
      HASH_DELETE(hh_by_name, s->racks_by_name, rack);
      tl__free(s, rack, tl__rack_size(rack->name_len));
      s->nracks--;
    }
  }
  HASH_DELETE(hh_by_name, s->hosts_by_name, host);
  tl__free(s, host, tl__host_size(host->name_len));
  s->nhosts--;
}

void tl__tombstone_evict(struct tl_scheduler *s, tl__executor *ex) {
  tl__list_remove(&ex->on_timeline);
  HASH_DELETE(hh_by_id, s->executors_by_id, ex);
  s->ntombstones--;
  tl__executor_free(s, ex);
}

void tl__executor_bury(struct tl_scheduler *s, tl__executor *ex) {
  tl__list_remove(&ex->on_timeline);
  tl__executor_set_state(s, ex, TL_EXECUTOR_REMOVED);
  tl__str_unref(s, ex->decommission_msg); /* a tombstone keeps its names and nothing else */
  ex->decommission_msg = NULL;
  tl__res_executor_free(s, ex->res); /* its attempts have ended: nothing is held */
  ex->res = NULL;
  ex->when = s->last_now;
  tl__list_insert_tail(&s->tombstone_order, &ex->on_timeline);
  while (s->ntombstones > s->cfg.max_tombstones)
    tl__tombstone_evict(s, tl__container_of(s->tombstone_order.next, tl__executor, on_timeline));
}

tl__taskset *tl__taskset_find(struct tl_scheduler *s, tl_taskset_id id) {
  tl__taskset *ts;
  HASH_FIND(hh_by_id, s->tasksets_by_id, &id, sizeof id, ts);
  return ts;
}

tl__stage *tl__stage_find(struct tl_scheduler *s, uint32_t stage_id) {
  tl__stage *st;
  HASH_FIND(hh_by_id, s->stages_by_id, &stage_id, sizeof stage_id, st);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * tl_check's part: executors (tombstones included), their running and frozen lists, hosts,
 * racks and the timelines.
 * ------------------------------------------------------------------------------------------- */

/* Invariants 1, 2, 3 (executor side) and 5 (pending-loss executors run nothing); *running and
 * *frozen are the attempts found on the executors' lists (the tid index's check compares). */
static int check_executors(tl__checker *c, size_t *running, size_t *frozen) {
  struct tl_scheduler *s = c->s;
  size_t count[5] = {0, 0, 0, 0, 0};
  size_t limit = s->attempts_by_tid.n + s->nfrozen + 1; /* guards against cycles */
  *running = *frozen = 0;
  bool last_seen = s->last_executor == NULL;
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    last_seen = last_seen || ex == s->last_executor;
    const char *id = tl__executor_id(ex);
    TL__CHECK(c, ex->state <= TL_EXECUTOR_RECOVERING, "executor %s: bad state %u", id, ex->state);
    count[ex->state]++;
    tl__check_account(c, sizeof *ex);
    bool live = ex->state == TL_EXECUTOR_ALIVE || ex->state == TL_EXECUTOR_DECOMMISSIONING;
    TL__CHECK(c, live == (ex->host != NULL), "executor %s (%s): host %s", id,
              tl_executor_state_name(ex->state), ex->host != NULL ? "set" : "missing");
    TL__CHECK(c, live == tl__list_linked(&ex->on_host), "executor %s (%s): on a host list: %d", id,
              tl_executor_state_name(ex->state), tl__list_linked(&ex->on_host));
    TL__CHECK(c, live || tl__list_empty(&ex->running), "invariant 5: %s executor %s runs attempts",
              tl_executor_state_name(ex->state), id);
    TL__CHECK(c, ex->rack == NULL || ex->state == TL_EXECUTOR_RECOVERING,
              "executor %s (%s) keeps a rack name", id, tl_executor_state_name(ex->state));
    TL__CHECK(c,
              ex->state == TL_EXECUTOR_PENDING_LOSS || ex->state == TL_EXECUTOR_RECOVERING ||
                  tl__list_empty(&ex->frozen),
              "invariant 2: executor %s (%s) has frozen attempts", id,
              tl_executor_state_name(ex->state));

    size_t n = 0, cpus = 0;
    for (tl__link *l = ex->running.next; l != &ex->running; l = l->next) {
      tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
      TL__CHECK(c, ++n <= limit, "executor %s: running list does not end", id);
      TL__CHECK(c, a->executor == ex,
                "invariant 1: tid %llu on executor %s's list points elsewhere",
                (unsigned long long)a->tid, id);
      TL__CHECK(c, !a->frozen, "invariant 2: tid %llu frozen but on executor %s's running list",
                (unsigned long long)a->tid, id);
      TL__CHECK(c, tl__attempt_find(s, a->tid) == a,
                "invariant 2: tid %llu runs on executor %s but is not in attempts_by_tid",
                (unsigned long long)a->tid, id);
      if (!a->end_held) /* an end its executor holds takes no cores */
        cpus += a->taskset->cpus;
    }
    TL__CHECK(c, n == ex->nrunning, "executor %s: %zu running, count says %u", id, n, ex->nrunning);
    TL__CHECK(c, ex->free_cores <= ex->cores && ex->cores - ex->free_cores == cpus,
              "invariant 3: executor %s has %u of %u cores free but its attempts take %zu", id,
              ex->free_cores, ex->cores, cpus);
    *running += n;

    n = 0;
    for (tl__link *l = ex->frozen.next; l != &ex->frozen; l = l->next) {
      tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
      TL__CHECK(c, ++n <= limit, "executor %s: frozen list does not end", id);
      TL__CHECK(c, a->executor == ex && a->frozen,
                "invariant 2: tid %llu on executor %s's frozen list is not frozen there",
                (unsigned long long)a->tid, id);
      TL__CHECK(c, tl__attempt_find(s, a->tid) != a,
                "invariant 2: frozen tid %llu is still in attempts_by_tid",
                (unsigned long long)a->tid);
    }
    TL__CHECK(c, n == ex->nfrozen, "executor %s: %zu frozen, count says %u", id, n, ex->nfrozen);
    *frozen += n;
  }
  TL__CHECK(c, last_seen, "the executor found last is not in executors_by_id");
  TL__CHECK(c,
            count[TL_EXECUTOR_ALIVE] == s->nalive &&
                count[TL_EXECUTOR_DECOMMISSIONING] == s->ndecommissioning &&
                count[TL_EXECUTOR_PENDING_LOSS] == s->npending_loss &&
                count[TL_EXECUTOR_REMOVED] == s->ntombstones &&
                count[TL_EXECUTOR_RECOVERING] == s->nrecovering,
            "executor counts disagree: alive %zu/%zu, decommissioning %zu/%zu, pending %zu/%zu, "
            "tombstones %zu/%zu, recovering %zu/%zu",
            count[0], s->nalive, count[1], s->ndecommissioning, count[2], s->npending_loss,
            count[3], s->ntombstones, count[4], s->nrecovering);
  TL__CHECK(c, s->ntombstones <= s->cfg.max_tombstones, "%zu tombstones, at most %u allowed",
            s->ntombstones, s->cfg.max_tombstones);
  tl__check_account_table(c, s->executors_by_id != NULL ? s->executors_by_id->hh_by_id.tbl : NULL);
  for (const tl__executor *ex = s->retired; ex != NULL; ex = ex->retired_next) {
    TL__CHECK(c, tl__ev_unsettled(s, ex->ev_stamp),
              "retired executor %s: its last task event (%" PRIu32 ", mod 2^32) is not queued "
              "(%" PRIu64 " settled, %" PRIu64 " pushed)",
              tl__executor_id(ex), ex->ev_stamp, s->ev_settled, s->ev_pushed);
    tl__check_account(c, sizeof *ex);
  }
  return TL_OK;
}

/* Invariant 5: hosts and racks are never empty and agree with their executors. */
static int check_hosts(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  size_t executors = 0, racked = 0;
  for (tl__host *h = s->hosts_by_name; h != NULL; h = h->hh_by_name.next) {
    tl__check_account(c, tl__host_size(h->name_len));
    size_t n = 0;
    for (tl__link *l = h->executors.next; l != &h->executors; l = l->next) {
      tl__executor *ex = tl__container_of(l, tl__executor, on_host);
      TL__CHECK(c, ++n <= s->nalive + s->ndecommissioning, "host %s: list does not end", h->name);
      TL__CHECK(c, ex->host == h, "host %s lists executor %s of another host", h->name,
                tl__executor_id(ex));
    }
    TL__CHECK(c, n == h->nexecutors && n > 0, "invariant 5: host %s has %zu executors (count %u)",
              h->name, n, h->nexecutors);
    uint32_t alive = 0;
    for (tl__link *l = h->executors.next; l != &h->executors; l = l->next)
      alive += tl__container_of(l, tl__executor, on_host)->state == TL_EXECUTOR_ALIVE;
    TL__CHECK(c, alive == h->nalive, "host %s has %u ALIVE executors, count says %u", h->name,
              alive, h->nalive);
    executors += n;
    racked += h->rack != NULL;
    TL__CHECK(c, h->rack == NULL || tl__list_linked(&h->on_rack), "host %s: not on its rack's list",
              h->name);
  }
  TL__CHECK(c, executors == s->nalive + s->ndecommissioning,
            "hosts list %zu executors, %zu are alive or decommissioning", executors,
            s->nalive + s->ndecommissioning);
  TL__CHECK(c, HASH_CNT(hh_by_name, s->hosts_by_name) == s->nhosts, "%u hosts, count says %zu",
            HASH_CNT(hh_by_name, s->hosts_by_name), s->nhosts);
  tl__check_account_table(c, s->hosts_by_name != NULL ? s->hosts_by_name->hh_by_name.tbl : NULL);
  size_t hosts = 0;
  for (tl__rack *r = s->racks_by_name; r != NULL; r = r->hh_by_name.next) {
    tl__check_account(c, tl__rack_size(r->name_len));
    size_t n = 0;
    for (tl__link *l = r->hosts.next; l != &r->hosts; l = l->next) {
      tl__host *h = tl__container_of(l, tl__host, on_rack);
      TL__CHECK(c, ++n <= s->nhosts, "rack %s: list does not end", r->name);
      TL__CHECK(c, h->rack == r, "rack %s lists host %s of another rack", r->name, h->name);
    }
    TL__CHECK(c, n == r->nhosts && n > 0, "invariant 5: rack %s has %zu hosts (count %u)", r->name,
              n, r->nhosts);
    hosts += n;
  }
  TL__CHECK(c, hosts == racked, "racks list %zu hosts, %zu hosts have a rack", hosts, racked);
  TL__CHECK(c, HASH_CNT(hh_by_name, s->racks_by_name) == s->nracks, "%u racks, count says %zu",
            HASH_CNT(hh_by_name, s->racks_by_name), s->nracks);
  tl__check_account_table(c, s->racks_by_name != NULL ? s->racks_by_name->hh_by_name.tbl : NULL);
  return TL_OK;
}

/* Each timeline holds exactly the executors of its state, in deadline order. */
static int check_timeline(tl__checker *c, const tl__link *head, uint8_t state, uint8_t state2,
                          size_t expected, const char *name) {
  size_t n = 0;
  uint64_t last = 0;
  for (const tl__link *l = head->next; l != head; l = l->next) {
    const tl__executor *ex = tl__container_of(l, tl__executor, on_timeline);
    TL__CHECK(c, ++n <= expected, "%s holds more than %zu executors", name, expected);
    TL__CHECK(c, ex->state == state || ex->state == state2, "%s holds %s executor %s", name,
              tl_executor_state_name(ex->state), tl__executor_id(ex));
    TL__CHECK(c, ex->when >= last, "%s is out of order at executor %s", name, tl__executor_id(ex));
    last = ex->when;
  }
  TL__CHECK(c, n == expected, "%s holds %zu executors, %zu expected", name, n, expected);
  return TL_OK;
}

static int check_timelines(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  int err = check_timeline(c, &s->heartbeat_order, TL_EXECUTOR_ALIVE, TL_EXECUTOR_DECOMMISSIONING,
                           s->nalive + s->ndecommissioning, "heartbeat order");
  if (err == TL_OK)
    err = check_timeline(c, &s->pending_order, TL_EXECUTOR_PENDING_LOSS, TL_EXECUTOR_PENDING_LOSS,
                         s->cfg.pending_loss_timeout_ns != 0 ? s->npending_loss : 0,
                         "pending-loss order");
  if (err == TL_OK)
    err = check_timeline(c, &s->recovery_order, TL_EXECUTOR_RECOVERING, TL_EXECUTOR_RECOVERING,
                         s->cfg.recovery_timeout_ns != 0 ? s->nrecovering : 0, "recovery order");
  if (err == TL_OK)
    err = check_timeline(c, &s->tombstone_order, TL_EXECUTOR_REMOVED, TL_EXECUTOR_REMOVED,
                         s->ntombstones, "tombstone order");
  return err;
}

int tl__registry_check(tl__checker *c, size_t *running, size_t *frozen) {
  int err = check_executors(c, running, frozen);
  if (err == TL_OK)
    err = check_hosts(c);
  if (err == TL_OK)
    err = check_timelines(c);
  return err;
}

void tl__registry_each_str(tl__checker *c, tl__str_fn *fn) {
  for (tl__executor *ex = c->s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    fn(c, ex->names, tl__executor_id(ex));
    fn(c, ex->decommission_msg, tl__executor_id(ex));
    fn(c, ex->rack, tl__executor_id(ex));
  }
  for (tl__executor *ex = c->s->retired; ex != NULL; ex = ex->retired_next)
    fn(c, ex->names, tl__executor_id(ex));
}

/* Membership: registration, heartbeats, decommissioning, two-phase loss and the executors'
 * deadlines.
 *
 * An executor is ALIVE or DECOMMISSIONING while it runs; PENDING_LOSS after a loss whose reason
 * is not known yet; REMOVED (a tombstone) after the loss is complete, until it is evicted by
 * max_tombstones or tombstone_ttl_ns. Each state keeps the executor on one timeline list, in the
 * order its deadline comes: heartbeat_order (last heartbeat), pending_order (pending-loss
 * deadline), tombstone_order (removal time). The timeout of each list is the same for all its
 * members and the clock never goes back, so appending keeps a list sorted and tl_tick only ever
 * looks at the heads: expiry costs O(what expires), not O(executors). A deadline that would fall
 * at or past UINT64_MAX saturates there and never comes, not even with the clock at UINT64_MAX:
 * tl__executors_next_deadline answers TL_TICK_NEVER for it, so tl__executors_tick must not run
 * it (tl__due).
 *
 * Everything here runs under the scheduler's lock.
 */
#include "internal.h"

static bool same_rack(const tl__rack *rack, const char *name) {
  if (rack == NULL || name == NULL)
    return rack == NULL && name == NULL;
  return strcmp(rack->name, name) == 0;
}

/* ---------------------------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------------------------- */

int tl__executor_add(struct tl_scheduler *s, const tl_executor_desc *d) {
  size_t id_len = strlen(d->id), host_len = strlen(d->host);
  size_t rack_len = d->rack != NULL ? strlen(d->rack) : 0;

  tl__executor *ex = tl__executor_find(s, d->id);
  if (ex != NULL)
    return ex->state == TL_EXECUTOR_REMOVED ? TL_EGONE : TL_EEXIST;
  tl__host *host;
  HASH_FIND(hh_by_name, s->hosts_by_name, d->host, host_len, host);
  tl__rack *rack = NULL;
  if (host != NULL) {
    if (!same_rack(host->rack, d->rack))
      return TL_EINVAL;
    rack = host->rack;
  } else if (d->rack != NULL) {
    HASH_FIND(hh_by_name, s->racks_by_name, d->rack, rack_len, rack);
  }

  /* Allocate everything, then index it (undoing on failure), then link: nothing visible
   * changes unless the whole registration succeeds. */
  char names_text[TL_ID_MAX + TL_HOST_MAX];
  memcpy(names_text, d->id, id_len + 1);
  memcpy(names_text + id_len + 1, d->host, host_len);
  tl__str *names = tl__str_new(s, names_text, id_len + 1 + host_len);
  ex = tl__calloc(s, 1, sizeof *ex);
  tl__host *new_host = host == NULL ? tl__calloc(s, 1, tl__host_size(host_len)) : NULL;
  tl__rack *new_rack = host == NULL && d->rack != NULL && rack == NULL
                           ? tl__calloc(s, 1, tl__rack_size(rack_len))
                           : NULL;
  if (names == NULL || ex == NULL || (host == NULL && new_host == NULL) ||
      (host == NULL && d->rack != NULL && rack == NULL && new_rack == NULL) ||
      tl__events_reserve(s, 1) != TL_OK)
    goto fail;

  ex->names = names;
  HASH_ADD_KEYPTR(hh_by_id, s->executors_by_id, names->text, id_len, ex);
  if (!TL__HASH_ADDED(ex, hh_by_id))
    goto fail;
  if (new_host != NULL) {
    memcpy(new_host->name, d->host, host_len + 1);
    new_host->name_len = (uint32_t)host_len;
    HASH_ADD_KEYPTR(hh_by_name, s->hosts_by_name, new_host->name, host_len, new_host);
    if (!TL__HASH_ADDED(new_host, hh_by_name))
      goto fail_unindex_ex;
  }
  if (new_rack != NULL) {
    memcpy(new_rack->name, d->rack, rack_len + 1);
    new_rack->name_len = (uint32_t)rack_len;
    HASH_ADD_KEYPTR(hh_by_name, s->racks_by_name, new_rack->name, rack_len, new_rack);
    if (!TL__HASH_ADDED(new_rack, hh_by_name))
      goto fail_unindex_host;
  }

  if (new_rack != NULL) {
    tl__list_init(&new_rack->hosts);
    rack = new_rack;
    s->nracks++;
  }
  if (new_host != NULL) {
    tl__list_init(&new_host->executors);
    tl__list_init(&new_host->on_rack);
    new_host->rack = rack;
    new_host->place = tl__place_find(s, TL__PLACE_HOST, d->host, host_len);
    if (rack != NULL) {
      tl__list_insert_tail(&rack->hosts, &new_host->on_rack);
      rack->nhosts++;
    }
    host = new_host;
    s->nhosts++;
  }
  tl__list_init(&ex->running);
  tl__list_init(&ex->frozen);
  tl__list_init(&ex->outputs);
  ex->host = host;
  tl__list_insert_tail(&host->executors, &ex->on_host);
  host->nexecutors++;
  ex->cores = ex->free_cores = d->cores;
  ex->ud = d->ud;
  ex->state = TL_EXECUTOR_ALIVE;
  s->nalive++;
  ex->place = tl__place_find(s, TL__PLACE_EXECUTOR, d->id, id_len);
  tl__locality_executor_changed(s, ex, false, true);
  ex->when = s->last_now; /* registration counts as a heartbeat */
  tl__list_insert_tail(&s->heartbeat_order, &ex->on_timeline);

  tl__exclude_executor_added(s, ex);

  tl__event *ev = tl__event_push(s, TL__EV_EXECUTOR_ADDED);
  ev->names = tl__str_ref(names);
  return TL_OK;

fail_unindex_host:
  if (new_host != NULL)
    HASH_DELETE(hh_by_name, s->hosts_by_name, new_host);
fail_unindex_ex:
  HASH_DELETE(hh_by_id, s->executors_by_id, ex);
fail:
  tl__free(s, new_rack, tl__rack_size(rack_len));
  tl__free(s, new_host, tl__host_size(host_len));
  tl__free(s, ex, sizeof *ex);
  tl__str_unref(s, names);
  return TL_ENOMEM;
}

/* ---------------------------------------------------------------------------------------------
 * Two-phase loss
 *
 * Phase one (freeze): every running attempt goes through the one cleanup routine (out of
 * attempts_by_tid and the running list, cores back) and onto the executor's frozen list; the
 * executor leaves its host (empty hosts and racks are freed) and waits in PENDING_LOSS. Its task
 * sets still count the attempts as running, so nothing is rescheduled, and updates for them are
 * stale: the executor is gone as far as anyone can tell.
 *
 * Phase two (remove): each frozen attempt ends in its task set with TL_END_EXECUTOR_LOST,
 * counting toward max_task_failures only if the app caused the exit, the attempt had reached
 * RUNNING (a launch that never started is not the task's fault, SPARK-39955), and the executor
 * was not being decommissioned. The executor becomes a tombstone.
 *
 * A loss with a real reason does both at once; TL_LOSS_PENDING does phase one and leaves phase
 * two to a later call or to pending_loss_timeout_ns. executor_lost is made at phase one only.
 * ------------------------------------------------------------------------------------------- */

/* Events phase one makes: executor_lost; phase two: a resubmission per map output (first), the
 * end of each frozen attempt, one revive_offers. */
static size_t phase_one_events(void) { return 1; }
static size_t phase_two_events(const tl__executor *ex, size_t nattempts) {
  return ex->noutputs + TL__ATTEMPT_ENDED_EVENTS * nattempts + TL__REVIVE_EVENTS;
}

static void freeze(struct tl_scheduler *s, tl__executor *ex, const tl_loss_reason *reason,
                   tl__str *msg, const char *static_msg) {
  while (!tl__list_empty(&ex->running)) {
    tl__attempt *a = tl__container_of(ex->running.next, tl__attempt, on_executor);
    tl__cleanup_task_state(s, a);
    tl__attempt_freeze(s, a);
  }
  tl__locality_executor_changed(s, ex, ex->state == TL_EXECUTOR_ALIVE, false);
  tl__executor_leave_host(s, ex);
  tl__exclude_executor_removed(s, ex);
  ex->was_decommissioning = ex->state == TL_EXECUTOR_DECOMMISSIONING;
  tl__list_remove(&ex->on_timeline);
  tl__executor_set_state(s, ex, TL_EXECUTOR_PENDING_LOSS);
  if (s->cfg.pending_loss_timeout_ns != 0) {
    ex->when = tl__add_sat(s->last_now, s->cfg.pending_loss_timeout_ns);
    tl__list_insert_tail(&s->pending_order, &ex->on_timeline);
  }
  s->totals.executors_lost++;

  tl__event *ev = tl__event_push(s, TL__EV_EXECUTOR_LOST);
  ev->names = tl__str_ref(ex->names);
  ev->msg = tl__str_ref(msg);
  ev->static_msg = static_msg;
  ev->u.loss.kind = (uint8_t)reason->kind;
  ev->u.loss.caused_by_app = reason->caused_by_app;
  ev->u.loss.exit_code = reason->exit_code;
  ev->u.loss.executor_ud = ex->ud;
}

static void remove_executor(struct tl_scheduler *s, tl__executor *ex, const tl_loss_reason *reason,
                            tl__str *msg, const char *static_msg) {
  bool app_fault = tl__loss_counts(ex, reason); /* ex is PENDING_LOSS: was_decommissioning */
  /* As Spark's TaskSetManager.executorLost: first the completed map outputs it held, then the
   * attempts it was running. */
  tl__outputs_resubmit(s, ex);
  while (!tl__list_empty(&ex->frozen)) {
    tl__attempt *a = tl__container_of(ex->frozen.next, tl__attempt, on_executor);
    tl__list_remove(&a->on_executor);
    ex->nfrozen--;
    a->frozen = 0;
    a->taskset->nfrozen--;
    s->nfrozen--;
    s->totals.failed++;
    tl__attempt_ended(s, a, TL_END_EXECUTOR_LOST, app_fault && a->state == TL__RUNNING, msg,
                      static_msg, NULL, NULL);
  }
  tl__executor_bury(s, ex);
  tl__event_push_revive(s);
}

/* Both phases, or the one that is due, for a loss with the given reason; msg/static_msg is the
 * message the events carry. Fails only with TL_ENOMEM, before changing anything. */
static int lose(struct tl_scheduler *s, tl__executor *ex, const tl_loss_reason *reason,
                tl__str *msg, const char *static_msg) {
  bool pending = reason->kind == TL_LOSS_PENDING;
  size_t n;
  if (ex->state == TL_EXECUTOR_PENDING_LOSS)
    n = phase_two_events(ex, ex->nfrozen);
  else
    n = phase_one_events() + (pending ? 0 : phase_two_events(ex, ex->nrunning));
  /* The records the counted failures of phase two may need for exclusion. */
  size_t nx = pending ? 0 : tl__exclude_records_for_loss(s, ex, reason);
  if (tl__events_reserve(s, n) != TL_OK || tl__exclude_reserve(s, nx) != TL_OK) {
    tl__exclude_unreserve(s);
    return TL_ENOMEM;
  }
  if (ex->state != TL_EXECUTOR_PENDING_LOSS)
    freeze(s, ex, reason, msg, static_msg);
  if (!pending)
    remove_executor(s, ex, reason, msg, static_msg);
  tl__exclude_unreserve(s);
  return TL_OK;
}

int tl__executor_lost(struct tl_scheduler *s, const char *id, const tl_loss_reason *reason) {
  tl__executor *ex = tl__executor_find(s, id);
  if (ex == NULL)
    return TL_ENOENT;
  if (ex->state == TL_EXECUTOR_REMOVED)
    return TL_EGONE;
  if (ex->state == TL_EXECUTOR_PENDING_LOSS && reason->kind == TL_LOSS_PENDING)
    return TL_OK; /* a second "reason pending" report: the loss is already under way */
  int err;
  tl__str *msg = tl__str_dup(s, reason->message, &err);
  if (err != TL_OK)
    return err;
  err = lose(s, ex, reason, msg, NULL);
  tl__str_unref(s, msg);
  return err;
}

/* ---------------------------------------------------------------------------------------------
 * Heartbeats, decommissioning, deadlines
 * ------------------------------------------------------------------------------------------- */

static int live_executor(struct tl_scheduler *s, const char *id, tl__executor **out) {
  tl__executor *ex = tl__executor_find(s, id);
  if (ex == NULL)
    return TL_ENOENT;
  if (ex->state == TL_EXECUTOR_REMOVED)
    return TL_EGONE;
  if (ex->state == TL_EXECUTOR_PENDING_LOSS)
    return TL_ESTATE;
  *out = ex;
  return TL_OK;
}

int tl__executor_heartbeat(struct tl_scheduler *s, const char *id) {
  tl__executor *ex;
  int err = live_executor(s, id, &ex);
  if (err != TL_OK)
    return err;
  ex->when = s->last_now;
  tl__list_remove(&ex->on_timeline);
  tl__list_insert_tail(&s->heartbeat_order, &ex->on_timeline);
  return TL_OK;
}

int tl__executor_decommission(struct tl_scheduler *s, const char *id, const char *message) {
  tl__executor *ex;
  int err = live_executor(s, id, &ex);
  if (err != TL_OK || ex->state == TL_EXECUTOR_DECOMMISSIONING)
    return err;
  tl__str *msg = tl__str_dup(s, message, &err);
  if (err != TL_OK)
    return err;
  ex->decommission_msg = msg;
  tl__executor_set_state(s, ex, TL_EXECUTOR_DECOMMISSIONING);
  tl__locality_executor_changed(s, ex, true, false);
  return TL_OK;
}

static const char heartbeat_message[] = "Executor heartbeat timed out.";
static const char pending_timeout_message[] =
    "No loss reason arrived within the pending-loss timeout.";

/* The time until the earliest head's deadline; one saturated at UINT64_MAX is none
 * (tl__executors_tick never runs it), and a list's head is its earliest, so no later member comes
 * either. */
uint64_t tl__executors_next_deadline(struct tl_scheduler *s, uint64_t now) {
  uint64_t due = UINT64_MAX;
  if (s->cfg.heartbeat_timeout_ns != 0 && !tl__list_empty(&s->heartbeat_order)) {
    tl__executor *ex = tl__container_of(s->heartbeat_order.next, tl__executor, on_timeline);
    due = tl__add_sat(ex->when, s->cfg.heartbeat_timeout_ns);
  }
  if (!tl__list_empty(&s->pending_order)) {
    tl__executor *ex = tl__container_of(s->pending_order.next, tl__executor, on_timeline);
    if (ex->when < due)
      due = ex->when;
  }
  if (s->cfg.tombstone_ttl_ns != 0 && !tl__list_empty(&s->tombstone_order)) {
    tl__executor *ex = tl__container_of(s->tombstone_order.next, tl__executor, on_timeline);
    uint64_t t = tl__add_sat(ex->when, s->cfg.tombstone_ttl_ns);
    if (t < due)
      due = t;
  }
  if (due == UINT64_MAX)
    return TL_TICK_NEVER;
  return due > now ? due - now : 0;
}

uint64_t tl__executors_tick(struct tl_scheduler *s, uint64_t now) {
  if (s->cfg.heartbeat_timeout_ns != 0) {
    tl_loss_reason reason = {TL_LOSS_HEARTBEAT_TIMEOUT, true, 0, NULL};
    while (!tl__list_empty(&s->heartbeat_order)) {
      tl__executor *ex = tl__container_of(s->heartbeat_order.next, tl__executor, on_timeline);
      if (!tl__due(tl__add_sat(ex->when, s->cfg.heartbeat_timeout_ns), now))
        break;
      if (lose(s, ex, &reason, NULL, heartbeat_message) != TL_OK)
        return 0; /* no memory for its events now: the next tick retries */
    }
  }
  tl_loss_reason reason = {TL_LOSS_PENDING_TIMEOUT, true, 0, NULL};
  while (!tl__list_empty(&s->pending_order)) {
    tl__executor *ex = tl__container_of(s->pending_order.next, tl__executor, on_timeline);
    if (!tl__due(ex->when, now))
      break;
    if (lose(s, ex, &reason, NULL, pending_timeout_message) != TL_OK)
      return 0;
    s->totals.pending_loss_timeouts++;
  }
  if (s->cfg.tombstone_ttl_ns != 0) {
    while (!tl__list_empty(&s->tombstone_order)) {
      tl__executor *ex = tl__container_of(s->tombstone_order.next, tl__executor, on_timeline);
      if (!tl__due(tl__add_sat(ex->when, s->cfg.tombstone_ttl_ns), now))
        break;
      tl__tombstone_evict(s, ex);
    }
  }
  return tl__executors_next_deadline(s, now);
}

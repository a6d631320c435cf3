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
#include "placement.h"
#include "resource.h"

#include <stdlib.h>

static bool same_rack(const tl__rack *rack, const char *name) {
  if (rack == NULL || name == NULL)
    return rack == NULL && name == NULL;
  return strcmp(rack->name, name) == 0;
}

/* ---------------------------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------------------------- */

/* A host and rack for an executor to join: found, or allocated and indexed by host_prepare
 * (host_unprepare undoes that), then linked by host_link. */
typedef struct host_join {
  tl__host *host;     /* found, or new_host */
  tl__rack *rack;     /* the host's rack: found, new_rack, or NULL */
  tl__host *new_host; /* allocated and indexed here, not yet linked */
  tl__rack *new_rack;
  size_t host_len, rack_len;
} host_join;

/* TL_EINVAL: the host is known with another rack; TL_ENOMEM. Nothing visible changes. */
static int host_prepare(struct tl_scheduler *s, const char *host_name, size_t host_len,
                        const char *rack_name, size_t rack_len, host_join *j) {
  *j = (host_join){NULL, NULL, NULL, NULL, host_len, rack_len};
  HASH_FIND(hh_by_name, s->hosts_by_name, host_name, host_len, j->host);
  if (j->host != NULL) {
    if (!same_rack(j->host->rack, rack_name))
      return TL_EINVAL;
    j->rack = j->host->rack;
    return TL_OK;
  }
  if (rack_name != NULL)
    HASH_FIND(hh_by_name, s->racks_by_name, rack_name, rack_len, j->rack);
  j->new_host = tl__calloc(s, 1, tl__host_size(host_len));
  if (j->new_host == NULL)
    return TL_ENOMEM;
  if (rack_name != NULL && j->rack == NULL &&
      (j->new_rack = tl__calloc(s, 1, tl__rack_size(rack_len))) == NULL)
    goto fail;
  memcpy(j->new_host->name, host_name, host_len);
  j->new_host->name[host_len] = '\0';
  j->new_host->name_len = (uint32_t)host_len;
  HASH_ADD_KEYPTR(hh_by_name, s->hosts_by_name, j->new_host->name, host_len, j->new_host);
  if (!TL__HASH_ADDED(j->new_host, hh_by_name))
    goto fail;
  if (j->new_rack != NULL) {
    memcpy(j->new_rack->name, rack_name, rack_len);
    j->new_rack->name[rack_len] = '\0';
    j->new_rack->name_len = (uint32_t)rack_len;
    HASH_ADD_KEYPTR(hh_by_name, s->racks_by_name, j->new_rack->name, rack_len, j->new_rack);
    if (!TL__HASH_ADDED(j->new_rack, hh_by_name)) {
      HASH_DELETE(hh_by_name, s->hosts_by_name, j->new_host);
      goto fail;
    }
  }
  return TL_OK;
fail:
  tl__free(s, j->new_rack, tl__rack_size(rack_len));
  tl__free(s, j->new_host, tl__host_size(host_len));
  j->new_host = NULL;
  j->new_rack = NULL;
  return TL_ENOMEM;
}

static void host_unprepare(struct tl_scheduler *s, host_join *j) {
  if (j->new_rack != NULL) {
    HASH_DELETE(hh_by_name, s->racks_by_name, j->new_rack);
    tl__free(s, j->new_rack, tl__rack_size(j->rack_len));
  }
  if (j->new_host != NULL) {
    HASH_DELETE(hh_by_name, s->hosts_by_name, j->new_host);
    tl__free(s, j->new_host, tl__host_size(j->host_len));
  }
  j->new_host = NULL;
  j->new_rack = NULL;
}

/* Links ex to the prepared host (and rack): ex->host and the host's list; not its ALIVE count,
 * which tl__locality_executor_changed keeps. */
static void host_link(struct tl_scheduler *s, tl__executor *ex, host_join *j) {
  tl__host *host = j->host;
  if (j->new_rack != NULL) {
    tl__list_init(&j->new_rack->hosts);
    j->rack = j->new_rack;
    s->nracks++;
  }
  if (j->new_host != NULL) {
    host = j->new_host;
    tl__list_init(&host->executors);
    tl__list_init(&host->on_rack);
    host->rack = j->rack;
    host->place = tl__place_find(s, TL__PLACE_HOST, host->name, host->name_len);
    if (j->rack != NULL) {
      tl__list_insert_tail(&j->rack->hosts, &host->on_rack);
      j->rack->nhosts++;
    }
    s->nhosts++;
  }
  ex->host = host;
  tl__list_insert_tail(&host->executors, &ex->on_host);
  host->nexecutors++;
  j->new_host = NULL;
  j->new_rack = NULL;
}

/* A new executor record with its names, indexed by id, its lists empty (not yet on a host or a
 * timeline); TL_ENOMEM. */
static tl__executor *executor_new(struct tl_scheduler *s, const char *id, size_t id_len,
                                  const char *host, size_t host_len, uint32_t cores) {
  char names_text[TL_ID_MAX + TL_HOST_MAX];
  memcpy(names_text, id, id_len);
  names_text[id_len] = '\0';
  memcpy(names_text + id_len + 1, host, host_len);
  tl__str *names = tl__str_new(s, names_text, id_len + 1 + host_len);
  tl__executor *ex = tl__calloc(s, 1, sizeof *ex);
  if (names == NULL || ex == NULL)
    goto fail;
  ex->names = names;
  HASH_ADD_KEYPTR(hh_by_id, s->executors_by_id, names->text, id_len, ex);
  if (!TL__HASH_ADDED(ex, hh_by_id))
    goto fail;
  tl__list_init(&ex->running);
  tl__list_init(&ex->frozen);
  tl__list_init(&ex->outputs);
  tl__list_init(&ex->on_host);
  tl__list_init(&ex->on_timeline);
  ex->cores = ex->free_cores = cores;
  return ex;
fail:
  tl__free(s, ex, sizeof *ex);
  tl__str_unref(s, names);
  return NULL;
}

int tl__executor_add(struct tl_scheduler *s, const tl_executor_desc *d) {
  size_t id_len = strlen(d->id), host_len = strlen(d->host);
  size_t rack_len = d->rack != NULL ? strlen(d->rack) : 0;

  tl__executor *ex = tl__executor_find(s, d->id);
  if (ex != NULL)
    return ex->state == TL_EXECUTOR_REMOVED ? TL_EGONE : TL_EEXIST;
  /* Allocate everything, then index it (undoing on failure), then link: nothing visible
   * changes unless the whole registration succeeds. */
  host_join j;
  int err = host_prepare(s, d->host, host_len, d->rack, rack_len, &j);
  if (err != TL_OK)
    return err;
  tl__eresources *res = NULL;
  if (tl__res_executor_new(s, d->resources, d->nresources, &res) != TL_OK ||
      tl__events_reserve(s, 1) != TL_OK ||
      (ex = executor_new(s, d->id, id_len, d->host, host_len, d->cores)) == NULL) {
    tl__res_executor_free(s, res);
    host_unprepare(s, &j);
    return TL_ENOMEM;
  }
  host_link(s, ex, &j);
  ex->ud = d->ud;
  ex->profile = d->profile;
  ex->res = res;
  ex->state = TL_EXECUTOR_ALIVE;
  s->nalive++;
  ex->place = tl__place_find(s, TL__PLACE_EXECUTOR, d->id, id_len);
  tl__locality_executor_changed(s, ex, false, true);
  ex->when = s->last_now; /* registration counts as a heartbeat */
  tl__list_insert_tail(&s->heartbeat_order, &ex->on_timeline);

  tl__exclude_executor_added(s, ex);
  if (s->nplace_timers > 0) /* a task set placed only where nothing lived may run here */
    tl__placement_executor_added(s, ex);

  tl__event *ev = tl__event_push(s, TL__EV_EXECUTOR_ADDED);
  ev->names = tl__str_ref(ex->names);
  return TL_OK;
}

int tl__executor_restore_add(struct tl_scheduler *s, const char *id, size_t id_len,
                             const char *host, size_t host_len, const char *rack, size_t rack_len,
                             uint32_t cores, tl_executor_state state, tl__executor **out) {
  if (tl__executor_find_len(s, id, id_len) != NULL)
    return TL_EEXIST;
  bool live = state == TL_EXECUTOR_ALIVE || state == TL_EXECUTOR_DECOMMISSIONING;
  host_join j;
  if (live) {
    int err = host_prepare(s, host, host_len, rack, rack_len, &j);
    if (err != TL_OK)
      return err;
  }
  tl__executor *ex = executor_new(s, id, id_len, host, host_len, cores);
  if (ex == NULL) {
    if (live)
      host_unprepare(s, &j);
    return TL_ENOMEM;
  }
  ex->state = TL_EXECUTOR_REMOVED;
  s->ntombstones++;
  tl__executor_set_state(s, ex, state);
  if (live) {
    host_link(s, ex, &j);
    if (state == TL_EXECUTOR_ALIVE)
      tl__locality_executor_changed(s, ex, false, true); /* no place yet: the host's count */
  }
  *out = ex;
  return TL_OK;
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
 * two to a later call or to pending_loss_timeout_ns. executor_lost is made at phase one, with
 * the reason it began with; executor_removed at the end of phase two, with the reason it ended
 * with, so a runtime learns each loss's final reason from one event, whichever call or timeout
 * completed it.
 * ------------------------------------------------------------------------------------------- */

/* Events phase one makes: executor_lost; phase two: a resubmission per map output (first), the
 * end of each frozen attempt, executor_removed, one revive_offers. */
static size_t phase_one_events(void) { return 1; }
static size_t phase_two_events(const tl__executor *ex, size_t nattempts) {
  return ex->noutputs + TL__ATTEMPT_ENDED_EVENTS * nattempts + 1 + TL__REVIVE_EVENTS;
}

/* executor_lost or executor_removed of ex, with reason (msg/static_msg its message). */
static void push_loss_event(struct tl_scheduler *s, tl__event_kind kind, const tl__executor *ex,
                            const tl_loss_reason *reason, tl__str *msg, const char *static_msg) {
  tl__event *ev = tl__event_push(s, kind);
  ev->names = tl__str_ref(ex->names);
  ev->msg = tl__str_ref(msg);
  ev->static_msg = static_msg;
  ev->u.loss.kind = (uint8_t)reason->kind;
  ev->u.loss.caused_by_app = reason->caused_by_app;
  ev->u.loss.exit_code = reason->exit_code;
  ev->u.loss.executor_ud = ex->ud;
}

/* What the first phase of a loss and a restore's recovery share: the running attempts frozen,
 * the executor out of its host, its place no longer alive, its exclusion failures dropped. */
static void freeze_attempts(struct tl_scheduler *s, tl__executor *ex) {
  while (!tl__list_empty(&ex->running)) {
    tl__attempt *a = tl__container_of(ex->running.next, tl__attempt, on_executor);
    tl__cleanup_task_state(s, a);
    tl__attempt_freeze(s, a);
  }
  tl__locality_executor_changed(s, ex, ex->state == TL_EXECUTOR_ALIVE, false);
  tl__executor_leave_host(s, ex);
  tl__exclude_executor_removed(s, ex);
  ex->was_decommissioning = ex->state == TL_EXECUTOR_DECOMMISSIONING;
}

/* The recovery hold (docs/snapshot.md "Recovery") ends with the last RECOVERING executor: what it
 * held may launch now. */
static void recovery_maybe_over(struct tl_scheduler *s) {
  if (s->restore_hold && s->nrecovering == 0) {
    s->restore_hold = false;
    if (s->npending_tasks + s->nspeculatable > 0)
      s->revive_wanted = true;
  }
}

/* Phase one: ALIVE, DECOMMISSIONING or RECOVERING (whose attempts are frozen already) to
 * PENDING_LOSS, with the executor_lost event. */
static void freeze(struct tl_scheduler *s, tl__executor *ex, const tl_loss_reason *reason,
                   tl__str *msg, const char *static_msg) {
  if (ex->state == TL_EXECUTOR_RECOVERING) {
    tl__str_unref(s, ex->rack);
    ex->rack = NULL;
  } else {
    freeze_attempts(s, ex);
  }
  tl__list_remove(&ex->on_timeline);
  tl__executor_set_state(s, ex, TL_EXECUTOR_PENDING_LOSS);
  if (s->cfg.pending_loss_timeout_ns != 0) {
    ex->when = tl__add_sat(s->last_now, s->cfg.pending_loss_timeout_ns);
    tl__list_insert_tail(&s->pending_order, &ex->on_timeline);
  }
  s->totals.executors_lost++;
  push_loss_event(s, TL__EV_EXECUTOR_LOST, ex, reason, msg, static_msg);
}

/* Phase two: PENDING_LOSS to a tombstone (or forgotten, past max_tombstones), with the ends of
 * its outputs and attempts, then executor_removed (made before the burial, which may free ex) and
 * revive_offers. */
static void remove_executor(struct tl_scheduler *s, tl__executor *ex, const tl_loss_reason *reason,
                            tl__str *msg, const char *static_msg) {
  bool app_fault = tl__loss_counts(ex, reason); /* ex is PENDING_LOSS: was_decommissioning */
  /* As Spark's TaskSetManager.executorLost: first the completed map outputs it held, then the
   * attempts it was running. */
  tl__outputs_resubmit(s, ex);
  while (!tl__list_empty(&ex->frozen)) {
    tl__attempt *a = tl__container_of(ex->frozen.next, tl__attempt, on_executor);
    tl__attempt_thaw(s, a);
    s->totals.failed++;
    tl__attempt_ended(s, a, TL_END_EXECUTOR_LOST, app_fault && a->state == TL__RUNNING, msg,
                      static_msg, NULL, NULL);
  }
  if (s->cb.executor_removed != NULL) /* an event nobody listens to is not made */
    push_loss_event(s, TL__EV_EXECUTOR_REMOVED, ex, reason, msg, static_msg);
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
    n = phase_one_events() + (pending ? 0 : phase_two_events(ex, ex->nrunning + ex->nfrozen));
  if (pending && ex->state == TL_EXECUTOR_RECOVERING)
    n += TL__REVIVE_EVENTS; /* the last recovering executor's loss ends the recovery hold */
  /* The records the counted failures of phase two may need for exclusion. */
  size_t nx = pending ? 0 : tl__exclude_records_for_loss(s, ex, reason);
  if (tl__events_reserve(s, n) != TL_OK || tl__exclude_reserve(s, nx) != TL_OK) {
    tl__exclude_unreserve(s);
    return TL_ENOMEM;
  }
  if (ex->state != TL_EXECUTOR_PENDING_LOSS) {
    freeze(s, ex, reason, msg, static_msg);
    recovery_maybe_over(s);
  }
  if (!pending)
    remove_executor(s, ex, reason, msg, static_msg); /* pushes revive_offers */
  else
    tl__event_push_revive(s);
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
  if (ex->state == TL_EXECUTOR_PENDING_LOSS || ex->state == TL_EXECUTOR_RECOVERING)
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
  ex->decommission_time = s->last_now;
  tl__executor_set_state(s, ex, TL_EXECUTOR_DECOMMISSIONING);
  tl__locality_executor_changed(s, ex, true, false);
  return TL_OK;
}

static const char heartbeat_message[] = "Executor heartbeat timed out.";
static const char pending_timeout_message[] =
    "No loss reason arrived within the pending-loss timeout.";
static const char recovery_timeout_message[] =
    "The executor did not reconcile within the recovery timeout.";

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
  if (!tl__list_empty(&s->recovery_order)) {
    tl__executor *ex = tl__container_of(s->recovery_order.next, tl__executor, on_timeline);
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
  tl_loss_reason recovery = {TL_LOSS_RECOVERY_TIMEOUT, false, 0, NULL};
  while (!tl__list_empty(&s->recovery_order)) {
    tl__executor *ex = tl__container_of(s->recovery_order.next, tl__executor, on_timeline);
    if (!tl__due(ex->when, now))
      break;
    if (lose(s, ex, &recovery, NULL, recovery_timeout_message) != TL_OK)
      return 0;
    s->totals.recovery_timeouts++;
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

/* ---------------------------------------------------------------------------------------------
 * Recovery after a restore, and reconciliation
 *
 * A restored executor that was running is RECOVERING: frozen as by the first phase of a loss,
 * but silently (no executor_lost: nothing is lost yet) and with the rack it rejoins kept. Its
 * reconciliation is a registration that keeps the attempts the executor still has: those go back
 * into the tid index, the rest end as lost without counting (the executor did not fail them: the
 * driver did), and what it has that the ledger does not is killed.
 * ------------------------------------------------------------------------------------------- */

int tl__executor_recover(struct tl_scheduler *s, tl__executor *ex) {
  tl__str *rack = NULL;
  const tl__rack *r = ex->host->rack;
  if (r != NULL && (rack = tl__str_new(s, r->name, r->name_len)) == NULL)
    return TL_ENOMEM;
  freeze_attempts(s, ex);
  tl__list_remove(&ex->on_timeline);
  tl__executor_set_state(s, ex, TL_EXECUTOR_RECOVERING);
  ex->rack = rack;
  if (s->cfg.recovery_timeout_ns != 0) {
    ex->when = tl__add_sat(s->last_now, s->cfg.recovery_timeout_ns);
    tl__list_insert_tail(&s->recovery_order, &ex->on_timeline);
  }
  return TL_OK;
}

/* A reported attempt, among the report sorted by tid (then by its place in the report). */
enum { R_KILL, R_KEEP, R_CANDIDATE, R_ADOPT, R_MIXED };
typedef struct reported {
  tl_tid tid;
  size_t at;        /* its first item in the report */
  tl__attempt *a;   /* R_CANDIDATE: the record an adoption takes */
  tl__tried *tried; /* and, with speculation, its host record */
  uint8_t fate;     /* R_*: killed, kept (frozen here), adoptable, adopted, or its items disagree */
} reported;

static int reported_cmp(const void *a, const void *b) {
  const reported *x = a, *y = b;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Whether tid is among the n sorted, distinct reports; *at its position. */
static bool tid_search(const reported *r, size_t n, tl_tid tid, size_t *at) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].tid < tid)
      lo = mid + 1;
    else
      hi = mid;
  }
  *at = lo;
  return lo < n && r[lo].tid == tid;
}

static bool items_agree(const tl_reconcile_item *x, const tl_reconcile_item *y) {
  return x->taskset == y->taskset && x->index == y->index && x->attempt == y->attempt &&
         x->speculative == y->speculative;
}

/* Whether the frozen attempt a is what the item says (tids only: always). */
static bool item_is(const tl_reconcile_item *it, const tl__attempt *a) {
  return it == NULL ||
         (it->taskset == a->taskset->id && it->index == a->index && it->attempt == a->attempt);
}

/* Adoption's rule (docs/snapshot.md "Adoption"), but for the cores and, with full false, for
 * what the ends of this reconciliation may still change (the copies in flight): the task set
 * it would join, or NULL. A tid below the image's next tid was in the image (frozen somewhere)
 * or ended before it; one between the restore's next tid and the next tid now this scheduler
 * gave out itself. */
static tl__taskset *adoptable(struct tl_scheduler *s, const tl__executor *ex,
                              const tl_reconcile_item *it, bool full) {
  tl_tid tid = it->tid;
  if (tid < s->restored_tid_lo || tid == UINT64_MAX ||
      (tid >= s->restored_tid_hi && tid < s->next_tid) || tl__attempt_find(s, tid) != NULL)
    return NULL;
  tl__taskset *ts = tl__taskset_find(s, it->taskset);
  /* Nor a task set that asks for resources: which addresses the attempt holds is not known;
   * nor one of another profile than the executor's, which no launch could have made. */
  if (ts == NULL || !ts->restored || ts->zombie || ts->barrier || ts->req != NULL ||
      ts->profile != ex->profile || it->index >= ts->ntasks)
    return NULL;
  const tl__index *ix = &ts->idx[it->index];
  if ((ix->flags & TL__IDX_SUCCESSFUL) || it->attempt < ix->attempts || it->attempt == UINT32_MAX)
    return NULL;
  if (!full || (ix->flags & TL__IDX_PENDING))
    return ts;
  /* A second copy: launched after the image as a speculative copy, or as the retry of a copy
   * whose end the ledger has not applied yet (it comes as a status update). */
  if (ts->first == NULL || ix->copies_running != 1 || ts->first[it->index]->killed_by_other)
    return NULL;
  if (it->speculative) {
    const char *host = tl__names_host(ex->names);
    for (const tl__tried *t = ts->tried[it->index]; t != NULL; t = t->next)
      if (strcmp(tl__names_host(t->names), host) == 0)
        return NULL;
  }
  return ts;
}

static const char reconcile_lost_message[] = "Not reported by the executor when it reconciled.";
static const char reconcile_kill_message[] = "Unknown to the restored driver";

/* The records prepared for candidates that were not adopted (all of them: undo). */
static void drop_candidates(struct tl_scheduler *s, reported *r, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (r[i].fate != R_CANDIDATE)
      continue;
    if (r[i].a != NULL)
      tl__free(s, r[i].a, sizeof *r[i].a);
    if (r[i].tried != NULL)
      tl__free(s, r[i].tried, sizeof *r[i].tried);
    r[i].a = NULL;
    r[i].tried = NULL;
  }
}

/* Whether a kept attempt's end is held by its executor: reported ended now, or at an earlier
 * reconciliation (an end held once is never running again). */
static bool held_end(const tl__attempt *a, const tl_reconcile_item *items, const reported *r) {
  return a->end_held || (items != NULL && items[r->at].ended);
}

int tl__executor_reconcile(struct tl_scheduler *s, const char *id, const tl_tid *running,
                           const tl_reconcile_item *items, size_t n, tl_tid *unknown, size_t ucap,
                           size_t *nunknown) {
  tl__executor *ex = tl__executor_find(s, id);
  if (ex == NULL)
    return TL_ENOENT;
  if (ex->state == TL_EXECUTOR_REMOVED)
    return TL_EGONE;
  if (ex->state != TL_EXECUTOR_RECOVERING)
    return TL_ESTATE;

  /* The report, sorted by tid and distinct: of each tid its first item, marked R_MIXED when a
   * later one disagrees. */
  reported *r = NULL;
  size_t bytes = 0;
  if (n != 0) {
    if (n > SIZE_MAX / sizeof *r)
      return TL_ENOMEM;
    bytes = n * sizeof *r;
    if ((r = tl__malloc(s, bytes)) == NULL)
      return TL_ENOMEM;
    for (size_t i = 0; i < n; i++)
      r[i] = (reported){items != NULL ? items[i].tid : running[i], i, NULL, NULL, R_KILL};
    qsort(r, n, sizeof *r, reported_cmp);
  }
  size_t distinct = 0;
  for (size_t i = 0; i < n; i++) {
    if (distinct == 0 || r[distinct - 1].tid != r[i].tid)
      r[distinct++] = r[i];
    else if (items != NULL && !items_agree(&items[r[distinct - 1].at], &items[r[i].at]))
      r[distinct - 1].fate = R_MIXED;
  }
  /* What it keeps, in launch order, while its cores last: an attempt whose end it holds (now,
   * or at an earlier reconciliation) runs nothing there and takes none. */
  size_t kept = 0, lost = 0;
  uint32_t room = ex->free_cores;
  for (tl__link *l = ex->frozen.next; l != &ex->frozen; l = l->next) {
    const tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
    size_t at;
    if (tid_search(r, distinct, a->tid, &at) && r[at].fate == R_KILL &&
        item_is(items != NULL ? &items[r[at].at] : NULL, a) &&
        (held_end(a, items, &r[at]) || a->taskset->cpus <= room)) {
      if (!held_end(a, items, &r[at]))
        room -= a->taskset->cpus;
      r[at].fate = R_KEEP;
      kept++;
    } else {
      lost++;
    }
  }
  size_t ncandidates = 0;
  for (size_t i = 0; items != NULL && i < distinct; i++) {
    if (r[i].fate == R_KILL && adoptable(s, ex, &items[r[i].at], false) != NULL) {
      r[i].fate = R_CANDIDATE;
      ncandidates++;
    }
  }

  host_join j;
  const char *rack = ex->rack != NULL ? ex->rack->text : NULL;
  const char *host = tl__names_host(ex->names);
  /* The ends, a task_started per adoption, a kill per tid neither kept nor adopted. */
  int err = tl__events_reserve(s, TL__ATTEMPT_ENDED_EVENTS * lost + ncandidates +
                                      (distinct - kept) + TL__REVIVE_EVENTS);
  /* Records for the candidates: fresh ones (a failure frees them, leaving the spares as they
   * were), and with speculation a host record each. */
  for (size_t i = 0; i < distinct && err == TL_OK; i++) {
    if (r[i].fate != R_CANDIDATE)
      continue;
    if ((r[i].a = tl__malloc(s, sizeof *r[i].a)) == NULL) {
      err = TL_ENOMEM;
    } else if (tl__taskset_find(s, items[r[i].at].taskset)->tried != NULL &&
               (r[i].tried = tl__malloc(s, sizeof *r[i].tried)) == NULL) {
      err = TL_ENOMEM;
    }
  }
  /* An executor registered on its host during the recovery decided the host's rack: it joins
   * that one (a host has one rack). */
  size_t host_len = strlen(host), rack_len = rack != NULL ? ex->rack->len : 0;
  tl__host *known;
  HASH_FIND(hh_by_name, s->hosts_by_name, host, host_len, known);
  if (known != NULL) {
    rack = known->rack != NULL ? known->rack->name : NULL;
    rack_len = known->rack != NULL ? known->rack->name_len : 0;
  }
  bool prepared = false;
  if (err == TL_OK && (err = host_prepare(s, host, host_len, rack, rack_len, &j)) == TL_OK)
    prepared = true;
  /* Last: a failure here leaves attempts_by_tid as it was. The tids linked are among those kept
   * and the candidates (r is in tid order). */
  tl_tid lo = 0, hi = 0;
  for (size_t i = 0; i < distinct; i++) {
    if (r[i].fate == R_KEEP || r[i].fate == R_CANDIDATE) {
      if (lo == 0)
        lo = r[i].tid;
      hi = r[i].tid;
    }
  }
  if (err == TL_OK)
    err = tl__attempts_reserve(s, kept + ncandidates, lo, hi);
  if (err != TL_OK) {
    if (prepared)
      host_unprepare(s, &j);
    drop_candidates(s, r, distinct);
    tl__free(s, r, bytes);
    return err; /* TL_ENOMEM: the rack agrees with the host's by now */
  }

  /* Back on its host, in its state of before the restore. */
  host_link(s, ex, &j);
  tl__str_unref(s, ex->rack);
  ex->rack = NULL;
  tl__list_remove(&ex->on_timeline);
  tl_executor_state state =
      ex->was_decommissioning ? TL_EXECUTOR_DECOMMISSIONING : TL_EXECUTOR_ALIVE;
  tl__executor_set_state(s, ex, state);
  ex->was_decommissioning = false;
  tl__locality_executor_changed(s, ex, false, state == TL_EXECUTOR_ALIVE);
  ex->when = s->last_now;
  tl__list_insert_tail(&s->heartbeat_order, &ex->on_timeline);
  tl__exclude_executor_added(s, ex);
  if (s->nplace_timers > 0 && state == TL_EXECUTOR_ALIVE)
    tl__placement_executor_added(s, ex);

  /* Its attempts, in launch order: what it reported runs on, the rest ends. */
  for (tl__link *l = ex->frozen.next, *next; l != &ex->frozen; l = next) {
    next = l->next;
    tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
    tl__attempt_thaw(s, a);
    size_t at;
    if (tid_search(r, distinct, a->tid, &at) && r[at].fate == R_KEEP) {
      a->end_held = held_end(a, items, &r[at]);
      tl__attempt_link(s, a);
    } else {
      s->totals.failed++;
      s->totals.reconcile_lost++;
      tl__attempt_ended(s, a, TL_END_EXECUTOR_LOST, false, NULL, reconcile_lost_message, NULL,
                        NULL);
    }
  }
  /* What it has that the ledger does not hold: adopted in tid order (launch order) while the
   * rule allows, with the ends above applied. */
  size_t adopted = 0;
  for (size_t i = 0; i < distinct; i++) {
    if (r[i].fate != R_CANDIDATE)
      continue;
    const tl_reconcile_item *it = &items[r[i].at];
    tl__taskset *ts = adoptable(s, ex, it, true);
    if (ts == NULL || (!it->ended && ts->cpus > ex->free_cores))
      continue; /* killed below */
    tl__attempt *a = r[i].a;
    a->tid = it->tid;
    a->executor = ex;
    a->taskset = ts;
    a->launch_time = s->last_now;
    a->index = it->index;
    a->attempt = it->attempt;
    a->state = TL__RUNNING;
    a->frozen = 0;
    a->locality = (uint8_t)tl__locality_of(s, ts, it->index, ex);
    a->speculative = it->speculative;
    a->killed_by_other = 0;
    a->end_held = it->ended; /* its end comes next, as an update: no cores */
    a->grants = NULL;        /* never a task set with requests (adoptable) */
    tl__list_init(&a->on_executor);
    tl__list_init(&a->on_taskset);
    tl__taskset_adopt(s, ts, a, r[i].tried);
    tl__attempt_link(s, a);
    if (it->tid >= s->next_tid)
      s->next_tid = it->tid + 1;
    r[i].fate = R_ADOPT;
    r[i].a = NULL;
    r[i].tried = NULL;
    adopted++;
    if (s->cb.task_started != NULL) /* an event nobody listens to is not made */
      tl__event_task_started(s, a);
  }
  drop_candidates(s, r, distinct);
  tl__attempts_unreserve(s); /* room reserved for candidates that were not adopted */
  /* The rest: killed. */
  size_t k = 0;
  for (size_t i = 0; i < distinct; i++) {
    if (r[i].fate == R_KEEP || r[i].fate == R_ADOPT)
      continue;
    if (k < ucap)
      unknown[k] = r[i].tid;
    k++;
    tl__event *ev = tl__event_push(s, TL__EV_KILL_TASK);
    ev->names = tl__str_ref(ex->names);
    ev->static_msg = reconcile_kill_message;
    ev->u.kill.tid = r[i].tid;
    ev->u.kill.interrupt = true;
    ev->u.kill.executor_ud = ex->ud;
  }
  *nunknown = k;
  s->totals.reconcile_unknown += k;
  s->totals.reconcile_adopted += adopted;
  s->totals.launched += adopted;
  s->totals.reconciled++;
  recovery_maybe_over(s);
  tl__event_push_revive(s);
  tl__free(s, r, bytes);
  return TL_OK;
}

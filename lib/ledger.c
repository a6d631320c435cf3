/* The tid index and the one cleanup routine, and the status-update path that uses it.
 *
 * attempts_by_tid holds every running attempt; each is also on its executor's running list and
 * its task set's running list. tl__cleanup_task_state is the only way out of the first two: the
 * status-update path and the executor-loss path both call it (the lesson of SPARK-18553: a map
 * cleaned only by status updates leaks every task of an executor that dies without one).
 *
 * Everything here runs under the scheduler's lock.
 */
#include "internal.h"

tl__attempt *tl__attempt_find(struct tl_scheduler *s, tl_tid tid) {
  tl__attempt *a;
  HASH_FIND(hh_by_tid, s->attempts_by_tid, &tid, sizeof tid, a);
  return a;
}

void tl__cleanup_task_state(struct tl_scheduler *s, tl__attempt *a) {
  tl__executor *ex = a->executor;
  HASH_DELETE(hh_by_tid, s->attempts_by_tid, a);
  tl__list_remove(&a->on_executor);
  ex->nrunning--;
  ex->free_cores += a->taskset->cpus;
}

void tl__attempt_freeze(struct tl_scheduler *s, tl__attempt *a) {
  tl__executor *ex = a->executor;
  tl__list_insert_tail(&ex->frozen, &a->on_executor);
  ex->nfrozen++;
  a->frozen = 1;
  a->taskset->nfrozen++;
  s->nfrozen++;
}

void tl__attempt_free(struct tl_scheduler *s, tl__attempt *a) { tl__free(s, a, sizeof *a); }

/* Status updates.
 *
 * Errors are checked in the documented order, and nothing is changed before the last check
 * that can fail (the message copy and the event room come before the cleanup). RUNNING only
 * flips LAUNCHING to RUNNING, which decides whether a later executor loss counts (SPARK-39955).
 * A terminal state cleans the scheduler's indexes at once and hands the attempt to its task
 * set, whose handler is the only place that decides success, retry or abort. */
int tl__status_update(struct tl_scheduler *s, const char *executor_id, tl_tid tid,
                      const tl_update *u) {
  tl__executor *ex = tl__executor_find(s, executor_id);
  if (ex == NULL)
    return TL_ENOENT;
  if (ex->state == TL_EXECUTOR_REMOVED)
    return TL_EGONE;
  tl__attempt *a = tl__attempt_find(s, tid);
  if (a == NULL) {
    s->totals.stale_updates++;
    return TL_ESTALE;
  }
  if (a->executor != ex) {
    s->totals.rejected_updates++;
    return TL_EOWNER;
  }
  if (u->state == TL_TASK_RUNNING) {
    a->state = TL__RUNNING;
    return TL_OK;
  }

  int err;
  tl__str *msg = tl__str_dup(s, u->message, &err);
  if (err != TL_OK)
    return err;
  /* A success that completes a map output of an active shuffle-map task set is remembered on
   * its executor, so that losing the executor runs the index again. */
  tl__output *out = NULL;
  if (u->state == TL_TASK_FINISHED && tl__taskset_wants_output(a->taskset, a) &&
      (out = tl__malloc(s, sizeof *out)) == NULL) {
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  /* A first success with the median heap full (indices run again after their map output was
   * lost) needs a bigger one. */
  size_t room_bytes = u->state == TL_TASK_FINISHED ? tl__speculation_room(a->taskset, a) : 0;
  uint64_t *room = NULL;
  if (room_bytes != 0 && (room = tl__malloc(s, room_bytes)) == NULL) {
    tl__free(s, out, sizeof *out);
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  /* task_ended, kill_task (another copy), taskset_failed, taskset_released, revive_offers;
   * and the records a counted failure needs for exclusion. */
  bool may_count = u->state == TL_TASK_FAILED &&
                   (u->failure == TL_END_EXCEPTION || u->failure == TL_END_RESULT_LOST);
  if (tl__events_reserve(s, 5) != TL_OK ||
      tl__exclude_reserve(s, may_count ? tl__exclude_records_for(s, a->taskset, ex, a->index)
                                       : 0) != TL_OK) {
    tl__exclude_unreserve(s);
    tl__free(s, room, room_bytes);
    tl__free(s, out, sizeof *out);
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  if (room != NULL)
    tl__speculation_grow(s, a->taskset, room, room_bytes);

  tl_end_kind kind;
  const char *static_msg = NULL;
  switch (u->state) {
  case TL_TASK_FINISHED:
    if (a->killed_by_other && (a->taskset->idx[a->index].flags & TL__IDX_SUCCESSFUL)) {
      /* SPARK-13343: another copy won; this result is not taken and does not count. */
      kind = TL_END_KILLED;
      static_msg = "Finish but did not commit: another attempt succeeded.";
      s->totals.killed++;
      break;
    }
    kind = tl__taskset_take_result(s, a->taskset, u->result_size);
    if (kind == TL_END_SUCCESS)
      s->totals.succeeded++;
    else
      s->totals.failed++;
    break;
  case TL_TASK_KILLED:
    kind = TL_END_KILLED;
    s->totals.killed++;
    break;
  default:
    kind = u->failure;
    if (kind == TL_END_KILLED)
      s->totals.killed++;
    else
      s->totals.failed++;
    break;
  }
  tl__cleanup_task_state(s, a);
  tl__attempt_ended(s, a, kind, kind == TL_END_EXCEPTION || kind == TL_END_RESULT_LOST,
                    static_msg != NULL ? NULL : msg, static_msg, u, out);
  tl__event_push_revive(s);
  tl__exclude_unreserve(s);
  tl__str_unref(s, msg);
  return TL_OK;
}

/* Status updates: the transition a report of an attempt's state makes, one at a time or in a
 * batch of one executor's (the entry layer applies a batch under one lock, update by update).
 *
 * Everything here runs under the scheduler's lock.
 */
#include "internal.h"

/* Status updates.
 *
 * Errors are checked in the documented order, and nothing is changed before the last check
 * that can fail (the message copy and the event room come before the cleanup). RUNNING only
 * flips LAUNCHING to RUNNING, which decides whether a later executor loss counts (SPARK-39955).
 * A terminal state cleans the scheduler's indexes at once and hands the attempt to its task
 * set, whose handler is the only place that decides success, retry or abort. */
int tl__status_update(struct tl_scheduler *s, const char *executor_id, size_t id_len, tl_tid tid,
                      const tl_update *u) {
  tl__executor *ex;
  int err = tl__status_executor(s, executor_id, id_len, &ex);
  return err != TL_OK ? err : tl__status_apply(s, ex, tid, u);
}

int tl__status_executor(struct tl_scheduler *s, const char *executor_id, size_t id_len,
                        tl__executor **out) {
  tl__executor *ex = tl__executor_find_len(s, executor_id, id_len);
  if (ex == NULL)
    return TL_ENOENT;
  if (ex->state == TL_EXECUTOR_REMOVED)
    return TL_EGONE;
  *out = ex;
  return TL_OK;
}

int tl__status_apply(struct tl_scheduler *s, tl__executor *ex, tl_tid tid, const tl_update *u) {
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

  int err = TL_OK;
  tl__str *msg = u->message != NULL ? tl__str_dup(s, u->message, &err) : NULL;
  if (err != TL_OK)
    return err;
  /* A success that completes a map output of an active shuffle-map task set is remembered on
   * its executor, so that losing the executor runs the index again. */
  tl__output *out = NULL;
  if (u->state == TL_TASK_FINISHED && a->taskset->shuffle_map &&
      tl__taskset_wants_output(a->taskset, a) && (out = tl__malloc(s, sizeof *out)) == NULL) {
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  /* A first success with the median heap full (indices run again after their map output was
   * lost) needs a bigger one. */
  size_t room_bytes = u->state == TL_TASK_FINISHED && a->taskset->heap != NULL
                          ? tl__speculation_room(a->taskset, a)
                          : 0;
  uint64_t *room = NULL;
  if (room_bytes != 0 && (room = tl__malloc(s, room_bytes)) == NULL) {
    tl__free(s, out, sizeof *out);
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  /* The events the end of the attempt makes, and the revive_offers after it; and the records a
   * counted failure needs for exclusion. */
  bool may_count = u->state == TL_TASK_FAILED &&
                   (u->failure == TL_END_EXCEPTION || u->failure == TL_END_RESULT_LOST);
  if (tl__events_reserve(s, TL__ATTEMPT_ENDED_EVENTS + TL__REVIVE_EVENTS) != TL_OK ||
      (may_count &&
       tl__exclude_reserve(s, tl__exclude_records_for(s, a->taskset, ex, a->index)) != TL_OK)) {
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
  if (s->x.spare != NULL) /* records the call reserved and did not use */
    tl__exclude_unreserve(s);
  tl__str_unref(s, msg);
  return TL_OK;
}

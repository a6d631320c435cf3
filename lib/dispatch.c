/* The serial dispatcher: it delivers what the event queue (queue.c) holds, outside the lock.
 *
 * A public call makes its events under the scheduler's lock, into s->events, with room reserved
 * before it changes anything (so a push cannot fail halfway through a transition). When the call
 * is done it releases the lock and, unless some thread is already dispatching, becomes the
 * dispatcher: it swaps the queue with s->batch, releases the lock, calls the callbacks for the
 * batch in order, and gives up dispatching unless more was queued meanwhile (then it takes the
 * lock again and delivers that too). Events made meanwhile (by callbacks re-entering the
 * library, or by other threads) land in the queue and are delivered by the same dispatcher after
 * the batch, so every event is delivered exactly once, in the order made, and never under the
 * lock. The references a delivered batch still holds are dropped by the next taking of the lock
 * (tl__lock).
 *
 * With deferred delivery (tl_config.delivery) calls only queue: the first call to queue
 * something after the queue was last taken makes the wake-up (events_ready, or the libuv
 * driver's ready hook), and tl_dispatch becomes the dispatcher for what is queued when it takes
 * the lock. Everything else is the same loop.
 *
 * Journal lines (journal.c) travel the same way: queued under the lock, written by the
 * dispatcher before the events of the same round, so they keep the order the calls took the
 * lock. A failed call makes no event but may have a journal line; that is all it delivers.
 *
 * Lock: s->lock protects events, journal and, while no thread dispatches, batch, journal_batch
 * and batch_dirty. While dispatch_state has TL__DISPATCHING those three are the dispatcher's,
 * read and written without the lock. dispatch_state is atomic: set to DISPATCHING and MORE only
 * under the lock, cleared to 0 only by the dispatcher (release), read with acquire before
 * anyone touches a batch the dispatcher left. batch_delivered is atomic.
 */
#include "internal.h"
#include "journal.h"
#include "resource.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static const char *event_message(const tl__event *ev) {
  return ev->msg != NULL ? ev->msg->text : ev->static_msg;
}

static void task_info_of(const tl__event *ev, tl_task_info *info) {
  info->tid = ev->u.task.tid;
  info->taskset = ev->u.task.taskset;
  info->stage_id = ev->u.task.stage_id;
  info->stage_attempt = ev->u.task.stage_attempt;
  info->index = ev->u.task.index;
  info->attempt = ev->u.task.attempt;
  info->executor_id = ev->names->text;
  info->host = ev->names->text + ev->host_at;
  info->locality = (tl_locality)ev->locality;
  info->speculative = ev->speculative;
  info->payload = ev->u.task.payload;
  info->executor_ud = ev->u.task.executor_ud;
  info->grants = ev->grants != NULL ? ev->grants->g : NULL;
  info->ngrants = ev->grants != NULL ? ev->grants->n : 0;
}

/* The reason of taskset_failed is composed here, outside the lock, from what the event kept:
 * nothing had to be allocated when the task set was aborted. */
static void taskset_failed_reason(const struct tl_scheduler *s, const tl__event *ev, char *buf,
                                  size_t len) {
  const char *msg = event_message(ev);
  int n;
  if (ev->u.ts.why == TL__FAIL_RESULT_SIZE)
    n = snprintf(buf, len,
                 "Total size of the results of %u tasks (%" PRIu64 " bytes) is bigger than "
                 "max_result_bytes (%" PRIu64 " bytes)",
                 ev->u.ts.failures, ev->u.ts.bytes, s->cfg.max_result_bytes);
  else if (ev->u.ts.why == TL__FAIL_UNSCHEDULABLE)
    n = snprintf(buf, len,
                 "Aborting task set %u.%u because task %u cannot run anywhere due to node and "
                 "executor exclusion (exclude_on_failure); most recent failure: %s",
                 ev->u.ts.info.stage_id, ev->u.ts.info.stage_attempt, ev->u.ts.index,
                 msg != NULL ? msg : "(no message)");
  else if (ev->u.ts.why == TL__FAIL_NO_RESOURCES)
    n = snprintf(buf, len,
                 "Aborting task set %u.%u because no live executor of resource profile %u can "
                 "run its tasks (their cores and resources; tl_explain_taskset says what is "
                 "missing)",
                 ev->u.ts.info.stage_id, ev->u.ts.info.stage_attempt, ev->u.ts.index);
  else if (ev->u.ts.why == TL__FAIL_NOT_RETRIED)
    n = snprintf(buf, len, "Task %u in stage %u.%u failed and is not retried: %s",
                 ev->u.ts.index, ev->u.ts.info.stage_id, ev->u.ts.info.stage_attempt,
                 msg != NULL ? msg : "(no message)");
  else if (ev->u.ts.why == TL__FAIL_PLACEMENT) /* placement.c wrote the whole explanation */
    n = snprintf(buf, len, "%s", msg != NULL ? msg : "(no message)");
  else if (ev->u.ts.why == TL__FAIL_NO_PAYLOAD)
    n = snprintf(buf, len, "Payload not restored");
  else if (ev->u.ts.why == TL__FAIL_CANCELLED)
    n = snprintf(buf, len, "Stage %u cancelled%s%s", ev->u.ts.info.stage_id,
                 msg != NULL ? ": " : "", msg != NULL ? msg : "");
  else
    n = snprintf(buf, len, "Task %u in stage %u.%u failed %u times; most recent failure: %s",
                 ev->u.ts.index, ev->u.ts.info.stage_id, ev->u.ts.info.stage_attempt,
                 ev->u.ts.failures, msg != NULL ? msg : "(no message)");
  if (n < 0 || (size_t)n >= len)
    memcpy(buf + len - 4, "...", 4);
}

static void deliver(struct tl_scheduler *s, const tl__event *ev) {
  const tl_callbacks *cb = &s->cb;
  switch ((tl__event_kind)ev->kind) {
  case TL__EV_TASK_STARTED:
    if (cb->task_started != NULL) {
      tl_task_info info;
      task_info_of(ev, &info);
      cb->task_started(cb->ud, &info);
    }
    break;
  case TL__EV_TASK_ENDED: {
    void *result = ev->u.task.result;
    if (result != NULL && (cb->task_ended == NULL || ev->drop_result)) {
      if (ev->u.task.result_free != NULL) /* the result is not handed over: give it back */
        ev->u.task.result_free(result);
      result = NULL;
    }
    if (cb->task_ended == NULL)
      break;
    tl_task_info info;
    task_info_of(ev, &info);
    tl_task_end end = {(tl_end_kind)ev->end_kind, ev->counts,
                       event_message(ev),         result,
                       ev->u.task.result_size,    ev->u.task.result_free};
    cb->task_ended(cb->ud, &info, &end);
    break;
  }
  case TL__EV_TASKSET_FAILED:
    if (cb->taskset_failed != NULL) {
      char reason[4096];
      taskset_failed_reason(s, ev, reason, sizeof reason);
      cb->taskset_failed(cb->ud, &ev->u.ts.info, reason);
    }
    break;
  case TL__EV_TASKSET_RELEASED:
    if (cb->taskset_released != NULL)
      cb->taskset_released(cb->ud, &ev->u.ts.info, ev->u.ts.payload);
    break;
  case TL__EV_EXECUTOR_ADDED:
    if (cb->executor_added != NULL)
      cb->executor_added(cb->ud, ev->names->text, tl__names_host(ev->names));
    break;
  case TL__EV_EXECUTOR_LOST:
    if (cb->executor_lost != NULL) {
      tl_loss_reason reason = {(tl_loss_kind)ev->u.loss.kind, ev->u.loss.caused_by_app,
                               ev->u.loss.exit_code, event_message(ev)};
      cb->executor_lost(cb->ud, ev->names->text, ev->u.loss.executor_ud, &reason);
    }
    break;
  case TL__EV_EXECUTOR_REMOVED:
    if (cb->executor_removed != NULL) {
      tl_loss_reason reason = {(tl_loss_kind)ev->u.loss.kind, ev->u.loss.caused_by_app,
                               ev->u.loss.exit_code, event_message(ev)};
      cb->executor_removed(cb->ud, ev->names->text, ev->u.loss.executor_ud, &reason);
    }
    break;
  case TL__EV_REVIVE_OFFERS:
    if (cb->revive_offers != NULL)
      cb->revive_offers(cb->ud);
    break;
  case TL__EV_SPECULATIVE_SUBMITTED:
    if (cb->speculative_task_submitted != NULL)
      cb->speculative_task_submitted(cb->ud, &ev->u.ts.info, ev->u.ts.index);
    break;
  case TL__EV_TASKSET_UNSCHEDULABLE:
    if (cb->taskset_unschedulable != NULL)
      cb->taskset_unschedulable(cb->ud, &ev->u.ts.info, ev->static_msg);
    break;
  case TL__EV_TASKSET_SCHEDULABLE:
    if (cb->taskset_schedulable != NULL)
      cb->taskset_schedulable(cb->ud, &ev->u.ts.info);
    break;
  case TL__EV_DEMAND:
    if (cb->demand_changed != NULL)
      cb->demand_changed(cb->ud, &ev->u.demand);
    break;
  case TL__EV_KILL_TASK:
    if (cb->kill_task != NULL)
      cb->kill_task(cb->ud, ev->u.kill.tid, ev->names->text, ev->u.kill.executor_ud,
                    ev->u.kill.interrupt, event_message(ev));
    break;
  }
}

/* Drops what a delivered batch still holds (its references, its journal lines); the lock held,
 * nobody dispatching. */
static void events_settle(struct tl_scheduler *s) {
  if (!s->batch_dirty)
    return;
  s->batch_dirty = false;
  if (s->journal_batch != NULL) {
    tl__journal_free_list(s, s->journal_batch);
    s->journal_batch = NULL;
  }
  /* All delivered: only references remain (tl__events_clear without the results), and a batch
   * of task events that hold none (their names are their executors') is not read again. */
  size_t used = s->batch.n;
  if (s->batch.refs) {
    for (size_t i = 0; i < used; i++) {
      const tl__event *ev = &s->batch.ev[i];
      if (ev->kind > TL__EV_TASK_ENDED)
        tl__str_unref(s, ev->names);
      tl__str_unref(s, ev->msg);
      if (ev->grants != NULL)
        tl__grants_unref(s, ev->grants);
    }
    s->batch.refs = false;
  }
  s->batch.n = 0;
  s->ev_settled += used;
  if (s->retired != NULL) /* executor records kept for these events may go now */
    tl__executors_release(s, false);
  if (s->batch.cap > TL__EVENTS_INITIAL || s->events.cap > TL__EVENTS_INITIAL)
    tl__events_settled(s, used); /* they keep their room for a steady load (queue.c) */
}

void tl__lock(struct tl_scheduler *s) {
  tl__mutex_lock(&s->lock);
  /* Acquire: pairs with the release that ended the last dispatch, whose batch this may drop.
   * While a thread is dispatching, the batch is its own. */
  if (atomic_load_explicit(&s->dispatch_state, memory_order_acquire) == 0)
    events_settle(s);
}

bool tl__dispatching(struct tl_scheduler *s) {
  return (atomic_load_explicit(&s->dispatch_state, memory_order_acquire) & TL__DISPATCHING) != 0;
}

/* The scheduler whose events this thread is delivering, if any (the innermost: a callback may
 * call into another scheduler, whose dispatcher then runs on this thread too). tl_dispatch
 * refuses with it: a callback cannot deliver the events queued behind its own. */
static _Thread_local const struct tl_scheduler *delivering;

/* The dispatcher's loop, entered with the lock held by the thread that just became it
 * (dispatch_state 0, nobody else can be it: that is decided under the lock). Returns how many
 * events it delivered. Giving up dispatching happens without the lock, by one compare-and-swap
 * from DISPATCHING to 0, which fails if a call queued more meanwhile (it set MORE under the lock,
 * finding a dispatcher): then the dispatcher takes the lock and delivers that too. So a call
 * whose events find no queue behind them takes the lock once, and what its batch still holds is
 * dropped by the next call to take the lock (tl__lock), which does that anyway. */
static size_t run_dispatcher(struct tl_scheduler *s) {
  events_settle(s);
  atomic_store_explicit(&s->dispatch_state, TL__DISPATCHING, memory_order_relaxed);
  const struct tl_scheduler *outer = delivering;
  delivering = s;
  size_t delivered = 0;
  for (;;) {
    tl__event_array batch = s->events; /* the batch is empty here: swap the arrays */
    s->events = s->batch;
    s->batch = batch;
    s->ready_sent = false; /* deferred: what is queued from now on needs a wake-up of its own */
    atomic_store_explicit(&s->batch_delivered, 0, memory_order_release);
    tl__jline *lines = s->journal; /* the journal lines made so far, in lock order */
    s->journal = NULL;
    s->journal_tail = &s->journal;
    s->journal_batch = lines;
    tl__mutex_unlock(&s->lock);

    for (const tl__jline *j = lines; j != NULL; j = j->next)
      s->cfg.journal(s->cfg.journal_ud, j->text);
    for (size_t i = 0; i < batch.n; i++) {
      deliver(s, &batch.ev[i]);
      /* Release: tl_stats_get (under the lock) counts what is delivered; no fence needed. */
      atomic_store_explicit(&s->batch_delivered, i + 1, memory_order_release);
    }
    delivered += batch.n;

    s->batch_dirty = true;
    unsigned dispatching = TL__DISPATCHING;
    if (atomic_compare_exchange_strong_explicit(&s->dispatch_state, &dispatching, 0,
                                                memory_order_release, memory_order_relaxed)) {
      delivering = outer; /* this thread's, not s's: s may be gone already */
      return delivered;   /* nothing of s may be touched from here on */
    }
    /* MORE: calls queued events behind the batch. Under the lock no call is between queuing
     * and setting MORE, so clearing it here loses nothing. */
    tl__mutex_lock(&s->lock);
    events_settle(s);
    atomic_store_explicit(&s->dispatch_state, TL__DISPATCHING, memory_order_relaxed);
    if (s->events.n == 0 && s->journal == NULL) { /* never: MORE comes with something queued */
      atomic_store_explicit(&s->dispatch_state, 0, memory_order_release);
      tl__mutex_unlock(&s->lock);
      delivering = outer;
      return delivered;
    }
  }
}

/* Leaves the queue to the thread already dispatching, if there is one (this one further up the
 * stack, or another): sets MORE, so that it delivers what is queued after its batch, and
 * releases the lock. Returns false, the lock still held, when nobody dispatches. */
static bool hand_to_dispatcher(struct tl_scheduler *s) {
  /* Acquire, here and when the exchange fails: a dispatcher that gave up meanwhile left its
   * batch for this call to drop (events_settle in run_dispatcher). */
  unsigned st = atomic_load_explicit(&s->dispatch_state, memory_order_acquire);
  while (st & TL__DISPATCHING) {
    /* If it gives up dispatching meanwhile, st reads 0 and this call becomes the dispatcher. */
    if (atomic_compare_exchange_weak_explicit(&s->dispatch_state, &st, st | TL__MORE,
                                              memory_order_acquire, memory_order_acquire)) {
      tl__mutex_unlock(&s->lock);
      return true;
    }
  }
  return false;
}

/* Deferred delivery's end of a call that queued something: the first such call since the last
 * tl_dispatch took the queue makes the wake-up, the driver's under the lock (uv_async_send runs
 * no user code) or events_ready outside it; the others only release the lock. */
static void unlock_and_ready(struct tl_scheduler *s) {
  if (s->ready_sent) {
    tl__mutex_unlock(&s->lock);
    return;
  }
  s->ready_sent = true;
  if (s->driver_ready != NULL) {
    s->driver_ready(s->driver);
    tl__mutex_unlock(&s->lock);
    return;
  }
  void (*ready)(void *ud) = s->cfg.events_ready;
  void *ud = s->cfg.events_ready_ud;
  tl__mutex_unlock(&s->lock);
  if (ready != NULL)
    ready(ud);
}

bool tl__unlock_and_dispatch(struct tl_scheduler *s) {
  if (s->demand_on) /* the call's demand event, last (demand.c) */
    tl__demand_end(s);
  if (s->attempts_by_tid.n == 0) /* an idle scheduler keeps no room for launches (ledger.c) */
    tl__attempts_idle(s);
  if (s->events.n == 0 && s->journal == NULL) {
    tl__mutex_unlock(&s->lock);
    return false;
  }
  if (s->cfg.delivery == TL_DELIVER_DEFERRED) {
    unlock_and_ready(s);
    return false;
  }
  if (hand_to_dispatcher(s))
    return false;
  return run_dispatcher(s) != 0;
}

size_t tl__dispatch_locked(struct tl_scheduler *s) { return run_dispatcher(s); }

int tl_dispatch(tl_scheduler *s) {
  if (s == NULL)
    return TL_EINVAL;
  if (delivering == s) /* inside one of its callbacks: the queue behind it waits */
    return TL_EBUSY;
  tl__lock(s);
  if (s->closing) {
    tl__mutex_unlock(&s->lock);
    return TL_EBUSY;
  }
  if (s->events.n == 0 && s->journal == NULL) {
    tl__mutex_unlock(&s->lock);
    return 0;
  }
  if (hand_to_dispatcher(s)) /* another thread delivers these after its batch */
    return 0;
  size_t n = run_dispatcher(s);
  return n > INT_MAX ? INT_MAX : (int)n;
}

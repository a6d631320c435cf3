/* One task set (one attempt of one stage): per-index state, the pending stack, the handlers that
 * decide success, retry and abort, zombies and their release; and the stage index that keeps at
 * most one non-zombie attempt per stage.
 *
 * A task set's life: active (in the FIFO queue while it has pending indices) -> zombie (all done,
 * aborted, fetch failure, or superseded by a newer attempt of its stage; launches nothing) ->
 * released, the moment a zombie has no attempt running or frozen: taskset_released hands the
 * payload back and the record is freed. finish_if_drained is called after every
 * change that can make that moment come, so a zombie with nothing running never exists
 * (invariant 4: the SPARK-18553 leak, and the gap Spark leaves when a newer attempt arrives).
 *
 * Everything here runs under the scheduler's lock, with event room reserved by the caller.
 */
#include "checker.h"
#include "placement.h"
#include "resource.h"

static tl_taskset_info taskset_info(const tl__taskset *ts) {
  tl_taskset_info info = {ts->id, ts->stage_id, ts->stage_attempt, ts->ntasks};
  return info;
}

/* ---------------------------------------------------------------------------------------------
 * The pending stack: indices waiting to launch, the next one on top. A fresh task set stacks
 * them so index 0 launches first; a failed index goes back on top and is retried next (Spark's
 * addPendingTask). Links are indices, so the stack costs nothing beyond the 16-byte index state.
 * ------------------------------------------------------------------------------------------- */

/* A task set is in its pool's queue while it can launch something: not zombie, and an index
 * pending or a speculative copy waiting. */
static bool schedulable(const tl__taskset *ts) {
  return !ts->zombie && ts->npending + ts->nspeculatable > 0;
}

static void follow_schedulable(tl__taskset *ts, bool was) {
  bool is = schedulable(ts);
  if (is && !was)
    tl__queue_insert(ts);
  else if (was && !is)
    tl__queue_remove(ts);
}

/* The two stacks (pending, speculative) share the index links: an index is on one at most. */
static void stack_push(tl__taskset *ts, uint32_t *top, uint32_t i) {
  tl__index *ix = &ts->idx[i];
  ix->prev = TL__NONE;
  ix->next = *top;
  if (*top != TL__NONE)
    ts->idx[*top].prev = i;
  *top = i;
}

static void stack_remove(tl__taskset *ts, uint32_t *top, uint32_t i) {
  tl__index *ix = &ts->idx[i];
  if (ix->prev != TL__NONE)
    ts->idx[ix->prev].next = ix->next;
  else
    *top = ix->next;
  if (ix->next != TL__NONE)
    ts->idx[ix->next].prev = ix->prev;
  ix->prev = ix->next = TL__NONE;
}

/* Empties a stack, clearing flag on its indices (a task set becoming zombie). */
static void stack_clear(tl__taskset *ts, uint32_t *top, uint8_t flag) {
  for (uint32_t i = *top, next; i != TL__NONE; i = next) {
    next = ts->idx[i].next;
    ts->idx[i].prev = ts->idx[i].next = TL__NONE;
    ts->idx[i].flags &= (uint8_t)~flag;
  }
  *top = TL__NONE;
}

static void pending_push(struct tl_scheduler *s, tl__taskset *ts, uint32_t i) {
  bool was = schedulable(ts);
  stack_push(ts, &ts->pending_top, i);
  ts->idx[i].flags |= TL__IDX_PENDING;
  ts->npending++;
  s->npending_tasks++;
  if (ts->loc != NULL)
    tl__locality_pending_added(ts, i);
  follow_schedulable(ts, was);
}

/* Taking an index off a stack never makes a task set schedulable, and one that had it there was
 * schedulable unless zombie (a zombie's stacks are empty): so it leaves its queue when this was
 * the last thing it could launch. follow_schedulable's rule, without computing both sides. */
static void leave_queue_if_done(tl__taskset *ts) {
  if (!ts->zombie && ts->npending + ts->nspeculatable == 0)
    tl__queue_remove(ts);
}

static void pending_remove(struct tl_scheduler *s, tl__taskset *ts, uint32_t i) {
  stack_remove(ts, &ts->pending_top, i);
  ts->idx[i].flags &= (uint8_t)~TL__IDX_PENDING;
  ts->npending--;
  s->npending_tasks--;
  if (ts->loc != NULL)
    tl__locality_pending_removed(ts, i);
  leave_queue_if_done(ts);
}

/* Speculation: a slow index waits for its second copy on the speculative stack. */
void tl__taskset_speculate(struct tl_scheduler *s, tl__taskset *ts, uint32_t i) {
  bool was = schedulable(ts);
  stack_push(ts, &ts->speculative_top, i);
  ts->idx[i].flags |= TL__IDX_SPECULATABLE;
  ts->nspeculatable++;
  s->nspeculatable++;
  follow_schedulable(ts, was);
}

static void speculative_remove(struct tl_scheduler *s, tl__taskset *ts, uint32_t i) {
  stack_remove(ts, &ts->speculative_top, i);
  ts->idx[i].flags &= (uint8_t)~TL__IDX_SPECULATABLE;
  ts->nspeculatable--;
  s->nspeculatable--;
  leave_queue_if_done(ts);
}

static bool tried_on_host(const tl__taskset *ts, uint32_t i, const char *host) {
  for (const tl__tried *t = ts->tried[i]; t != NULL; t = t->next)
    if (strcmp(tl__names_host(t->names), host) == 0)
      return true;
  return false;
}

bool tl__taskset_take_speculative(struct tl_scheduler *s, tl__taskset *ts, const tl__executor *ex,
                                  tl_locality allowed, uint32_t *index, tl_locality *level) {
  const char *host = tl__names_host(ex->names);
  uint32_t best = TL__NONE;
  tl_locality best_level = TL_ANY;
  for (uint32_t i = ts->speculative_top; i != TL__NONE; i = ts->idx[i].next) {
    /* Never where an attempt of the index already ran, nor where it is excluded. */
    if (tried_on_host(ts, i, host) || tl__exclude_task_blocked(s, ts, i, ex))
      continue;
    tl_locality l = tl__locality_of(s, ts, i, ex);
    if (l <= allowed && (best == TL__NONE || l < best_level)) {
      best = i;
      best_level = l;
      if (l == TL_PROCESS_LOCAL || ts->loc == NULL)
        break; /* nothing is better */
    }
  }
  if (best == TL__NONE)
    return false;
  speculative_remove(s, ts, best);
  *index = best;
  *level = best_level;
  return true;
}

void tl__taskset_take_pending(struct tl_scheduler *s, tl__taskset *ts, uint32_t i) {
  pending_remove(s, ts, i);
}

void tl__taskset_adopt(struct tl_scheduler *s, tl__taskset *ts, tl__attempt *a, tl__tried *tried) {
  uint32_t i = a->index;
  tl__index *ix = &ts->idx[i];
  if (ix->flags & TL__IDX_PENDING)
    pending_remove(s, ts, i);
  else if (ix->flags & TL__IDX_SPECULATABLE)
    speculative_remove(s, ts, i);
  ix->attempts = a->attempt + 1;
  a->sibling = NULL;
  if (ts->first != NULL) {
    if (ix->copies_running == 0) {
      ts->first[i] = a;
    } else { /* the second copy: the two know each other, to kill the loser */
      a->sibling = ts->first[i];
      a->sibling->sibling = a;
    }
    tried->names = tl__str_ref(a->executor->names);
    tried->next = ts->tried[i];
    ts->tried[i] = tried;
  }
  ix->copies_running++;
  tl__list_insert_tail(&ts->running, &a->on_taskset);
  ts->nrunning++;
  ts->pool->running++;
  tl__queue_replace(ts);
}

bool tl__taskset_take_unblocked(struct tl_scheduler *s, tl__taskset *ts, const tl__executor *ex,
                                uint32_t *index) {
  for (uint32_t i = ts->pending_top; i != TL__NONE; i = ts->idx[i].next) {
    if (ts->exclude == NULL || !tl__exclude_task_blocked(s, ts, i, ex)) { /* the usual: the top */
      pending_remove(s, ts, i);
      *index = i;
      return true;
    }
  }
  return false;
}

/* ---------------------------------------------------------------------------------------------
 * Zombies, aborts, release
 * ------------------------------------------------------------------------------------------- */

static void push_kill(struct tl_scheduler *s, const tl__attempt *a, bool interrupt, tl__str *msg,
                      const char *static_msg) {
  tl__event *ev = tl__event_push(s, TL__EV_KILL_TASK);
  ev->names = tl__str_ref(a->executor->names);
  ev->msg = tl__str_ref(msg);
  ev->static_msg = static_msg;
  ev->u.kill.tid = a->tid;
  ev->u.kill.interrupt = interrupt;
  ev->u.kill.executor_ud = a->executor->ud;
}

/* ---------------------------------------------------------------------------------------------
 * Map outputs of active shuffle-map task sets
 * ------------------------------------------------------------------------------------------- */

static void output_free(struct tl_scheduler *s, tl__output *out) {
  tl__list_remove(&out->on_executor);
  tl__list_remove(&out->on_taskset);
  out->executor->noutputs--;
  tl__free(s, out, sizeof *out);
}

bool tl__taskset_wants_output(const tl__taskset *ts, const tl__attempt *a) {
  /* The success that completes the task set makes it zombie, and a zombie's lost outputs are
   * left to the DAG layer (SPARK-13931): no record for those. */
  return ts->shuffle_map && !ts->zombie && !(ts->idx[a->index].flags & TL__IDX_SUCCESSFUL) &&
         ts->nsucceeded + 1 < ts->ntasks;
}

static void output_add(tl__output *out, const tl__attempt *a) {
  out->taskset = a->taskset;
  out->executor = a->executor;
  out->tid = a->tid;
  out->index = a->index;
  out->attempt = a->attempt;
  out->locality = a->locality;
  out->speculative = a->speculative;
  tl__list_insert_tail(&a->executor->outputs, &out->on_executor);
  a->executor->noutputs++;
  tl__list_insert_tail(&a->taskset->outputs, &out->on_taskset);
}

static void make_zombie(struct tl_scheduler *s, tl__taskset *ts) {
  if (ts->zombie)
    return;
  tl__unsched_zombie(s, ts); /* before zombie: it leaves its unschedulable states (demand.c) */
  ts->zombie = true;
  s->nactive--;
  s->nzombie++;
  while (!tl__list_empty(&ts->outputs))
    output_free(s, tl__container_of(ts->outputs.next, tl__output, on_taskset));
  if (ts->loc != NULL)
    tl__locality_zombie(s, ts);
  stack_clear(ts, &ts->pending_top, TL__IDX_PENDING);
  s->npending_tasks -= ts->npending;
  ts->npending = 0;
  stack_clear(ts, &ts->speculative_top, TL__IDX_SPECULATABLE);
  s->nspeculatable -= ts->nspeculatable;
  ts->nspeculatable = 0;
  tl__queue_remove(ts);
  if (ts->stage->active == ts)
    ts->stage->active = NULL;
}

/* Releases a zombie task set once nothing of it runs: taskset_released, and every record it
 * holds freed. */
static void finish_if_drained(struct tl_scheduler *s, tl__taskset *ts);

/* Aborts a task set once: zombie, and a taskset_failed event whose reason the dispatcher writes
 * from why/index/failures/msg. Its running attempts go on (Spark's abort does not kill them). */
static tl__event *abort_taskset(struct tl_scheduler *s, tl__taskset *ts, uint8_t why,
                                uint32_t index, uint32_t failures, tl__str *msg,
                                const char *static_msg) {
  if (ts->failed)
    return NULL;
  ts->failed = true;
  make_zombie(s, ts);
  tl__event *ev = tl__event_push(s, TL__EV_TASKSET_FAILED);
  ev->u.ts.info = taskset_info(ts);
  ev->u.ts.why = why;
  ev->u.ts.index = index;
  ev->u.ts.failures = failures;
  ev->msg = tl__str_ref(msg);
  ev->static_msg = static_msg;
  return ev;
}

void tl__taskset_abort(struct tl_scheduler *s, tl__taskset *ts, uint8_t why, uint32_t index,
                       uint32_t failures, tl__str *msg, const char *static_msg) {
  abort_taskset(s, ts, why, index, failures, msg, static_msg);
  finish_if_drained(s, ts);
}

static void stage_unlink(struct tl_scheduler *s, tl__taskset *ts) {
  tl__stage *st = ts->stage;
  tl__list_remove(&ts->on_stage);
  if (--st->nattempts == 0) {
    HASH_DELETE(hh_by_id, s->stages_by_id, st);
    tl__free(s, st, sizeof *st);
  }
}

/* The hosts its indices were tried on, kept for speculation until the task set goes. */
static void free_tried(struct tl_scheduler *s, tl__taskset *ts) {
  for (uint32_t i = 0; ts->tried != NULL && i < ts->ntasks; i++) {
    while (ts->tried[i] != NULL) {
      tl__tried *t = ts->tried[i];
      ts->tried[i] = t->next;
      tl__str_unref(s, t->names);
      tl__free(s, t, sizeof *t);
    }
  }
}

static void finish_if_drained(struct tl_scheduler *s, tl__taskset *ts) {
  if (!ts->zombie || ts->nrunning != 0)
    return;
  tl__event *ev = tl__event_push(s, TL__EV_TASKSET_RELEASED);
  ev->u.ts.info = taskset_info(ts);
  ev->u.ts.payload = ts->payload;
  tl__exclude_taskset_released(s, ts);
  free_tried(s, ts);
  tl__locality_free(s, ts);
  tl__speculation_free(s, ts);
  tl__res_taskset_free(s, ts->req);
  tl__tags_free(s, ts->tags);
  tl__placement_free(s, ts);
  ts->pool->ntasksets--;
  stage_unlink(s, ts);
  HASH_DELETE(hh_by_id, s->tasksets_by_id, ts);
  s->nzombie--;
  s->totals.tasksets_released++;
  tl__free(s, ts, tl__taskset_bytes(ts));
}

/* Inline: every success comes here, and the usual one (neither pending nor speculatable, not
 * the last) is a few stores. */
static inline void mark_successful(struct tl_scheduler *s, tl__taskset *ts, uint32_t i) {
  tl__index *ix = &ts->idx[i];
  if (ix->flags & TL__IDX_PENDING)
    pending_remove(s, ts, i);
  if (ix->flags & TL__IDX_SPECULATABLE) /* a copy is not needed any more */
    speculative_remove(s, ts, i);
  ix->flags |= TL__IDX_SUCCESSFUL;
  ix->failures = 0;
  if (++ts->nsucceeded == ts->ntasks)
    make_zombie(s, ts);
}

/* ---------------------------------------------------------------------------------------------
 * The end of an attempt
 *
 * Every way an attempt ends comes here: a FINISHED/FAILED/KILLED status update, and the second
 * phase of its executor's loss. The order of what follows is Spark's: task_ended first (with
 * the task set already zombie if this completed it, SPARK-19868), then the failure count and a
 * possible abort (taskset_failed), then the retry (the index back on the pending stack), then
 * the release if the task set has drained. A zombie counts no failure and retries nothing.
 * ------------------------------------------------------------------------------------------- */

void tl__attempt_ended(struct tl_scheduler *s, tl__attempt *a, tl_end_kind kind, bool counts,
                       tl__str *msg, const char *static_msg, const tl_update *u, tl__output *out) {
  tl__taskset *ts = a->taskset;
  tl__index *ix = &ts->idx[a->index];

  tl__list_remove(&a->on_taskset);
  ts->nrunning--;
  ts->pool->running--;
  tl__queue_replace(ts); /* a FAIR pool orders by running attempts */
  ix->copies_running--;
  tl__attempt *sibling = a->sibling; /* the other copy of the index, still running */
  if (sibling != NULL)
    sibling->sibling = NULL;
  if (ts->first != NULL)
    ts->first[a->index] = sibling;

  tl__event *ev = tl__event_push(s, TL__EV_TASK_ENDED);
  tl__event_task_names(s, ev, a->executor);
  if (msg != NULL) {
    ev->msg = tl__str_ref(msg);
    tl__event_holds(s);
  }
  ev->static_msg = static_msg;
  ev->u.task.tid = a->tid;
  ev->u.task.taskset = ts->id;
  ev->u.task.stage_id = ts->stage_id;
  ev->u.task.stage_attempt = ts->stage_attempt;
  ev->u.task.index = a->index;
  ev->u.task.attempt = a->attempt;
  ev->locality = a->locality;
  ev->u.task.payload = ts->payload;
  ev->end_kind = (uint8_t)kind;
  ev->speculative = a->speculative;
  if (a->grants != NULL) { /* given back now; the event takes the attempt's reference */
    tl__res_unbook(a->executor, a->grants);
    ev->grants = a->grants;
    a->grants = NULL;
    tl__event_holds(s);
  }

  if (u != NULL && u->state == TL_TASK_FINISHED) { /* the result goes over, or back */
    ev->u.task.result = u->result;
    ev->u.task.result_size = u->result_size;
    ev->u.task.result_free = u->result_free;
    ev->drop_result = kind != TL_END_SUCCESS && u->result != NULL;
  }
  if (kind == TL_END_SUCCESS) {
    if (out != NULL) { /* before the index is marked done: the task set is not zombie yet */
      output_add(out, a);
      out = NULL;
    }
    if (!(ix->flags & TL__IDX_SUCCESSFUL)) {
      if (ts->heap != NULL && !ts->zombie)
        tl__speculation_record(ts, s->last_now - a->launch_time);
      mark_successful(s, ts, a->index);
    }
    /* Spark kills the other copies when one succeeds; what they report later counts for
     * nothing (SPARK-13343, SPARK-22074). */
    if (sibling != NULL && !sibling->killed_by_other) {
      sibling->killed_by_other = 1;
      push_kill(s, sibling, true, NULL, "another attempt succeeded");
    }
  } else if (kind == TL_END_RESULT_TOO_LARGE) {
    tl__event *failed = abort_taskset(s, ts, TL__FAIL_RESULT_SIZE, 0, ts->nresults, NULL, NULL);
    if (failed != NULL)
      failed->u.ts.bytes = ts->result_bytes;
  } else {
    /* Any failure in a barrier task set makes it zombie before the count is looked at, as in
     * Spark's handleFailedTask: the stage runs again as a whole, and nothing counts. */
    if (ts->barrier)
      make_zombie(s, ts);
    /* Nothing counts in a zombie, for an index already done, or from a copy that lost the race. */
    bool counted =
        counts && !ts->zombie && !(ix->flags & TL__IDX_SUCCESSFUL) && !a->killed_by_other;
    ev->counts = counted;
    if (counted && s->cfg.exclude_on_failure) /* before the count, as Spark */
      tl__exclude_task_failed(s, ts, a->executor, a->index, msg, static_msg);
    if (kind == TL_END_FETCH_FAILED) {
      /* The stage's input is gone: the DAG layer resubmits the parent and a new attempt of this
       * stage; this one launches nothing more. */
      make_zombie(s, ts);
    } else if (counted && u != NULL && u->no_retry) {
      /* Retrying cannot help (Spark's TaskOutputFileAlreadyExistException): abort now. */
      ix->failures++;
      abort_taskset(s, ts, TL__FAIL_NOT_RETRIED, a->index, ix->failures, msg, static_msg);
    } else if (counted && ++ix->failures >= ts->max_failures) {
      abort_taskset(s, ts, TL__FAIL_MAX_FAILURES, a->index, ix->failures, msg, static_msg);
    }
    if ((ix->flags & TL__IDX_SPECULATABLE) && ix->copies_running == 0)
      speculative_remove(s, ts, a->index); /* its one copy is gone: a retry, not a copy */
    if (!ts->zombie && !(ix->flags & (TL__IDX_SUCCESSFUL | TL__IDX_PENDING)) &&
        ix->copies_running == 0) {
      pending_push(s, ts, a->index);
      s->revive_wanted = true;
    }
  }

  if (out != NULL) /* asked for, but the attempt did not succeed after all */
    tl__free(s, out, sizeof *out);
  tl__attempt_free(s, a);
  finish_if_drained(s, ts);
}

void tl__outputs_resubmit(struct tl_scheduler *s, tl__executor *ex) {
  while (!tl__list_empty(&ex->outputs)) {
    tl__output *out = tl__container_of(ex->outputs.next, tl__output, on_executor);
    tl__taskset *ts = out->taskset;
    uint32_t index = out->index;
    tl__index *ix = &ts->idx[index];
    ix->flags &= (uint8_t)~TL__IDX_SUCCESSFUL;
    ts->nsucceeded--;
    tl__event *ev = tl__event_push(s, TL__EV_TASK_ENDED);
    tl__event_task_names(s, ev, ex);
    ev->static_msg = "Its map output was lost with its executor; the task runs again.";
    ev->u.task.tid = out->tid;
    ev->u.task.taskset = ts->id;
    ev->u.task.stage_id = ts->stage_id;
    ev->u.task.stage_attempt = ts->stage_attempt;
    ev->u.task.index = out->index;
    ev->u.task.attempt = out->attempt;
    ev->locality = out->locality;
    ev->speculative = out->speculative;
    ev->u.task.payload = ts->payload;
    ev->end_kind = TL_END_RESUBMITTED;
    output_free(s, out);
    if (ix->copies_running == 0) { /* a copy may still run (speculation): then it is enough */
      pending_push(s, ts, index);
      s->revive_wanted = true;
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Submission
 * ------------------------------------------------------------------------------------------- */

int tl__submit(struct tl_scheduler *s, const tl_taskset_desc *d, tl_taskset_id *out) {
  /* Under TL_FIFO the pool is ignored, as Spark ignores spark.scheduler.pool there. */
  tl__pool *pool =
      s->cfg.mode == TL_FAIR && d->pool != NULL ? tl__pool_find(s, d->pool) : s->default_pool;
  if (pool == NULL)
    return TL_ENOENT;
  tl__stage *st = tl__stage_find(s, d->stage_id);
  if (st != NULL) {
    for (tl__link *l = st->attempts.next; l != &st->attempts; l = l->next)
      if (tl__container_of(l, tl__taskset, on_stage)->stage_attempt == d->stage_attempt)
        return TL_EEXIST;
  }

  /* Allocate and index first; nothing visible changes until all of it has succeeded. */
  bool speculation = s->cfg.speculation && !d->barrier; /* never for barrier task sets */
  tl__locality *loc;
  if (tl__locality_prepare(s, d, &loc) != TL_OK)
    return TL_ENOMEM;
  tl__treqs *req;
  if (tl__res_taskset_new(s, d->resources, d->nresources, &req) != TL_OK) {
    tl__locality_discard(s, loc);
    return TL_ENOMEM;
  }
  tl__tags *tags;
  if (tl__tags_new(s, d->tags, d->ntags, &tags) != TL_OK) {
    tl__res_taskset_free(s, req);
    tl__locality_discard(s, loc);
    return TL_ENOMEM;
  }
  struct tl__placement *place;
  if (tl__placement_new(s, d->allowed_executors, d->nallowed_executors, d->allowed_hosts,
                        d->nallowed_hosts, d->spread, d->ntasks, &place) != TL_OK) {
    tl__tags_free(s, tags);
    tl__res_taskset_free(s, req);
    tl__locality_discard(s, loc);
    return TL_ENOMEM;
  }
  tl__taskset *ts = tl__malloc(s, tl__taskset_size(d->ntasks, speculation));
  if (ts == NULL) {
    tl__placement_discard(s, place);
    tl__tags_free(s, tags);
    tl__res_taskset_free(s, req);
    tl__locality_discard(s, loc);
    return TL_ENOMEM;
  }
  tl__stage *new_stage = NULL;
  if (st == NULL && (new_stage = tl__calloc(s, 1, sizeof *new_stage)) == NULL)
    goto fail_ts;
  /* taskset_released of a superseded attempt with nothing running, revive_offers. */
  if (tl__events_reserve(s, 2) != TL_OK)
    goto fail_stage;
  memset(ts, 0, sizeof *ts);
  ts->id = s->next_taskset_id;
  HASH_ADD(hh_by_id, s->tasksets_by_id, id, sizeof ts->id, ts);
  if (!TL__HASH_ADDED(ts, hh_by_id))
    goto fail_stage;
  if (new_stage != NULL) {
    new_stage->stage_id = d->stage_id;
    HASH_ADD(hh_by_id, s->stages_by_id, stage_id, sizeof new_stage->stage_id, new_stage);
    if (!TL__HASH_ADDED(new_stage, hh_by_id)) {
      HASH_DELETE(hh_by_id, s->tasksets_by_id, ts);
      goto fail_stage;
    }
    tl__list_init(&new_stage->attempts);
    st = new_stage;
  }

  s->next_taskset_id++;
  ts->stage = st;
  ts->pool = pool;
  pool->ntasksets++;
  tl__list_init(&ts->running);
  tl__list_init(&ts->outputs);
  ts->payload = d->payload;
  ts->stage_id = d->stage_id;
  ts->stage_attempt = d->stage_attempt;
  ts->priority = d->priority;
  ts->ntasks = d->ntasks;
  ts->cpus = d->cpus_per_task != 0 ? d->cpus_per_task : s->cfg.cpus_per_task;
  ts->shuffle_map = d->shuffle_map;
  ts->barrier = d->barrier;
  ts->profile = d->profile;
  ts->req = req;
  ts->max_failures =
      (uint16_t)(d->max_task_failures != 0 ? d->max_task_failures : s->cfg.max_task_failures);
  ts->tags = tags;
  tl__placement_attach(s, place, ts);
  tl__res_taskset_attach(req, ts);
  for (uint32_t i = 0; i < d->ntasks; i++) {
    tl__index *ix = &ts->idx[i];
    ix->prev = i == 0 ? TL__NONE : i - 1;
    ix->next = i + 1 == d->ntasks ? TL__NONE : i + 1;
    ix->attempts = 0;
    ix->failures = 0;
    ix->copies_running = 0;
    ix->flags = TL__IDX_PENDING;
  }
  ts->pending_top = 0;
  ts->speculative_top = TL__NONE;
  if (speculation) {
    ts->heap = (uint64_t *)(void *)&ts->idx[d->ntasks];
    ts->heap_cap = d->ntasks;
    ts->tried = (tl__tried **)(void *)(ts->heap + d->ntasks);
    ts->first = (tl__attempt **)(void *)(ts->tried + d->ntasks);
    memset(ts->tried, 0, (size_t)d->ntasks * (sizeof *ts->tried + sizeof *ts->first));
  }
  ts->npending = d->ntasks;
  s->npending_tasks += d->ntasks;
  s->nactive++;

  if (loc != NULL)
    tl__locality_attach(s, ts, loc);

  tl__taskset *older = st->active;
  tl__list_insert_tail(&st->attempts, &ts->on_stage);
  st->nattempts++;
  if (older != NULL)
    make_zombie(s, older); /* SPARK-27065: one active attempt per stage */
  st->active = ts;
  tl__queue_insert(ts);
  if (older != NULL)
    finish_if_drained(s, older);
  s->revive_wanted = true;
  tl__event_push_revive(s);
  if (out != NULL)
    *out = ts->id;
  return TL_OK;

fail_stage:
  tl__free(s, new_stage, sizeof *new_stage);
fail_ts:
  tl__free(s, ts, tl__taskset_size(d->ntasks, speculation));
  tl__placement_discard(s, place);
  tl__tags_free(s, tags);
  tl__res_taskset_free(s, req);
  tl__locality_discard(s, loc);
  return TL_ENOMEM;
}

/* ---------------------------------------------------------------------------------------------
 * Kill, cancel, partition completion
 * ------------------------------------------------------------------------------------------- */

int tl__kill_task(struct tl_scheduler *s, tl_tid tid, bool interrupt, const char *reason) {
  tl__attempt *a = tl__attempt_find(s, tid);
  if (a == NULL)
    return TL_ESTALE;
  int err;
  tl__str *msg = tl__str_dup(s, reason, &err);
  if (err != TL_OK)
    return err;
  if (tl__events_reserve(s, 1) != TL_OK) {
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  push_kill(s, a, interrupt, msg, NULL);
  tl__str_unref(s, msg);
  return TL_OK;
}

/* Kills every running attempt of every attempt of the stage. Frozen attempts are left alone:
 * their executor is lost and they end with its second phase. */
static void kill_stage_attempts(struct tl_scheduler *s, tl__stage *st, bool interrupt,
                                tl__str *msg) {
  for (tl__link *l = st->attempts.next; l != &st->attempts; l = l->next) {
    tl__taskset *ts = tl__container_of(l, tl__taskset, on_stage);
    for (tl__link *r = ts->running.next; r != &ts->running; r = r->next) {
      tl__attempt *a = tl__container_of(r, tl__attempt, on_taskset);
      if (!a->frozen)
        push_kill(s, a, interrupt, msg, NULL);
    }
  }
}

static size_t stage_running(const tl__stage *st) {
  size_t n = 0;
  for (const tl__link *l = st->attempts.next; l != &st->attempts; l = l->next) {
    const tl__taskset *ts = tl__container_of(l, tl__taskset, on_stage);
    n += ts->nrunning - ts->nfrozen;
  }
  return n;
}

int tl__kill_stage(struct tl_scheduler *s, uint32_t stage_id, bool interrupt, const char *reason) {
  tl__stage *st = tl__stage_find(s, stage_id);
  if (st == NULL)
    return TL_ENOENT;
  int err;
  tl__str *msg = tl__str_dup(s, reason, &err);
  if (err != TL_OK)
    return err;
  if (tl__events_reserve(s, stage_running(st)) != TL_OK) {
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  kill_stage_attempts(s, st, interrupt, msg);
  tl__str_unref(s, msg);
  return TL_OK;
}

int tl__cancel_stage(struct tl_scheduler *s, uint32_t stage_id, const char *reason) {
  tl__stage *st = tl__stage_find(s, stage_id);
  if (st == NULL)
    return TL_ENOENT;
  int err;
  tl__str *msg = tl__str_dup(s, reason, &err);
  if (err != TL_OK)
    return err;
  /* A kill per running attempt, taskset_failed for the active one, a release per attempt. */
  if (tl__events_reserve(s, stage_running(st) + 1 + st->nattempts) != TL_OK) {
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  kill_stage_attempts(s, st, false, msg);
  if (st->active != NULL)
    abort_taskset(s, st->active, TL__FAIL_CANCELLED, 0, 0, msg, NULL);
  /* Every attempt is zombie now; release those with nothing running. The last release frees
   * the stage itself, so walk a counted number of steps and never touch st after it. */
  uint32_t n = st->nattempts;
  tl__link *l = st->attempts.next;
  for (uint32_t k = 0; k < n; k++) {
    tl__taskset *ts = tl__container_of(l, tl__taskset, on_stage);
    l = l->next;
    finish_if_drained(s, ts);
  }
  tl__str_unref(s, msg);
  return TL_OK;
}

/* Cancel and kill by tag: every task set holding the tag, in submission order. Cancelling kills
 * its attempts and aborts it (when not zombie already) as tl__cancel_stage does for a stage, but
 * with the caller's interrupt flag; killing only kills. Nothing changes before the message and
 * the event room are had. */
int tl__tag_cancel(struct tl_scheduler *s, const char *tag, size_t len, bool cancel, bool interrupt,
                   const char *reason, size_t *ntasksets) {
  size_t kills = 0, tagged = 0;
  for (const tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    if (ts->tags != NULL && tl__tags_has(ts->tags, tag, len)) {
      tagged++;
      kills += ts->nrunning - ts->nfrozen;
    }
  }
  *ntasksets = 0;
  if (tagged == 0)
    return TL_OK;
  int err = TL_OK;
  tl__str *msg;
  if (cancel) { /* Spark's "part of cancelled job tags" */
    static const char head[] = "part of cancelled job tag ";
    size_t rlen = reason != NULL ? strlen(reason) : 0;
    size_t text = sizeof head - 1 + len + (reason != NULL ? 2 + rlen : 0);
    msg = tl__str_alloc(s, text);
    if (msg != NULL) {
      char *p = msg->text;
      memcpy(p, head, sizeof head - 1);
      p += sizeof head - 1;
      memcpy(p, tag, len);
      if (reason != NULL) {
        memcpy(p + len, ": ", 2);
        memcpy(p + len + 2, reason, rlen);
      }
    } else {
      err = TL_ENOMEM;
    }
  } else {
    msg = tl__str_dup(s, reason, &err);
  }
  if (err != TL_OK)
    return err;
  /* A kill per running attempt; with cancel a taskset_failed and a release per task set. */
  if (tl__events_reserve(s, kills + (cancel ? 2 * tagged : 0)) != TL_OK) {
    tl__str_unref(s, msg);
    return TL_ENOMEM;
  }
  size_t touched = 0;
  for (tl__taskset *ts = s->tasksets_by_id, *next; ts != NULL; ts = next) {
    next = ts->hh_by_id.next; /* ts may be released below */
    if (ts->tags == NULL || !tl__tags_has(ts->tags, tag, len))
      continue;
    bool acted = false;
    for (tl__link *r = ts->running.next; r != &ts->running; r = r->next) {
      tl__attempt *a = tl__container_of(r, tl__attempt, on_taskset);
      if (!a->frozen) {
        push_kill(s, a, interrupt, msg, NULL);
        acted = true;
      }
    }
    if (cancel && !ts->zombie) {
      abort_taskset(s, ts, TL__FAIL_CANCELLED, 0, 0, msg, NULL);
      acted = true;
    }
    touched += acted;
    if (cancel)
      finish_if_drained(s, ts);
  }
  tl__str_unref(s, msg);
  *ntasksets = touched;
  return TL_OK;
}

int tl__partition_completed(struct tl_scheduler *s, uint32_t stage_id, uint32_t index) {
  tl__stage *st = tl__stage_find(s, stage_id);
  if (st == NULL)
    return TL_ENOENT;
  tl__taskset *ts = st->active;
  if (ts == NULL)
    return TL_OK;
  if (index >= ts->ntasks)
    return TL_EINVAL;
  if (ts->idx[index].flags & TL__IDX_SUCCESSFUL)
    return TL_OK;
  if (tl__events_reserve(s, 1) != TL_OK)
    return TL_ENOMEM;
  mark_successful(s, ts, index);
  finish_if_drained(s, ts);
  return TL_OK;
}

void tl__taskset_destroy(struct tl_scheduler *s, tl__taskset *ts) {
  tl__exclude_taskset_free(s, ts);
  free_tried(s, ts);
  tl__locality_free(s, ts);
  tl__speculation_free(s, ts);
  while (!tl__list_empty(&ts->outputs))
    output_free(s, tl__container_of(ts->outputs.next, tl__output, on_taskset));
  while (!tl__list_empty(&ts->running)) {
    tl__attempt *a = tl__container_of(ts->running.next, tl__attempt, on_taskset);
    tl__list_remove(&a->on_taskset);
    tl__attempt_free(s, a);
  }
  tl__queue_remove(ts);
  tl__res_taskset_free(s, ts->req);
  tl__tags_free(s, ts->tags);
  tl__placement_destroy(s, ts);
  ts->pool->running -= ts->nrunning;
  ts->pool->ntasksets--;
  stage_unlink(s, ts);
  HASH_DELETE(hh_by_id, s->tasksets_by_id, ts);
  tl__free(s, ts, tl__taskset_bytes(ts));
}

/* ---------------------------------------------------------------------------------------------
 * tl_check's part: map outputs, task sets with their per-index state, stacks and speculation
 * arrays, their queue membership, and stages.
 * ------------------------------------------------------------------------------------------- */

/* The map outputs the executors hold: each of a done index of an active shuffle-map task set;
 * *found counts them. */
static int check_outputs(tl__checker *c, size_t *found) {
  struct tl_scheduler *s = c->s;
  *found = 0;
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    const char *id = tl__executor_id(ex);
    size_t n = 0;
    for (tl__link *l = ex->outputs.next; l != &ex->outputs; l = l->next) {
      const tl__output *out = tl__container_of(l, tl__output, on_executor);
      const tl__taskset *ts = out->taskset;
      TL__CHECK(c, ++n <= ex->noutputs, "executor %s: output list does not end", id);
      TL__CHECK(c, out->executor == ex && tl__taskset_find(s, ts->id) == ts,
                "executor %s holds a map output of another executor or of a released task set", id);
      TL__CHECK(c,
                ts->shuffle_map && !ts->zombie && out->index < ts->ntasks &&
                    (ts->idx[out->index].flags & TL__IDX_SUCCESSFUL),
                "executor %s holds a map output of task set %llu index %u that is not a done "
                "index of an active shuffle-map task set",
                id, (unsigned long long)ts->id, out->index);
      TL__CHECK(c, ex->state != TL_EXECUTOR_REMOVED, "tombstone %s holds map outputs", id);
    }
    TL__CHECK(c, n == ex->noutputs, "executor %s: %zu map outputs, count says %u", id, n,
              ex->noutputs);
    tl__check_account_n(c, n, sizeof(tl__output));
    *found += n;
  }
  return TL_OK;
}

/* Each index is pending, running or done; the pending stack. */
static int check_indices(tl__checker *c, const tl__taskset *ts) {
  unsigned long long id = (unsigned long long)ts->id;
  size_t copies = 0, succeeded = 0, flagged = 0;
  for (uint32_t i = 0; i < ts->ntasks; i++) {
    const tl__index *ix = &ts->idx[i];
    copies += ix->copies_running;
    if (ix->flags & TL__IDX_SUCCESSFUL)
      succeeded++;
    if (ix->flags & TL__IDX_PENDING) {
      flagged++;
      TL__CHECK(c, !ts->zombie, "zombie task set %llu has index %u pending", id, i);
      TL__CHECK(c, !(ix->flags & TL__IDX_SUCCESSFUL) && ix->copies_running == 0,
                "task set %llu: index %u is pending but done or running", id, i);
    } else if (!ts->zombie) {
      TL__CHECK(c, (ix->flags & TL__IDX_SUCCESSFUL) || ix->copies_running > 0,
                "task set %llu: index %u is neither pending, running nor done: it would never "
                "run",
                id, i);
    }
    TL__CHECK(c, ix->failures < ts->max_failures || ts->zombie,
              "task set %llu: index %u failed %u times and the set is not aborted", id, i,
              ix->failures);
  }
  TL__CHECK(c, copies == ts->nrunning, "task set %llu: indices count %zu copies, %u running", id,
            copies, ts->nrunning);
  TL__CHECK(c, succeeded == ts->nsucceeded, "task set %llu: %zu indices done, count says %u", id,
            succeeded, ts->nsucceeded);
  TL__CHECK(c, succeeded < ts->ntasks || ts->zombie, "task set %llu: all done but not zombie", id);

  size_t walked = 0;
  uint32_t prev = TL__NONE;
  for (uint32_t i = ts->pending_top; i != TL__NONE; i = ts->idx[i].next) {
    TL__CHECK(c, i < ts->ntasks && ++walked <= ts->ntasks, "task set %llu: pending stack broken",
              id);
    TL__CHECK(c, (ts->idx[i].flags & TL__IDX_PENDING) && ts->idx[i].prev == prev,
              "task set %llu: pending stack link of index %u broken", id, i);
    prev = i;
  }
  TL__CHECK(c, walked == ts->npending && flagged == ts->npending,
            "task set %llu: %zu on the pending stack, %zu flagged, count says %u", id, walked,
            flagged, ts->npending);
  return TL_OK;
}

/* Speculation: the speculative stack holds exactly the SPECULATABLE indices, each with one copy
 * running; the copies of an index know each other; hosts tried are held. */
static int check_speculation(tl__checker *c, const tl__taskset *ts) {
  unsigned long long id = (unsigned long long)ts->id;
  size_t walked = 0, flagged = 0;
  uint32_t prev = TL__NONE;
  for (uint32_t i = ts->speculative_top; i != TL__NONE; i = ts->idx[i].next) {
    TL__CHECK(c, i < ts->ntasks && ++walked <= ts->ntasks,
              "task set %llu: speculative stack broken", id);
    const tl__index *ix = &ts->idx[i];
    TL__CHECK(c, (ix->flags & TL__IDX_SPECULATABLE) && ix->prev == prev,
              "task set %llu: speculative stack link of index %u broken", id, i);
    TL__CHECK(c, !(ix->flags & (TL__IDX_SUCCESSFUL | TL__IDX_PENDING)) && ix->copies_running == 1,
              "task set %llu: speculatable index %u is done, pending, or has %u copies", id, i,
              ix->copies_running);
    prev = i;
  }
  for (uint32_t i = 0; i < ts->ntasks; i++)
    flagged += (ts->idx[i].flags & TL__IDX_SPECULATABLE) != 0;
  TL__CHECK(c, walked == ts->nspeculatable && flagged == ts->nspeculatable,
            "task set %llu: %zu on the speculative stack, %zu flagged, count says %u", id, walked,
            flagged, ts->nspeculatable);
  TL__CHECK(c, ts->heap != NULL || (ts->nspeculatable == 0 && ts->tried == NULL),
            "task set %llu speculates without its arrays", id);
  TL__CHECK(c,
            ts->heap == NULL ||
                (ts->heap_cap >= ts->ntasks && ts->nheap_low + ts->nheap_high <= ts->heap_cap &&
                 ts->nheap_high <= ts->nheap_low && ts->nheap_low <= ts->nheap_high + 1),
            "task set %llu: median heap of %u + %u run times in %u slots", id, ts->nheap_low,
            ts->nheap_high, ts->heap_cap);
  if (ts->heap != NULL && ts->heap_cap > ts->ntasks)
    tl__check_account(c, (size_t)ts->heap_cap * sizeof *ts->heap);
  for (tl__link *l = ts->running.next; l != &ts->running; l = l->next) {
    const tl__attempt *a = tl__container_of(l, tl__attempt, on_taskset);
    TL__CHECK(c,
              a->sibling == NULL || (a->sibling->sibling == a && a->sibling->taskset == ts &&
                                     a->sibling->index == a->index),
              "tid %llu: its sibling copy does not point back", (unsigned long long)a->tid);
    TL__CHECK(c, ts->first == NULL || ts->first[a->index] == a || ts->first[a->index] == a->sibling,
              "task set %llu: index %u's running copy is not recorded", id, a->index);
  }
  for (uint32_t i = 0; ts->tried != NULL && i < ts->ntasks; i++) {
    TL__CHECK(c, (ts->first[i] != NULL) == (ts->idx[i].copies_running > 0),
              "task set %llu: index %u has %u copies but a recorded copy %p", id, i,
              ts->idx[i].copies_running, (void *)ts->first[i]);
    size_t ntried = 0;
    for (const tl__tried *t = ts->tried[i]; t != NULL; t = t->next) {
      TL__CHECK(c, ++ntried <= ts->idx[i].attempts,
                "task set %llu: index %u tried on more hosts than its %u attempts", id, i,
                ts->idx[i].attempts);
      tl__check_account(c, sizeof *t);
    }
  }
  return TL_OK;
}

/* Invariant 6: stages. */
static int check_stages(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  size_t attempts = 0;
  for (tl__stage *st = s->stages_by_id; st != NULL; st = st->hh_by_id.next) {
    tl__check_account(c, sizeof *st);
    size_t k = 0, live = 0;
    for (tl__link *l = st->attempts.next; l != &st->attempts; l = l->next) {
      const tl__taskset *ts = tl__container_of(l, tl__taskset, on_stage);
      TL__CHECK(c, ++k <= HASH_CNT(hh_by_id, s->tasksets_by_id),
                "stage %u: attempt list does not end", st->stage_id);
      TL__CHECK(c, ts->stage == st && ts->stage_id == st->stage_id,
                "stage %u lists a task set of another stage", st->stage_id);
      TL__CHECK(c, tl__taskset_find(s, ts->id) == ts, "stage %u lists released task set %llu",
                st->stage_id, (unsigned long long)ts->id);
      live += !ts->zombie;
    }
    TL__CHECK(c, k == st->nattempts && k > 0, "stage %u: %zu attempts, count says %u", st->stage_id,
              k, st->nattempts);
    TL__CHECK(c, live <= 1, "invariant 6: stage %u has %zu non-zombie attempts", st->stage_id,
              live);
    TL__CHECK(c, (live == 1) == (st->active != NULL),
              "invariant 6: stage %u's active attempt is %s", st->stage_id,
              st->active != NULL ? "set with none live" : "missing");
    attempts += k;
  }
  TL__CHECK(c, attempts == HASH_CNT(hh_by_id, s->tasksets_by_id), "stages list %zu task sets of %u",
            attempts, HASH_CNT(hh_by_id, s->tasksets_by_id));
  tl__check_account_table(c, s->stages_by_id != NULL ? s->stages_by_id->hh_by_id.tbl : NULL);
  return TL_OK;
}

/* Invariants 3 (task set side), 4 and 6, each task set's index state, and the queues. running
 * and frozen are the attempts the executors' lists hold. */
int tl__tasksets_check(tl__checker *c, size_t running, size_t frozen) {
  struct tl_scheduler *s = c->s;
  size_t outputs;
  int err = check_outputs(c, &outputs);
  if (err != TL_OK)
    return err;
  size_t nactive = 0, nzombie = 0, pending = 0, sum_running = 0, sum_frozen = 0, queued = 0;
  size_t queued_at[TL__QUEUE_LEVELS] = {0};
  size_t sum_outputs = 0, speculatable = 0;
  for (tl__pool *p = s->pools_by_name; p != NULL; p = p->hh_by_name.next)
    p->check_running = p->check_tasksets = 0;
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    unsigned long long id = (unsigned long long)ts->id;
    tl__check_account(c, tl__taskset_bytes(ts));
    if (ts->tags != NULL)
      tl__check_account(c, tl__tags_size(ts->tags));
    TL__CHECK(c, ts->max_failures >= 1, "task set %llu: max_task_failures 0", id);
    TL__CHECK(c, tl__stage_find(s, ts->stage_id) == ts->stage, "task set %llu: stage entry lost",
              id);
    TL__CHECK(c, !ts->zombie || ts->nrunning > 0,
              "invariant 4: zombie task set %llu has nothing running and was not released", id);
    TL__CHECK(c, ts->zombie || ts->stage->active == ts,
              "invariant 6: task set %llu (stage %u) is not zombie but not its stage's active "
              "attempt",
              id, ts->stage_id);
    if (ts->zombie)
      nzombie++;
    else
      nactive++;

    size_t n = 0, nf = 0;
    for (tl__link *l = ts->running.next; l != &ts->running; l = l->next) {
      tl__attempt *a = tl__container_of(l, tl__attempt, on_taskset);
      TL__CHECK(c, ++n <= running + frozen, "task set %llu: running list does not end", id);
      TL__CHECK(c, a->taskset == ts,
                "invariant 1: tid %llu on task set %llu's list points elsewhere",
                (unsigned long long)a->tid, id);
      TL__CHECK(c, a->index < ts->ntasks && ts->idx[a->index].copies_running > 0,
                "task set %llu: tid %llu's index %u has no running copy", id,
                (unsigned long long)a->tid, a->index);
      if (a->frozen) {
        nf++;
        TL__CHECK(c,
                  a->executor->state == TL_EXECUTOR_PENDING_LOSS ||
                      a->executor->state == TL_EXECUTOR_RECOVERING,
                  "invariant 2: tid %llu frozen on %s executor", (unsigned long long)a->tid,
                  tl_executor_state_name(a->executor->state));
      } else {
        TL__CHECK(c, tl__attempt_find(s, a->tid) == a,
                  "invariant 1: tid %llu of task set %llu is neither running nor frozen",
                  (unsigned long long)a->tid, id);
      }
    }
    TL__CHECK(c, n == ts->nrunning && nf == ts->nfrozen,
              "task set %llu: %zu running (%zu frozen), counts say %u (%u)", id, n, nf,
              ts->nrunning, ts->nfrozen);
    sum_running += n;
    sum_frozen += nf;
    size_t nout = 0;
    for (tl__link *l = ts->outputs.next; l != &ts->outputs; l = l->next) {
      TL__CHECK(c, ++nout <= outputs, "task set %llu: output list does not end", id);
      TL__CHECK(c, tl__container_of(l, tl__output, on_taskset)->taskset == ts,
                "task set %llu lists a map output of another task set", id);
    }
    sum_outputs += nout;

    err = check_indices(c, ts);
    if (err == TL_OK)
      err = check_speculation(c, ts);
    if (err != TL_OK)
      return err;
    if (!ts->zombie)
      pending += ts->npending;
    speculatable += ts->nspeculatable;

    bool is_schedulable = schedulable(ts);
    TL__CHECK(c, is_schedulable == (ts->queue_levels > 0),
              "task set %llu: in the queue %d, schedulable %d", id, ts->queue_levels > 0,
              is_schedulable);
    queued += is_schedulable;
    ts->pool->check_running += ts->nrunning;
    ts->pool->check_tasksets++;
    for (int level = 0; level < ts->queue_levels && level < TL__QUEUE_LEVELS; level++)
      queued_at[level]++;
  }
  TL__CHECK(c, nactive == s->nactive && nzombie == s->nzombie,
            "task set counts disagree: active %zu/%zu, zombie %zu/%zu", nactive, s->nactive,
            nzombie, s->nzombie);
  TL__CHECK(c, sum_running == running + frozen && sum_frozen == frozen,
            "invariant 3: task sets run %zu attempts (%zu frozen), executors %zu (%zu frozen)",
            sum_running, sum_frozen, running + frozen, frozen);
  TL__CHECK(c, pending == s->npending_tasks, "%zu tasks pending, count says %zu", pending,
            s->npending_tasks);
  TL__CHECK(c, speculatable == s->nspeculatable, "%zu speculatable, count says %zu", speculatable,
            s->nspeculatable);
  TL__CHECK(c, sum_outputs == outputs, "task sets list %zu map outputs, executors hold %zu",
            sum_outputs, outputs);
  tl__check_account_table(c, s->tasksets_by_id != NULL ? s->tasksets_by_id->hh_by_id.tbl : NULL);

  err = tl__pools_check(c, queued, queued_at);
  if (err == TL_OK)
    err = check_stages(c);
  return err;
}

void tl__tasksets_each_str(tl__checker *c, tl__str_fn *fn) {
  for (const tl__taskset *ts = c->s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next)
    for (uint32_t i = 0; ts->tried != NULL && i < ts->ntasks; i++)
      for (const tl__tried *t = ts->tried[i]; t != NULL; t = t->next)
        fn(c, t->names, "a host tried");
}

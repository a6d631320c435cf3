/* The callbacks, which check each event against the expected one and then act re-entrantly as
 * the operation asks, and the applier, which resolves an operation's bytes against the model
 * and makes its calls.
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Callbacks: compare with the expected event, then act re-entrantly as the operation asks.
 * ------------------------------------------------------------------------------------------- */

static tlo_run *cb_enter(void *ud) {
  tlo_run *r = ud;
  if (r->failed)
    return NULL;
  r->events++;
  r->in_cb++;
  return r;
}

/* The re-entrant actions any callback may take, once per operation. */
static void cb_leave(tlo_run *r) {
  if (!r->failed && !r->closing && r->s != NULL && !r->re_first_done &&
      (r->reent & (TLO_RE_FREE | TLO_RE_TICK))) {
    r->re_first_done = true;
    if (r->reent & TLO_RE_FREE) {
      tlo_note_call(r, "scheduler_free");
      int rc = tl_scheduler_free(r->s);
      tlo_expect_rc(r, "scheduler_free", rc, TL_EBUSY);
      /* Nor is a snapshot taken while an event is undelivered (this one). */
      tlo_note_call(r, "snapshot");
      rc = tl_snapshot(r->s, tlo_discard_image, r);
      tlo_expect_rc(r, "snapshot", rc, TL_EBUSY);
    }
    if ((r->reent & TLO_RE_TICK) && !r->failed)
      tlo_do_tick(r);
  }
  r->in_cb--;
}

static void cmp_str(tlo_run *r, const char *what, const char *got, const char *want) {
  if ((got == NULL) != (want == NULL) || (got != NULL && strcmp(got, want) != 0))
    tlo_fail(r, "%s is \"%.60s\", the model says \"%.60s\"", what, got ? got : "(null)",
             want ? want : "(null)");
}

static void cmp_task(tlo_run *r, const mevent *e, const tl_task_info *t) {
  const mts *ts = &r->ts[e->ts];
  CMP(r, "task.tid", t->tid, e->tid);
  CMP(r, "task.taskset", t->taskset, ts->id);
  CMP(r, "task.stage_id", t->stage_id, ts->stage);
  CMP(r, "task.stage_attempt", t->stage_attempt, ts->sattempt);
  CMP(r, "task.index", t->index, e->index);
  CMP(r, "task.attempt", t->attempt, e->attempt);
  CMP(r, "task.locality", t->locality, e->loc);
  CMP(r, "task.speculative", t->speculative, e->spec);
  cmp_str(r, "task.executor_id", t->executor_id, e->ex->id);
  cmp_str(r, "task.host", t->host, tlo_host_names[e->ex->host]);
  if (t->executor_ud != e->ex)
    tlo_fail(r, "task.executor_ud is not the ud %s was registered with", e->ex->id);
  if (t->payload != (ts->lost_payload ? NULL : ts))
    tlo_fail(r, "task.payload is not its task set's%s", ts->lost_payload ? " (NULL)" : "");
  /* The addresses it holds: its own, as booked at launch, while the event's attempt ends;
   * none for a success whose output is lost long after it ended (RESUBMITTED). */
  static const matt none; /* ngr 0 */
  if (e->tid >= 1 && e->tid <= r->natt)
    tlo_res_cmp_grants(r, "task", t->grants, t->ngrants,
                       e->type == EV_ENDED && e->kind == TL_END_RESUBMITTED ? &none
                                                                            : &r->att[e->tid - 1]);
}

void tlo_cb_task_started(void *ud, const tl_task_info *t) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, EV_STARTED);
  if (e != NULL) {
    cmp_task(r, e, t);
    tlo_cb_check(r, (int)e->ts, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_RUNNING))
    tlo_do_update(r, tlo_exec_by_id(r, t->executor_id), t->tid, TL_TASK_RUNNING, 0, NULL, 0, 0);
  if (!r->failed && (r->reent & TLO_RE_FINISH) && !r->re_finish_done) {
    r->re_finish_done = true;
    tlo_do_update(r, tlo_exec_by_id(r, t->executor_id), t->tid, TL_TASK_FINISHED, 0, "re-entrant",
                  1, r->re_arg);
  }
  cb_leave(r);
}

void tlo_cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, EV_ENDED);
  if (e != NULL) {
    cmp_task(r, e, t);
    CMP(r, "end.kind", end->kind, e->kind);
    CMP(r, "end.counts_toward_failures", end->counts_toward_failures, e->counts);
    cmp_str(r, "end.message", end->message, e->text);
    CMP(r, "end.result_size", end->result_size, e->result_size);
    if (end->result != e->result || end->result_free != e->result_free) {
      tlo_fail(r, "end.result %p (free %s) is not the update's %p (free %s)", end->result,
               end->result_free ? "set" : "NULL", e->result, e->result_free ? "set" : "NULL");
    } else if (end->result != NULL) {
      tlo_res *res = end->result;
      if (res->magic != RES_MAGIC)
        tlo_fail(r, "end.result is not a result of this run");
      else if (end->result_free != NULL)
        end->result_free(end->result);
      else
        tlo_res_free(res);
    }
    if (e->dropped != NULL) {
      /* Withheld: the library has freed it with result_free; without one, nobody can (the
       * callee gets NULL), so the run counts it freed here. */
      tlo_res *res = e->dropped;
      if (e->result_free == NULL)
        tlo_res_free(res);
      else if (res->frees != 1)
        tlo_fail(r, "a withheld result was freed %u times before task_ended", res->frees);
    }
    tlo_cb_check(r, (int)e->ts, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_POKE) && !r->re_lose_done) {
    r->re_lose_done = true;
    mexec *x = tlo_exec_by_id(r, t->executor_id);
    if (x != NULL)
      tlo_do_lose(r, x, TL_LOSS_PROCESS_LOST, true, 1, "lost re-entrantly");
  }
  if (!r->failed && (r->reent & TLO_RE_SUBMIT) && !r->re_submit_done) {
    r->re_submit_done = true;
    tlo_do_submit(r, r->re_arg % NSTAGES, -1, (r->re_arg >> 3) & 3, 1 + (r->re_arg >> 5), 0, 0,
                  (r->re_arg & 4) != 0, false, NULL);
  }
  cb_leave(r);
}

void tlo_cb_speculative(void *ud, const tl_taskset_info *ts, uint32_t index) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, EV_SPEC);
  if (e != NULL) {
    const mts *t = &r->ts[e->ts];
    CMP(r, "speculative.id", ts->id, t->id);
    CMP(r, "speculative.stage_id", ts->stage_id, t->stage);
    CMP(r, "speculative.stage_attempt", ts->stage_attempt, t->sattempt);
    CMP(r, "speculative.ntasks", ts->ntasks, t->ntasks);
    CMP(r, "speculative.index", index, e->index);
    tlo_cb_check(r, (int)e->ts, NULL);
  }
  cb_leave(r);
}

void tlo_cb_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, EV_FAILED);
  if (e != NULL) {
    const mts *t = &r->ts[e->ts];
    CMP(r, "failed.id", ts->id, t->id);
    CMP(r, "failed.stage_id", ts->stage_id, t->stage);
    CMP(r, "failed.stage_attempt", ts->stage_attempt, t->sattempt);
    CMP(r, "failed.ntasks", ts->ntasks, t->ntasks);
    cmp_str(r, "failed.reason", reason, e->text);
    tlo_cb_check(r, (int)e->ts, NULL);
  }
  cb_leave(r);
}

/* Inside a taskset_released that tl_scheduler_free makes: inspection works, every mutating call
 * is TL_EBUSY (freeing again too, and whatever its arguments name) and tl_tick answers
 * TL_TICK_NEVER. */
static void while_closing(tlo_run *r) {
  tlo_check_ledger(r);
  tl_taskset_desc desc = {.stage_id = 0, .stage_attempt = 1000, .ntasks = 1};
  tlo_note_call(r, "submit while freeing");
  tlo_expect_rc(r, "submit while freeing", tl_submit(r->s, &desc, NULL), TL_EBUSY);
  tl_offer offer = {r->ex[0][0].id, 1};
  tl_launch out[1];
  size_t nout = 99;
  tlo_note_call(r, "offer while freeing");
  tlo_expect_rc(r, "offer while freeing", tl_resource_offers(r->s, &offer, 1, out, 1, &nout),
                TL_EBUSY);
  if (nout != 0)
    tlo_fail(r, "tl_resource_offers while freeing set *nout to %zu", nout);
  const char *id = r->ex[0][0].id;
  tl_executor_desc ed = {.id = "busy", .host = "h0", .rack = NULL, .cores = 1, .ud = NULL};
  tl_loss_reason why = {TL_LOSS_KILLED, false, 0, NULL};
  tl_update u = {TL_TASK_RUNNING, TL_END_SUCCESS, NULL, NULL, 0, NULL, false};
  tlo_note_call(r, "every mutating call while freeing");
  tlo_expect_rc(r, "add while freeing", tl_executor_add(r->s, &ed), TL_EBUSY);
  tlo_expect_rc(r, "lose while freeing", tl_executor_lost(r->s, id, &why), TL_EBUSY);
  tlo_expect_rc(r, "heartbeat while freeing", tl_executor_heartbeat(r->s, id), TL_EBUSY);
  tlo_expect_rc(r, "decommission while freeing", tl_executor_decommission(r->s, id, NULL),
                TL_EBUSY);
  tlo_expect_rc(r, "kill_task while freeing", tl_kill_task(r->s, 1, false, NULL), TL_EBUSY);
  tlo_expect_rc(r, "kill_stage while freeing", tl_kill_stage(r->s, 0, false, NULL), TL_EBUSY);
  tlo_expect_rc(r, "cancel_stage while freeing", tl_cancel_stage(r->s, 0, NULL), TL_EBUSY);
  tlo_expect_rc(r, "partition while freeing", tl_partition_completed(r->s, 0, 0), TL_EBUSY);
  tlo_expect_rc(r, "pool_add while freeing", tl_pool_add(r->s, "busy", TL_FAIR, 1, 0), TL_EBUSY);
  tlo_expect_rc(r, "update while freeing", tl_status_update(r->s, id, 1, &u), TL_EBUSY);
  tl_tid tids[2] = {1, 2};
  tl_update us[2] = {u, u};
  int results[2] = {1, 1};
  tlo_expect_rc(r, "updates while freeing", tl_status_updates(r->s, id, tids, us, 2, results),
                TL_EBUSY);
  if (results[0] != 1 || results[1] != 1)
    tlo_fail(r, "tl_status_updates while freeing wrote its results");
  tlo_note_call(r, "scheduler_free while freeing");
  tlo_expect_rc(r, "scheduler_free while freeing", tl_scheduler_free(r->s), TL_EBUSY);
  uint64_t next = tl_tick(r->s);
  if (next != TL_TICK_NEVER)
    tlo_fail(r, "tl_tick while freeing returned %" PRIu64 ", not TL_TICK_NEVER", next);
}

void tlo_cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, EV_RELEASED);
  int k = tlo_ts_of_payload(r, payload);
  if (e == NULL) {
    /* the run has failed already */
  } else if (payload != (r->ts[e->ts].lost_payload ? NULL : &r->ts[e->ts])) {
    tlo_fail(r,
             "taskset_released of %" PRIu64 " hands back %s, the model says task set %" PRIu64
             "'s %s",
             ts->id,
             k >= 0    ? "another task set's payload"
             : payload ? "no payload of the run"
                       : "NULL",
             r->ts[e->ts].id, r->ts[e->ts].lost_payload ? "NULL" : "payload");
  } else if (!e->not_final && ++r->ts[e->ts].released_seen > 1) {
    tlo_fail(r, "task set %" PRIu64 " released a second time", r->ts[e->ts].id);
  } else {
    const mts *t = &r->ts[e->ts];
    CMP(r, "released.id", ts->id, t->id);
    CMP(r, "released.stage_id", ts->stage_id, t->stage);
    CMP(r, "released.stage_attempt", ts->stage_attempt, t->sattempt);
    CMP(r, "released.ntasks", ts->ntasks, t->ntasks);
    tlo_cb_check(r, (int)e->ts, NULL);
  }
  if (!r->failed && r->closing)
    while_closing(r);
  cb_leave(r);
}

void tlo_cb_executor_added(void *ud, const char *id, const char *host) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, EV_ADDED);
  if (e != NULL) {
    cmp_str(r, "added.executor_id", id, e->ex->id);
    cmp_str(r, "added.host", host, tlo_host_names[e->ex->host]);
    tlo_cb_check(r, -1, e->ex);
  }
  cb_leave(r);
}

/* executor_lost (the loss begins) and executor_removed (it ends: after the executor's
 * executor_lost and the ends of its second phase): the model's next event of that type names the
 * executor, its ud and the reason. A poking run heartbeats the executor from inside (from
 * executor_removed it is gone: TL_EGONE, or TL_ENOENT once forgotten). */
static void cb_loss_event(void *ud, ev_type type, const char *event, const char *id,
                          void *executor_ud, const tl_loss_reason *why) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, type);
  if (e != NULL) {
    char w[48];
#define WHAT(field) (snprintf(w, sizeof w, "%s." field, event), w)
    cmp_str(r, WHAT("executor_id"), id, e->ex->id);
    if (executor_ud != e->ex)
      tlo_fail(r, "%s.executor_ud is not the ud %s was registered with", event, e->ex->id);
    CMP(r, WHAT("kind"), why->kind, e->loss);
    CMP(r, WHAT("caused_by_app"), why->caused_by_app, e->app);
    CMP(r, WHAT("exit_code"), why->exit_code, e->exit_code);
    cmp_str(r, WHAT("message"), why->message, e->text);
#undef WHAT
    tlo_cb_check(r, -1, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_POKE)) {
    mexec *x = tlo_exec_by_id(r, id);
    if (x != NULL)
      tlo_do_heartbeat(r, x);
  }
  cb_leave(r);
}

void tlo_cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *why) {
  cb_loss_event(ud, EV_LOST, "lost", id, executor_ud, why);
}

void tlo_cb_executor_removed(void *ud, const char *id, void *executor_ud,
                             const tl_loss_reason *why) {
  cb_loss_event(ud, EV_REMOVED, "removed", id, executor_ud, why);
}

void tlo_cb_revive(void *ud) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  if (tlo_pop_ev(r, EV_REVIVE) != NULL)
    tlo_cb_check(r, -1, NULL);
  if (!r->failed && (r->reent & TLO_RE_OFFER) && !r->re_offer_done) {
    r->re_offer_done = true;
    tlo_do_offer_alive(r, 64, 16, false);
  }
  cb_leave(r);
}

void tlo_cb_kill(void *ud, tl_tid tid, const char *id, void *executor_ud, bool interrupt,
                 const char *reason) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = tlo_pop_ev(r, EV_KILL);
  if (e != NULL) {
    CMP(r, "kill.tid", tid, e->tid);
    cmp_str(r, "kill.executor_id", id, e->ex->id);
    if (executor_ud != e->ex)
      tlo_fail(r, "kill.executor_ud is not the ud %s was registered with", e->ex->id);
    CMP(r, "kill.interrupt", interrupt, e->interrupt);
    cmp_str(r, "kill.reason", reason, e->text);
    tlo_cb_check(r, -1, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_KILLED)) {
    mexec *x = tlo_exec_by_id(r, id);
    if (x != NULL)
      tlo_do_update(r, x, tid, TL_TASK_KILLED, 0, "killed as asked", 0, 0);
  }
  cb_leave(r);
}

/* The resolvers of tl_scheduler_restore: asked in the order the model says (ask_ts, ask_ex), each
 * once; a task set's payload is given back unless the operation withholds it (a payload already
 * lost is NULL), an executor's ud is the record it was registered with. */
static bool cb_taskset_restored(void *ud, const tl_taskset_info *ts, void **payload) {
  tlo_run *r = ud;
  *payload = NULL;
  if (r->failed)
    return false;
  if (!r->resolvers_armed) {
    tlo_fail(r, "taskset_restored(%" PRIu64 ") called where no restore may call it", ts->id);
    return false;
  }
  if (r->next_ex != r->nask_ex) {
    tlo_fail(r, "taskset_restored called before executor_restored was asked for every executor");
    return false;
  }
  if (r->res_next_ts == r->nask_ts) {
    tlo_fail(r, "taskset_restored(%" PRIu64 ") asked for more task sets than the model holds",
             ts->id);
    return false;
  }
  mts *t = &r->ts[r->ask_ts[r->res_next_ts++]];
  CMP(r, "restored.id", ts->id, t->id);
  CMP(r, "restored.stage_id", ts->stage_id, t->stage);
  CMP(r, "restored.stage_attempt", ts->stage_attempt, t->sattempt);
  CMP(r, "restored.ntasks", ts->ntasks, t->ntasks);
  uint32_t k = (uint32_t)(t - r->ts);
  if (r->withhold[k])
    return false;
  *payload = t->lost_payload ? NULL : t;
  return true;
}

static void *cb_executor_restored(void *ud, const char *id, const char *host) {
  tlo_run *r = ud;
  if (r->failed)
    return NULL;
  if (!r->resolvers_armed) {
    tlo_fail(r, "executor_restored(%s) called where no restore may call it", id);
    return NULL;
  }
  if (r->next_ex == r->nask_ex) {
    tlo_fail(r, "executor_restored(%s) asked for more executors than the model holds", id);
    return NULL;
  }
  mexec *x = r->ask_ex[r->next_ex++];
  cmp_str(r, "restored executor id", id, x->id);
  cmp_str(r, "restored executor host", host, tlo_host_names[x->host]);
  return x;
}

const tl_callbacks *tlo_callbacks(tlo_run *r) {
  r->cb = (tl_callbacks){.ud = r,
                         .task_started = tlo_cb_task_started,
                         .task_ended = tlo_cb_task_ended,
                         .taskset_failed = tlo_cb_taskset_failed,
                         .taskset_released = tlo_cb_taskset_released,
                         .executor_added = tlo_cb_executor_added,
                         .executor_lost = tlo_cb_executor_lost,
                         .executor_removed = tlo_cb_executor_removed,
                         .revive_offers = tlo_cb_revive,
                         .speculative_task_submitted = tlo_cb_speculative,
                         .kill_task = tlo_cb_kill,
                         .taskset_restored = cb_taskset_restored,
                         .executor_restored = cb_executor_restored};
  tlo_demand_callbacks(r, &r->cb); /* demand events, for the programs that run with them */
  return &r->cb;
}

int tlo_discard_image(void *ud, const void *buf, size_t n) {
  (void)ud;
  (void)buf;
  (void)n;
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Resolving an operation's bytes against the model, and applying it.
 * ------------------------------------------------------------------------------------------- */

/* TLO_CLOCK's steps; the last three are special: one speculation interval, back 3 s, and a
 * jump to 20 s before the end of time, after which deadlines saturate and never come. 1 ns
 * probes every "longer than". */
static const uint64_t clock_steps[] = {0,
                                       1,
                                       SEC / 1000,
                                       SEC / 2,
                                       SEC,
                                       2 * SEC,
                                       4 * SEC,
                                       5 * SEC,
                                       6 * SEC,
                                       10 * SEC,
                                       11 * SEC,
                                       31 * SEC,
                                       0 /* one speculation interval */,
                                       0 /* back */,
                                       0 /* to the end of time */};
#define NCLOCK_STEPS (sizeof clock_steps / sizeof clock_steps[0])
#define CLOCK_BACK (3 * SEC)
#define CLOCK_END (UINT64_MAX - 20 * SEC)

static const char *message_of(uint8_t m) {
  switch (m % 4) {
  case 1:
    return "m1";
  case 2:
    return "a second message";
  case 3:
    return tlo_long_message;
  default:
    return NULL;
  }
}

mexec *tlo_resolve_exec(tlo_run *r, uint8_t v) {
  unsigned slot = v & 7, back = (v >> 3) & 3;
  if (back == 3 || back >= r->ngen[slot])
    return &r->phantom[slot];
  return &r->ex[slot][r->ngen[slot] - 1 - back];
}

tl_tid tlo_resolve_tid(tlo_run *r, uint8_t sel) {
  tl_tid max = (tl_tid)r->natt;
  if (sel < 160) {
    int frozen = sel >= 128;
    size_t n = 0;
    for (size_t i = 0; i < r->ninflight; i++)
      n += r->att[r->inflight[i] - 1].frozen == (frozen != 0);
    if (n > 0) {
      /* Spread over all of them, however many there are. */
      size_t want = frozen ? (sel - 128u) % n : (size_t)sel * n / 128;
      for (size_t i = 0; i < r->ninflight; i++)
        if (r->att[r->inflight[i] - 1].frozen == (frozen != 0) && want-- == 0)
          return r->inflight[i];
    }
    if (!frozen || max == 0)
      return max + 1; /* nothing of that kind: a tid never launched */
  }
  if (sel < 224)
    return max == 0 ? 1 : max - sel % max;
  return (sel & 1) ? 0 : max + 1 + ((sel - 224u) >> 1);
}

/* The attempt of a TLO_UPDATES update (upd_tid), resolved against the batch's executor x and the
 * i updates before it: 0-127 one of x's attempts in the tid index, sel/128 of the way along
 * those no earlier update of the batch names (along all of them once each is named; a tid never
 * launched when it has none), 128-143 the tid of an earlier update (with none before, as 0-127),
 * 144-159 a frozen attempt (tlo_resolve_tid's 128-143), 160-191 an attempt of another executor
 * in the tid index, 192-255 what tlo_resolve_tid makes of it (any tid launched, a tid never
 * launched). */
/* What the attempt inflight[k] is to resolve_batch_tid: -1 not a candidate (frozen, or x's when
 * others' are wanted, or the other way round), 0 one no earlier update names, 1 one that an
 * earlier update names (only x's own are looked up). */
static int batch_candidate(const tlo_run *r, size_t k, const mexec *x, bool own,
                           const mupdate *before, size_t i) {
  const matt *a = &r->att[r->inflight[k] - 1];
  if (a->frozen || (a->ex == x) != own)
    return -1;
  for (size_t j = 0; own && j < i; j++)
    if (before[j].tid == r->inflight[k])
      return 1;
  return 0;
}

static tl_tid resolve_batch_tid(tlo_run *r, const mexec *x, uint8_t sel, const mupdate *before,
                                size_t i) {
  if (sel >= 128 && sel < 144) {
    if (i > 0)
      return before[(sel - 128u) % i].tid;
    sel = (uint8_t)((sel - 128u) * 8);
  }
  if (sel >= 144 && sel < 160)
    return tlo_resolve_tid(r, (uint8_t)(sel - 16));
  if (sel >= 192)
    return tlo_resolve_tid(r, sel);
  bool own = sel < 128;
  size_t n = 0, fresh = 0; /* candidates; of which not named yet (x's own only) */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t k = 0; k < r->ninflight; k++)
      n += batch_candidate(r, k, x, own, before, i) == pass;
    if (pass == 0)
      fresh = n;
  }
  if (n == 0)
    return (tl_tid)r->natt + 1; /* nothing of that kind: a tid never launched */
  size_t want = !own        ? (size_t)(sel - 160u) * n / 32
                : fresh > 0 ? (size_t)sel * fresh / 128
                            : (size_t)sel * n / 128;
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < r->ninflight; k++)
      if (batch_candidate(r, k, x, own, before, i) == pass && want-- == 0)
        return r->inflight[k];
  return (tl_tid)r->natt + 1; /* not reached */
}

/* A submission's preferences, from bits its other fields leave unused: flags bits 4-7 choose a
 * pattern (0: tasks NULL, as before preferences existed), and with the high bits of a, b and d
 * seed the choices, resolved against the model's executors now. Executors are chosen among
 * each slot's latest id, the next one (not registered yet), an older one (dead, or evicted) and
 * "p<slot>" (never registered); hosts mostly the one the executor was registered on. */
static bool resolve_prefs(tlo_run *r, const tlo_op *op, mprefs *out) {
  unsigned pattern = op->flags >> 4;
  if (pattern == 0)
    return false;
  memset(out, 0, sizeof *out);
  uint64_t seed = pattern | (uint64_t)(op->a >> 3) << 4 | (uint64_t)(op->b >> 2) << 9 |
                  (uint64_t)(op->d >> 3) << 15;
  uint64_t x = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
  /* pattern bits: 1 every task prefers something; 2 executors and hosts from a narrow set (more
   * contention, duplicates); 4 and 8 how many preferences a task has. */
  bool all = pattern & 1, narrow = pattern & 2;
  unsigned most = 1 + ((pattern >> 2) & 3); /* 1-4 */
  for (uint32_t i = 0; i < MAXTASKS; i++) {
    uint64_t v = tlo_splitmix64(&x);
    if (!all && v % 4 == 0)
      continue; /* no preference */
    unsigned n = 1 + (unsigned)((v >> 2) % most);
    for (unsigned j = 0; j < n; j++) {
      uint64_t c = tlo_splitmix64(&x);
      mpref *pf = &out->p[i][j];
      unsigned slot = (unsigned)(c % (narrow ? 3 : NSLOTS));
      unsigned which = (unsigned)((c >> 8) % 8);
      mexec *ex = NULL;
      if (which < 3) {
        pf->host = (unsigned)((c >> 16) % (narrow ? 2 : NHOSTS));
      } else {
        uint32_t ng = r->ngen[slot];
        if (which < 6)
          ex = &r->ex[slot][ng > 0 ? ng - 1 : 0]; /* the latest */
        else if (which == 6)
          ex = ng < MAXGEN ? &r->ex[slot][ng] : &r->phantom[slot]; /* not registered yet */
        else
          ex = ng > 1 && (c >> 24) % 2 ? &r->ex[slot][(c >> 32) % (ng - 1)] : &r->phantom[slot];
        bool registered = ex->state != MX_NONE || ex->cores != 0;
        pf->host = registered && (c >> 40) % 4 != 0 ? ex->host : (unsigned)((c >> 48) % NHOSTS);
      }
      pf->ex = ex;
    }
    out->n[i] = (uint8_t)n;
  }
  /* One submission with preferences in 64 is invalid: an empty host name. */
  out->bad = (seed >> 4) % 64 == 63 && out->n[0] > 0;
  return true;
}

/* What a restored executor reports when it reconciles (TLO_RECONCILE), from the operation's
 * bytes and the model now: of x's frozen attempts all (a % 4 == 0), none (1), or each with even
 * odds (2, 3), seeded by a and d; b % 8 - 3 (when positive) unknown tids: an ended attempt, one
 * in flight on another executor (in the tid index or frozen), a tid never launched; a duplicate
 * (d bit 0), a tid 0 (flags bit 4, TL_EINVAL); then shuffled. Returns their number. */
static size_t resolve_report(tlo_run *r, const tlo_op *op, const mexec *x, tl_tid *out,
                             size_t cap) {
  uint64_t rng = (uint64_t)op->a << 8 | op->d | (uint64_t)op->b << 16;
  size_t n = 0;
  tl_tid *frozen;
  size_t nf = tlo_inflight_where(r, &frozen, x, 1, -1);
  unsigned mode = op->a % 4;
  for (size_t i = 0; i < nf && n < cap; i++)
    if (mode == 0 || (mode >= 2 && tlo_splitmix64(&rng) % 2 == 0))
      out[n++] = frozen[i];
  free(frozen);
  int extras = (int)(op->b % 8) - 3;
  for (int j = 0; j < extras && n < cap; j++) {
    uint64_t v = tlo_splitmix64(&rng);
    tl_tid pick = 0;
    if (v % 3 == 0 && r->natt > 0) { /* an attempt that ended */
      for (size_t tries = 0; tries < 8 && pick == 0; tries++) {
        tl_tid t = 1 + tlo_splitmix64(&rng) % r->natt;
        if (!r->att[t - 1].live)
          pick = t;
      }
    } else if (v % 3 == 1) { /* another executor's, in flight */
      size_t m = 0;
      for (size_t i = 0; i < r->ninflight; i++)
        m += r->att[r->inflight[i] - 1].ex != x;
      if (m > 0) {
        size_t want = (size_t)(tlo_splitmix64(&rng) % m);
        for (size_t i = 0; i < r->ninflight && pick == 0; i++)
          if (r->att[r->inflight[i] - 1].ex != x && want-- == 0)
            pick = r->inflight[i];
      }
    }
    out[n++] = pick != 0 ? pick : (tl_tid)r->natt + 1 + (v >> 8) % 3; /* else never launched */
  }
  if ((op->d & 1) && n > 0 && n < cap) {
    tl_tid dup = out[tlo_splitmix64(&rng) % n];
    out[n++] = dup;
  }
  if ((op->flags & 16) && n < cap)
    out[n++] = 0;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)(tlo_splitmix64(&rng) % i);
    tl_tid t = out[i - 1];
    out[i - 1] = out[j];
    out[j] = t;
  }
  return n;
}

static void apply(tlo_run *r, const tlo_op *op) {
  switch ((tlo_kind)(op->kind % TLO_NKINDS)) {
  case TLO_ADD: {
    unsigned slot = op->exec & 7;
    mexec *x = tlo_resolve_exec(r, op->exec);
    bool fresh = (op->flags & 1) || x == &r->phantom[slot];
    if (fresh) {
      if (r->ngen[slot] == MAXGEN)
        return;
      x = &r->ex[slot][r->ngen[slot]];
    }
    static const uint32_t cores[8] = {0, 1, 2, 3, 4, 2, 4, 64};
    unsigned host = op->a % NHOSTS;
    tlo_do_add(r, x, slot, fresh, host, op->b % 5, cores[op->c % 8]);
    break;
  }
  case TLO_LOSE:
    tlo_do_lose(r, tlo_resolve_exec(r, op->exec), op->a % 8, op->flags & 1, op->c % 4,
                message_of(op->msg));
    break;
  case TLO_HEARTBEAT:
    tlo_do_heartbeat(r, tlo_resolve_exec(r, op->exec));
    break;
  case TLO_HEARTBEAT_ALL:
    for (unsigned s = 0; s < NSLOTS && !r->failed; s++)
      for (uint32_t g = 0; g < r->ngen[s] && !r->failed; g++)
        if (tlo_live_state(r->ex[s][g].state))
          tlo_do_heartbeat(r, &r->ex[s][g]);
    break;
  case TLO_DECOMMISSION:
    tlo_do_decommission(r, tlo_resolve_exec(r, op->exec), message_of(op->msg));
    break;
  case TLO_SUBMIT: {
    mprefs prefs;
    bool with = resolve_prefs(r, op, &prefs);
    tlo_do_submit(r, op->stage % NSTAGES, op->a % 8 == 0 ? -1 : (int)(op->a % 8) - 1, op->b % 4,
                  op->c % 13, (op->flags & 3) % 3, op->d % NPOOLNAMES, (op->flags & 4) != 0,
                  (op->flags & 8) != 0, with ? &prefs : NULL);
    break;
  }
  case TLO_KILL_TASK:
    tlo_do_kill_task(r, tlo_resolve_tid(r, op->tid), op->flags & 1, message_of(op->msg));
    break;
  case TLO_KILL_STAGE: {
    int tag = tlo_pol_draw_tag_op(r); /* with the policy bytes, maybe a tag instead */
    if (tag >= 0)
      tlo_do_tag(r, tag, false, op->flags & 1, message_of(op->msg));
    else
      tlo_do_kill_stage(r, op->stage % 7 == 6 ? 99 : op->stage % 7, op->flags & 1,
                        message_of(op->msg));
    break;
  }
  case TLO_CANCEL_STAGE: {
    int tag = tlo_pol_draw_tag_op(r);
    if (tag >= 0)
      tlo_do_tag(r, tag, true, op->flags & 1, message_of(op->msg));
    else
      tlo_do_cancel(r, op->stage % 7 == 6 ? 99 : op->stage % 7, message_of(op->msg));
    break;
  }
  case TLO_PARTITION:
    tlo_do_partition(r, op->stage % NSTAGES, op->a % 14);
    break;
  case TLO_OFFER: {
    mexec *xs[TLO_MAX_OFFERS];
    uint32_t cores[TLO_MAX_OFFERS];
    size_t n = op->noffers % (TLO_MAX_OFFERS + 1);
    for (size_t i = 0; i < n; i++) {
      xs[i] = tlo_resolve_exec(r, op->offer_exec[i]);
      cores[i] = op->offer_cores[i] % 5;
    }
    tlo_do_offer(r, xs, cores, n, op->a % 17, op->flags & 1);
    break;
  }
  case TLO_OFFER_ALL:
    tlo_do_offer_alive(r, 64, MAXCAP, true);
    break;
  case TLO_UPDATE: {
    tl_tid tid = tlo_resolve_tid(r, op->tid);
    matt *a = tlo_att_of(r, tid);
    mexec *x = (op->flags & 1) || a == NULL ? tlo_resolve_exec(r, op->exec) : a->ex;
    tlo_do_update(r, x, tid, op->a % 5, op->b % 8, message_of(op->msg), op->c % 4, op->d);
    break;
  }
  case TLO_UPDATES: {
    /* Every tid is resolved before the batch changes anything, as a batch is written. */
    mexec *x = tlo_resolve_exec(r, op->exec);
    mupdate m[TLO_MAX_BATCH];
    size_t n = op->nupd % (TLO_MAX_BATCH + 1u);
    for (size_t i = 0; i < n; i++) {
      uint8_t how = op->upd_how[i], res = op->upd_res[i];
      m[i] = (mupdate){resolve_batch_tid(r, x, op->upd_tid[i], m, i),
                       (how & 7u) % 5,
                       (how >> 3) & 7u,
                       message_of((uint8_t)(how >> 6)),
                       res & 3u,
                       (res >> 2) & 7u};
    }
    tlo_do_updates(r, x, m, n, op->flags);
    break;
  }
  case TLO_CLOCK: {
    unsigned step = op->a % NCLOCK_STEPS;
    if (step == NCLOCK_STEPS - 3)
      r->raw_now = tlo_add_sat(r->raw_now, r->cfg.speculation_interval_ns);
    else if (step == NCLOCK_STEPS - 2)
      r->raw_now = r->raw_now > CLOCK_BACK ? r->raw_now - CLOCK_BACK : 0;
    else if (step == NCLOCK_STEPS - 1)
      r->raw_now = r->raw_now > CLOCK_END ? r->raw_now : CLOCK_END;
    else
      r->raw_now = tlo_add_sat(r->raw_now, clock_steps[step]);
    snprintf(r->desc, sizeof r->desc, "clock to %" PRIu64 " ms", r->raw_now / 1000000);
    tlo_trace(r, 1, "%s", r->desc);
    break;
  }
  case TLO_TICK:
    tlo_do_tick(r);
    break;
  case TLO_INSPECT:
    tlo_do_inspect(r, tlo_resolve_exec(r, op->exec), op->a, op->b);
    break;
  case TLO_POOL_ADD: {
    static const uint32_t weights[4] = {0, 1, 2, 5}, shares[4] = {0, 1, 2, 4};
    if (r->cfg.offer_shuffle && (op->c & 4)) /* tl_pool_set: ops_shuffle.c */
      tlo_do_pool_set(r, op->d % NPOOLNAMES, (op->a & 3) % 3, weights[op->b % 4],
                      shares[op->c % 4]);
    else
      tlo_do_pool_add(r, op->d % NPOOLNAMES, (op->a & 3) % 3, weights[op->b % 4],
                      shares[op->c % 4], (op->a >> 2) % (NPOOLNAMES + 1));
    break;
  }
  case TLO_SNAPSHOT:
    tlo_do_snapshot_restore(r, op);
    break;
  case TLO_RECONCILE: {
    mexec *x = tlo_resolve_exec(r, op->exec);
    tl_tid tids[128];
    size_t n = resolve_report(r, op, x, tids, sizeof tids / sizeof tids[0]);
    if (op->d & 2)
      tlo_do_reconcile_items(r, x, tids, n, op->c % (n + 3), op->flags & 15, op->d);
    else
      tlo_do_reconcile(r, x, tids, n, op->c % (n + 3), op->flags & 15);
    break;
  }
  case TLO_NKINDS:
    break;
  }
}

void tlo_dispatch_all(tlo_run *r) {
  if (!r->deferred || r->s == NULL)
    return;
  int n;
  while (!r->failed && (n = tl_dispatch(r->s)) != 0) {
    if (n < 0) {
      tlo_fail(r, "tl_dispatch returned %s", tl_err_name(n));
      return;
    }
    r->dispatched += (uint64_t)n;
  }
}

/* One top-level operation and the checks that follow it. */
void tlo_apply_top(tlo_run *r, const tlo_op *op) {
  r->reent = op->reent;
  r->re_arg = op->re_arg;
  r->re_submit_done = r->re_offer_done = r->re_first_done = r->re_finish_done = false;
  r->re_lose_done = false;
  r->desc[0] = '\0'; /* until a call names itself; a failure before that describes the op */
  r->op = op;
  tlo_demand_op_begin(r);
  apply(r, op);
  tlo_dispatch_all(r);
  r->reent = 0;
  if (!r->failed && r->qhead != r->qlen) {
    char d[256];
    tlo_describe_ev(r, &r->q[r->qhead], d, sizeof d);
    tlo_fail(r, "%zu expected events were not delivered, the first: %s", r->qlen - r->qhead, d);
  }
  if (!r->failed) {
    tlo_drop_events(r);
    tlo_compare_all(r, true);
    tlo_demand_check(r);
  }
  r->op = NULL;
}
